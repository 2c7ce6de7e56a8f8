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

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rippl_core import preflight, queries
from rippl_core import temporal_queries as tq
from rippl_core.engine import Commit, Op
from rippl_core.errors import InvalidInputError, NotFoundError
from rippl_core.models import Blocker, Policy, ToolCall, Verdict
from rippl_core.temporal_models import Belief, BeliefChange, StatusChange
from rippl_core.timeutil import TimeLike, from_ms, now_ms, to_ms
from rippl_core.validation import check_id, check_ids, check_text
from rippl_core.vocabulary import Kind, State, public_status
from rippl_core.walk import walk
from rippl_core.wire import Query

READ_CHUNK = 10_000


# ------------------------------------------------------------------------------------- times


def ms(value: TimeLike | None, *, name: str, default: int | None = None) -> int:
    """Epoch ms of an aware datetime, an ISO-8601 string with an offset, or epoch ms (None: the
    default, else now). Naive and malformed times are refused."""
    value_ms = to_ms(value, name=name, default=default)
    if not tq.EARLIEST <= value_ms < tq.OPEN:
        raise InvalidInputError(f"{name}={value!r} is out of range; give a time between the years "
                                "1 and 9999")
    return value_ms


def _required_time(value: TimeLike | None, *, name: str) -> int:
    if value is None:
        raise InvalidInputError(f"{name} is required: give an aware datetime or an ISO-8601 string "
                                "such as 2026-10-09T14:00:00+00:00")
    return ms(value, name=name)


def _transaction_time(recorded_at: TimeLike | None, now: int) -> int:
    tx = ms(recorded_at, name="recorded_at", default=now)
    if tx > now:
        raise InvalidInputError(
            f"recorded_at={from_ms(tx).isoformat()} is in the future; it is when Rippl "  # type: ignore[union-attr]
            "learned the belief, so at the latest now. Use valid_from for when it holds."
        )
    return tx


def _iso(value: int) -> str:
    return from_ms(value).isoformat()  # type: ignore[union-attr]


# -------------------------------------------------------------------------------------- rows


@dataclass(frozen=True, slots=True)
class Row:
    """One stored version of a belief interval (times in epoch ms, open ends as `tq.OPEN`)."""

    agent: str
    topic: str
    claim: str
    valid_from: int
    valid_to: int
    recorded_at: int
    superseded_at: int = tq.OPEN
    evidence: tuple[str, ...] = ()
    note: str | None = None
    cause: str = "believe"
    reason: str | None = None
    first_recorded: int | None = None  # when Rippl first learned of this adoption
    text: str = ""
    claim_state: str = State.IN.value

    def props(self) -> dict[str, Any]:
        key = tq.belief_key(self.agent, self.topic)
        current_head = self.valid_to >= tq.OPEN and self.superseded_at >= tq.OPEN
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
     reason, first_recorded, text, state) = record
    return Row(agent=agent, topic=topic, claim=claim, valid_from=valid_from, valid_to=valid_to,
               recorded_at=recorded_at, superseded_at=superseded_at,
               evidence=tuple(evidence or ()), note=note, cause=cause or "believe", reason=reason,
               first_recorded=first_recorded if first_recorded is not None else recorded_at,
               text=text or "", claim_state=state or State.IN.value)


def rows_of(records: Iterable[Sequence[Any]]) -> list[Row]:
    return sorted((_row(r) for r in records), key=lambda r: (r.valid_from, r.topic, r.recorded_at))


def evidence_states(rows: Iterable[Row]) -> Op[dict[str, str]]:
    ids = sorted({e for row in rows for e in row.evidence})
    states: dict[str, str] = {}
    for start in range(0, len(ids), READ_CHUNK):
        records = yield tq.node_briefs(ids[start:start + READ_CHUNK])
        states.update({r[0]: r[3] for r in records})
    return states


def belief_model(row: Row, evidence_states: Mapping[str, str],
                 claim_state: State | None = None) -> Belief:
    state = claim_state or State(row.claim_state)
    return Belief.model_construct(  # built from stored, already validated values
        agent=row.agent, topic=row.topic, claim=row.claim, text=row.text,
        valid_from=from_ms(row.valid_from),  # type: ignore[arg-type]
        valid_to=None if row.valid_to >= tq.OPEN else from_ms(row.valid_to),
        recorded_at=from_ms(row.recorded_at),  # type: ignore[arg-type]
        first_recorded_at=from_ms(row.first_recorded if row.first_recorded is not None
                                  else row.recorded_at),
        superseded_at=None if row.superseded_at >= tq.OPEN else from_ms(row.superseded_at),
        evidence=list(row.evidence), note=row.note, claim_state=state,
        claim_status=public_status(Kind.CLAIM, state), rests_on_retracted=state is State.OUT,
        retracted_evidence=[e for e in row.evidence if evidence_states.get(e) == State.OUT.value],
        cause=row.cause, reason=row.reason,
    )


def _beliefs(rows: Sequence[Row]) -> Op[list[Belief]]:
    states = yield from evidence_states(rows)
    return [belief_model(row, states) for row in rows]


def subject(agent: str, topic: str) -> tuple[str, str, str]:
    agent = check_id(agent, what="agent")
    topic = check_id(topic, what="topic")
    return agent, topic, tq.belief_key(agent, topic)


# ------------------------------------------------------------------------------------ writes


def _claim_and_evidence(claim_id: str, evidence: Sequence[str]) -> Op[tuple[str, str, dict[str, str]]]:
    """Check the claim and the evidence sources exist: (claim text, claim state, evidence states)."""
    records = yield tq.node_briefs([claim_id, *evidence])
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
    for query in (tq.latest_transaction(key, tx), tq.latest_supersession(key, tx)):
        records = yield query
        if records and records[0][0] is not None:
            raise InvalidInputError(
                f"recorded_at={_iso(tx)} is earlier than history already recorded for this agent "
                f"and topic (at {_iso(records[0][0])}); transaction time only moves forward. "
                "Record a correction now (revise) instead."
            )


def covering(key: str, t: int, known: int | None) -> Op[Row | None]:
    """The interval of `key` holding at valid time `t`: visible at transaction time `known`, or
    current (never superseded: what is known now) when `known` is None.

    Intervals of one key never overlap, so it is the open-ended one if that started by `t`, else
    the one with the latest start at or before `t`, if it has not ended by then. Windows of
    growing width find that start with narrow index ranges (see temporal_queries); the first
    window holding a start answers."""
    records = yield (tq.head(key) if known is None else tq.open_interval(key, t, known))
    opened = rows_of(records)
    if opened and opened[-1].valid_from <= t:
        return opened[-1]
    for window in (*tq.WINDOWS_MS, None):
        records = yield tq.latest_start(key, t, known, window)
        if records:
            row = rows_of(records)[0]
            return row if row.valid_to > t else None
    return None


def _covering_current(key: str, t: int) -> Op[Row | None]:
    row = yield from covering(key, t, None)
    return row


def _write(agent: str, topic: str, claim: str | None, key: str, superseded: Sequence[Row],
           inserted: Sequence[Row], tx: int) -> Commit:
    commit = Commit()
    if claim is not None:
        commit.queries.append(tq.ensure_subjects(agent, topic, claim))
    if superseded:
        commit.queries.append(tq.supersede(key, [r.valid_from for r in superseded], tx))
    if inserted:
        commit.queries.append(tq.insert([r.props() for r in inserted]))
    return commit


def _note(note: str | None) -> str | None:
    return check_text(note, what="note") if note is not None else None


def believe(agent: str, claim_id: str, *, topic: str, valid_from: TimeLike | None,
            recorded_at: TimeLike | None, evidence: Sequence[str], note: str | None) -> Op[Belief]:
    """The agent adopts `claim_id` about `topic` from `valid_from` (default: when recorded)."""
    agent, topic, key = subject(agent, topic)
    claim_id = check_id(claim_id, what="claim id")
    evidence_ids = check_ids(evidence, what="evidence")
    note = _note(note)
    now = now_ms()
    tx = _transaction_time(recorded_at, now)
    start = ms(valid_from, name="valid_from", default=tx)
    text, claim_state, states = yield from _claim_and_evidence(claim_id, evidence_ids)
    yield from _forward_only(key, tx)
    covering = yield from _covering_current(key, start)
    records = yield tq.next_current_start(key, start)
    end = records[0][0] if records and records[0][0] is not None else tq.OPEN
    same = covering is not None and covering.claim == claim_id
    if same and covering is not None and set(evidence_ids) <= set(covering.evidence) \
            and note in (None, covering.note):
        beliefs = yield from _beliefs([covering])
        return beliefs[0]  # already believed, nothing new: no write
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
            inserted.append(replace(covering, valid_to=start, recorded_at=tx, reason=None))
    inserted.append(new)
    yield _write(agent, topic, claim_id, key, superseded, inserted, tx)
    return belief_model(new, states)


def retract_belief(agent: str, topic: str, *, at: TimeLike | None, reason: str | None,
                   recorded_at: TimeLike | None) -> Op[Belief | None]:
    """The agent stops believing what it held about `topic` at `at` (default: when recorded).
    Returns the closed interval, or None when nothing was believed then."""
    agent, topic, key = subject(agent, topic)
    reason = check_text(reason, what="reason") if reason is not None else None
    now = now_ms()
    tx = _transaction_time(recorded_at, now)
    end = ms(at, name="at", default=tx)
    yield from _forward_only(key, tx)
    covering = yield from _covering_current(key, end)
    if covering is None:
        return None
    closed = replace(covering, valid_to=end, recorded_at=tx, reason=reason)
    withdrawn = covering.valid_from >= end  # it had only just started: the whole interval goes
    states = yield from evidence_states([covering])
    yield _write(agent, topic, None, key, [covering], [] if withdrawn else [closed], tx)
    return belief_model(replace(covering, superseded_at=tx) if withdrawn else closed, states)


def revise(agent: str, topic: str, claim_id: str, *, valid_from: TimeLike | None,
           valid_to: TimeLike | None, evidence: Sequence[str], note: str | None,
           recorded_at: TimeLike | None) -> Op[Belief]:
    """Correct history: over [valid_from, valid_to) the agent held `claim_id` (valid_to None: from
    valid_from on). Rows overlapping it are superseded; their parts outside it are kept."""
    agent, topic, key = subject(agent, topic)
    claim_id = check_id(claim_id, what="claim id")
    evidence_ids = tuple(check_ids(evidence, what="evidence"))
    note = _note(note)
    now = now_ms()
    tx = _transaction_time(recorded_at, now)
    start = _required_time(valid_from, name="valid_from")
    end = ms(valid_to, name="valid_to") if valid_to is not None else tq.OPEN
    if end <= start:
        raise InvalidInputError(f"valid_to ({_iso(end)}) must be after valid_from ({_iso(start)})")
    text, claim_state, states = yield from _claim_and_evidence(claim_id, evidence_ids)
    yield from _forward_only(key, tx)
    records = yield tq.current_overlapping(key, start, end)
    overlapping = rows_of(records)
    new = Row(agent, topic, claim_id, start, end, tx, evidence=evidence_ids, note=note,
              cause="revise", text=text, claim_state=claim_state)
    if len(overlapping) == 1 and _same_interval(overlapping[0], new):
        beliefs = yield from _beliefs(overlapping)
        return beliefs[0]
    inserted = []
    for row in overlapping:
        if row.valid_from < start:
            inserted.append(replace(row, valid_to=start, recorded_at=tx, reason=None))
        if row.valid_to > end:
            inserted.append(replace(row, valid_from=end, recorded_at=tx))
    inserted.append(new)
    yield _write(agent, topic, claim_id, key, overlapping, inserted, tx)
    return belief_model(new, states)


def _same_interval(row: Row, new: Row) -> bool:
    return (row.claim, row.valid_from, row.valid_to, row.evidence, row.note) == \
        (new.claim, new.valid_from, new.valid_to, new.evidence, new.note)


# ------------------------------------------------------------------------------------- reads


def read_times(as_of: TimeLike | None, known_at: TimeLike | None) -> tuple[int, int]:
    now = now_ms()
    return ms(as_of, name="as_of", default=now), ms(known_at, name="known_at", default=now)


def _as_known(known: int) -> int | None:
    """None (what is current) for a transaction time at or after now: nothing is recorded in the
    future, so the rows visible then are exactly those never superseded."""
    return None if known >= now_ms() else known


def ask(agent: str, topic: str, *, as_of: TimeLike | None,
        known_at: TimeLike | None) -> Op[Belief | None]:
    """What the agent believed about `topic` at valid time `as_of`, as recorded at `known_at`."""
    _, _, key = subject(agent, topic)
    t, known = read_times(as_of, known_at)
    row = yield from covering(key, t, _as_known(known))
    if row is None:
        return None
    beliefs = yield from _beliefs([row])
    return beliefs[0]


def beliefs(agent: str, *, as_of: TimeLike | None, known_at: TimeLike | None) -> Op[list[Belief]]:
    """Everything the agent believed at `as_of` (one belief per topic), as recorded at `known_at`."""
    agent = check_id(agent, what="agent")
    t, known = read_times(as_of, known_at)
    records = yield tq.agent_covering(agent, t, known)
    rows = sorted(rows_of(records), key=lambda r: r.topic)
    result = yield from _beliefs(rows)
    return result


def timeline(agent: str, topic: str, *, known_at: TimeLike | None) -> Op[list[Belief]]:
    """Every interval of the agent's belief about `topic`, oldest first, as recorded at `known_at`."""
    _, _, key = subject(agent, topic)
    known = ms(known_at, name="known_at", default=now_ms())
    records = yield tq.visible(key, known)
    result = yield from _beliefs(rows_of(records))
    return result


def why_changed(agent: str, topic: str, at: TimeLike, *,
                known_at: TimeLike | None) -> Op[BeliefChange]:
    """The change of belief nearest `at` (ties: the earlier): the belief just before and from then
    on, the evidence that arrived, and any retracted evidence source."""
    agent, topic, key = subject(agent, topic)
    t = _required_time(at, name="at")
    known = ms(known_at, name="known_at", default=now_ms())
    held = yield from covering(key, t, _as_known(known))
    last, first = ([held] if held is not None else []), []
    if held is None:  # t falls in a gap, or before or after everything: find the neighbours
        for window in (*tq.WINDOWS_MS, None):
            last = rows_of((yield tq.latest_start(key, t, known, window)))
            if last:
                break
        first = rows_of((yield tq.first_start_after(key, t, known)))
    # an interval covering t bounds the nearest changes: its start and its end
    points = [p for row in last for p in (row.valid_from, row.valid_to) if p < tq.OPEN]
    points += [row.valid_from for row in first]
    if not points:
        raise NotFoundError(f"{agent} has no recorded belief about {topic} (as known at "
                            f"{_iso(known)}); record one with believe()")
    changed = min(points, key=lambda p: (abs(p - t), p > t))
    before = [r for r in [(yield from covering(key, changed - 1, _as_known(known)))] if r]
    after = [r for r in [(yield from covering(key, changed, _as_known(known)))] if r]
    models = yield from _beliefs(before + after)
    before_model = models[0] if before else None
    after_model = models[-1] if after else None
    old = list(before_model.evidence) if before_model else []
    new = list(after_model.evidence) if after_model else []
    retracted = list(dict.fromkeys(
        (before_model.retracted_evidence if before_model else [])
        + (after_model.retracted_evidence if after_model else [])))
    return BeliefChange(agent=agent, topic=topic, at=from_ms(t),  # type: ignore[arg-type]
                        changed_at=from_ms(changed), known_at=from_ms(known),  # type: ignore[arg-type]
                        before=before_model, after=after_model,
                        new_evidence=[e for e in new if e not in old],
                        dropped_evidence=[e for e in old if e not in new],
                        retracted_evidence=retracted)


# ---------------------------------------------------------------------------- status history


@dataclass(frozen=True, slots=True)
class _Change:
    before: str | None
    after: str
    valid_from: int
    recorded_at: int
    seq: int
    cause: str | None
    review: str | None


def _changes(ids: Sequence[str], known: int) -> Op[dict[str, list[_Change]]]:
    """Status changes recorded by `known`, per node, in transaction order."""
    found: dict[str, list[_Change]] = defaultdict(list)
    for start in range(0, len(ids), READ_CHUNK):
        records = yield tq.changes_of(ids[start:start + READ_CHUNK], known)
        for node, _kind, before, after, valid_from, recorded_at, cause, review, seq in records:
            found[node].append(_Change(before, after, valid_from, recorded_at, seq, cause, review))
    for changes in found.values():
        changes.sort(key=lambda c: (c.recorded_at, c.seq))
    return found


def history(node_id: str, *, known_at: TimeLike | None) -> Op[list[StatusChange]]:
    """Every status change of a causal node recorded by `known_at`, in valid-time order."""
    node_id = check_id(node_id, what="node id")
    known = ms(known_at, name="known_at", default=now_ms())
    records = yield tq.node_briefs([node_id])
    if not records:
        raise NotFoundError(f"node {node_id} not found; check the id")
    kind = Kind(records[0][1])
    changes = yield from _changes([node_id], known)
    ordered = sorted(changes.get(node_id, []), key=lambda c: (c.valid_from, c.recorded_at, c.seq))
    return [StatusChange(node=node_id, kind=kind,
                         before=State(c.before) if c.before is not None else None,
                         after=State(c.after), valid_from=from_ms(c.valid_from),  # type: ignore[arg-type]
                         recorded_at=from_ms(c.recorded_at),  # type: ignore[arg-type]
                         cause=c.cause, review=c.review) for c in ordered]


def state_at(changes: Sequence[_Change], t: int) -> State | None:
    """The state at valid time `t` given changes in transaction order.

    Each change asserts its `after` state from its valid time on, overriding what earlier
    transactions said for those times; valid times before the first assertion take the state it
    replaced (`before`), or, for a creation record, the state the node was created in.
    """
    state: str | None = None
    for change in changes:
        if change.valid_from <= t:
            state = change.after
        elif state is None:
            state = change.before if change.before is not None else change.after
    return State(state) if state is not None else None


@dataclass(frozen=True, slots=True)
class _Info:
    kind: Kind
    state: State
    created_at: int | None
    executed_at: int | None


def _infos(ids: Sequence[str]) -> Op[dict[str, _Info]]:
    found: dict[str, _Info] = {}
    for start in range(0, len(ids), READ_CHUNK):
        records = yield tq.node_times(ids[start:start + READ_CHUNK])
        for node, kind, state, created, executed in records:
            found[node] = _Info(Kind(kind), State(state), created, executed)
    return found


def states_at(ids: Sequence[str], t: int, known: int,
              infos: Mapping[str, _Info] | None = None) -> Op[dict[str, State | None]]:
    """Each node's state at valid time `t` as recorded by `known` (None: not known by then)."""
    if infos is None:
        infos = yield from _infos(ids)
    changes = yield from _changes(list(ids), known)
    states: dict[str, State | None] = {}
    for node in ids:
        info = infos.get(node)
        if info is None or (info.created_at is not None and info.created_at > known):
            states[node] = None
        elif changes.get(node):
            states[node] = state_at(changes[node], t)
        else:  # recorded before creation records existed, and never changed since
            states[node] = info.state
    return states


# --------------------------------------------------------------------- time-aware pre-flight


def check_at(target: str | ToolCall, policy: Policy, *, as_of: TimeLike | None,
             known_at: TimeLike | None) -> Op[Verdict]:
    """Was `target` allowed at valid time `as_of`, as Rippl knew things at `known_at`?

    The graph's structure is today's; each node's status is read from its recorded history.
    """
    t, known = read_times(as_of, known_at)
    when = f"on {_iso(t)} (as known at {_iso(known)})"
    call = target if isinstance(target, ToolCall) else None
    if call is not None:
        resolved = yield from preflight.resolve(call)
        if not isinstance(resolved, str):
            return _unknown_at(call, resolved, policy, when)
        node_id = resolved
    else:
        node_id = check_id(target, what="target")
    infos = yield from _infos([node_id])
    states = yield from states_at([node_id], t, known, infos)
    state = states[node_id]
    if state is None:
        return _unknown_at(call, node_id, policy, when)
    info = infos[node_id]
    executed = info.executed_at is not None and info.executed_at <= t
    status = public_status(info.kind, state, executed)
    if state is State.IN:
        return Verdict(allowed=True, target=node_id, kind=info.kind, state=state, tool_call=call,
                       reason=f"{node_id} was {status} {when}: every premise under it held")
    blockers = yield from blockers_at(node_id, t, known)
    allowed = state is State.AT_RISK and policy.at_risk == "allow"
    names = ", ".join(f"{b.premise} ({b.status})" for b in blockers) or "unknown premises"
    verb = "would have been allowed despite" if allowed else "would have been denied:"
    reason = f"{node_id} {verb} {status} {when}; premise {names}"
    return Verdict(allowed=allowed, target=node_id, kind=info.kind, state=state, reason=reason,
                   blockers=blockers, tool_call=call)


def _unknown_at(call: ToolCall | None, found: str | list[str] | None, policy: Policy,
                when: str) -> Verdict:
    allowed = policy.unknown == "allow"
    outcome = "allowed (policy unknown='allow')" if allowed else "denied (fail closed)"
    if isinstance(found, list):
        what = (f"tool call {call.name if call else ''} matches several actions "
                f"({', '.join(found)}); pass action_id to say which")
    elif found is None:
        what = (f"no action in the graph is executed by tool {call.name if call else ''!r} with "
                "these args; add the action or pass action_id")
    else:
        what = f"Rippl has no record of {found} {when}; it was added later, or check the id"
    target = found if isinstance(found, str) else None
    return Verdict(allowed=allowed, target=target, reason=f"{outcome}: {what}", tool_call=call)


def blockers_at(node_id: str, t: int, known: int) -> Op[list[Blocker]]:
    """The premises under `node_id` that were retracted (or proposed for retraction) themselves at
    `t` as known at `known`, each with its trail to the node through premises that were not IN."""
    visits = yield from walk([node_id], down=False)
    ids = [node_id, *visits]
    antecedents, _ = yield from support_of(ids, tq.step_up_all)
    states = yield from states_at(ids, t, known)

    def state(n: str) -> State:
        return states.get(n) or State.IN  # a premise not known then did not block

    def explained(n: str) -> bool:
        justs = antecedents.get(n) or []
        if not justs:
            return False
        if state(n) is State.OUT:
            return all(any(state(a) is State.OUT for a in j) for j in justs)
        return all(any(state(a) is not State.IN for a in j) for j in justs)

    parents: dict[str, str | None] = {node_id: None}
    frontier = [node_id]
    while frontier:  # breadth first, upstream, through nodes that were not IN
        nxt = []
        for n in frontier:
            for a in sorted({a for j in antecedents.get(n, []) for a in j}):
                if a not in parents and state(a) is not State.IN:
                    parents[a] = n
                    nxt.append(a)
        frontier = nxt
    roots = [n for n in parents if state(n) is not State.IN and not explained(n)]
    props: dict[str, dict[str, Any]] = {}
    if roots:
        records = yield queries.get_nodes(roots)
        props = {r[0]["id"]: r[0] for r in records}
    blockers = []
    for root in roots:
        path = [root]
        while (parent := parents[path[-1]]) is not None:
            path.append(parent)
        blockers.append(Blocker(premise=root, kind=Kind(props[root]["kind"]), state=state(root),
                                reason=props[root].get("reason"), trail=path))
    return sorted(blockers, key=lambda b: (len(b.trail), b.premise))


def support_of(ids: Sequence[str], query: Callable[[Sequence[str]], Query]) -> Op[
        tuple[dict[str, list[list[str]]], dict[str, tuple[Any, ...]]]]:
    """Justifications of `ids` (antecedent lists grouped by the edge's justification key), and
    the query's extra columns for each antecedent."""
    grouped: dict[str, dict[Any, list[str]]] = defaultdict(lambda: defaultdict(list))
    extra: dict[str, tuple[Any, ...]] = {}
    for start in range(0, len(ids), READ_CHUNK):
        records = yield query(ids[start:start + READ_CHUNK])
        for node, j, antecedent, *rest in records:
            grouped[node][j].append(antecedent)
            extra[antecedent] = tuple(rest)
    justs = {node: [a for _, a in sorted(groups.items(), key=lambda kv: str(kv[0]))]
             for node, groups in grouped.items()}
    return justs, extra
