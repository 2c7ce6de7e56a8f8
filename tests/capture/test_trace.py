"""Reading captured runs back: the list of runs with their counts and filters, one run's trace
(turns in order, what each rested on, calls with verdicts and executions), and the capture events
(a turn recorded, a call vetoed, a call executed) on both backends, sync and async."""

from __future__ import annotations

import pytest
from helpers_capture import ANNOUNCE, HEALTH, owed_and_vetoed

from rippl_core import AsyncRippl, NotFoundError, Rippl
from rippl_core.testing import Clock


def test_runs_lists_each_run_with_its_counts_and_filters(rippl: Rippl) -> None:
    owed_and_vetoed(rippl)
    rippl.run("quiet", agent="bot", framework="crewai").decide("t1", [HEALTH])
    listed = {r.id: r for r in rippl.runs()}
    thread = listed["thread-1"]
    assert (thread.agent, thread.framework, thread.turns, thread.calls, thread.vetoes,
            thread.open_compensations) == ("ops", "langgraph", 3, 3, 1, 1)
    assert thread.started is not None and thread.last_active is not None
    assert (listed["quiet"].turns, listed["quiet"].vetoes, listed["quiet"].open_compensations) == (1, 0, 0)
    assert [r.id for r in rippl.runs(agent="bot")] == ["quiet"]
    assert [r.id for r in rippl.runs(framework="langgraph")] == ["thread-1"]
    assert [r.id for r in rippl.runs(open_compensations=True)] == ["thread-1"]
    assert rippl.runs(since="2999-01-01T00:00:00Z") == []
    assert rippl.runs(until="2000-01-01T00:00:00Z") == []


def test_a_run_trace_shows_turns_what_they_rested_on_and_verdicts(rippl: Rippl) -> None:
    claim = owed_and_vetoed(rippl)
    trace = rippl.run_trace("thread-1")
    assert [t.turn for t in trace.turns] == ["t1", "t2", "t3"]
    t2 = trace.turns[1]
    rested = {r.id: r for r in t2.rested_on}
    assert rested[claim].retracted and rested[claim].state == "OUT"
    assert rested[claim].observed_at is not None and rested[claim].fresh_until is not None
    assert rested[claim].freshness == "fresh"
    [announce] = t2.calls
    assert announce.tool == "announce_window" and announce.executed_at is not None
    assert announce.owed and announce.result is not None and "announced" in announce.result.text
    [migrate] = trace.turns[2].calls
    assert migrate.verdict == "vetoed" and claim in migrate.reason and migrate.executed_at is None
    [health] = trace.turns[0].calls
    assert health.verdict == "allowed" and health.result is not None
    assert health.result.id == claim
    assert [c.action for c in trace.calls] == [health.action, announce.action, migrate.action]
    assert (trace.run.vetoes, trace.run.open_compensations) == (1, 1)
    with pytest.raises(NotFoundError):
        rippl.run_trace("nope")


@pytest.mark.asyncio(loop_scope="session")
async def test_async_reads_and_capture_events(rippl: Rippl, arippl: AsyncRippl) -> None:
    with rippl.subscribe() as stream:
        owed_and_vetoed(rippl, "thread-2")
        seen = []
        while (event := stream.get(timeout=2.0)) is not None:
            seen.append(event)
    kinds = [(e.type, e.run) for e in seen if e.run == "thread-2"]
    assert kinds.count(("turn_recorded", "thread-2")) == 3
    assert ("action_executed", "thread-2") in kinds and ("call_vetoed", "thread-2") in kinds
    assert [r.id for r in await arippl.runs()] == ["thread-2"]
    trace = await arippl.run_trace("thread-2")
    assert [t.turn for t in trace.turns] == ["t1", "t2", "t3"]


def test_a_call_on_a_reading_gone_stale_is_shown_stale(rippl: Rippl) -> None:
    with Clock("2026-12-01T10:00:00Z") as clock:
        run = rippl.run("reader", agent="ops")
        run.decide("t1", [HEALTH])
        claim = run.executed(HEALTH, "healthy", fresh_for=60)
        [fresh] = run.decide("t2", [ANNOUNCE], context=["c1"])
        assert fresh.allowed
        assert rippl.run_trace("reader").turns[1].calls[0].verdict == "allowed"
        clock.advance(minutes=5)
        [announce] = rippl.run_trace("reader").turns[1].calls
        assert announce.verdict == "stale" and f"{claim} (stale)" in announce.reason
        [rested] = [r for r in rippl.run_trace("reader").turns[1].rested_on if r.id == claim]
        assert rested.freshness == "stale"


def test_a_resolved_compensation_is_no_longer_open_in_the_runs_view(rippl: Rippl) -> None:
    owed_and_vetoed(rippl)
    [owed] = [c for c in rippl.run_trace("thread-1").calls if c.owed]
    rippl.resolve_compensation(owed.action, resolution="compensated", note="window retracted",
                               by="alice")
    [thread] = rippl.runs(agent="ops")
    assert thread.open_compensations == 0 and thread.vetoes == 1
    assert rippl.runs(open_compensations=True) == []
    assert not any(c.owed for c in rippl.run_trace("thread-1").calls)
