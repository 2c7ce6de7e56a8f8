"""`RipplWorkbench`: the AgentChat hook. Wraps any Workbench and vetoes calls resting on retracted
premises before the inner tool runs.

    agent = AssistantAgent("ops", model_client=client,
                           workbench=RipplWorkbench(StaticWorkbench([migrate_tables]), rippl))

A vetoed call returns `ToolResult(is_error=True)` whose text is the verdict's explanation (the
reason and the trail to every blocking premise), so the model reads why and can choose another
action. Allowed calls go to the inner workbench unchanged. By default each call is captured: judged
at execution in the run whose model turn decided it, then recorded as executed with the result's
text as a new observation of the run (an error result counts as executed: the tool ran).

Streaming: AssistantAgent streams a workbench's events only when the workbench is a
`StaticStreamWorkbench` (an isinstance check). `RipplWorkbench(inner)` therefore returns a
`RipplStreamWorkbench` when `inner` streams (has `call_tool_stream`), which overrides *both*
`call_tool` and `call_tool_stream` with the guard, so neither path can skip it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any, ClassVar, Protocol, Self, TypeGuard

from autogen_core import CancellationToken, Component, ComponentModel, ComponentType
from autogen_core.tools import (
    StaticStreamWorkbench,
    StaticWorkbench,
    TextResultContent,
    ToolResult,
    ToolSchema,
    Workbench,
)
from pydantic import BaseModel

from rippl_autogen.connection import Link, Target
from rippl_autogen.guard import Guard, GuardConfig, Judged, Resolver, shared_guard, veto_text
from rippl_core import CollectionNotStr, InvalidInputError, Policy, Verdict
from rippl_core.adapters import ToolSettingsMap


class RipplWorkbenchConfig(BaseModel):
    """Declarative config of a RipplWorkbench: the inner workbench and the guard."""

    inner: ComponentModel
    guard: GuardConfig


class Streaming(Protocol):
    """What a workbench that streams a call has (autogen's StreamWorkbench, or a wrapper)."""

    def call_tool_stream(self, name: str, arguments: Mapping[str, Any] | None = None,
                         cancellation_token: CancellationToken | None = None,
                         call_id: str | None = None) -> AsyncGenerator[Any | ToolResult, None]: ...


def streams(workbench: object) -> TypeGuard[Streaming]:
    """Whether `workbench` can stream a call (a StreamWorkbench, or another wrapper that does)."""
    return callable(getattr(workbench, "call_tool_stream", None))


def vetoed_result(name: str, verdict: Verdict) -> ToolResult:
    """The error result a vetoed call returns instead of running."""
    return ToolResult(name=name, result=[TextResultContent(content=veto_text(name, verdict))],
                      is_error=True)


class RipplWorkbench(Workbench, Component[RipplWorkbenchConfig]):
    """A workbench that checks every tool call against the Rippl premise graph first.

    Args:
        inner: the workbench whose tools run (StaticWorkbench, StaticStreamWorkbench, McpWorkbench...).
        rippl: an `AsyncRippl` handle (or a sync `Rippl`, run in a thread, or `RipplConnection`
            options, opened on first use), or a `Guard` shared with other hooks of the agent.
        resolver: maps a call to its action: `{tool name: action id}`, or a function
            `(name, args) -> action id | ToolCall | None` (None: resolve by tool name and args).
        policy: the pre-flight policy (default: the handle's; under capture, undeclared calls are
            judged by the run, unless the policy says `unknown="deny"`).
        unguarded: tool names never vetoed (read-only lookups; still recorded under capture).
        capture: record the run's calls and their results (default), or check declared actions
            only (then a call that maps to no action is denied unless `policy.unknown == "allow"`).
        agent, run: the run's agent name and the application's conversation id (see
            `rippl_autogen.runs`).
        tool_settings: per tool name, how Rippl treats its calls: `ToolSettings(repeat_scope=,
            fresh_for=, reads=)` or a dict of them, e.g. `{"migrate": {"repeat_scope": "tool"},
            "get_health": {"fresh_for": 300}}`. A tool of an inner `StaticWorkbench` may carry
            them in a `metadata` mapping under "rippl"; what is given here wins.
    """

    component_type: ClassVar[ComponentType] = "workbench"
    component_config_schema = RipplWorkbenchConfig
    component_provider_override: ClassVar[str | None] = "rippl_autogen.RipplWorkbench"

    def __new__(cls, *args: Any, **kwargs: Any) -> RipplWorkbench:
        inner = args[0] if args else kwargs.get("inner")
        if cls is RipplWorkbench and streams(inner):
            cls = RipplStreamWorkbench
        return super().__new__(cls)

    def __init__(self, inner: Workbench, rippl: Target | Link | Guard, *,
                 resolver: Resolver | None = None, policy: Policy | None = None,
                 unguarded: CollectionNotStr[str] = (), capture: bool = True, agent: str | None = None,
                 run: str | None = None, tool_settings: ToolSettingsMap | None = None) -> None:
        if not isinstance(inner, Workbench):
            raise InvalidInputError(f"inner must be an autogen Workbench, got {type(inner).__name__}")
        self._inner = inner
        self._guard = shared_guard(rippl, resolver=resolver, policy=policy, unguarded=unguarded,
                                   capture=capture, agent=agent, run=run,
                                   tool_settings=tool_settings)
        if isinstance(inner, StaticWorkbench):  # its tool objects (their metadata) are at hand
            self._guard.runs_tools(inner._tools)

    @property
    def inner(self) -> Workbench:
        return self._inner

    @property
    def guard(self) -> Guard:
        return self._guard

    async def check(self, name: str, arguments: Mapping[str, Any] | None = None) -> Verdict | None:
        """What the declared actions say of a call of `name` with `arguments` (None: unguarded).
        A dry run: nothing is recorded, and a call's captured premises are judged when it runs."""
        return await self._guard.acheck(name, arguments)

    async def list_tools(self) -> list[ToolSchema]:
        tools = await self._inner.list_tools()
        self._guard.runs_tools(tools)
        return tools

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None,
                        cancellation_token: CancellationToken | None = None,
                        call_id: str | None = None) -> ToolResult:
        judged = await self._guard.before(name, arguments, call_id)
        if judged.verdict is not None and not judged.allowed:
            return vetoed_result(name, judged.verdict)
        return await self._run_judged(judged, name, arguments, cancellation_token, call_id)

    async def call_tool_stream(self, name: str, arguments: Mapping[str, Any] | None = None,
                               cancellation_token: CancellationToken | None = None,
                               call_id: str | None = None) -> AsyncGenerator[Any | ToolResult, None]:
        """Stream the inner tool's events when allowed; a vetoed call yields one error result."""
        judged = await self._guard.before(name, arguments, call_id)
        if judged.verdict is not None and not judged.allowed:
            yield vetoed_result(name, judged.verdict)
            return
        if not streams(self._inner):
            yield await self._run_judged(judged, name, arguments, cancellation_token, call_id)
            return
        stream = self._inner.call_tool_stream(name, arguments, cancellation_token, call_id)
        recorded = False
        try:
            with self._guard.running(judged):
                async for event in stream:
                    if isinstance(event, ToolResult) and not recorded:
                        recorded = True
                        await self._guard.after(judged, event.to_text(), ok=not event.is_error)
                    yield event
        except Exception as exc:
            if not recorded:
                await self._guard.after(judged, f"{type(exc).__name__}: {exc}", ok=False)
            raise

    async def _run_judged(self, judged: Judged, name: str, arguments: Mapping[str, Any] | None,
                          cancellation_token: CancellationToken | None,
                          call_id: str | None) -> ToolResult:
        """Run an allowed call on the inner workbench and record its execution."""
        try:
            with self._guard.running(judged):
                result = await self._inner.call_tool(name, arguments, cancellation_token, call_id)
        except Exception as exc:
            await self._guard.after(judged, f"{type(exc).__name__}: {exc}", ok=False)
            raise
        await self._guard.after(judged, result.to_text(), ok=not result.is_error)
        return result

    async def start(self) -> None:
        await self._inner.start()

    async def stop(self) -> None:
        """Stop the inner workbench and close a graph handle this workbench opened itself."""
        try:
            await self._inner.stop()
        finally:
            await self._guard.link.close()

    async def reset(self) -> None:
        await self._inner.reset()

    async def save_state(self) -> Mapping[str, Any]:
        return await self._inner.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        await self._inner.load_state(state)

    def _to_config(self) -> RipplWorkbenchConfig:
        return RipplWorkbenchConfig(inner=self._inner.dump_component(), guard=self._guard.config())

    @classmethod
    def _from_config(cls, config: RipplWorkbenchConfig) -> Self:
        return cls(Workbench.load_component(config.inner), Guard.from_config(config.guard))


class RipplStreamWorkbench(RipplWorkbench, StaticStreamWorkbench):  # type: ignore[misc]  # see below
    """The streaming form of `RipplWorkbench`, made by `RipplWorkbench(inner)` when `inner`
    streams. It is a `StaticStreamWorkbench` only so that AssistantAgent streams through it: every
    method, both call paths included, is `RipplWorkbench`'s (first in the MRO)."""

    component_provider_override: ClassVar[str] = "rippl_autogen.RipplWorkbench"
