"""Provenance capture in the core: a run's observations, turns, calls and executions, on both
backends, through the sync and the async handle."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from rippl_core import AsyncRippl, InvalidInputError, NotFoundError, Policy, Rippl, State, ToolCall
from rippl_core._runtime.wire import Query
from rippl_core.adapters import output_digest
from rippl_core.capture import ids

HEALTH = ToolCall(name="get_shard_health", args={"shard": "09"}, id="c1")
ANNOUNCE = ToolCall(name="announce_window", args={"shard": "09"}, id="c2")
MIGRATE = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "09"}, id="c3")


def premises_of(rippl: Rippl, action: str) -> set[str]:
    """The claims the decision driving `action` rests on (its one justification)."""
    decision = rippl.get(action).justifications[0][0]
    return set(rippl.get(decision).justifications[0])


def story(rippl: Rippl, run_id: str = "thread-1") -> tuple[str, list[str]]:
    """The agent reads shard health, then announces and migrates on it: (health claim, actions)."""
    run = rippl.run(run_id, agent="ops", framework="test")
    [checked] = run.decide("t1", [HEALTH])
    assert checked.allowed
    claim = run.executed(HEALTH, "healthy (served from replica r3)")
    verdicts = run.decide("t2", [ANNOUNCE, MIGRATE], context=["c1"])
    assert [v.allowed for v in verdicts] == [True, True]
    return claim, [v.target for v in verdicts]  # type: ignore[misc]


def test_a_turn_rests_on_what_the_run_observed(rippl: Rippl) -> None:
    claim, (_, migrate) = story(rippl)
    assert rippl.get(claim).text == ('get_shard_health({"shard":"09"}) returned: healthy (served '
                                     "from replica r3)")
    assert premises_of(rippl, migrate) == {claim, ids.run_claim("thread-1")}
    assert rippl.get(migrate).tool == "migrate_tables"
    assert rippl.get(migrate).args == {"shard": "09", "table": "billing"}


def test_a_retraction_vetoes_later_calls_and_lists_executed_ones(rippl: Rippl) -> None:
    claim, (announce, migrate) = story(rippl)
    run = rippl.run("thread-1")
    run.executed(ANNOUNCE, "maintenance window announced")
    review = rippl.propose_retraction(claim, reason="served from a stale cache", by="monitor")
    paused = run.judge(MIGRATE)
    assert not paused.allowed and paused.state is State.AT_RISK
    rippl.approve(review.id, by="alice")
    vetoed = run.judge(MIGRATE)
    assert not vetoed.allowed and vetoed.target == migrate
    [blocker] = vetoed.blockers
    assert blocker.premise == claim and blocker.trail[0] == claim and blocker.trail[-1] == migrate
    [owed] = rippl.compensations()
    assert owed.action == announce and owed.tool == "announce_window" and owed.run == "thread-1"
    assert owed.blockers[0].premise == claim
    assert "served from a stale cache" in owed.explain()


def test_a_replayed_turn_records_nothing_new(rippl: Rippl) -> None:
    story(rippl)
    before = rippl.stats()
    again = rippl.run("thread-1").decide("t2", [ANNOUNCE, MIGRATE], context=["c1"])
    assert [v.allowed for v in again] == [True, True]
    assert rippl.stats() == before


def test_a_new_run_on_fresh_observations_is_not_blocked_by_an_old_veto(rippl: Rippl) -> None:
    claim, (_, migrate) = story(rippl, "yesterday")
    rippl.retract(claim, reason="stale cache", by="monitor")
    assert not rippl.run("yesterday").judge(MIGRATE).allowed
    today = rippl.run("today")
    today.decide("t1", [HEALTH])
    fresh = today.executed(HEALTH, "healthy (read from the primary)")
    assert fresh != claim
    [verdict] = today.decide("t2", [MIGRATE], context=["c1"])
    assert verdict.allowed and verdict.target != migrate


def test_the_same_output_read_again_is_the_same_claim(rippl: Rippl) -> None:
    claim, _ = story(rippl, "a")
    other = rippl.run("b")
    other.decide("t1", [HEALTH])
    assert other.executed(HEALTH, "healthy (served from replica r3)") == claim
    rippl.retract(claim, reason="the replica was stale", by="monitor")
    [verdict] = other.decide("t2", [MIGRATE], context=["c1"])
    assert not verdict.allowed and verdict.blockers[0].premise == claim


def test_a_declared_veto_still_applies_to_a_captured_call(rippl: Rippl) -> None:
    rippl.add_claim("CLM-FREEZE", "no change freeze is on")
    rippl.add_decision("DEC-ANY", "migrations are allowed", premises=["CLM-FREEZE"])
    rippl.add_action("ACT-ANY", "any migration", decisions=["DEC-ANY"], tool="migrate_tables")
    rippl.retract("CLM-FREEZE", reason="a freeze started", by="release-manager")
    [verdict] = rippl.run("r").decide("t1", [MIGRATE])
    assert not verdict.allowed and verdict.target == "ACT-ANY"
    assert verdict.blockers[0].premise == "CLM-FREEZE"
    assert "repeats" not in verdict.reason and "CLM-FREEZE" in verdict.reason  # a first veto


def test_a_call_mapped_to_an_action_is_judged_by_it_too(rippl: Rippl) -> None:
    rippl.add_claim("CLM-WINDOW", "the change window is open")
    rippl.add_decision("DEC-CHANGE", "changes go ahead", premises=["CLM-WINDOW"])
    rippl.add_action("ACT-CHANGE", "a change", decisions=["DEC-CHANGE"])  # no tool: only by id
    run = rippl.run("r")
    pinned = MIGRATE.model_copy(update={"action_id": "ACT-CHANGE"})
    [allowed] = run.decide("t1", [pinned])
    assert allowed.allowed
    rippl.retract("CLM-WINDOW", reason="the window closed", by="release-manager")
    vetoed = run.judge(pinned)
    assert not vetoed.allowed and vetoed.target == "ACT-CHANGE"
    assert vetoed.blockers[0].premise == "CLM-WINDOW"
    [again] = run.decide("t2", [pinned.model_copy(update={"id": "c30"})])
    assert not again.allowed and again.target == "ACT-CHANGE"
    # the same call unmapped repeats the vetoed one: it rests on what vetoed it
    [repeat] = run.decide("t2", [MIGRATE.model_copy(update={"id": "c31"})])
    assert not repeat.allowed and "repeats the call vetoed" in repeat.reason
    assert repeat.blockers[0].premise == "CLM-WINDOW"
    other = MIGRATE.model_copy(update={"id": "c33", "args": {"table": "billing", "shard": "07"}})
    assert run.decide("t2", [other])[0].allowed  # another call, unmapped: its own premises
    [missing] = run.decide("t3", [MIGRATE.model_copy(update={"id": "c32", "action_id": "ACT-NOPE"})])
    assert not missing.allowed and "ACT-NOPE" in missing.reason and "not in the graph" in missing.reason


def test_a_captured_action_never_matches_another_runs_call(rippl: Rippl) -> None:
    claim, _ = story(rippl, "a")
    rippl.retract(claim, reason="stale", by="monitor")
    assert rippl.check(MIGRATE, unknown="allow").allowed  # a plain check sees no declared action
    assert not rippl.check(MIGRATE).allowed  # and the default still fails closed
    [verdict] = rippl.run("b").decide("t1", [MIGRATE])
    assert verdict.allowed


def test_told_vetoes_leave_the_context_set(rippl: Rippl) -> None:
    claim, _ = story(rippl)
    run = rippl.run("thread-1")
    rippl.retract(claim, reason="stale", by="monitor")
    assert not run.judge(MIGRATE).allowed  # the veto names the claim; the model reads it
    moved = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "07"}, id="c4")
    [replanned] = run.decide("t3", [moved], context=["c1", "c3"], told=["c3"])
    assert replanned.allowed
    assert claim not in premises_of(rippl, replanned.target)  # type: ignore[arg-type]
    [unaware] = run.decide("t4", [moved.model_copy(update={"id": "c5"})], context=["c1"])
    assert not unaware.allowed  # without the veto in its context, the model still rests on it


def test_trimmed_observations_leave_the_context_set(rippl: Rippl) -> None:
    claim, _ = story(rippl)
    run = rippl.run("thread-1")
    [verdict] = run.decide("t3", [MIGRATE.model_copy(update={"id": "c9"})], context=[])
    assert premises_of(rippl, verdict.target) == {ids.run_claim("thread-1")}  # type: ignore[arg-type]
    [everything] = run.decide("t4", [MIGRATE.model_copy(update={"id": "c10"})], context=None)
    assert claim in premises_of(rippl, everything.target)  # type: ignore[arg-type]


def test_memory_reads_are_observations_of_the_run(rippl: Rippl) -> None:
    rippl.add_source("SRC-DASH", "shard dashboard")
    rippl.add_claim("CLM-IOPS", "billing fits in 16k IOPS", sources=["SRC-DASH"])
    run = rippl.run("r")
    assert run.observe(["CLM-IOPS"], ref="mem:1") == ["CLM-IOPS"]
    run.cite(["CLM-IOPS"])
    [held] = run.decide("t1", [MIGRATE], context=["mem:1"])
    assert "CLM-IOPS" in premises_of(rippl, held.target)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        run.observe(["CLM-NOPE"])
    with pytest.raises(InvalidInputError, match=r"^SRC-DASH is not a claim; a run observes claims$"):
        run.observe(["SRC-DASH"])
    rippl.add_source("SRC-LOGS", "shard logs")
    with pytest.raises(InvalidInputError, match=r"^SRC-DASH, SRC-LOGS are not a claim"):
        run.observe(["SRC-DASH", "CLM-IOPS", "SRC-LOGS"])


def test_judging_a_call_at_execution_needs_its_call_id(rippl: Rippl) -> None:
    """A call with no id cannot be matched to its turn: refused with what to do, nothing judged."""
    story(rippl)
    run = rippl.run("thread-1")
    with pytest.raises(InvalidInputError, match="needs its call id; decide its turn"):
        run.judge(MIGRATE.model_copy(update={"id": None}))


def test_an_edited_call_is_a_new_action_of_the_same_decision(rippl: Rippl) -> None:
    _, (_, migrate) = story(rippl)
    run = rippl.run("thread-1")
    edited = MIGRATE.model_copy(update={"args": {"table": "billing", "shard": "07"}})
    verdict = run.judge(edited)
    assert verdict.allowed and verdict.target != migrate
    decision = rippl.get(migrate).justifications[0]
    assert rippl.get(verdict.target).justifications[0] == decision  # type: ignore[arg-type]


def test_an_edited_call_is_judged_by_the_declared_actions_it_matches_not_by_itself(
        rippl: Rippl) -> None:
    """The edited call's own new action matches its call key, as a declared action would: it is
    the action judged, never one of its declared matches (under a strict allow-list the edited
    call matches none, so it is denied; a match with itself would have allowed it)."""
    strict = Policy(unknown="deny")
    run = rippl.run("strict-1", policy=strict)
    call = ToolCall(name="resize", args={"gb": 10}, id="r1")
    [first] = run.decide("t1", [call], context=[])
    assert not first.allowed and "unknown='deny'" in first.reason
    edited = call.model_copy(update={"args": {"gb": 20}})
    verdict = run.judge(edited)
    assert not verdict.allowed and "no declared action matches resize" in verdict.reason
    assert verdict.target is not None and verdict.target != first.target
    loose = rippl.run("loose-1")
    [made] = loose.decide("t1", [call.model_copy(update={"id": "r2"})], context=[])
    assert made.allowed  # unknown='record': recorded, judged by its premises
    again = loose.judge(call.model_copy(update={"id": "r2", "args": {"gb": 30}}))
    assert again.allowed and again.reason.count(str(again.target)) == 1  # itself, once


def test_a_call_no_turn_decided_is_decided_on_everything_the_run_saw(rippl: Rippl) -> None:
    claim, _ = story(rippl)
    late = ToolCall(name="page_oncall", args={}, id="c7")
    verdict = rippl.run("thread-1").judge(late)
    assert verdict.allowed and claim in premises_of(rippl, verdict.target)  # type: ignore[arg-type]


def test_an_execution_needs_its_call_id_and_an_edit_needs_its_decision(rippl: Rippl) -> None:
    run = rippl.run("r")
    run.decide("t1", [MIGRATE])
    before = rippl.stats()
    with pytest.raises(InvalidInputError, match="needs the call id it was decided with"):
        run.executed(MIGRATE.model_copy(update={"id": None}), "done")
    assert rippl.stats() == before
    [(decision,)] = rippl._driver.query(Query(
        "MATCH (d:Decision)-[:DRIVES]->(a:Action {call_id: 'c3'}) RETURN d.id", read_only=True))
    rippl._driver.run(lambda: (yield Query("MATCH (d:Decision {id: $id}) DETACH DELETE d",
                                           {"id": decision})), write=True)
    edited = MIGRATE.model_copy(update={"args": {"table": "ledger", "shard": "09"}})
    with pytest.raises(NotFoundError, match="has lost its decision"):
        run.judge(edited)


def test_executing_an_undecided_call_is_refused(rippl: Rippl) -> None:
    with pytest.raises(NotFoundError, match="never decided"):
        rippl.run("r").executed(MIGRATE, "done")


def test_bad_input_is_refused_before_anything_is_written(rippl: Rippl) -> None:
    before = rippl.stats()
    run = rippl.run("r")
    with pytest.raises(InvalidInputError):
        run.decide("t1", [])
    with pytest.raises(InvalidInputError):
        run.decide("t1", MIGRATE)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="share a call id"):
        run.decide("t1", [MIGRATE, MIGRATE])
    with pytest.raises(InvalidInputError):
        run.decide(" t1", [MIGRATE])
    with pytest.raises(InvalidInputError):
        rippl.run("")
    with pytest.raises(InvalidInputError, match="results must map the call ids"):
        run.decide("t1", [MIGRATE], context=["c0"], results=["c0"])  # type: ignore[arg-type]
    assert rippl.stats() == before


def test_the_run_claim_stops_a_whole_run(rippl: Rippl) -> None:
    story(rippl)
    rippl.retract(ids.run_claim("thread-1"), reason="the agent was compromised", by="security")
    [verdict] = rippl.run("thread-1").decide("t9", [HEALTH.model_copy(update={"id": "c20"})])
    assert not verdict.allowed


def test_outside_a_run_record_means_deny(rippl: Rippl) -> None:
    verdict = rippl.check(MIGRATE, policy=Policy(unknown="record"))
    assert not verdict.allowed and "rippl.run" in verdict.reason


def test_concurrent_runs_stay_separate(open_rippl: Callable[..., Rippl]) -> None:
    first = open_rippl()
    handles = [first, *(open_rippl(graph=first.graph) for _ in range(3))]
    errors: list[BaseException] = []

    def agent(handle: Rippl, n: int) -> None:
        try:
            run = handle.run(f"run-{n}")
            for turn in range(5):
                call = ToolCall(name="get_shard_health", args={"shard": f"{n}"}, id=f"h{turn}")
                run.decide(f"t{turn}", [call], context=[f"h{turn - 1}"] if turn else [])
                run.executed(call, f"healthy {n}/{turn}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(h, n)) for n, h in enumerate(handles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for n in range(4):
        last = ToolCall(name="x", args={}, id="final")
        [verdict] = first.run(f"run-{n}").decide("final", [last], context=["h4"])
        own = premises_of(first, verdict.target)  # type: ignore[arg-type]
        assert len(own) == 2 and all(first.get(c).text.endswith(f"healthy {n}/4") or c.startswith("RUN-")
                                     for c in own)


def test_compensations_as_of_a_past_time(rippl: Rippl) -> None:
    claim, (announce, _) = story(rippl)
    rippl.run("thread-1").executed(ANNOUNCE, "announced")
    executed_at = rippl.get(announce).executed_at
    assert executed_at is not None
    rippl.retract(claim, reason="stale", by="monitor")
    assert [c.action for c in rippl.compensations()] == [announce]
    assert rippl.compensations(as_of=executed_at) == []  # then, it rested on a holding claim
    [now] = rippl.compensations(as_of="9999-01-01T00:00:00Z")
    assert now.action == announce


def test_prune_removes_closed_runs_and_keeps_what_is_retracted(rippl: Rippl) -> None:
    claim, _ = story(rippl, "old")
    story(rippl, "live")
    rippl.run("old").close()
    rippl.retract(claim, reason="stale", by="monitor")
    gone = rippl.run("gone")
    gone.decide("t1", [HEALTH])
    only = gone.executed(HEALTH, "a reading no other run made")
    gone.close()
    assert sorted(rippl.prune_runs(older_than="9999-01-01T00:00:00Z")) == ["gone", "old"]
    with pytest.raises(NotFoundError):
        rippl.get(ids.run_claim("old"))
    with pytest.raises(NotFoundError):
        rippl.get(only)  # a result claim nothing rests on any more goes with its run
    assert rippl.get(claim).retracted  # retracted: its record is kept
    assert rippl.get(ids.run_claim("live"))
    assert rippl.verify_receipts().ok


def test_mark_executed_lists_a_declared_action_too(incident: Rippl) -> None:
    incident.mark_executed("ACT-001", output="moved 3 tables")
    assert incident.get("ACT-001").status == "Executed"
    [(digest,)] = incident._driver.query(Query("MATCH (a:Action {id: 'ACT-001'}) RETURN a.output",
                                               read_only=True))
    assert digest == output_digest("moved 3 tables")
    incident.mark_executed("ACT-001")  # again without an output: the digest stays
    assert incident._driver.query(Query("MATCH (a:Action {id: 'ACT-001'}) RETURN a.output",
                                        read_only=True)) == [(digest,)]
    incident.retract("CLM-001", reason="disk errors", by="monitor")
    assert "ACT-001" in [c.action for c in incident.compensations()]
    with pytest.raises(NotFoundError):
        incident.mark_executed("ACT-NOPE")
    with pytest.raises(InvalidInputError, match=r"^CLM-002 is a Claim; only actions are executed$"):
        incident.mark_executed("CLM-002")


@pytest.mark.asyncio(loop_scope="session")
async def test_the_async_twin_records_the_same(arippl: AsyncRippl, rippl: Rippl) -> None:
    run = arippl.run("async-1", agent="ops")
    [checked] = await run.decide("t1", [HEALTH])
    claim = await run.executed(HEALTH, "healthy")
    [migrating] = await run.decide("t2", [MIGRATE], context=["c1"])
    assert checked.allowed and migrating.allowed
    await arippl.retract(claim, reason="stale", by="monitor")
    vetoed = await run.judge(MIGRATE)
    assert not vetoed.allowed and vetoed.blockers[0].premise == claim
    assert premises_of(rippl, migrating.target) == {claim, ids.run_claim("async-1")}  # type: ignore[arg-type]


def test_a_runs_policy_records_by_default_and_obeys_an_explicit_unknown(rippl: Rippl) -> None:
    claim, _ = story(rippl, "strict")
    rippl.retract(claim, reason="stale", by="monitor")
    default = rippl.run("strict")
    assert default.policy.unknown == "record"
    assert not default.judge(MIGRATE).allowed  # judged by its captured premises
    strict = rippl.run("strict", policy=Policy(unknown="deny"))
    fresh = ToolCall(name="resize", args={}, id="s1")
    [denied] = strict.decide("s-turn", [fresh], context=[])
    assert not denied.allowed and "strict allow-list" in denied.reason
    assert denied.reason.startswith("denied (policy unknown='deny')")
    assert rippl.get(denied.target).tool == "resize"  # still recorded  # type: ignore[arg-type]
    rippl.add_action("ACT-RESIZE", "resize anything", tool="resize")
    [declared] = strict.decide("s-turn-2", [fresh.model_copy(update={"id": "s2"})], context=[])
    assert declared.allowed and declared.target == "ACT-RESIZE"
    loose = rippl.run("strict", policy=Policy(unknown="allow"))
    [unprotected] = loose.decide("l-turn", [MIGRATE.model_copy(update={"id": "l1"})])
    assert unprotected.allowed and unprotected.reason.startswith("allowed (policy unknown='allow')")


def test_a_veto_for_a_premise_under_review_does_not_drop_it(rippl: Rippl) -> None:
    claim, _ = story(rippl, "review")
    run = rippl.run("review")
    review = rippl.propose_retraction(claim, reason="maybe stale", by="monitor")
    assert not run.judge(MIGRATE).allowed  # blocked while the review is pending
    rippl.reject(review.id, by="alice", note="it was fine")
    later = MIGRATE.model_copy(update={"id": "c8"})
    [verdict] = run.decide("t5", [later], context=["c1", "c3"], told=["c3"])
    assert verdict.allowed and claim in premises_of(rippl, verdict.target)  # type: ignore[arg-type]
    rippl.retract(claim, reason="stale after all", by="monitor")
    assert not run.judge(later).allowed  # still protected: it rests on the claim


def test_a_veto_is_published_retracted_or_at_risk(rippl: Rippl) -> None:
    """Each denied call publishes `call_vetoed` (its action, run, state and first premise), for
    `rippl watch`, the console and webhooks; an allowed call publishes none."""
    claim, (_, migrate) = story(rippl)
    events = rippl.subscribe()
    try:
        assert rippl.run("thread-1").judge(MIGRATE).allowed
        review = rippl.propose_retraction(claim, reason="stale cache", by="monitor")
        assert not rippl.run("thread-1").judge(MIGRATE).allowed  # at risk: nothing told, no binds
        rippl.approve(review.id, by="alice")
        assert not rippl.run("thread-1").judge(MIGRATE).allowed  # retracted
        seen = []
        while (event := events.get(timeout=1)) is not None:
            if event.type == "call_vetoed":
                seen.append(event)
    finally:
        events.close()
    assert [(e.node, e.run, e.state, e.claim) for e in seen] == [
        (migrate, "thread-1", "AT_RISK", claim), (migrate, "thread-1", "OUT", claim)]


def test_the_small_print_of_a_run(rippl: Rippl) -> None:
    """What a run's root says about who runs it, an empty observation, and the digest a veto on an
    unrecorded tool result quotes."""

    run = rippl.run("small-1", agent="ops", framework="langgraph")
    [read] = run.decide("t1", [HEALTH], context=[])
    assert rippl.get(ids.run_source("small-1")).text == "run small-1 of ops (langgraph) started"
    decision = rippl.get(read.target).justifications[0][0]
    assert rippl.get(decision).text == "ops calls get_shard_health (turn t1 of run small-1)"
    [anon] = rippl.run("small-2").decide("t1", [HEALTH], context=[])
    assert rippl.get(rippl.get(anon.target).justifications[0][0]).text.startswith("the agent calls")
    for run_id, who, framework, says in (("small-3", "ops", None, "ops"),
                                          ("small-4", None, "crewai", "crewai"),
                                          ("small-5", None, None, "an agent")):
        rippl.run(run_id, agent=who, framework=framework).decide("t1", [HEALTH], context=[])
        assert rippl.get(ids.run_source(run_id)).text == f"run {run_id} of {says} started"
    assert run.observe([]) == []
    forged = output_digest("shard 09: healthy")
    [denied] = run.decide("t2", [MIGRATE], context=["h0"], results={"h0": forged})
    assert not denied.allowed
    assert f"(content digest {forged[:12]})" in (denied.blockers[0].reason or "")


def test_a_reading_again_makes_a_claim_whose_source_was_retracted_hold(rippl: Rippl) -> None:
    """The claim a retracted source alone held up is OUT; the same output read again, by a new
    call, is a new source for it: the claim holds again (a relabel, written under WATCH)."""
    claim, (_, migrate) = story(rippl)
    source = ids.result_source("thread-1", "c1")
    rippl.retract(source, reason="the replica served stale data", by="sre")
    assert rippl.get(claim).state is State.OUT and rippl.get(migrate).state is State.OUT
    run = rippl.run("thread-1")
    again = HEALTH.model_copy(update={"id": "c9"})
    [allowed] = run.decide("t9", [again], context=[])
    assert allowed.allowed
    assert run.executed(again, "healthy (served from replica r3)") == claim
    assert rippl.get(claim).state is State.IN
    assert rippl.get(migrate).state is State.IN  # what rested on it holds again


@pytest.mark.asyncio(loop_scope="session")
async def test_reading_again_holds_the_same_through_the_async_handle(arippl: AsyncRippl,
                                                                    rippl: Rippl) -> None:
    claim, _ = story(rippl)
    await arippl.retract(ids.result_source("thread-1", "c1"), reason="stale replica", by="sre")
    run = arippl.run("thread-1")
    again = HEALTH.model_copy(update={"id": "c9"})
    await run.decide("t9", [again], context=[])
    assert await run.executed(again, "healthy (served from replica r3)") == claim
    assert (await arippl.get(claim)).state is State.IN


def test_a_declared_veto_binds_only_the_calls_it_matches_in_a_turn(rippl: Rippl) -> None:
    """In a turn of several calls, a declared action judges the calls of its own tool only."""
    rippl.add_claim("CLM-FREEZE", "no change freeze is on")
    rippl.add_decision("DEC-ANY", "migrations are allowed", premises=["CLM-FREEZE"])
    rippl.add_action("ACT-ANY", "any migration", decisions=["DEC-ANY"], tool="migrate_tables")
    rippl.retract("CLM-FREEZE", reason="a freeze started", by="release-manager")
    notify = ToolCall(name="notify", args={"to": "ops"}, id="c9")
    migrating, notifying = rippl.run("r").decide("t1", [MIGRATE, notify])
    assert not migrating.allowed and migrating.target == "ACT-ANY"
    assert notifying.allowed, notifying.reason
    assert notifying.target != "ACT-ANY" and notifying.blockers == []


def test_a_repeat_of_a_call_a_declared_action_vetoed_names_that_action(rippl: Rippl) -> None:
    """The repeat's reason says which declared action vetoed the original call."""
    rippl.add_claim("CLM-FREEZE", "no change freeze is on")
    rippl.add_decision("DEC-ANY", "migrations are allowed", premises=["CLM-FREEZE"])
    rippl.add_action("ACT-ANY", "any migration", decisions=["DEC-ANY"], tool="migrate_tables")
    rippl.add_claim("CLM-WINDOW", "the maintenance window is open")
    rippl.add_decision("DEC-WINDOW", "migrate in the window", premises=["CLM-WINDOW"])
    rippl.add_action("ACT-WINDOW", "a migration in the window", decisions=["DEC-WINDOW"],
                     tool="migrate_tables")  # matches the call too, and holds
    rippl.retract("CLM-FREEZE", reason="a freeze started", by="release-manager")
    run = rippl.run("r")
    [veto] = run.decide("t1", [MIGRATE])
    assert not veto.allowed and veto.target == "ACT-ANY"
    [again] = run.decide("t2", [MIGRATE.model_copy(update={"id": "c4"})], context=["c3"],
                         told=["c3"])
    assert not again.allowed
    assert "repeats the call vetoed by ACT-ANY," in again.reason
    assert "at turn" not in again.reason and "ACT-WINDOW" not in again.reason


def test_a_call_mapped_to_its_own_captured_action_is_denied(rippl: Rippl) -> None:
    """A call cannot vouch for itself: mapped explicitly to the action its own capture records, it
    fails closed, as a call mapped to an action not in the graph."""
    run = rippl.run("r")
    [first] = run.decide("t1", [MIGRATE])
    assert first.allowed
    pinned = MIGRATE.model_copy(update={"action_id": first.target})
    [verdict] = run.decide("t1", [pinned])
    assert not verdict.allowed and verdict.target == first.target
    assert "denied (fail closed)" in verdict.reason and "cannot vouch for itself" in verdict.reason
    edited = MIGRATE.model_copy(update={"args": {"table": "billing", "shard": "11"}})
    own = ids.action(run.id, ids.Call.identified(edited))  # the action its edit records
    verdict = run.judge(edited.model_copy(update={"action_id": own}))
    assert not verdict.allowed and verdict.target == own and "cannot vouch for itself" in \
        verdict.reason  # an edited call too: judged by itself, it would have been allowed
    [unknown] = run.decide("t1", [MIGRATE.model_copy(update={"action_id": "ACT-NOPE"})])
    assert not unknown.allowed and "ACT-NOPE, the action migrate_tables is mapped to, is not in " \
        "the graph" in unknown.reason


def test_a_denial_on_readings_no_longer_valid_is_published_stale_or_superseded(
        rippl: Rippl) -> None:
    """A call denied on an expired reading publishes `call_stale`, one denied on a reading another
    output superseded `call_superseded` (its action, run and readings), and no `call_vetoed`."""
    from rippl_core.testing import Clock

    migrate = ToolCall(name="migrate_tables", args={"shard": "09"}, id="m1")
    with Clock("2026-12-01T10:00:00Z") as clock:
        run = rippl.run("fresh")
        run.decide("t1", [HEALTH], context=[])
        healthy = run.executed(HEALTH, "shard 09: healthy", fresh_for=300)
        events = rippl.subscribe()
        try:
            clock.advance(minutes=6)
            [stale] = run.decide("t2", [migrate], context=["c1"])
            assert not stale.allowed and "denied as stale" in stale.reason
            other = rippl.run("checker")
            again = HEALTH.model_copy(update={"id": "c9"})
            other.decide("t1", [again], context=[])
            degraded = other.executed(again, "shard 09: degraded", fresh_for=300)
            [superseded] = run.decide("t3", [migrate.model_copy(update={"id": "m2"})],
                                      context=["c1"])
            assert not superseded.allowed and "denied as superseded" in superseded.reason
            seen = []
            while (event := events.get(timeout=1)) is not None:
                if event.type.startswith("call_"):
                    seen.append(event)
        finally:
            events.close()
    assert degraded != healthy
    assert [(e.type, e.node, e.run) for e in seen] == [
        ("call_stale", stale.target, "fresh"), ("call_superseded", superseded.target, "fresh")]


def test_readings_recorded_before_they_kept_their_host_get_it_on_reopening(
        rippl: Rippl, backend: dict[str, object]) -> None:
    """A graph written before readings kept their URL's host: reopening gives each reading with a
    URL argument its host, so a retraction by provenance finds it by the URL's prefix."""
    from rippl_core._runtime.wire import Query

    run = rippl.run("r")
    fetch = ToolCall(name="fetch_url", args={"url": "https://evil.example/page"}, id="f1")
    local = ToolCall(name="read_file", args={"path": "notes.txt"}, id="f2")
    run.decide("t1", [fetch, local], context=[])
    page = run.executed(fetch, "the shard is healthy")
    run.executed(local, "nothing to see")
    hosts = Query("MATCH (s:Source) WHERE s.source_type = 'tool_result' "
                  "RETURN s.call_id, s.host ORDER BY s.call_id", read_only=True)
    assert rippl._driver.query(hosts) == [("f1", "evil.example"), ("f2", None)]
    rippl._driver.query(Query("MATCH (s:Source) REMOVE s.host"))  # as an older version wrote it
    rippl.redis.delete(rippl.keys.schema)
    with Rippl.open(graph=rippl.graph, **backend) as again:  # type: ignore[arg-type]
        assert again._driver.query(hosts) == [("f1", "evil.example"), ("f2", None)]
        found = again.propose_retraction_where(source_prefix="https://evil.example/", reason="x",
                                               by="monitor")
        assert found.matched == [page]



def test_prune_removes_an_unrecorded_result_claim_once_a_person_accepted_it(rippl: Rippl) -> None:
    """The claim that an unrecorded tool result is genuine belongs to the run's capture: while it
    is retracted, pruning the run keeps it; once a person accepted it (reinstated it), the next
    prune removes it, as any result claim nothing rests on."""
    from rippl_core.adapters import output_digest

    run = rippl.run("old")
    [denied] = run.decide("t1", [MIGRATE], context=["h0"],
                          results={"h0": output_digest("shard 09: healthy")})
    forged = denied.blockers[0].premise
    run.close()
    assert rippl.prune_runs(older_than="9999-01-01T00:00:00Z") == ["old"]
    assert rippl.get(forged).retracted  # retracted: its record is kept
    rippl.reinstate(forged, reason="checked on the primary: it was genuine", by="oncall")
    assert not rippl.get(forged).retracted
    story(rippl, "later")
    rippl.run("later").close()
    assert rippl.prune_runs(older_than="9999-01-01T00:00:00Z") == ["later"]
    with pytest.raises(NotFoundError):
        rippl.get(forged)
    assert rippl.verify_receipts().ok  # the reinstatement's receipt stays


def test_an_execution_is_announced_once_with_its_status(rippl: Rippl) -> None:
    """Each recorded execution publishes one `action_executed`, a retry too (its smaller query
    refused, the whole one records it); a failed call's result is recorded as an error."""
    run = rippl.run("r")
    failing = ToolCall(name="deploy", args={}, id="d1")
    run.decide("t1", [MIGRATE, failing], context=[])
    events = rippl.subscribe()
    try:
        run.executed(MIGRATE, "migrated")
        run.executed(MIGRATE, "migrated")  # a retry: the result source exists already
        run.executed(failing, "permission denied", ok=False)
        seen = []
        while (event := events.get(timeout=1)) is not None:
            seen += [event.node for e in [event] if e.type == "action_executed"]
    finally:
        events.close()
    statuses = dict(rippl._driver.query(Query(
        "MATCH (a:Action) WHERE a.call_id IN ['c3', 'd1'] RETURN a.call_id, a.exec_status",
        read_only=True)))
    assert statuses == {"c3": "ok", "d1": "error"}
    [migrate_id] = {n for n in seen if n != seen[-1]}
    assert seen == [migrate_id, migrate_id, seen[-1]] and seen[-1] != migrate_id


def test_a_turn_is_announced_once(rippl: Rippl) -> None:
    """`turn_recorded` once per turn: a first turn (the whole query) and a common one (the smaller
    query), and a turn the smaller query did not cover (tried, then whole)."""
    a, b = rippl.run("ra", scope="s"), rippl.run("rb", scope="s")
    health = ToolCall(name="get_health", args={}, id="h9")
    b.decide("b1", [health], context=[])
    b.executed(health, "healthy")
    events = rippl.subscribe()
    try:
        a.decide("t1", [ToolCall(name="noop", args={"n": 1}, id="c1")], context=[])
        a.decide("t2", [ToolCall(name="noop", args={"n": 2}, id="c2")], context=["t1"])
        a.decide("t3", [ToolCall(name="noop", args={"n": 3}, id="c3")], context=["h9"])
        a.decide("t4", [ToolCall(name="noop", args={"n": 4}, id="c4")], context=["t1", "h9"])
        seen = []
        while (event := events.get(timeout=1)) is not None:
            seen += [event.node for e in [event] if e.type == "turn_recorded"]
    finally:
        events.close()
    assert len(seen) == 4 and len(set(seen)) == 4


def test_a_verdict_says_whether_the_call_already_ran(rippl: Rippl) -> None:
    """The status a verdict gives a call's action: executed once its execution is recorded (a
    replayed turn, a judge after it ran), never for a call that has not run (an edited call)."""
    run = rippl.run("r")
    [first] = run.decide("t1", [MIGRATE], context=[])
    assert first.allowed and "Executed" not in first.reason
    assert "Executed" not in run.judge(MIGRATE).reason  # not yet run
    # its output recorded under arguments the turn never saw: the call id names the action
    run.executed(MIGRATE.model_copy(update={"args": {"table": "billing", "shard": "9"}}), "migrated")
    assert rippl.get(first.target).status == "Executed"
    [replayed] = run.decide("t1", [MIGRATE], context=[])
    assert replayed.allowed and f"{first.target} is Executed" in replayed.reason
    judged = run.judge(MIGRATE)
    assert f"{first.target} is Executed" in judged.reason
    edited = run.judge(MIGRATE.model_copy(update={"args": {"table": "ledger", "shard": "09"}}))
    assert edited.allowed and "Executed" not in edited.reason
    with pytest.raises(InvalidInputError, match="repeat_scope"):
        rippl.run("r", repeat_scope={"migrate_tables": "everything"})  # type: ignore[dict-item]
