"""One time parser for every time a write is given: a bad time (out of the years 1 to 9999, naive,
malformed, of the wrong type) is refused with InvalidInputError before anything is written; and
every read copes with any time already stored (out of range, written before Rippl checked or by
hand). Both backends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from helpers_core import fresh, snapshot, version
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import InvalidInputError, Rippl
from rippl_core._runtime.timeutil import EARLIEST, END_OF_TIME, from_ms, to_ms
from rippl_core._runtime.wire import Query

AHEAD = timezone(timedelta(hours=5))
BEHIND = timezone(timedelta(hours=-5))
BAD_TIMES: list[Any] = [
    END_OF_TIME, END_OF_TIME + 1, EARLIEST - 1, 10**15, -(10**15), 2**63 - 1, -(2**63),
    "9999-12-31T23:30:00-05:00",      # after the year 9999 once in UTC
    datetime(1, 1, 1, 1, tzinfo=AHEAD),  # before the year 1 once in UTC
    "0001-01-01T00:00:00+05:00", "0000-01-01T00:00:00Z", "2026-13-01T00:00:00Z", "yesterday", "",
    datetime(2026, 1, 1), "2026-01-01T00:00:00", 1.5, True, [2026], {"at": 1},
]

Write = Callable[[Rippl, Any], Any]
WRITES: dict[str, Write] = {
    "retract at": lambda r, t: r.retract("C1", reason="r", by="x", at=t),
    "reinstate at": lambda r, t: r.reinstate("C2", reason="r", by="x", at=t),
    "believe valid_from": lambda r, t: r.believe("ag", "C1", topic="t2", valid_from=t),
    "believe recorded_at": lambda r, t: r.believe("ag", "C1", topic="t2", recorded_at=t),
    "retract_belief at": lambda r, t: r.retract_belief("ag", "t", at=t),
    "retract_belief recorded_at": lambda r, t: r.retract_belief("ag", "t", recorded_at=t),
    "revise valid_from": lambda r, t: r.revise("ag", "t", "C1", valid_from=t),
    "revise valid_to": lambda r, t: r.revise("ag", "t", "C1", valid_from="2026-01-01T00:00:00Z",
                                             valid_to=t),
    "revise recorded_at": lambda r, t: r.revise("ag", "t", "C1", valid_from="2026-01-01T00:00:00Z",
                                                recorded_at=t),
    "mark_executed at": lambda r, t: r.mark_executed("A1", at=t),
    "prune_runs older_than": lambda r, t: r.prune_runs(older_than=t),
    "propose_retraction_where since": lambda r, t: r.propose_retraction_where(
        since=t, reason="r", by="x"),
    "propose_retraction_where until": lambda r, t: r.propose_retraction_where(
        until=t, reason="r", by="x"),
    "records delete older_than": lambda r, t: r.records("s").delete(older_than=t),
}


@pytest.fixture(scope="module", params=["embedded", "server"])
def shared(request: pytest.FixtureRequest) -> Iterator[Rippl]:
    backend = ({"path": request.getfixturevalue("embedded_db")} if request.param == "embedded"
               else {"url": request.getfixturevalue("falkordb_server").url})
    with fresh(backend) as handle:
        handle.add_source("S1", "source")
        handle.add_claim("C1", "holds", sources=["S1"])
        handle.add_claim("C2", "retracted")
        handle.retract("C2", reason="wrong", by="x")
        handle.add_decision("D1", "decide", premises=["C1"])
        handle.add_action("A1", "act", decisions=["D1"], tool="t", args={})
        handle.believe("ag", "C1", topic="t", valid_from="2026-01-01T00:00:00Z")
        yield handle


@pytest.mark.parametrize("time", BAD_TIMES, ids=repr)
@pytest.mark.parametrize("write", list(WRITES))
def test_a_bad_time_is_refused_before_anything_is_written(shared: Rippl, write: str,
                                                          time: Any) -> None:
    before, stamp = snapshot(shared), version(shared)
    with pytest.raises(InvalidInputError):
        WRITES[write](shared, time)
    assert snapshot(shared) == before and version(shared) == stamp
    shared.history("C1")  # and what is stored still reads
    shared.history("C2")


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_the_parser_takes_exactly_the_times_a_datetime_can_show(value: int) -> None:
    if EARLIEST <= value < END_OF_TIME:
        assert to_ms(value) == value
        assert from_ms(value) == datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=value)
        moment = from_ms(value)
        assert moment is not None and to_ms(moment) == value  # round trip
    else:
        with pytest.raises(InvalidInputError, match="years 1 and 9999"):
            to_ms(value)
        moment = from_ms(value)  # a stored one still reads, as the nearest end of the range
        assert moment is not None and moment.year in (1, 9999)


@settings(max_examples=200, deadline=None)
@given(st.datetimes(timezones=st.timezones()))
def test_aware_datetimes_in_range_round_trip(moment: datetime) -> None:
    try:
        value = to_ms(moment)
    except InvalidInputError:  # within a few hours of the ends, shifted out by its offset
        assert moment.year in (1, 9999)
        return
    back = from_ms(value)
    assert back is not None
    assert abs((back - moment).total_seconds()) < 0.001


def test_reads_cope_with_any_stored_time(shared: Rippl) -> None:
    """Times written before Rippl checked them (or by hand) read as the nearest end of the range:
    history, get, explain, ask, timeline and check as of a time never raise."""
    graph = shared.keys.graph
    for cypher in ("MATCH (c:Change {node: 'C2'}) SET c.valid_from = 100000000000000000",
                   "MATCH (n:Node {id: 'C2'}) SET n.retracted_at = -100000000000000000, "
                   "n.created_at = 99999999999999999",
                   "MATCH ()-[b:BELIEVES]->() SET b.recorded_at = -99999999999999999"):
        shared.redis.execute_command("GRAPH.QUERY", graph, Query(cypher).command(), "--compact")
    assert [c.valid_from.year for c in shared.history("C2")][-1] == 9999
    assert shared.get("C2").created_at.year == 9999  # type: ignore[union-attr]
    shared.explain("C2")
    shared.timeline("ag", "t")
    shared.ask("ag", "t")
    shared.check("A1", as_of="2026-06-01T00:00:00Z")


def test_a_timeline_reads_times_stored_as_doubles_or_text(embedded_db: Any) -> None:
    """A timeline is read plain, where a stored double or a number stored as text both arrive as
    text: it reads them as the compact reply did (numbers; `from_ms` the nearest end of the range
    for one out of it), the same Beliefs as the general path of `_beliefs`."""
    from rippl_core.beliefs import cypher as beliefs_cypher
    from rippl_core.beliefs import memory

    with fresh({"path": embedded_db}) as handle:
        handle.add_source("S1", "source")
        handle.add_claim("C1", "holds", sources=["S1"])
        handle.add_claim("C2", "other", sources=["S1"])
        start = datetime(2026, 1, 1, tzinfo=UTC)
        for i in range(4):
            handle.believe("ag", "C1" if i % 2 else "C2", topic="t", evidence=["S1"],
                           valid_from=start + timedelta(days=i),
                           recorded_at=start + timedelta(days=i))
        for cypher in ("MATCH ()-[b:BELIEVES]->() WHERE b.valid_from > 0 "
                       "SET b.first_recorded = toFloat(b.first_recorded)",
                       "MATCH ()-[b:BELIEVES]->() WHERE b.valid_to < 9000000000000000 "
                       "SET b.valid_to = toString(b.valid_to)",
                       "MATCH ()-[b:BELIEVES]->() WITH b ORDER BY b.valid_from LIMIT 1 "
                       "SET b.valid_from = -1.0e17"):
            handle.redis.execute_command("GRAPH.QUERY", handle.keys.graph, Query(cypher).command(),
                                         "--compact")
        key = beliefs_cypher.belief_key("ag", "t")

        def general() -> Any:
            records = yield beliefs_cypher.visible(key, memory.now_ms())
            # the compact reply gives the times stored as text as text: as numbers they read
            rows = [replace(row, valid_to=float(row.valid_to)) for row in memory.rows_of(records)]
            return (yield from memory._beliefs(rows))

        got = handle.timeline("ag", "t")
        assert got == handle._driver.run(general)
        assert got[0].valid_from.year == 1 and len(got) == 4
