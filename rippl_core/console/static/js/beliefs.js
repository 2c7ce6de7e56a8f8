// Beliefs: an agent's timeline on a topic as a chart, why it changed, and what it would believe
// without some evidence (a what-if toggle per evidence source).

import { get, query } from "./api.js";
import { $, clear, debounce, h, tag, when } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const COLOURS = { IN: "#1c5fd4", AT_RISK: "#e67700", OUT: "#c92a2a" };
let agent = "";
let topic = "";
let timeline = [];
let without = new Set();
let ready = false;

export function init() {
  $("#agent").addEventListener("change", () => chooseAgent($("#agent").value));
  $("#topic").addEventListener("change", () => chooseTopic($("#topic").value));
}

export function shown() { if (!ready) loadAgents(); }
export function reset() { ready = false; if (!$("#view-beliefs").hidden) loadAgents(); }
export function sessionChanged() {}

const refresh = debounce(() => chooseTopic(topic), 150);

export function events(batch) {
  if (!ready) return;
  if (batch.some((e) => e.type?.startsWith("belief_") && !agent)) { loadAgents(); return; }
  if (batch.some((e) => e.type?.startsWith("belief_") && e.agent === agent && e.topic === topic)) refresh();
}

function svg(tagName, attrs = {}, text) {
  const el = document.createElementNS(SVG, tagName);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

async function loadAgents() {
  ready = true;
  const agents = await get("api/agents");
  clear($("#agent"), agents.map((a) => h("option", { value: a }, a)));
  if (!agents.length) {
    clear($("#belief-chart"), h("p", { class: "muted" }, "No agent has recorded a belief yet."));
    return;
  }
  await chooseAgent(agents.includes(agent) ? agent : agents[0]);
}

async function chooseAgent(name) {
  agent = name;
  $("#agent").value = name;
  const topics = await get(`api/topics${query({ agent })}`);
  clear($("#topic"), topics.map((t) => h("option", { value: t }, t)));
  await chooseTopic(topics.includes(topic) ? topic : topics[0]);
}

async function chooseTopic(name) {
  topic = name;
  if (!name) return;
  $("#topic").value = name;
  timeline = await get(`api/beliefs/timeline${query({ agent, topic })}`);
  const evidence = [...new Set(timeline.flatMap((b) => b.evidence))].sort();
  without = new Set([...without].filter((e) => evidence.includes(e)));
  chart();
  changes();
  toggles(evidence);
  await whatIf();
}

function chart(dropped = new Set()) {
  const box = $("#belief-chart");
  if (!timeline.length) { clear(box, h("p", { class: "muted" }, "No belief recorded on this topic.")); return; }
  const claims = [...new Map(timeline.map((b) => [b.claim, b])).values()];
  const start = Math.min(...timeline.map((b) => Date.parse(b.valid_from)));
  // an interval still open runs to the right edge: a quarter of the recorded span past its last change
  const finite = timeline.flatMap((b) => [Date.parse(b.valid_from), b.valid_to ? Date.parse(b.valid_to) : start]);
  const lastChange = Math.max(...finite, start + 3600e3);
  const end = lastChange + (lastChange - start) / 4;
  const ends = timeline.map((b) => (b.valid_to ? Date.parse(b.valid_to) : end));
  const W = 960, left = 230, right = 20, lane = 30, top = 10;
  const H = top + claims.length * lane + 30;
  const x = (t) => left + ((t - start) / (end - start)) * (W - left - right);
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `Timeline of ${agent}'s belief about ${topic}: ${timeline.length} intervals` });
  const ticks = 6;
  for (let i = 0; i <= ticks; i++) {
    const t = start + ((end - start) * i) / ticks;
    root.append(svg("line", { class: "tick", x1: x(t), x2: x(t), y1: top, y2: H - 24 }));
    root.append(svg("text", { class: "axis", x: x(t), y: H - 8, "text-anchor": "middle" },
      new Date(t).toISOString().slice(5, 16).replace("T", " ")));
  }
  claims.forEach((c, lane_i) => {
    const y = top + lane_i * lane;
    const label = `${c.claim} ${c.text}`;
    root.append(svg("text", { class: "lane-label", x: 4, y: y + lane / 2 + 4 },
      label.length > 34 ? `${label.slice(0, 33)}…` : label));
  });
  timeline.forEach((b, i) => {
    const lane_i = claims.findIndex((c) => c.claim === b.claim);
    const y = top + lane_i * lane + 4;
    const x1 = x(Date.parse(b.valid_from)), x2 = x(ends[i]);
    const isDropped = dropped.has(`${b.claim}@${b.valid_from}`);
    const rect = svg("rect", { class: `bar${isDropped ? " dropped" : ""}`, x: x1, y, width: Math.max(2, x2 - x1),
      height: lane - 8, rx: 3, fill: COLOURS[b.claim_state] || COLOURS.IN });
    rect.append(svg("title", {}, `${b.claim} (${b.claim_status}) from ${when(b.valid_from)} until ${when(b.valid_to)}` +
      (b.evidence.length ? `; evidence ${b.evidence.join(", ")}` : "")));
    root.append(rect);
  });
  for (const b of timeline) {
    const cx = x(Date.parse(b.valid_from));
    root.append(svg("line", { class: "change", x1: cx, x2: cx, y1: top, y2: H - 24 }));
  }
  clear(box, root, h("p", { class: "muted" },
    "Bars: when the agent held each claim (blue: the claim holds now; red: retracted since; a bar reaching the right edge is still held)."));
}

function changes() {
  const list = $("#changes");
  const points = [...new Set(timeline.flatMap((b) => [b.valid_from, b.valid_to]).filter(Boolean))].sort();
  clear(list, points.map((at) => h("li", {}, h("button", { type: "button", onclick: () => why(at) },
    `${when(at)}: ${describe(at)}`))));
}

function describe(at) {
  const starts = timeline.find((b) => b.valid_from === at);
  const ends = timeline.find((b) => b.valid_to === at);
  if (starts && ends) return `${ends.claim} → ${starts.claim}`;
  if (starts) return `adopts ${starts.claim}`;
  return `drops ${ends.claim}`;
}

async function why(at) {
  const change = await get(`api/beliefs/why-changed${query({ agent, topic, at })}`);
  const name = (b) => (b ? `${b.claim} (${b.text})` : "nothing");
  clear($("#why"),
    h("h3", {}, `Why it changed on ${when(change.changed_at)}`),
    h("p", {}, `${name(change.before)} → ${name(change.after)}`),
    change.new_evidence.length ? h("p", {}, `Evidence that arrived: ${change.new_evidence.join(", ")}`) : null,
    change.dropped_evidence.length ? h("p", {}, `No longer relied on: ${change.dropped_evidence.join(", ")}`) : null,
    change.retracted_evidence.length ? h("p", {}, tag("OUT", "retracted evidence"), ` ${change.retracted_evidence.join(", ")}`) : null,
    change.after?.note ? h("p", { class: "muted" }, `note: ${change.after.note}`) : null);
}

function toggles(evidence) {
  clear($("#evidence-toggles"), evidence.map((e) => {
    const box = h("input", { type: "checkbox", id: `without-${e}`, checked: without.has(e),
      onchange: () => { if (box.checked) without.add(e); else without.delete(e); whatIf(); } });
    return h("label", { class: "row" }, box, `without ${e}`);
  }));
}

async function whatIf() {
  const panel = $("#whatif");
  if (!without.size) {
    clear(panel, h("p", { class: "muted" }, "Tick evidence to see what the agent would believe without it."));
    chart();
    return;
  }
  const result = await get(`api/beliefs/what-if${query({ agent, topic, without: [...without] })}`);
  const name = (b) => (b ? `${b.claim} (${b.text})` : "nothing");
  chart(new Set(result.dropped.map((b) => `${b.claim}@${b.valid_from}`)));
  clear(panel,
    h("p", {}, `Now it believes ${name(result.actual)}.`),
    h("p", { id: "counterfactual" }, h("b", {}, `Without ${result.without.join(", ")}: `),
      `it would believe ${name(result.counterfactual)}.`),
    result.dropped.length ? h("p", {}, `Adoptions that would not have happened: ${result.dropped.map((b) => `${b.claim} (from ${when(b.valid_from)})`).join(", ")}`) : null,
    result.lost_claims.length ? h("p", {}, `Claims that would lose all support: ${result.lost_claims.join(", ")}`) : null);
}
