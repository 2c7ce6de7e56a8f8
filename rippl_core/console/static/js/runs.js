// Runs: every captured run (filtered by agent, framework, time and open compensations), and a
// run's page: its turns in order, what each rested on, its calls with their verdicts and
// executions. Live: capture's events (a turn recorded, a call vetoed or executed) and status
// changes reload what is shown.

import { get, id, query } from "./api.js";
import { $, clear, debounce, h, tag, when } from "./dom.js";

let visible = false;
let stale = true;
let openRun = null;  // the id of the run whose page is shown
let listed = [];

const SINCE = { "": null, hour: 3600e3, day: 86400e3, week: 7 * 86400e3 };

export function init() {
  $("#runs-filters").addEventListener("submit", (event) => { event.preventDefault(); load(); });
  for (const el of ["#runs-agent", "#runs-framework"]) $(el).addEventListener("input", debounce(() => load(), 250));
  for (const el of ["#runs-since", "#runs-open"]) $(el).addEventListener("change", () => load());
  window.rippl = Object.assign(window.rippl || {}, { runs: { open: openPage } });
}

export function shown() {
  visible = true;
  const linked = location.hash.startsWith("#runs/") ? decodeURIComponent(location.hash.slice(6)) : null;
  if (linked && linked !== openRun) { openRun = linked; stale = true; }
  if (stale) load();
}

export function reset() { stale = true; if (isShown()) load(); }

export function sessionChanged() {}

const loadSoon = debounce(() => load(), 150);

export function events(batch) {
  // capture's events name their run; a status change may change a verdict or an open compensation
  const relevant = batch.some((e) => e.run || e.after || e.type === "compensation_needed");
  if (!relevant) return;
  stale = true;
  if (isShown()) loadSoon();
}

function isShown() { return visible && !$("#view-runs").hidden; }

function filters() {
  const since = SINCE[$("#runs-since").value];
  return {
    agent: $("#runs-agent").value.trim(), framework: $("#runs-framework").value.trim(),
    since: since ? new Date(Date.now() - since).toISOString() : "",
    open_compensations: $("#runs-open").checked ? "true" : "",
  };
}

async function load() {
  stale = false;
  try {
    listed = await get(`api/runs${query(filters())}`);
    $("#runs-status").textContent = `${listed.length} run${listed.length === 1 ? "" : "s"}`;
  } catch (error) {
    $("#runs-status").textContent = `Could not list runs: ${error.message}`;
    return;
  }
  renderList();
  if (openRun) await renderPage(openRun);
}

function renderList() {
  const body = $("#runs tbody");
  clear(body, listed.map((r) => {
    const row = h("tr", { tabindex: "0", "data-run": r.id, "aria-selected": String(r.id === openRun) },
      h("td", { class: "mono text" }, r.id), h("td", { class: "text" }, r.agent || "—"),
      h("td", { class: "text" }, r.framework || "—"),
      h("td", { class: "text" }, when(r.started)), h("td", { class: "text" }, when(r.last_active)), h("td", {}, String(r.turns)),
      h("td", {}, String(r.calls)), h("td", { class: r.vetoes ? "bad" : "" }, String(r.vetoes)),
      h("td", { class: r.open_compensations ? "bad" : "" }, String(r.open_compensations)));
    const open = () => openPage(r.id);
    row.addEventListener("click", open);
    row.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(); } });
    return row;
  }));
}

async function openPage(runId) {
  openRun = runId;
  const link = `#runs/${encodeURIComponent(runId)}`;
  if (location.hash !== link) history.replaceState(null, "", link);
  for (const row of $("#runs tbody").children) row.setAttribute("aria-selected", String(row.dataset.run === runId));
  await renderPage(runId);
}

function explore(nodeId) {
  return h("button", { type: "button", class: "link mono", title: "Show it in the graph explorer",
    onclick: () => { $("#tab-explorer").click(); window.rippl.explorer.select(nodeId); } }, nodeId);
}

function age(r) {
  if (!r.freshness) return null;
  const parts = [`read ${when(r.observed_at)}`];
  if (r.freshness === "superseded") parts.push(`superseded ${when(r.superseded_at)} by ${r.superseded_by}`);
  else if (r.fresh_until) parts.push(`${r.freshness === "stale" ? "stale since" : "fresh until"} ${when(r.fresh_until)}`);
  else parts.push("never expires");
  return h("span", { class: `age ${r.freshness}` }, ` (${parts.join(", ")})`);
}

function rested(r) {
  return h("li", { class: "rested", "data-claim": r.id }, tag(r.state, r.status), " ", explore(r.id), " ",
    h("span", {}, r.text), age(r));
}

function call(c) {
  const verdict = { allowed: "IN", overridden: "IN", vetoed: "OUT", blocked: "AT_RISK", stale: "AT_RISK" }[c.verdict];
  return h("li", { class: "call", "data-action": c.action, "data-verdict": c.verdict },
    h("div", {}, tag(verdict, c.verdict), " ", h("strong", {}, c.tool || c.title), " ",
      h("span", { class: "mono" }, c.args ? JSON.stringify(c.args) : ""), " ", explore(c.action)),
    h("div", { class: "reason" }, c.reason),
    c.named.length ? h("div", { class: "named" }, "the veto named: ", c.named.flatMap((n, i) => [i ? ", " : "", explore(n)])) : null,
    c.executed_at
      ? h("div", { class: "execution" }, `executed ${when(c.executed_at)} (${c.exec_status || "ok"})`,
        c.owed ? h("strong", { class: "bad" }, " — open compensation: it ran on a premise since retracted") : null,
        c.result ? h("div", {}, "result: ", explore(c.result.id), " ", c.result.text, age(c.result)) : null)
      : h("div", { class: "execution muted" }, "not executed"));
}

async function renderPage(runId) {
  const pane = $("#run-detail");
  let trace;
  try {
    trace = await get(`api/runs/${id(runId)}`);
  } catch (error) {
    clear(pane, h("p", { class: "error" }, `Run ${runId}: ${error.message}`));
    return;
  }
  if (openRun !== runId) return;  // another run was opened meanwhile
  const r = trace.run;
  clear(pane,
    h("h2", { tabindex: "-1" }, `Run ${r.id}`),
    h("p", {}, `${r.agent || "an agent"}${r.framework ? ` (${r.framework})` : ""}, started ${when(r.started)}, last active ${when(r.last_active)}`
      + (r.closed ? `, closed ${when(r.closed)}` : "")),
    h("p", { id: "run-counts" }, `${r.turns} turns, ${r.calls} calls, ${r.vetoes} vetoed, ${r.open_compensations} open compensations`),
    h("ol", { id: "run-turns", class: "turns" }, trace.turns.map((t) => h("li", { class: "turn", "data-turn": t.turn || "" },
      h("h3", {}, `Turn ${t.turn || "?"} `, tag(t.state, t.status), " ", explore(t.decision), h("span", { class: "muted" }, ` ${when(t.at)}`)),
      h("p", { class: "muted" }, t.title),
      h("h4", {}, "Rested on"),
      t.rested_on.length ? h("ul", { class: "rested-on" }, t.rested_on.map(rested)) : h("p", { class: "muted" }, "nothing recorded"),
      h("h4", {}, "Calls"),
      h("ul", { class: "calls" }, t.calls.map(call))))));
}
