"""The check every LangGraph hook shares: a LangChain tool call (`{"name", "args", "id"}`) judged by
the core kit's `Guard` (unguarded tools, resolver, fail-closed verdicts), answered with a ToolMessage.

A call resolves through `unguarded` (tool names never checked, e.g. read-only lookups), the
`resolver` (a mapping of tool name to action id, or a function of the call), then the core's own
resolution by tool name and canonical arguments. The verdict is the core's (`Rippl.check`); what
cannot be mapped is judged by the policy's `unknown`, what cannot be checked by its `on_error`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from rippl_core import AsyncRippl, CollectionNotStr, Policy, Rippl, Verdict
from rippl_core.adapters import VETO_PREFIX, Resolver, ToolSettingsMap, schema_of, veto_text
from rippl_core.adapters import Guard as KitGuard

type Memory = Rippl | AsyncRippl

__all__ = ["VETO_PREFIX", "Guard", "Memory", "Outcome", "Resolver", "veto_message", "veto_text"]


@dataclass(frozen=True)
class Outcome:
    """One tool call and the verdict on it (None when the tool is unguarded)."""

    call: dict[str, Any]
    verdict: Verdict | None

    @property
    def allowed(self) -> bool:
        return self.verdict is None or self.verdict.allowed


class Guard(KitGuard):
    """Checks LangChain tool calls against the premise graph; shared by the preflight node, the
    guarded ToolNode and the `create_agent` middleware."""

    def __init__(self, memory: Memory, *, policy: Policy | None = None,
                 resolver: Resolver | None = None, unguarded: CollectionNotStr[str] = (),
                 tools: ToolSettingsMap | None = None) -> None:
        super().__init__(memory, policy=policy, resolver=resolver, unguarded=unguarded,
                         tools=tools)

    sync_hint = "pass a Rippl handle, or run the graph with ainvoke/astream"

    def learn_tool(self, tool: BaseTool) -> None:
        """Take a LangChain tool's settings from its metadata (the key "rippl") and its argument
        schema (`tool_call_schema`, which leaves injected arguments out): its calls are then
        compared on the arguments it receives."""
        self.learn(tool.name, tool.metadata, schema_of(tool, "tool_call_schema", "args_schema"))

    @property
    def memory(self) -> Memory:
        """The graph handle the guard checks against."""
        assert isinstance(self.source, Rippl | AsyncRippl)
        return self.source

    def outcome(self, call: Mapping[str, Any]) -> Outcome:
        """The verdict on one LangChain tool call (sync). Never raises for an unreachable graph or
        an unmappable call: it returns a verdict saying why (denied unless the policy allows)."""
        return Outcome(dict(call), self.check(_name(call), call.get("args"), call.get("id")))

    async def aoutcome(self, call: Mapping[str, Any]) -> Outcome:
        """The verdict on one LangChain tool call (async); a sync handle runs in a worker thread."""
        return Outcome(dict(call), await self.acheck(_name(call), call.get("args"), call.get("id")))


def veto_message(call: Mapping[str, Any], verdict: Verdict) -> ToolMessage:
    """The error ToolMessage answering a vetoed call; the verdict rides along as the artifact."""
    name = _name(call)
    return ToolMessage(content=veto_text(name, verdict), tool_call_id=str(call.get("id") or ""),
                       name=name, status="error",
                       artifact={"rippl_verdict": verdict.model_dump(mode="json")})


def _name(call: Mapping[str, Any]) -> str:
    return str(call.get("name") or "")
