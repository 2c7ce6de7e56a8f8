"""The check every LangGraph hook shares: a LangChain tool call (`{"name", "args", "id"}`) judged by
the core's `ToolGuard` (unguarded tools, resolver, fail-closed verdicts), answered with a ToolMessage.

A call resolves through `unguarded` (tool names never checked, e.g. read-only lookups), the
`resolver` (a mapping of tool name to action id, or a function of the call), then the core's own
resolution by tool name and canonical arguments. The verdict is the core's (`Rippl.check`); what
cannot be mapped is judged by the policy's `unknown`, what cannot be checked by its `on_error`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolMessage

from rippl_core import AsyncRippl, Policy, Rippl, ToolCall, Verdict
from rippl_core.errors import InvalidInputError
from rippl_core.toolguard import VETO_PREFIX, Resolver, ToolGuard, veto_text

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


class Guard(ToolGuard):
    """Checks LangChain tool calls against the premise graph; shared by the preflight node, the
    guarded ToolNode and the `create_agent` middleware."""

    def __init__(self, memory: Memory, *, policy: Policy | None = None,
                 resolver: Resolver | None = None, unguarded: Collection[str] = ()) -> None:
        if not isinstance(memory, Rippl | AsyncRippl):
            raise InvalidInputError(
                f"memory must be a Rippl or AsyncRippl handle, got {type(memory).__name__}; "
                "open one with Rippl.open(...) or await AsyncRippl.open(...)")
        super().__init__(policy=policy, resolver=resolver, unguarded=unguarded)
        self.memory = memory

    @property
    def is_async(self) -> bool:
        return isinstance(self.memory, AsyncRippl)

    @property
    def effective_policy(self) -> Policy:
        return self.policy or self.memory.policy

    def check(self, call: Mapping[str, Any]) -> Outcome:
        """The verdict on one LangChain tool call (sync). Never raises for an unreachable graph or
        an unmappable call: it returns a verdict saying why (denied unless the policy allows)."""
        name = _name(call)
        if self.guards(name) and isinstance(self.memory, AsyncRippl):
            raise InvalidInputError(
                "this graph runs synchronously (invoke/stream) but the guard was given an "
                "AsyncRippl handle; pass a Rippl handle, or run the graph with ainvoke/astream")
        return Outcome(dict(call), self.judge(name, call.get("args"), self._ask, call_id=call.get("id"),
                                              default_policy=self.memory.policy))

    async def acheck(self, call: Mapping[str, Any]) -> Outcome:
        """The verdict on one LangChain tool call (async); a sync handle runs in a worker thread."""
        return Outcome(dict(call), await self.ajudge(_name(call), call.get("args"), self._aask,
                                                     call_id=call.get("id"),
                                                     default_policy=self.memory.policy))

    def _ask(self, call: ToolCall) -> Verdict:
        return self.memory.check(call, policy=self.policy)  # type: ignore[return-value]

    async def _aask(self, call: ToolCall) -> Verdict:
        if isinstance(self.memory, AsyncRippl):
            return await self.memory.check(call, policy=self.policy)
        return await asyncio.to_thread(self.memory.check, call, policy=self.policy)


def veto_message(call: Mapping[str, Any], verdict: Verdict) -> ToolMessage:
    """The error ToolMessage answering a vetoed call; the verdict rides along as the artifact."""
    name = _name(call)
    return ToolMessage(content=veto_text(name, verdict), tool_call_id=str(call.get("id") or ""),
                       name=name, status="error",
                       artifact={"rippl_verdict": verdict.model_dump(mode="json")})


def _name(call: Mapping[str, Any]) -> str:
    return str(call.get("name") or "")
