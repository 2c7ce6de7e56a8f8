"""Cypher builders of the bitemporal belief memory. Labels and relationship types are constants
from here and the core vocabulary; every value is a parameter.

A belief interval is one `BELIEVES` edge `(:Agent)-[:BELIEVES]->(:Claim)`, with the agent id, the
topic id and their pair `key` denormalised onto the edge, so every read starts with one scan of
the edge range index (`key`, or `agent`), never with a label scan. Open ends are stored as `OPEN`
(`END_OF_TIME`, a time after any datetime), never null, so "still open" is an equality and "not superseded" a
narrow range, both answered inside the index. Endpoint patterns carry no label on purpose: a
labelled endpoint makes FalkorDB scan the label first instead of the edge index.

The interval holding at valid time t, as known at K (`beliefs.memory.covering`): the open-ended interval
if it started by t, else the latest start at or before t, found in windows of growing width
(`latest_start`), closed if it ended by t. Each query is one index lookup returning the rows of one
key in a narrow time range. The current open-ended interval of a key also carries `head` = its key
(cleared when it is superseded): as known now, that lookup returns exactly one row (`head`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rippl_core._runtime.schema import Index, Schema
from rippl_core._runtime.timeutil import END_OF_TIME
from rippl_core._runtime.wire import Query

BELIEVES = "BELIEVES"
ABOUT = "ABOUT"
OPEN = END_OF_TIME  # the stored end of an interval still open

# Agents and topics have unique ids; belief intervals are read through BELIEVES edge indexes.
SCHEMA = Schema("3", unique_ids=("Agent", "Topic"), indexes=tuple(
    Index(BELIEVES, prop, on_edges=True)
    for prop in ("key", "agent", "valid_from", "valid_to", "recorded_at", "superseded_at", "head")))

# the columns of a belief row, in the order `beliefs.memory._row` reads them
ROW_FIELDS = ("agent", "topic", "claim", "valid_from", "valid_to", "recorded_at", "superseded_at",
              "evidence", "note", "cause", "reason", "first_recorded")
_ROW = ", ".join(f"r.{name}" for name in ROW_FIELDS) + ", c.text, c.state, c.retracted"
DAY_MS = 86_400_000
# Windows tried, in turn, for the latest start at or before a time: the first that holds any
# start answers; past the last one the key's rows are filtered without a time bound.
WINDOWS_MS = (DAY_MS // 24, DAY_MS, 32 * DAY_MS, 1024 * DAY_MS)

# How the index is used. FalkorDB pushes every `r.prop <op> value` on an indexed property into the
# range-index query. A narrow range or an equality is cheap there; a wide range (say `valid_to >
# $t`, true for half the graph) makes the index intersect thousands of numeric ranges and grows
# with the whole graph. So only the key, equalities and narrow windows are pushed; the other
# bounds are written `r.prop + 0 <op> value`, which the planner leaves to a filter over the few
# rows the index returned.


def belief_key(agent: str, topic: str) -> str:
    """The edge key of one agent's beliefs about one topic (ids are printable, so \\x1f is free)."""
    return f"{agent}\x1f{topic}"


def _visibility(where: list[str], params: dict[str, Any], known: int | None) -> None:
    """Visible at transaction time `known`, or current (never superseded) when it is None. The
    `superseded_at` bound is pushed to the index (for a recent `known` it is a narrow range: the
    far-future sentinel and the few recent supersessions); `recorded_at <= known` is filtered."""
    if known is None:
        where.append("r.superseded_at = $open")
        params["open"] = OPEN
    else:
        where += ["r.superseded_at > $known", "r.recorded_at + 0 <= $known"]
        params["known"] = known


def head(key: str) -> Query:
    """The current open-ended interval of `key` (the one row whose `head` is the key)."""
    return Query(f"MATCH ()-[r:{BELIEVES}]->(c) WHERE r.head = $key RETURN {_ROW}", {"key": key},
                 read_only=True)


def open_interval(key: str, t: int, known: int | None) -> Query:
    """The open-ended (still held) interval of `key`, if it started at or before `t`."""
    where = ["r.key = $key", "r.valid_to = $open", "r.valid_from + 0 <= $t"]
    params: dict[str, Any] = {"key": key, "t": t, "open": OPEN}
    _visibility(where, params, known)
    return Query(f"MATCH ()-[r:{BELIEVES}]->(c) WHERE {' AND '.join(where)} RETURN {_ROW}",
                 params, read_only=True)


def latest_start(key: str, t: int, known: int | None, window: int | None) -> Query:
    """The interval of `key` with the latest start at or before `t`: among starts in (t - window,
    t] (pushed to the index), or any start (window None: filtered). Visible at transaction time
    `known`, or current (never superseded) when `known` is None."""
    where = ["r.key = $key"]
    params: dict[str, Any] = {"key": key, "t": t}
    if window is not None:
        where += ["r.valid_from > $low", "r.valid_from <= $t"]
        params["low"] = t - window
    else:
        where.append("r.valid_from + 0 <= $t")
    _visibility(where, params, known)
    return Query(f"MATCH ()-[r:{BELIEVES}]->(c) WHERE {' AND '.join(where)} RETURN {_ROW} "
                 "ORDER BY r.valid_from DESC LIMIT 1", params, read_only=True)


def first_start_after(key: str, t: int, known: int) -> Query:
    """The interval of `key` with the earliest start after `t`, as recorded at `known`."""
    where, params = ["r.key = $key", "r.valid_from > $t"], {"key": key, "t": t}
    _visibility(where, params, known)
    return Query(f"MATCH ()-[r:{BELIEVES}]->(c) WHERE {' AND '.join(where)} RETURN {_ROW} "
                 "ORDER BY r.valid_from ASC LIMIT 1", params, read_only=True)


def neighbours(key: str, point: int, known: int | None, *, before: bool, limit: int,
               window: int | None) -> Query:
    """Up to `limit` intervals of `key` next to valid time `point`: those starting before it
    (`before`: the latest starts first) or at or after it (the earliest first), with starts
    within `window` of it (pushed to the index), or at any distance (window None: filtered).
    Visible at transaction time `known`, or current when it is None."""
    where = ["r.key = $key"]
    params: dict[str, Any] = {"key": key, "point": point}
    if window is None:
        where.append(f"r.valid_from + 0 {'<' if before else '>='} $point")
    elif before:
        where += ["r.valid_from >= $far", "r.valid_from < $point"]
        params["far"] = point - window
    else:
        where += ["r.valid_from >= $point", "r.valid_from < $far"]
        params["far"] = point + window
    _visibility(where, params, known)
    return Query(f"MATCH ()-[r:{BELIEVES}]->(c) WHERE {' AND '.join(where)} RETURN {_ROW} "
                 f"ORDER BY r.valid_from {'DESC' if before else 'ASC'} LIMIT {int(limit)}",
                 params, read_only=True)


def agent_covering(agent: str, t: int, known: int) -> Query:
    """Every interval of `agent` holding at `t`, as recorded at `known` (one per topic). The
    `valid_to > t` bound is pushed: narrow for a recent `t` (the sentinel and the few later ends)."""
    where = ["r.agent = $agent", "r.valid_to > $t", "r.valid_from + 0 <= $t"]
    params: dict[str, Any] = {"agent": agent, "t": t}
    _visibility(where, params, known)
    return Query(f"MATCH ()-[r:{BELIEVES}]->(c) WHERE {' AND '.join(where)} RETURN {_ROW}",
                 params, read_only=True)


def visible(key: str, known: int) -> Query:
    """The whole timeline of `key` as recorded at `known`."""
    where, params = ["r.key = $key"], {"key": key}
    _visibility(where, params, known)
    return Query(f"MATCH ()-[r:{BELIEVES}]->(c) WHERE {' AND '.join(where)} RETURN {_ROW}",
                 params, read_only=True)


# The columns of a timeline row (`timeline`): the edge's own fields without the agent and topic
# (its key names them) and without the claim's text and state (read with the evidence's states),
# the evidence ids joined on `ID_SEPARATOR` (ids are printable, so it is free): every column is a
# string, an integer or null, so the reply is read plain (see `wire.Query.plain`).
TIMELINE_FIELDS = ("claim", "valid_from", "valid_to", "recorded_at", "superseded_at", "evidence",
                   "note", "cause", "reason", "first_recorded")
ID_SEPARATOR = "\x1f"


def timeline(key: str, known: int | None, *, limit: int | None = None,
             before: int | None = None) -> Query:
    """The timeline of `key` as recorded at `known` (None: now, the never superseded rows, an
    equality in the index), in `TIMELINE_FIELDS`, read plain: every interval, or with `limit`
    the latest `limit` of those that start before `before` (None: all), newest first."""
    where = ["r.key = $key"]
    params: dict[str, Any] = {"key": key, "sep": ID_SEPARATOR}
    _visibility(where, params, known)
    if before is not None:
        where.append("r.valid_from + 0 < $before")
        params["before"] = before
    page = ""
    if limit is not None:
        page = " ORDER BY r.valid_from DESC, r.recorded_at DESC LIMIT $limit"
        params["limit"] = limit
    return Query(f"MATCH ()-[r:{BELIEVES}]->() WHERE {' AND '.join(where)} RETURN r.claim, "
                 "r.valid_from, r.valid_to, r.recorded_at, r.superseded_at, "
                 "string.join(coalesce(r.evidence, []), $sep), r.note, r.cause, r.reason, "
                 f"r.first_recorded{page}", params, read_only=True, plain=True)


def current_overlapping(key: str, start: int, end: int) -> Query:
    """Current (never superseded) intervals of `key` overlapping [start, end)."""
    return Query(f"MATCH ()-[r:{BELIEVES}]->(c) WHERE r.key = $key AND r.superseded_at = $open AND "
                 f"r.valid_from + 0 < $end AND r.valid_to + 0 > $start RETURN {_ROW}",
                 {"key": key, "open": OPEN, "start": start, "end": end}, read_only=True)


def next_current_start(key: str, t: int) -> Query:
    """The earliest start after `t` among the current intervals of `key` (null if none)."""
    return Query(f"MATCH ()-[r:{BELIEVES}]->() WHERE r.key = $key AND r.superseded_at = $open AND "
                 "r.valid_from > $t RETURN min(r.valid_from)", {"key": key, "open": OPEN, "t": t},
                 read_only=True)


def latest_transaction(key: str, after: int) -> Query:
    """The latest transaction time of `key` later than `after` (null when there is none)."""
    return Query(f"MATCH ()-[r:{BELIEVES}]->() WHERE r.key = $key AND r.recorded_at > $after "
                 "RETURN max(r.recorded_at)", {"key": key, "after": after}, read_only=True)


def latest_supersession(key: str, after: int) -> Query:
    return Query(f"MATCH ()-[r:{BELIEVES}]->() WHERE r.key = $key AND r.superseded_at > $after AND "
                 "r.superseded_at < $open RETURN max(r.superseded_at)",
                 {"key": key, "after": after, "open": OPEN}, read_only=True)


def ensure_subjects(agent: str, topic: str, claim: str) -> Query:
    """The agent and topic nodes, and the claim's ABOUT edge to the topic (idempotent)."""
    return Query(f"MERGE (a:Agent {{id: $agent}}) MERGE (t:Topic {{id: $topic}}) "
                 f"WITH t MATCH (c:Node {{id: $claim}}) MERGE (c)-[:{ABOUT}]->(t)",
                 {"agent": agent, "topic": topic, "claim": claim})


def supersede(key: str, starts: Sequence[int], at: int) -> Query:
    """Close the transaction time of the current intervals of `key` starting at `starts`."""
    return Query(f"UNWIND $starts AS s MATCH ()-[r:{BELIEVES}]->() WHERE r.key = $key AND "
                 "r.superseded_at = $open AND r.valid_from = s SET r.superseded_at = $at, "
                 "r.head = null",
                 {"key": key, "starts": list(starts), "open": OPEN, "at": at})


def insert(rows: Sequence[Mapping[str, Any]]) -> Query:
    """New interval versions: rows of edge properties (with `agent` and `claim`)."""
    return Query(f"UNWIND $rows AS row MATCH (a:Agent {{id: row.agent}}), (c:Node {{id: row.claim}}) "
                 f"CREATE (a)-[r:{BELIEVES}]->(c) SET r = row", {"rows": list(rows)})
