"""`guarded_tool_node`: a `ToolNode` whose every call is checked first (`wrap_tool_call` and
`awrap_tool_call`), for graphs that route straight to a ToolNode.

A denied call is answered with an error `ToolMessage` carrying the veto and never executes; the
other calls of the same turn run. With capture (the default) the wrapper records the call's turn
(found in the state: the AI message that made the call) unless this process already did, judges
the call as it is about to run, and records its execution and output; `add_preflight` puts the
same wrapper on the graph's own ToolNode. Human review is not offered here: an `interrupt()`
inside a ToolNode re-runs the sibling calls on resume (langgraph #3126); use the preflight node.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from rippl_core import CollectionNotStr, Policy, Verdict
from rippl_core.adapters import ToolSettingsMap
from rippl_langgraph.capture import GraphCapture, current_config, messages_in, output_of
from rippl_langgraph.guard import Guard, Memory, Resolver, veto_message

type Result = ToolMessage | Command[Any]
type Wrap = Callable[[ToolCallRequest, Callable[[ToolCallRequest], Result]], Result]
type AWrap = Callable[[ToolCallRequest, Callable[[ToolCallRequest], Awaitable[Result]]],
                      Awaitable[Result]]
type Review = Callable[[ToolCallRequest, Verdict | None], Verdict | None]
type AReview = Callable[[ToolCallRequest, Verdict | None], Awaitable[Verdict | None]]


def request_config(request: ToolCallRequest) -> RunnableConfig | None:
    """The config of the tool call's graph step (None outside a graph)."""
    runtime = getattr(request, "runtime", None)
    config = getattr(runtime, "config", None)
    return config if config else current_config()


def tool_call_wrappers(guard: Guard, *, capture: GraphCapture | None = None,
                       messages_key: str = "messages", review: Review | None = None,
                       areview: AReview | None = None) -> tuple[Wrap, AWrap]:
    """The (wrap_tool_call, awrap_tool_call) pair that vetoes denied calls; with `capture`, it
    also records each call's turn (if not yet), judges the call just before it runs, and records
    its execution. `review` may turn a verdict into another (the middleware's in-graph review)."""

    def verdict_of(request: ToolCallRequest) -> Verdict | None:
        if capture is None:
            return guard.outcome(request.tool_call).verdict
        return capture.at_execution(request_config(request), request.tool_call,
                                    messages_in(request.state, messages_key))

    async def averdict_of(request: ToolCallRequest) -> Verdict | None:
        if capture is None:
            return (await guard.aoutcome(request.tool_call)).verdict
        return await capture.aat_execution(request_config(request), request.tool_call,
                                           messages_in(request.state, messages_key))

    def wrap(request: ToolCallRequest, execute: Callable[[ToolCallRequest], Result]) -> Result:
        verdict = verdict_of(request)
        if review is not None:
            verdict = review(request, verdict)
        if verdict is not None and not verdict.allowed:
            return veto_message(request.tool_call, verdict)
        if capture is None:
            return execute(request)
        config, call = request_config(request), request.tool_call
        try:
            with capture.writing(config, call):  # what the tool writes to memory rests on the call
                result = execute(request)
        except GraphBubbleUp:
            raise  # an interrupt inside the tool: it runs again on resume
        except Exception as exc:  # it ran and failed: it may have had effects
            capture.executed(config, call, f"{type(exc).__name__}: {exc}", ok=False)
            raise
        output, ok = output_of(result, call.get("id"))
        capture.executed(config, call, output, ok=ok)
        return result

    async def awrap(request: ToolCallRequest,
                    execute: Callable[[ToolCallRequest], Awaitable[Result]]) -> Result:
        verdict = await averdict_of(request)
        if areview is not None:
            verdict = await areview(request, verdict)
        if verdict is not None and not verdict.allowed:
            return veto_message(request.tool_call, verdict)
        if capture is None:
            return await execute(request)
        config, call = request_config(request), request.tool_call
        try:
            with capture.writing(config, call):
                result = await execute(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            await capture.aexecuted(config, call, f"{type(exc).__name__}: {exc}", ok=False)
            raise
        output, ok = output_of(result, call.get("id"))
        await capture.aexecuted(config, call, output, ok=ok)
        return result

    return wrap, awrap


def wrap_tool_node(node: ToolNode, capture: GraphCapture, *, messages_key: str = "messages") -> None:
    """Put the capture wrappers innermost on an existing ToolNode (its own wrappers, if any, run
    first and hand on the request they chose: what is judged and recorded is what runs)."""
    wrap, awrap = tool_call_wrappers(capture.guard, capture=capture, messages_key=messages_key)
    outer, aouter = node._wrap_tool_call, node._awrap_tool_call  # private: ToolNode has no setter

    def wrapped(request: ToolCallRequest, execute: Callable[[ToolCallRequest], Result]) -> Result:
        if outer is None:
            return wrap(request, execute)
        return outer(request, lambda inner: wrap(inner, execute))

    async def awrapped(request: ToolCallRequest,
                       execute: Callable[[ToolCallRequest], Awaitable[Result]]) -> Result:
        if aouter is None:
            return await awrap(request, execute)
        return await aouter(request, lambda inner: awrap(inner, execute))

    node._wrap_tool_call = wrapped
    if aouter is not None or outer is None:  # else async runs call the user's sync wrapper, and ours
        node._awrap_tool_call = awrapped


def guarded_tool_node(tools: Sequence[BaseTool | Callable[..., Any]], memory: Memory, *,
                      policy: Policy | None = None, resolver: Resolver | None = None,
                      unguarded: CollectionNotStr[str] = (), name: str = "tools", capture: bool = True,
                      agent: str | None = None, tool_settings: ToolSettingsMap | None = None,
                      **tool_node_options: Any) -> ToolNode:
    """A `ToolNode` over `tools` that checks each call against the premise graph before running it.

    `memory` is a `Rippl` handle (sync and async graphs) or an `AsyncRippl` (async graphs only);
    `policy`, `resolver`, `unguarded`, `capture`, `agent` and `tool_settings` are as for
    `preflight_node` (a tool's own metadata may carry its settings under the key "rippl"); other
    keyword arguments go to `ToolNode` (handle_tool_errors, messages_key, tags).
    """
    guard = Guard(memory, policy=policy, resolver=resolver, unguarded=unguarded, tools=tool_settings)
    recorder = GraphCapture(guard, agent=agent) if capture else None
    wrap, awrap = tool_call_wrappers(guard, capture=recorder,
                                     messages_key=tool_node_options.get("messages_key", "messages"))
    node = ToolNode(tools, name=name, wrap_tool_call=wrap, awrap_tool_call=awrap, **tool_node_options)
    for found in node.tools_by_name.values():
        guard.learn_tool(found)
    return node
