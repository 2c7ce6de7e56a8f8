"""`GuardedTool` and `guard_tools`: the hook for code that passes `tools=[...]` to an agent.

    agent = AssistantAgent("ops", model_client=client, tools=guard_tools([migrate_tables], rippl))

A guarded tool checks the call against the premise graph before the inner tool runs; a vetoed call
raises `ToolVetoedError`, which the agent's workbench turns into an error result carrying the
verdict's explanation. A streaming tool (AgentTool, TeamTool...) stays a streaming tool. By default
each call is captured like the workbench's (see `rippl_autogen.guard`): judged at execution in its
run, then recorded as executed with its output (a tool that raised counts as executed).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Self

from autogen_core import CancellationToken, Component, ComponentModel, ComponentType
from autogen_core.tools import BaseStreamTool, BaseTool, FunctionTool, ToolSchema
from pydantic import BaseModel

from rippl_autogen.connection import Link, Target
from rippl_autogen.guard import Guard, GuardConfig, Judged, Resolver, shared_guard, veto_text
from rippl_core import CollectionNotStr, InvalidInputError, Policy, PremiseRetractedError, Verdict
from rippl_core.adapters import ToolSettingsMap


class ToolVetoedError(PremiseRetractedError):
    """A guarded tool call was denied before it ran. `str()` is what the model reads."""

    tool: str
    args: tuple[Any, ...]

    def __init__(self, tool: str, verdict: Verdict) -> None:
        super().__init__(verdict)
        self.tool = tool
        self.args = (veto_text(tool, verdict),)


class GuardedToolConfig(BaseModel):
    """Declarative config of a GuardedTool: the inner tool and the guard."""

    tool: ComponentModel
    guard: GuardConfig


class GuardedTool(BaseTool[BaseModel, Any], Component[GuardedToolConfig]):
    """A tool that asks the Rippl premise graph before running `inner`. Same name, description,
    schema and state as `inner`.

    Args:
        inner: the tool to guard (a FunctionTool, any BaseTool; a stream tool keeps streaming).
        rippl: an `AsyncRippl` handle, a sync `Rippl`, `RipplConnection` options, or a `Guard`
            shared with the agent's other tools and hooks.
        resolver: `{tool name: action id}` or a function `(name, args) -> action id | ToolCall |
            None`; by default the call resolves by tool name and canonical args.
        policy: the pre-flight policy (see `RipplWorkbench`).
        capture, agent, run, tool_settings: as for `RipplWorkbench`. A `metadata` mapping on
            `inner` may carry its settings under "rippl" (`tool_settings` wins).
    """

    component_type: ClassVar[ComponentType] = "tool"
    component_config_schema = GuardedToolConfig
    component_provider_override: ClassVar[str | None] = "rippl_autogen.GuardedTool"

    def __new__(cls, *args: Any, **kwargs: Any) -> GuardedTool:
        inner = args[0] if args else kwargs.get("inner")
        if cls is GuardedTool and callable(getattr(inner, "run_json_stream", None)):
            cls = GuardedStreamTool
        return super().__new__(cls)

    def __init__(self, inner: BaseTool[Any, Any], rippl: Target | Link | Guard, *,
                 resolver: Resolver | None = None, policy: Policy | None = None,
                 capture: bool = True, agent: str | None = None, run: str | None = None,
                 tool_settings: ToolSettingsMap | None = None) -> None:
        if not isinstance(inner, BaseTool):
            raise InvalidInputError(f"inner must be an autogen BaseTool, got {type(inner).__name__}; "
                                    "wrap a function with FunctionTool(fn, description=...) first")
        self._inner = inner
        self._guard = shared_guard(rippl, resolver=resolver, policy=policy, capture=capture,
                                   agent=agent, run=run, tool_settings=tool_settings)
        self._guard.runs_tools([inner])
        super().__init__(inner.args_type(), inner.return_type(), inner.name, inner.description)

    @property
    def inner(self) -> BaseTool[Any, Any]:
        return self._inner

    @property
    def guard(self) -> Guard:
        return self._guard

    @property
    def schema(self) -> ToolSchema:
        return self._inner.schema

    def state_type(self) -> type[BaseModel] | None:
        return self._inner.state_type()

    def return_value_as_string(self, value: Any) -> str:
        return self._inner.return_value_as_string(value)

    async def check(self, args: Mapping[str, Any], call_id: str | None = None) -> Verdict | None:
        """What the declared actions say of calling the tool with `args` (a dry run: nothing is
        recorded; a call's captured premises are judged when it runs)."""
        return await self._guard.acheck(self.name, args, call_id)

    async def _require(self, args: Mapping[str, Any], call_id: str | None) -> Judged:
        judged = await self._guard.before(self.name, args, call_id)
        if judged.verdict is not None and not judged.allowed:
            raise ToolVetoedError(self.name, judged.verdict)
        return judged

    async def _guarded(self, args: Mapping[str, Any], call_id: str | None,
                       execute: Callable[[], Awaitable[Any]]) -> Any:
        judged = await self._require(args, call_id)
        try:
            with self._guard.running(judged):
                value = await execute()
        except Exception as exc:
            await self._guard.after(judged, f"{type(exc).__name__}: {exc}", ok=False)
            raise
        await self._guard.after(judged, self._inner.return_value_as_string(value))
        return value

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> Any:
        """Run with already-validated args (checked like `run_json`)."""
        return await self._guarded(args.model_dump(), None,
                                   lambda: self._inner.run(args, cancellation_token))

    async def run_json(self, args: Mapping[str, Any], cancellation_token: CancellationToken,
                       call_id: str | None = None) -> Any:
        return await self._guarded(args, call_id, lambda: self._inner.run_json(
            args, cancellation_token, call_id=call_id))

    async def save_state_json(self) -> Mapping[str, Any]:
        return await self._inner.save_state_json()

    async def load_state_json(self, state: Mapping[str, Any]) -> None:
        await self._inner.load_state_json(state)

    async def close(self) -> None:
        """Close a graph handle this tool opened itself (a loaded component)."""
        await self._guard.link.close()

    def _to_config(self) -> GuardedToolConfig:
        return GuardedToolConfig(tool=self._inner.dump_component(), guard=self._guard.config())

    @classmethod
    def _from_config(cls, config: GuardedToolConfig) -> Self:
        return cls(BaseTool.load_component(config.tool), Guard.from_config(config.guard))


class GuardedStreamTool(GuardedTool, BaseStreamTool[BaseModel, Any, Any]):
    """The streaming form of `GuardedTool`, made by `GuardedTool(inner)` when `inner` streams."""

    component_provider_override: ClassVar[str | None] = "rippl_autogen.GuardedTool"

    def run_stream(self, args: BaseModel, cancellation_token: CancellationToken
                   ) -> AsyncGenerator[Any, None]:
        return self._stream(self._inner.run_stream(args, cancellation_token),  # type: ignore[attr-defined]  # a stream tool (see GuardedTool.__new__)
                            args.model_dump(), None)

    def run_json_stream(self, args: Mapping[str, Any], cancellation_token: CancellationToken,
                        call_id: str | None = None) -> AsyncGenerator[Any, None]:
        inner = self._inner.run_json_stream(  # type: ignore[attr-defined]  # a stream tool (see __new__)
            args, cancellation_token, call_id=call_id)
        return self._stream(inner, args, call_id)

    async def _stream(self, inner: AsyncGenerator[Any, None], args: Mapping[str, Any],
                      call_id: str | None) -> AsyncGenerator[Any, None]:
        """The inner stream once the call is allowed; its last event (the tool's return value) is
        recorded as the output."""
        try:
            judged = await self._require(args, call_id)
            last: Any = None
            try:
                with self._guard.running(judged):
                    async for event in inner:
                        last = event
                        yield event
            except Exception as exc:
                await self._guard.after(judged, f"{type(exc).__name__}: {exc}", ok=False)
                raise
            await self._guard.after(judged, "" if last is None else
                                    self._inner.return_value_as_string(last))
        finally:
            await inner.aclose()


type ToolLike = BaseTool[Any, Any] | Callable[..., Any]


def guard_tools(tools: Sequence[ToolLike], rippl: Target | Link | Guard, *,
                resolver: Resolver | None = None, policy: Policy | None = None,
                unguarded: CollectionNotStr[str] = (), capture: bool = True, agent: str | None = None,
                run: str | None = None,
                tool_settings: ToolSettingsMap | None = None) -> list[BaseTool[Any, Any]]:
    """Guard each tool (plain functions become FunctionTools, as AssistantAgent would make them).
    One guard is shared by all (so one run, when no model turn names it). Tools named in
    `unguarded` are never vetoed: without capture they are returned as they are; under capture
    they are wrapped too, so their results are recorded as observations of the run.
    `tool_settings`: as for `RipplWorkbench` (a tool's `metadata` under "rippl" is read too)."""
    if isinstance(unguarded, str):
        raise InvalidInputError("unguarded must be a list of tool names, not a single string")
    guard = shared_guard(rippl, resolver=resolver, policy=policy, unguarded=unguarded,
                         capture=capture, agent=agent, run=run, tool_settings=tool_settings)
    guarded: list[BaseTool[Any, Any]] = []
    for tool in tools:
        if not isinstance(tool, BaseTool):
            if not callable(tool):
                raise InvalidInputError(f"cannot guard {type(tool).__name__}: give BaseTools or "
                                        "functions")
            tool = FunctionTool(tool, description=tool.__doc__ or "")
        skip = isinstance(tool, GuardedTool) or (not guard.capturing and not guard.guards(tool.name))
        guarded.append(tool if skip else GuardedTool(tool, guard))
    return guarded
