"""Premises flow through memory: a belief adopted or a record saved while a captured run writes
rests on what the writing call rested on. Retract the reading it was written from and the memory
goes OUT by truth maintenance (another justification that holds keeps it IN), a run that recalls
it and acts is vetoed with the trail through the memory, what ran on it is a compensation, a
reinstatement brings it back, it is no fresher than its readings, and a veto read before it was
written stays bound wherever it is recalled. Outside a run a write keeps the sources its caller
names. Both backends."""

from __future__ import annotations

from collections.abc import Callable

from rippl_core import AsyncRippl, Record, Rippl, State, ToolCall
from rippl_core.capture.memory import Writing, writing
from rippl_core.capture.run import RunRef
from rippl_core.testing import Clock

HEALTH = ToolCall(name="get_health", args={"shard": "09"}, id="c1")
REMEMBER = ToolCall(name="remember", args={"text": "Shard 09 is healthy"}, id="c2")
TEXT = "Shard 09 is healthy"


def migrate(call_id: str, shard: str = "09") -> ToolCall:
    return ToolCall(name="migrate", args={"shard": shard}, id=call_id)


def scout_remembers(rippl: Rippl, *, fresh_for: float | None = None, told: list[str] | None = None,
                    before: list[str] | None = None) -> tuple[str, str]:
    """Run T1 reads the shard's health, then a `remember` tool (call c2) writes what it read to
    the belief memory, from inside the tool: (the reading's claim, the memory's claim)."""
    t1 = rippl.run("T1", agent="scout")
    t1.decide("t1", [HEALTH], context=[])
    reading = t1.executed(HEALTH, "shard 09: healthy", fresh_for=fresh_for)
    t1.decide("t2", [REMEMBER], context=["t1", "c1", *(before or [])], told=told or [])
    with writing(Writing(RunRef("T1", "scout"), call="c2")):
        memory = rippl.add_claim(None, TEXT).id
        rippl.believe("ops", memory, topic="shards/09-health")
    t1.executed(REMEMBER, "saved")
    return reading, memory


def recall_and_migrate(rippl: Rippl, run_id: str = "T2", call_id: str = "m1") -> ToolCall:
    """Another run recalls the memory (an observation of it) and decides to migrate on it."""
    t2 = rippl.run(run_id, agent="operator")
    belief = rippl.ask("ops", "shards/09-health")
    assert belief is not None
    t2.observe([belief.claim], ref=f"recall-{call_id}")
    call = migrate(call_id)
    t2.decide(f"turn-{call_id}", [call], context=[f"recall-{call_id}"])
    return call


def test_a_memory_written_from_a_reading_goes_out_with_it(rippl: Rippl) -> None:
    reading, memory = scout_remembers(rippl)
    call = recall_and_migrate(rippl)
    t2 = rippl.run("T2")
    assert t2.judge(call).allowed
    review = rippl.propose_retraction(reading, reason="served from a stale cache", by="monitor")
    assert rippl.get(memory).state is State.AT_RISK  # the wave reaches the memory
    rippl.approve(review.id, by="alice")
    assert rippl.get(memory).state is State.OUT
    belief = rippl.ask("ops", "shards/09-health")
    assert belief is not None and belief.rests_on_retracted  # dropped by no one: its premise fell
    verdict = t2.judge(call)
    assert not verdict.allowed
    [blocker] = verdict.blockers
    assert blocker.premise == reading
    trail = blocker.trail
    assert trail[0] == reading and trail[-1] == verdict.target and memory in trail
    writer = next(n for n in trail if n.startswith("WRT-"))
    assert trail.index(writer) < trail.index(memory)  # reading -> run T1 wrote it -> memory
    assert rippl.get(writer).text.startswith("run T1 wrote it (turn t2, call c2): ")
    # a current read skips it: the memory is no longer believed as true
    assert rippl.ask("ops", "shards/09-health").claim_state is State.OUT  # type: ignore[union-attr]


def test_what_ran_on_the_memory_is_a_compensation_and_a_reinstatement_brings_it_back(
        rippl: Rippl) -> None:
    reading, memory = scout_remembers(rippl)
    call = recall_and_migrate(rippl)
    rippl.run("T2").executed(call, "migrated")
    rippl.retract(reading, reason="stale cache", by="monitor")
    owed = {c.action: c for c in rippl.compensations()}
    migrated = rippl.run("T2").judge(call).target
    # what ran on the reading: T1's own save, and T2's migration through the memory
    assert migrated in owed and len(owed) == 2
    [blocker] = owed[migrated].blockers
    assert memory in blocker.trail and blocker.trail[0] == reading
    rippl.reinstate(reading, reason="it was right", by="alice")
    assert rippl.get(memory).state is State.IN
    assert rippl.compensations() == []
    [again] = rippl.run("T2").decide("turn-m2", [migrate("m2")], context=["recall-m1"])
    assert again.allowed, again.reason


def test_a_memory_someone_else_also_stated_stays(rippl: Rippl) -> None:
    reading, memory = scout_remembers(rippl)
    rippl.add_source("SRC-oncall", "On-call engineer checked shard 09 by hand", kind="human")
    rippl.add_claim(memory, TEXT, sources=["SRC-oncall"])  # the same statement, its own source
    call = recall_and_migrate(rippl)
    rippl.retract(reading, reason="stale cache", by="monitor")
    assert rippl.get(memory).state is State.IN
    assert rippl.run("T2").judge(call).allowed


def test_another_run_writing_it_from_its_own_reading_keeps_it(rippl: Rippl) -> None:
    reading, memory = scout_remembers(rippl)
    t3 = rippl.run("T3", agent="scout")
    other = ToolCall(name="get_health_from_replica", args={"shard": "09"}, id="d1")
    t3.decide("u1", [other], context=[])
    t3.executed(other, "replica says shard 09 is healthy")
    save = ToolCall(name="remember", args={"text": TEXT}, id="d2")
    t3.decide("u2", [save], context=["u1", "d1"])
    with writing(Writing(RunRef("T3"), call="d2")):
        rippl.believe("ops", rippl.add_claim(None, TEXT).id, topic="shards/09-health")
    rippl.retract(reading, reason="stale cache", by="monitor")
    assert rippl.get(memory).state is State.IN  # T3's write still holds it


def test_a_premise_stated_before_the_write_holds_on_its_own(rippl: Rippl) -> None:
    stated = rippl.add_claim(None, TEXT).id  # a person said so, naming no source
    reading, memory = scout_remembers(rippl)
    assert memory == stated and rippl.get(memory).justifications == []
    rippl.retract(reading, reason="stale cache", by="monitor")
    assert rippl.get(memory).state is State.IN


def test_outside_a_run_a_write_keeps_the_sources_its_caller_names(rippl: Rippl) -> None:
    rippl.add_source("SRC-1", "dashboard")
    claim = rippl.add_claim(None, TEXT, sources=["SRC-1"]).id
    rippl.believe("ops", claim, topic="shards/09-health")
    node = rippl.get(claim)
    assert node.justifications == [["SRC-1"]]


def test_a_call_never_recorded_writes_a_memory_that_does_not_hold(rippl: Rippl) -> None:
    """Fail closed: a write claiming to come from a call capture never recorded rests on a
    retracted claim that it was, until a person reinstates it."""
    rippl.run("T1").decide("t1", [HEALTH], context=[])
    with writing(Writing(RunRef("T1"), call="ghost")):
        memory = rippl.add_claim(None, TEXT).id
        rippl.believe("ops", memory, topic="shards/09-health")
    assert rippl.get(memory).state is State.OUT
    belief = rippl.ask("ops", "shards/09-health")
    assert belief is not None and belief.claim_state is State.OUT


def test_a_memory_written_after_a_veto_hands_the_veto_on(rippl: Rippl) -> None:
    """T1 is vetoed on migrate(09), reads the veto, and saves a note to memory: a run that
    recalls the note and repeats the act stays vetoed, naming the veto and the memory."""
    t1 = rippl.run("T1", agent="scout")
    t1.decide("t1", [HEALTH], context=[])
    reading = t1.executed(HEALTH, "shard 09: healthy")
    rippl.retract(reading, reason="stale cache", by="monitor")
    [veto] = t1.decide("t2", [migrate("v1")], context=["t1", "c1"])
    assert not veto.allowed
    note = ToolCall(name="remember", args={"text": "migrate shard 09 later"}, id="c3")
    t1.decide("t3", [note], context=["t1", "c1", "t2", "v1"], told=["v1"])
    with writing(Writing(RunRef("T1"), call="c3")):
        memory = rippl.add_claim(None, "Shard 09 still needs its migration").id
        rippl.believe("ops", memory, topic="todo/09")
    assert rippl.get(memory).state is State.IN  # the note itself holds (the premise left)
    t2 = rippl.run("T2", agent="operator")
    t2.observe([memory], ref="recall")
    [again] = t2.decide("r1", [migrate("m1")], context=["recall"])
    assert not again.allowed
    assert "vetoed at turn t2 of run T1" in again.reason
    assert "through the memory 'Shard 09 still needs its migration'" in again.reason
    [other] = t2.decide("r2", [migrate("m2", shard="07")], context=["recall"])
    assert other.allowed, other.reason


def test_a_memory_is_no_fresher_than_the_readings_it_was_written_from(
        rippl: Rippl, clock: Clock) -> None:
    reading, memory = scout_remembers(rippl, fresh_for=300)
    call = recall_and_migrate(rippl)
    assert rippl.run("T2").judge(call).allowed
    clock.advance(minutes=12)
    stale = rippl.run("T2").judge(call)
    assert not stale.allowed and "denied as stale" in stale.reason
    assert [e.premise for e in stale.expired] == [reading]  # which reading to take again
    assert stale.blockers == []  # stale is not false
    assert rippl.get(memory).state is State.IN
    # a fresh re-read with the same output refreshes it
    t1 = rippl.run("T1")
    again = HEALTH.model_copy(update={"id": "c9"})
    t1.decide("t9", [again], context=[])
    t1.executed(again, "shard 09: healthy", fresh_for=300)
    assert rippl.run("T2").judge(call).allowed


def test_a_superseding_re_read_supersedes_the_memory(rippl: Rippl) -> None:
    reading, _ = scout_remembers(rippl, fresh_for=300)
    call = recall_and_migrate(rippl)
    t3 = rippl.run("T3")
    newer = HEALTH.model_copy(update={"id": "n1"})
    t3.decide("n", [newer], context=[])
    t3.executed(newer, "shard 09: degraded", fresh_for=300)
    verdict = rippl.run("T2").judge(call)
    assert not verdict.allowed and "denied as superseded" in verdict.reason
    assert verdict.expired[0].premise == reading and verdict.expired[0].superseded_run == "T3"


def test_a_record_saved_in_a_run_rests_on_the_run_not_on_the_store(rippl: Rippl) -> None:
    """CrewAI's storage: records saved while a run writes (no source named) rest on what the
    run carried, instead of the store's own source."""
    t1 = rippl.run("T1", agent="scout")
    t1.decide("t1", [HEALTH], context=[])
    reading = t1.executed(HEALTH, "shard 09: healthy")
    store = rippl.records("crew")
    with writing(Writing(RunRef("T1"), since=0)):  # the run's own save (a task output)
        [saved] = store.save([Record(id="r1", content=TEXT)])
    assert saved.claim_state is State.IN
    rippl.retract(reading, reason="stale cache", by="monitor")
    assert store.get("r1").claim_state is State.OUT  # type: ignore[union-attr]
    outside = rippl.records("notes")
    [kept] = outside.save([Record(id="n1", content="Shard 07 is healthy")])
    assert rippl.get(kept.claim).state is State.IN and rippl.get(kept.claim).justifications


async def test_the_async_handle_justifies_the_same_way(
        open_rippl: Callable[..., Rippl], backend: dict[str, object]) -> None:
    sync = open_rippl()
    t1 = sync.run("T1")
    t1.decide("t1", [HEALTH], context=[])
    reading = t1.executed(HEALTH, "shard 09: healthy")
    t1.decide("t2", [REMEMBER], context=["t1", "c1"])
    async with await AsyncRippl.open(graph=sync.graph, **backend) as rippl:
        with writing(Writing(RunRef("T1"), call="c2")):
            memory = (await rippl.add_claim(None, TEXT)).id
            await rippl.believe("ops", memory, topic="shards/09-health")
        await rippl.retract(reading, reason="stale cache", by="monitor")
        assert (await rippl.get(memory)).state is State.OUT


def test_the_beliefs_history_says_its_premise_fell_not_that_it_was_dropped(rippl: Rippl) -> None:
    reading, memory = scout_remembers(rippl)
    rippl.retract(reading, reason="stale cache", by="monitor")
    [interval] = rippl.timeline("ops", "shards/09-health")
    assert interval.valid_to is None and interval.cause == "believe"  # still held: not dropped
    assert interval.rests_on_retracted and not interval.claim_retracted
    assert "a premise it rests on was retracted (nobody dropped the belief" in interval.describe()
    explained = rippl.explain(memory)
    [writer] = [a for j in explained.justifications for a in j.antecedents]
    assert writer.id.startswith("WRT-") and writer.status == "Retracted"
    assert explained.blockers[0].premise == reading
    rippl.retract(memory, reason="the note itself was wrong", by="alice")
    assert rippl.ask("ops", "shards/09-health").claim_retracted  # type: ignore[union-attr]


def test_a_memory_as_of_a_time_is_its_status_then_as_known_then(rippl: Rippl) -> None:
    """Bitemporal: a retraction of the reading valid from `at`, recorded later, makes the memory
    OUT from `at` on, and only for what is known after it was recorded."""
    import time
    from datetime import UTC, datetime

    def moment() -> datetime:
        time.sleep(0.01)
        found = datetime.now(UTC)
        time.sleep(0.01)
        return found

    reading, memory = scout_remembers(rippl)
    held = moment()  # the memory holds
    found_false = moment()  # when the reading was false from (valid time)
    before_known = moment()  # before anyone recorded it
    rippl.retract(reading, reason="stale cache", by="monitor", at=found_false)
    after = moment()
    then = rippl.ask("ops", "shards/09-health", as_of=held)
    assert then is not None and then.claim_state is State.IN and then.claim_state_now is State.OUT
    later = rippl.ask("ops", "shards/09-health", as_of=after)
    assert later is not None and later.claim_state is State.OUT
    unknown = rippl.ask("ops", "shards/09-health", as_of=after, known_at=before_known)
    assert unknown is not None and unknown.claim_state is State.IN  # not known yet then
    assert not rippl.check(memory, as_of=after).allowed  # the memory claim itself, as of then
    assert rippl.check(memory, as_of=after, known_at=before_known).allowed


def test_a_memory_keeps_resting_on_its_reading_when_the_writing_run_is_pruned(
        rippl: Rippl) -> None:
    """Pruning the run that wrote a memory removes the run's capture, not what the memory rests
    on: the writer and the reading under it stay, so a later retraction still reaches it."""
    from datetime import UTC, datetime, timedelta

    reading, memory = scout_remembers(rippl)
    rippl.run("T1").close()
    assert "T1" in rippl.prune_runs(older_than=datetime.now(UTC) + timedelta(seconds=1))
    [writer] = rippl.get(memory).justifications[0]
    assert writer.startswith("WRT-") and rippl.get(writer).justifications[0] != []
    rippl.retract(reading, reason="stale cache", by="monitor")
    assert rippl.get(memory).state is State.OUT
