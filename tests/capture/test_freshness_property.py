"""Property: freshness and supersession agree with a plain reference, on random runs.

Several runs read two shards' health (outputs drawn from a few, freshness from a few, some reads
without freshness), time passes, turns rest on random subsets of a run's readings, earlier calls are
judged again, and past verdicts are asked for (`check(as_of=...)`). The reference is the rule of
docs/design.md ("Rippl notices") written plainly: a reading of output X at t is valid from t until
t + fresh_for and until the first later reading of the same tool and arguments with another output;
a claim is fresh while one of its readings is; a call is allowed while every claim it rests on is
fresh. Nothing is ever a compensation (stale is not false).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import Rippl, ToolCall
from rippl_core.testing import Clock

START = 1_796_119_200_000  # 2026-12-01T10:00:00Z
OUTPUTS = ("healthy", "degraded", "down")
FRESH = (60.0, 300.0, None)


@dataclass(frozen=True)
class Reading:
    run: str
    ref: str
    shard: str
    output: str
    at: int
    fresh_for: float | None


def valid_until(reading: Reading, readings: list[Reading]) -> float:
    """Where a reading's validity ends: its freshness, or the first later differing reading (later
    in the order they were recorded: two readings may share a millisecond)."""
    end = float("inf") if reading.fresh_for is None else reading.at + reading.fresh_for * 1000
    after = readings[readings.index(reading) + 1:]
    later = [r.at for r in after if r.shard == reading.shard and r.output != reading.output]
    return min(end, *later) if later else end


def fresh(claim: tuple[str, str], t: int, readings: list[Reading], known: int | None = None) -> bool:
    """Whether the claim (shard, output) is fresh at t: one of its readings valid then (as known
    at `known`: readings and supersessions recorded by then)."""
    seen = [r for r in readings if known is None or r.at <= known]
    return any(r.at <= t < valid_until(r, seen) for r in seen if (r.shard, r.output) == claim)


steps = st.lists(st.one_of(
    st.tuples(st.just("read"), st.integers(0, 2), st.integers(0, 1), st.integers(0, 2),
              st.integers(0, 2)),                                    # run, shard, output, freshness
    st.tuples(st.just("wait"), st.integers(1, 7)),                   # minutes pass
    st.tuples(st.just("turn"), st.integers(0, 2), st.integers(0, 255)),  # run, subset of readings
    st.tuples(st.just("judge"), st.integers(0, 50)),                 # an earlier call, again
    st.tuples(st.just("asof"), st.integers(0, 50), st.integers(0, 40)),  # a past verdict
), min_size=2, max_size=14)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=steps)
def test_verdicts_agree_with_the_reference(open_rippl: Callable[..., Rippl],
                                           plan: list[tuple[int | str, ...]]) -> None:
    rippl = open_rippl()
    readings: list[Reading] = []
    calls: list[tuple[str, ToolCall, set[tuple[str, str]], int]] = []  # run, call, claims, at
    with Clock(START) as clock:
        for n, (kind, *values) in enumerate(plan):
            if kind == "read":
                who, shard, output, freshness = (int(v) for v in values)
                run_id, ref = f"run{who}", f"r{n}"
                reading = Reading(run_id, ref, "0" + str(7 + 2 * shard), OUTPUTS[output],
                                  clock.now, FRESH[freshness])
                call = ToolCall(name="get_health", args={"shard": reading.shard}, id=ref)
                run = rippl.run(run_id)
                run.decide(f"t{n}", [call], context=[])
                run.executed(call, f"shard {reading.shard}: {reading.output}",
                             fresh_for=reading.fresh_for, reads=True)
                readings.append(reading)
            elif kind == "wait":
                clock.advance(minutes=int(values[0]))
            elif kind == "turn":
                who, bits = int(values[0]), int(values[1])
                own = [r for r in readings if r.run == f"run{who}"]
                chosen = [r for i, r in enumerate(own) if bits >> (i % 8) & 1]
                call = ToolCall(name="migrate", args={"n": n}, id=f"m{n}")
                [verdict] = rippl.run(f"run{who}").decide(f"t{n}", [call],
                                                          context=[r.ref for r in chosen])
                claims = {(r.shard, r.output) for r in chosen}
                expected = all(fresh(c, clock.now, readings) for c in claims)
                assert verdict.allowed == expected, (verdict.reason, claims, readings)
                if not expected:
                    assert verdict.expired and not verdict.blockers
                calls.append((f"run{who}", call, claims, clock.now))
            elif kind == "judge" and calls:
                run_id, call, claims, _ = calls[int(values[0]) % len(calls)]
                verdict = rippl.run(run_id).judge(call)
                expected = all(fresh(c, clock.now, readings) for c in claims)
                assert verdict.allowed == expected, (verdict.reason, claims, readings)
                now = rippl.check(str(verdict.target))  # the pre-flight check of its action
                assert now.allowed == expected, (now.reason, claims, readings)
            elif kind == "asof" and calls:
                run_id, call, claims, at = calls[int(values[0]) % len(calls)]
                t = at + int(values[1]) * 30_000
                [target] = [v for v in [rippl.run(run_id).judge(call)]]  # the action's id
                past = rippl.check(str(target.target), as_of=t, known_at=clock.now)
                assert past.allowed == all(fresh(c, t, readings, known=clock.now) for c in claims), \
                    (past.reason, t, claims, readings)
        assert rippl.compensations() == []
        assert rippl.reviews(None) == [] and rippl.receipts() == []
