"""The preflight guardrail node: check every tool call of the model's turn before any tool runs.

    builder.add_node("preflight", preflight_node(memory, tools="tools", model="agent"))

or, on a graph already wired model -> (conditional edge) -> tools:

    add_preflight(builder, memory=memory)

Allowed calls go to the tool node one by one (`Send(tools, [call])`, the payload `create_agent` uses
and `ToolNode` accepts); denied calls never reach it and are answered with an error `ToolMessage`
carrying the veto reason and every blocking trail, so every tool call id gets an answer. When no call
is allowed the node returns to the model with the vetoes, so it can choose another action.

Capture is on by default (see `rippl_langgraph.capture`): the node records the model's turn as a
decision resting on the tool results in the state before it, each call as an action, and judges
each call by what it rests on and by every declared action it matches. `add_preflight` also wraps
the ToolNode, which judges each call again just before it runs (a pause may come between) and
records its execution. `capture=False` checks calls against declared actions only.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph._internal._runnable import RunnableCallable
from langgraph.graph import END, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, Send

from rippl_core import CollectionNotStr, DatabaseError, InvalidInputError, Policy
from rippl_core.adapters import ToolSettingsMap, sync_handle
from rippl_langgraph import review as hitl
from rippl_langgraph.capture import GraphCapture, latest_turn, state_messages
from rippl_langgraph.guard import Guard, Memory, Outcome, Resolver, veto_message
from rippl_langgraph.toolnode import wrap_tool_node

DEFAULT_NAME = "rippl_preflight"


def pending_calls(messages: Sequence[AnyMessage]) -> list[dict[str, Any]]:
    """The tool calls of the latest AI message that no ToolMessage answers yet."""
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if isinstance(message, AIMessage):
            answered = {m.tool_call_id for m in messages[position + 1:] if isinstance(m, ToolMessage)}
            return [{**call, "type": "tool_call"} for call in message.tool_calls
                    if call.get("id") not in answered]
    return []


def _messages(state: Any, key: str) -> Sequence[AnyMessage]:
    found = state_messages(state, key)
    if found is None:
        raise InvalidInputError(f"the preflight node found no {key!r} in the graph state; pass "
                                "messages_key= if your state keeps its messages elsewhere")
    messages: Sequence[AnyMessage] = found
    return messages


class Preflight:
    """The node's logic; `preflight_node` wraps it as a runnable with sync and async paths."""

    guard: Guard
    tools: str
    model: str | None
    review: bool
    reviewer: str
    messages_key: str
    capture: GraphCapture | None

    def __init__(self, guard: Guard, *, tools: str, model: str | None, review: bool,
                 reviewer: str, messages_key: str, capture: GraphCapture | None = None) -> None:
        self.guard, self.tools, self.model = guard, tools, model
        self.review, self.reviewer = review, hitl.check_reviewer(reviewer)
        self.messages_key = messages_key
        self.capture = capture

    def route(self, outcomes: Sequence[Outcome]) -> Command[str]:
        vetoes = [veto_message(o.call, o.verdict) for o in outcomes if not o.allowed and o.verdict]
        allowed = [o.call for o in outcomes if o.allowed]
        update = {self.messages_key: vetoes} if vetoes else {}
        if allowed:
            return Command(update=update, goto=[Send(self.tools, [call]) for call in allowed])
        if not vetoes:
            return Command(update=update, goto=END)
        if self.model is None:
            raise InvalidInputError("every call was vetoed but the preflight node does not know the "
                                    "model node to return to; pass model=")
        return Command(update=update, goto=self.model)

    # -- sync -------------------------------------------------------------------------------
    def run(self, state: Any, config: RunnableConfig) -> Command[str]:
        """The node (`config`: the graph step's, which LangGraph passes in)."""
        messages = _messages(state, self.messages_key)
        calls = pending_calls(messages)
        outcomes = self._outcomes(messages, calls, config)
        if self.review and hitl.at_risk_claims(outcomes):
            outcomes = self._review(messages, outcomes, config)
        return self.route(outcomes)

    def _outcomes(self, messages: Sequence[AnyMessage], calls: list[dict[str, Any]],
                  config: RunnableConfig | None) -> list[Outcome]:
        turn = latest_turn(messages) if calls and self.capture is not None else None
        if turn is None or self.capture is None:
            return [self.guard.outcome(call) for call in calls]
        verdicts = self.capture.decide(config, turn)
        return [Outcome(call, verdicts.get(call.get("id"))) for call in calls]

    def _review(self, messages: Sequence[AnyMessage], outcomes: list[Outcome],
                config: RunnableConfig | None) -> list[Outcome]:
        memory = sync_handle(self.guard.memory, hint=self.guard.sync_hint)
        try:
            items = hitl.reviewable(outcomes, hitl.pending(memory))
        except DatabaseError:
            return outcomes  # fail closed: the calls stay vetoed, their verdicts say why
        if not items:
            return outcomes
        hitl.apply(memory, hitl.ask(outcomes, items, self.reviewer))
        again = self._outcomes(messages, [o.call for o in outcomes], config)
        return [new if _reviewable(old) else old for old, new in zip(outcomes, again, strict=True)]

    # -- async ------------------------------------------------------------------------------
    async def arun(self, state: Any, config: RunnableConfig) -> Command[str]:
        messages = _messages(state, self.messages_key)
        calls = pending_calls(messages)
        outcomes = await self._aoutcomes(messages, calls, config)
        if self.review and hitl.at_risk_claims(outcomes):
            outcomes = await self._areview(messages, outcomes, config)
        return self.route(outcomes)

    async def _aoutcomes(self, messages: Sequence[AnyMessage], calls: list[dict[str, Any]],
                         config: RunnableConfig | None) -> list[Outcome]:
        turn = latest_turn(messages) if calls and self.capture is not None else None
        if turn is None or self.capture is None:
            return [await self.guard.aoutcome(call) for call in calls]
        verdicts = await self.capture.adecide(config, turn)
        return [Outcome(call, verdicts.get(call.get("id"))) for call in calls]

    async def _areview(self, messages: Sequence[AnyMessage], outcomes: list[Outcome],
                       config: RunnableConfig | None) -> list[Outcome]:
        memory = self.guard.memory
        try:
            items = hitl.reviewable(outcomes, await hitl.apending(memory))
        except DatabaseError:
            return outcomes
        if not items:
            return outcomes
        await hitl.aapply(memory, hitl.ask(outcomes, items, self.reviewer))
        again = await self._aoutcomes(messages, [o.call for o in outcomes], config)
        return [new if _reviewable(old) else old for old, new in zip(outcomes, again, strict=True)]


def _reviewable(outcome: Outcome) -> bool:
    return bool(hitl.at_risk_claims([outcome]))


def preflight_node(memory: Memory, *, tools: str = "tools", model: str | None = "agent",
                   policy: Policy | None = None, resolver: Resolver | None = None,
                   unguarded: CollectionNotStr[str] = (), review: bool = False, reviewer: str = "human",
                   messages_key: str = "messages", name: str = DEFAULT_NAME, capture: bool = True,
                   agent: str | None = None,
                   tool_settings: ToolSettingsMap | None = None) -> Runnable[Any, Command[str]]:
    """A graph node that checks the pending tool calls of the latest AI message.

    Args:
        memory: a `Rippl` handle (sync and async graphs) or an `AsyncRippl` (async graphs only).
        tools: the name of the `ToolNode` that runs allowed calls.
        model: the node to return to when every call is vetoed (the model reads the vetoes).
        policy: the core `Policy` (at-risk / unknown / error); default: the handle's, fail closed.
        resolver: tool name -> action id mapping, or a function (name, args) -> action id |
            `ToolCall` | None (None falls back to the core's tool + args resolution).
        unguarded: tool names that are never checked (read-only lookups).
        review: pause with `interrupt()` when a call is blocked by a pending retraction review,
            and approve/reject it from `Command(resume=...)` (see `rippl_langgraph.review`).
        reviewer: who decides when the resume value does not say (`by` of approve/reject).
        capture: record the run (its turns, calls, and the tool results before them) and judge
            each call by what it rests on (default); the ToolNode should capture executions too
            (`guarded_tool_node`, or `add_preflight`, which wraps it). False: declared actions only.
        agent: the agent's name on the recorded runs.
        tool_settings: per tool name, how Rippl treats its calls (`ToolSettings`, or a dict of
            its fields, e.g. `{"migrate": {"repeat_scope": "tool"}}`); a tool's own metadata
            can say the same under the key "rippl".

    With capture the default policy is the handle's with unknown='record' (a call no declared
    action matches is judged by its captured premises); `Policy(unknown='deny')` keeps a strict
    allow-list (a call must also match a declared action).
    """
    return _node(_capture_guard(memory, policy, resolver, unguarded, capture, agent, tool_settings),
                 tools=tools,
                 model=model, review=review, reviewer=reviewer, messages_key=messages_key, name=name)


def _capture_guard(memory: Memory, policy: Policy | None, resolver: Resolver | None,
                   unguarded: CollectionNotStr[str], capture: bool, agent: str | None,
                   tool_settings: ToolSettingsMap | None) -> tuple[Guard, GraphCapture | None]:
    guard = Guard(memory, policy=policy, resolver=resolver, unguarded=unguarded, tools=tool_settings)
    return guard, GraphCapture(guard, agent=agent) if capture else None


def _node(guarded: tuple[Guard, GraphCapture | None], *, tools: str, model: str | None,
          review: bool, reviewer: str, messages_key: str, name: str) -> Runnable[Any, Command[str]]:
    guard, capture = guarded
    logic = Preflight(guard, tools=tools, model=model, review=review, reviewer=reviewer,
                      messages_key=messages_key, capture=capture)
    # LangGraph's own node runnable, untraced like a function node: the graph traces the step
    # already, and a RunnableLambda would open a callback run of its own on every call (~0.4 ms)
    return RunnableCallable(logic.run, logic.arun, name=name, trace=False)


def add_preflight(builder: StateGraph[Any, Any, Any, Any], *, memory: Memory, before: str = "tools",
                  name: str = DEFAULT_NAME, model: str | None = None, policy: Policy | None = None,
                  resolver: Resolver | None = None, unguarded: CollectionNotStr[str] = (),
                  review: bool = False, reviewer: str = "human", messages_key: str = "messages",
                  capture: bool = True, agent: str | None = None,
                  tool_settings: ToolSettingsMap | None = None) -> StateGraph[Any, Any, Any, Any]:
    """Insert a preflight node in front of the tool node `before` of an uncompiled StateGraph.

    Every edge and conditional edge leading to `before` is redirected to the preflight node, which
    sends the allowed calls on to `before` and returns to `model` (by default the node whose edge
    led to the tool node) when every call is vetoed. With capture (the default), `before` must be
    a `ToolNode`: it is wrapped to judge each call again just before it runs and to record its
    execution. Returns the builder.
    """
    if not isinstance(builder, StateGraph):
        raise InvalidInputError(f"add_preflight needs an uncompiled StateGraph, got {type(builder).__name__}")
    if before not in builder.nodes:
        raise InvalidInputError(f"the graph has no node {before!r}; pass before= the name of its ToolNode")
    if name in builder.nodes:
        raise InvalidInputError(f"the graph already has a node {name!r}; pass another name=")
    tool_node = builder.nodes[before].runnable
    if capture and not isinstance(tool_node, ToolNode):
        raise InvalidInputError(f"capture records each execution in the ToolNode, and {before!r} is "
                                f"a {type(tool_node).__name__}; make it a ToolNode, or pass "
                                "capture=False (then a pause before the tools skips the re-check)")
    sources = _redirect(builder, before, name)
    if not sources:
        raise InvalidInputError(f"no edge leads to {before!r}; add the conditional edge from the model "
                                "node to it (e.g. tools_condition) before add_preflight")
    if model is None:
        if len(sources) > 1:
            raise InvalidInputError(f"several nodes lead to {before!r} ({', '.join(sorted(sources))}); "
                                    "pass model= the node to return to after a veto")
        model = next(iter(sources))
    guarded = _capture_guard(memory, policy, resolver, unguarded, capture, agent, tool_settings)
    if isinstance(tool_node, ToolNode):
        for found in tool_node.tools_by_name.values():
            guarded[0].learn_tool(found)
    node = _node(guarded, tools=before, model=model, review=review, reviewer=reviewer,
                 messages_key=messages_key, name=name)
    if guarded[1] is not None and isinstance(tool_node, ToolNode):  # capture: checked above
        wrap_tool_node(tool_node, guarded[1], messages_key=messages_key)
    builder.add_node(name, node, destinations=(before, model, END))
    return builder


def _redirect(builder: StateGraph[Any, Any, Any, Any], before: str, name: str) -> set[str]:
    """Point every edge to `before` at `name`; returns the source nodes (those of branches without
    a path map count only when no edge names `before` explicitly)."""
    sources: set[str] = set()
    maybe: set[str] = set()
    for start, end in list(builder.edges):
        if end == before:
            builder.edges.discard((start, end))
            builder.edges.add((start, name))
            sources.add(start)
    for start, branches in builder.branches.items():
        for branch_name, branch in list(branches.items()):
            if branch.ends is None:
                branches[branch_name] = branch._replace(path=_renaming(branch.path, before, name))
                maybe.add(start)
            elif before in branch.ends.values():
                ends: dict[Hashable, str] = {k: (name if v == before else v)
                                             for k, v in branch.ends.items()}
                branches[branch_name] = branch._replace(ends=ends)
                sources.add(start)
    return sources or maybe


def _renaming(path: Runnable[Any, Any], before: str, name: str) -> Runnable[Any, Any]:
    """A branch path whose destination `before` becomes `name` (for paths without a path map)."""
    def rename(result: Any) -> Any:
        if isinstance(result, list | tuple):
            return [rename(r) for r in result]
        if isinstance(result, Send) and result.node == before:
            raise InvalidInputError(f"a branch sends straight to {before!r}, past the preflight node; "
                                    f"route to {name!r} instead")
        return name if result == before else result

    return path | RunnableLambda(rename, name=f"{name}_route")
