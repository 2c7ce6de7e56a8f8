"""Helpers of the core test suite: consistent snapshots of a graph read straight from FalkorDB, the
reference labelling over them, random causal graphs for hypothesis, and a breadth-first search in
Python to compare walks with.

Snapshots are read inside MULTI/EXEC, so one snapshot never straddles a commit of another client.
"""

from __future__ import annotations

import contextlib
import uuid
from collections import Counter, defaultdict, deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from rippl_core import Rippl, State
from rippl_core._runtime.wire import Query, parse
from rippl_core.causal.tms import Premise, reference_labels
from rippl_core.testing import drop_graph

# Nodes Rippl keeps beside the causal graph: review queue, receipt chain, status history.
BOOKKEEPING_LABELS = frozenset({"ReviewItem", "Receipt", "ReceiptHead", "Change"})

_NODES = Query("MATCH (n) RETURN labels(n), properties(n)", read_only=True)
_EDGES = Query("MATCH (a)-[e]->(b) RETURN labels(a), properties(a), type(e), properties(e), "
               "labels(b), properties(b)", read_only=True)


def _key(labels: Sequence[str], props: Mapping[str, Any]) -> str:
    return str(props.get("id", props.get("name", props.get("node", ""))))


@dataclass
class Snapshot:
    """Everything in one graph at one instant."""

    nodes: dict[str, dict[str, Any]]  # causal nodes (label Node): id -> properties
    edges: set[tuple[str, str, str, str]]  # causal edges: (antecedent, type, consequent, j)
    other_nodes: list[tuple[tuple[str, ...], dict[str, Any]]] = field(default_factory=list)
    other_edges: list[tuple[str, str, str]] = field(default_factory=list)

    def states(self) -> dict[str, str]:
        return {node: props["state"] for node, props in self.nodes.items()}

    def premises(self) -> dict[str, Premise]:
        return {node: Premise(bool(p.get("retracted")), int(p.get("pending") or 0))
                for node, p in self.nodes.items()}

    def justifications(self) -> dict[str, list[list[str]]]:
        grouped: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for antecedent, _, consequent, j in self.edges:
            grouped[consequent][j].append(antecedent)
        return {node: [sorted(a) for a in groups.values()] for node, groups in grouped.items()}

    def reference(self) -> dict[str, str]:
        """The reference labelling of this graph's stored flags and edges."""
        return {n: s.value for n, s in reference_labels(self.premises(), self.justifications()).items()}

    def inconsistent(self) -> dict[str, tuple[str, str]]:
        """Nodes whose materialised state differs from the reference: id -> (stored, expected)."""
        expected = self.reference()
        return {n: (s, expected[n]) for n, s in self.states().items() if s != expected[n]}

    def labelled(self, label: str) -> list[dict[str, Any]]:
        return [props for labels, props in self.other_nodes if label in labels]

    def causal(self) -> tuple[dict[str, dict[str, Any]], set[tuple[str, str, str, str]]]:
        """The causal graph alone (nodes with every property, edges), for identity checks."""
        return self.nodes, self.edges


def snapshot(handle: Rippl, graph: str | None = None) -> Snapshot:
    """A consistent snapshot of graph key `graph` (default: the handle's graph), read in one
    MULTI/EXEC."""
    name = graph or handle.keys.graph
    if not handle.redis.exists(name):
        return Snapshot({}, set())
    pipe = handle.redis.pipeline(transaction=True)
    pipe.execute_command("GRAPH.RO_QUERY", name, _NODES.command(), "--compact")
    pipe.execute_command("GRAPH.RO_QUERY", name, _EDGES.command(), "--compact")
    node_reply, edge_reply = pipe.execute()
    nodes: dict[str, dict[str, Any]] = {}
    others: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    for labels, props in parse(node_reply):
        if "Node" in labels:
            nodes[props["id"]] = props
        else:
            others.append((tuple(sorted(labels)), props))
    edges: set[tuple[str, str, str, str]] = set()
    other_edges: list[tuple[str, str, str]] = []
    for a_labels, a, rel, props, b_labels, b in parse(edge_reply):
        if "Node" in a_labels and "Node" in b_labels:
            edges.add((a["id"], rel, b["id"], str(props.get("j"))))
        else:
            other_edges.append((_key(a_labels, a), rel, _key(b_labels, b)))
    return Snapshot(nodes, edges, sorted(others, key=repr), sorted(other_edges))


def assert_consistent(snap: Snapshot) -> None:
    bad = snap.inconsistent()
    assert not bad, f"materialised states differ from the reference labelling: {bad}"


def pending_counts_match_reviews(snap: Snapshot) -> None:
    """Every claim's pending count equals its number of pending review items."""
    pending = Counter(r["claim"] for r in snap.labelled("ReviewItem") if r["status"] == "pending")
    assert {n: int(p.get("pending") or 0) for n, p in snap.nodes.items() if p.get("pending")} == dict(pending)


def version(handle: Rippl) -> int:
    return int(handle.redis.get(handle.keys.version) or 0)


@contextlib.contextmanager
def fresh(backend: Mapping[str, Any], **kwargs: Any) -> Iterator[Rippl]:
    """A handle on a new, uniquely named graph of `backend`, dropped afterwards."""
    handle = Rippl.open(graph=f"p-{uuid.uuid4().hex[:12]}", **backend, **kwargs)
    try:
        yield handle
    finally:
        drop_graph(handle)
        handle.close()


# ----------------------------------------------------------------------------- random graphs


@dataclass
class GraphPlan:
    """A random causal graph: nodes by kind (in creation order) and their justifications.

    `justifications[n]` holds what `load` would create: each source of a claim is its own
    justification; a claim's derived_from, a decision's premises, an action's decisions+triggers
    are one justification each. `extra` are alternative justifications added afterwards (they may
    point at later nodes and close cycles)."""

    kinds: dict[str, str]
    sources: dict[str, list[str]]  # claim -> sources
    derived: dict[str, list[str]]  # claim -> claims
    premises: dict[str, list[str]]  # decision -> claims + decisions
    drives: dict[str, list[str]]  # action -> decisions + actions
    extra: list[tuple[str, list[str]]]

    def ids(self, kind: str | None = None) -> list[str]:
        return [n for n, k in self.kinds.items() if kind is None or k == kind]

    def justifications(self) -> dict[str, list[list[str]]]:
        justs: dict[str, list[list[str]]] = {n: [] for n in self.kinds}
        for claim, sources in self.sources.items():
            justs[claim] += [[s] for s in sources]
        for table in (self.derived, self.premises, self.drives):
            for node, ants in table.items():
                if ants:
                    justs[node].append(sorted(ants))
        for node, ants in self.extra:
            if sorted(set(ants)) not in [sorted(set(j)) for j in justs[node]]:
                justs[node].append(sorted(set(ants)))
        return justs

    def spec(self) -> dict[str, Any]:
        """The plan as a `load` description (extras under `justifications:`)."""
        return {
            "sources": [{"id": s, "title": f"source {s}"} for s in self.ids("Source")],
            "claims": [{"id": c, "text": f"claim {c}", "sources": self.sources.get(c, []),
                        "derived_from": self.derived.get(c, [])} for c in self.ids("Claim")],
            "decisions": [{"id": d, "title": f"decision {d}", "premises": self.premises.get(d, [])}
                          for d in self.ids("Decision")],
            "actions": [{"id": a, "title": f"action {a}", "decisions": self.drives.get(a, [])}
                        for a in self.ids("Action")],
            "justifications": [{"node": n, "antecedents": ants} for n, ants in self.extra],
        }

    def build(self, handle: Rippl, *, one_by_one: bool) -> None:
        """Write the plan, either with one `load` or with add_* calls then `justify`."""
        if not one_by_one:
            handle.load(self.spec())
            return
        for s in self.ids("Source"):
            handle.add_source(s, f"source {s}")
        for c in self.ids("Claim"):
            handle.add_claim(c, f"claim {c}", sources=self.sources.get(c, []),
                             derived_from=self.derived.get(c, []))
        for d in self.ids("Decision"):
            handle.add_decision(d, f"decision {d}", premises=self.premises.get(d, []))
        for a in self.ids("Action"):
            handle.add_action(a, f"action {a}", decisions=self.drives.get(a, []))
        for node, ants in self.extra:
            handle.justify(node, ants)


# Which kinds may support which (DESIGN §3).
SUPPORTERS = {"Claim": ("Source", "Claim"), "Decision": ("Claim", "Decision"),
              "Action": ("Decision", "Action")}


@st.composite
def graph_plans(draw: st.DrawFn, *, max_nodes: int = 22, cycles: bool = True) -> GraphPlan:
    """Random causal graphs of at most `max_nodes` nodes, with alternative justifications and
    (when `cycles`) extra justifications pointing at later nodes, which close cycles."""
    prefix = uuid.uuid4().hex[:6]
    counts = {"Source": draw(st.integers(1, 4)), "Claim": draw(st.integers(1, 7)),
              "Decision": draw(st.integers(0, 6)), "Action": draw(st.integers(0, 5))}
    while sum(counts.values()) > max_nodes:
        counts["Claim"] -= 1
    kinds: dict[str, str] = {}
    by_kind: dict[str, list[str]] = {k: [] for k in counts}
    for kind, count in counts.items():
        for i in range(count):
            node = f"{kind[0]}{i}-{prefix}"
            kinds[node] = kind
            by_kind[kind].append(node)

    def subset(pool: list[str], most: int) -> list[str]:
        if not pool:
            return []
        return draw(st.lists(st.sampled_from(pool), max_size=most, unique=True))

    sources, derived, premises, drives = {}, {}, {}, {}
    for i, c in enumerate(by_kind["Claim"]):
        sources[c] = subset(by_kind["Source"], 2)
        derived[c] = subset(by_kind["Claim"][:i], 2)
    for i, d in enumerate(by_kind["Decision"]):
        premises[d] = subset(by_kind["Claim"] + by_kind["Decision"][:i], 3)
    for i, a in enumerate(by_kind["Action"]):
        drives[a] = subset(by_kind["Decision"] + by_kind["Action"][:i], 2)
    extra: list[tuple[str, list[str]]] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["Claim", "Decision", "Action"]))
        if not by_kind[kind]:
            continue
        node = draw(st.sampled_from(by_kind[kind]))
        pool = [n for k in SUPPORTERS[kind] for n in by_kind[k] if n != node]
        if not cycles:  # only earlier nodes of the same kind: stays acyclic
            pool = [n for n in pool if kinds[n] != kind or by_kind[kind].index(n) < by_kind[kind].index(node)]
        ants = subset(pool, 2)
        if ants:
            extra.append((node, ants))
    return GraphPlan(kinds, sources, derived, premises, drives, extra)


# ----------------------------------------------------------------------------- walks in Python


def bfs(edges: Mapping[str, Sequence[str]], root: str) -> dict[str, int]:
    """Shortest distance from `root` to every node reachable along `edges` (root excluded)."""
    depth = {root: 0}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        for nxt in edges.get(node, ()):
            if nxt not in depth:
                depth[nxt] = depth[node] + 1
                queue.append(nxt)
    del depth[root]
    return depth


def adjacency(snap: Snapshot, *, down: bool) -> dict[str, list[str]]:
    adj: dict[str, list[str]] = defaultdict(list)
    for a, _, b, _ in snap.edges:
        if down:
            adj[a].append(b)
        else:
            adj[b].append(a)
    return adj


def states_of(snap: Snapshot, ids: Sequence[str]) -> dict[str, str]:
    return {n: snap.nodes[n]["state"] for n in ids}


IN, AT_RISK, OUT = State.IN.value, State.AT_RISK.value, State.OUT.value


@contextlib.contextmanager
def loopback_graph(url: str, prefix: str) -> Iterator[Rippl]:
    """A handle on a graph of its own (`prefix`-<hex>) on the server at `url`, dropped and closed
    afterwards."""
    handle = Rippl.open(url=url, graph=f"{prefix}-{uuid.uuid4().hex[:8]}")
    try:
        yield handle
    finally:
        handle.drop()
        handle.close()
