"""The pre-flight check: may this action (or decision, or tool call) go ahead?

One indexed read of the materialised state, allowed or denied: a node that is not IN carries
what blocks it (every retracted or at-risk premise under it, with its trail; see
`rippl_core.causal.blockers`). Only a node that carries none (too many blockers, or written
before they were kept) is explained by walking upstream through the nodes that are not IN.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from rippl_core._runtime import telemetry
from rippl_core._runtime.op import Op
from rippl_core._runtime.timeutil import now_ms
from rippl_core._runtime.validation import call_key, canonical_args, check_id
from rippl_core.causal import cypher, freshness
from rippl_core.causal.blockers import Premise, blocker_list, stored_blockers, trails
from rippl_core.causal.walk import walk
from rippl_core.errors import DatabaseError, RipplError
from rippl_core.models import Blocker, Policy, ToolCall, Verdict
from rippl_core.vocabulary import Kind, State, public_status

type ActionRow = tuple[str, Kind, State, bool]  # id, kind, state, executed


def declared(call: ToolCall) -> Op[list[ActionRow]]:
    """Every declared action a tool call matches: those with its tool and exact canonical args,
    and those declared with its tool and no args (any args). Actions captured from a run are not
    declared: they carry no call key and match only their own run's calls."""
    check_id(call.name, what="tool name")
    rows, _ = yield from _declared(call)
    return rows


def _declared(call: ToolCall) -> Op[tuple[list[ActionRow], dict[str, list[Blocker]]]]:
    """The declared actions a tool call matches, and the blockers those not IN carry."""
    check_id(call.name, what="tool name")
    exact = call_key(call.name, canonical_args(call.args))
    rows = yield cypher.resolve_call([exact, call_key(call.name, None)])
    ordered = sorted(rows, key=lambda r: (r[1] != exact, r[0]))  # exact matches first
    carried = {r[0]: stored_blockers(r[5]) for r in ordered if r[5] is not None}
    return [(r[0], Kind(r[2]), State(r[3]), r[4] is not None) for r in ordered], carried


def resolve(call: ToolCall) -> Op[str | list[str] | None]:
    """The actions a tool call executes: its explicit action id, else every declared action it
    matches (one id, or the list when several do; None when none does)."""
    if call.action_id is not None:
        return check_id(call.action_id, what="action_id")
    rows = yield from declared(call)
    ids = [r[0] for r in rows]
    return ids[0] if len(ids) == 1 else ids or None


@telemetry.traced(telemetry.check_spec(lambda target, exc, policy: error_verdict(target, exc,
                                                                               policy)))
def check(target: str | ToolCall, policy: Policy) -> Op[Verdict]:
    """Allow or deny `target` (an action or decision id, or a tool call), failing closed.

    A tool call is allowed only if every declared action matching it is allowed (so declaring one
    more action can only add a veto, never lift one); with no match, the policy's `unknown`
    decides. One indexed read when allowed, by id or by tool call; a second (the readings
    themselves) only for a node whose readings' kept bound (`reads_until`) has passed."""
    call = target if isinstance(target, ToolCall) else None
    unsure: str | None = None  # a node whose readings may have expired: read them
    if call is not None and call.action_id is None:
        rows, carried = yield from _declared(call)  # declared actions rest on no captured reading
    else:
        node_id = check_id(call.action_id if call is not None else target,
                           what="action_id" if call is not None else "target")
        found = [row[0] for row in (yield cypher.node_state(node_id))]
        rows = [(node_id, Kind(r[0]), State(r[1]), r[2] is not None) for r in found]
        carried = ({node_id: stored_blockers(found[0][3])} if found and found[0][3] is not None
                   else {})
        if not rows:
            return _unknown(call, node_id, policy)
        until, has_reads = found[0][4], found[0][5]
        if has_reads and (until is None or until <= now_ms()):
            unsure = node_id
    if not rows:
        return _unknown(call, None, policy)
    verdict = yield from judge(rows, policy, call, carried)
    if unsure is not None and verdict.allowed:
        [[reads]] = yield cypher.node_reads(unsure)
        verdict = yield from fresh(verdict, reads)
    return verdict


def fresh(verdict: Verdict, reads: freshness.Reads | None) -> Op[Verdict]:
    """An allowed verdict stays allowed only while the readings under it are fresh (stale is not
    false: a denial that asks the agent to read again)."""
    if not verdict.allowed:
        return verdict
    now = now_ms()
    expired = freshness.expired_at(reads, now)
    if not expired:
        return verdict
    denied = yield from freshness.deny(verdict, expired, now)
    return denied


def judge(rows: list[ActionRow], policy: Policy, call: ToolCall | None,
          carried: Mapping[str, list[Blocker]] | None = None) -> Op[Verdict]:
    """The verdict on a call that executes every action of `rows`: allowed only if each is (IN,
    or AT_RISK under at_risk='allow'). When one is not IN, the verdict names every retracted or
    at-risk premise under it, with its trail (`carried`: the blockers already read with the rows;
    the others are read with `find_blockers`)."""
    if all(r[2] is State.IN for r in rows):
        node_id, kind, state, executed = rows[0]
        holds = (f"{node_id} is {public_status(kind, state, executed)}" if len(rows) == 1 else
                 f"{', '.join(r[0] for r in rows)} are {public_status(kind, state)}")
        return Verdict(allowed=True, target=node_id, kind=kind, state=state, tool_call=call,
                       reason=f"{holds}: every premise under {'it' if len(rows) == 1 else 'each'} "
                              "holds")
    shaky = [r for r in rows if r[2] is not State.IN]
    denying = [r for r in shaky if not (r[2] is State.AT_RISK and policy.at_risk == "allow")]
    blockers: list[Blocker] = []
    for node_id, *_ in denying or shaky:
        found = (carried or {}).get(node_id)
        if found is None:
            found = yield from find_blockers(node_id)
        blockers += [b for b in found if b not in blockers]
    allowed = not denying
    node_id, kind, state, _ = (denying or shaky)[0]
    others = [r[0] for r in (denying or shaky)[1:]]
    names = ", ".join(f"{b.premise} ({b.status})" for b in blockers) or "unknown premises"
    verb = "allowed despite" if allowed else "denied:"
    reason = (f"{node_id}{_also(others)} {verb} "
              f"{public_status(kind, state)}; {'it rests on' if allowed else 'premise'} {names}"
              + ("" if allowed else _next_step(state)))
    return Verdict(allowed=allowed, target=node_id, kind=kind, state=state, reason=reason,
                   blockers=blockers, tool_call=call)


def _next_step(state: State) -> str:
    if state is State.AT_RISK:
        return ". A retraction is awaiting human review; approve or reject it, then retry."
    return ". Choose an action that does not rest on it, or reinstate the premise if it was wrong."


def find_blockers(node_id: str) -> Op[list[Blocker]]:
    """Every retracted or at-risk premise under `node_id` (the node itself included), each with
    its trail to the node: what the node carries, else a walk of its ancestry."""
    rows = yield cypher.node_blockers(node_id)
    if rows and rows[0][5] is not None:
        return stored_blockers(rows[0][5])
    found = yield from walk_blockers(node_id, rows)
    return found


def walk_blockers(node_id: str, rows: list[tuple[Any, ...]] | None = None) -> Op[list[Blocker]]:
    """`find_blockers` by walking the ancestry, whatever the node carries (`rows`: the node's
    `cypher.node_blockers` row, when already read)."""
    if rows is None:
        rows = yield cypher.node_blockers(node_id)
    if not rows:
        return []
    kind, state, retracted, pending, reason, _ = rows[0]
    edges: list[tuple[str, str]] = []
    visits = yield from walk([node_id], down=False, blocking_only=True, edges=edges)
    premises = {v.id: Premise(v.kind, v.state, v.reason) for v in visits.values()}
    premises[node_id] = Premise(kind, state, reason)
    blocking = [v.id for v in visits.values() if v.retracted or v.pending]
    if retracted or pending:
        blocking.append(node_id)
    preds: dict[str, list[str]] = defaultdict(list)
    for below, above in edges:
        preds[below].append(above)
    found = trails([node_id, *visits], preds, blocking, {})[node_id]
    assert found is not None  # nothing is unknown to a walk of the whole ancestry
    return blocker_list(found, premises)


def _unknown(call: ToolCall | None, found: str | None, policy: Policy) -> Verdict:
    """The verdict when nothing in the graph answers: an action id not there (`found`), or a
    tool call no declared action matches (several matches are judged together, never here)."""
    allowed = policy.unknown == "allow"
    if call is not None and found is None and policy.unknown == "record":
        return Verdict(allowed=False, target=None, tool_call=call, reason=(
            f"denied (fail closed): no declared action matches {call.name} and no run records "
            "it (policy unknown='record' judges calls captured in a run: rippl.run(...))"))
    if call is not None and found is None:
        what = (f"no action in the graph is executed by tool {call.name!r} with these args; "
                "add the action (add_action(..., tool=, args=)) or pass action_id")
        target = None
    else:
        what = f"{found} is not in the graph; add it or check the id"
        target = found
    outcome = "allowed (policy unknown='allow')" if allowed else "denied (fail closed)"
    return Verdict(allowed=allowed, target=target, reason=f"{outcome}: {what}", tool_call=call)


def error_verdict(target: str | ToolCall, exc: Exception, policy: Policy) -> Verdict:
    """The verdict when the graph cannot answer: deny by default, and say why."""
    if isinstance(exc, RipplError) and not isinstance(exc, DatabaseError):
        raise exc
    call = target if isinstance(target, ToolCall) else None
    allowed = policy.on_error == "allow"
    outcome = "allowed (policy on_error='allow')" if allowed else "denied (fail closed)"
    name = call.name if call else target
    return Verdict(allowed=allowed, target=None if call else str(target), tool_call=call,
                   reason=f"{outcome}: the premise graph could not be checked for {name}: {exc}")



def _also(others: list[str]) -> str:
    return f" (and {', '.join(others)})" if others else ""
