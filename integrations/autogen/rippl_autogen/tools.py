"""`GuardedTool` and `guard_tools`: the hook for code that passes `tools=[...]` to an agent.

    agent = AssistantAgent("ops", model_client=client, tools=guard_tools([migrate_tables], rippl))

A guarded tool checks the call against the premise graph before the inner tool runs; a vetoed call
raises `ToolVetoedError`, which the agent's workbench turns into an error result carrying the
verdict's explanation. A streaming tool (AgentTool, TeamTool...) stays a streaming tool.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Collection, Mapping, Sequence
from typing import Any, Self

from autogen_core import CancellationToken, Component, ComponentModel
from autogen_core.tools import BaseStreamTool, BaseTool, FunctionTool, ToolSchema
from pydantic import BaseModel

from rippl_autogen.connection import Link, Target
from rippl_autogen.guard import Guard, GuardConfig, Resolver, veto_text
from rippl_core import InvalidInputError, Policy, PremiseRetractedError, Verdict


class ToolVetoedError(PremiseRetractedError):
    """A guarded tool call was denied before it ran. `str()` is what the model reads."""

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
        rippl: an `AsyncRippl` handle, a sync `Rippl`, or `RipplConnection` options.
        resolver: `{tool name: action id}` or a function `(name, args) -> action id | ToolCall |
            None`; by default the call resolves by tool name and canonical args.
        policy: the pre-flight policy (default: the handle's, which fails closed).
    """

    component_type = "tool"
    component_config_schema = GuardedToolConfig
    component_provider_override = "rippl_autogen.GuardedTool"

    def __new__(cls, *args: Any, **kwargs: Any) -> GuardedTool:
        inner = args[0] if args else kwargs.get("inner")
        if cls is GuardedTool and callable(getattr(inner, "run_json_stream", None)):
            cls = GuardedStreamTool
        return super().__new__(cls)

    def __init__(self, inner: BaseTool[Any, Any], rippl: Target | Link, *,
                 resolver: Resolver | None = None, policy: Policy | None = None) -> None:
        if not isinstance(inner, BaseTool):
            raise InvalidInputError(f"inner must be an autogen BaseTool, got {type(inner).__name__}; "
                                    "wrap a function with FunctionTool(fn, description=...) first")
        self._inner = inner
        self._guard = Guard(rippl, resolver=resolver, policy=policy)
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
        """The verdict on calling the tool with `args`."""
        return await self._guard.acheck(self.name, args, call_id)

    async def _require(self, args: Mapping[str, Any], call_id: str | None) -> None:
        verdict = await self._guard.acheck(self.name, args, call_id)
        if verdict is not None and not verdict.allowed:
            raise ToolVetoedError(self.name, verdict)

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> Any:
        """Run with already-validated args (checked like `run_json`)."""
        await self._require(args.model_dump(), None)
        return await self._inner.run(args, cancellation_token)

    async def run_json(self, args: Mapping[str, Any], cancellation_token: CancellationToken,
                       call_id: str | None = None) -> Any:
        await self._require(args, call_id)
        return await self._inner.run_json(args, cancellation_token, call_id=call_id)

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
        guard = Guard.from_config(config.guard)
        return cls(BaseTool.load_component(config.tool), guard.link, resolver=guard.resolver,
                   policy=guard.policy)


class GuardedStreamTool(GuardedTool, BaseStreamTool[BaseModel, Any, Any]):  # type: ignore[misc]
    """The streaming form of `GuardedTool`, made by `GuardedTool(inner)` when `inner` streams."""

    component_provider_override = "rippl_autogen.GuardedTool"

    def run_stream(self, args: BaseModel, cancellation_token: CancellationToken
                   ) -> AsyncGenerator[Any, None]:
        return self._stream(self._inner.run_stream(args, cancellation_token),  # type: ignore[attr-defined]
                            args.model_dump(), None)

    def run_json_stream(self, args: Mapping[str, Any], cancellation_token: CancellationToken,
                        call_id: str | None = None) -> AsyncGenerator[Any, None]:
        inner = self._inner.run_json_stream(args, cancellation_token,  # type: ignore[attr-defined]
                                            call_id=call_id)
        return self._stream(inner, args, call_id)

    async def _stream(self, inner: AsyncGenerator[Any, None], args: Mapping[str, Any],
                      call_id: str | None) -> AsyncGenerator[Any, None]:
        try:
            await self._require(args, call_id)
            async for event in inner:
                yield event
        finally:
            await inner.aclose()


type ToolLike = BaseTool[Any, Any] | Callable[..., Any]


def guard_tools(tools: Sequence[ToolLike], rippl: Target | Link, *, resolver: Resolver | None = None,
                policy: Policy | None = None, unguarded: Collection[str] = ()) -> list[BaseTool[Any, Any]]:
    """Guard each tool (plain functions become FunctionTools, as AssistantAgent would make them);
    tools named in `unguarded` are returned as they are. One graph link is shared by all."""
    if isinstance(unguarded, str):
        raise InvalidInputError("unguarded must be a list of tool names, not a single string")
    link = rippl if isinstance(rippl, Link) else Link(rippl)
    guarded: list[BaseTool[Any, Any]] = []
    for tool in tools:
        if not isinstance(tool, BaseTool):
            if not callable(tool):
                raise InvalidInputError(f"cannot guard {type(tool).__name__}: give BaseTools or "
                                        "functions")
            tool = FunctionTool(tool, description=tool.__doc__ or "")
        already = isinstance(tool, GuardedTool)
        guarded.append(tool if already or tool.name in unguarded
                       else GuardedTool(tool, link, resolver=resolver, policy=policy))
    return guarded
