"""What blocks a node, materialised by every wave and read by a check in one round trip, against
a walk of the node's ancestry (`walk_blockers`) and against the walk as it was before (each
premise found by a breadth-first walk, with the trail of the walk's first parents).

The trail rule (shortest, then the smallest id at each step up from the node) is checked on its
own against a brute-force enumeration of every shortest path, for a whole graph and for a region
computed from the trails stored around it."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import pytest
from helpers_core import GraphPlan, fresh, graph_plans, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import Rippl, RipplError, ToolCall
from rippl_core.causal import blockers, cypher, preflight
from rippl_core.causal.walk import trail, walk
from rippl_core.models import Blocker

# ------------------------------------------------------------------------ the rule, no database


@st.composite
def shaky_graphs(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]], set[str]]:
    """Nodes that are not IN, the edges among them (cycles included) and which are premises
    that block (retracted or under review)."""
    n = draw(st.integers(1, 9))
    nodes = [f"n{i}" for i in range(n)]
    preds = {node: sorted(set(draw(st.lists(st.sampled_from(nodes), max_size=3))) - {node})
             for node in nodes}
    blocking = set(draw(st.lists(st.sampled_from(nodes), max_size=3)))
    return nodes, preds, blocking


def brute_force(nodes: list[str], preds: dict[str, list[str]], blocking: set[str]
                ) -> dict[str, dict[str, list[str]]]:
    """Every simple path from each blocker to each node; keep the shortest, and among those the
    one whose reading from the node upwards is smallest."""
    out: dict[str, dict[str, list[str]]] = {}
    for node in nodes:
        found: dict[str, list[str]] = {}
        for premise in blocking:
            paths = [[node]] if premise == node else []
            stack = [[node]]
            while stack:
                up = stack.pop()
                for p in preds[up[-1]]:
                    if p in up:
                        continue
                    if p == premise:
                        paths.append([*up, p])
                    else:
                        stack.append([*up, p])
            if paths:
                shortest = min(len(p) for p in paths)
                found[premise] = min(p for p in paths if len(p) == shortest)[::-1]
        out[node] = found
    return out


@settings(max_examples=400, deadline=None)
@given(shaky_graphs())
def test_trails_are_the_smallest_shortest_paths(graph: Any) -> None:
    nodes, preds, blocking = graph
    assert blockers.trails(nodes, preds, blocking, {}) == brute_force(nodes, preds, blocking)


@settings(max_examples=400, deadline=None)
@given(shaky_graphs(), st.data())
def test_a_region_from_the_trails_stored_around_it_gets_the_same_trails(graph: Any,
                                                                         data: st.DataObject
                                                                         ) -> None:
    nodes, preds, blocking = graph
    expected = brute_force(nodes, preds, blocking)
    succ: dict[str, set[str]] = defaultdict(set)
    for node, ps in preds.items():
        for p in ps:
            succ[p].add(node)
    region = set(data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=3)))
    stack = list(region)
    while stack:  # a region is closed downstream
        for nxt in succ[stack.pop()]:
            if nxt not in region:
                region.add(nxt)
                stack.append(nxt)
    known: dict[str, blockers.Trails | None] = {n: expected[n] for n in nodes if n not in region}
    found = blockers.trails(region, preds, blocking & region, known)
    assert found == {n: expected[n] for n in region}


@given(shaky_graphs(), st.integers(0, 3))
def test_over_the_cap_or_below_an_unknown_node_a_node_carries_nothing(graph: Any, cap: int
                                                                       ) -> None:
    nodes, preds, blocking = graph
    expected = brute_force(nodes, preds, blocking)
    found = blockers.trails(nodes, preds, blocking, {}, cap=cap)
    for node in nodes:
        if len(expected[node]) > cap:
            assert found[node] is None
        if found[node] is not None:
            assert found[node] == expected[node]
    # a node is dropped exactly when it or an antecedent chain above it has too many
    for node in nodes:
        if found[node] is None:
            assert len(expected[node]) > cap or any(found[p] is None for p in preds[node])
    unknown = blockers.trails(nodes, {**preds, nodes[0]: [*preds[nodes[0]], "outside"]},
                              blocking, {"outside": None})
    assert unknown[nodes[0]] is None


# ---------------------------------------------------------------------------- on a real graph


def old_walk(handle: Rippl, node: str) -> list[tuple[str, str, str, str | None, list[str]]]:
    """The walk before materialisation: breadth first through nodes that are not IN, the trail
    of each premise following the walk's parents (whichever row came first)."""
    def op() -> Any:
        visits = yield from walk([node], down=False, blocking_only=True)
        rows = yield cypher.get_nodes([node])
        return visits, rows

    visits, rows = handle._driver.run(op)
    found = [(v.id, v.kind, v.state, v.reason, trail(visits, v.id)[::-1])
             for v in visits.values() if v.retracted or v.pending]
    props = rows[0][0] if rows else {}
    if props.get("retracted") or props.get("pending"):
        found.append((node, props["kind"], props["state"], props.get("reason"), [node]))
    return found


def edges_not_in(handle: Rippl) -> set[tuple[str, str]]:
    snap = snapshot(handle)
    shaky = {n for n, p in snap.nodes.items() if p["state"] != "IN"}
    return {(a, b) for a, _rel, b, _j in snap.edges if a in shaky and b in shaky}


def as_tuples(found: list[Blocker]) -> list[tuple[str, str, str, str | None, list[str]]]:
    return [(b.premise, b.kind.value, b.state.value, b.reason, b.trail) for b in found]


def assert_blockers_as_walked(handle: Rippl) -> None:
    """Every node that is not IN: what it carries is what a walk finds, and the same premises,
    states, reasons and trail lengths as the old walk, each trail a path of nodes not IN."""
    snap = snapshot(handle)
    allowed = edges_not_in(handle)
    for node, props in snap.nodes.items():
        if props["state"] == "IN":
            assert "blockers" not in props, f"{node} is IN but carries blockers"
            continue
        carried = handle._driver.run(lambda node=node: preflight.find_blockers(node))
        walked = handle._driver.run(lambda node=node: preflight.walk_blockers(node))
        assert "blockers" in props or len(walked) > blockers.CAP
        assert as_tuples(carried) == as_tuples(walked)
        old = sorted(old_walk(handle, node), key=lambda b: (len(b[4]), b[0]))
        assert [(p, k, s, r, len(t)) for p, k, s, r, t in old] == \
            [(p, k, s, r, len(t)) for p, k, s, r, t in as_tuples(carried)]
        for b in carried:
            assert b.trail[0] == b.premise and b.trail[-1] == node
            assert all(pair in allowed for pair in itertools.pairwise(b.trail))


OPS = st.lists(st.tuples(st.sampled_from(["retract", "reinstate", "propose", "approve", "reject",
                                          "justify"]), st.integers(0, 50), st.integers(0, 50)),
               max_size=8)


def apply(handle: Rippl, plan: GraphPlan, reviews: list[str], op: str, i: int, j: int) -> None:
    retractable = plan.ids("Source") + plan.ids("Claim")
    target = retractable[i % len(retractable)]
    try:
        if op == "retract":
            handle.retract(target, reason=f"wrong {i}", by="prop")
        elif op == "reinstate":
            handle.reinstate(target, reason="right after all", by="prop")
        elif op == "propose":
            reviews.append(handle.propose_retraction(target, reason="doubt", by="monitor").id)
        elif op in ("approve", "reject") and reviews:
            decide = handle.approve if op == "approve" else handle.reject
            decide(reviews[i % len(reviews)], by="human")
        elif op == "justify":
            others = [n for n in plan.kinds if plan.kinds[n] != "Source"]
            if others:
                node = others[i % len(others)]
                handle.justify(node, [list(plan.kinds)[j % len(plan.kinds)]])
    except RipplError:
        pass  # a refused operation changes nothing


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=st.one_of(graph_plans(cycles=False), graph_plans(cycles=True)), ops=OPS,
       one_by_one=st.booleans())
def test_what_waves_materialise_is_what_a_walk_finds(backend: dict[str, object], plan: GraphPlan,
                                                     ops: list[tuple[str, int, int]],
                                                     one_by_one: bool) -> None:
    with fresh(backend) as handle:
        plan.build(handle, one_by_one=one_by_one)
        reviews: list[str] = []
        for op, i, j in ops:
            apply(handle, plan, reviews, op, i, j)
            assert_blockers_as_walked(handle)


def test_a_denied_check_is_one_read(rippl: Rippl) -> None:
    rippl.add_source("S1", "dashboard")
    rippl.add_claim("C1", "shard 09 is healthy", sources=["S1"])
    rippl.add_decision("D1", "migrate", premises=["C1"])
    rippl.add_action("A1", "move", decisions=["D1"], tool="migrate", args={"shard": "09"})
    rippl.retract("C1", reason="disk failing", by="sre")
    sent: list[Any] = []
    original = rippl._driver.query

    def counting(query: Any) -> Any:
        sent.append(query)
        return original(query)

    rippl._driver.query = counting  # type: ignore[method-assign]
    verdict = rippl.check("A1")
    call = rippl.check(ToolCall(name="migrate", args={"shard": "09"}))
    assert len(sent) == 2  # one read each
    for v in (verdict, call):
        assert not v.allowed
        assert as_tuples(v.blockers) == [("C1", "Claim", "OUT", "disk failing", ["C1", "D1", "A1"])]


def test_a_node_written_before_blockers_were_kept_is_walked(rippl: Rippl) -> None:
    rippl.add_source("S1", "dashboard")
    rippl.add_claim("C1", "shard 09 is healthy", sources=["S1"])
    rippl.add_action("A1", "move", decisions=[rippl.add_decision("D1", "go", premises=["C1"]).id])
    rippl.retract("C1", reason="wrong", by="sre")
    rippl.redis.execute_command("GRAPH.QUERY", rippl.graph, "MATCH (n:Node) REMOVE n.blockers")
    verdict = rippl.check("A1")
    assert as_tuples(verdict.blockers) == [("C1", "Claim", "OUT", "wrong", ["C1", "D1", "A1"])]
    rippl.reinstate("C1", reason="fine", by="sre")  # the next wave writes them again
    rippl.retract("C1", reason="wrong again", by="sre")
    assert "blockers" in snapshot(rippl).nodes["A1"]


@pytest.fixture
def rippl(open_rippl: Any) -> Rippl:
    return open_rippl()  # type: ignore[no-any-return]
