"""`guarded_tool_node`: a `ToolNode` whose every call is checked first (`wrap_tool_call` and
`awrap_tool_call`), for graphs that route straight to a ToolNode.

A denied call is answered with an error `ToolMessage` carrying the veto and never executes; the
other calls of the same turn run. Human review is not offered here: an `interrupt()` inside a
ToolNode re-runs the sibling calls on resume (langgraph #3126); use the preflight node for that.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from rippl_core import Policy
from rippl_langgraph.guard import Guard, Memory, Resolver, veto_message

type Result = ToolMessage | Command


def tool_call_wrappers(guard: Guard) -> tuple[
        Callable[[ToolCallRequest, Callable[[ToolCallRequest], Result]], Result],
        Callable[[ToolCallRequest, Callable[[ToolCallRequest], Awaitable[Result]]], Awaitable[Result]]]:
    """The (wrap_tool_call, awrap_tool_call) pair that vetoes denied calls."""

    def wrap(request: ToolCallRequest, execute: Callable[[ToolCallRequest], Result]) -> Result:
        outcome = guard.outcome(request.tool_call)
        if not outcome.allowed and outcome.verdict is not None:
            return veto_message(request.tool_call, outcome.verdict)
        return execute(request)

    async def awrap(request: ToolCallRequest,
                    execute: Callable[[ToolCallRequest], Awaitable[Result]]) -> Result:
        outcome = await guard.aoutcome(request.tool_call)
        if not outcome.allowed and outcome.verdict is not None:
            return veto_message(request.tool_call, outcome.verdict)
        return await execute(request)

    return wrap, awrap


def guarded_tool_node(tools: Sequence[BaseTool | Callable[..., Any]], memory: Memory, *,
                      policy: Policy | None = None, resolver: Resolver | None = None,
                      unguarded: Collection[str] = (), name: str = "tools",
                      **tool_node_options: Any) -> ToolNode:
    """A `ToolNode` over `tools` that checks each call against the premise graph before running it.

    `memory` is a `Rippl` handle (sync and async graphs) or an `AsyncRippl` (async graphs only);
    `policy`, `resolver` and `unguarded` are as for `preflight_node`; other keyword arguments go to
    `ToolNode` (handle_tool_errors, messages_key, tags).
    """
    wrap, awrap = tool_call_wrappers(Guard(memory, policy=policy, resolver=resolver,
                                           unguarded=unguarded))
    return ToolNode(tools, name=name, wrap_tool_call=wrap, awrap_tool_call=awrap, **tool_node_options)
