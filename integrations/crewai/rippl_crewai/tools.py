"""Tools: `GuardedTool` checks premises inside the tool's own run; `CheckPremisesTool` lets an agent
ask whether an action, a decision or a planned call is still safe.

CrewAI's hooks do not see every path to a tool: a direct `tool.run()`, a flow's declarative tool
action and some agent adapters call the tool without them. A `GuardedTool` checks in `_run` and
`_arun`, so those calls are vetoed too. A vetoed call does not run the wrapped tool; it returns a
CrewAI `ToolFailure` whose message is the veto with every trail (the agent reads it; a flow or the
tool-failure policy sees a failure), or raises `PremiseRetractedError` with on_deny="raise".
Guarded results are never cached: a cached answer would skip the check.

Under capture (the default) a call that reached the tool through the hooks was judged and is
recorded by them (they hand the tool their verdict); on the other paths the tool records it
itself, in the run CrewAI's context names (a crew's task, a flow) or `capture_run`: the call is a
turn of its own resting on everything the run observed, and its execution and output are
recorded. A call outside any run is checked against declared actions only.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from crewai.tools import BaseTool
from crewai.tools.base_tool import Tool
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from rippl_core import Kind, Policy, PremiseRetractedError, Rippl, State, ToolCall, Verdict
from rippl_core.adapters import Capture, ToolSettingsMap, unmappable
from rippl_crewai._guard import (
    Guard,
    Resolver,
    learn_tools,
    make_guard,
    tool_name,
    tool_names,
    veto_text,
)
from rippl_crewai.runs import CHECK_TOOL_NAME, CrewCall, Runs, run_id


def _never_cache(_args: Any = None, _result: Any = None) -> bool:
    return False


def failure_code(verdict: Verdict) -> str:
    """A short machine-readable reason for a denial."""
    if verdict.state is State.OUT:
        return "premise_retracted"
    if verdict.state is State.AT_RISK:
        return "premise_at_risk"
    if "could not be checked" in verdict.reason or "could not be recorded" in verdict.reason:
        return "premise_graph_unavailable"
    return "unknown_action"


class Admission:
    """The hooks' verdict on a call, handed to the `GuardedTool` that runs it (so the call is
    judged and recorded once), from `PRE_TOOL_CALL` until `POST_TOOL_CALL` releases it."""

    tool: GuardedTool
    args: dict[str, Any]
    run: str
    verdict: Verdict | None

    def __init__(self, tool: GuardedTool, args: Mapping[str, Any], run: str,
                 verdict: Verdict | None) -> None:
        self.tool, self.args, self.run, self.verdict = tool, dict(args), run, verdict

    def fits(self, args: Mapping[str, Any], run: str | None) -> bool:
        """Whether a run of the tool with `args` (after the tool's schema filled in defaults)
        is this call, in `run` (None: CrewAI's context is not visible in the tool's thread)."""
        return (run is None or run == self.run) and all(
            key in args and args[key] == value for key, value in self.args.items())

    def release(self) -> None:
        self.tool._release(self)


@dataclass
class _Judged:
    verdict: Verdict | None
    positional: tuple[Any, ...]
    named: dict[str, Any]
    capture: Capture | None = None
    call: CrewCall | None = None

    @property
    def allowed(self) -> bool:
        return self.verdict is None or self.verdict.allowed

    def record(self, output: Any, *, ok: bool) -> None:
        if self.capture is not None and self.call is not None:
            self.capture.executed(self.call, output, ok=ok)


class GuardedTool(BaseTool):
    """A tool that checks the premises of its action before every run.

    `GuardedTool(wrapped=tool, memory=rippl)` takes the wrapped tool's name, description and
    argument schema. `action_id` pins the action; otherwise the call is resolved by `resolver`,
    then by tool name and arguments against the graph's actions. `capture` (default True) records
    calls made outside the hooks in their run; `capture_run` names the run for calls made where
    CrewAI's context names none (e.g. a script calling `tool.run()`). `tool_settings` (a
    `ToolSettings` or a dict of its fields) says how Rippl treats this tool's calls; without it,
    the wrapped tool's `metadata` mapping may carry them under the key "rippl".
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(arbitrary_types_allowed=True)

    wrapped: BaseTool = Field(exclude=True, description="The tool that runs when allowed.")
    memory: Any = Field(exclude=True, description="The Rippl handle to check against.")
    policy: Policy | None = None
    action_id: str | None = None
    resolver: Any = Field(default=None, exclude=True)
    on_deny: Literal["failure", "raise"] = "failure"
    capture: bool = True
    capture_run: str | None = None
    tool_settings: Any = Field(default=None, exclude=True)
    _last_verdict: Verdict | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _from_wrapped(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("wrapped"), BaseTool):
            return data
        wrapped: BaseTool = data["wrapped"]
        defaults = {"name": wrapped.name, "description": wrapped.description,
                    "args_schema": wrapped.args_schema, "result_schema": wrapped.result_schema,
                    "result_as_answer": wrapped.result_as_answer,
                    "tool_failure_policy": wrapped.tool_failure_policy,
                    "env_vars": wrapped.env_vars, "cache_function": _never_cache}
        return {**defaults, **data}

    _guard: Guard = PrivateAttr()
    _runs: Runs = PrivateAttr()
    _admissions: list[Admission] = PrivateAttr(default_factory=list)
    _admit_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, **data: Any) -> None:
        settings, wrapped = data.get("tool_settings"), data.get("wrapped")
        guard = make_guard(data.get("memory"), policy=data.get("policy"),  # typed errors first
                           resolver=data.get("resolver"), action_id=data.get("action_id"),
                           tool_settings=None if settings is None else
                           {tool_name(data.get("name") or wrapped): settings})
        learn_tools(guard, [wrapped])
        super().__init__(**data)
        self._guard = guard
        self._runs = Runs(guard)

    @property
    def last_verdict(self) -> Verdict | None:
        """The verdict of the most recent run."""
        return self._last_verdict

    def check(self, **kwargs: Any) -> Verdict:
        """The verdict of the declared actions on calling this tool with `kwargs` now (never
        raises; records nothing)."""
        verdict = self._guard.check(tool_name(self), kwargs)
        assert verdict is not None  # a single tool's guard exempts nothing
        self._last_verdict = verdict
        return verdict

    # -- the hooks' verdict, handed over -------------------------------------------------------
    def admit(self, args: Mapping[str, Any], run: str, verdict: Verdict | None) -> Admission:
        """Called by the hooks when they allowed a call to this tool (and record it)."""
        admission = Admission(self, args, run, verdict)
        with self._admit_lock:
            self._admissions.append(admission)
        return admission

    def _release(self, admission: Admission) -> None:
        with self._admit_lock:
            if admission in self._admissions:
                self._admissions.remove(admission)

    def _admitted(self, args: Mapping[str, Any], run: str | None) -> Admission | None:
        with self._admit_lock:
            for admission in self._admissions:
                if admission.fits(args, run):
                    self._admissions.remove(admission)
                    return admission
        return None

    # -- running -------------------------------------------------------------------------------
    def _deny(self, verdict: Verdict) -> ToolFailure:
        if self.on_deny == "raise":
            raise PremiseRetractedError(verdict)
        return ToolFailure(message=veto_text(tool_name(self), verdict),
                           reason=ToolFailureReason.TOOL_REPORTED, code=failure_code(verdict),
                           retryable=verdict.state is State.AT_RISK,
                           details={"verdict": verdict.model_dump(mode="json")})

    def _kwargs(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Positional arguments named after the schema's fields, so the check sees every value."""
        if not args:
            return kwargs
        fields = list(self.args_schema.model_fields)
        if len(args) > len(fields):
            raise TypeError(f"{self.name} takes at most {len(fields)} arguments")
        return {**dict(zip(fields, args, strict=False)), **kwargs}

    def _judge(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Judged:
        """The verdict on a run and the arguments the wrapped tool gets: by name when the schema
        names them all, else as given (a call that cannot be mapped, judged by policy.unknown)."""
        name = tool_name(self)
        try:
            call_args = self._kwargs(args, kwargs)
        except TypeError as exc:
            policy = self._guard.policy or self.memory.policy or Policy()
            judged = _Judged(unmappable(name, kwargs, None, exc, policy), args, kwargs)
        else:
            judged = self._judged(name, call_args)
        self._last_verdict = judged.verdict
        return judged

    def _judged(self, name: str, call_args: dict[str, Any]) -> _Judged:
        run = (self.capture_run or run_id()) if self.capture else None
        admission = self._admitted(call_args, run)
        if admission is not None:  # judged and recorded by the hooks
            return _Judged(admission.verdict, (), call_args)
        if run is None:
            return _Judged(self.check(**call_args), (), call_args)
        call: CrewCall = (name, call_args, f"crewai-tool-{uuid.uuid4().hex[:16]}")
        capture = self._runs.get(run)
        return _Judged(capture.judge(call), (), call_args, capture, call)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        judged = self._judge(args, kwargs)
        if not judged.allowed:
            assert judged.verdict is not None
            return self._deny(judged.verdict)
        try:
            output = self.wrapped.run(*judged.positional, **judged.named)
        except Exception as exc:  # it ran, and may have had effects
            judged.record(f"{type(exc).__name__}: {exc}", ok=False)
            raise
        judged.record(output, ok=not isinstance(output, ToolFailure))
        return output

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        judged = await asyncio.to_thread(self._judge, args, kwargs)
        if not judged.allowed:
            assert judged.verdict is not None
            return self._deny(judged.verdict)
        try:
            if _has_async(self.wrapped):
                output = await self.wrapped.arun(*judged.positional, **judged.named)
            else:
                output = await asyncio.to_thread(
                    lambda: self.wrapped.run(*judged.positional, **judged.named))
        except Exception as exc:
            await asyncio.to_thread(judged.record, f"{type(exc).__name__}: {exc}", ok=False)
            raise
        await asyncio.to_thread(judged.record, output, ok=not isinstance(output, ToolFailure))
        return output


def _has_async(tool: BaseTool) -> bool:
    if isinstance(tool, Tool):
        return asyncio.iscoroutinefunction(tool.func)
    return type(tool)._arun is not BaseTool._arun


def guard_tools(tools: Iterable[BaseTool], memory: Rippl, *, policy: Policy | None = None,
                resolver: Resolver | Mapping[str, str] | None = None,
                actions: Mapping[str, str] | None = None, unguarded: Iterable[object] = (),
                on_deny: Literal["failure", "raise"] = "failure",
                capture: bool = True,
                tool_settings: ToolSettingsMap | None = None) -> list[BaseTool]:
    """Wrap each tool in a `GuardedTool`. Tools already guarded, `CheckPremisesTool` and the
    `unguarded` ones (read-only lookups) are kept as they are. `actions` pins tool names to
    action ids; `tool_settings` gives per tool name how Rippl treats its calls."""
    out: list[BaseTool] = []
    pinned = {tool_name(k): v for k, v in (actions or {}).items()}
    exempt = tool_names(unguarded, what="unguarded") or frozenset()
    settings = {tool_name(k): v for k, v in (tool_settings or {}).items()}
    for tool in tools:
        if isinstance(tool, GuardedTool | CheckPremisesTool) or tool_name(tool) in exempt:
            out.append(tool)
            continue
        out.append(GuardedTool(wrapped=tool, memory=memory, policy=policy, resolver=resolver,
                               action_id=pinned.get(tool_name(tool)), on_deny=on_deny,
                               capture=capture, tool_settings=settings.get(tool_name(tool))))
    return out


class CheckPremisesInput(BaseModel):
    target: str = Field(description=(
        "The id of an action or decision to check (for example ACT-001), or the name of a tool "
        "you plan to call."))
    args: dict[str, Any] | None = Field(default=None, description=(
        "When target is a tool name: the arguments you plan to call it with."))


class CheckPremisesTool(BaseTool):
    """A read-only tool: is this action, decision or planned tool call still safe, and why not?"""

    model_config: ClassVar[ConfigDict] = ConfigDict(arbitrary_types_allowed=True)

    name: str = CHECK_TOOL_NAME
    description: str = (
        "Check, before acting, whether an action, a decision or a planned tool call still stands "
        "on valid premises. Returns ALLOWED or DENIED with the reason and, for a denial, the trail "
        "from every retracted or disputed premise to the target. Use it when a call was vetoed to "
        "see why, and to check an alternative before calling it.")
    args_schema: type[BaseModel] = CheckPremisesInput
    memory: Any = Field(exclude=True)
    policy: Policy | None = None
    max_premises: int = 12

    def __init__(self, memory: Rippl | None = None, **data: Any) -> None:
        if memory is not None:
            data["memory"] = memory
        make_guard(data.get("memory"), policy=data.get("policy"))  # typed errors first
        super().__init__(**data)

    def _run(self, target: str, args: dict[str, Any] | None = None) -> str:
        memory: Rippl = self.memory
        subject: str | ToolCall = target if args is None else ToolCall(name=target, args=args)
        try:
            verdict = memory.check(subject, policy=self.policy)
        except Exception as exc:  # an id or arguments the graph cannot hold
            verdict = Verdict(allowed=False, target=None,
                              reason=f"{target!r} cannot be checked: {exc}")
        return self.describe(verdict)

    async def _arun(self, target: str, args: dict[str, Any] | None = None) -> str:
        return await asyncio.to_thread(self._run, target, args)

    def describe(self, verdict: Verdict) -> str:
        """The verdict as text for a model: the answer, the reason, the trails, the premises."""
        lines = [("ALLOWED: " if verdict.allowed else "DENIED: ") + verdict.explain()]
        if verdict.allowed and verdict.target is not None:
            try:
                under = [r for r in self.memory.premises(verdict.target)
                         if r.kind in (Kind.CLAIM, Kind.SOURCE)]
            except Exception:  # the listing is a courtesy; the verdict stands without it
                under = []
            if under:
                shown = ", ".join(f"{r.id} ({r.status})" for r in under[: self.max_premises])
                more = len(under) - self.max_premises
                lines.append(f"It rests on: {shown}" + (f" and {more} more" if more > 0 else ""))
        return "\n".join(lines)
