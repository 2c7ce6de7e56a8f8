// The graph explorer: the causal DAG on a canvas, coloured by status and updated in place by the
// live events (an amber wave on a proposal, red on approval, green recovery on reject/reinstate).

import { ApiError, get, id, post, query, session } from "./api.js";
import { $, clear, debounce, h, publicStatus, tag, toast, when } from "./dom.js";
import { COL_W, NODE_H, NODE_W, ROW_H, layout } from "./layout.js";

const COLOURS = { IN: "#2b8a3e", AT_RISK: "#e67700", OUT: "#c92a2a" };
const EDGE_COLOURS = { IN: "rgba(90,100,120,0.35)", AT_RISK: "rgba(230,119,0,0.6)", OUT: "rgba(201,42,42,0.55)" };
const WAVE_STEP_MS = 70;
const PULSE_MS = 900;

let info = {};
let canvas, ctx;
let graph = { nodes: [], edges: [], total: 0, truncated: false, focus: null };
let geo = null;
let selected = -1;
let view = { k: 1, x: 20, y: 40 };
let pulses = [];
let drawing = false;
let needsFit = true;
let loadedOnce = false;
let depth = 3;

export function init(consoleInfo) {
  info = consoleInfo;
  canvas = $("#graph");
  ctx = canvas.getContext("2d");
  new ResizeObserver(() => { resize(); if (needsFit) fit(); draw(); }).observe(canvas.parentElement);
  setupPointer();
  canvas.addEventListener("keydown", onKey);
  $("#find-form").addEventListener("submit", (event) => {
    event.preventDefault();
    find($("#find").value.trim());
  });
  $("#focus-btn").addEventListener("click", () => {
    const wanted = selected >= 0 ? graph.nodes[selected].id : $("#find").value.trim();
    if (wanted) focusOn(wanted);
  });
  $("#whole-btn").addEventListener("click", () => loadWhole());
  $("#fit-btn").addEventListener("click", () => { fit(); schedule(); });
  window.rippl = Object.assign(window.rippl || {}, { explorer: { nodeAt, stateOf, select: find } });
  loadWhole();
}

export function shown() {
  resize();
  if (needsFit) fit();
  schedule();
}

export function reset() {
  if (graph.focus) focusOn(graph.focus, true); else loadWhole(true);
}

export function sessionChanged() {
  if (selected >= 0) renderDetail(graph.nodes[selected]);
}

// -- loading ----------------------------------------------------------------------------------
async function loadWhole(keepView = false) {
  setGraph(await get(`api/graph${query({ limit: info.graph_limit })}`), keepView);
}

async function focusOn(nodeId, keepView = false) {
  try {
    setGraph(await get(`api/graph/focus${query({ node: nodeId, depth, limit: info.graph_limit })}`), keepView);
    const i = geo.index.get(nodeId);
    if (i !== undefined) select(i, true);
  } catch (error) {
    toast(error.message);
  }
}

function setGraph(data, keepView) {
  const previous = selected >= 0 ? graph.nodes[selected].id : null;
  graph = data;
  if (graph.truncated && !graph.focus) {  // the first nodes of a big graph mean nothing: focus instead
    graph = { ...graph, nodes: [], edges: [] };
  }
  geo = layout(graph.nodes, graph.edges);
  selected = previous !== null && geo.index.has(previous) ? geo.index.get(previous) : -1;
  const ids = $("#node-ids");
  if (graph.nodes.length <= 5000) clear(ids, graph.nodes.map((n) => h("option", { value: n.id })));
  const scope = graph.focus
    ? `neighbourhood of ${graph.focus} (depth ${depth}): ${graph.nodes.length}` +
      (graph.truncated ? ` of ${graph.total} nodes (the nearest)` : " nodes")
    : graph.truncated
      ? `${graph.total} nodes: too many to draw at once; find a node and focus on its neighbourhood`
      : `whole graph: ${graph.nodes.length} nodes, ${graph.edges.length} edges`;
  $("#graph-scope").textContent = scope;
  counts();
  if (!keepView || !loadedOnce) needsFit = true;
  loadedOnce = true;
  if (!canvas.parentElement.closest("[hidden]")) { resize(); if (needsFit) fit(); }
  schedule();
}

const reloadSoon = debounce(() => (graph.focus ? focusOn(graph.focus, true) : loadWhole(true)), 300);

// -- live events --------------------------------------------------------------------------------
export function events(batch, seq) {
  if (!geo) return;
  const now = performance.now();
  let changed = 0;
  let unknown = false;
  const moves = { AT_RISK: 0, OUT: 0, IN: 0 };
  for (const event of batch) {
    if (!event.node || !event.after) continue;  // not a change of state (an execution, a compensation)
    const i = geo.index.get(event.node);
    if (i === undefined) { unknown = true; continue; }
    if (!event.after) continue;  // not a status change (a turn recorded, a call vetoed or executed)
    const node = graph.nodes[i];
    node.state = event.after;
    node.status = publicStatus(node.kind, node.state, node.executed);
    if (event.after === "OUT") node.retracted = node.retracted || event.node === event.claim;
    moves[event.after] += 1;
    changed += 1;
    const column = Math.round(geo.xs[i] / COL_W);
    pulses.push({ i, t0: now + Math.min(column * WAVE_STEP_MS, 1200), colour: COLOURS[event.after] });
  }
  if (changed) {
    counts();
    schedule();
    if (selected >= 0 && batch.some((e) => e.node === graph.nodes[selected].id)) {
      renderDetail(graph.nodes[selected]);
    }
  }
  ticker(batch, moves);
  if (unknown && !graph.truncated && !graph.focus) reloadSoon();  // new nodes: redraw the whole graph
  document.dispatchEvent(new CustomEvent("rippl:applied", { detail: { seq, changed, at: performance.now() } }));
}

function ticker(batch, moves) {
  const lines = [];
  for (const e of batch) {
    if (e.type === "review_proposed") lines.push(`${e.by} proposed retracting ${e.claim}`);
    if (e.type === "review_approved") lines.push(`${e.by} approved the retraction of ${e.claim}`);
    if (e.type === "review_rejected") lines.push(`${e.by} rejected the retraction of ${e.claim}`);
    if (e.type?.startsWith("belief_")) lines.push(`${e.agent}: ${e.type.replace("_", " ")} ${e.claim} on ${e.topic}`);
  }
  const parts = [];
  if (moves.AT_RISK) parts.push(`${moves.AT_RISK} at risk`);
  if (moves.OUT) parts.push(`${moves.OUT} out`);
  if (moves.IN) parts.push(`${moves.IN} back in`);
  if (parts.length) lines.push(`wave: ${parts.join(", ")}`);
  const list = $("#ticker");
  for (const line of lines) list.prepend(h("li", {}, line));
  while (list.children.length > 6) list.lastElementChild.remove();
}

function counts() {
  const c = { IN: 0, AT_RISK: 0, OUT: 0 };
  for (const n of graph.nodes) c[n.state] += 1;
  for (const state of Object.keys(c)) $(`#count-${state}`).textContent = String(c[state]);
}

// -- drawing ------------------------------------------------------------------------------------
function resize() {
  const box = canvas.parentElement.getBoundingClientRect();
  const dpr = window.devicePixelRatio || 1;
  if (box.width === 0 || box.height === 0) return;
  const width = Math.round(box.width * dpr), height = Math.round(box.height * dpr);
  if (canvas.width !== width || canvas.height !== height) { canvas.width = width; canvas.height = height; }
}

function fit() {
  const w = canvas.clientWidth, h2 = canvas.clientHeight;
  if (!w || !h2 || !geo || !graph.nodes.length) return;
  const width = Math.max(geo.columns * COL_W - (COL_W - NODE_W), NODE_W);
  const height = Math.max(geo.height, ROW_H);
  const k = Math.min(2, Math.max(0.02, Math.min((w - 40) / width, (h2 - 70) / height)));
  view = { k, x: (w - width * k) / 2, y: 50 + (h2 - 60 - height * k) / 2 };
  needsFit = false;
}

function schedule() {
  if (drawing) return;
  drawing = true;
  requestAnimationFrame(frame);
}

function frame(now) {
  drawing = false;
  draw(now);
  pulses = pulses.filter((p) => now - p.t0 < PULSE_MS);
  if (pulses.length) schedule();
}

function draw(now = performance.now()) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, hgt = canvas.clientHeight;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, hgt);
  if (!geo) return;
  const { k, x: ox, y: oy } = view;
  const left = -ox / k, top = -oy / k, right = (w - ox) / k, bottom = (hgt - oy) / k;
  ctx.font = "600 12px system-ui, sans-serif";
  ctx.fillStyle = "#5c6577";
  for (const band of geo.bands) {
    const sx = ox + band.x * k;
    if (graph.nodes.length) ctx.fillText(band.kind, Math.max(sx, 4), 18);
    ctx.strokeStyle = "#e5e7eb";
    ctx.beginPath(); ctx.moveTo(sx - 20 * k, 26); ctx.lineTo(sx - 20 * k, hgt); ctx.stroke();
  }
  ctx.save();
  ctx.translate(ox, oy);
  ctx.scale(k, k);
  const { xs, ys } = geo;
  const nodes = graph.nodes;
  const visible = (i) => xs[i] + NODE_W >= left && xs[i] <= right && ys[i] + NODE_H >= top && ys[i] <= bottom;
  // Edges are stroked in small batches: one stroke of thousands of overlapping curves (a hub with
  // thousands of dependents) costs the rasteriser far more than many strokes of a few.
  ctx.lineWidth = 1.2 / k;
  const batches = { IN: [new Path2D(), 0], AT_RISK: [new Path2D(), 0], OUT: [new Path2D(), 0] };
  const flush = (state) => {
    ctx.strokeStyle = EDGE_COLOURS[state];
    ctx.stroke(batches[state][0]);
    batches[state] = [new Path2D(), 0];
  };
  // zoomed far out, many nodes share a screen pixel: draw one edge (and one ring) per pixel pair
  const cell = (i) => `${Math.round(xs[i] * k)}:${Math.round(ys[i] * k)}`;
  const dense = NODE_H * k < 2;
  const drawn = new Set();
  for (const e of graph.edges) {
    const s = geo.index.get(e.source), t = geo.index.get(e.target);
    if (s === undefined || t === undefined || (!visible(s) && !visible(t))) continue;
    const state = batches[nodes[s].state] ? nodes[s].state : "IN";
    if (dense) {
      const key = `${cell(s)}>${cell(t)}|${state}`;
      if (drawn.has(key)) continue;
      drawn.add(key);
    }
    link(batches[state][0], s, t);
    if (++batches[state][1] >= 64) flush(state);
  }
  for (const state of Object.keys(batches)) if (batches[state][1]) flush(state);
  if (selected >= 0) {
    ctx.strokeStyle = "#1c5fd4";
    ctx.lineWidth = Math.max(2, 2.5 / k);
    const path = new Path2D();
    for (const p of geo.preds[selected]) link(path, p, selected);
    for (const s of geo.succs[selected]) link(path, selected, s);
    ctx.stroke(path);
  }
  for (let i = 0; i < nodes.length; i++) {
    if (!visible(i)) continue;
    const n = nodes[i];
    if (dense) {
      const key = `${cell(i)}#${n.state}`;
      if (drawn.has(key)) continue;
      drawn.add(key);
    }
    ctx.fillStyle = COLOURS[n.state] || "#888";
    ctx.fillRect(xs[i], ys[i], NODE_W, NODE_H);
    if (n.executed) { ctx.fillStyle = "rgba(255,255,255,0.35)"; ctx.fillRect(xs[i], ys[i], 6, NODE_H); }
  }
  if (selected >= 0) {
    ctx.strokeStyle = "#111827";
    ctx.lineWidth = Math.max(3, 3 / k);
    ctx.strokeRect(xs[selected] - 3, ys[selected] - 3, NODE_W + 6, NODE_H + 6);
  }
  // the wave: rings that grow and fade, in batches of 32 (like the edges)
  ctx.lineWidth = 4 / Math.max(k, 0.3);
  let ring = new Path2D(), inRing = 0, style = "";
  const strokeRing = () => { if (inRing) ctx.stroke(ring); ring = new Path2D(); inRing = 0; };
  for (const p of pulses) {
    const age = (now - p.t0) / PULSE_MS;
    if (age < 0 || age > 1 || !visible(p.i)) continue;
    const step = Math.min(9, Math.floor(age * 10));
    const key = `${p.colour}|${step}`;
    if (dense) {
      const spot = `${cell(p.i)}|${key}`;
      if (drawn.has(spot)) continue;
      drawn.add(spot);
    }
    if (key !== style || inRing >= 32) {
      strokeRing();
      style = key;
      ctx.globalAlpha = 1 - step / 10;
      ctx.strokeStyle = p.colour;
    }
    const grow = 4 + (step / 10) * 18;
    ring.rect(xs[p.i] - grow, ys[p.i] - grow, NODE_W + 2 * grow, NODE_H + 2 * grow);
    inRing += 1;
  }
  strokeRing();
  ctx.globalAlpha = 1;
  ctx.restore();
  labels(visible);
  if (!nodes.length) {
    ctx.fillStyle = "#5c6577";
    ctx.font = "14px system-ui, sans-serif";
    ctx.fillText(graph.truncated ? "Too many nodes to draw at once: find a node above and press Focus."
      : "The graph is empty.", 20, 60);
  }
}

// Labels are drawn at screen size (readable at any zoom), once a node is wide enough for its id.
function labels(visible) {
  const { k, x: ox, y: oy } = view;
  const width = NODE_W * k, height = NODE_H * k;
  if (width < 44 || height < 10) return;
  const size = Math.min(12, Math.max(9, height * 0.55));
  ctx.font = `${size}px ui-monospace, monospace`;
  ctx.textBaseline = "middle";
  ctx.fillStyle = "#fff";
  for (let i = 0; i < graph.nodes.length; i++) {
    if (!visible(i)) continue;
    const n = graph.nodes[i];
    const text = width > 150 ? `${n.id} ${n.text}` : n.id;
    ctx.fillText(clip(text, width - 10), ox + geo.xs[i] * k + 5, oy + (geo.ys[i] + NODE_H / 2) * k);
  }
}

function link(path, s, t) {
  const { xs, ys } = geo;
  const x1 = xs[s] + NODE_W, y1 = ys[s] + NODE_H / 2, x2 = xs[t], y2 = ys[t] + NODE_H / 2, mid = (x1 + x2) / 2;
  path.moveTo(x1, y1);
  path.bezierCurveTo(mid, y1, mid, y2, x2, y2);
}

const clipCache = new Map();
function clip(text, width) {
  const key = `${text}|${width}`;
  if (clipCache.has(key)) return clipCache.get(key);
  let out = text;
  if (ctx.measureText(out).width > width) {
    while (out.length > 1 && ctx.measureText(`${out}…`).width > width) out = out.slice(0, -1);
    out = `${out}…`;
  }
  if (clipCache.size > 20000) clipCache.clear();
  clipCache.set(key, out);
  return out;
}

// -- interaction --------------------------------------------------------------------------------
function hit(px, py) {
  const x = (px - view.x) / view.k, y = (py - view.y) / view.k;
  for (let i = graph.nodes.length - 1; i >= 0; i--) {
    if (x >= geo.xs[i] && x <= geo.xs[i] + NODE_W && y >= geo.ys[i] && y <= geo.ys[i] + NODE_H) return i;
  }
  return -1;
}

function setupPointer() {
  let drag = null;
  canvas.addEventListener("pointerdown", (event) => {
    canvas.setPointerCapture(event.pointerId);
    drag = { x: event.clientX, y: event.clientY, vx: view.x, vy: view.y, moved: false };
    canvas.style.cursor = "grabbing";
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    view.x = drag.vx + dx;
    view.y = drag.vy + dy;
    schedule();
  });
  canvas.addEventListener("pointerup", (event) => {
    canvas.style.cursor = "grab";
    if (drag && !drag.moved) {
      const box = canvas.getBoundingClientRect();
      const i = hit(event.clientX - box.left, event.clientY - box.top);
      if (i >= 0) select(i);
    }
    drag = null;
  });
  canvas.addEventListener("wheel", (event) => {
    event.preventDefault();
    const box = canvas.getBoundingClientRect();
    zoom(Math.exp(-event.deltaY * 0.0015), event.clientX - box.left, event.clientY - box.top);
  }, { passive: false });
}

function zoom(factor, cx = canvas.clientWidth / 2, cy = canvas.clientHeight / 2) {
  const k = Math.min(4, Math.max(0.02, view.k * factor));
  view.x = cx - ((cx - view.x) * k) / view.k;
  view.y = cy - ((cy - view.y) * k) / view.k;
  view.k = k;
  schedule();
}

function neighbourOf(i, key) {
  const { xs, ys, preds, succs, index } = geo;
  if (key === "ArrowRight" || key === "ArrowLeft") {
    const list = (key === "ArrowRight" ? succs : preds)[i];
    return list.length ? [...list].sort((a, b) => Math.abs(ys[a] - ys[i]) - Math.abs(ys[b] - ys[i]))[0] : -1;
  }
  const column = [...index.values()].filter((j) => xs[j] === xs[i]).sort((a, b) => ys[a] - ys[b]);
  const at = column.indexOf(i) + (key === "ArrowDown" ? 1 : -1);
  return at >= 0 && at < column.length ? column[at] : -1;
}

function onKey(event) {
  const keys = { "+": () => zoom(1.25), "=": () => zoom(1.25), "-": () => zoom(0.8),
    0: () => { fit(); schedule(); }, f: () => selected >= 0 && focusOn(graph.nodes[selected].id),
    Escape: () => graph.focus && loadWhole(),
    Enter: () => $("#node-detail h2")?.focus() };
  if (keys[event.key]) { event.preventDefault(); keys[event.key](); return; }
  if (!event.key.startsWith("Arrow") || !graph.nodes.length) return;
  event.preventDefault();
  if (selected < 0) { select(0, true); return; }
  const next = neighbourOf(selected, event.key);
  if (next >= 0) select(next, true);
}

function reveal(i) {
  const sx = view.x + geo.xs[i] * view.k, sy = view.y + geo.ys[i] * view.k;
  const w = canvas.clientWidth, hgt = canvas.clientHeight;
  if (sx < 10 || sy < 30 || sx + NODE_W * view.k > w - 10 || sy + NODE_H * view.k > hgt - 10) {
    view.k = Math.max(view.k, 0.6);
    view.x = w / 2 - (geo.xs[i] + NODE_W / 2) * view.k;
    view.y = hgt / 2 - (geo.ys[i] + NODE_H / 2) * view.k;
  }
}

function select(i, keepInView = false) {
  selected = i;
  if (keepInView) reveal(i);
  schedule();
  const node = graph.nodes[i];
  canvas.setAttribute("aria-label", `Causal graph. Selected ${node.id}, ${node.kind}, ${node.status}.`);
  renderDetail(node);
}

async function find(nodeId) {
  if (!nodeId) return;
  const i = geo.index.get(nodeId);
  if (i !== undefined) { select(i, true); canvas.focus(); return; }
  await focusOn(nodeId);
  canvas.focus();
}

function nodeAt(nodeId) {
  const i = geo ? geo.index.get(nodeId) : undefined;
  if (i === undefined) return null;
  // the centre, and a point inside the box that no label covers (its top-right corner)
  return { x: view.x + (geo.xs[i] + NODE_W / 2) * view.k, y: view.y + (geo.ys[i] + NODE_H / 2) * view.k,
    fillX: view.x + (geo.xs[i] + NODE_W) * view.k - 2, fillY: view.y + geo.ys[i] * view.k + 2,
    state: graph.nodes[i].state };
}

function stateOf(nodeId) {
  const i = geo ? geo.index.get(nodeId) : undefined;
  return i === undefined ? null : graph.nodes[i].state;
}

// -- the detail panel ---------------------------------------------------------------------------
let detailToken = 0;
async function renderDetail(node) {
  const panel = $("#node-detail");
  const token = ++detailToken;
  const path = `api/nodes/${id(node.id)}`;
  let explanation, history, downstream;
  try {
    [explanation, history, downstream] = await Promise.all([
      get(`${path}/explain`), get(`${path}/history`), get(`${path}/blast-radius`)]);
  } catch (error) {
    if (token === detailToken) clear(panel, h("p", { class: "error" }, error.message));
    return;
  }
  if (token !== detailToken) return;
  const trail = (ids) => h("span", { class: "mono" }, ids.join(" → "));
  clear(panel,
    h("h2", { tabindex: "-1" }, node.id, " ", tag(explanation.state, explanation.status)),
    h("p", {}, explanation.text),
    h("p", { class: "muted" }, `${explanation.kind}` + (explanation.retracted
      ? ` · retracted by ${explanation.retracted_by}: ${explanation.retracted_reason}` : "")),
    h("div", { class: "row" },
      h("button", { type: "button", onclick: () => focusOn(node.id) }, "Focus on its neighbourhood"),
      proposeButton(node, explanation)),
    h("div", { id: "propose-box" }),
    h("h3", {}, "Why"),
    h("p", {}, explanation.summary),
    explanation.justifications.length ? h("ol", { class: "plain" }, explanation.justifications.map((j, n) =>
      h("li", {}, `justification ${n + 1} (${j.standing}): `, j.antecedents.map((a) =>
        h("span", {}, " ", h("span", { class: "mono" }, a.id), " ", tag(a.state, a.status)))))) : null,
    explanation.blockers.length ? [h("h3", {}, "Blocking premises"), h("ul", { class: "plain" },
      explanation.blockers.map((b) => h("li", {}, tag(b.state, b.premise), " ", b.reason || "", h("div", {}, trail(b.trail)))))] : null,
    h("h3", {}, `Rests on it (${downstream.length})`),
    downstream.length ? h("ul", { class: "plain" }, downstream.slice(0, 60).map((r) =>
      h("li", {}, tag(r.state, r.id), " ", trail(r.trail)))) : h("p", { class: "muted" }, "Nothing rests on it."),
    downstream.length > 60 ? h("p", { class: "muted" }, `and ${downstream.length - 60} more`) : null,
    h("h3", {}, "History"),
    h("ul", { class: "plain" }, history.map((c) => h("li", {}, when(c.valid_from), " ",
      c.before ? `${c.before} → ` : "created ", tag(c.after, c.after), c.cause ? ` (${c.cause}${c.review ? ` ${c.review}` : ""})` : ""))));
}

function proposeButton(node, explanation) {
  if (!(node.kind === "Claim" || node.kind === "Source") || explanation.retracted || !session.reviewer) return null;
  return h("button", { type: "button", onclick: () => proposeForm(node) }, "Propose retraction");
}

function proposeForm(node) {
  const reason = h("textarea", { id: "propose-reason", placeholder: "Why is it false?" });
  const message = h("p", { class: "error", role: "alert" });
  clear($("#propose-box"),
    h("label", { for: "propose-reason" }, `Propose retracting ${node.id} as ${session.reviewer}`), reason,
    h("div", { class: "row" }, h("button", { type: "button", class: "primary", onclick: async () => {
      try {
        const item = await post("api/reviews", { claim: node.id, reason: reason.value });
        toast(`Proposed: ${item.id} waits in the review queue`);
        clear($("#propose-box"));
      } catch (error) {
        message.textContent = error instanceof ApiError ? error.message : String(error);
      }
    } }, "Propose")), message);
  reason.focus();
}
