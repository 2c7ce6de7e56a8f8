"""Rippl notices: readings age (freshness) and a differing re-read supersedes the old reading, in
every run. Stale is not false: a call resting on an expired or superseded reading is denied until
the agent reads again, with no review, no receipt, no compensation, and nothing that binds a
repeat. Both backends, with a clock that lets time pass."""

from __future__ import annotations

import pytest

from rippl_core import Rippl, ToolCall
from rippl_core._runtime.wire import Query
from rippl_core.testing import Clock

HEALTH = ToolCall(name="get_health", args={"shard": "09"}, id="h1")


def migrate(call_id: str, shard: str = "09") -> ToolCall:
    return ToolCall(name="migrate", args={"shard": shard}, id=call_id)


def read(rippl: Rippl, run_id: str, call_id: str, output: str, *, fresh_for: float | None = 300,
         reads: bool | None = None) -> str:
    run = rippl.run(run_id)
    call = HEALTH.model_copy(update={"id": call_id})
    run.decide(f"t-{call_id}", [call], context=[])
    return run.executed(call, output, fresh_for=fresh_for, reads=reads)


def test_a_call_on_an_expired_reading_is_denied_as_stale_not_retracted(rippl: Rippl,
                                                                       clock: Clock) -> None:
    claim = read(rippl, "r1", "h1", "shard 09: healthy")
    run = rippl.run("r1")
    [fresh] = run.decide("t2", [migrate("m1")], context=["h1"])
    assert fresh.allowed
    clock.advance(minutes=12)
    [stale] = run.decide("t3", [migrate("m2")], context=["h1"])
    assert not stale.allowed and "denied as stale" in stale.reason
    assert "read 12 min ago and is fresh for 5 min" in stale.reason and "Read it again" in stale.reason
    [expired] = stale.expired
    assert expired.premise == claim and expired.status == "stale" and expired.fresh_for == 300
    assert stale.blockers == []  # nothing is retracted
    assert not run.judge(migrate("m1")).allowed  # the earlier call, judged again before it runs
    assert not rippl.check(fresh.target).allowed  # the plain pre-flight check agrees
    assert rippl.reviews() == [] and rippl.receipts() == []  # no review, no receipt
    # the model reads again (same output): the reading is fresh again, the next turn is allowed
    read(rippl, "r1", "h2", "shard 09: healthy")
    [again] = run.decide("t4", [migrate("m3")], context=["h2"])
    assert again.allowed
    assert run.judge(migrate("m1")).allowed  # the claim is fresh again for every call on it


def test_stale_does_not_bind_a_repeat(rippl: Rippl, clock: Clock) -> None:
    read(rippl, "r1", "h1", "shard 09: healthy")
    clock.advance(minutes=6)
    run = rippl.run("r1")
    [stale] = run.decide("t2", [migrate("m1")], context=["h1"])
    assert not stale.allowed
    read(rippl, "r1", "h2", "shard 09: healthy")
    [repeat] = run.decide("t3", [migrate("m2")], context=["h2", "m1"], told=["m1"])
    assert repeat.allowed, repeat.reason  # a fresh reading lifts a stale denial, repeat or not


def test_a_differing_re_read_supersedes_the_old_reading_in_every_run(rippl: Rippl,
                                                                     clock: Clock) -> None:
    healthy = read(rippl, "planner", "h1", "shard 09: healthy")
    planner = rippl.run("planner")
    [planned] = planner.decide("t2", [migrate("m1")], context=["h1"])
    assert planned.allowed
    clock.advance(minutes=1)
    events = rippl.subscribe()
    try:
        degraded = read(rippl, "checker", "c1", "shard 09: degraded")  # another agent reads again
        seen = []
        while (event := events.get(timeout=1)) is not None:
            seen += [(event.node, event.run) for e in [event] if e.type == "reading_superseded"]
    finally:
        events.close()
    assert degraded != healthy
    assert seen == [(healthy, "checker")]  # published: the old reading, by the run that read anew
    judged = planner.judge(migrate("m1"))
    assert not judged.allowed and "denied as superseded" in judged.reason
    assert "shard 09: degraded" in judged.reason and "in run checker" in judged.reason
    [expired] = judged.expired
    assert expired.status == "superseded" and expired.superseded_by == degraded
    assert expired.superseded_run == "checker"
    # acting on the new reading is allowed
    [ok] = rippl.run("checker").decide("t2", [migrate("m9", "07")], context=["c1"])
    assert ok.allowed


def test_an_executed_call_on_a_reading_since_superseded_is_not_a_compensation(rippl: Rippl,
                                                                           clock: Clock) -> None:
    read(rippl, "r1", "h1", "shard 09: healthy")
    run = rippl.run("r1")
    [ok] = run.decide("t2", [migrate("m1")], context=["h1"])
    assert ok.allowed
    run.executed(migrate("m1"), "migrated")
    clock.advance(minutes=10)
    read(rippl, "r2", "x1", "shard 09: degraded")
    assert rippl.compensations() == []  # it acted on what was true then


def test_a_same_output_re_read_refreshes_and_a_flip_back_supersedes(rippl: Rippl, clock: Clock) -> None:
    healthy = read(rippl, "r1", "h1", "shard 09: healthy")
    clock.advance(minutes=4)
    read(rippl, "r1", "h2", "shard 09: healthy")  # refreshed: fresh until 10:09
    clock.advance(minutes=3)
    run = rippl.run("r1")
    assert run.decide("t3", [migrate("m1")], context=["h1"])[0].allowed
    degraded = read(rippl, "r1", "h3", "shard 09: degraded")
    assert not run.judge(migrate("m1")).allowed
    clock.advance(seconds=30)
    read(rippl, "r1", "h4", "shard 09: healthy")  # back to healthy: it supersedes "degraded"
    assert run.judge(migrate("m1")).allowed
    [dec] = run.decide("t5", [migrate("m2")], context=["h3"])
    assert not dec.allowed and dec.expired[0].premise == degraded
    assert dec.expired[0].superseded_by == healthy


def test_readings_without_freshness_never_expire_and_non_reads_never_supersede(rippl: Rippl,
                                                                            clock: Clock) -> None:
    read(rippl, "r1", "h1", "shard 09: healthy", fresh_for=None)  # not a read: as before
    clock.advance(minutes=600)
    read(rippl, "r2", "h2", "shard 09: degraded", fresh_for=None)
    assert rippl.run("r1").decide("t2", [migrate("m1")], context=["h1"])[0].allowed
    read(rippl, "r3", "h3", "shard 09: healthy", fresh_for=None, reads=True)  # a read, no expiry
    clock.advance(minutes=600)
    assert rippl.run("r3").decide("t2", [migrate("m1")], context=["h3"])[0].allowed
    read(rippl, "r4", "h4", "shard 09: degraded", fresh_for=None, reads=True)
    assert not rippl.run("r3").decide("t3", [migrate("m2")], context=["h3"])[0].allowed


def test_a_hand_over_carries_freshness(rippl: Rippl, clock: Clock) -> None:
    read(rippl, "crew/research", "h1", "shard 09: healthy")
    rippl.run("crew/research", scope="crew").wrote("report", context=["h1"])
    operator = rippl.run("crew/operator", scope="crew")
    assert operator.decide("t1", [migrate("m1")], context=["report"])[0].allowed
    clock.advance(minutes=6)
    [stale] = operator.decide("t2", [migrate("m2")], context=["report"])
    assert not stale.allowed and stale.expired[0].status == "stale"


def test_check_as_of_honours_freshness(rippl: Rippl, clock: Clock) -> None:
    start = clock.now
    read(rippl, "r1", "h1", "shard 09: healthy")
    [ok] = rippl.run("r1").decide("t2", [migrate("m1")], context=["h1"])
    clock.advance(minutes=3)
    read(rippl, "r2", "x1", "shard 09: degraded")
    clock.advance(minutes=10)
    assert rippl.check(ok.target, as_of=start + 60_000).allowed  # fresh then
    superseded = rippl.check(ok.target, as_of=start + 240_000)
    assert not superseded.allowed and "superseded" in superseded.reason
    # as known before the re-read, it was fresh at 10:04
    assert rippl.check(ok.target, as_of=start + 240_000, known_at=start + 120_000).allowed
    assert not rippl.check(ok.target, as_of=start + 20 * 60_000).allowed


def test_check_as_of_names_a_supersession_only_once_the_superseding_reading_existed(
        rippl: Rippl, clock: Clock) -> None:
    """Stale then, superseded only later: as of then it was stale. And a reading superseded, read
    again with its first output, then aged: stale at a time after that, not superseded."""
    start = clock.now
    read(rippl, "r1", "h1", "shard 09: healthy")
    [ok] = rippl.run("r1").decide("t2", [migrate("m1")], context=["h1"])
    clock.advance(minutes=10)  # stale from 10:05
    read(rippl, "r2", "x1", "shard 09: degraded")  # superseded at 10:10
    stale = rippl.check(ok.target, as_of=start + 7 * 60_000)
    assert not stale.allowed and [e.status for e in stale.expired] == ["stale"]
    assert "denied as stale" in stale.reason
    between = start + 10 * 60_000 + 30_000  # after the supersession, before the next re-read
    later = rippl.check(ok.target, as_of=between)
    assert [e.status for e in later.expired] == ["superseded"]
    clock.advance(minutes=1)
    read(rippl, "r3", "y1", "shard 09: healthy")  # read again: the first output, fresh again
    clock.advance(minutes=10)
    aged = rippl.check(ok.target, as_of=clock.now)
    assert [e.status for e in aged.expired] == ["stale"], aged.reason
    assert [e.status for e in rippl.check(ok.target, as_of=between).expired] == \
        ["superseded"]  # what held then is unchanged


def test_bad_freshness_is_refused_and_writes_nothing(rippl: Rippl, clock: Clock) -> None:
    run = rippl.run("r1")
    run.decide("t1", [HEALTH], context=[])
    before = rippl.stats()
    with pytest.raises(Exception, match="fresh_for must be a positive number"):
        run.executed(HEALTH, "x", fresh_for=-1)
    assert rippl.stats() == before


def test_a_claim_is_fresh_until_the_latest_end_of_its_valid_readings(rippl: Rippl,
                                                                     clock: Clock) -> None:
    read(rippl, "r1", "h1", "shard 09: healthy", fresh_for=600)  # valid until 10:10
    clock.advance(minutes=1)
    read(rippl, "r2", "h2", "shard 09: healthy", fresh_for=60)  # until 10:02: the first still holds
    clock.advance(minutes=5)
    assert rippl.run("r2").decide("t2", [migrate("m1")], context=["h2"])[0].allowed
    clock.advance(minutes=5)
    assert not rippl.run("r2").decide("t3", [migrate("m2")], context=["h2"])[0].allowed


def test_the_check_reads_the_kept_bound_and_the_readings_only_past_it(
        rippl: Rippl, clock: Clock, sent: list[str]) -> None:
    """An allowed check reads the node alone while the bound it keeps (`reads_until`) lies ahead;
    past the bound the readings themselves decide (a refresh makes the call fresh again, a
    supersession denies it)."""
    read(rippl, "r1", "h1", "shard 09: healthy")
    [plan] = rippl.run("r1").decide("t2", [migrate("m1")], context=["h1"])
    [other] = rippl.run("r1").decide("t3", [migrate("m2", shard="07")], context=[])  # no reading
    decision = rippl.get(plan.target).justifications[0][0]
    sent.clear()
    assert rippl.check(plan.target).allowed and rippl.check(decision).allowed
    assert rippl.check(other.target).allowed
    assert len(sent) == 3  # one read each
    clock.advance(minutes=6)  # past the bound: the readings are read, and they have expired
    sent.clear()
    stale = rippl.check(plan.target)
    assert not stale.allowed and [e.status for e in stale.expired] == ["stale"]
    assert len(sent) == 3  # the node, its readings, the readings' texts for the reason
    read(rippl, "r2", "h2", "shard 09: healthy")  # another run reads the same again: a refresh
    assert rippl.check(plan.target).allowed and rippl.check(decision).allowed
    clock.advance(minutes=1)
    read(rippl, "r3", "h3", "shard 09: degraded")  # a third run reads it otherwise: superseded
    clock.advance(seconds=1)
    superseded = rippl.check(plan.target)
    assert not superseded.allowed and [e.status for e in superseded.expired] == ["superseded"]
    assert not rippl.check(decision).allowed
    assert rippl.check(other.target).allowed


def test_a_supersession_ends_the_kept_bound_of_what_rests_on_the_old_reading(
        rippl: Rippl, clock: Clock) -> None:
    read(rippl, "r1", "h1", "shard 09: healthy")
    [plan] = rippl.run("r1").decide("t2", [migrate("m1")], context=["h1"])
    decision = rippl.get(plan.target).justifications[0][0]
    clock.advance(minutes=1)  # well inside the five minutes the plan's bound promised
    read(rippl, "r2", "h2", "shard 09: degraded")
    for target in (plan.target, decision):
        verdict = rippl.check(target)
        assert not verdict.allowed and [e.status for e in verdict.expired] == ["superseded"]


def long_conversation(rippl: Rippl, turns: int = 6) -> tuple[list[str], list[str]]:
    """One run whose every input holds every earlier message: turn k reads shard k (fresh for 5
    minutes, then 1 hour for the later ones), so each later turn goes on from the last and keeps
    its readings through its context chain. (the claims read, the call ids of the turns)"""
    run = rippl.run("long")
    messages: list[str] = []
    claims, calls = [], []
    for k in range(1, turns + 1):
        call = ToolCall(name="get_health", args={"shard": f"{k:02d}"}, id=f"h{k}")
        [verdict] = run.decide(f"t{k}", [call], context=list(messages))
        assert verdict.allowed, verdict.reason
        claims.append(run.executed(call, f"shard {k:02d}: healthy",
                                   fresh_for=300 if k == 1 else 3600))
        calls.append(call.id or "")
        messages += [f"t{k}", f"h{k}"]
    return claims, messages


def test_a_turn_going_on_from_the_last_is_stale_when_an_early_reading_expires(
        rippl: Rippl, clock: Clock) -> None:
    """The first reading of a long conversation expires: a later turn, which keeps its readings
    through its context chain rather than a list of its own, is denied as stale naming it, at
    decide time, when judged again, in the plain check and in the run's trace."""
    claims, messages = long_conversation(rippl)
    run = rippl.run("long")
    [fresh] = run.decide("t7", [migrate("m1")], context=list(messages))
    assert fresh.allowed, fresh.reason
    own = rippl._driver.query(Query("MATCH (x:Action {id: $id}) RETURN x.reads, x.reads_via",
                                    {"id": fresh.target}, read_only=True))
    assert own[0][0] is None and own[0][1] is not None  # kept through the chain, not copied
    clock.advance(minutes=12)
    [stale] = run.decide("t8", [migrate("m2")], context=[*messages, "t7", "m1"])
    assert not stale.allowed and "denied as stale" in stale.reason
    assert [e.premise for e in stale.expired] == [claims[0]]
    assert [e.premise for e in run.judge(migrate("m1")).expired] == [claims[0]]
    assert not rippl.check(fresh.target).allowed
    [waiting] = [c for t in rippl.run_trace("long").turns for c in t.calls if c.action == fresh.target]
    assert waiting.verdict == "stale" and claims[0] in waiting.reason  # the trace agrees


def test_a_supersession_reaches_a_turn_that_went_on_from_the_last(rippl: Rippl,
                                                                  clock: Clock) -> None:
    """Another run reads shard 02 again and it answers otherwise: every later turn of the long
    conversation rests on the superseded reading through its chain, and is denied as
    superseded, though nothing is retracted."""
    claims, messages = long_conversation(rippl)
    run = rippl.run("long")
    [fresh] = run.decide("t7", [migrate("m1")], context=list(messages))
    assert fresh.allowed and rippl.check(fresh.target).allowed
    other = rippl.run("other")
    again = ToolCall(name="get_health", args={"shard": "02"}, id="o1")
    other.decide("o", [again], context=[])
    other.executed(again, "shard 02: degraded", fresh_for=3600)
    checked = rippl.check(fresh.target)
    assert not checked.allowed and "superseded" in checked.reason
    assert [e.premise for e in checked.expired] == [claims[1]]
    assert not run.judge(migrate("m1")).allowed


def test_a_claim_carried_before_it_was_read_binds_a_turn_that_went_on_from_the_last(
        rippl: Rippl, clock: Clock) -> None:
    """A claim the conversation carried as a plain output becomes a reading later (the model
    asks again with a read tool, same answer, fresh for 5 minutes): the later turns, which keep
    the readings their context chain added, rest on it too, and are denied as stale once it
    expires."""
    run = rippl.run("long")
    messages: list[str] = []
    claims = []
    for k, fresh_for in ((1, None), (2, None), (3, 300.0)):  # h3 reads shard 01 again
        call = ToolCall(name="get_health", args={"shard": "01" if k != 2 else "02"}, id=f"h{k}")
        assert run.decide(f"t{k}", [call], context=list(messages))[0].allowed
        claims.append(run.executed(call, "shard 01: healthy" if k != 2 else "shard 02: healthy",
                                   fresh_for=fresh_for))
        messages += [f"t{k}", f"h{k}"]
    assert claims[2] == claims[0]  # one claim: carried since turn 1, a reading since turn 3
    [fresh] = run.decide("t4", [migrate("m1")], context=list(messages))
    assert fresh.allowed, fresh.reason
    clock.advance(minutes=12)
    [stale] = run.decide("t5", [migrate("m2")], context=[*messages, "t4", "m1"])
    assert not stale.allowed and [e.premise for e in stale.expired] == [claims[0]]
    assert not rippl.check(fresh.target).allowed


def test_a_claim_carried_before_another_run_read_it_binds_a_turn_that_went_on_from_the_last(
        rippl: Rippl, clock: Clock) -> None:
    """The same when another run makes it a reading (the same read, the same answer): the long
    conversation's later turns rest on that reading too, and are denied once it expires."""
    run = rippl.run("long")
    messages: list[str] = []
    carried = []
    for k in (1, 2):
        call = ToolCall(name="get_health", args={"shard": f"0{k}"}, id=f"h{k}")
        assert run.decide(f"t{k}", [call], context=list(messages))[0].allowed
        carried.append(run.executed(call, f"shard 0{k}: healthy", fresh_for=None))
        messages += [f"t{k}", f"h{k}"]
    other = rippl.run("other")
    again = ToolCall(name="get_health", args={"shard": "01"}, id="h1")
    other.decide("o1", [again], context=[])
    assert other.executed(again, "shard 01: healthy", fresh_for=300) == carried[0]
    [fresh] = run.decide("t3", [migrate("m1")], context=list(messages))
    assert fresh.allowed, fresh.reason
    clock.advance(minutes=12)
    assert not rippl.check(fresh.target).allowed  # the turn that went on from the last
    [stale] = run.decide("t4", [migrate("m2")], context=[*messages, "t3", "m1"])
    assert not stale.allowed and [e.premise for e in stale.expired] == [carried[0]]
