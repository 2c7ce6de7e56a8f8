"""The pre-flight check: may this action (or decision, or tool call) go ahead?

The allowed path is one indexed read of the materialised state. Only a denial walks upstream,
through the nodes that are not IN, to name every blocking premise and its trail.
"""

from __future__ import annotations

from typing import Any

from rippl_core._runtime.op import Op
from rippl_core._runtime.validation import call_key, canonical_args, check_id
from rippl_core.causal import cypher
from rippl_core.causal.walk import trail, walk
from rippl_core.errors import DatabaseError, RipplError
from rippl_core.models import Blocker, Policy, ToolCall, Verdict
from rippl_core.vocabulary import Kind, State, public_status


def _resolve(call: ToolCall) -> Op[tuple[str | list[str] | None, list[tuple[Any, ...]]]]:
    """Resolve a tool call; also return the state row of the action when the lookup read it."""
    if call.action_id is not None:
        return check_id(call.action_id, what="action_id"), []
    check_id(call.name, what="tool name")
    exact = call_key(call.name, canonical_args(call.args))
    rows = yield cypher.resolve_call([exact, call_key(call.name, None)])
    exact_rows = sorted(r for r in rows if r[1] == exact)
    candidates = exact_rows or sorted(r for r in rows if r[1] != exact)
    if len(candidates) == 1:
        return candidates[0][0], [candidates[0][2:]]
    return [r[0] for r in candidates] or None, []


def resolve(call: ToolCall) -> Op[str | list[str] | None]:
    """The action a tool call executes: its explicit action id, else the one action whose tool and
    canonical args match (an action declared with a tool and no args matches any args). Returns
    None when nothing matches and the list of candidates when several do."""
    resolved, _ = yield from _resolve(call)
    return resolved


def check(target: str | ToolCall, policy: Policy) -> Op[Verdict]:
    """Allow or deny `target` (an action or decision id, or a tool call), failing closed. A check
    by id, or by a tool call, is one indexed read when allowed."""
    call = target if isinstance(target, ToolCall) else None
    rows: list[tuple[Any, ...]] = []
    if call is not None:
        resolved, rows = yield from _resolve(call)
        if not isinstance(resolved, str):
            return _unknown(call, resolved, policy)
        node_id = resolved
    else:
        node_id = check_id(target, what="target")
    if not rows:
        rows = yield cypher.node_state(node_id)
    if not rows:
        return _unknown(call, node_id, policy)
    kind, state = Kind(rows[0][0]), State(rows[0][1])
    if state is State.IN:
        return Verdict(allowed=True, target=node_id, kind=kind, state=state, tool_call=call,
                       reason=f"{node_id} is {public_status(kind, state, rows[0][2] is not None)}: "
                              "every premise under it holds")
    blockers = yield from find_blockers(node_id)
    allowed = state is State.AT_RISK and policy.at_risk == "allow"
    names = ", ".join(f"{b.premise} ({b.status})" for b in blockers) or "unknown premises"
    verb = "allowed despite" if allowed else "denied:"
    reason = (f"{node_id} {verb} {public_status(kind, state)}; "
              f"{'it rests on' if allowed else 'premise'} {names}"
              + ("" if allowed else _next_step(state)))
    return Verdict(allowed=allowed, target=node_id, kind=kind, state=state, reason=reason,
                   blockers=blockers, tool_call=call)


def _next_step(state: State) -> str:
    if state is State.AT_RISK:
        return ". A retraction is awaiting human review; approve or reject it, then retry."
    return ". Choose an action that does not rest on it, or reinstate the premise if it was wrong."


def find_blockers(node_id: str) -> Op[list[Blocker]]:
    """Every retracted or at-risk premise under `node_id`, each with its trail to the node."""
    visits = yield from walk([node_id], down=False, blocking_only=True)
    blockers = []
    for visit in visits.values():
        if visit.retracted or visit.pending:
            path = trail(visits, visit.id)[::-1]
            blockers.append(Blocker(premise=visit.id, kind=Kind(visit.kind),
                                    state=State(visit.state), reason=visit.reason, trail=path))
    rows = yield cypher.get_nodes([node_id])  # the node itself may be a retracted premise
    props = rows[0][0] if rows else {}
    if props.get("retracted") or props.get("pending"):
        blockers.append(Blocker(premise=node_id, kind=Kind(props["kind"]),
                                state=State(props["state"]), reason=props.get("reason"),
                                trail=[node_id]))
    return sorted(blockers, key=lambda b: (len(b.trail), b.premise))


def _unknown(call: ToolCall | None, found: str | list[str] | None, policy: Policy) -> Verdict:
    allowed = policy.unknown == "allow"
    if isinstance(found, list):
        what = (f"tool call {call.name if call else ''} matches several actions "
                f"({', '.join(found)}); pass action_id to say which")
        target = None
    elif call is not None and found is None:
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

