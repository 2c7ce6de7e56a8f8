"""The capture operations (sans I/O, run by either driver).

`decide` records a model turn and judges each of its calls: one batch of reads (the run's
observations, the vetoes the model read, the declared actions the calls match) and one blind
commit (the decision and its actions, labelled from their premises as they are when it runs); a
replayed turn finds its decision and writes nothing. `judge` re-checks one call when it is about
to execute (after a pause, a queue, a retry). `executed` marks a call executed and makes its
output an observation, in one commit. A call is allowed only if its captured action and every
declared action it matches allow it (`preflight.judge`); whatever cannot be recorded or checked
is denied by the adapters' guard.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rippl_core._runtime import telemetry
from rippl_core._runtime.op import Batch, Commit, Op
from rippl_core._runtime.timeutil import TimeLike, from_ms, iso, now_ms, read_times, to_ms
from rippl_core._runtime.validation import SequenceNotStr, call_key, check_id, check_ids
from rippl_core.capture import cypher, ids
from rippl_core.causal import cypher as causal_cypher
from rippl_core.causal import history, preflight
from rippl_core.causal.preflight import ActionRow
from rippl_core.causal.spec import NodeSpec
from rippl_core.causal.write import justify
from rippl_core.errors import ConflictError, InvalidInputError, NotFoundError
from rippl_core.models import Compensation, Policy, ToolCall, Verdict
from rippl_core.vocabulary import Kind, State


@dataclass(frozen=True, slots=True)
class RunRef:
    """Who is running: the run's id (deterministic, so a resumed run continues its trace), the
    agent and the framework."""

    id: str
    agent: str | None = None
    framework: str | None = None

    def __post_init__(self) -> None:
        check_id(self.id, what="run id")
        for value, what in ((self.agent, "agent"), (self.framework, "framework")):
            if value is not None:
                check_id(value, what=what)

    def props(self, now: int) -> dict[str, Any]:
        """The run node's identity and its root source and claim (created on first use)."""
        who = f"{self.agent} ({self.framework})" if self.agent and self.framework else \
            self.agent or self.framework or "an agent"
        source = NodeSpec(Kind.SOURCE, f"run {self.id} of {who} started", ids.run_source(self.id),
                          source_type="run").validated().props(now)
        claim = NodeSpec(Kind.CLAIM, f"the instructions of run {self.id} hold",
                         ids.run_claim(self.id)).validated().props(now)
        return {"id": self.id, "agent": self.agent, "framework": self.framework,
                "source": {**source, "run": self.id}, "claim": {**claim, "run": self.id}}


def capture_policy(policy: Policy) -> Policy:
    """The policy of a captured run: `unknown` is "record" unless the caller chose it (a policy
    that says unknown="deny" is a strict allow-list: calls no declared action matches are
    recorded and denied; "allow" leaves them unprotected)."""
    return policy if "unknown" in policy.model_fields_set else policy.model_copy(
        update={"unknown": "record"})


def _captured_props(spec: NodeSpec, run: str, now: int, **extra: Any) -> dict[str, Any]:
    props = spec.validated().props(now)
    props.pop("call_key", None)  # a captured action is matched only by its own run's calls
    return {**props, "run": run, **{k: v for k, v in extra.items() if v is not None}}


def _rows(found: Sequence[tuple[Any, ...]]) -> list[ActionRow]:
    return [(r[0], Kind(r[2]), State(r[3]), r[4] is not None) for r in found]


# ------------------------------------------------------------------------------------ observing


def observe(run: RunRef, claims: SequenceNotStr[str], *, ref: str | None, kind: str) -> Op[list[str]]:
    """Record that the run saw these claims (a memory read, a citation), under `ref` (the handle
    of the message that carried them, or None: in context for the rest of the run). Returns the
    claims recorded; unknown ids are refused before anything is written."""
    claim_ids = check_ids(claims, what="claims")
    if ref is not None:
        check_id(ref, what="ref")
    if not claim_ids:
        return []
    found = yield causal_cypher.node_briefs(claim_ids)
    kinds = {row[0]: row[1] for row in found}
    missing = [c for c in claim_ids if c not in kinds]
    if missing:
        raise NotFoundError(f"not found: {', '.join(missing)}; an observation names claims of the "
                            "graph (add them with add_claim first)")
    wrong = [c for c in claim_ids if kinds[c] != Kind.CLAIM.value]
    if wrong:
        raise InvalidInputError(f"{', '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} not a "
                                "claim; a run observes claims")
    now = now_ms()
    observation = {"id": ids.observation(run.id, ref, claim_ids), "run": run.id, "ref": ref,
                   "key": cypher.observation_key(run.id, ref), "kind": kind, "at": now}
    rows = yield Commit([cypher.observe(run.props(now), _dropped(observation), claim_ids, now)],
                        blind=True)
    return sorted({row[0] for row in rows[0]})


# ------------------------------------------------------------------------------------ deciding


@telemetry.traced(telemetry.DECIDE)
def decide(run: RunRef, turn: str, calls: Sequence[ToolCall], *, context: SequenceNotStr[str] | None,
           told: SequenceNotStr[str], policy: Policy) -> Op[list[Verdict]]:
    """Record a model turn that emits `calls` and judge each call (see the module docstring)."""
    turn = check_id(turn, what="turn id")
    if isinstance(calls, ToolCall) or not calls:
        raise InvalidInputError("calls must be a non-empty list of ToolCall (the turn's calls)")
    named = [ids.Call.of(call, turn, i) for i, call in enumerate(calls)]
    if len({c.ref for c in named}) != len(named):
        raise InvalidInputError("two calls of one turn share a call id; each call needs its own")
    refs = None if context is None else check_ids(context, what="context")
    told_ids = check_ids(told, what="told")
    now = now_ms()
    actions = [_action_props(run, c, now) for c in named]
    decision = _captured_props(NodeSpec(Kind.DECISION, _decision_text(run, turn, named),
                                        ids.decision(run.id, turn, named)), run.id, now, turn=turn)
    keys = sorted({k for c in named for k in (c.key, call_key(c.tool, None))})
    commit = Commit([cypher.decide(run.props(now), decision, refs, told_ids, actions, now),
                     cypher.declared(keys, _pinned(calls))], blind=True)
    try:  # one round trip: the turn recorded, its context set computed, declared matches read
        replies = yield commit
    except ConflictError:  # the same turn recorded concurrently: this time it finds it
        replies = yield commit
    states = {row[0]: (State(row[1]), row[2] is not None) for row in replies[0]}
    declared = replies[1]
    verdicts = []
    for call, named_call, props in zip(calls, named, actions, strict=True):
        own = (props["id"], Kind.ACTION, *states[props["id"]])
        verdict = yield from _verdict(own, _matching(declared, call, named_call, own[0]), call,
                                      policy)
        verdicts.append(verdict)
    return verdicts


def _pinned(calls: Sequence[ToolCall]) -> list[str]:
    """The action ids calls were mapped to explicitly (e.g. by an adapter's resolver)."""
    return sorted({check_id(c.action_id, what="action_id") for c in calls if c.action_id})


def _matching(declared: Sequence[tuple[Any, ...]], call: ToolCall, named: ids.Call,
              own: str) -> list[ActionRow] | None:
    """The declared actions a call matches: its explicit action id, and those of its tool with
    its exact args or any args. None when its explicit action id is not in the graph."""
    keys = (named.key, call_key(named.tool, None))
    rows = [r for r in declared if r[0] != own and (r[1] in keys or r[0] == call.action_id)]
    if call.action_id is not None and not any(r[0] == call.action_id for r in rows):
        return None
    return _rows(rows)


def _action_props(run: RunRef, call: ids.Call, now: int) -> dict[str, Any]:
    spec = NodeSpec(Kind.ACTION, call.title(), ids.action(run.id, call), tool=call.tool,
                    args=json.loads(call.args))
    return _captured_props(spec, run.id, now, call_id=call.ref,
                           call_ref=cypher.call_ref(run.id, call.ref))


def _decision_text(run: RunRef, turn: str, calls: Sequence[ids.Call]) -> str:
    who = run.agent or "the agent"
    return f"{who} calls {', '.join(c.tool for c in calls)} (turn {turn} of run {run.id})"


def _verdict(own: ActionRow, declared: list[ActionRow] | None, call: ToolCall,
             policy: Policy) -> Op[Verdict]:
    """The verdict on a captured call: its own action and every declared match must allow it
    (None: the action it was mapped to explicitly is not in the graph). A denial records what it
    named on the captured action, for the turns after it."""
    if declared is None:
        return Verdict(allowed=False, target=call.action_id, tool_call=call, reason=(
            f"denied (fail closed): {call.action_id}, the action {call.name} is mapped to, is not "
            "in the graph; add it or check the id"))
    if not declared and policy.unknown in ("deny", "allow"):  # no declared match: the policy says
        allowed = policy.unknown == "allow"
        return Verdict(allowed=allowed, target=own[0], kind=own[1], state=own[2], tool_call=call,
                       reason=f"{'allowed' if allowed else 'denied'} (policy unknown="
                              f"'{policy.unknown}'): no declared action matches {call.name}; the "
                              "call is recorded" + ("" if allowed else
                                                    " (a strict allow-list: declare the action)"))
    verdict = yield from preflight.judge([*declared, own], policy, call)
    # What the veto tells the model is false leaves its later turns: retracted premises only (a
    # premise under review may yet be rejected; later turns keep resting on it meanwhile).
    named = sorted({node for b in verdict.blockers if b.state is State.OUT for node in b.trail})
    if not verdict.allowed and named:
        yield Commit([cypher.tell(own[0], named)], blind=True)
    return verdict


# ------------------------------------------------------------------------------------ judging


@telemetry.traced(telemetry.JUDGE)
def judge(run: RunRef, call: ToolCall, *, policy: Policy) -> Op[Verdict]:
    """Re-check a call about to execute. Its captured action (by the run and the call id) and
    every declared match must allow it. A call whose arguments changed since its turn was
    decided (a human edit) is a new action of the same decision; a call of no decided turn is
    decided now, as a turn of its own resting on everything the run observed."""
    if call.id is None:
        raise InvalidInputError("judging a call at execution needs its call id; decide its turn "
                                "with the call instead")
    named = ids.Call.of(call, call.id, 0)
    found, declared = yield Batch(cypher.captured(run.id, [named.ref]),
                                  cypher.declared([named.key, call_key(named.tool, None)],
                                                  _pinned([call])))
    same = [r for r in found if r[2] == named.args]
    if not found:
        verdicts = yield from decide(run, f"call:{named.ref}", [call], context=None, told=(),
                                     policy=policy)
        return verdicts[0]
    if not same:  # edited since its turn: the same decision drives the edited call
        edited = yield from _edited(run, call, named, decision=found[0][6], policy=policy)
        return edited
    own = (same[0][1], Kind(same[0][3]), State(same[0][4]), same[0][5] is not None)
    verdict = yield from _verdict(own, _matching(declared, call, named, own[0]), call, policy)
    return verdict


def _edited(run: RunRef, call: ToolCall, named: ids.Call, *, decision: str | None,
            policy: Policy) -> Op[Verdict]:
    if decision is None:
        raise NotFoundError(f"the captured action of call {named.ref} has lost its decision")
    now = now_ms()
    action = _action_props(run, named, now)
    replies = yield Commit([cypher.drive(run.props(now), decision, [action], now)], blind=True)
    row = replies[0][0]
    found = yield cypher.declared([named.key, call_key(named.tool, None)], _pinned([call]))
    verdict = yield from _verdict((row[0], Kind.ACTION, State(row[1]), row[2] is not None),
                                  _matching(found, call, named, row[0]), call, policy)
    return verdict


# ------------------------------------------------------------------------------------ executing


@telemetry.traced(telemetry.EXECUTED)
def executed(run: RunRef, call: ToolCall, output: Any, *, ok: bool) -> Op[str]:
    """Mark a captured call executed and record its output as an observation of the run (a
    `tool_result` source for this call, and the claim "`tool(args)` returned …"), in one commit.
    Returns the result claim's id. An output that makes an existing claim hold again is linked
    with a full relabel of what rests on it."""
    if call.id is None:
        raise InvalidInputError("recording an execution needs the call id it was decided with")
    named = ids.Call.of(call, call.id, 0)
    now = now_ms()
    digest = ids.output_digest(output)
    claim_id = ids.result_claim(named, digest)
    source = NodeSpec(Kind.SOURCE, f"the result of call {named.ref} in run {run.id}",
                      ids.result_source(run.id, named.ref), source_type="tool_result")
    claim = NodeSpec(Kind.CLAIM, ids.result_text(named, output), claim_id)
    result: dict[str, Any] = {"status": "ok" if ok else "error", "digest": digest,
              "source": {**_captured_props(source, run.id, now, tool=named.tool, call_id=named.ref,
                                           output=digest), "args": named.args},
              "claim": {**claim.validated().props(now), "captured": True}}
    observation = {"id": ids.observation(run.id, named.ref, [claim_id]), "run": run.id,
                   "ref": named.ref, "key": cypher.observation_key(run.id, named.ref),
                   "kind": "tool_result", "at": now}

    def record(action_id: str) -> Commit:
        event = {"type": "action_executed", "node": action_id, "kind": Kind.ACTION.value,
                 "cause": "capture", "at": iso(now)}
        return Commit([cypher.executed(run.id, action_id, result, observation, now)], [event],
                      blind=True)

    replies = yield record(ids.action(run.id, named))  # the action its turn recorded: one round trip
    if not replies[0]:  # args that differ from every recorded call: the call id names the action
        found = yield cypher.captured(run.id, [named.ref])
        if not found:
            raise NotFoundError(f"call {named.ref} of run {run.id} was never decided; judge it "
                                "before it runs, then record its execution")
        replies = yield record(found[0][1])
    if replies[0] and not replies[0][0][1]:  # the claim holds again through this new source
        yield from justify(claim_id, [result["source"]["id"]], now=now)
    return claim_id


def mark_executed(action_id: str, *, at: TimeLike | None, output: Any | None) -> Op[None]:
    """Mark any action executed (a declared one included): from then on, a retraction that
    reaches it lists it among the compensations."""
    action_id = check_id(action_id, what="action id")
    when = to_ms(at, name="at", default=now_ms())
    digest = ids.output_digest(output) if output is not None else None
    found = yield causal_cypher.node_briefs([action_id])
    if not found:
        raise NotFoundError(f"no node {action_id}; check the id")
    if found[0][1] != Kind.ACTION.value:
        raise InvalidInputError(f"{action_id} is a {found[0][1]}; only actions are executed")
    yield Commit([cypher.mark_executed(action_id, when, digest)], blind=True)


def close(run: RunRef) -> Op[None]:
    """Close the run (prune_runs then may remove its capture)."""
    yield Commit([cypher.close(run.id, now_ms())], blind=True)


# ------------------------------------------------------------------------------------ after


def compensations(*, as_of: TimeLike | None, known_at: TimeLike | None) -> Op[list[Compensation]]:
    """Actions executed on a premise since retracted: each with the trail to what failed.
    As of a past time: those executed by then whose status then was Premise Retracted."""
    if as_of is None and known_at is None:
        rows = yield cypher.EXECUTED_OUT
        found = [row[0] for row in rows]
        states = {props["id"]: State.OUT for props in found}
    else:
        t, known = read_times(as_of, known_at)
        rows = yield cypher.EXECUTED
        found = [row[0] for row in rows if row[0]["executed_at"] <= t]
        at_t = yield from history.states_at([p["id"] for p in found], t, known)
        states = {node: state for node, state in at_t.items() if state is State.OUT}
        found = [p for p in found if p["id"] in states]
    listed = []
    for props in found:
        blockers = yield from preflight.find_blockers(props["id"])
        listed.append(Compensation(
            action=props["id"], title=props.get("text", ""), tool=props.get("tool"),
            args=json.loads(props["args"]) if props.get("args") else None, run=props.get("run"),
            call_id=props.get("call_id"), executed_at=from_ms(props["executed_at"]),
            state=states[props["id"]], blockers=blockers))
    return listed


def prune_runs(*, older_than: TimeLike, include_open: bool) -> Op[list[str]]:
    """Remove the capture of runs closed before `older_than` (with include_open, also of runs
    idle since before it): observations, decisions, actions, result sources, and result claims
    nothing else rests on. Receipts, reviews, and claims retracted or under review are kept."""
    before = to_ms(older_than, name="older_than")
    rows = yield cypher.stale_runs(before, include_open)
    runs = [row[0] for row in rows]
    if runs:
        yield Commit([cypher.prune(runs), cypher.PRUNE_CLAIMS])
    return runs


def _dropped(props: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if v is not None}
