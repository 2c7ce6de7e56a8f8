"""The hot-path reads start from the `id` index, never from a scan of every node.

A label scan makes a query's cost grow with the graph (the benchmark found the denied path of
`check` taking 90 ms at 20k nodes because of one); FalkorDB's own plan (GRAPH.EXPLAIN) says which
operator starts each query, so this is checked directly."""

from __future__ import annotations

import pytest
from rippl_bench.generate import causal_graph

from rippl_core import Rippl
from rippl_core._runtime.wire import Query
from rippl_core.causal import cypher as causal_cypher

HOT_PATH = {
    "node_state": causal_cypher.node_state("A0000010"),
    "get_nodes": causal_cypher.get_nodes(["A0000010", "D0000003"]),
    "resolve_call": causal_cypher.resolve_call(["migrate_tables|{}", "migrate_tables|*"]),
    "justifications": causal_cypher.justifications(["A0000010"]),
    "step_down": causal_cypher.step_down(["C0000010"]),
    "step_up": causal_cypher.step_up(["A0000010"]),
    "step_up_blocking_only": causal_cypher.step_up(["A0000010"], blocking_only=True),
}


@pytest.mark.parametrize("name", sorted(HOT_PATH))
def test_hot_path_reads_start_from_an_index(rippl: Rippl, name: str) -> None:
    rippl.load(causal_graph(200, seed=3).spec)
    query: Query = HOT_PATH[name]
    plan = [line.strip() for line in
            rippl.redis.execute_command("GRAPH.EXPLAIN", rippl.keys.graph, query.command())]
    scans = [line for line in plan if "Scan" in line]
    assert scans, plan
    assert all("Index Scan" in line for line in scans), f"{name} scans nodes: {plan}"


def test_denied_check_still_finds_every_blocker_after_the_rewrite(rippl: Rippl) -> None:
    rippl.load({"sources": [{"id": "S", "title": "s"}],
                "claims": [{"id": "C1", "text": "one", "sources": ["S"]},
                           {"id": "C2", "text": "two", "sources": ["S"]}],
                "decisions": [{"id": "D", "title": "d", "premises": ["C1", "C2"]}],
                "actions": [{"id": "A", "title": "a", "decisions": ["D"]}]})
    rippl.retract("C1", reason="false", by="t")
    rippl.retract("C2", reason="false", by="t")
    verdict = rippl.check("A")
    assert not verdict.allowed
    assert {b.premise for b in verdict.blockers} == {"C1", "C2"}
    assert all(b.trail[-1] == "A" and b.trail[-2] == "D" for b in verdict.blockers)
