"""`RipplMiddleware` for `langchain.agents.create_agent` (needs the `langchain` extra).

    agent = create_agent(model, tools, middleware=[RipplMiddleware(memory)], checkpointer=saver)

Every tool call is checked before it runs (`wrap_tool_call` for invoke/stream, `awrap_tool_call` for
ainvoke/astream); a denied call is answered with an error `ToolMessage` carrying the veto and the
trails, and the model reads it on its next turn. `create_agent` runs each call as its own task, so
with `review=True` a call blocked by a pending retraction pauses with `interrupt()` on its own, and
resuming it re-runs that call's check only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Any

try:
    from langchain.agents.middleware import AgentMiddleware
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "RipplMiddleware needs the langchain package: pip install 'rippl-langgraph[langchain]'"
    ) from exc
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from rippl_core import DatabaseError, Policy
from rippl_langgraph import review as hitl
from rippl_langgraph.guard import Guard, Memory, Outcome, Resolver, veto_message

type Result = ToolMessage | Command[Any]


class RipplMiddleware(AgentMiddleware):
    """Vetoes tool calls whose premises were retracted (or are at risk), before they run.

    Args:
        memory: a `Rippl` handle (sync and async agents) or an `AsyncRippl` (async only).
        policy, resolver, unguarded: as for `preflight_node`.
        review: pause with `interrupt()` on a call blocked by a pending retraction review, and
            approve/reject it from `Command(resume=...)`.
        reviewer: who decides when the resume value does not say.
    """

    def __init__(self, memory: Memory, *, policy: Policy | None = None,
                 resolver: Resolver | None = None, unguarded: Collection[str] = (),
                 review: bool = False, reviewer: str = "human") -> None:
        super().__init__()
        self.guard = Guard(memory, policy=policy, resolver=resolver, unguarded=unguarded)
        self.review = review
        self.reviewer = hitl.check_reviewer(reviewer)
        self.tools = []

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], Result]) -> Result:
        outcome = self.guard.outcome(request.tool_call)
        if self.review and hitl.at_risk_claims([outcome]):
            outcome = self._review(outcome)
        if not outcome.allowed and outcome.verdict is not None:
            return veto_message(request.tool_call, outcome.verdict)
        return handler(request)

    async def awrap_tool_call(self, request: ToolCallRequest,
                              handler: Callable[[ToolCallRequest], Awaitable[Result]]) -> Result:
        outcome = await self.guard.aoutcome(request.tool_call)
        if self.review and hitl.at_risk_claims([outcome]):
            outcome = await self._areview(outcome)
        if not outcome.allowed and outcome.verdict is not None:
            return veto_message(request.tool_call, outcome.verdict)
        return await handler(request)

    def _review(self, outcome: Outcome) -> Outcome:
        memory = self.guard.memory
        try:
            items = hitl.reviewable([outcome], hitl.pending(memory))  # type: ignore[arg-type]
        except DatabaseError:
            return outcome
        if not items:
            return outcome
        hitl.apply(memory, hitl.ask([outcome], items, self.reviewer))  # type: ignore[arg-type]
        return self.guard.outcome(outcome.call)

    async def _areview(self, outcome: Outcome) -> Outcome:
        memory = self.guard.memory
        try:
            items = hitl.reviewable([outcome], await hitl.apending(memory))
        except DatabaseError:
            return outcome
        if not items:
            return outcome
        await hitl.aapply(memory, hitl.ask([outcome], items, self.reviewer))
        return await self.guard.aoutcome(outcome.call)
