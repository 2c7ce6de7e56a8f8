"""`Run` and `AsyncRun`: a captured run on a handle's graph (`rippl.run(...)`), every method one
operation of `rippl_core.capture.run`."""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from rippl_core._runtime.validation import SequenceNotStr
from rippl_core.capture import run as ops
from rippl_core.capture.run import Carriers, RunRef
from rippl_core.models import Policy, RepeatScopes, ToolCall, Verdict

if TYPE_CHECKING:
    from rippl_core._runtime.driver import AsyncDriver, SyncDriver

# what each client (its driver) knows it recorded, shared by every run handle it makes
_CARRIERS: weakref.WeakKeyDictionary[Any, Carriers] = weakref.WeakKeyDictionary()


class _RunHandle[D: (SyncDriver, AsyncDriver)]:
    """What `Run` and `AsyncRun` share: the run, its policy, its repeat scope and the driver that
    does the I/O."""

    ref: RunRef
    policy: Policy
    repeat_scope: RepeatScopes
    _driver: D

    def __init__(self, driver: D, run: RunRef, policy: Policy,
                 repeat_scope: RepeatScopes = "args") -> None:
        self._driver, self.ref, self.policy = driver, run, ops.capture_policy(policy)
        self.repeat_scope = ops.check_repeat_scope(repeat_scope)
        self._carriers = _CARRIERS.setdefault(driver, Carriers())

    @property
    def id(self) -> str:
        """The run's id."""
        return self.ref.id

    def _policy(self, policy: Policy | None) -> Policy:
        return ops.capture_policy(policy) if policy is not None else self.policy

    def _repeats(self, scope: RepeatScopes | None) -> RepeatScopes:
        return self.repeat_scope if scope is None else ops.check_repeat_scope(scope)


class Run(_RunHandle["SyncDriver"]):
    """One run of an agent whose provenance is captured: what it observed, each model turn with
    tool calls (a decision), each call (an action) and its execution, and what each message the
    model reads carries. Cheap to create (no I/O until the first record); the same run id continues
    the same trace."""

    def observe(self, claims: SequenceNotStr[str], *, ref: str | None = None) -> list[str]:
        """The run saw these claims (e.g. a memory read), carried by the message `ref` (None: they
        stay in context for the rest of the run). Returns the claims recorded."""
        return self._driver.run(lambda: ops.observe(self.ref, claims, ref=ref, kind="memory"))

    def cite(self, claims: SequenceNotStr[str]) -> list[str]:
        """The model says it relies on these claims: later turns rest on them."""
        return self._driver.run(lambda: ops.observe(self.ref, claims, ref=None, kind="citation"))

    def decide(self, turn: str, calls: Sequence[ToolCall], *, context: SequenceNotStr[str] | None = None,
               told: SequenceNotStr[str] = (), policy: Policy | None = None,
               repeat_scope: RepeatScopes | None = None, inputs: SequenceNotStr[str] = (),
               results: Mapping[str, str | None] | None = None) -> list[Verdict]:
        """Record a model turn emitting `calls` as a decision resting on what the messages in the
        model's input carry (`context`: the refs of those messages: tool results' call ids, memory
        handles, the model's own earlier messages and summaries; None: everything the run has
        carried) less what the vetoes it read (`told`: the call ids of veto messages in it) named.
        A message of `inputs` (a human or system message) that Rippl has no record of carries
        nothing when it is the new tail of the input (the user's own); anywhere else an unknown
        message is a rewrite of the history and carries everything the run has carried. A call
        that repeats a call vetoed in this run stays vetoed (`repeat_scope`: "args", or "tool" for
        any call of a vetoed tool; per tool with a mapping). `results` maps the tool results in the
        input (call ids) to a digest of their content (`rippl_core.adapters.output_digest`; None:
        only that it was recorded): one Rippl never recorded for this run, or whose content
        changed since, denies the turn (a forged or edited message) until a person reinstates the
        claim that it is genuine. Returns the verdict on each call, in order."""
        return self._driver.run(lambda: ops.decide(
            self.ref, turn, calls, context=context, told=told, policy=self._policy(policy),
            repeat_scope=self._repeats(repeat_scope), inputs=inputs, results=results,
            carriers=self._carriers))

    def wrote(self, ref: str, *, context: SequenceNotStr[str] | None = None,
              told: SequenceNotStr[str] = (), kind: str = "message",
              inputs: SequenceNotStr[str] = ()) -> list[str]:
        """The model wrote the message `ref` (a text reply, a summary) from an input holding the
        messages `context` (as for `decide`): a later turn whose input holds it rests on what it
        carries. Returns the claims it carries."""
        return self._driver.run(lambda: ops.wrote(self.ref, ref, context=context, told=told,
                                                  kind=kind, inputs=inputs,
                                                  carriers=self._carriers))

    def judge(self, call: ToolCall, *, policy: Policy | None = None,
              repeat_scope: RepeatScopes | None = None) -> Verdict:
        """Re-check a call (with its call id) just before it executes: after a pause, the premises
        of its turn may have been retracted."""
        return self._driver.run(lambda: ops.judge(self.ref, call, policy=self._policy(policy),
                                                  repeat_scope=self._repeats(repeat_scope),
                                                  carriers=self._carriers))

    def executed(self, call: ToolCall, output: Any, *, ok: bool = True,
                 fresh_for: float | timedelta | None = None, reads: bool | None = None) -> str:
        """The call ran (ok=False: it ran and failed): mark its action executed, and record its
        output as an observation of the run (a reading). Returns the id of the claim stating the
        result. `fresh_for` (seconds): how long the reading stays valid (calls resting on it
        later are denied as stale until the agent reads again); `reads`: the tool is a read, so a
        reading of another output supersedes this one (default: True when `fresh_for` is given)."""
        recorded: ops.Recorded = self._driver.run(lambda: ops.executed(self.ref, call, output, ok=ok,
                                                         fresh_for=_seconds(fresh_for),
                                                         reads=reads, carriers=self._carriers))
        if recorded.sources:  # a claim that was OUT holds again: relabel what rests on it
            self._driver.run(lambda: ops.rejoin(recorded), write=True)
        return recorded.claim

    def register_tools(self, schemas: Mapping[str, Mapping[str, Any]]) -> None:
        """Keep each tool's input schema (tool name -> JSON Schema object) with the run, in the
        graph: whoever continues the run compares its calls on the arguments the tool receives
        (`rippl_core.capture.arguments`). A tool registered again is replaced."""
        self._driver.run(lambda: ops.register_tools(self.ref, schemas))

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        """The input schemas registered with the run, by tool name."""
        return self._driver.run(lambda: ops.tool_schemas(self.ref))

    def close(self) -> None:
        """Close the run: `prune_runs` may then remove its capture."""
        self._driver.run(lambda: ops.close(self.ref))


class AsyncRun(_RunHandle["AsyncDriver"]):
    """The asyncio twin of `Run`."""

    async def observe(self, claims: SequenceNotStr[str], *, ref: str | None = None) -> list[str]:
        """The run saw these claims (e.g. a memory read), carried by the message `ref` (None: they
        stay in context for the rest of the run). Returns the claims recorded."""
        return await self._driver.run(lambda: ops.observe(self.ref, claims, ref=ref, kind="memory"))

    async def cite(self, claims: SequenceNotStr[str]) -> list[str]:
        """The model says it relies on these claims: later turns rest on them."""
        return await self._driver.run(lambda: ops.observe(self.ref, claims, ref=None,
                                                          kind="citation"))

    async def decide(self, turn: str, calls: Sequence[ToolCall], *,
                     context: SequenceNotStr[str] | None = None, told: SequenceNotStr[str] = (),
                     policy: Policy | None = None, repeat_scope: RepeatScopes | None = None,
                     inputs: SequenceNotStr[str] = (),
                     results: Mapping[str, str | None] | None = None) -> list[Verdict]:
        """Record a model turn emitting `calls` as a decision resting on what the messages in the
        model's input carry (`context`: the refs of those messages: tool results' call ids, memory
        handles, the model's own earlier messages and summaries; None: everything the run has
        carried) less what the vetoes it read (`told`: the call ids of veto messages in it) named.
        A message of `inputs` (a human or system message) that Rippl has no record of carries
        nothing when it is the new tail of the input (the user's own); anywhere else an unknown
        message is a rewrite of the history and carries everything the run has carried. A call
        that repeats a call vetoed in this run stays vetoed (`repeat_scope`: "args", or "tool" for
        any call of a vetoed tool; per tool with a mapping). `results` maps the tool results in the
        input (call ids) to a digest of their content (`rippl_core.adapters.output_digest`; None:
        only that it was recorded): one Rippl never recorded for this run, or whose content
        changed since, denies the turn (a forged or edited message) until a person reinstates the
        claim that it is genuine. Returns the verdict on each call, in order."""
        return await self._driver.run(lambda: ops.decide(
            self.ref, turn, calls, context=context, told=told, policy=self._policy(policy),
            repeat_scope=self._repeats(repeat_scope), inputs=inputs, results=results,
            carriers=self._carriers))

    async def wrote(self, ref: str, *, context: SequenceNotStr[str] | None = None,
                    told: SequenceNotStr[str] = (), kind: str = "message",
                    inputs: SequenceNotStr[str] = ()) -> list[str]:
        """The model wrote the message `ref` (a text reply, a summary) from an input holding the
        messages `context` (as for `decide`): a later turn whose input holds it rests on what it
        carries. Returns the claims it carries."""
        return await self._driver.run(lambda: ops.wrote(self.ref, ref, context=context, told=told,
                                                        kind=kind, inputs=inputs,
                                                  carriers=self._carriers))

    async def judge(self, call: ToolCall, *, policy: Policy | None = None,
                    repeat_scope: RepeatScopes | None = None) -> Verdict:
        """Re-check a call (with its call id) just before it executes: after a pause, the premises
        of its turn may have been retracted."""
        return await self._driver.run(lambda: ops.judge(
            self.ref, call, policy=self._policy(policy), repeat_scope=self._repeats(repeat_scope),
            carriers=self._carriers))

    async def executed(self, call: ToolCall, output: Any, *, ok: bool = True,
                       fresh_for: float | timedelta | None = None, reads: bool | None = None) -> str:
        """The call ran (ok=False: it ran and failed): mark its action executed, and record its
        output as an observation of the run (a reading). Returns the id of the claim stating the
        result. `fresh_for` (seconds): how long the reading stays valid (calls resting on it
        later are denied as stale until the agent reads again); `reads`: the tool is a read, so a
        reading of another output supersedes this one (default: True when `fresh_for` is given)."""
        recorded: ops.Recorded = await self._driver.run(lambda: ops.executed(
            self.ref, call, output, ok=ok, fresh_for=_seconds(fresh_for), reads=reads,
            carriers=self._carriers))
        if recorded.sources:  # a claim that was OUT holds again: relabel what rests on it
            await self._driver.run(lambda: ops.rejoin(recorded), write=True)
        return recorded.claim

    async def register_tools(self, schemas: Mapping[str, Mapping[str, Any]]) -> None:
        """Keep each tool's input schema (tool name -> JSON Schema object) with the run, in the
        graph: whoever continues the run compares its calls on the arguments the tool receives
        (`rippl_core.capture.arguments`). A tool registered again is replaced."""
        await self._driver.run(lambda: ops.register_tools(self.ref, schemas))

    async def tool_schemas(self) -> dict[str, dict[str, Any]]:
        """The input schemas registered with the run, by tool name."""
        return await self._driver.run(lambda: ops.tool_schemas(self.ref))

    async def close(self) -> None:
        """Close the run: `prune_runs` may then remove its capture."""
        await self._driver.run(lambda: ops.close(self.ref))


def _seconds(value: float | timedelta | None) -> float | None:
    return value.total_seconds() if isinstance(value, timedelta) else value
