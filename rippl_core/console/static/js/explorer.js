// The graph explorer: the causal DAG on a canvas, coloured by status and updated in place by the
// live events (an amber wave on a proposal, red on approval, green recovery on reject/reinstate).

import { ApiError, get, id, post, query, session, shownAs } from "./api.js";
import { $, clear, debounce, h, publicStatus, tag, toast, when } from "./dom.js";
import { COL_W, NODE_H, NODE_W, ROW_H, layout } from "./layout.js";

const COLOURS = { IN: "#2b8a3e", AT_RISK: "#e67700", OUT: "#c92a2a" };
const EDGE_COLOURS = { IN: "rgba(90,100,120,0.35)", AT_RISK: "rgba(230,119,0,0.6)", OUT: "rgba(201,42,42,0.55)" };
const WAVE_STEP_MS = 70;
const PULSE_MS = 900;
const RING_STEP_MS = PULSE_MS / 10;  // a ring moves in ten steps, all rings at once

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
  // a new pixel size clears the canvas: draw it again at once (else at the next frame)
  new ResizeObserver(() => { if (resize() || needsFit) { if (needsFit) fit(); draw(); } else schedule(); })
    .observe(canvas.parentElement);
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
  window.rippl = Object.assign(window.rippl || {}, { explorer: { nodeAt, stateOf, select: find, stats: () => ({ ...stats, animating: pulses.length > 0, k: view.k }) } });
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
  version += 1;
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
  $("#graph-scope").title = scope;
  counts();
  if (!keepView || !loadedOnce) needsFit = true;
  loadedOnce = true;
  if (!canvas.parentElement.closest("[hidden]")) { resize(); if (needsFit) fit(); }
  schedule();
}

const reloadSoon = debounce(() => (graph.focus ? focusOn(graph.focus, true) : loadWhole(true)), 300);

// -- live events --------------------------------------------------------------------------------
// A frame of events is applied in slices, each of at most SLICE_EVENTS events and APPLY_BUDGET_MS
// (a 10k-node wave arrives as frames of 500: see stream.py), one slice a task, so the page keeps painting
// while it lands; frames are applied in order, and `rippl:applied` is dispatched once a frame is
// applied in full.
const APPLY_BUDGET_MS = 4;
const SLICE_EVENTS = 250;
const inbox = [];
let pumping = false;

export function events(batch, seq) {
  if (!geo) return;
  inbox.push({ batch, seq, next: 0, changed: 0, unknown: false, moves: { AT_RISK: 0, OUT: 0, IN: 0 } });
  if (!pumping) pump();
}

function pump() {
  pumping = true;
  const slice = { deadline: performance.now() + APPLY_BUDGET_MS, left: SLICE_EVENTS };
  stats.slices += 1;
  while (inbox.length) {
    if (!applySome(inbox[0], slice)) {
      schedule();  // paint what has landed so far
      setTimeout(pump, 0);
      return;
    }
    finish(inbox.shift());
  }
  pumping = false;
}

// Applies the frame's events from where the last slice stopped, as far as the slice allows; true
// when the frame is done.
function applySome(job, slice) {
  const { batch } = job;
  const now = performance.now();
  while (job.next < batch.length) {
    if (slice.left-- <= 0 || (slice.left % 32 === 0 && performance.now() > slice.deadline)) return false;
    const event = batch[job.next++];
    if (createsUnknown(event)) { job.unknown = true; continue; }
    if (!event.node || !event.after) continue;  // not a change of state (a call, a review, a compensation)
    const i = geo.index.get(event.node);
    if (i === undefined) { job.unknown = true; continue; }
    const node = graph.nodes[i];
    node.state = event.after;
    node.status = publicStatus(node.kind, node.state, node.executed);
    if (event.after === "OUT") node.retracted = node.retracted || event.node === event.claim;
    job.moves[event.after] += 1;
    job.changed += 1;
    version += 1;
    const column = Math.round(geo.xs[i] / COL_W);
    const t0 = Math.ceil((now + Math.min(column * WAVE_STEP_MS, 1200)) / RING_STEP_MS) * RING_STEP_MS;
    pulses.push({ i, t0, colour: COLOURS[event.after] });
  }
  return true;
}

// Whether an event announces a node this view has not drawn: a node created (one by one, or a
// load's count), a captured turn's decision, an execution's result claim.
function createsUnknown(event) {
  if (event.type === "node_created" && !event.node) return true;
  const created = event.type === "node_created" || event.type === "turn_recorded" ? event.node
    : event.type === "action_executed" ? event.claim : null;
  return Boolean(created) && !geo.index.has(created);
}

function finish(job) {
  const { batch, seq, changed, moves } = job;
  if (changed) {
    counts();
    schedule();
    if (selected >= 0 && batch.some((e) => e.node === graph.nodes[selected].id)) {
      renderDetail(graph.nodes[selected]);
    }
  }
  ticker(batch, moves);
  if (job.unknown && !graph.truncated && !graph.focus) reloadSoon();  // new nodes: redraw the whole graph
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
// Two layers. The scene (bands, edges, nodes, the selection, labels) is drawn into an offscreen
// canvas only when what it shows changes: the view, the graph, a node's state, the selection. An
// animation frame copies that bitmap and draws only the wave's rings over it, so a wave of
// thousands of nodes costs one scene drawing per frame of events, not one per animation frame.
// Zoomed far out (a node box under 2 px tall) the scene has a level of detail of its own
// ("dense", see pixelScene): no labels, whole-pixel node marks and aliased one-pixel edges
// rasterised in a pixel buffer; zoomed in but with more than EDGE_CAP edges in view, the edges
// alone are rasterised so (straight), the nodes and labels drawn over them as usual.
const STROKE_BATCH = 64;
const EDGE_CAP = 600;  // more edges in view than this: drawn as pixels, not curves
let scene = null, sctx = null, sceneKey = "";
let overlayKey = 0;  // the rings last drawn (ringsKey)
let version = 0;  // bumped when the graph or a node's state changes
// what the drawing did, for the browser tests: scenes drawn, frames painted, the level of detail,
// edges and labels in the last scene, slices of events applied
const stats = { sceneDraws: 0, frames: 0, lod: "full", edgesDrawn: 0, labelsDrawn: 0, slices: 0 };

function resize() {
  const box = canvas.parentElement.getBoundingClientRect();
  const dpr = window.devicePixelRatio || 1;
  if (box.width === 0 || box.height === 0) return false;
  const width = Math.round(box.width * dpr), height = Math.round(box.height * dpr);
  if (canvas.width === width && canvas.height === height) return false;
  canvas.width = width;
  canvas.height = height;
  return true;
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

const isDense = () => view.k * NODE_H < 2;

function draw(now = performance.now()) {
  if (!scene) {
    scene = document.createElement("canvas");
    sctx = scene.getContext("2d");
  }
  if (scene.width !== canvas.width || scene.height !== canvas.height) {
    scene.width = canvas.width;
    scene.height = canvas.height;
    sceneKey = "";
  }
  const key = `${version}|${selected}|${view.k}|${view.x}|${view.y}`;
  const sceneChanged = key !== sceneKey;
  if (sceneChanged) {
    drawScene(sctx);
    sceneKey = key;
    stats.sceneDraws += 1;
  }
  // the rings move in ten steps: a frame where no ring changed its step shows nothing new
  const overlay = geo && pulses.length ? ringsKey(now) : 0;
  if (!sceneChanged && overlay === overlayKey) return;
  overlayKey = overlay;
  stats.frames += 1;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.drawImage(scene, 0, 0);
  if (overlay) rings(now);
}

// which rings are drawn and at which step, as one number (0: none)
function ringsKey(now) {
  const visible = viewport();
  let key = 0, any = false;
  for (const p of pulses) {
    const age = (now - p.t0) / PULSE_MS;
    if (age < 0 || age > 1 || !visible(p.i)) continue;
    key = (Math.imul(key, 31) + p.i * 10 + Math.min(9, Math.floor(age * 10))) | 0;
    any = true;
  }
  return any ? key || 1 : 0;
}

// what part of the layout the view shows, in layout units
function viewport() {
  const { k, x: ox, y: oy } = view;
  const w = canvas.clientWidth, hgt = canvas.clientHeight;
  const left = -ox / k, top = -oy / k, right = (w - ox) / k, bottom = (hgt - oy) / k;
  const { xs, ys } = geo;
  return (i) => xs[i] + NODE_W >= left && xs[i] <= right && ys[i] + NODE_H >= top && ys[i] <= bottom;
}

function drawScene(g) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, hgt = canvas.clientHeight;
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, hgt);
  stats.edgesDrawn = 0;
  stats.labelsDrawn = 0;
  if (!geo) return;
  const { k, x: ox } = view;
  const visible = viewport();
  const dense = isDense();
  const manyEdges = !dense && edgesInView(visible) > EDGE_CAP;
  if (dense) stats.lod = "dense"; else stats.lod = manyEdges ? "full, edges as pixels" : "full";
  if (dense || manyEdges) {
    pixelScene(g, visible, dense);  // its pixels replace the canvas's: the rest goes over them
    if (manyEdges) fullScene(g, visible, false);
  } else {
    g.strokeStyle = "#e5e7eb";
    g.lineWidth = 1;
    for (const band of geo.bands) {
      const sx = ox + band.x * k - 20 * k;
      g.beginPath(); g.moveTo(sx, 26); g.lineTo(sx, hgt); g.stroke();
    }
    fullScene(g, visible, true);
  }
  g.font = "600 12px system-ui, sans-serif";
  g.fillStyle = "#5c6577";
  if (graph.nodes.length) for (const band of geo.bands) g.fillText(band.kind, Math.max(ox + band.x * k, 4), 18);
  if (!graph.nodes.length) {
    g.fillStyle = "#5c6577";
    g.font = "14px system-ui, sans-serif";
    g.fillText(graph.truncated ? "Too many nodes to draw at once: find a node above and press Focus."
      : "The graph is empty.", 20, 60);
  }
}

// Strokes paths in batches of STROKE_BATCH: one stroke of thousands of overlapping lines (a hub
// with thousands of dependents) costs the rasteriser far more than many strokes of a few.
function batcher(g, colourOf) {
  const open = new Map();  // key -> the path being filled and how many it holds
  const flush = (key, entry) => { g.strokeStyle = colourOf(key); g.stroke(entry.path); open.delete(key); };
  return {
    add(key, fn) {
      let entry = open.get(key);
      if (!entry) { entry = { path: new Path2D(), n: 0 }; open.set(key, entry); }
      fn(entry.path);
      stats.edgesDrawn += 1;
      if (++entry.n >= STROKE_BATCH) flush(key, entry);
    },
    done() { for (const [key, entry] of [...open]) flush(key, entry); },
  };
}

function edgesInView(visible) {
  let n = 0;
  for (const e of graph.edges) {
    const s = geo.index.get(e.source), t = geo.index.get(e.target);
    if (s !== undefined && t !== undefined && (visible(s) || visible(t))) n += 1;
  }
  return n;
}

function fullScene(g, visible, withEdges) {
  const { k, x: ox, y: oy } = view;
  const { xs, ys, index } = geo;
  const nodes = graph.nodes;
  g.save();
  g.translate(ox, oy);
  g.scale(k, k);
  if (withEdges) curves(g, visible);
  for (let i = 0; i < nodes.length; i++) {
    if (!visible(i)) continue;
    const n = nodes[i];
    g.fillStyle = COLOURS[n.state] || "#888";
    g.fillRect(xs[i], ys[i], NODE_W, NODE_H);
    if (n.executed) { g.fillStyle = "rgba(255,255,255,0.35)"; g.fillRect(xs[i], ys[i], 6, NODE_H); }
  }
  if (selected >= 0) {
    g.strokeStyle = "#111827";
    g.lineWidth = Math.max(3, 3 / k);
    g.strokeRect(xs[selected] - 3, ys[selected] - 3, NODE_W + 6, NODE_H + 6);
  }
  g.restore();
  labels(g, visible);
}

// Zoomed far out (or with many edges in view) the scene is rasterised here (pixelScene), into a
// pixel buffer put on the canvas at once: band rules, then edges as one-pixel aliased lines
// (coloured by their premise's state, the selection's two pixels wide in blue, a later colour
// over an earlier one), then, zoomed far out, each node as a whole-pixel mark in its status
// colour. The cost is the pixels the lines cross, whatever their overlap: the canvas's own
// antialiased strokes of hundreds of near-collinear translucent lines (a hub's fan a few pixels
// wide) took the software rasteriser hundreds of ms.
let pixels = null;
const rgba = (hex, alpha = 1) => {
  const n = parseInt(hex.slice(1), 16);
  return ((Math.round(alpha * 255) << 24) | ((n & 0xff) << 16) | (n & 0xff00) | (n >> 16)) >>> 0;
};
const DENSE_EDGE = { IN: rgba("#5a6478", 0.35), AT_RISK: rgba("#e67700", 0.6), OUT: rgba("#c92a2a", 0.55) };
const DENSE_NODE = { IN: rgba(COLOURS.IN), AT_RISK: rgba(COLOURS.AT_RISK), OUT: rgba(COLOURS.OUT) };
const DENSE_SELECTED = rgba("#1c5fd4");
const DENSE_OTHER = rgba("#888888");
const DENSE_RULE = rgba("#e5e7eb");

// a node's mark when zoomed far out, in canvas (device) pixels
function mark(i) {
  const dpr = window.devicePixelRatio || 1;
  const { k, x: ox, y: oy } = view;
  return { x: Math.round((ox + geo.xs[i] * k) * dpr), y: Math.round((oy + geo.ys[i] * k) * dpr),
    w: Math.max(1, Math.round(NODE_W * k * dpr)), h: Math.max(1, Math.round(NODE_H * k * dpr)) };
}

// A line from (x0, y0) to (x1, y1) (device pixels), clipped to the buffer (Liang-Barsky), one
// pixel per step along its longer axis; `thick`: a second pixel beside it. A line whose clipped
// ends are those of one in `seen` is the same pixels: skipped. Returns 1 if drawn.
function rasterLine(buf, W, H, seen, x0, y0, x1, y1, colour, thick) {
  const dx = x1 - x0, dy = y1 - y0;
  let t0 = 0, t1 = 1;
  const bounds = [-dx, x0, dx, W - 1 - x0, -dy, y0, dy, H - 1 - y0];
  for (let e = 0; e < 8; e += 2) {
    const p = bounds[e], q = bounds[e + 1];
    if (p === 0) { if (q < 0) return 0; continue; }
    const r = q / p;
    if (p < 0) { if (r > t1) return 0; if (r > t0) t0 = r; } else { if (r < t0) return 0; if (r < t1) t1 = r; }
  }
  const ax = Math.round(x0 + t0 * dx), ay = Math.round(y0 + t0 * dy);
  const bx = Math.round(x0 + t1 * dx), by = Math.round(y0 + t1 * dy);
  const key = ((ax * H + ay) * W + bx) * H + by;  // under 2^53 for any canvas under 8192 px a side
  if (seen.has(key)) return 0;
  seen.add(key);
  const steps = Math.max(Math.abs(bx - ax), Math.abs(by - ay));
  const sx = steps ? (bx - ax) / steps : 0, sy = steps ? (by - ay) / steps : 0;
  const flat = Math.abs(dx) > Math.abs(dy);
  let x = ax + 0.5, y = ay + 0.5;
  for (let n = 0; n <= steps; n++, x += sx, y += sy) {
    const at = (y | 0) * W + (x | 0);
    buf[at] = colour;
    if (thick) {
      if (flat) { if ((y | 0) + 1 < H) buf[at + W] = colour; } else if ((x | 0) + 1 < W) buf[at + 1] = colour;
    }
  }
  return 1;
}

// Edges as curves, coloured by their premise's state, then the selection's in blue.
function curves(g, visible) {
  const { k } = view;
  const { index } = geo;
  const nodes = graph.nodes;
  g.lineWidth = 1.2 / k;
  const edges = batcher(g, (state) => EDGE_COLOURS[state]);
  for (const e of graph.edges) {
    const s = index.get(e.source), t = index.get(e.target);
    if (s === undefined || t === undefined || (!visible(s) && !visible(t))) continue;
    edges.add(EDGE_COLOURS[nodes[s].state] ? nodes[s].state : "IN", (path) => link(path, s, t));
  }
  edges.done();
  if (selected >= 0) {
    g.lineWidth = Math.max(2, 2.5 / k);
    const chosen = batcher(g, (style) => style);
    for (const p of geo.preds[selected]) if (visible(p)) chosen.add("#1c5fd4", (path) => link(path, p, selected));
    for (const s of geo.succs[selected]) if (visible(s)) chosen.add("#1c5fd4", (path) => link(path, selected, s));
    chosen.done();
  }
}

// The scene's pixels when zoomed far out (`marks`: node marks too), or the edges alone when there
// are more than EDGE_CAP of them in view (the nodes and labels are then drawn over them).
function pixelScene(g, visible, marks) {
  const dpr = window.devicePixelRatio || 1;
  const W = scene.width, H = scene.height;
  if (!W || !H) return;
  if (!pixels || pixels.width !== W || pixels.height !== H) pixels = g.createImageData(W, H);
  const buf = new Uint32Array(pixels.data.buffer);
  buf.fill(0);
  const { k, x: ox, y: oy } = view;
  const { xs, ys, index } = geo;
  const nodes = graph.nodes;
  for (const band of geo.bands) {
    const x = Math.round((ox + band.x * k - 20 * k) * dpr);
    if (x >= 0 && x < W) for (let y = Math.round(26 * dpr); y < H; y++) buf[y * W + x] = DENSE_RULE;
  }
  // where an edge leaves a node and where it arrives, in device pixels
  const outX = (i) => Math.round((ox + (xs[i] + NODE_W) * k) * dpr);
  const inX = (i) => Math.round((ox + xs[i] * k) * dpr);
  const midY = (i) => Math.round((oy + (ys[i] + NODE_H / 2) * k) * dpr);
  const lines = { IN: [], AT_RISK: [], OUT: [] };
  for (const e of graph.edges) {
    const s = index.get(e.source), t = index.get(e.target);
    if (s === undefined || t === undefined || (!visible(s) && !visible(t))) continue;
    lines[lines[nodes[s].state] ? nodes[s].state : "IN"].push(s, t);
  }
  for (const state of ["IN", "AT_RISK", "OUT"]) {
    const list = lines[state];
    const seen = new Set();
    for (let j = 0; j < list.length; j += 2) {
      const s = list[j], t = list[j + 1];
      stats.edgesDrawn += rasterLine(buf, W, H, seen, outX(s), midY(s), inX(t), midY(t), DENSE_EDGE[state], false);
    }
  }
  if (selected >= 0) {
    const seen = new Set();
    for (const p of geo.preds[selected]) {
      if (visible(p) || visible(selected)) rasterLine(buf, W, H, seen, outX(p), midY(p), inX(selected), midY(selected), DENSE_SELECTED, true);
    }
    for (const t of geo.succs[selected]) {
      if (visible(t) || visible(selected)) rasterLine(buf, W, H, seen, outX(selected), midY(selected), inX(t), midY(t), DENSE_SELECTED, true);
    }
  }
  if (marks) {
    const mw = Math.max(1, Math.round(NODE_W * k * dpr)), mh = Math.max(1, Math.round(NODE_H * k * dpr));
    for (let i = 0; i < nodes.length; i++) {  // as mark(i), without an object a node
      if (!visible(i)) continue;
      const mx = Math.round((ox + xs[i] * k) * dpr), my = Math.round((oy + ys[i] * k) * dpr);
      const colour = DENSE_NODE[nodes[i].state] ?? DENSE_OTHER;
      const x0 = Math.max(0, mx), x1 = Math.min(W, mx + mw), y0 = Math.max(0, my), y1 = Math.min(H, my + mh);
      for (let y = y0; y < y1; y++) buf.fill(colour, y * W + x0, y * W + Math.max(x0, x1));
    }
  }
  g.putImageData(pixels, 0, 0);
  if (marks && selected >= 0) {
    const m = mark(selected);
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.strokeStyle = "#111827";
    g.lineWidth = 2 * dpr;
    g.strokeRect(m.x - 2 * dpr, m.y - 2 * dpr, m.w + 4 * dpr, m.h + 4 * dpr);
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
  }
}

// The wave: rings that grow and fade, over the scene, in batches of 32 (like the edges). Zoomed
// far out a ring is a halo a pixel or three around the node's mark, and the halos of one step of
// the animation that touch in a column are one rectangle: a few fills instead of thousands.
function rings(now) {
  const dpr = window.devicePixelRatio || 1;
  const { k, x: ox, y: oy } = view;
  const { xs, ys } = geo;
  const visible = viewport();
  if (isDense()) { halos(now, visible); return; }
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.save();
  ctx.translate(ox, oy);
  ctx.scale(k, k);
  ctx.lineWidth = 4 / Math.max(k, 0.3);
  let ring = new Path2D(), inRing = 0, style = "";
  const strokeRing = () => { if (inRing) ctx.stroke(ring); ring = new Path2D(); inRing = 0; };
  for (const p of pulses) {
    const age = (now - p.t0) / PULSE_MS;
    if (age < 0 || age > 1 || !visible(p.i)) continue;
    const step = Math.min(9, Math.floor(age * 10));
    const key = `${p.colour}|${step}`;
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
}

function halos(now, visible) {
  const dpr = window.devicePixelRatio || 1;
  const { k, x: ox, y: oy } = view;
  const { xs, ys } = geo;
  const mw = Math.max(1, Math.round(NODE_W * k * dpr)), mh = Math.max(1, Math.round(NODE_H * k * dpr));
  const groups = new Map();  // colour|step -> [x, y, w, h, ...] in device pixels
  for (const p of pulses) {
    const age = (now - p.t0) / PULSE_MS;
    if (age < 0 || age > 1 || !visible(p.i)) continue;
    const step = Math.min(9, Math.floor(age * 10));
    const key = `${p.colour}|${step}`;
    let list = groups.get(key);
    if (!list) groups.set(key, (list = []));
    const grow = Math.round((1 + step / 4) * dpr);
    list.push(Math.round((ox + xs[p.i] * k) * dpr) - grow, Math.round((oy + ys[p.i] * k) * dpr) - grow,
      mw + 2 * grow, mh + 2 * grow);
  }
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  for (const [key, list] of groups) {
    const [colour, step] = key.split("|");
    const order = [];
    for (let j = 0; j < list.length; j += 4) order.push(j);
    order.sort((a, b) => list[a] - list[b] || list[a + 2] - list[b + 2] || list[a + 1] - list[b + 1]);
    ctx.globalAlpha = 0.5 * (1 - Number(step) / 10);
    ctx.fillStyle = colour;
    const path = new Path2D();
    let run = null;
    for (const j of order) {
      const [x, y, w, h] = [list[j], list[j + 1], list[j + 2], list[j + 3]];
      if (run && run[0] === x && run[2] === w && y <= run[1] + run[3]) {
        run[3] = Math.max(run[3], y + h - run[1]);
      } else {
        if (run) path.rect(...run);
        run = [x, y, w, h];
      }
    }
    if (run) path.rect(...run);
    ctx.fill(path);
  }
  ctx.globalAlpha = 1;
}

// Labels are drawn at screen size (readable at any zoom), once a node is wide enough for its id.
function labels(g, visible) {
  const { k, x: ox, y: oy } = view;
  const width = NODE_W * k, height = NODE_H * k;
  if (width < 44 || height < 10) return;
  const size = Math.min(12, Math.max(9, height * 0.55));
  g.font = `${size}px ui-monospace, monospace`;
  g.textBaseline = "middle";
  g.fillStyle = "#fff";
  for (let i = 0; i < graph.nodes.length; i++) {
    if (!visible(i)) continue;
    const n = graph.nodes[i];
    const text = width > 150 ? `${n.id} ${n.text}` : n.id;
    g.fillText(clip(g, text, width - 10), ox + geo.xs[i] * k + 5, oy + (geo.ys[i] + NODE_H / 2) * k);
    stats.labelsDrawn += 1;
  }
  g.textBaseline = "alphabetic";
}

function link(path, s, t) {
  const { xs, ys } = geo;
  const x1 = xs[s] + NODE_W, y1 = ys[s] + NODE_H / 2, x2 = xs[t], y2 = ys[t] + NODE_H / 2, mid = (x1 + x2) / 2;
  path.moveTo(x1, y1);
  path.bezierCurveTo(mid, y1, mid, y2, x2, y2);
}

const clipCache = new Map();
function clip(g, text, width) {
  const key = `${text}|${width}|${g.font}`;
  if (clipCache.has(key)) return clipCache.get(key);
  let out = text;
  if (g.measureText(out).width > width) {
    while (out.length > 1 && g.measureText(`${out}…`).width > width) out = out.slice(0, -1);
    out = `${out}…`;
  }
  if (clipCache.size > 20000) clipCache.clear();
  clipCache.set(key, out);
  return out;
}

// -- interaction --------------------------------------------------------------------------------
function hit(px, py) {
  const x = (px - view.x) / view.k, y = (py - view.y) / view.k;
  const slack = isDense() ? 1 / view.k : 0;  // zoomed far out, a mark is a pixel or two: a pixel's grace
  for (let i = graph.nodes.length - 1; i >= 0; i--) {
    if (x >= geo.xs[i] - slack && x <= geo.xs[i] + NODE_W + slack &&
        y >= geo.ys[i] - slack && y <= geo.ys[i] + NODE_H + slack) return i;
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
  // the centre, and a point inside the box that no label covers (its top-right corner; zoomed far
  // out, inside the node's whole-pixel mark)
  const m = isDense() ? mark(i) : null;
  const dpr = window.devicePixelRatio || 1;
  return { x: view.x + (geo.xs[i] + NODE_W / 2) * view.k, y: view.y + (geo.ys[i] + NODE_H / 2) * view.k,
    fillX: m ? (m.x + (m.w - 1) / 2) / dpr : view.x + (geo.xs[i] + NODE_W) * view.k - 2,
    fillY: m ? (m.y + (m.h - 1) / 2) / dpr : view.y + geo.ys[i] * view.k + 2,
    state: graph.nodes[i].state };
}

function stateOf(nodeId) {
  const i = geo ? geo.index.get(nodeId) : undefined;
  return i === undefined ? null : graph.nodes[i].state;
}

// -- the detail panel ---------------------------------------------------------------------------
const SHOWN = 60;  // dependents listed in the panel
let detailToken = 0;
async function renderDetail(node) {
  const panel = $("#node-detail");
  const token = ++detailToken;
  const path = `api/nodes/${id(node.id)}`;
  let explanation, history, downstream;
  const page = { total: 0 };  // the panel lists the nearest SHOWN dependents, and counts them all
  try {
    [explanation, history, downstream] = await Promise.all([
      get(`${path}/explain`), get(`${path}/history`), get(`${path}/blast-radius?limit=${SHOWN}`, page)]);
  } catch (error) {
    if (token === detailToken) clear(panel, h("p", { class: "error" }, error.message));
    return;
  }
  if (token !== detailToken) return;
  const total = Math.max(page.total, downstream.length);
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
    h("h3", {}, `Rests on it (${total})`),
    downstream.length ? h("ul", { class: "plain" }, downstream.map((r) =>
      h("li", {}, tag(r.state, r.id), " ", trail(r.trail)))) : h("p", { class: "muted" }, "Nothing rests on it."),
    total > downstream.length ? h("p", { class: "muted" }, `and ${total - downstream.length} more`) : null,
    h("h3", {}, "History"),
    h("ul", { class: "plain" }, history.map((c) => h("li", {}, when(c.valid_from), " ",
      c.before ? `${c.before} → ` : "created ", tag(c.after, c.after), c.cause ? ` (${c.cause}${c.review ? ` ${c.review}` : ""})` : ""))));
}

function proposeButton(node, explanation) {
  const proposes = session.reviewer || session.role === "proposer";
  if (!(node.kind === "Claim" || node.kind === "Source") || explanation.retracted || !proposes) return null;
  return h("button", { type: "button", onclick: () => proposeForm(node) }, "Propose retraction");
}

function proposeForm(node) {
  const reason = h("textarea", { id: "propose-reason", placeholder: "Why is it false?" });
  const message = h("p", { class: "error", role: "alert" });
  clear($("#propose-box"),
    h("label", { for: "propose-reason" }, `Propose retracting ${node.id} as ${shownAs()}`), reason,
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
