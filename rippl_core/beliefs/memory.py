"""Bitemporal belief memory and time-aware reads, as sans-IO operations (generators over queries).

Each belief interval is a version row on a `BELIEVES` edge, with valid time [valid_from, valid_to)
(when the agent held the belief) and transaction time [recorded_at, superseded_at) (when Rippl knew
this version). Rows are never deleted or rewritten: a change of history sets `superseded_at` on the
rows it replaces and inserts their new versions, so any past state of knowledge can be read back.

Writes keep one invariant per (agent, topic): at any transaction time, the visible intervals do not
overlap. The rules:

- `believe(claim, valid_from=V)`: the agent holds the claim from V until the next adoption already
  recorded after V (or open-ended). The interval covering V is closed at V. Believing the claim
  already held, with no new evidence, changes nothing; with new evidence, the interval is split at V
  and the new one carries the union of the evidence.
- `retract_belief(at=A)`: the interval covering A is closed at A (nothing is believed after it,
  until the next adoption).
- `revise(claim, valid_from=V, valid_to=E)`: a correction: [V, E) becomes the claim, whatever was
  recorded there; intervals overlapping it keep their parts outside [V, E).

Transaction time only moves forward per (agent, topic): a write may pass `recorded_at` in the past
(importing history), but not earlier than what is already recorded for that pair, nor in the future.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import chain
from operator import itemgetter
from typing import Any

from rippl_core._runtime.op import Batch, Commit, Op
from rippl_core._runtime.timeutil import TimeLike, from_ms, iso, now_ms, read_times, required_ms, to_ms
from rippl_core._runtime.validation import SequenceNotStr, check_id, check_ids, check_text
from rippl_core.beliefs import cypher
from rippl_core.beliefs.models import Belief, BeliefChange, constructed
from rippl_core.causal import cypher as causal_cypher
from rippl_core.causal import history
from rippl_core.causal.joined import Joined
from rippl_core.errors import InvalidInputError, NotFoundError
from rippl_core.vocabulary import Kind, State, public_status

READ_CHUNK = 10_000
# The windows of `covering` asked in its first round trip, with the open interval: an hour and a
# day hold the answer for all but sparse histories, and cost the server a few microseconds.
FIRST_WINDOWS = 2


# ------------------------------------------------------------------------------------- times


def _transaction_time(recorded_at: TimeLike | None, now: int) -> int:
    tx = to_ms(recorded_at, name="recorded_at", default=now)
    if tx > now:
        raise InvalidInputError(
            f"recorded_at={from_ms(tx).isoformat()} is in the future; it is when Rippl "
            "learned the belief, so at the latest now. Use valid_from for when it holds."
        )
    return tx


# -------------------------------------------------------------------------------------- rows


@dataclass(frozen=True, slots=True)
class Row:
    """One stored version of a belief interval (times in epoch ms, open ends as `cypher.OPEN`)."""

    agent: str
    topic: str
    claim: str
    valid_from: int
    valid_to: int
    recorded_at: int
    superseded_at: int = cypher.OPEN
    evidence: tuple[str, ...] = ()
    note: str | None = None
    cause: str = "believe"
    reason: str | None = None
    first_recorded: int | None = None  # when Rippl first learned of this adoption
    text: str = ""
    claim_state: str = State.IN.value
    claim_retracted: bool = False  # the claim itself retracted (not a premise under it)

    def props(self) -> dict[str, Any]:
        key = cypher.belief_key(self.agent, self.topic)
        current_head = self.valid_to >= cypher.OPEN and self.superseded_at >= cypher.OPEN
        props = {"key": key, "head": key if current_head else None, "agent": self.agent,
                 "topic": self.topic, "claim": self.claim, "valid_from": self.valid_from,
                 "valid_to": self.valid_to, "recorded_at": self.recorded_at,
                 "superseded_at": self.superseded_at, "evidence": list(self.evidence),
                 "note": self.note, "cause": self.cause, "reason": self.reason,
                 "first_recorded": self.first_recorded if self.first_recorded is not None
                 else self.recorded_at}
        return {k: v for k, v in props.items() if v is not None}

    def holds_at(self, t: int) -> bool:
        return self.valid_from <= t < self.valid_to


def _row(record: Sequence[Any]) -> Row:
    (agent, topic, claim, valid_from, valid_to, recorded_at, superseded_at, evidence, note, cause,
     reason, first_recorded, text, state, retracted) = record
    return Row(agent=agent, topic=topic, claim=claim, valid_from=valid_from, valid_to=valid_to,
               recorded_at=recorded_at, superseded_at=superseded_at,
               evidence=tuple(evidence or ()), note=note, cause=cause or "believe", reason=reason,
               first_recorded=first_recorded if first_recorded is not None else recorded_at,
               text=text or "", claim_state=state or State.IN.value,
               claim_retracted=bool(retracted))


def rows_of(records: Iterable[Sequence[Any]]) -> list[Row]:
    return sorted((_row(r) for r in records), key=lambda r: (r.valid_from, r.topic, r.recorded_at))


def evidence_states(rows: Iterable[Row]) -> Op[dict[str, str]]:
    briefs = yield from node_briefs(sorted({e for row in rows for e in row.evidence}))
    return {node: brief[3] for node, brief in briefs.items()}


def node_briefs(ids: Sequence[str]) -> Op[dict[str, Sequence[Any]]]:
    """`causal_cypher.node_briefs` of many ids, in reads of at most READ_CHUNK, by id."""
    briefs: dict[str, Sequence[Any]] = {}
    for start in range(0, len(ids), READ_CHUNK):
        records = yield causal_cypher.node_briefs(ids[start:start + READ_CHUNK])
        briefs.update({r[0]: r for r in records})
    return briefs


def belief_model(row: Row, evidence_states: Mapping[str, str], claim_state: State | None = None,
                 then: Mapping[str, State | None] | None = None,
                 when: Callable[[int], datetime | None] = from_ms) -> Belief:
    """The Belief of a row. Its status is `claim_state` if given, else the claim's state in
    `then` (states at the time a read asked about, see `_beliefs`), else its state now; each
    evidence source likewise from `then`, else `evidence_states` (states now). `when` reads a
    stored time (`belief_models` shares one cache)."""
    then = then or {}
    now = State(row.claim_state)
    state = claim_state or then.get(row.claim) or now

    def evidence_state(source: str) -> State | None:
        stored = evidence_states.get(source)
        return then.get(source) or (State(stored) if stored is not None else None)

    open_end = cypher.OPEN
    return constructed(Belief, {  # stored, already validated values; the fields in their order
        "agent": row.agent, "topic": row.topic, "claim": row.claim, "text": row.text,
        "valid_from": when(row.valid_from),
        "valid_to": None if row.valid_to >= open_end else when(row.valid_to),
        "recorded_at": when(row.recorded_at),
        "superseded_at": None if row.superseded_at >= open_end else when(row.superseded_at),
        "evidence": list(row.evidence), "note": row.note, "claim_state": state,
        "claim_status": public_status(Kind.CLAIM, state),
        "claim_state_now": now, "claim_status_now": public_status(Kind.CLAIM, now),
        "rests_on_retracted": state is State.OUT,
        "retracted_evidence": [e for e in row.evidence if evidence_state(e) is State.OUT],
        "cause": row.cause, "reason": row.reason,
        "first_recorded_at": when(row.first_recorded if row.first_recorded is not None
                                  else row.recorded_at),
        "claim_retracted": row.claim_retracted,
    })


def belief_models(rows: Sequence[Row], evidence_states: Mapping[str, str],
                  then: Mapping[str, State | None] | None = None) -> list[Belief]:
    """The models of many rows: each distinct stored time is read once (along a timeline each
    interval ends where the next starts)."""
    times: dict[int, datetime | None] = {}

    def when(ms: int) -> datetime | None:
        found = times.get(ms)
        if found is None:
            found = times[ms] = from_ms(ms)
        return found

    return [belief_model(row, evidence_states, None, then, when) for row in rows]


def _beliefs(rows: Sequence[Row], view: tuple[int, int] | None = None) -> Op[list[Belief]]:
    """The Beliefs of `rows`, with the status of their claims and evidence now (`view` None), or
    at valid time t as known at transaction time `known` (`view` = (t, known)): computed from
    the retractions recorded by then and truth maintenance over the ancestry, as an as-of
    `check` computes it (`causal.history.states_at`)."""
    then: dict[str, State | None] = {}
    evidence = sorted({e for row in rows for e in row.evidence})
    if view is not None and rows and len(evidence) <= READ_CHUNK:
        # the evidence's states now ride along with the first level of the ancestry
        ids = sorted({r.claim for r in rows} | set(evidence))
        found, extra = yield from history.view_at(
            ids, *view, extra=[causal_cypher.node_briefs(evidence)] if evidence else [])
        then = {node: found.states.get(node) for node in ids}
        states = {r[0]: r[3] for r in extra[0]} if evidence else {}
        return belief_models(rows, states, then)
    states = yield from evidence_states(rows)
    if view is not None and rows:
        ids = sorted({r.claim for r in rows} | {e for r in rows for e in r.evidence})
        then = yield from history.states_at(ids, *view)
    return belief_models(rows, states, then)


def _view(as_of: TimeLike | None, known_at: TimeLike | None) -> tuple[int, int] | None:
    """(valid time, transaction time) of a read about the past; None for a read of now."""
    return None if as_of is None and known_at is None else read_times(as_of, known_at)


def subject(agent: str, topic: str) -> tuple[str, str, str]:
    agent = check_id(agent, what="agent")
    topic = check_id(topic, what="topic")
    return agent, topic, cypher.belief_key(agent, topic)


# ------------------------------------------------------------------------------------ writes


def _claim_and_evidence(claim_id: str, evidence: Sequence[str]) -> Op[tuple[str, str, dict[str, str]]]:
    """Check the claim and the evidence sources exist: (claim text, claim state, evidence states)."""
    records = yield causal_cypher.node_briefs([claim_id, *evidence])
    found = {r[0]: r for r in records}
    missing = [i for i in [claim_id, *evidence] if i not in found]
    if missing:
        raise NotFoundError(f"not found: {', '.join(missing)}. Add the claim (add_claim) and the "
                            "evidence sources (add_source) first, or check the ids.")
    if found[claim_id][1] != Kind.CLAIM.value:
        raise InvalidInputError(f"{claim_id} is a {found[claim_id][1]}; an agent believes claims")
    wrong = [e for e in evidence if found[e][1] != Kind.SOURCE.value]
    if wrong:
        raise InvalidInputError(f"evidence must be sources; {', '.join(wrong)} "
                                f"{'is' if len(wrong) == 1 else 'are'} not")
    return found[claim_id][2], found[claim_id][3], {e: found[e][3] for e in evidence}


def _forward_only(key: str, tx: int) -> Op[None]:
    """Refuse a transaction time earlier than what is already recorded for this agent and topic."""
    for query in (cypher.latest_transaction(key, tx), cypher.latest_supersession(key, tx)):
        records = yield query
        if records and records[0][0] is not None:
            raise InvalidInputError(
                f"recorded_at={iso(tx)} is earlier than history already recorded for this agent "
                f"and topic (at {iso(records[0][0])}); transaction time only moves forward. "
                "Record a correction now (revise) instead."
            )


def covering(key: str, t: int, known: int | None, *, ahead: int = FIRST_WINDOWS) -> Op[Row | None]:
    """The interval of `key` holding at valid time `t`: visible at transaction time `known`, or
    current (never superseded: what is known now) when `known` is None.

    Intervals of one key never overlap, so it is the open-ended one if that started by `t`, else
    the one with the latest start at or before `t`, if it has not ended by then. Windows of
    growing width find that start with narrow index ranges (see temporal_queries); the first
    window holding a start answers. A read asks the open interval and the first `ahead` windows
    in one round trip; a write (whose reads under WATCH go one at a time) asks them in turn."""
    windows = (*cypher.WINDOWS_MS, None)
    first = windows[:ahead]  # asked with the open interval, in the same round trip
    replies = yield Batch(cypher.head(key) if known is None else cypher.open_interval(key, t, known),
                          *(cypher.latest_start(key, t, known, window) for window in first))
    opened = rows_of(replies[0])
    if opened and opened[-1].valid_from <= t:
        return opened[-1]
    found = next((records for records in replies[1:] if records), None)
    for window in windows[ahead:]:
        if found is not None:
            break
        found = (yield cypher.latest_start(key, t, known, window)) or None
    if found is None:
        return None
    row = rows_of(found)[0]
    return row if row.valid_to > t else None


def _covering_current(key: str, t: int) -> Op[Row | None]:
    row = yield from covering(key, t, None, ahead=0)
    return row


def belief_event(kind: str, row: Row, tx: int) -> dict[str, Any]:
    """The live event a belief write publishes with its commit (`belief_recorded`,
    `belief_retracted` or `belief_revised`): whose belief, about what, over which valid time."""
    return {"type": kind, "agent": row.agent, "topic": row.topic, "claim": row.claim,
            "valid_from": iso(row.valid_from),
            "valid_to": None if row.valid_to >= cypher.OPEN else iso(row.valid_to),
            "at": iso(tx)}


def _write(agent: str, topic: str, claim: str | None, key: str, superseded: Sequence[Row],
           inserted: Sequence[Row], tx: int, event: dict[str, Any]) -> Commit:
    commit = Commit(events=[event])
    if claim is not None:
        commit.queries.append(cypher.ensure_subjects(agent, topic, claim))
    if superseded:
        commit.queries.append(cypher.supersede(key, [r.valid_from for r in superseded], tx))
    if inserted:
        commit.queries.append(cypher.insert([r.props() for r in inserted]))
    return commit


def _note(note: str | None) -> str | None:
    return check_text(note, what="note") if note is not None else None


def believe(agent: str, claim_id: str, *, topic: str, valid_from: TimeLike | None,
            recorded_at: TimeLike | None, evidence: SequenceNotStr[str], note: str | None,
            joined: Joined | None = None) -> Op[Belief]:
    """The agent adopts `claim_id` about `topic` from `valid_from` (default: when recorded).
    `joined`: what another feature records about the claim in the same commit (a memory written
    in a captured run rests on what the run carried: `capture.memory`)."""
    agent, topic, key = subject(agent, topic)
    claim_id = check_id(claim_id, what="claim id")
    evidence_ids = check_ids(evidence, what="evidence")
    note = _note(note)
    now = now_ms()
    tx = _transaction_time(recorded_at, now)
    start = to_ms(valid_from, name="valid_from", default=tx)
    text, claim_state, states = yield from _claim_and_evidence(claim_id, evidence_ids)
    yield from _forward_only(key, tx)
    covering = yield from _covering_current(key, start)
    records = yield cypher.next_current_start(key, start)
    end = records[0][0] if records and records[0][0] is not None else cypher.OPEN
    same = covering is not None and covering.claim == claim_id
    if same and covering is not None and set(evidence_ids) <= set(covering.evidence) \
            and note in (None, covering.note):
        if joined is not None:  # believed already, written again in a run: that run's write
            yield from _joined(Commit(), joined, claim_id, now)
        beliefs = yield from _beliefs([covering])
        return beliefs[0]  # already believed, nothing new: no new interval
    if same and covering is not None:
        evidence_ids = list(dict.fromkeys([*covering.evidence, *evidence_ids]))
        note = note if note is not None else covering.note
    new = Row(agent, topic, claim_id, start, end, tx, evidence=tuple(evidence_ids), note=note,
              cause="believe", text=text, claim_state=claim_state)
    if same and covering is not None:
        states.update((yield from evidence_states([covering])))
    superseded, inserted = [], []
    if covering is not None:
        superseded.append(covering)
        if covering.valid_from < start:
            inserted.append(replace(covering, valid_to=start, recorded_at=tx, reason=None,
                                    cause="believe"))
    inserted.append(new)
    commit = _write(agent, topic, claim_id, key, superseded, inserted, tx,
                    belief_event("belief_recorded", new, tx))
    yield from _joined(commit, joined, claim_id, now)
    return belief_model(new, states)


def _joined(commit: Commit, joined: Joined | None, claim_id: str, now: int) -> Op[None]:
    """Commit, with what `joined` adds about the claim, then what follows it."""
    extra = joined.queries([claim_id], now) if joined is not None else []
    replies = yield Commit(commit.queries + extra, commit.events, blind=commit.blind)
    if joined is not None:
        yield from joined.after(replies[len(replies) - len(extra):])


def retract_belief(agent: str, topic: str, *, at: TimeLike | None, reason: str | None,
                   recorded_at: TimeLike | None) -> Op[Belief | None]:
    """The agent stops believing what it held about `topic` at `at` (default: when recorded).
    Returns the closed interval, or None when nothing was believed then."""
    agent, topic, key = subject(agent, topic)
    reason = check_text(reason, what="reason") if reason is not None else None
    now = now_ms()
    tx = _transaction_time(recorded_at, now)
    end = to_ms(at, name="at", default=tx)
    yield from _forward_only(key, tx)
    covering = yield from _covering_current(key, end)
    if covering is None:
        return None
    closed = replace(covering, valid_to=end, recorded_at=tx, reason=reason, cause="retract_belief")
    withdrawn = covering.valid_from >= end  # it had only just started: the whole interval goes
    states = yield from evidence_states([covering])
    yield _write(agent, topic, None, key, [covering], [] if withdrawn else [closed], tx,
                 belief_event("belief_retracted", closed, tx))
    return belief_model(replace(covering, superseded_at=tx) if withdrawn else closed, states)


def revise(agent: str, topic: str, claim_id: str, *, valid_from: TimeLike | None,
           valid_to: TimeLike | None, evidence: SequenceNotStr[str], note: str | None,
           recorded_at: TimeLike | None) -> Op[Belief]:
    """Correct history: over [valid_from, valid_to) the agent held `claim_id` (valid_to None: from
    valid_from on). Rows overlapping it are superseded; their parts outside it are kept."""
    agent, topic, key = subject(agent, topic)
    claim_id = check_id(claim_id, what="claim id")
    evidence_ids = tuple(check_ids(evidence, what="evidence"))
    note = _note(note)
    now = now_ms()
    tx = _transaction_time(recorded_at, now)
    start = required_ms(valid_from, name="valid_from")
    end = to_ms(valid_to, name="valid_to") if valid_to is not None else cypher.OPEN
    if end <= start:
        raise InvalidInputError(f"valid_to ({iso(end)}) must be after valid_from ({iso(start)})")
    text, claim_state, states = yield from _claim_and_evidence(claim_id, evidence_ids)
    yield from _forward_only(key, tx)
    records = yield cypher.current_overlapping(key, start, end)
    overlapping = rows_of(records)
    new = Row(agent, topic, claim_id, start, end, tx, evidence=evidence_ids, note=note,
              cause="revise", text=text, claim_state=claim_state)
    if len(overlapping) == 1 and _same_interval(overlapping[0], new):
        beliefs = yield from _beliefs(overlapping)
        return beliefs[0]
    inserted = []
    for row in overlapping:
        if row.valid_from < start:
            inserted.append(replace(row, valid_to=start, recorded_at=tx, reason=None, cause="revise"))
        if row.valid_to > end:
            inserted.append(replace(row, valid_from=end, recorded_at=tx, cause="revise"))
    inserted.append(new)
    yield _write(agent, topic, claim_id, key, overlapping, inserted, tx,
                 belief_event("belief_revised", new, tx))
    return belief_model(new, states)


def _same_interval(row: Row, new: Row) -> bool:
    return (row.claim, row.valid_from, row.valid_to, row.evidence, row.note) == \
        (new.claim, new.valid_from, new.valid_to, new.evidence, new.note)


# ------------------------------------------------------------------------------------- reads


def _as_known(known: int) -> int | None:
    """None (what is current) for a transaction time at or after now: nothing is recorded in the
    future, so the rows visible then are exactly those never superseded."""
    return None if known >= now_ms() else known


def ask(agent: str, topic: str, *, as_of: TimeLike | None,
        known_at: TimeLike | None) -> Op[Belief | None]:
    """What the agent believed about `topic` at valid time `as_of`, as recorded at `known_at`,
    with the claim's status then (see `Belief`)."""
    _, _, key = subject(agent, topic)
    t, known = read_times(as_of, known_at)
    row = yield from covering(key, t, _as_known(known))
    if row is None:
        return None
    beliefs = yield from _beliefs([row], _view(as_of, known_at))
    return beliefs[0]


def beliefs(agent: str, *, as_of: TimeLike | None, known_at: TimeLike | None) -> Op[list[Belief]]:
    """Everything the agent believed at `as_of` (one belief per topic), as recorded at `known_at`,
    with each claim's status then (see `Belief`)."""
    agent = check_id(agent, what="agent")
    t, known = read_times(as_of, known_at)
    records = yield cypher.agent_covering(agent, t, known)
    rows = sorted(rows_of(records), key=lambda r: r.topic)
    result = yield from _beliefs(rows, _view(as_of, known_at))
    return result


def timeline(agent: str, topic: str, *, known_at: TimeLike | None, limit: int | None = None,
             before: TimeLike | None = None) -> Op[list[Belief]]:
    """Every interval of the agent's belief about `topic`, oldest first, as recorded at `known_at`;
    with `limit`, only the latest `limit` intervals that start before `before` (a page: the next
    one back starts before this one's first `valid_from`).

    A long timeline is read as compactly as it can be, with the same Beliefs as `_beliefs`
    gives: its rows plain and without what rows share (the agent and topic, the claims' text and
    state, read with the evidence's states in a second round trip), the models built straight
    from them."""
    agent, topic, key = subject(agent, topic)
    known = to_ms(known_at, name="known_at", default=now_ms())
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidInputError(f"limit must be a positive integer (got {limit!r}); "
                                "leave it out for the whole timeline")
    if before is not None and limit is None:
        raise InvalidInputError("before pages the timeline: give limit too (the intervals to read)")
    start = None if before is None else to_ms(before, name="before")
    records = yield cypher.timeline(key, _as_known(known), limit=limit, before=start)
    times = itemgetter(1, 2, 3, 4, 9)
    if not set(map(type, chain.from_iterable(map(times, records)))) <= {int, type(None)}:
        records = [_numeric_times(r) for r in records]
    records.sort(key=itemgetter(1, 3))  # valid_from, recorded_at
    sep = cypher.ID_SEPARATOR
    evidence = {joined: tuple(joined.split(sep)) if joined else ()
                for joined in {r[5] for r in records}}
    briefs = yield from node_briefs(sorted({r[0] for r in records}.union(*evidence.values())))
    nodes = {node: (brief[2], brief[3], bool(brief[4])) for node, brief in briefs.items()}
    return _timeline_models(agent, topic, records, evidence, nodes)


def _numeric_times(record: Sequence[Any]) -> list[Any]:
    """A timeline row whose stored times are not all integers (a double or a number written as
    text by hand: the plain reply gives both as text) with them as the numbers the compact reply
    gives, so that it reads as any stored time does (`from_ms`)."""
    row = list(record)
    for i in (1, 2, 3, 4, 9):
        if isinstance(row[i], str | bytes):
            row[i] = float(row[i])
    return row


def _timeline_models(agent: str, topic: str, records: Sequence[Sequence[Any]],
                     evidence: Mapping[str | None, tuple[str, ...]],
                     nodes: Mapping[str, tuple[str, str, bool]]) -> list[Belief]:
    """`belief_model` of each timeline row (`cypher.TIMELINE_FIELDS`), given the text, state now
    and own retraction of its claim and evidence (`nodes`); what rows share (times, states,
    evidence) is computed once, and each model is `constructed` like belief_model's."""
    open_end, out, default = cypher.OPEN, State.OUT.value, ("", State.IN.value, False)
    columns = list(zip(*records, strict=True)) or [()] * len(cypher.TIMELINE_FIELDS)
    starts = {ms: from_ms(ms) for ms in {*columns[1], *columns[3], *columns[9]}}
    ends = {ms: None if ms >= open_end else from_ms(ms) for ms in {*columns[2], *columns[4]}}
    retracted = {joined: [e for e in ids if e in nodes and nodes[e][1] == out]
                 for joined, ids in evidence.items()}
    claims = {}
    for claim in set(columns[0]):
        text, name, own = nodes.get(claim, default)
        state = State(name or State.IN.value)
        claims[claim] = (text or "", state, public_status(Kind.CLAIM, state), state is State.OUT,
                         own)
    beliefs = []
    for (claim, valid_from, valid_to, recorded_at, superseded_at, joined, note, cause, reason,
         first_recorded) in records:
        text, state, status, retracted_claim, own = claims[claim]
        beliefs.append(constructed(Belief, {  # the fields in their order, as belief_model's
            "agent": agent, "topic": topic, "claim": claim, "text": text,
            "valid_from": starts[valid_from], "valid_to": ends[valid_to],
            "recorded_at": starts[recorded_at], "superseded_at": ends[superseded_at],
            "evidence": list(evidence[joined]), "note": note, "claim_state": state,
            "claim_status": status, "claim_state_now": state, "claim_status_now": status,
            "rests_on_retracted": retracted_claim, "retracted_evidence": list(retracted[joined]),
            "cause": cause or "believe", "reason": reason,
            "first_recorded_at": starts[first_recorded if first_recorded is not None
                                        else recorded_at], "claim_retracted": own}))
    return beliefs


def why_changed(agent: str, topic: str, at: TimeLike, *,
                known_at: TimeLike | None) -> Op[BeliefChange]:
    """The change of belief nearest `at` (ties: the earlier): the belief just before and from then
    on, the evidence that arrived, and any retracted evidence source. A change is a boundary where
    the claim or the set of evidence sources differs on its two sides (an adoption or a drop is a
    change from or to nothing); a boundary with the same claim and evidence on both sides (a row
    split by `revise`, or by a new note) is not one."""
    agent, topic, key = subject(agent, topic)
    t = required_ms(at, name="at")
    known = to_ms(known_at, name="known_at", default=now_ms())
    held = yield from covering(key, t, _as_known(known))
    found: list[tuple[int, Row | None, Row | None]] = []
    if held is not None:  # the nearest changes are at or before its start, at or after its end
        for back in (True, False):
            change = yield from _change_from(key, held, _as_known(known), back=back)
            found += [change] if change is not None else []
    else:  # t falls in a gap, or before or after everything: its edges are changes
        for window in (*cypher.WINDOWS_MS, None):
            last = rows_of((yield cypher.latest_start(key, t, known, window)))
            if last:
                found.append((last[0].valid_to, last[0], None))
                break
        first = rows_of((yield cypher.first_start_after(key, t, known)))
        found += [(first[0].valid_from, None, first[0])] if first else []
    if not found:
        missing = f"{agent} has no recorded belief about {topic} (as known at {iso(known)})"
        raise NotFoundError(f"{missing}; record one with believe()",
                            cli=f"{missing}; record one with `rippl believe`")
    changed, before, after = min(found, key=lambda c: (abs(c[0] - t), c[0] > t))
    models = yield from _beliefs([r for r in (before, after) if r is not None])
    before_model = models[0] if before is not None else None
    after_model = models[-1] if after is not None else None
    old = list(before_model.evidence) if before_model else []
    new = list(after_model.evidence) if after_model else []
    retracted = list(dict.fromkeys(
        (before_model.retracted_evidence if before_model else [])
        + (after_model.retracted_evidence if after_model else [])))
    return BeliefChange(agent=agent, topic=topic, at=from_ms(t),
                        changed_at=from_ms(changed), known_at=from_ms(known),
                        before=before_model, after=after_model,
                        new_evidence=[e for e in new if e not in old],
                        dropped_evidence=[e for e in old if e not in new],
                        retracted_evidence=retracted)


def _same_belief(a: Row, b: Row) -> bool:
    return a.claim == b.claim and set(a.evidence) == set(b.evidence)


NEIGHBOUR_PAGES = (8, 64, 512, 4096)  # rows read per step of a walk past no-op boundaries


def _change_from(key: str, held: Row, known: int | None, *,
                 back: bool) -> Op[tuple[int, Row | None, Row | None] | None]:
    """The first boundary from `held` backward (its start or earlier) or forward (its end or
    later) where the belief changes: (its time, the interval before it, the interval from it);
    None going forward from an open-ended interval.

    Adjacent intervals holding the same belief are walked over in pages of neighbours, one query
    per page: starts within a window of the boundary, pushed to the index as `covering` does
    (windows widen when one holds no more; pages grow when one is full), so a long run of them
    costs a few queries, not two reads per boundary."""
    current, pages, windows = held, iter(NEIGHBOUR_PAGES), iter((*cypher.WINDOWS_MS, None))
    size, window = next(pages), next(windows)
    while True:
        point = current.valid_from if back else current.valid_to
        if point >= cypher.OPEN:
            return None
        rows = rows_of((yield cypher.neighbours(key, point, known, before=back, limit=size,
                                                window=window)))
        for row in (reversed(rows) if back else rows):
            before, after = (row, current) if back else (current, row)
            if before.valid_to != after.valid_from:
                break  # a gap: the belief changes from or to nothing at the edge of `current`
            if not _same_belief(before, after):
                return after.valid_from, before, after
            current = row
        else:  # every row read holds the same belief: read on, in a larger page or window
            if len(rows) == size:
                size = next(pages, size)
                continue
            if window is not None:
                window = next(windows)
                continue
        if back:
            return current.valid_from, None, current
        return (current.valid_to, current, None) if current.valid_to < cypher.OPEN else None


# ---------------------------------------------------------------------------- status history


# --------------------------------------------------------------------- time-aware pre-flight
