"""Status as of any time: every status change of a causal node is a `:Change` record with valid
time (when it held) and transaction time (when Rippl recorded it); `history` reads them back,
`states_at` gives each node's state at a valid time as known at a transaction time, and `check_at`
answers a pre-flight check as it would have been answered then.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rippl_core._runtime.op import Batch, Op
from rippl_core._runtime.timeutil import TimeLike, from_ms, iso, now_ms, read_times, to_ms
from rippl_core._runtime.validation import check_id
from rippl_core._runtime.wire import Query
from rippl_core.causal import cypher, freshness, preflight
from rippl_core.causal.tms import Premise, Region, label
from rippl_core.errors import NotFoundError
from rippl_core.models import Blocker, Policy, StatusChange, ToolCall, Verdict
from rippl_core.vocabulary import Kind, State, is_context, public_status

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
                         after=State(c.after), valid_from=from_ms(c.valid_from),
                         recorded_at=from_ms(c.recorded_at),
                         cause=c.cause, review=c.review) for c in ordered]


def state_at(changes: Sequence[_Change], t: int) -> State | None:
    """The recorded state at valid time `t` given a node's changes in transaction order (what its
    history shows; as-of checks compute states from own retractions instead, see `view_at`).

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

    def known_by(self, known: int) -> bool:
        """Whether Rippl had learned of the node by `known` (one without a creation time always)."""
        return self.created_at is None or self.created_at <= known


def _own_from(rows: Sequence[tuple[Any, ...]], t: int) -> dict[str, Premise]:
    """Each node's own retraction state at valid time `t`, from its recorded changes (rows of
    `cypher.own_changes_of`): whether it was retracted itself, and how many retractions of it were
    proposed and undecided. Each record asserts its fields from its valid time on, later
    transactions overriding earlier ones for the times they cover (so a retraction recorded late
    with an earlier `at` counts from then)."""
    records: dict[str, list[tuple[int, int, int, bool | None, int | None]]] = defaultdict(list)
    for node, retracted, pending, valid_from, recorded_at, order in rows:
        records[node].append((recorded_at, order, valid_from, retracted, pending))
    own = {}
    for node, found in records.items():
        retracted, pending = False, 0
        for _, _, valid_from, is_retracted, count in sorted(found):
            if valid_from <= t and is_retracted is not None:
                retracted = bool(is_retracted)
            if valid_from <= t and count is not None:
                pending = int(count)
        own[node] = Premise(retracted, pending)
    return own


@dataclass
class View:
    """Nodes as of a valid time, as known at a transaction time: each node of the ancestry of the
    targets with its state then (None: Rippl did not know it then), its own retraction state,
    and its justifications."""

    states: dict[str, State | None]
    own: dict[str, Premise]
    justifications: dict[str, list[list[str]]]
    infos: dict[str, _Info]


def view_at(ids: Sequence[str], t: int, known: int,
            extra: Sequence[Query] = ()) -> Op[tuple[View, list[Any]]]:
    """The states of `ids` at valid time `t` as known at `known`, right by construction: the own
    retraction state of every node of their ancestry at that time, then truth maintenance over
    the ancestry (the graph's structure is today's; a node Rippl learned of after `known` was
    not there). The ancestry is read a level a round trip, each level with what its nodes are,
    their own retraction records and their incoming edges (which name the next level); `extra`
    queries ride along with the first round trip, and their replies are returned with the view."""
    nodes: list[str] = list(dict.fromkeys(ids))
    seen = set(nodes)
    infos: dict[str, _Info] = {}
    changes: list[tuple[Any, ...]] = []
    support: list[tuple[Any, ...]] = []
    extra_replies: list[Any] = []
    frontier = list(nodes)
    first = True
    while frontier:
        found: list[str] = []
        for start in range(0, len(frontier), READ_CHUNK):
            chunk = frontier[start:start + READ_CHUNK]
            ride = list(extra) if first else []
            first = False
            replies = yield Batch(cypher.node_times(chunk), cypher.own_changes_of(chunk, known),
                                  cypher.step_up_all(chunk), *ride)
            times, own_rows, support_rows = replies[:3]
            extra_replies += replies[3:]
            for node, kind, state, created, executed in times:
                infos[node] = _Info(Kind(kind), State(state), created, executed)
            changes += own_rows
            support += support_rows
            for node, _j, parent, _kind in support_rows:
                if node in infos and infos[node].kind is Kind.SOURCE:
                    continue  # nothing rests under a source: its ancestry is not walked
                if parent not in seen:  # the next level
                    seen.add(parent)
                    found.append(parent)
        nodes += found
        frontier = found
    if first and extra:  # no node to read: the extra queries alone
        extra_replies = list((yield Batch(*extra)))
    kept = {n for n in nodes if n in infos and infos[n].known_by(known)}
    present = [n for n in nodes if n in kept]
    own = {n: p for n, p in _own_from(changes, t).items() if n in kept}
    justs, _ = _justifications(support)
    region = Region(nodes={n: own.get(n, Premise()) for n in present},
                    justifications={n: [j for j in justs.get(n, []) if set(j) <= kept]
                                    for n in present})
    labels = label(region)
    return View({n: labels.get(n) for n in nodes}, own, region.justifications, infos), extra_replies


def states_at(ids: Sequence[str], t: int, known: int) -> Op[dict[str, State | None]]:
    """Each node's state at valid time `t` as recorded by `known` (None: not known by then)."""
    view, _ = yield from view_at(ids, t, known)
    return {node: view.states.get(node) for node in ids}


def check_at(target: str | ToolCall, policy: Policy, *, as_of: TimeLike | None,
             known_at: TimeLike | None) -> Op[Verdict]:
    """Was `target` allowed at valid time `as_of`, as Rippl knew things at `known_at`?

    Computed, not read back: the own retractions of the sources and claims under it at that time
    (valid time, as recorded then), and truth maintenance over its ancestry. A tool call follows
    the matching rule of the live check: allowed only if every declared action it matches was."""
    t, known = read_times(as_of, known_at)
    when = f"on {iso(t)} (as known at {iso(known)})"
    call = target if isinstance(target, ToolCall) else None
    if call is not None and call.action_id is None:
        rows = yield from preflight.declared(call)
        ids = [r[0] for r in rows]
        if not ids:
            return _unknown_at(call, None, policy, when)
    else:
        ids = [check_id(call.action_id if call is not None else target,
                        what="action_id" if call is not None else "target")]
    view, _ = yield from view_at(ids, t, known)
    for node_id in ids:
        if view.states.get(node_id) is None:
            return _unknown_at(call, node_id, policy, when)
    shaky = [n for n in ids if view.states[n] is not State.IN]
    if not shaky:
        node_id = ids[0]
        info = view.infos[node_id]
        executed = info.executed_at is not None and info.executed_at <= t
        status = public_status(info.kind, State.IN, executed)
        expired = freshness.expired_then((yield cypher.reads_of(ids)), t, known)
        if expired:  # stale is not false: it was held, on a reading no longer valid then
            names = "; ".join(f"{e.text} ({e.premise}, {e.status})" for e in expired)
            what = "superseded" if all(e.status == "superseded" for e in expired) else "stale"
            return Verdict(allowed=False, target=node_id, kind=info.kind, state=State.IN,
                           tool_call=call, expired=expired,
                           reason=f"{node_id} would have been denied as {what} {when}: it rested "
                                  f"on a reading no longer valid then: {names}")
        held = f"{node_id} was {status}" if len(ids) == 1 else f"{', '.join(ids)} were {status}"
        return Verdict(allowed=True, target=node_id, kind=info.kind, state=State.IN,
                       tool_call=call, reason=f"{held} {when}: every premise under "
                                              f"{'it' if len(ids) == 1 else 'each'} held")
    denying = [n for n in shaky if not (view.states[n] is State.AT_RISK and policy.at_risk == "allow")]
    node_id = (denying or shaky)[0]
    blockers: list[Blocker] = []
    for node in denying or shaky:
        blockers += [b for b in (yield from blockers_at(node, view)) if b not in blockers]
    info, state = view.infos[node_id], view.states[node_id]
    assert state is not None
    status = public_status(info.kind, state)
    allowed = not denying
    names = ", ".join(f"{b.premise} ({b.status})" for b in blockers) or "unknown premises"
    verb = "would have been allowed despite" if allowed else "would have been denied:"
    reason = f"{node_id} {verb} {status} {when}; premise {names}"
    return Verdict(allowed=allowed, target=node_id, kind=info.kind, state=state, reason=reason,
                   blockers=blockers, tool_call=call)


def _unknown_at(call: ToolCall | None, found: str | None, policy: Policy, when: str) -> Verdict:
    """The as-of verdict when nothing answered then: an action id Rippl had no record of
    (`found`), or a tool call no declared action matches (several matches are judged together,
    never here)."""
    allowed = policy.unknown == "allow"
    outcome = "allowed (policy unknown='allow')" if allowed else "denied (fail closed)"
    if found is None:
        what = (f"no action in the graph is executed by tool {call.name if call else ''!r} with "
                "these args; add the action or pass action_id")
    else:
        what = f"Rippl has no record of {found} {when}; it was added later, or check the id"
    return Verdict(allowed=allowed, target=found, reason=f"{outcome}: {what}", tool_call=call)


def blockers_at(node_id: str, view: View) -> Op[list[Blocker]]:
    """The premises under `node_id` that were retracted, or proposed for retraction, themselves
    at the view's time (never a node that was only OUT or at risk because of what it rests on),
    each with its trail to the node through premises that were not IN."""

    def state(n: str) -> State:
        return view.states.get(n) or State.IN

    parents: dict[str, str | None] = {node_id: None}
    frontier = [node_id]
    while frontier:  # breadth first, upstream, through nodes that were not IN
        nxt = []
        for n in frontier:
            for a in sorted({a for j in view.justifications.get(n, []) for a in j}):
                if a not in parents and state(a) is not State.IN:
                    parents[a] = n
                    nxt.append(a)
        frontier = nxt
    roots = [n for n in parents if state(n) is not State.IN
             and (view.own.get(n, Premise()).retracted or view.own.get(n, Premise()).pending)]
    props: dict[str, dict[str, Any]] = {}
    if roots:
        records = yield cypher.get_nodes(roots)
        props = {r[0]["id"]: r[0] for r in records}
    blockers = []
    for root in roots:
        path = [root]
        while (parent := parents[path[-1]]) is not None:
            path.append(parent)
        own = view.own[root]
        blockers.append(Blocker(premise=root, kind=Kind(props[root]["kind"]),
                                state=State.OUT if own.retracted else State.AT_RISK,
                                reason=props[root].get("reason"),
                                trail=[n for n in path if not is_context(n)]))
    return sorted(blockers, key=lambda b: (len(b.trail), b.premise))


def backfill_own_changes() -> Op[None]:
    """For a graph written before own retraction records existed: a record of each node's current
    own retraction state (retracted since its `retracted_at`; pending since its latest undecided
    proposal), so as-of reads see it. Earlier retractions, since undone, are not reconstructed."""
    while True:
        rows = yield cypher.flags_without_records(5000)
        if not rows:
            return
        records = []
        for node, retracted, retracted_at, pending, created_at, proposed_at in rows:
            since = created_at if created_at is not None else 0
            if retracted:
                at = retracted_at if retracted_at is not None else since
                records.append({"id": node, "retracted": True, "pending": None, "at": at, "now": at})
            if pending:
                at = proposed_at if proposed_at is not None else since
                records.append({"id": node, "retracted": None, "pending": int(pending), "at": at,
                                "now": at})
        yield cypher.own_changes(records, cause="backfill", review=None)


def support_of(ids: Sequence[str], query: Callable[[Sequence[str]], Query]) -> Op[
        tuple[dict[str, list[list[str]]], dict[str, tuple[Any, ...]]]]:
    """Justifications of `ids` (antecedent lists grouped by the edge's justification key), and
    the query's extra columns for each antecedent."""
    rows: list[tuple[Any, ...]] = []
    for start in range(0, len(ids), READ_CHUNK):
        rows += (yield query(ids[start:start + READ_CHUNK]))
    return _justifications(rows)


def _justifications(rows: Sequence[tuple[Any, ...]]) -> tuple[dict[str, list[list[str]]],
                                                               dict[str, tuple[Any, ...]]]:
    """Rows (node, justification key, antecedent, extra...) grouped into each node's
    justifications, and each antecedent's extra columns."""
    grouped: dict[str, dict[Any, list[str]]] = defaultdict(lambda: defaultdict(list))
    extra: dict[str, tuple[Any, ...]] = {}
    for node, j, antecedent, *rest in rows:
        grouped[node][j].append(antecedent)
        extra[antecedent] = tuple(rest)
    justs = {node: [a for _, a in sorted(groups.items(), key=lambda kv: str(kv[0]))]
             for node, groups in grouped.items()}
    return justs, extra
