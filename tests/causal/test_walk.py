"""blast_radius and premises: exact at any depth (compared with a breadth-first search in Python over
the edges read back from FalkorDB), cycle-safe, with shortest depths and trails that are real paths.
Both backends."""

from __future__ import annotations

from typing import Any

import pytest
from helpers_core import GraphPlan, adjacency, bfs, fresh, graph_plans, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import InvalidInputError, Kind, NotFoundError, Reached, Rippl, State


def check_walk(snap: Any, root: str, reached: list[Reached], *, down: bool,
               max_depth: int | None = None) -> None:
    """`reached` must be exactly the BFS of `root`, with shortest depths and real trails."""
    expected = bfs(adjacency(snap, down=down), root)
    if max_depth is not None:
        expected = {n: d for n, d in expected.items() if d <= max_depth}
    assert {r.id: r.depth for r in reached} == expected
    assert len(reached) == len(expected)  # no duplicates
    edges = {(a, b) for a, _, b, _ in snap.edges}
    for r in reached:
        assert r.kind is Kind(snap.nodes[r.id]["kind"])
        assert r.state is State(snap.nodes[r.id]["state"])
        assert len(r.trail) == r.depth + 1 and len(set(r.trail)) == len(r.trail)
        if down:  # from the root down to the node
            assert r.trail[0] == root and r.trail[-1] == r.id
        else:  # from the premise down to the root
            assert r.trail[0] == r.id and r.trail[-1] == root
        assert all((a, b) in edges for a, b in zip(r.trail, r.trail[1:], strict=False)), r.trail
    assert [(r.depth, r.id) for r in reached] == sorted((r.depth, r.id) for r in reached)


def lattice(width: int, layers: dict[str, int]) -> dict[str, Any]:
    """A diamond lattice: every node rests on every node of the layer above (width**depth paths)."""
    spec: dict[str, list[dict[str, Any]]] = {"sources": [{"id": "root", "title": "root"}],
                                             "claims": [], "decisions": [], "actions": []}
    previous = ["root"]
    for kind, count in layers.items():
        for layer in range(count):
            current = [f"{kind[0]}{layer}.{i}" for i in range(width)]
            for node in current:
                if kind == "claims":
                    field = "sources" if previous == ["root"] else "derived_from"
                    spec["claims"].append({"id": node, "text": node, field: previous})
                elif kind == "decisions":
                    spec["decisions"].append({"id": node, "title": node, "premises": previous})
                else:
                    spec["actions"].append({"id": node, "title": node,
                                            ("decisions" if previous[0][0] == "d" else "triggers"): previous})
            previous = current
    return spec


def test_blast_radius_on_a_deep_diamond_lattice_is_exact(rippl: Rippl) -> None:
    # 3 wide, 36 deep: 3**36 root-to-leaf paths; a path-enumerating walk would never finish.
    rippl.load(lattice(3, {"claims": 12, "decisions": 12, "actions": 12}))
    snap = snapshot(rippl)
    reached = rippl.blast_radius("root")
    assert len(reached) == 108 and max(r.depth for r in reached) == 36
    check_walk(snap, "root", reached, down=True)
    check_walk(snap, "root", rippl.blast_radius("root", max_depth=5), down=True, max_depth=5)
    leaf = "a11.2"
    premises = rippl.premises(leaf)
    assert len(premises) == 35 * 3 + 1  # every node of the 35 layers above it, and the root
    check_walk(snap, leaf, premises, down=False)
    check_walk(snap, leaf, rippl.premises(leaf, max_depth=7), down=False, max_depth=7)
    assert rippl.blast_radius(leaf) == []
    assert rippl.premises("root") == []


def test_walks_report_current_states(rippl: Rippl) -> None:
    rippl.load(lattice(2, {"claims": 3, "decisions": 2}))
    rippl.retract("c1.0", reason="wrong", by="x")
    by_id = {r.id: r for r in rippl.blast_radius("root")}
    assert by_id["c1.0"].state is State.OUT and by_id["c1.0"].status == "Retracted"
    assert by_id["d0.1"].state is State.OUT and by_id["d0.1"].status == "Premise Retracted"
    assert by_id["c0.1"].state is State.IN
    # A retracted node still has its downstream: the walk follows edges, not status.
    assert {r.id for r in rippl.blast_radius("c1.0")} == {"c2.0", "c2.1", "d0.0", "d0.1", "d1.0", "d1.1"}


def test_walks_are_cycle_safe(rippl: Rippl) -> None:
    rippl.add_claim("A", "a")
    rippl.add_claim("B", "b", derived_from=["A"])
    rippl.add_claim("C", "c", derived_from=["B"])
    rippl.justify("A", ["C"])  # A -> B -> C -> A
    rippl.add_decision("D", "d", premises=["C"])
    snap = snapshot(rippl)
    for node in "ABCD":
        check_walk(snap, node, rippl.blast_radius(node), down=True)
        check_walk(snap, node, rippl.premises(node), down=False)
    assert [(r.id, r.depth) for r in rippl.blast_radius("A")] == [("B", 1), ("C", 2), ("D", 3)]
    assert [(r.id, r.trail) for r in rippl.premises("D")] == [
        ("C", ["C", "D"]), ("B", ["B", "C", "D"]), ("A", ["A", "B", "C", "D"])]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=graph_plans(cycles=True), data=st.data())
def test_walks_of_random_graphs_equal_breadth_first_search(backend: dict[str, object], plan: GraphPlan,
                                                           data: st.DataObject) -> None:
    with fresh(backend) as handle:
        plan.build(handle, one_by_one=False)
        snap = snapshot(handle)
        for root in data.draw(st.lists(st.sampled_from(sorted(plan.kinds)), min_size=1, max_size=3,
                                       unique=True)):
            depth = data.draw(st.one_of(st.none(), st.integers(1, 4)))
            check_walk(snap, root, handle.blast_radius(root, max_depth=depth), down=True, max_depth=depth)
            check_walk(snap, root, handle.premises(root, max_depth=depth), down=False, max_depth=depth)


@pytest.mark.parametrize("call", ["blast_radius", "premises"])
def test_walk_input_is_checked(rippl: Rippl, call: str) -> None:
    rippl.add_claim("C", "c")
    walk = getattr(rippl, call)
    with pytest.raises(NotFoundError):
        walk("ghost")
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(InvalidInputError):
            walk("C", max_depth=bad)
    for bad_id in ("", " C", "x" * 129, None, 7):
        with pytest.raises(InvalidInputError):
            walk(bad_id)
