// Compensations: actions that already ran on a premise since retracted, open until a signed-in
// reviewer resolves each (compensated, or not needed, with a note): a receipt in the chain.

import { get, id, post, query, session } from "./api.js";
import { $, clear, debounce, h, when } from "./dom.js";

let showResolved = false;

export function init() {
  $("#comp-resolved").addEventListener("change", (event) => {
    showResolved = event.target.checked;
    reload();
  });
  reload();
}

export function shown() { reload(); }

export function reset() { reload(); }

export function sessionChanged() { reload(); }

const reloadSoon = debounce(() => reload(), 100);

export function events(batch) {
  if (batch.some((e) => e.type === "compensation_needed" || e.type === "compensation_resolved"
      || e.type === "compensation_attempted" || e.type === "action_executed")) reloadSoon();
}

function trail(c) {
  return c.blockers.map((b) => h("div", { class: "mono" },
    `${b.premise} is ${b.state === "OUT" ? "retracted" : "at risk"}${b.reason ? ` (${b.reason})` : ""}: ${b.trail.join(" → ")}`));
}

function resolveForm(c) {
  const signedIn = Boolean(session.reviewer);
  const note = h("textarea", { id: `comp-note-${c.action}`, class: "comp-note", rows: "2",
    "aria-label": `Note for ${c.action}`, placeholder: "What was done, or why nothing is needed",
    disabled: !signedIn });
  const attempt = c.attempts.length ? c.attempts[c.attempts.length - 1].id : null;
  const act = (resolution) => async () => {
    const text = note.value.trim();
    if (!text) { $("#comp-status").textContent = "Write a note first: it goes in the receipt."; return; }
    try {
      const receipt = await post(`api/compensations/${id(c.action)}/resolve`,
        { resolution, note: text, attempt });
      $("#comp-status").textContent = `${c.action} resolved as ${resolution}: receipt ${receipt.id} names ${receipt.actor}`;
      await reload();
    } catch (error) {
      $("#comp-status").textContent = `Not resolved: ${error.message}`;
    }
  };
  return h("div", { class: "row" }, note,
    h("button", { type: "button", class: "primary", "data-resolve": "compensated", disabled: !signedIn,
      onclick: act("compensated") }, attempt ? "Confirm: compensated" : "Compensated"),
    h("button", { type: "button", "data-resolve": "not needed", disabled: !signedIn,
      onclick: act("not needed") }, "Not needed"),
    signedIn ? null : h("span", { class: "muted" }, "Sign in as a reviewer to resolve."));
}

async function reload() {
  const found = await get(`api/compensations${query({ include_resolved: showResolved || undefined })}`);
  const open = found.filter((c) => c.status === "open").length;
  const badge = $("#comp-count");
  badge.textContent = String(open);
  badge.classList.toggle("zero", open === 0);
  $("#comp-empty").hidden = found.length > 0;
  clear($("#compensations"), found.map((c) => h("li", { class: `comp ${c.status.replace(" ", "-")}`, "data-action": c.action },
    h("div", { class: "card-title" }, `${c.action}${c.tool ? ` · ${c.tool}(${JSON.stringify(c.args || {})})` : ""}`),
    h("div", {}, c.title),
    h("div", { class: "card-meta" }, `executed ${when(c.executed_at)}${c.run ? ` · run ${c.run}` : ""} · `,
      h("b", { class: "comp-status" }, c.status)),
    trail(c),
    c.attempts.length ? h("ul", { class: "attempts" }, c.attempts.map((a) =>
      h("li", {}, `${a.id} by ${a.by} at ${when(a.at)}: ${a.what}${a.output ? ` → ${a.output}` : ""}`))) : null,
    c.resolution
      ? h("p", {}, `${c.resolution.resolution} by ${c.resolution.by} at ${when(c.resolution.at)} (${c.resolution.receipt}): ${c.resolution.note}`)
      : resolveForm(c))));
}
