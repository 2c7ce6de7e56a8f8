"""Status as of any time: every status change of a causal node is a `:Change` record with valid
time (when it held) and transaction time (when Rippl recorded it); `history` reads them back,
`states_at` gives each node's state at a valid time as known at a transaction time, and `check_at`
answers a pre-flight check as it would have been answered then.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rippl_core._runtime.op import Op
from rippl_core._runtime.timeutil import TimeLike, from_ms, iso, now_ms, read_times, to_ms
from rippl_core._runtime.validation import check_id
from rippl_core._runtime.wire import Query
from rippl_core.causal import cypher, preflight
from rippl_core.causal.walk import walk
from rippl_core.errors import NotFoundError
from rippl_core.models import Blocker, Policy, StatusChange, ToolCall, Verdict
from rippl_core.vocabulary import Kind, State, public_status

READ_CHUNK = 10_000


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
        records = yield cypher.changes_of(ids[start:start + READ_CHUNK], known)
        for node, _kind, before, after, valid_from, recorded_at, cause, review, seq in records:
            found[node].append(_Change(before, after, valid_from, recorded_at, seq, cause, review))
    for changes in found.values():
        changes.sort(key=lambda c: (c.recorded_at, c.seq))
    return found


def history(node_id: str, *, known_at: TimeLike | None) -> Op[list[StatusChange]]:
    """Every status change of a causal node recorded by `known_at`, in valid-time order."""
    node_id = check_id(node_id, what="node id")
    known = to_ms(known_at, name="known_at", default=now_ms())
    records = yield cypher.node_briefs([node_id])
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
        records = yield cypher.node_times(ids[start:start + READ_CHUNK])
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


def check_at(target: str | ToolCall, policy: Policy, *, as_of: TimeLike | None,
             known_at: TimeLike | None) -> Op[Verdict]:
    """Was `target` allowed at valid time `as_of`, as Rippl knew things at `known_at`?

    The graph's structure is today's; each node's status is read from its recorded history.
    """
    t, known = read_times(as_of, known_at)
    when = f"on {iso(t)} (as known at {iso(known)})"
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
    antecedents, _ = yield from support_of(ids, cypher.step_up_all)
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
        records = yield cypher.get_nodes(roots)
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
