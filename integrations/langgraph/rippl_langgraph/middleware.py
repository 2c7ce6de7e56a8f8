"""`RipplMiddleware` for `langchain.agents.create_agent` (needs the `langchain` extra).

    agent = create_agent(model, tools, middleware=[..., RipplMiddleware(memory)], checkpointer=saver)

Every tool call is checked before it runs (`wrap_tool_call` for invoke/stream, `awrap_tool_call` for
ainvoke/astream); a denied call is answered with an error `ToolMessage` carrying the veto and the
trails, and the model reads it on its next turn. `create_agent` runs each call as its own task, so
with `review=True` a call blocked by a pending retraction pauses with `interrupt()` on its own, and
resuming it re-runs that call's check only.

With capture (the default), `wrap_model_call` records each model turn that emits tool calls as a
decision resting on the tool results in the exact messages the model was sent, and each call as an
action; `wrap_tool_call` judges each call again just before it runs (a `HumanInTheLoopMiddleware`
pause or edit may come between) and records its execution. Put `RipplMiddleware` LAST in the
middleware list: the last middleware's `wrap_model_call` is the innermost, the only one that sees
the request as the model gets it (after `ContextEditingMiddleware`, summarization and the like).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, overload

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain.agents.middleware.types import ExtendedModelResponse
except ImportError as _missing:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "RipplMiddleware needs the langchain package: pip install 'rippl-langgraph[langchain]'"
    ) from _missing
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from rippl_core import CollectionNotStr, DatabaseError, Policy, Verdict
from rippl_core.adapters import ToolSettingsMap, sync_handle
from rippl_langgraph import review as hitl
from rippl_langgraph.capture import GraphCapture, Turn, current_config, fresh_id, visible
from rippl_langgraph.guard import Guard, Memory, Outcome, Resolver
from rippl_langgraph.toolnode import request_config, tool_call_wrappers

type ModelReply = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]
"""What a model call returns to the agent (the middleware's wrap_model_call)."""

type Result = ToolMessage | Command[Any]


class RipplMiddleware(AgentMiddleware):
    """Vetoes tool calls whose premises were retracted (or are at risk), before they run.

    Args:
        memory: a `Rippl` handle (sync and async agents) or an `AsyncRippl` (async only).
        policy, resolver, unguarded, capture, agent, tool_settings: as for `preflight_node`.
        review: pause with `interrupt()` on a call blocked by a pending retraction review, and
            approve/reject it from `Command(resume=...)`.
        reviewer: who decides when the resume value does not say.
    """

    guard: Guard
    capture: GraphCapture | None
    reviewer: str
    tools: Sequence[BaseTool]

    def __new__(cls, *args: Any, **kwargs: Any) -> RipplMiddleware:
        if cls is RipplMiddleware and kwargs.get("capture", True) is False:
            cls = _ToolCallsOnly  # no model hooks: create_agent then adds no model-call layer
        return super().__new__(cls)

    def __init__(self, memory: Memory, *, policy: Policy | None = None,
                 resolver: Resolver | None = None, unguarded: CollectionNotStr[str] = (),
                 review: bool = False, reviewer: str = "human", capture: bool = True,
                 agent: str | None = None, tool_settings: ToolSettingsMap | None = None) -> None:
        super().__init__()
        self.guard = Guard(memory, policy=policy, resolver=resolver, unguarded=unguarded,
                           tools=tool_settings)
        self.capture = GraphCapture(self.guard, agent=agent) if capture else None
        self.review = review
        self.reviewer = hitl.check_reviewer(reviewer)
        self.tools = []
        self._wrap, self._awrap = tool_call_wrappers(
            self.guard, capture=self.capture, review=self._reviewed if review else None,
            areview=self._areviewed if review else None)

    # -- model turns ------------------------------------------------------------------------
    def wrap_model_call(self, request: ModelRequest,
                        handler: Callable[[ModelRequest], ModelResponse]) -> ModelReply:
        self._learn(request)
        turn, reply = self._turn(request, handler(request))
        if self.capture is not None:
            if isinstance(turn, Turn):
                self.capture.decide(current_config(), turn)  # judged again when each call runs
            elif turn is not None:  # a text reply: it carries what its input carried
                self.capture.wrote(current_config(), turn, request.messages)
        return reply

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> ModelReply:
        self._learn(request)
        turn, reply = self._turn(request, await handler(request))
        if self.capture is not None:
            if isinstance(turn, Turn):
                await self.capture.adecide(current_config(), turn)
            elif turn is not None:
                await self.capture.awrote(current_config(), turn, request.messages)
        return reply

    def _learn(self, request: ModelRequest) -> None:
        """Take each tool's settings from its metadata (the key "rippl"), and its argument schema."""
        for found in request.tools:
            if isinstance(found, BaseTool):
                self.guard.learn_tool(found)

    @overload
    def _turn(self, request: ModelRequest,
              response: ModelResponse[Any]) -> tuple[Turn | AIMessage | None, ModelResponse[Any]]: ...
    @overload
    def _turn(self, request: ModelRequest, response: AIMessage | ExtendedModelResponse[Any]
              ) -> tuple[Turn | AIMessage | None, ModelReply]: ...
    def _turn(self, request: ModelRequest,
              response: ModelReply) -> tuple[Turn | AIMessage | None, ModelReply]:
        """The turn the model's reply makes (with an id the state will keep), from the messages it
        was sent, or the text reply it makes; and the reply (a ModelResponse, an AIMessage, or an
        ExtendedModelResponse)."""
        if self.capture is None:
            return None, response
        if isinstance(response, ExtendedModelResponse):
            turn, inner = self._turn(request, response.model_response)
            return turn, replace(response, model_response=inner)
        if isinstance(response, AIMessage):
            replies: list[Any] = [response]
        elif isinstance(response, ModelResponse):
            replies = list(response.result)
        else:
            return None, response
        for index in range(len(replies) - 1, -1, -1):
            reply = replies[index]
            if isinstance(reply, AIMessage):
                replies[index] = reply = fresh_id(reply)
                made: Turn | AIMessage = reply
                if reply.tool_calls:
                    made = Turn(reply.id or "", tuple(dict(c) for c in reply.tool_calls),
                                visible(request.messages))
                if isinstance(response, AIMessage):
                    return made, reply
                return made, replace(response, result=replies)
        return None, response

    # -- tool calls -------------------------------------------------------------------------
    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], Result]) -> Result:
        return self._wrap(request, handler)

    async def awrap_tool_call(self, request: ToolCallRequest,
                              handler: Callable[[ToolCallRequest], Awaitable[Result]]) -> Result:
        return await self._awrap(request, handler)

    # -- in-graph review --------------------------------------------------------------------
    def _reviewed(self, request: ToolCallRequest, verdict: Verdict | None) -> Verdict | None:
        outcome = Outcome(dict(request.tool_call), verdict)
        if not hitl.at_risk_claims([outcome]):
            return verdict
        memory = sync_handle(self.guard.memory, hint=self.guard.sync_hint)
        try:
            items = hitl.reviewable([outcome], hitl.pending(memory))
        except DatabaseError:
            return verdict
        if not items:
            return verdict
        hitl.apply(memory, hitl.ask([outcome], items, self.reviewer))
        if self.capture is None:
            return self.guard.outcome(request.tool_call).verdict
        return self.capture.at_execution(request_config(request), request.tool_call, [])

    async def _areviewed(self, request: ToolCallRequest, verdict: Verdict | None) -> Verdict | None:
        outcome = Outcome(dict(request.tool_call), verdict)
        if not hitl.at_risk_claims([outcome]):
            return verdict
        memory = self.guard.memory
        try:
            items = hitl.reviewable([outcome], await hitl.apending(memory))
        except DatabaseError:
            return verdict
        if not items:
            return verdict
        await hitl.aapply(memory, hitl.ask([outcome], items, self.reviewer))
        if self.capture is None:
            return (await self.guard.aoutcome(request.tool_call)).verdict
        return await self.capture.aat_execution(request_config(request), request.tool_call, [])


class _ToolCallsOnly(RipplMiddleware):
    """`RipplMiddleware(..., capture=False)`: without capture the model turns are not recorded, so
    it has no model hooks, and `create_agent` (which decides by the class's methods) wraps no model
    call with it (each wrapped hook costs a traced pass-through, ~50 µs, on every model call)."""

    wrap_model_call = AgentMiddleware.wrap_model_call
    awrap_model_call = AgentMiddleware.awrap_model_call

    @property
    def name(self) -> str:
        return RipplMiddleware.__name__
