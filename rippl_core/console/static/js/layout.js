// A layered left-to-right layout of the causal DAG: one band of columns per kind (Source, Claim,
// Decision, Action); inside a band, a node sits one column right of its same-kind premises
// (derived claims, decisions resting on decisions, triggered actions). Rows are ordered by a few
// barycenter sweeps to cut crossings. Linear in nodes + edges per sweep.

export const KINDS = ["Source", "Claim", "Decision", "Action"];
export const COL_W = 200;
export const ROW_H = 44;
export const NODE_W = 150;
export const NODE_H = 30;

export function layout(nodes, edges) {
  const index = new Map(nodes.map((n, i) => [n.id, i]));
  const preds = nodes.map(() => []);
  const succs = nodes.map(() => []);
  for (const e of edges) {
    const s = index.get(e.source), t = index.get(e.target);
    if (s === undefined || t === undefined) continue;
    preds[t].push(s);
    succs[s].push(t);
  }
  // sub-rank inside a kind: longest chain of same-kind premises (Kahn's order; a cycle stays at 0)
  const band = nodes.map((n) => Math.max(0, KINDS.indexOf(n.kind)));
  const sub = new Array(nodes.length).fill(0);
  const indegree = nodes.map((_, i) => preds[i].filter((p) => band[p] === band[i]).length);
  const ready = [];
  indegree.forEach((d, i) => { if (d === 0) ready.push(i); });
  while (ready.length) {
    const i = ready.pop();
    for (const t of succs[i]) {
      if (band[t] !== band[i]) continue;
      sub[t] = Math.max(sub[t], sub[i] + 1);
      if (--indegree[t] === 0) ready.push(t);
    }
  }
  const width = KINDS.map(() => 1);
  nodes.forEach((_, i) => { width[band[i]] = Math.max(width[band[i]], sub[i] + 1); });
  const start = [0];
  for (let k = 1; k < KINDS.length; k++) start[k] = start[k - 1] + width[k - 1];
  const col = nodes.map((_, i) => start[band[i]] + sub[i]);
  const columns = [];
  nodes.forEach((n, i) => { (columns[col[i]] ||= []).push(i); });
  for (const c of columns) c?.sort((a, b) => (nodes[a].id < nodes[b].id ? -1 : 1));
  const pos = new Float64Array(nodes.length);
  const place = () => columns.forEach((c) => c?.forEach((i, r) => { pos[i] = r; }));
  place();
  const sweep = (neighbours, order) => {
    for (const c of order) {
      const column = columns[c];
      if (!column) continue;
      const key = new Map();
      for (const i of column) {
        const ns = neighbours[i];
        key.set(i, ns.length ? ns.reduce((s, j) => s + pos[j], 0) / ns.length : pos[i]);
      }
      column.sort((a, b) => key.get(a) - key.get(b));
      column.forEach((i, r) => { pos[i] = r; });
    }
  };
  const forward = columns.map((_, c) => c);
  const backward = [...forward].reverse();
  for (let round = 0; round < 4; round++) {
    sweep(preds, forward);
    sweep(succs, backward);
  }
  const tallest = Math.max(1, ...columns.map((c) => (c ? c.length : 0)));
  const xs = new Float64Array(nodes.length), ys = new Float64Array(nodes.length);
  columns.forEach((c, ci) => c?.forEach((i, r) => {
    xs[i] = ci * COL_W;
    ys[i] = (r + (tallest - c.length) / 2) * ROW_H;
  }));
  const bands = KINDS.map((kind, k) => ({ kind, x: start[k] * COL_W, width: width[k] * COL_W }));
  return { xs, ys, preds, succs, index, bands, columns: columns.length, height: tallest * ROW_H };
}
