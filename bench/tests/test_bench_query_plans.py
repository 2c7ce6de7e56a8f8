"""The hot-path reads start from the `id` index, never from a scan of every node.

A label scan makes a query's cost grow with the graph (the benchmark found the denied path of
`check` taking 90 ms at 20k nodes because of one); FalkorDB's own plan (GRAPH.EXPLAIN) says which
operator starts each query, so this is checked directly."""

from __future__ import annotations

from collections.abc import Callable

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


# ------------------------------------------------------------------------------------ capture

# Each step of a capture flow that touches every capture query on the hot path: a turn with a
# tool result in context (verified), a read tool's execution (freshness), a turn that rests on the
# reading, a turn with an unaccounted message (the whole run and its scope read), another run of
# the scope (hand-over claims), a veto and a repeat of the vetoed call (repeat lookups, what the
# veto named), a re-check at execution, an edited call, a text reply, a stale reading denied, and
# a superseding reading.
CAPTURE_STEPS = ("decide", "executed", "decide with a reading", "decide unaccounted",
                 "executed read", "decide in another run of the scope", "denied and told",
                 "repeat of a vetoed call", "judge", "judge an edited call", "wrote",
                 "observe", "stale", "superseded", "check a captured action",
                 "decide on the user's question alone",
                 "decide on a new question after the run's messages")


def _capture_flow(rippl: Rippl, step: Callable[[str], None]) -> None:
    from rippl_core import ToolCall
    from rippl_core.adapters import output_digest

    rippl.load(causal_graph(200, seed=3).spec)
    claim = next(n["id"] for n in causal_graph(200, seed=3).spec["claims"])
    run = rippl.run("r1", scope="s")
    warm = ToolCall(name="warm", args={}, id="w1")
    run.decide("t0", [warm], context=[])
    run.executed(warm, "warm")
    health = ToolCall(name="get_health", args={"shard": "09"}, id="h1")
    step("decide")
    run.decide("t1", [health], context=["w1"], results={"w1": output_digest("warm")})
    step("executed read")
    run.executed(health, "shard 09: healthy", fresh_for=0.001)
    migrate = ToolCall(name="migrate", args={"shard": "09"}, id="m1")
    step("decide with a reading")
    run.decide("t2", [migrate], context=["h1", "t1"])
    step("executed")
    run.executed(migrate, "migrated")
    step("decide unaccounted")
    run.decide("t3", [ToolCall(name="noop", args={}, id="n1")], context=["h1", "who-knows"])
    other = rippl.run("r2", scope="s")
    step("decide in another run of the scope")
    other.decide("u1", [ToolCall(name="noop", args={}, id="o1")], context=["m1"])
    asked = rippl.run("r3")
    step("decide on the user's question alone")
    asked.decide("q1", [ToolCall(name="noop", args={}, id="q1c")], context=["ask-1"],
                 inputs=["ask-1"])
    step("decide on a new question after the run's messages")
    asked.decide("q2", [ToolCall(name="noop", args={"n": 2}, id="q2c")],
                 context=["ask-1", "q1", "ask-2"], inputs=["ask-1", "ask-2"])
    step("observe")
    run.observe([claim], ref="memory-1")
    step("")
    rippl.retract(claim, reason="false", by="t")
    risky = ToolCall(name="deploy", args={"v": 1}, id="d1")
    step("denied and told")
    [denied] = run.decide("t4", [risky], context=["memory-1"])
    assert not denied.allowed
    step("repeat of a vetoed call")
    [again] = run.decide("t5", [ToolCall(name="deploy", args={"v": 1}, id="d2")],
                         context=[], told=["d1"])
    assert not again.allowed
    step("judge")
    run.judge(ToolCall(name="noop", args={}, id="n1"))
    step("judge an edited call")
    run.judge(ToolCall(name="noop", args={"edited": True}, id="n1"))
    step("wrote")
    run.wrote("reply-1", context=["h1", "m1"])
    stale = ToolCall(name="migrate", args={"shard": "10"}, id="m2")
    step("stale")
    [late] = run.decide("t6", [stale], context=["h1"])
    assert not late.allowed, late.reason
    again_health = ToolCall(name="get_health", args={"shard": "09"}, id="h2")
    other.decide("u2", [again_health], context=[])
    step("superseded")
    other.executed(again_health, "shard 09: down", fresh_for=300)
    step("check a captured action")
    rippl.check(str(late.target))
    step("")


def test_capture_queries_start_from_an_index(rippl: Rippl, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    """Every query a capture flow sends (decide, executed, repeat and scope lookups, freshness,
    judge, wrote) finds its nodes through an index, never by scanning a label."""
    from rippl_core._runtime import driver

    sent: dict[str, list[Query]] = {}
    current = [""]
    original = driver._args

    def spy(graph: str, query: Query) -> tuple[str, ...]:
        if current[0]:
            sent.setdefault(current[0], []).append(query)
        return original(graph, query)

    monkeypatch.setattr(driver, "_args", spy)
    _capture_flow(rippl, lambda name: current.__setitem__(0, name))
    assert set(CAPTURE_STEPS) <= set(sent), sorted(set(CAPTURE_STEPS) - set(sent))
    scanning = []
    for name, queries in sent.items():
        for query in queries:
            plan = [line.strip() for line in rippl.redis.execute_command(
                "GRAPH.EXPLAIN", rippl.keys.graph, query.command())]
            scans = [line for line in plan if "Scan" in line and "Index Scan" not in line]
            if scans:
                scanning.append(f"{name}: {scans} in {query.text[:160]}")
    assert not scanning, "\n".join(scanning)
