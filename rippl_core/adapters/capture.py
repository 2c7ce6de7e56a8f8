"""Capture for a framework adapter: a `Guard` plus the run it records, failing closed.

An adapter calls, for one run (a LangGraph thread, an AutoGen agent's run, a CrewAI task, an MCP
session):

- `decide(turn, calls, context=..., told=...)` when a model turn emits tool calls, before any of
  them runs: the turn is recorded as a decision resting on the observations still in the model's
  input, each call as an action, and each call gets its verdict (None for a tool the guard leaves
  unguarded: recorded, never vetoed);
- `judge(call)` just before a call executes (it may run long after its turn: a pause, a queue);
- `executed(call, output)` once it ran, which also makes its output an observation;
- `writing(call)` around the call's execution, so a memory the tool writes rests on what the
  call rested on (`writing()` for the run's own writes).

Each has an async twin (`adecide`, `ajudge`, `aexecuted`); the logic is written once, as a
generator of calls on the run, driven synchronously or from asyncio. Nothing here raises: a turn
that cannot be recorded, or a call that cannot be mapped or checked, is denied with the reason; an
execution that cannot be recorded is kept and recorded before the run's next turn or check, and
until it is, the run's calls are denied (what the run saw must be on record before it acts on it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from rippl_core._runtime import telemetry
from rippl_core._runtime.validation import SequenceNotStr, check_id
from rippl_core.adapters.guard import Guard
from rippl_core.adapters.handles import Call, Calls, arun_calls, run_calls
from rippl_core.adapters.toolguard import Arguments, arguments, logged, safe_call, unmappable
from rippl_core.capture import ids
from rippl_core.capture.handle import AsyncRun, Run
from rippl_core.capture.memory import Writing, writing
from rippl_core.capture.run import RunRef
from rippl_core.client import AsyncRippl, Rippl
from rippl_core.models import Policy, ToolCall, Verdict

type FrameworkCall = tuple[str, Arguments, str | None]  # tool name, arguments, call id


class Capture:
    """Records one run of a framework's agent through `guard` and judges its calls."""

    guard: Guard
    run_id: str
    agent: str | None
    framework: str | None

    def __init__(self, guard: Guard, run: str, *, agent: str | None = None,
                 framework: str | None = None, scope: str | None = None) -> None:
        self.guard = guard
        self.run_id = check_id(run, what="run id")
        self.agent, self.framework = agent, framework
        self.scope = None if scope is None else check_id(scope, what="scope")
        self._unrecorded: list[tuple[ToolCall, Any, bool]] = []
        self._lock = threading.Lock()

    @property
    def policy(self) -> Policy:
        return self.guard.policy or self.guard.default_policy or Policy()

    # -- sync ---------------------------------------------------------------------------------
    def decide(self, turn: str, calls: Sequence[FrameworkCall], *,
               context: SequenceNotStr[str] | None = None, told: SequenceNotStr[str] = (),
               inputs: SequenceNotStr[str] = (),
               results: Mapping[str, str | None] | None = None) -> list[Verdict | None]:
        """Record a model turn and judge each of its calls (None: an unguarded tool, allowed).
        `context`: the refs of the messages in the model's input, in order; `told`: those that
        are vetoes; `inputs`: those that may be the user's (human or system messages);
        `results`: the tool results among them, each with `output_digest` of its content (a
        result Rippl never recorded for the run denies the turn: forged or edited)."""
        mapped = [self._map(call, self.guard.to_call) for call in calls]
        return self._drive_sync(self._decide(turn, calls, mapped, context, told, inputs, results),
                                lambda exc: [self._failed(c, exc) for c in calls])

    def wrote(self, ref: str, *, context: SequenceNotStr[str] | None = None,
              told: SequenceNotStr[str] = (), inputs: SequenceNotStr[str] = (),
              kind: str = "message") -> bool:
        """Record that the model wrote the message `ref` (a text reply, a summary, an output handed
        to another run) from the input `context`. False if it could not be recorded: the message
        then counts as one Rippl cannot account for (it carries everything the run carried)."""
        return self._drive_sync(self._wrote(ref, context, told, inputs, kind), lambda exc: False)

    def judge(self, call: FrameworkCall) -> Verdict | None:
        """Re-check one call just before it executes."""
        mapped = self._map(call, self.guard.to_call)
        return self._drive_sync(self._judge(call, mapped), lambda exc: self._failed(call, exc))

    def executed(self, call: FrameworkCall, output: Any, *, ok: bool = True) -> str | None:
        """Record that the call ran, and its output; kept for later if it cannot be recorded now.
        Returns the id of the claim stating the result (None: kept to be recorded later)."""
        return self._drive_sync(self._executed(call, output, ok), lambda exc: None)

    def writing(self, call: FrameworkCall | None = None) -> AbstractContextManager[None]:
        """A block in which a memory written (a belief adopted, a record saved) is this run's: by
        the tool call `call` while it executes (it rests on what the call's turn rested on), or,
        with None, by the run itself (a framework's own save: it rests on everything the run
        carried). See `rippl_core.capture.memory`."""
        source = self.guard.source
        graph = source.graph if isinstance(source, Rippl | AsyncRippl) else None
        return writing(Writing(RunRef(self.run_id, self.agent, self.framework, self.scope),
                               call=None if call is None else call[2], graph=graph))

    def decision_id(self, turn: str, calls: Sequence[FrameworkCall]) -> str | None:
        """The id of the decision `decide` records for this turn (None when none of its calls maps
        to an action), to find later what a past turn rested on. No I/O; a sync resolver only."""
        mapped = [m for m in (self._map(call, self.guard.to_call) for call in calls)
                  if isinstance(m, ToolCall)]
        if not mapped:
            return None
        turn = check_id(turn, what="turn id")
        return ids.decision(self.run_id, turn, [ids.Call.of(c, turn, i) for i, c in enumerate(mapped)])

    # -- asyncio ------------------------------------------------------------------------------
    async def adecide(self, turn: str, calls: Sequence[FrameworkCall], *,
                      context: SequenceNotStr[str] | None = None, told: SequenceNotStr[str] = (),
                      inputs: SequenceNotStr[str] = (),
                      results: Mapping[str, str | None] | None = None) -> list[Verdict | None]:
        """The asyncio twin of `decide` (the resolver may be async)."""
        mapped = [await self._amap(call) for call in calls]
        return await self._drive_async(
            self._decide(turn, calls, mapped, context, told, inputs, results),
            lambda exc: [self._failed(c, exc) for c in calls])

    async def awrote(self, ref: str, *, context: SequenceNotStr[str] | None = None,
                     told: SequenceNotStr[str] = (), inputs: SequenceNotStr[str] = (),
                     kind: str = "message") -> bool:
        """The asyncio twin of `wrote`."""
        return await self._drive_async(self._wrote(ref, context, told, inputs, kind),
                                       lambda exc: False)

    async def ajudge(self, call: FrameworkCall) -> Verdict | None:
        """The asyncio twin of `judge`."""
        mapped = await self._amap(call)
        return await self._drive_async(self._judge(call, mapped), lambda exc: self._failed(call, exc))

    async def aexecuted(self, call: FrameworkCall, output: Any, *, ok: bool = True) -> str | None:
        """The asyncio twin of `executed`."""
        return await self._drive_async(self._executed(call, output, ok), lambda exc: None)

    # -- the logic, once ----------------------------------------------------------------------
    def _decide(self, turn: str, calls: Sequence[FrameworkCall],
                mapped: Sequence[ToolCall | Verdict], context: SequenceNotStr[str] | None,
                told: SequenceNotStr[str], inputs: SequenceNotStr[str],
                results: Mapping[str, str | None] | None) -> Calls[list[Verdict | None]]:
        yield from self._flush()
        recorded = [m for m in mapped if isinstance(m, ToolCall)]
        verdicts: list[Verdict] = []
        if recorded:
            verdicts = yield Call("decide", (turn, recorded), {
                "context": context, "told": told, "inputs": inputs, "results": results,
                "policy": self.policy,
                "repeat_scope": self.guard.repeat_scopes(c.name for c in recorded)})
        answers = iter(verdicts)
        return [self._shown(call, m if isinstance(m, Verdict) else next(answers))
                for call, m in zip(calls, mapped, strict=True)]

    def _judge(self, call: FrameworkCall, mapped: ToolCall | Verdict) -> Calls[Verdict | None]:
        yield from self._flush()
        if isinstance(mapped, Verdict):
            return self._shown(call, mapped)
        verdict = yield Call("judge", (mapped,), {
            "policy": self.policy, "repeat_scope": self.guard.repeat_scopes([mapped.name])})
        return self._shown(call, verdict)

    def _wrote(self, ref: str, context: SequenceNotStr[str] | None, told: SequenceNotStr[str],
               inputs: SequenceNotStr[str], kind: str) -> Calls[bool]:
        yield from self._flush()
        yield Call("wrote", (ref,), {"context": context, "told": told, "inputs": inputs,
                                     "kind": kind})
        return True

    def _executed(self, call: FrameworkCall, output: Any, ok: bool) -> Calls[str | None]:
        name, args, call_id = call
        entry = (ToolCall(name=name, args=_args(args), id=call_id), output, ok)
        with self._lock:
            self._unrecorded.append(entry)
        claims = yield from self._flush()
        return claims.get(id(entry))

    def _flush(self) -> Calls[dict[int, str]]:
        """Record the executions kept for later (oldest first); raise if one still cannot be.
        Returns the result claim of each recorded, by the id of its entry."""
        claims: dict[int, str] = {}
        while True:
            with self._lock:
                if not self._unrecorded:
                    return claims
                pending = self._unrecorded[0]
            settings = self.guard.settings(pending[0].name)
            claims[id(pending)] = yield Call("executed", (pending[0], pending[1]), {
                "ok": pending[2], "fresh_for": settings.fresh_for, "reads": settings.reads})
            with self._lock:
                if self._unrecorded and self._unrecorded[0] is pending:
                    self._unrecorded.pop(0)

    def _shown(self, call: FrameworkCall, verdict: Verdict) -> Verdict | None:
        name, args, _ = call
        if verdict.expired and not verdict.blockers and self.guard.settings(name).is_read:
            # a read is how the agent reads again: a stale premise never stops it
            verdict = verdict.model_copy(update={"allowed": True, "expired": [], "reason": (
                f"{name} is a read: allowed to read again although a reading it rests on is no "
                "longer fresh")})
        if self.guard.guards(name) or (not verdict.allowed and verdict.target is None):
            return logged(verdict, name, args)
        return None

    # -- mapping and driving ------------------------------------------------------------------
    def _map(self, call: FrameworkCall, to_call: Callable[..., ToolCall]) -> ToolCall | Verdict:
        name, args, call_id = call
        try:
            return _with_id(to_call(name, args, call_id), call_id)
        except Exception as exc:
            return unmappable(name, args, call_id, exc, self.policy)

    async def _amap(self, call: FrameworkCall) -> ToolCall | Verdict:
        name, args, call_id = call
        try:
            return _with_id(await self.guard.ato_call(name, args, call_id), call_id)
        except Exception as exc:
            return unmappable(name, args, call_id, exc, self.policy)

    def _failed(self, call: FrameworkCall, exc: Exception) -> Verdict:
        """A call denied because the run could not be recorded or checked (every call, guarded
        or not: what is not on record cannot be protected later)."""
        name, args, call_id = call
        verdict = Verdict(allowed=False, target=None, tool_call=safe_call(name, args, call_id),
                          reason=f"denied (fail closed): the run {self.run_id} could not be "
                                 f"recorded or checked: {type(exc).__name__}: {exc}")
        telemetry.guard_verdict(verdict, "unrecorded", exc, tool=name, call_id=call_id)
        return logged(verdict, name, args)

    def _sync_run(self) -> Run:
        handle = self.guard.source
        if not isinstance(handle, Rippl):
            raise TypeError("this capture's graph is asyncio-only (an AsyncRippl, or a lazily "
                            "opened source); use the async methods")
        return handle.run(self.run_id, agent=self.agent, framework=self.framework,
                          scope=self.scope, policy=self.guard.policy)

    async def _async_run(self) -> Run | AsyncRun:
        handle = await self.guard.ahandle()
        return handle.run(self.run_id, agent=self.agent, framework=self.framework,
                          scope=self.scope, policy=self.guard.policy)

    def _drive_sync[R](self, steps: Calls[R], failed: Callable[[Exception], R]) -> R:
        try:
            return run_calls(self._sync_run(), steps)
        except Exception as exc:
            return failed(exc)

    async def _drive_async[R](self, steps: Calls[R], failed: Callable[[Exception], R]) -> R:
        try:
            return await arun_calls(await self._async_run(), steps)
        except Exception as exc:
            return failed(exc)


def _with_id(call: ToolCall, call_id: str | None) -> ToolCall:
    return call if call.id is not None or call_id is None else call.model_copy(update={"id": call_id})


def _args(args: Arguments) -> dict[str, Any]:
    return arguments("", args)


__all__ = ["Capture", "FrameworkCall"]
