"""Issue 14, item 7, on real FalkorDB: `why_changed` skips boundaries where nothing changed, each
version's `cause` names the operation that wrote it, and a read of the past gives the claim's
status as Rippl knew it then (next to its status now)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from rippl_core import NotFoundError, Rippl, State

BASE = (datetime.now(UTC) - timedelta(days=100)).replace(hour=0, minute=0, second=0, microsecond=0)
MS = timedelta(milliseconds=1)


def day(n: float) -> datetime:
    """A time n days after BASE (always in the past)."""
    return BASE + timedelta(days=n)


@pytest.fixture
def world(rippl: Rippl) -> Rippl:
    for i in range(1, 4):
        rippl.add_source(f"S{i}", f"source {i}")
        rippl.add_claim(f"C{i}", f"claim {i}", sources=[f"S{i}"])
    return rippl


def change(world: Rippl, at: datetime, **kwargs: object) -> tuple[datetime, str | None, str | None]:
    found = world.why_changed("ag", "t", at, **kwargs)  # type: ignore[arg-type]
    return (found.changed_at, found.before.claim if found.before else None,
            found.after.claim if found.after else None)


def ro_queries(rippl: Rippl) -> int:
    """Read-only graph queries the server has answered so far (its command statistics)."""
    stats = {k.lower(): v for k, v in rippl.redis.info("commandstats").items()}
    return int(stats["cmdstat_graph.ro_query"]["calls"])


# ------------------------------------------------------------------------- why_changed


def test_why_changed_skips_the_boundaries_of_a_split_by_revise(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1), evidence=["S1"])
    world.believe("ag", "C2", topic="t", valid_from=day(8), recorded_at=day(2))
    # a correction that repeats what was held splits [1, 8) into three equal intervals
    world.revise("ag", "t", "C1", valid_from=day(3), valid_to=day(5), evidence=["S1"],
                 recorded_at=day(3))
    assert [(b.valid_from, b.valid_to) for b in world.timeline("ag", "t")][:3] == [
        (day(1), day(3)), (day(3), day(5)), (day(5), day(8))]
    assert change(world, day(6)) == (day(8), "C1", "C2")     # not the no-op boundary at 5
    assert change(world, day(4.4)) == (day(1), None, "C1")   # past both no-op boundaries
    assert change(world, day(3)) == (day(1), None, "C1")     # at a no-op boundary itself
    found = world.why_changed("ag", "t", day(6))
    assert found.new_evidence == [] and found.dropped_evidence == ["S1"]
    # as known before the correction there was no split, and the same answers
    assert change(world, day(6), known_at=day(3) - MS) == (day(8), "C1", "C2")


def test_why_changed_skips_a_split_by_believing_the_same_claim_again(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(3), recorded_at=day(3), evidence=["S1"])
    # a late adoption of the same claim, ending where the held one starts: two equal intervals
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(4), evidence=["S1"])
    # a new note on the held claim splits it too, with the same claim and evidence on both sides
    world.believe("ag", "C1", topic="t", valid_from=day(5), recorded_at=day(5), note="rechecked")
    world.believe("ag", "C2", topic="t", valid_from=day(6.5), recorded_at=day(6))
    assert [b.valid_from for b in world.timeline("ag", "t")] == [day(1), day(3), day(5), day(6.5)]
    assert change(world, day(3)) == (day(1), None, "C1")
    assert change(world, day(5.5)) == (day(6.5), "C1", "C2")
    # new evidence on the same claim is a change
    world.believe("ag", "C1", topic="t", valid_from=day(2), recorded_at=day(7), evidence=["S2"])
    found = world.why_changed("ag", "t", day(2.2))
    assert (found.changed_at, found.new_evidence) == (day(2), ["S2"])
    # ... and so is dropping it: [2, 3) holds S1+S2, from 3 on S1 only
    assert world.why_changed("ag", "t", day(2.9)).dropped_evidence == ["S2"]


def test_no_op_boundaries_at_the_start_and_the_end(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1), evidence=["S1"])
    world.revise("ag", "t", "C1", valid_from=day(3), evidence=["S1"], recorded_at=day(2))
    world.revise("ag", "t", "C1", valid_from=day(1), valid_to=day(2), evidence=["S1"],
                 recorded_at=day(3))
    assert [(b.valid_from, b.valid_to) for b in world.timeline("ag", "t")] == [
        (day(1), day(2)), (day(2), day(3)), (day(3), None)]
    # the only change is the adoption: from every point, and past the open end
    for t in (0, 1, 2, 2.5, 3, 50):
        assert change(world, day(t)) == (day(1), None, "C1"), t
    # closed: the drop is a change to nothing, past the no-op boundaries before it
    world.retract_belief("ag", "t", at=day(9), recorded_at=day(4))
    assert change(world, day(7)) == (day(9), "C1", None)
    assert change(world, day(20)) == (day(9), "C1", None)
    assert change(world, day(4)) == (day(1), None, "C1")


def test_why_changed_without_any_belief_says_so(world: Rippl) -> None:
    with pytest.raises(NotFoundError, match=r"ag has no recorded belief about t .*believe"):
        world.why_changed("ag", "t", day(1))
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(5))
    with pytest.raises(NotFoundError, match=r"no recorded belief about t \(as known at"):
        world.why_changed("ag", "t", day(1), known_at=day(4))
    assert change(world, day(1)) == (day(1), None, "C1")


def test_a_long_run_of_equal_intervals_is_walked_in_a_few_queries(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(0), recorded_at=day(0), evidence=["S1"])
    world.believe("ag", "C2", topic="t", valid_from=day(90), recorded_at=day(0))
    for i in range(1, 81):  # 80 corrections repeating the belief: 80 no-op boundaries
        world.revise("ag", "t", "C1", valid_from=day(i), valid_to=day(i + 0.5), evidence=["S1"],
                     recorded_at=day(1))
    assert len(world.timeline("ag", "t")) == 162
    before = ro_queries(world)
    assert change(world, day(40.2)) == (day(0), None, "C1")  # both walks cross ~80 boundaries
    assert change(world, day(88)) == (day(90), "C1", "C2")
    # pages of 8, 64, 512 rows: a handful of round trips, not two reads per boundary crossed
    assert 0 < ro_queries(world) - before <= 30


# ----------------------------------------------------------------------------- cause


def test_each_version_names_the_operation_that_wrote_it(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1))
    world.believe("ag", "C2", topic="t", valid_from=day(3), recorded_at=day(3))
    world.retract_belief("ag", "t", at=day(5), reason="disproved", recorded_at=day(5))
    world.believe("ag", "C3", topic="t", valid_from=day(7), recorded_at=day(7))
    world.revise("ag", "t", "C1", valid_from=day(8), valid_to=day(9), recorded_at=day(8))
    assert [(b.claim, b.valid_from, b.cause, b.reason) for b in world.timeline("ag", "t")] == [
        ("C1", day(1), "believe", None),          # closed by the next adoption
        ("C2", day(3), "retract_belief", "disproved"),
        ("C3", day(7), "revise", None),           # the part a correction kept
        ("C1", day(8), "revise", None),
        ("C3", day(9), "revise", None)]
    # each earlier version keeps the cause of the write that made it
    assert [(b.claim, b.cause, b.valid_to) for b in world.timeline("ag", "t", known_at=day(4))] \
        == [("C1", "believe", day(3)), ("C2", "believe", None)]
    assert world.ask("ag", "t", as_of=day(4)).cause == "retract_belief"  # type: ignore[union-attr]


# ------------------------------------------------------------------- status as known then


def test_a_read_of_the_past_gives_the_status_then_and_now(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1), evidence=["S1"])
    world.believe("ag", "C2", topic="u", valid_from=day(1), recorded_at=day(1), evidence=["S2"])
    retracted_at = datetime.now(UTC)
    time.sleep(0.005)  # the retraction is recorded in a later millisecond than `retracted_at`
    world.retract("S1", reason="the dashboard was stale", by="oncall")  # valid from now
    then = world.ask("ag", "t", as_of=day(2))
    assert then is not None and then.claim_state is State.IN and not then.rests_on_retracted
    assert then.claim_status == "Verified" and then.retracted_evidence == []
    assert then.claim_state_now is State.OUT and then.claim_status_now == "Retracted"
    assert "Retracted now" in then.describe() and "WARNING" not in then.describe()
    # as known before the retraction was recorded, even of today
    assert world.ask("ag", "t", known_at=retracted_at).claim_state is State.IN  # type: ignore[union-attr]
    # now, and a read of now through as_of: retracted
    for now in (world.ask("ag", "t"), world.ask("ag", "t", as_of=datetime.now(UTC))):
        assert now is not None and now.rests_on_retracted and now.retracted_evidence == ["S1"]
        assert now.claim_state_now is State.OUT
    held = {b.topic: b for b in world.beliefs("ag", as_of=day(2))}
    assert (held["t"].claim_state, held["t"].claim_state_now) == (State.IN, State.OUT)
    assert (held["u"].claim_state, held["u"].claim_state_now) == (State.IN, State.IN)
    assert {b.topic: b.rests_on_retracted for b in world.beliefs("ag")} == {"t": True, "u": False}


def test_a_retraction_recorded_late_counts_from_its_valid_time_once_known(world: Rippl) -> None:
    world.believe("ag", "C1", topic="t", valid_from=day(1), recorded_at=day(1), evidence=["S1"])
    world.add_decision("D1", "act on it", premises=["C1"])
    recorded = datetime.now(UTC)
    time.sleep(0.005)  # the retraction is recorded in a later millisecond than `recorded`
    world.retract("S1", reason="wrong from day 3 on", by="oncall", at=day(3))
    assert world.ask("ag", "t", as_of=day(2)).claim_state is State.IN  # type: ignore[union-attr]
    late = world.ask("ag", "t", as_of=day(4))
    assert late is not None and late.rests_on_retracted and late.retracted_evidence == ["S1"]
    unknown_yet = world.ask("ag", "t", as_of=day(4), known_at=recorded)
    assert unknown_yet is not None and not unknown_yet.rests_on_retracted
    assert unknown_yet.claim_state_now is State.OUT
    # the verdict of an as-of check agrees with the belief read
    for as_of, known in ((day(2), None), (day(4), None), (day(4), recorded)):
        belief = world.ask("ag", "t", as_of=as_of, known_at=known)
        verdict = world.check("D1", as_of=as_of, known_at=known)
        assert belief is not None and verdict.allowed is not belief.rests_on_retracted
