"""Pre-flight: check/guard verdicts, blockers and their trails, policies, tool-call resolution, and
failing closed when the graph cannot be read. Both backends (plus a private server we stop)."""

from __future__ import annotations

from collections import deque

import pytest
from helpers_core import GraphPlan, fresh, graph_plans, snapshot, version
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import (
    AsyncRippl,
    Policy,
    PremiseRetractedError,
    Rippl,
    State,
    ToolCall,
    Verdict,
)
from rippl_core.testing import start_falkordb_server

MIGRATE_09 = {"table": "billing", "shard": "09"}
MIGRATE_07 = {"table": "billing", "shard": "07"}


def expected_blockers(snap: object, target: str) -> dict[str, int]:
    """Retracted or proposed nodes upstream of `target` through nodes that are not IN, with the
    length of the shortest such trail (a Python BFS over the snapshot)."""
    nodes = snap.nodes  # type: ignore[attr-defined]
    up: dict[str, list[str]] = {}
    for a, _, b, _ in snap.edges:  # type: ignore[attr-defined]
        up.setdefault(b, []).append(a)
    depth, queue = {target: 0}, deque([target])
    while queue:
        node = queue.popleft()
        for parent in up.get(node, []):
            if parent not in depth and nodes[parent]["state"] != "IN":
                depth[parent] = depth[node] + 1
                queue.append(parent)
    flagged = {n: d for n, d in depth.items()
               if nodes[n].get("retracted") or int(nodes[n].get("pending") or 0)}
    if len(depth) > 1:
        flagged.pop(target, None)  # the target is its own blocker only when nothing above blocks it
    return flagged


def check_verdict(snap: object, target: str, verdict: Verdict) -> None:
    nodes = snap.nodes  # type: ignore[attr-defined]
    edges = {(a, b) for a, _, b, _ in snap.edges}  # type: ignore[attr-defined]
    state = nodes[target]["state"]
    assert verdict.target == target and verdict.state is State(state)
    assert verdict.allowed == (state == "IN")
    if state == "IN":
        assert verdict.blockers == []
        return
    assert {b.premise: len(b.trail) - 1 for b in verdict.blockers} == expected_blockers(snap, target)
    for b in verdict.blockers:
        assert b.trail[0] == b.premise and b.trail[-1] == target
        assert all((x, y) in edges for x, y in zip(b.trail, b.trail[1:], strict=False))
        assert all(nodes[n]["state"] != "IN" for n in b.trail)
        assert b.state is State(nodes[b.premise]["state"])
        assert " -> ".join(b.trail) in verdict.explain()


# ----------------------------------------------------------------------------------- verdicts


def test_allowed_then_denied_with_trail_then_allowed_again(incident: Rippl) -> None:
    verdict = incident.check("ACT-001")
    assert verdict.allowed and verdict.status == "Pending" and verdict.blockers == []
    incident.retract("CLM-001", reason="disk errors on shard 09", by="telemetry")
    verdict = incident.check("ACT-001")
    assert not verdict.allowed and verdict.status == "Premise Retracted"
    assert [(b.premise, b.trail, b.reason, b.status) for b in verdict.blockers] == [
        ("CLM-001", ["CLM-001", "DEC-001", "ACT-001"], "disk errors on shard 09", "Retracted")]
    assert "CLM-001 -> DEC-001 -> ACT-001" in verdict.explain()
    assert "disk errors on shard 09" in verdict.explain()
    check_verdict(snapshot(incident), "ACT-001", verdict)
    deep = incident.check("ACT-010")  # eight levels below the claim
    check_verdict(snapshot(incident), "ACT-010", deep)
    assert deep.blockers[0].premise == "CLM-001" and len(deep.blockers[0].trail) >= 5
    assert incident.check("ACT-002").allowed  # the fallback does not rest on CLM-001
    assert not incident.check("DEC-001").allowed  # decisions can be checked too
    assert not incident.check("CLM-001").allowed
    assert incident.check("CLM-001").blockers[0].trail == ["CLM-001"]
    incident.reinstate("CLM-001", reason="false alarm", by="oncall")
    assert incident.check("ACT-001").allowed


def test_every_blocker_is_named_with_its_trail(rippl: Rippl) -> None:
    for c in ("C1", "C2", "C3", "C4"):
        rippl.add_claim(c, f"claim {c}")
    rippl.add_decision("D1", "d1", premises=["C1"])
    rippl.add_decision("D2", "d2", premises=["C2"])
    rippl.add_decision("D3", "d3", premises=["C3"])
    rippl.add_decision("D4", "d4", premises=["C4"])
    rippl.justify("D4", ["C1"])  # D4 holds on C4 even without C1
    rippl.add_action("A", "act", decisions=["D1", "D2", "D3", "D4"])
    rippl.retract("C1", reason="first is wrong", by="x")
    rippl.retract("C2", reason="second is wrong", by="x")
    rippl.propose_retraction("C3", reason="third is doubtful", by="x")
    verdict = rippl.check("A")
    assert not verdict.allowed and verdict.state is State.OUT
    assert sorted((b.premise, tuple(b.trail), b.state.value) for b in verdict.blockers) == [
        ("C1", ("C1", "D1", "A"), "OUT"), ("C2", ("C2", "D2", "A"), "OUT"),
        ("C3", ("C3", "D3", "A"), "AT_RISK")]
    check_verdict(snapshot(rippl), "A", verdict)
    text = verdict.explain()
    assert all(t in text for t in ("C1 -> D1 -> A", "C2 -> D2 -> A", "C3 -> D3 -> A"))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=graph_plans(cycles=True), data=st.data())
def test_verdicts_of_random_graphs(backend: dict[str, object], plan: GraphPlan, data: st.DataObject) -> None:
    with fresh(backend) as handle:
        plan.build(handle, one_by_one=False)
        retractable = plan.ids("Source") + plan.ids("Claim")
        for node in data.draw(st.lists(st.sampled_from(retractable), max_size=3, unique=True)):
            handle.retract(node, reason=f"{node} was wrong", by="prop")
        for node in data.draw(st.lists(st.sampled_from(retractable), max_size=2, unique=True)):
            if not handle.get(node).retracted:
                handle.propose_retraction(node, reason="doubt", by="prop")
        snap = snapshot(handle)
        for target in plan.ids("Decision") + plan.ids("Action"):
            check_verdict(snap, target, handle.check(target))


# ------------------------------------------------------------------------------------ policies


def test_at_risk_blocks_by_default_and_can_be_allowed(incident: Rippl,
                                                      open_rippl: object) -> None:
    item = incident.propose_retraction("CLM-001", reason="disk errors?", by="monitor")
    denied = incident.check("ACT-001")
    assert not denied.allowed and denied.status == "Blocked"
    assert [b.premise for b in denied.blockers] == ["CLM-001"]
    assert "review" in denied.reason
    for allowed in (incident.check("ACT-001", at_risk="allow"),
                    incident.check("ACT-001", policy=Policy(at_risk="allow"))):
        assert allowed.allowed and allowed.state is State.AT_RISK
        assert [b.premise for b in allowed.blockers] == ["CLM-001"]
    relaxed = open_rippl(graph=incident.graph, policy=Policy(at_risk="allow"))  # type: ignore[operator]
    assert relaxed.check("ACT-001").allowed
    assert not relaxed.check("ACT-001", at_risk="block").allowed
    with pytest.raises(PremiseRetractedError) as raised:
        incident.guard("ACT-001")
    assert raised.value.verdict == denied
    assert incident.guard("ACT-001", at_risk="allow").allowed
    incident.approve(item.id, by="human")
    assert not incident.check("ACT-001", at_risk="allow").allowed  # OUT is never allowed


def test_unknown_targets_are_denied_unless_allowed(incident: Rippl) -> None:
    verdict = incident.check("ACT-999")
    assert not verdict.allowed and verdict.target == "ACT-999" and "not in the graph" in verdict.reason
    assert incident.check("ACT-999", unknown="allow").allowed
    with pytest.raises(PremiseRetractedError) as raised:
        incident.guard("ACT-999")
    assert raised.value.verdict.target == "ACT-999"


def test_guard_returns_the_verdict_or_raises_it(incident: Rippl) -> None:
    assert incident.guard("ACT-001") == incident.check("ACT-001")
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    with pytest.raises(PremiseRetractedError) as raised:
        incident.guard("ACT-001")
    assert raised.value.verdict == incident.check("ACT-001")
    assert "CLM-001 -> DEC-001 -> ACT-001" in str(raised.value)


# --------------------------------------------------------------------------------- tool calls


def test_tool_calls_resolve_by_tool_and_canonical_args(incident: Rippl) -> None:
    call = ToolCall(name="migrate_tables", args={"shard": "09", "table": "billing"})
    verdict = incident.check(call)
    assert verdict.allowed and verdict.target == "ACT-001" and verdict.tool_call == call
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    denied = incident.check(call)
    assert not denied.allowed and denied.target == "ACT-001" and denied.blockers[0].premise == "CLM-001"
    fallback = incident.check(ToolCall(name="migrate_tables", args=MIGRATE_07))
    assert fallback.allowed and fallback.target == "ACT-002"
    explicit = incident.check(ToolCall(name="anything", args={}, action_id="ACT-002"))
    assert explicit.allowed and explicit.target == "ACT-002"
    with pytest.raises(PremiseRetractedError):
        incident.guard(ToolCall(name="migrate_tables", args=MIGRATE_09))


@pytest.mark.parametrize("args", [{"table": "billing", "shard": 9}, {"table": "billing"},
                                  {"table": "billing", "shard": "09", "dry_run": True}, {}])
def test_unmapped_tool_calls_are_denied_unless_allowed(incident: Rippl, args: dict[str, object]) -> None:
    call = ToolCall(name="migrate_tables", args=args)
    verdict = incident.check(call)
    assert not verdict.allowed and verdict.target is None and "migrate_tables" in verdict.reason
    assert incident.check(call, unknown="allow").allowed
    assert not incident.check(ToolCall(name="no_such_tool", args=MIGRATE_09)).allowed
    assert not incident.check(ToolCall(name="x", action_id="ACT-999")).allowed
    with pytest.raises(PremiseRetractedError):
        incident.guard(call)


def test_a_call_matching_several_actions_needs_every_one_to_allow_it(rippl: Rippl) -> None:
    rippl.add_claim("EU", "the eu region is healthy")
    rippl.add_decision("D-EU", "restart in eu", premises=["EU"])
    rippl.add_action("A1", "restart api in eu", decisions=["D-EU"], tool="restart",
                     args={"svc": "api"})
    rippl.add_action("A2", "restart api in us", tool="restart", args={"svc": "api"})
    call = ToolCall(name="restart", args={"svc": "api"})
    verdict = rippl.check(call)
    assert verdict.allowed and "A1" in verdict.reason and "A2" in verdict.reason
    rippl.retract("EU", reason="eu is down", by="monitor")
    denied = rippl.check(call)
    assert not denied.allowed and denied.target == "A1"
    assert [b.premise for b in denied.blockers] == ["EU"]
    assert rippl.check(ToolCall(name="restart", args={"svc": "api"}, action_id="A2")).allowed


def test_an_any_args_action_vetoes_every_call_of_its_tool(rippl: Rippl) -> None:
    rippl.add_claim("C", "pager works")
    rippl.add_decision("D", "page people", premises=["C"])
    rippl.add_action("ANY", "page anyone", decisions=["D"], tool="page")
    rippl.add_action("EXACT", "page the DBA", tool="page",
                     args={"who": "dba", "how": {"sms": True, "call": [1, 2]}})
    nested = ToolCall(name="page", args={"how": {"call": [1, 2], "sms": True}, "who": "dba"})
    assert rippl.check(nested).target == "EXACT"
    assert rippl.check(ToolCall(name="page", args={"who": "cto"})).target == "ANY"
    assert rippl.check(ToolCall(name="page")).target == "ANY"
    rippl.retract("C", reason="pager down", by="x")
    assert not rippl.check(ToolCall(name="page", args={"who": "cto"})).allowed
    vetoed = rippl.check(nested)  # the any-args action matches every call of the tool: its veto holds
    assert not vetoed.allowed and vetoed.target == "ANY" and [b.premise for b in vetoed.blockers] == ["C"]


def test_check_reads_and_never_writes(incident: Rippl) -> None:
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    before, stamp = snapshot(incident), version(incident)
    for target in ("ACT-001", "ACT-002", "ACT-999", ToolCall(name="migrate_tables", args=MIGRATE_09)):
        incident.check(target)
    assert snapshot(incident) == before and version(incident) == stamp


def _graph_queries(handle: Rippl) -> int:
    stats = handle.redis.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k.lower().startswith("cmdstat_graph."))


@pytest.mark.parametrize("size", [10, 3000])
def test_an_allowed_check_is_one_query_whatever_the_graph_size(rippl: Rippl, size: int) -> None:
    rippl.load({"claims": [{"id": f"C{i}", "text": f"c{i}"} for i in range(size)],
                "decisions": [{"id": "D", "title": "d", "premises": [f"C{i}" for i in range(size)]}],
                "actions": [{"id": "A", "title": "a", "decisions": ["D"], "tool": "t", "args": {"k": 1}}]})
    rippl.redis.config_resetstat()
    assert rippl.check("A").allowed
    assert _graph_queries(rippl) == 1
    rippl.redis.config_resetstat()
    assert rippl.check(ToolCall(name="t", args={"k": 1})).allowed
    assert _graph_queries(rippl) == 1  # the lookup that resolves the call also reads its state


# ---------------------------------------------------------------------------- database errors


def test_a_graph_that_cannot_be_read_is_denied(rippl: Rippl) -> None:
    rippl.add_action("A", "act")
    rippl.redis.execute_command("GRAPH.DELETE", rippl.keys.graph)
    rippl.redis.set(rippl.keys.graph, "not a graph any more")  # every graph query now fails
    try:
        verdict = rippl.check("A")
        assert not verdict.allowed and "could not be checked" in verdict.reason
        assert rippl.check("A", on_error="allow").allowed
        with pytest.raises(PremiseRetractedError) as raised:
            rippl.guard(ToolCall(name="t", args={}))
        assert "could not be checked" in raised.value.verdict.reason
    finally:
        rippl.redis.delete(rippl.keys.graph)


def test_a_stopped_server_is_denied_and_says_why() -> None:
    server = start_falkordb_server()
    try:
        with Rippl.open(url=server.url, graph="stopping") as handle:
            handle.add_claim("C", "c")
            handle.add_action("A", "act", tool="t")
            assert handle.check("A").allowed
            server.stop()
            for target in ("A", ToolCall(name="t", args={})):
                verdict = handle.check(target)
                assert not verdict.allowed
                assert "could not be checked" in verdict.reason and "cannot reach" in verdict.reason
                assert handle.check(target, on_error="allow").allowed
                with pytest.raises(PremiseRetractedError) as raised:
                    handle.guard(target)
                assert "could not be checked" in raised.value.verdict.explain()
    finally:
        server.stop()


@pytest.mark.asyncio(loop_scope="session")
async def test_async_check_and_guard_fail_closed_too() -> None:
    server = start_falkordb_server()
    try:
        handle = await AsyncRippl.open(url=server.url, graph="stopping")
        await handle.add_claim("C", "c")
        await handle.add_action("A", "act", decisions=[])
        assert (await handle.check("A")).allowed
        assert not (await handle.check("ghost")).allowed
        server.stop()
        verdict = await handle.check("A")
        assert not verdict.allowed and "could not be checked" in verdict.reason
        assert (await handle.check("A", on_error="allow")).allowed
        with pytest.raises(PremiseRetractedError):
            await handle.guard("A")
        await handle.close()
    finally:
        server.stop()


@pytest.mark.asyncio(loop_scope="session")
async def test_async_verdicts_equal_sync_verdicts(incident: Rippl, arippl: AsyncRippl) -> None:
    await arippl.propose_retraction("CLM-001", reason="disk?", by="monitor")
    for target in ("ACT-001", "ACT-002", "ACT-999", ToolCall(name="migrate_tables", args=MIGRATE_09)):
        assert await arippl.check(target) == incident.check(target)
        assert await arippl.check(target, at_risk="allow") == incident.check(target, at_risk="allow")
