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

import itertools
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from pydantic import ValidationError

from rippl_core._runtime import telemetry
from rippl_core._runtime.op import Batch, Commit, Op
from rippl_core._runtime.timeutil import TimeLike, iso, now_ms, to_ms
from rippl_core._runtime.validation import (
    SequenceNotStr,
    arguments_host,
    call_key,
    check_id,
    check_ids,
    plain_errors,
    repeat_key,
)
from rippl_core.capture import cypher, ids
from rippl_core.capture.chains import context_id
from rippl_core.capture.context import REPEAT_SCOPES, repeat_keys, tool_key
from rippl_core.causal import cypher as causal_cypher
from rippl_core.causal import freshness, preflight
from rippl_core.causal.preflight import ActionRow
from rippl_core.causal.spec import NodeSpec
from rippl_core.causal.write import justify
from rippl_core.errors import ConflictError, InvalidInputError, NotFoundError
from rippl_core.models import (
    Policy,
    RepeatScope,
    RepeatScopes,
    ToolCall,
    ToolSettings,
    Verdict,
)
from rippl_core.vocabulary import Kind, State


@dataclass(frozen=True, slots=True)
class RunRef:
    """Who is running: the run's id (deterministic, so a resumed run continues its trace), the
    agent and the framework."""

    id: str
    agent: str | None = None
    framework: str | None = None
    scope: str | None = None  # the runs that hand messages to one another (default: this run alone)

    def __post_init__(self) -> None:
        check_id(self.id, what="run id")
        for value, what in ((self.agent, "agent"), (self.framework, "framework"),
                            (self.scope, "scope")):
            if value is not None:
                check_id(value, what=what)

    def key(self, ref: str | None) -> str:
        """The lookup key of a carrier of this run (`cypher.observation_key`)."""
        return cypher.observation_key(self.id, ref, self.scope)

    def props(self, now: int) -> dict[str, Any]:
        """The run node's identity and its root source and claim (created on first use)."""
        who = f"{self.agent} ({self.framework})" if self.agent and self.framework else \
            self.agent or self.framework or "an agent"
        source = NodeSpec(Kind.SOURCE, f"run {self.id} of {who} started", ids.run_source(self.id),
                          source_type="run").validated().props(now)
        claim = NodeSpec(Kind.CLAIM, f"the instructions of run {self.id} hold",
                         ids.run_claim(self.id)).validated().props(now)
        return {"id": self.id, "agent": self.agent, "framework": self.framework,
                "scope": self.scope, "source": {**source, "run": self.id},
                "claim": {**claim, "run": self.id}}


@dataclass(frozen=True, slots=True)
class Input:
    """The input of a run's latest turn as this client sent it (its message refs, in order; the
    tool results verified, ref to digest) and the context that turn rests on, which holds exactly
    what those messages carry. Never changed: a later turn makes a new one (`then`)."""

    messages: list[str]
    seen: frozenset[str]
    results: dict[str, str | None]
    context: str

    @classmethod
    def of(cls, context: SequenceNotStr[str], results: Mapping[str, str | None] | None,
           recorded: str) -> Input:
        """The input of a turn recorded from it whole, resting on the context `recorded`."""
        given = list(context)
        return cls(given, frozenset(given), dict(results or {}), recorded)

    def goes_on(self, context: SequenceNotStr[str],
                results: Mapping[str, str | None] | None) -> GoesOn | None:
        """A model input that begins with this one (compared whole at C speed: a long input
        costs no Python work per message): its messages after it, not among its own, and its
        results not verified with the same digest before; else None."""
        given = context if isinstance(context, list) else list(context)
        n = len(self.messages)
        if not n or len(given) < n or given[:n] != self.messages:
            return None
        if results is not None and not isinstance(results, Mapping):
            return None  # the whole path says what is wrong
        new = [ref for ref in dict.fromkeys(given[n:]) if ref not in self.seen]
        pending = dict((results or {}).items() - self.results.items())
        return GoesOn(self, new, pending)


@dataclass(frozen=True, slots=True)
class GoesOn:
    """A model input that goes on from the run's latest turn's (`Input.goes_on`)."""

    before: Input
    new: list[str]
    results: dict[str, str | None]

    def then(self, context: str) -> Input:
        return Input([*self.before.messages, *self.new], self.before.seen | set(self.new),
                     {**self.before.results, **self.results}, context)


class Carriers:
    """Which carrier keys this client recorded for which run: a hint that picks the smaller
    decide query (`cypher.decide_own`) for a turn whose every message is a carrier of its own run,
    never a guarantee (that query checks it, and defers to `cypher.decide` when it does not hold),
    so a stale entry (a run pruned, a message another run recorded) costs a round trip, never a
    wrong record. `sure` entries were recorded by this run's own operations; the others are
    messages a full decide found or recorded. Likewise the input of each run's latest turn
    (`remember`), so that the next turn sends only the messages after it (`cypher.decide_own`'s
    `base`, which checks that it may). Bounded: the oldest entries are forgotten. One
    handle's runs share it across threads: its writes hold a lock (two threads forgetting the
    oldest entry at once would otherwise delete one key twice)."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._keys: dict[str, tuple[str, bool] | None] = {}
        self._inputs: dict[str, Input] = {}
        self._lock = threading.Lock()

    def remember(self, run: str, latest: Input) -> None:
        """The run's latest turn rested on exactly what the messages of `latest` carry, through
        its context (it was recorded by `cypher.decide_own`): a later turn whose input begins
        with them may extend that context (`latest.goes_on`)."""
        with self._lock:
            self._inputs.pop(run, None)
            self._inputs[run] = latest
            while len(self._inputs) > self.LIMIT:
                del self._inputs[next(iter(self._inputs))]

    def forget(self, run: str) -> None:
        with self._lock:
            self._inputs.pop(run, None)

    def latest(self, run: str) -> Input | None:
        return self._inputs.get(run)

    def mark(self, run: str, keys: Sequence[str], *, sure: bool) -> None:
        with self._lock:
            for key in keys:
                if not sure and key in self._keys:
                    continue
                self._keys.pop(key, None)
                self._keys[key] = (run, sure)
            while len(self._keys) > self.LIMIT:
                del self._keys[next(iter(self._keys))]

    def mark_run(self, run: str) -> None:
        """The run's node and root exist (this client recorded something of it)."""
        self.mark(run, [f"\x00{run}"], sure=True)

    def knows_run(self, run: str) -> bool:
        return self.own(run, [f"\x00{run}"])

    def mark_vetoed(self, run: str) -> None:
        """A call of the run was denied: its later calls may repeat it (the whole query)."""
        self.mark(run, [f"\x01{run}"], sure=True)

    def common(self, run: str, keys: Sequence[str]) -> bool:
        """Whether a turn of `run` on messages `keys` is likely the common turn (`decide_own`)."""
        return self.own(run, keys) and not self.own(run, [f"\x01{run}"])

    def own(self, run: str, keys: Sequence[str]) -> bool:
        """Whether every key is known as a carrier of `run`."""
        return all((entry := self._keys.get(key)) is not None and entry[0] == run for key in keys)

    def doubt(self, keys: Sequence[str]) -> None:
        """The smaller query found these are not all the run's own: keep the guessed ones off."""
        with self._lock:
            for key in keys:
                entry = self._keys.get(key)
                if entry is None or not entry[1]:
                    self._keys[key] = None


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
                   "key": run.key(ref), "kind": kind, "at": now}
    rows = yield Commit([cypher.observe(run.props(now), _dropped(observation), claim_ids, now)],
                        blind=True)
    return sorted({row[0] for row in rows[0]})


# ------------------------------------------------------------------------------------ deciding


@telemetry.traced(telemetry.DECIDE)
def decide(run: RunRef, turn: str, calls: Sequence[ToolCall], *, context: SequenceNotStr[str] | None,
           told: SequenceNotStr[str], policy: Policy, repeat_scope: RepeatScopes = "args",
           inputs: SequenceNotStr[str] = (),
           results: Mapping[str, str | None] | None = None,
           carriers: Carriers) -> Op[list[Verdict]]:
    """Record a model turn that emits `calls` and judge each call (see the module docstring).
    `carriers`: what this client knows it recorded (chooses the smaller query; see `Carriers`)."""
    turn = check_id(turn, what="turn id")
    if isinstance(calls, ToolCall) or not calls:
        raise InvalidInputError("calls must be a non-empty list of ToolCall (the turn's calls)")
    named = [ids.Call.of(call, turn, i) for i, call in enumerate(calls)]
    if len({c.ref for c in named}) != len(named):
        raise InvalidInputError("two calls of one turn share a call id; each call needs its own")
    told_ids = check_ids(told, what="told")
    now = now_ms()
    actions = [_action_props(run, c, now, repeat_scope) for c in named]
    decision = _captured_props(NodeSpec(Kind.DECISION, _decision_text(run, turn, named),
                                        ids.decision(run.id, turn, named)), run.id, now, turn=turn,
                               key=run.key(turn), recorded_ns=time.time_ns())
    keys = sorted({k for c in named for k in (c.key, call_key(c.tool, None))})
    recorded = {"type": "turn_recorded", "node": decision["id"], "kind": Kind.DECISION.value,
                "run": run.id, "cause": "capture", "at": iso(now)}
    declared_query = cypher.declared(keys, _pinned(calls))
    root = carriers.knows_run(run.id)  # then the smaller query reads only the run's and root's ids
    short = {"id": run.id, "claim": {"id": ids.run_claim(run.id)}, "scope": run.scope}
    replies: list[Any] = []
    latest = carriers.latest(run.id) if root and not told_ids and context is not None else None
    went_on = latest.goes_on(context, results) if latest is not None and context is not None \
        else None
    ref_keys: list[str] = []
    if went_on is not None:  # the common turn going on from the last: its new messages only
        new = _refs(run, went_on.new, (), inputs) or []
        carried, new_inputs = _user_tail(new, carriers, run.id)
        if carriers.common(run.id, [r["key"] for r in carried]):
            replies = yield from _attempt(Commit([cypher.decide_own(
                short, decision, carried, actions, now, root=True,
                results=_results(run, went_on.results, ()), inputs=_inputs(run, new_inputs),
                base=went_on.before.context), declared_query], [recorded], blind=True))
            if replies[0]:
                carriers.remember(run.id, went_on.then(context_id(decision["id"])))
                ref_keys = [r["key"] for r in new]
    if not replies or not replies[0]:
        refs = _refs(run, context, told_ids, inputs)
        ref_keys = [r["key"] for r in refs or ()]
        checked = _results(run, results, told_ids)
        carried, new_inputs = _user_tail(refs or [], carriers, run.id)
        if (refs is not None and not told_ids and carriers.common(run.id, [r["key"] for r in carried])
                and (carried or not new_inputs or not root)):  # the question alone: a new run only
            # the common turn: a smaller query
            replies = yield from _attempt(Commit([cypher.decide_own(
                short if root else run.props(now), decision, carried, actions, now, root=root,
                results=checked, inputs=_inputs(run, new_inputs)), declared_query],
                [] if replies else [recorded], blind=True))  # said once, if tried already
            if replies[0] and context is not None:
                carriers.remember(run.id, Input.of(context, results, context_id(decision["id"])))
            elif not replies[0]:
                carriers.doubt(ref_keys)
    if not replies or not replies[0]:  # any other turn: the whole query
        carriers.forget(run.id)
        commit = Commit([cypher.decide(run.props(now), decision, _recordable(run, refs), told_ids,
                                       actions, now, _forgeable(run, checked, now)),
                         declared_query],
                        [] if replies else [recorded], blind=True)  # said once, if tried smaller
        # one round trip: the turn recorded, its context set computed, declared matches read
        replies = yield from _attempt(commit)
        if context is not None and not told_ids and all(row[3] for row in replies[0]):
            # a new turn, no veto read: its context holds what its messages carry, so the next
            # turn may go on from it (a client that resumes a long conversation pays this query
            # once, not every turn; `cypher.decide_own` checks the context in the graph)
            carriers.remember(run.id, Input.of(context, results, context_id(decision["id"])))
    carriers.mark(run.id, [decision["key"]], sure=True)
    carriers.mark(run.id, ref_keys, sure=False)
    carriers.mark_run(run.id)
    rows = {row[0]: row for row in replies[0]}
    declared = replies[1]
    verdicts = []
    for call, named_call, props in zip(calls, named, actions, strict=True):
        row = rows[props["id"]]
        own = Own((props["id"], Kind.ACTION, State(row[1]), row[2] is not None), decision["id"],
                  State(row[4]), row[5], row[6], row[7], row[8])
        verdict = yield from _verdict(run, named_call, own, _matching(declared, call, named_call,
                                                                      own.row[0]), call, policy)
        verdicts.append(verdict)
    if not all(v.allowed for v in verdicts):
        carriers.mark_vetoed(run.id)
    return verdicts


def _attempt(commit: Commit) -> Op[list[Any]]:
    """Send a turn's commit; on a conflict (the same turn recorded concurrently), once more: this
    time it finds it."""
    try:
        replies: list[Any] = yield commit
    except ConflictError:
        replies = yield commit
    return replies


def wrote(run: RunRef, ref: str, *, context: SequenceNotStr[str] | None,
          told: SequenceNotStr[str], kind: str, inputs: SequenceNotStr[str] = (),
          carriers: Carriers) -> Op[list[str]]:
    """Record that the model wrote the message `ref` (a text reply, a summary) from an input whose
    messages are `context`, less what the vetoes it read (`told`) named: later turns whose input
    holds it rest on what it carries. Its first recording stands. Returns the claims it carries."""
    ref = check_id(ref, what="ref")
    told_ids = check_ids(told, what="told")
    refs = _refs(run, context, told_ids, inputs)
    now = now_ms()
    carrier = {"id": ids.carrier(run.id, ref), "run": run.id, "ref": ref, "key": run.key(ref),
               "kind": kind, "at": now}
    replies = yield Commit([cypher.wrote(run.props(now), carrier, _recordable(run, refs), told_ids,
                                          now)], blind=True)
    carriers.mark(run.id, [run.key(ref)], sure=True)
    carriers.mark_run(run.id)
    return sorted({row[0] for row in replies[0] if row[0] is not None})


def _user_tail(refs: list[dict[str, Any]], carriers: Carriers, run: str
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The messages of an input before the user's new ones, and those: the messages at its end
    that may be the user's (`inputs`) and that this client does not know as carriers of the run
    (the first turn's question, a new question after the run's own messages)."""
    tail = len(refs)
    while tail > 0 and refs[tail - 1]["input"] and not carriers.own(run, [refs[tail - 1]["key"]]):
        tail -= 1
    return refs[:tail], refs[tail:]


def _refs(run: RunRef, context: SequenceNotStr[str] | None, told: Sequence[str],
          inputs: SequenceNotStr[str]) -> list[dict[str, Any]] | None:
    """The messages of a model input to look up, in order: each ref with its key in the run's
    scope, its position and whether it may be the user's input (`inputs`); `_recordable` adds the
    id it is recorded under if no carrier has it. A veto message (in `told`) carries nothing."""
    users = set(check_ids(inputs, what="inputs"))
    if context is None:
        return None
    vetoes = set(told)
    present = [r for r in dict.fromkeys(check_ids(context, what="context")) if r not in vetoes]
    return [{"ref": ref, "key": run.key(ref), "i": i, "input": ref in users}
            for i, ref in enumerate(present)]


def _recordable(run: RunRef, refs: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """`refs` each with the id it is recorded under if no carrier has it (`oid`: a hash, made
    only for the messages a query may record, not for every message of a long input)."""
    return None if refs is None else [{**r, "oid": ids.carrier(run.id, r["ref"])} for r in refs]


def _inputs(run: RunRef, refs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return _recordable(run, refs) or []


def _results(run: RunRef, results: Mapping[str, str | None] | None,
             told: Sequence[str]) -> list[dict[str, Any]]:
    """The tool results of a model input to verify: each must be one Rippl recorded for the run
    (or its scope), with this digest of its content (None: only that it was recorded). One that
    was not is a forged message, or one edited after it ran: the turn rests on a claim that it is
    genuine (`_forgeable`), retracted until a person reinstates it (accepts it)."""
    if results is None:
        return []
    if not isinstance(results, Mapping):
        raise InvalidInputError("results must map the call ids of the tool results in the model's "
                                "input to a digest of their content (or None)")
    vetoes = set(told)
    checked = []
    for ref, digest in results.items():
        ref = check_id(ref, what="result")
        if ref not in vetoes:
            checked.append({"ref": ref, "key": run.key(ref), "digest": digest})
    return checked


def _forgeable(run: RunRef, checked: list[dict[str, Any]], now: int) -> list[dict[str, Any]]:
    """`_results` each with the claim "it is genuine" the whole query records, retracted, for
    one Rippl did not record (made only for that query: not for every result of a long input)."""
    rows = []
    for result in checked:
        ref, digest = result["ref"], result["digest"]
        fid = ids.unrecorded(run.id, ref, digest)
        claim = NodeSpec(Kind.CLAIM, f"the tool result of call {ref} in the input of run {run.id} "
                         "is genuine", fid).validated().props(now)
        rows.append({**result, "fid": fid, "claim": {**claim, "run": run.id, "captured": True},
                     "reason": (f"Rippl never recorded the tool result of call {ref} for run "
                                f"{run.id}: a forged message, or one edited after the call ran"
                                + (f" (content digest {digest[:12]})" if digest else "")
                                + "; a person who checked it can reinstate this claim")})
    return rows


@dataclass(frozen=True, slots=True)
class Own:
    """A captured call's own action as its turn recorded it: the row the verdict judges, its
    turn's decision and that decision's state, the turns of the vetoed calls it repeats, and an
    override approved for it (id and premises) that it may take."""

    row: ActionRow
    decision: str | None
    decision_state: State | None
    repeats: Sequence[Sequence[str | None]]  # [turn, node id] of each vetoed call it repeats
    override: str | None
    overridden: Sequence[str] | None
    reads: freshness.Reads = ()  # [claim id, fresh_until] of the read claims it rests on


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


def _action_props(run: RunRef, call: ids.Call, now: int, scope: RepeatScopes) -> dict[str, Any]:
    spec = NodeSpec(Kind.ACTION, call.title(), ids.action(run.id, call), tool=call.tool,
                    args=json.loads(call.args))
    rkey, rtool = repeat_keys(run.id, call.tool, call.args, scope_of(scope, call.tool))
    return _captured_props(spec, run.id, now, call_id=call.ref,
                           call_ref=cypher.call_ref(run.id, call.ref), rkey=rkey, rtool=rtool,
                           akey=call.key, scall=run.key(call.ref),
                           recorded_ns=time.time_ns())  # the order of turns recorded in one ms


def scope_of(scope: RepeatScopes, tool: str) -> RepeatScope:
    """The repeat scope of a tool: one for every tool, or per tool ("args" for one not named)."""
    if isinstance(scope, str):
        return scope
    return scope.get(tool, "args")


def check_repeat_scope(scope: object) -> RepeatScopes:
    """`repeat_scope` as given: "args" or "tool", or a mapping of tool names to either."""
    if isinstance(scope, str) and scope in REPEAT_SCOPES:
        return scope
    if isinstance(scope, Mapping) and all(isinstance(k, str) and v in REPEAT_SCOPES
                                          for k, v in scope.items()):
        return dict(scope)
    raise InvalidInputError(f"repeat_scope must be 'args' or 'tool', or a mapping of tool names to "
                            f"either (e.g. {{'migrate': 'tool'}}), got {scope!r}")


def _decision_text(run: RunRef, turn: str, calls: Sequence[ids.Call]) -> str:
    who = run.agent or "the agent"
    return f"{who} calls {', '.join(c.tool for c in calls)} (turn {turn} of run {run.id})"


def _verdict(run: RunRef, named_call: ids.Call, own: Own, declared: list[ActionRow] | None,
             call: ToolCall, policy: Policy) -> Op[Verdict]:
    """The verdict on a captured call: its own action and every declared match must allow it
    (None: the action it was mapped to explicitly is not in the graph). A denial by premises
    records what it named on the captured action (for the turns after it) and makes the call
    findable as vetoed (a repeat of it rests on what denied it); an approved override the call may
    take turns a denial its premises cover into an allowance, once."""
    if declared is None:
        why = ("is the action its own capture records: a call cannot vouch for itself; map it to "
               "a declared action, or leave its action id unset" if call.action_id == own.row[0]
               else "is not in the graph; add it or check the id")
        return Verdict(allowed=False, target=call.action_id, tool_call=call, reason=(
            f"denied (fail closed): {call.action_id}, the action {call.name} is mapped to, {why}"))
    if not declared and policy.unknown in ("deny", "allow"):  # no declared match: the policy says
        allowed = policy.unknown == "allow"
        return Verdict(allowed=allowed, target=own.row[0], kind=own.row[1], state=own.row[2],
                       tool_call=call,
                       reason=f"{'allowed' if allowed else 'denied'} (policy unknown="
                              f"'{policy.unknown}'): no declared action matches {call.name}; the "
                              "call is recorded" + ("" if allowed else
                                                    " (a strict allow-list: declare the action)"))
    verdict = yield from preflight.judge([*declared, own.row], policy, call)
    if verdict.allowed:  # stale is not false: it asks for a fresh reading, and binds nothing
        fresh = yield from preflight.fresh(verdict, own.reads)
        if fresh.allowed or (yield cypher.is_read(named_call.tool)):
            return verdict  # a read is how the agent reads again: never denied as stale
        yield Commit([], [_denial_event(run, own, fresh)], blind=True)
        return fresh
    if own.override is not None and verdict.blockers and \
            {b.premise for b in verdict.blockers} <= set(own.overridden or ()):
        taken = yield Commit([cypher.take_override(own.override, own.row[0])], blind=True)
        if taken[0]:
            premises = ", ".join(sorted({b.premise for b in verdict.blockers}))
            return verdict.model_copy(update={"allowed": True, "reason": (
                f"{own.row[0]} allowed by override {own.override}, approved by a reviewer for this "
                f"one call: it rests on {premises}, retracted")})
    # What the veto tells the model is false leaves its later turns: retracted premises only (a
    # premise under review may yet be rejected; later turns keep resting on it meanwhile).
    named = sorted({node for b in verdict.blockers if b.state is State.OUT for node in b.trail})
    binds = [row[0] for row in declared if row[2] is not State.IN]
    if own.decision is not None and own.decision_state not in (None, State.IN):
        binds.append(own.decision)
    vetoed = {"type": "call_vetoed", "node": own.row[0], "kind": Kind.ACTION.value, "run": run.id,
              "state": verdict.state.value if verdict.state is not None else None,
              "claim": verdict.blockers[0].premise if verdict.blockers else None,
              "at": iso(now_ms())}
    tell = []
    if named or binds:
        keys = (repeat_key(run.id, named_call.tool, named_call.args),
                tool_key(run.id, named_call.tool), named_call.key)
        tell = [cypher.tell(own.row[0], named, sorted(set(binds)), keys)]
    yield Commit(tell, [vetoed], blind=True)  # a veto is published (watch, console, webhooks)
    bound = [r for r in own.repeats if len(r) > 2 and r[2] is not None]  # handed over
    origins = (yield cypher.binding_origins([str(r[2]) for r in bound],
                                            [str(r[3]) for r in bound])) if bound else []
    if own.repeats and own.decision_state is State.IN:
        verdict = verdict.model_copy(update={"reason": _repeat_reason(verdict, own, origins)})
    elif origins:  # its own premises deny it too; and the act was handed over after a veto
        verdict = verdict.model_copy(update={"reason": (
            f"{verdict.reason} It also repeats the call "
            f"{' and '.join(_handed_over(row) for row in origins)}.")})
    handed = sorted({node for b in verdict.blockers for node in b.trail if node.startswith("HND-")})
    if handed:
        rows = yield cypher.hand_overs(handed)
        froms = "; ".join(f"from run {r[0]} ({r[1]})" for r in rows)
        verdict = verdict.model_copy(update={
            "reason": f"{verdict.reason} The premise was handed over into run {run.id} {froms}."})
    return verdict


def _denial_event(run: RunRef, own: Own, verdict: Verdict) -> dict[str, Any]:
    """The event of a call denied on readings no longer valid (stale or superseded)."""
    kinds = sorted({e.status for e in verdict.expired})
    return {"type": "call_" + ("superseded" if kinds == ["superseded"] else "stale"),
            "node": own.row[0], "kind": Kind.ACTION.value, "run": run.id,
            "readings": [e.premise for e in verdict.expired], "at": iso(now_ms())}


def _repeat_reason(verdict: Verdict, own: Own, origins: Sequence[Sequence[Any]] = ()) -> str:
    """The reason of a call denied because it repeats a vetoed call: the original veto named, and,
    for a veto handed over from another run, that run, its turn and the message that brought it
    (`origins`: `cypher.binding_origins` rows)."""
    own_run = [r for r in own.repeats if len(r) < 3 or r[2] is None]
    turns = sorted({str(r[0]) for r in own_run if r[0] is not None})
    declared = sorted({str(r[1]) for r in own_run if r[0] is None and r[1] is not None})
    where = [*([f"vetoed at turn {', '.join(turns)}"] if turns else []),
             *([f"vetoed by {', '.join(declared)}"] if declared else []),
             *(_handed_over(row) for row in origins)]
    names = ", ".join(f"{b.premise} ({b.status})" for b in verdict.blockers) or "unknown premises"
    return (f"{verdict.target} denied: it repeats the call {' and '.join(where) or 'vetoed'}, and "
            f"repeating a vetoed call does not lift the veto; premise {names}. Only a person lifts "
            "it: reinstate the premise if it was wrong, or ask a reviewer to approve a one-call "
            f"override (rippl override {own.row[0]}). Or choose an action that does not rest on it.")


def _handed_over(row: Sequence[Any]) -> str:
    """How a veto reached this run: "vetoed at turn T of run R (action A), handed over from run
    R2 (its message M)" (a `cypher.binding_origins` row: veto, its run, its turn, and the kind,
    run and name of the message that brought it)."""
    veto, veto_run, turn, kind, via_run, via_name = row
    at = f"at turn {turn} of run {veto_run}" if turn is not None else f"in run {veto_run}"
    if kind == "Action":  # the model read the other run's veto itself, in a shared history
        how = "whose veto message is in this run's input"
    elif kind == "Claim":
        how = f"handed over from run {via_run} through the memory {via_name!r}"
    else:
        how = f"handed over from run {via_run} ({via_name}) after the veto"
    return f"vetoed {at} ({veto}), {how}"


# ------------------------------------------------------------------------------------ judging


@telemetry.traced(telemetry.JUDGE)
def judge(run: RunRef, call: ToolCall, *, policy: Policy, carriers: Carriers,
          repeat_scope: RepeatScopes = "args") -> Op[Verdict]:
    """Re-check a call about to execute. Its captured action (by the run and the call id) and
    every declared match must allow it. A call whose arguments changed since its turn was
    decided (a human edit) is a new action of the same decision; a call of no decided turn is
    decided now, as a turn of its own resting on everything the run observed."""
    if call.id is None:
        raise InvalidInputError("judging a call at execution needs its call id; decide its turn "
                                "with the call instead")
    named = ids.Call.identified(call)
    found, declared = yield Batch(cypher.captured(run.id, [named.ref]),
                                  cypher.declared([named.key, call_key(named.tool, None)],
                                                  _pinned([call])))
    same = [r for r in found if r[2] == named.args]
    if not found:
        verdicts = yield from decide(run, f"call:{named.ref}", [call], context=None, told=(),
                                     policy=policy, repeat_scope=repeat_scope, carriers=carriers)
        return verdicts[0]
    if not same:  # edited since its turn: the same decision drives the edited call
        edited = yield from _edited(run, call, named, decision=found[0][6], policy=policy,
                                    repeat_scope=repeat_scope)
        return edited
    row = same[0]
    own = Own((row[1], Kind(row[3]), State(row[4]), row[5] is not None), row[6],
              State(row[7]) if row[7] is not None else None, row[8], row[9], row[10], row[11])
    verdict = yield from _verdict(run, named, own, _matching(declared, call, named, own.row[0]),
                                  call, policy)
    return verdict


def _edited(run: RunRef, call: ToolCall, named: ids.Call, *, decision: str | None,
            policy: Policy, repeat_scope: RepeatScopes) -> Op[Verdict]:
    if decision is None:
        raise NotFoundError(f"the captured action of call {named.ref} has lost its decision")
    now = now_ms()
    action = _action_props(run, named, now, repeat_scope)
    replies = yield Commit([cypher.drive(run.props(now), decision, [action], now)], blind=True)
    row = replies[0][0]
    found = yield cypher.declared([named.key, call_key(named.tool, None)], _pinned([call]))
    own = Own((row[0], Kind.ACTION, State(row[1]), row[2] is not None), decision, State(row[4]),
              row[5], row[6], row[7], row[8])
    verdict = yield from _verdict(run, named, own, _matching(found, call, named, row[0]), call,
                                  policy)
    return verdict


# ------------------------------------------------------------------------------------ executing


class Recorded(NamedTuple):
    """What `executed` recorded: the result claim, and the sources that make it hold again when
    it existed and was OUT (`rejoin` relabels what rests on it, as a write of its own)."""

    claim: str
    sources: list[str]
    at: int


@telemetry.traced(telemetry.EXECUTED)
def executed(run: RunRef, call: ToolCall, output: Any, *, ok: bool,
             fresh_for: float | None = None, reads: bool | None = None,
             carriers: Carriers) -> Op[Recorded]:
    """Mark a captured call executed and record its output as an observation of the run (a
    `tool_result` source for this call: a reading; and the claim "`tool(args)` returned …"), in
    one commit. Returns the result claim's id, and, when the output makes an existing claim that
    was OUT hold again, the source to link it through (`rejoin`: a full relabel of what rests on
    it, which reads under WATCH and so runs as a write of its own).

    A reading of a read tool (`reads`, true by default when `fresh_for` is given: seconds a
    reading stays valid) refreshes its claim and ends every valid reading of another output of the
    same tool and arguments, in every run (supersession); calls resting on those are denied until
    the agent reads again."""
    if call.id is None:
        raise InvalidInputError("recording an execution needs the call id it was decided with")
    settings = _settings(fresh_for, reads)
    named = ids.Call.identified(call)
    now = now_ms()
    digest = ids.output_digest(output)
    claim_id = ids.result_claim(named, digest)
    source = NodeSpec(Kind.SOURCE, f"the result of call {named.ref} in run {run.id}",
                      ids.result_source(run.id, named.ref), source_type="tool_result")
    claim = NodeSpec(Kind.CLAIM, ids.result_text(named, output), claim_id)
    fresh_ms = None if settings.fresh_for is None else round(settings.fresh_for * 1000)
    reading = {"observed_at": now, "expires_at": None if fresh_ms is None else now + fresh_ms,
               "fresh_for": fresh_ms}
    result: dict[str, Any] = {"status": "ok" if ok else "error", "digest": digest,
              "source": {**_captured_props(source, run.id, now, tool=named.tool, call_id=named.ref,
                                           output=digest, host=arguments_host(named.args),
                                           **reading), "args": named.args},
              "claim": {**claim.validated().props(now), "captured": True}}
    read = None if not settings.is_read or not ok else {
        "key": call_key(named.tool, named.args), "tool": named.tool, "until": reading["expires_at"],
        "fresh_for": fresh_ms, "supersedes": True}
    observation = {"id": ids.observation(run.id, named.ref, [claim_id]), "run": run.id,
                   "ref": named.ref, "key": run.key(named.ref), "kind": "tool_result", "at": now,
                   "output": digest}

    handed = run.key(ids.text_ref(ids.output_text(output)))

    def record(action_id: str, plain: bool = False, announce: bool = True) -> Commit:
        event = {"type": "action_executed", "node": action_id, "kind": Kind.ACTION.value,
                 "claim": claim_id, "cause": "capture", "run": run.id, "at": iso(now)}
        query = (cypher.executed_plain(run.id, action_id, result, observation, now, handed)
                 if plain else
                 cypher.executed(run.id, action_id, result, observation, now, handed, read))
        return Commit([query], [event] if announce else [], blind=True)

    own_action = ids.action(run.id, named)  # the action its turn recorded: one round trip
    replies = yield record(own_action, plain=read is None)
    if read is None and not replies[0]:  # not the common call (or not this action): in full,
        replies = yield record(own_action, announce=False)  # its event already sent
    if not replies[0]:  # args that differ from every recorded call: the call id names the action
        found = yield cypher.captured(run.id, [named.ref])
        if not found:
            raise NotFoundError(f"call {named.ref} of run {run.id} was never decided; judge it "
                                "before it runs, then record its execution")
        replies = yield record(found[0][1])
    # the claim may hold again through this new source: `rejoin` links it
    again = [result["source"]["id"]] if replies[0] and not replies[0][0][1] else []
    ended = replies[0][0][2] if replies[0] else []
    if ended:  # readings of another output this one superseded: say so
        yield Commit([], [{"type": "reading_superseded", "node": old, "kind": Kind.CLAIM.value,
                           "by": claim_id, "run": run.id, "at": iso(now)} for old in ended],
                     blind=True)
    if replies[0]:
        carriers.mark(run.id, [run.key(named.ref)], sure=True)
    return Recorded(claim_id, again, now)


def rejoin(recorded: Recorded) -> Op[None]:
    """Link a result claim that was OUT to the new source of its reading, relabelling what rests
    on it (run with write=True: the relabel reads under WATCH)."""
    if recorded.sources:
        yield from justify(recorded.claim, recorded.sources, now=recorded.at)


def _settings(fresh_for: float | None, reads: bool | None) -> ToolSettings:
    try:
        return ToolSettings(fresh_for=fresh_for, reads=reads)
    except ValidationError as exc:
        raise InvalidInputError(f"fresh_for must be a positive number of seconds (or None: the "
                                f"reading never expires), and reads True, False or None:\n"
                                f"{plain_errors(exc.errors())}") from None


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


BACKFILL_BATCH = 5000  # readings given their host per commit, on a schema upgrade


def backfill_reading_hosts() -> Op[None]:
    """Give the readings recorded before they kept their URL arguments' host that host (a schema
    upgrade), so a retraction by provenance finds them by a URL prefix's host."""
    rows = yield cypher.READINGS_WITH_URLS
    found = [{"id": sid, "host": host} for sid, args in rows
             if (host := arguments_host(args)) is not None]
    for batch in itertools.batched(found, BACKFILL_BATCH):
        yield Commit([cypher.set_hosts(list(batch))], blind=True)


def backfill_scoped_calls() -> Op[None]:
    """Give the captured calls recorded before they kept their key in their run's scope that key
    (a schema upgrade), so a veto read in another run of the scope is found."""
    yield cypher.BACKFILL_SCOPED_CALLS


def backfill_result_digests() -> Op[None]:
    """Give the tool-result observations recorded before they kept their output's digest the
    digest their action recorded (a schema upgrade), so a resumed run's results verify."""
    yield cypher.BACKFILL_RESULT_DIGESTS


MAX_SCHEMA_CHARS = 64_000  # one tool's input schema, as JSON


def register_tools(run: RunRef, schemas: Mapping[str, Mapping[str, Any]]) -> Op[None]:
    """Keep each tool's input schema (a JSON Schema object) with the run, so that its calls are
    compared on the arguments the tool receives (`capture.arguments`) wherever the run continues:
    another process, a server that restarted or let the run leave its memory."""
    if not isinstance(schemas, Mapping) or not schemas:
        raise InvalidInputError("schemas must map each tool's name to its input schema (a JSON "
                                f"Schema object), at least one; got {type(schemas).__name__}")
    rows = []
    for tool, schema in schemas.items():
        name = check_id(tool, what="tool name")
        if not isinstance(schema, Mapping):
            raise InvalidInputError(f"the schema of tool {name!r} must be a JSON Schema object (a "
                                    f"mapping), got {type(schema).__name__}")
        try:
            text = json.dumps(schema, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"the schema of tool {name!r} is not JSON: {exc}") from None
        if len(text) > MAX_SCHEMA_CHARS:
            raise InvalidInputError(f"the schema of tool {name!r} is {len(text):,} characters as "
                                    f"JSON, more than {MAX_SCHEMA_CHARS:,}")
        rows.append({"tool": name, "schema": text})
    yield Commit([cypher.register_tools(run.id, rows, now_ms())], blind=True)


def tool_schemas(run: RunRef) -> Op[dict[str, dict[str, Any]]]:
    """The tools' input schemas registered with the run (`register_tools`), by tool name."""
    rows = yield cypher.tool_schemas(run.id)
    return {tool: json.loads(text) for tool, text in rows}


def close(run: RunRef) -> Op[None]:
    """Close the run (prune_runs then may remove its capture)."""
    yield Commit([cypher.close(run.id, now_ms())], blind=True)


# ------------------------------------------------------------------------------------ after


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
