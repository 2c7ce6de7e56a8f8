"""Bitemporal beliefs on real FalkorDB (embedded and TCP server): the four quadrants, closed-open
boundaries, late and corrected history, validation, truth maintenance, history and as-of checks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from rippl_core import (
    AsyncRippl,
    InvalidInputError,
    NotFoundError,
    PremiseRetractedError,
    Rippl,
    State,
    ToolCall,
)
from rippl_core.beliefs import cypher as beliefs_cypher

BASE = (datetime.now(UTC) - timedelta(days=100)).replace(hour=0, minute=0, second=0, microsecond=0)
MS = timedelta(milliseconds=1)


def day(n: float) -> datetime:
    """A time n days after BASE (always in the past)."""
    return BASE + timedelta(days=n)


def believes_edges(rippl: Rippl) -> int:
    reply = rippl.redis.execute_command("GRAPH.RO_QUERY", rippl.keys.graph,
                                        "MATCH ()-[r:BELIEVES]->() RETURN count(r)")
    return int(reply[1][0][0])


def graph_dump(rippl: Rippl) -> list[str]:
    """Every node and edge with its labels or type and properties, in a canonical order."""
    nodes = rippl.redis.execute_command("GRAPH.RO_QUERY", rippl.keys.graph,
                                        "MATCH (n) RETURN id(n), labels(n), properties(n)")[1]
    edges = rippl.redis.execute_command(
        "GRAPH.RO_QUERY", rippl.keys.graph,
        "MATCH (a)-[r]->(b) RETURN id(r), id(a), type(r), properties(r), id(b)")[1]
    return sorted(repr(row) for row in nodes) + sorted(repr(row) for row in edges)


@pytest.fixture
def world(rippl: Rippl) -> Rippl:
    for i in range(1, 6):
        rippl.add_source(f"S{i}", f"source {i}")
    for i in range(1, 6):
        rippl.add_claim(f"C{i}", f"claim {i}", sources=[f"S{i}"])
    return rippl


def test_believe_closes_the_previous_interval_and_keeps_it(world: Rippl) -> None:
    first = world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1),
                          evidence=["S1"], note="first look")
    assert first.valid_to is None and first.superseded_at is None and first.text == "claim 1"
    second = world.believe("ag", "C2", topic="t", valid_from=day(3), recorded_at=day(3))
    rows = world.timeline("ag", "t")
    assert [(b.claim, b.valid_from, b.valid_to) for b in rows] == [
        ("C1", day(1), day(3)), ("C2", day(3), None)]
    assert rows[0].evidence == ["S1"] and rows[0].note == "first look"
    assert rows[0].recorded_at == day(3) and rows[0].first_recorded_at == day(1)
    assert second.claim == "C2" and world.ask("ag", "t").claim == "C2"
    # nothing deleted: the open version of C1 is superseded and still readable as known then
    assert believes_edges(world) == 3
    before = world.timeline("ag", "t", known_at=day(2))
    assert [(b.claim, b.valid_to, b.superseded_at) for b in before] == [("C1", None, day(3))]


def test_the_four_bitemporal_quadrants(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1))
    world.believe("ag", "C2", topic="t", valid_from=day(5), recorded_at=day(5))
    # late knowledge, learnt on day 10: the agent had switched to C3 on day 3 already
    world.believe("ag", "C3", topic="t", valid_from=day(3), recorded_at=day(10))
    world.believe("ag", "C4", topic="t", valid_from=day(20), recorded_at=day(20))

    def claim(as_of: datetime | None, known_at: datetime | None) -> str | None:
        belief = world.ask("ag", "t", as_of=as_of, known_at=known_at)
        return belief.claim if belief else None

    assert claim(day(4), day(6)) == "C1"     # valid past, known past
    assert claim(day(4), None) == "C3"       # valid past, known now: the late knowledge
    assert claim(None, day(6)) == "C2"       # valid now, known past
    assert claim(None, None) == "C4"         # valid now, known now
    assert claim(day(0.5), None) is None     # before anything was believed
    assert claim(day(4), day(0.5)) is None   # before anything was recorded
    late = world.ask("ag", "t", as_of=day(4))
    assert late is not None and late.valid_from == day(3) and late.valid_to == day(5)
    assert late.recorded_at == day(10)


def test_closed_open_boundaries_in_both_times(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1))
    world.believe("ag", "C2", topic="t", valid_from=day(2), recorded_at=day(4))
    assert world.ask("ag", "t", as_of=day(2)).claim == "C2"            # valid_from included
    assert world.ask("ag", "t", as_of=day(2) - MS).claim == "C1"       # valid_to excluded
    assert world.ask("ag", "t", as_of=day(1) - MS) is None
    assert world.ask("ag", "t", as_of=day(1), known_at=day(1)).claim == "C1"  # recorded_at included
    assert world.ask("ag", "t", as_of=day(1), known_at=day(1) - MS) is None
    # at the supersession instant the new versions are visible and the old one is not
    at_switch = world.timeline("ag", "t", known_at=day(4))
    assert [(b.claim, b.valid_to) for b in at_switch] == [("C1", day(2)), ("C2", None)]
    just_before = world.timeline("ag", "t", known_at=day(4) - MS)
    assert [(b.claim, b.valid_to) for b in just_before] == [("C1", None)]
    assert world.ask("ag", "t", as_of=day(3), known_at=day(4) - MS).claim == "C1"


def test_late_adoption_lasts_until_the_next_recorded_adoption(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1))
    world.believe("ag", "C2", topic="t", valid_from=day(6), recorded_at=day(6))
    late = world.believe("ag", "C3", topic="t", valid_from=day(3), recorded_at=day(8))
    assert late.valid_from == day(3) and late.valid_to == day(6)
    assert [(b.claim, b.valid_from, b.valid_to) for b in world.timeline("ag", "t")] == [
        ("C1", day(1), day(3)), ("C3", day(3), day(6)), ("C2", day(6), None)]


def test_a_timeline_reads_in_pages_newest_first(world: Rippl) -> None:
    for n, claim in enumerate(["C1", "C2", "C3", "C1", "C2"], start=1):
        world.believe("ag", claim, topic="t", valid_from=day(n), recorded_at=day(n))
    whole = [(b.claim, b.valid_from) for b in world.timeline("ag", "t")]
    latest = world.timeline("ag", "t", limit=2)
    assert [(b.claim, b.valid_from) for b in latest] == whole[-2:]  # oldest first within a page
    back = world.timeline("ag", "t", limit=2, before=latest[0].valid_from)
    assert [(b.claim, b.valid_from) for b in back] == whole[1:3]
    assert [b.claim for b in world.timeline("ag", "t", limit=9, before=day(1))] == []
    # as known then: the page holds what was recorded by then
    assert [b.claim for b in world.timeline("ag", "t", known_at=day(3), limit=1)] == ["C3"]
    for bad, why in (({"limit": 0}, "positive integer"), ({"limit": True}, "positive integer"),
                     ({"before": day(3)}, "give limit too"),
                     ({"limit": 2, "before": "yesterday"}, "ISO-8601")):
        with pytest.raises(InvalidInputError, match=why):
            world.timeline("ag", "t", **bad)


def test_revise_corrects_history_by_superseding_rows(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1))
    world.believe("ag", "C2", topic="t", valid_from=day(5), recorded_at=day(5))
    edges = believes_edges(world)
    fixed = world.revise("ag", "t", "C3", valid_from=day(3), valid_to=day(7), evidence=["S3"],
                         note="the log says so", recorded_at=day(9))
    assert (fixed.claim, fixed.valid_from, fixed.valid_to, fixed.cause) == ("C3", day(3), day(7),
                                                                           "revise")
    assert [(b.claim, b.valid_from, b.valid_to) for b in world.timeline("ag", "t")] == [
        ("C1", day(1), day(3)), ("C3", day(3), day(7)), ("C2", day(7), None)]
    # the rows it replaced are superseded, not rewritten: history as known before is intact
    assert [(b.claim, b.valid_from, b.valid_to) for b in world.timeline("ag", "t", known_at=day(8))] \
        == [("C1", day(1), day(5)), ("C2", day(5), None)]
    assert believes_edges(world) == edges + 3  # C1 left part, C3, C2 right part
    again = world.revise("ag", "t", "C3", valid_from=day(3), valid_to=day(7), evidence=["S3"],
                         note="the log says so")
    assert again.recorded_at == day(9) and believes_edges(world) == edges + 3  # no-op
    open_ended = world.revise("ag", "t", "C4", valid_from=day(6))
    assert open_ended.valid_to is None
    assert [b.claim for b in world.timeline("ag", "t")] == ["C1", "C3", "C4"]
    with pytest.raises(InvalidInputError, match="after valid_from"):
        world.revise("ag", "t", "C1", valid_from=day(5), valid_to=day(5))


def test_retract_belief_closes_the_interval_with_its_reason(world: Rippl) -> None:
    assert world.retract_belief("ag", "t", at=day(1)) is None  # nothing believed: no write
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1))
    closed = world.retract_belief("ag", "t", at=day(4), reason="disproved", recorded_at=day(4))
    assert closed is not None and closed.valid_to == day(4) and closed.reason == "disproved"
    assert world.ask("ag", "t") is None
    assert world.ask("ag", "t", as_of=day(3)).claim == "C1"
    assert world.ask("ag", "t", as_of=day(5), known_at=day(4) - MS).claim == "C1"
    assert world.retract_belief("ag", "t", at=day(5)) is None
    # a new adoption after the gap; why_changed sees the gap as a change to "nothing"
    world.believe("ag", "C2", topic="t", valid_from=day(8), recorded_at=day(8))
    change = world.why_changed("ag", "t", day(4.2))
    assert change.changed_at == day(4) and change.before.claim == "C1" and change.after is None
    # withdrawing a belief at its very start supersedes it whole
    withdrawn = world.retract_belief("ag", "t", at=day(8))
    assert withdrawn is not None and withdrawn.superseded_at is not None
    assert world.ask("ag", "t", as_of=day(9)) is None


def test_believing_again_is_a_no_op_and_new_evidence_splits(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1), evidence=["S1"])
    edges = believes_edges(world)
    same = world.believe("ag", "C1", topic="t", valid_from=day(2), evidence=["S1"])
    assert same.valid_from == day(1) and believes_edges(world) == edges
    more = world.believe("ag", "C1", topic="t", valid_from=day(3), recorded_at=day(3),
                         evidence=["S2"])
    assert more.evidence == ["S1", "S2"] and more.valid_from == day(3)
    change = world.why_changed("ag", "t", day(3))
    assert change.before.claim == change.after.claim == "C1"
    assert change.new_evidence == ["S2"] and change.dropped_evidence == []


def test_new_evidence_keeps_the_state_of_the_evidence_it_joins(world: Rippl) -> None:
    """Believing a claim again with more evidence returns the whole evidence with each state:
    a retracted source already held is reported retracted in the answer itself."""
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1), evidence=["S1"])
    world.retract("S1", reason="wrong cluster", by="postmortem", at=day(1))
    more = world.believe("ag", "C1", topic="t", valid_from=day(3), recorded_at=day(3),
                         evidence=["S2"])
    assert more.evidence == ["S1", "S2"] and more.retracted_evidence == ["S1"]


def test_transaction_time_only_moves_forward(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(5))
    with pytest.raises(InvalidInputError, match="only moves forward"):
        world.believe("ag", "C2", topic="t", valid_from=day(2), recorded_at=day(4))
    with pytest.raises(InvalidInputError, match="future"):
        world.believe("ag", "C2", topic="t", recorded_at=datetime.now(UTC) + timedelta(hours=1))
    # another agent or topic has its own transaction clock
    world.believe("ag", "C2", topic="other", valid_from=day(2), recorded_at=day(4))
    world.believe("ag2", "C2", topic="t", valid_from=day(2), recorded_at=day(4))
    assert [b.claim for b in world.timeline("ag", "t")] == ["C1"]


@pytest.mark.parametrize("bad", [datetime(2026, 10, 9, 14, 0), "2026-10-09T14:00:00",
                                 "yesterday", "2026-13-40T00:00:00Z", True, 10**20])
def test_naive_and_malformed_times_are_refused_and_change_nothing(world: Rippl, bad: Any) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1))
    before = graph_dump(world)
    calls = [
        lambda: world.believe("ag", "C2", topic="t", valid_from=bad),
        lambda: world.believe("ag", "C2", topic="t", recorded_at=bad),
        lambda: world.retract_belief("ag", "t", at=bad),
        lambda: world.revise("ag", "t", "C2", valid_from=bad),
        lambda: world.ask("ag", "t", as_of=bad),
        lambda: world.ask("ag", "t", known_at=bad),
        lambda: world.beliefs("ag", as_of=bad),
        lambda: world.timeline("ag", "t", known_at=bad),
        lambda: world.why_changed("ag", "t", bad),
        lambda: world.history("C1", known_at=bad),
        lambda: world.what_if("ag", "t", without=["S1"], as_of=bad),
        lambda: world.check("C1", as_of=bad),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError) as info:
            call()
        assert "time zone" in str(info.value) or "ISO-8601" in str(info.value) \
            or "out of range" in str(info.value) or "bool" in str(info.value)
    assert graph_dump(world) == before


def test_bad_ids_and_references_change_nothing(world: Rippl) -> None:
    world.add_decision("D1", "a decision", premises=["C1"])
    before = graph_dump(world)
    with pytest.raises(NotFoundError, match="C9"):
        world.believe("ag", "C9", topic="t")
    with pytest.raises(NotFoundError, match="S9"):
        world.believe("ag", "C1", topic="t", evidence=["S9"])
    with pytest.raises(InvalidInputError, match="believes claims"):
        world.believe("ag", "D1", topic="t")
    with pytest.raises(InvalidInputError, match="evidence must be sources"):
        world.believe("ag", "C1", topic="t", evidence=["C2"])
    with pytest.raises(InvalidInputError, match="agent"):
        world.believe(" ag", "C1", topic="t")
    with pytest.raises(InvalidInputError, match="topic"):
        world.believe("ag", "C1", topic="")
    with pytest.raises(InvalidInputError, match="single string"):
        world.believe("ag", "C1", topic="t", evidence="S1")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="required"):
        world.revise("ag", "t", "C1", valid_from=None)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match="no recorded belief"):
        world.why_changed("ag", "t", day(1))
    with pytest.raises(NotFoundError):
        world.history("nope")
    assert graph_dump(world) == before


def test_beliefs_lists_one_belief_per_topic(world: Rippl) -> None:
    world.believe("ag", "C1", topic="b-topic", valid_from=day(1), recorded_at=day(1))
    world.believe("ag", "C2", topic="a-topic", valid_from=day(2), recorded_at=day(2))
    world.believe("ag", "C3", topic="a-topic", valid_from=day(4), recorded_at=day(4))
    world.believe("other", "C4", topic="a-topic", valid_from=day(1), recorded_at=day(1))
    assert [(b.topic, b.claim) for b in world.beliefs("ag")] == [("a-topic", "C3"),
                                                                 ("b-topic", "C1")]
    assert [(b.topic, b.claim) for b in world.beliefs("ag", as_of=day(3))] == [
        ("a-topic", "C2"), ("b-topic", "C1")]
    assert [b.claim for b in world.beliefs("ag", as_of=day(3), known_at=day(1))] == ["C1"]
    assert world.beliefs("nobody") == []


def test_a_belief_in_a_retracted_claim_is_flagged_and_why_changed_names_the_source(
        world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1), evidence=["S1"])
    world.believe("ag", "C2", topic="t", valid_from=day(3), recorded_at=day(3), evidence=["S2"])
    assert not world.ask("ag", "t", as_of=day(2)).rests_on_retracted
    world.retract("S1", reason="wrong cluster", by="postmortem", at=day(1))
    old = world.ask("ag", "t", as_of=day(2))
    assert old.rests_on_retracted and old.claim_state is State.OUT
    assert old.claim_status == "Retracted" and old.retracted_evidence == ["S1"]
    assert "Retracted" in old.describe()
    change = world.why_changed("ag", "t", day(3))
    assert change.before.claim == "C1" and change.after.claim == "C2"
    assert change.new_evidence == ["S2"] and change.dropped_evidence == ["S1"]
    assert change.retracted_evidence == ["S1"]
    assert "S1" in change.explain() and "Retracted" in change.explain()
    world.reinstate("S1", reason="it was production after all", by="postmortem")
    # S1 was retracted from day 1 until now: as of day 2 the claim was out; it is in now
    reinstated = world.ask("ag", "t", as_of=day(2))
    assert reinstated.rests_on_retracted and reinstated.claim_state_now is State.IN
    assert reinstated.claim_status_now == "Verified" and "Verified now" in reinstated.describe()
    assert not world.ask("ag", "t", as_of=day(2), known_at=day(2)).rests_on_retracted


def test_why_changed_picks_the_nearest_change(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1))
    world.believe("ag", "C2", topic="t", valid_from=day(4), recorded_at=day(4))
    world.believe("ag", "C3", topic="t", valid_from=day(10), recorded_at=day(10))
    assert world.why_changed("ag", "t", day(6)).changed_at == day(4)
    assert world.why_changed("ag", "t", day(8)).changed_at == day(10)
    assert world.why_changed("ag", "t", day(7)).changed_at == day(4)  # a tie: the earlier
    first = world.why_changed("ag", "t", day(0))
    assert first.changed_at == day(1) and first.before is None and first.after.claim == "C1"
    # as known at day 5, the day-10 change had not happened
    assert world.why_changed("ag", "t", day(9), known_at=day(5)).changed_at == day(4)


def test_history_records_creation_and_every_change(world: Rippl) -> None:
    world.add_decision("D1", "decide", premises=["C1"])
    created = world.history("D1")
    assert len(created) == 1 and created[0].before is None and created[0].after is State.IN
    assert created[0].after_status == "Holding" and created[0].cause == "add"
    world.retract("C1", reason="false", by="me", at=day(2))
    history = world.history("D1")
    assert [(h.before, h.after) for h in history] == [(State.IN, State.OUT), (None, State.IN)]
    retraction = history[0]
    assert retraction.valid_from == day(2) and retraction.recorded_at > retraction.valid_from
    assert retraction.before_status == "Holding" and retraction.after_status == "Premise Retracted"
    assert world.history("D1", known_at=retraction.recorded_at - MS) == created
    # a node created already OUT has its first state too
    world.add_decision("D2", "decide later", premises=["C1"])
    assert [(h.before, h.after) for h in world.history("D2")] == [(None, State.OUT)]


def test_check_as_of_and_known_at(incident: Rippl) -> None:
    created = incident.history("ACT-001")[0].recorded_at
    incident.retract("CLM-001", reason="disk errors", by="telemetry", at=day(10))
    recorded = incident.history("CLM-001")[0].recorded_at  # the retraction, valid day 10
    before = incident.check("ACT-001", as_of=day(9))
    assert before.allowed and before.state is State.IN
    after = incident.check("ACT-001", as_of=day(11))
    assert not after.allowed and after.state is State.OUT
    assert [b.premise for b in after.blockers] == ["CLM-001"]
    assert after.blockers[0].trail[0] == "CLM-001" and after.blockers[0].trail[-1] == "ACT-001"
    assert after.blockers[0].reason == "disk errors"
    assert "CLM-001" in after.explain()
    # as Rippl knew things before the retraction was recorded, it was allowed
    assert incident.check("ACT-001", as_of=day(11), known_at=recorded - MS).allowed
    # before the action was recorded at all, Rippl cannot say: fail closed (or allow by policy)
    unknown = incident.check("ACT-001", as_of=day(11), known_at=created - MS)
    assert not unknown.allowed and "no record" in unknown.reason
    assert incident.check("ACT-001", as_of=day(11), known_at=created - MS, unknown="allow").allowed
    # tool calls resolve as in the live check; the safe fallback was never blocked
    call = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "09"})
    assert not incident.check(call, as_of=day(11)).allowed
    fallback = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "07"})
    assert incident.check(fallback, as_of=day(11)).allowed
    assert not incident.check(ToolCall(name="no_such_tool"), as_of=day(11)).allowed
    with pytest.raises(PremiseRetractedError) as veto:
        incident.guard("ACT-001", as_of=day(11))
    assert veto.value.verdict.blockers[0].premise == "CLM-001"
    # the live check agrees with the time-aware one at now
    assert incident.check("ACT-001").allowed is incident.check("ACT-001", as_of=None,
                                                               known_at=datetime.now(UTC)).allowed


def test_check_as_of_sees_a_pending_review(incident: Rippl) -> None:
    incident.propose_retraction("CLM-001", reason="suspicious", by="monitor")
    verdict = incident.check("ACT-001", as_of=datetime.now(UTC))
    assert not verdict.allowed and verdict.state is State.AT_RISK
    assert verdict.blockers[0].premise == "CLM-001"
    assert incident.check("ACT-001", as_of=datetime.now(UTC), at_risk="allow").allowed
    assert incident.check("ACT-001", as_of=day(1)).allowed  # long before the proposal


def test_reads_use_the_edge_range_index(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1))
    key = beliefs_cypher.belief_key("ag", "t")
    for query in (beliefs_cypher.latest_start(key, 1, 2, beliefs_cypher.DAY_MS),
                  beliefs_cypher.latest_start(key, 1, None, None),
                  beliefs_cypher.open_interval(key, 1, 2), beliefs_cypher.open_interval(key, 1, None),
                  beliefs_cypher.agent_covering("ag", 1, 2), beliefs_cypher.visible(key, 2),
                  beliefs_cypher.current_overlapping(key, 1, 2), beliefs_cypher.first_start_after(key, 1, 2)):
        plan = world.redis.execute_command("GRAPH.EXPLAIN", world.keys.graph, query.command())
        assert any("Edge By Index Scan" in line for line in plan), plan
        assert not any("Label Scan" in line or "All Node Scan" in line for line in plan), plan


@pytest.mark.asyncio(loop_scope="session")
async def test_async_twin(world: Rippl, arippl: AsyncRippl) -> None:
    first = await arippl.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1),
                                 evidence=["S1"])
    await arippl.believe("ag", "C2", topic="t", valid_from=day(3), recorded_at=day(3))
    assert first.claim == "C1"
    assert (await arippl.ask("ag", "t", as_of=day(2))).claim == "C1"
    assert [b.claim for b in await arippl.timeline("ag", "t")] == ["C1", "C2"]
    assert [b.claim for b in await arippl.beliefs("ag")] == ["C2"]
    assert (await arippl.why_changed("ag", "t", day(3))).after.claim == "C2"
    await arippl.revise("ag", "t", "C3", valid_from=day(2), valid_to=day(3))
    assert (await arippl.retract_belief("ag", "t", at=day(5))).claim == "C2"
    assert (await arippl.history("C1"))[0].before is None
    result = await arippl.what_if("ag", "t", without=["S1"], as_of=day(1.5))
    assert result.actual.claim == "C1" and result.counterfactual is None
    assert (await arippl.what_if_retracted(["C1"])).changed(State.OUT) == ["C1"]
    assert (await arippl.check("C1", as_of=day(2))).allowed
    # the sync handle sees what the async one wrote
    assert world.ask("ag", "t", as_of=day(2.5)).claim == "C3"
