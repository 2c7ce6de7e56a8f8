"""The preflight guardrail node: check every tool call of the model's turn before any tool runs.

    builder.add_node("preflight", preflight_node(memory, tools="tools", model="agent"))

or, on a graph already wired model -> (conditional edge) -> tools:

    add_preflight(builder, memory=memory)

Allowed calls go to the tool node one by one (`Send(tools, [call])`, the payload `create_agent` uses
and `ToolNode` accepts); denied calls never reach it and are answered with an error `ToolMessage`
carrying the veto reason and every blocking trail, so every tool call id gets an answer. When no call
is allowed the node returns to the model with the vetoes, so it can choose another action.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langgraph.graph import END, StateGraph
from langgraph.types import Command, Send

from rippl_core import DatabaseError, InvalidInputError, Policy
from rippl_langgraph import review as hitl
from rippl_langgraph.guard import Guard, Memory, Outcome, Resolver, veto_message

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
    if isinstance(state, Mapping):
        found = state.get(key)
    elif isinstance(state, list):
        found = state
    else:
        found = getattr(state, key, None)
    if found is None:
        raise InvalidInputError(f"the preflight node found no {key!r} in the graph state; pass "
                                "messages_key= if your state keeps its messages elsewhere")
    return found


class Preflight:
    """The node's logic; `preflight_node` wraps it as a runnable with sync and async paths."""

    def __init__(self, guard: Guard, *, tools: str, model: str | None, review: bool,
                 reviewer: str, messages_key: str) -> None:
        self.guard, self.tools, self.model = guard, tools, model
        self.review, self.reviewer = review, hitl.check_reviewer(reviewer)
        self.messages_key = messages_key

    def route(self, outcomes: Sequence[Outcome]) -> Command:
        vetoes = [veto_message(o.call, o.verdict) for o in outcomes if not o.allowed and o.verdict]
        allowed = [o.call for o in outcomes if o.allowed]
        update = {self.messages_key: vetoes} if vetoes else {}
        if allowed:
            return Command(update=update, goto=[Send(self.tools, [call]) for call in allowed])
        if vetoes and self.model is None:
            raise InvalidInputError("every call was vetoed but the preflight node does not know the "
                                    "model node to return to; pass model=")
        return Command(update=update, goto=self.model if vetoes else END)

    # -- sync -------------------------------------------------------------------------------
    def run(self, state: Any) -> Command:
        calls = pending_calls(_messages(state, self.messages_key))
        outcomes = [self.guard.outcome(call) for call in calls]
        if self.review and hitl.at_risk_claims(outcomes):
            outcomes = self._review(outcomes)
        return self.route(outcomes)

    def _review(self, outcomes: list[Outcome]) -> list[Outcome]:
        memory = self.guard.memory
        try:
            items = hitl.reviewable(outcomes, hitl.pending(memory))  # type: ignore[arg-type]
        except DatabaseError:
            return outcomes  # fail closed: the calls stay vetoed, their verdicts say why
        if not items:
            return outcomes
        hitl.apply(memory, hitl.ask(outcomes, items, self.reviewer))  # type: ignore[arg-type]
        return [self.guard.outcome(o.call) if _reviewable(o) else o for o in outcomes]

    # -- async ------------------------------------------------------------------------------
    async def arun(self, state: Any) -> Command:
        calls = pending_calls(_messages(state, self.messages_key))
        outcomes = [await self.guard.aoutcome(call) for call in calls]
        if self.review and hitl.at_risk_claims(outcomes):
            outcomes = await self._areview(outcomes)
        return self.route(outcomes)

    async def _areview(self, outcomes: list[Outcome]) -> list[Outcome]:
        memory = self.guard.memory
        try:
            items = hitl.reviewable(outcomes, await hitl.apending(memory))
        except DatabaseError:
            return outcomes
        if not items:
            return outcomes
        await hitl.aapply(memory, hitl.ask(outcomes, items, self.reviewer))
        return [await self.guard.aoutcome(o.call) if _reviewable(o) else o for o in outcomes]


def _reviewable(outcome: Outcome) -> bool:
    return bool(hitl.at_risk_claims([outcome]))


def preflight_node(memory: Memory, *, tools: str = "tools", model: str | None = "agent",
                   policy: Policy | None = None, resolver: Resolver | None = None,
                   unguarded: Collection[str] = (), review: bool = False, reviewer: str = "human",
                   messages_key: str = "messages", name: str = DEFAULT_NAME) -> Runnable[Any, Command]:
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
    """
    logic = Preflight(Guard(memory, policy=policy, resolver=resolver, unguarded=unguarded),
                      tools=tools, model=model, review=review, reviewer=reviewer,
                      messages_key=messages_key)
    return RunnableLambda(logic.run, afunc=logic.arun, name=name)


def add_preflight(builder: StateGraph, *, memory: Memory, before: str = "tools",
                  name: str = DEFAULT_NAME, model: str | None = None, policy: Policy | None = None,
                  resolver: Resolver | None = None, unguarded: Collection[str] = (),
                  review: bool = False, reviewer: str = "human",
                  messages_key: str = "messages") -> StateGraph:
    """Insert a preflight node in front of the tool node `before` of an uncompiled StateGraph.

    Every edge and conditional edge leading to `before` is redirected to the preflight node, which
    sends the allowed calls on to `before` and returns to `model` (by default the node whose edge
    led to the tool node) when every call is vetoed. Returns the builder.
    """
    if not isinstance(builder, StateGraph):
        raise InvalidInputError(f"add_preflight needs an uncompiled StateGraph, got {type(builder).__name__}")
    if before not in builder.nodes:
        raise InvalidInputError(f"the graph has no node {before!r}; pass before= the name of its ToolNode")
    if name in builder.nodes:
        raise InvalidInputError(f"the graph already has a node {name!r}; pass another name=")
    sources = _redirect(builder, before, name)
    if not sources:
        raise InvalidInputError(f"no edge leads to {before!r}; add the conditional edge from the model "
                                "node to it (e.g. tools_condition) before add_preflight")
    if model is None:
        if len(sources) > 1:
            raise InvalidInputError(f"several nodes lead to {before!r} ({', '.join(sorted(sources))}); "
                                    "pass model= the node to return to after a veto")
        model = next(iter(sources))
    node = preflight_node(memory, tools=before, model=model, policy=policy, resolver=resolver,
                          unguarded=unguarded, review=review, reviewer=reviewer,
                          messages_key=messages_key, name=name)
    builder.add_node(name, node, destinations=(before, model, END))
    return builder


def _redirect(builder: StateGraph, before: str, name: str) -> set[str]:
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
