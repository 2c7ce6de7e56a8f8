"""`RipplInterventionHandler`: the Core-API hook, for `FunctionCall` messages sent to tool agents.

    runtime = SingleThreadedAgentRuntime(intervention_handlers=[RipplInterventionHandler(rippl)])

A vetoed call never reaches the `ToolAgent`: the handler raises `ToolVetoedException`, a
`ToolException`, which the runtime hands to the caller. `tool_agent_caller_loop` turns it into
`FunctionExecutionResult(is_error=True, content="Error: VETOED by Rippl: ...")`, so the model reads
the reason and every blocking trail.

By default each call is captured: its run is the tool agent's key (`AgentId.key`, the
application's session key, e.g. `AgentId("tools", "session-7")`), the call is recorded as a turn of
its own (no model turn is visible here) resting on everything the run observed, and the tool
agent's `FunctionExecutionResult` is recorded as its execution and a new observation of the run.

Only the Core API routes tool calls through the runtime. AgentChat's AssistantAgent runs its tools
inside the agent: guard those with `RipplWorkbench` or `guard_tools`.
Stop a runtime that vetoed a call with `runtime.stop()`: in autogen-core 0.7.5,
`stop_when_idle()` never returns after an intervention handler raised.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from autogen_core import AgentId, DefaultInterventionHandler, DropMessage, FunctionCall, MessageContext
from autogen_core.models import FunctionExecutionResult
from autogen_core.tool_agent import ToolException

from rippl_autogen.connection import Link, Target
from rippl_autogen.guard import Guard, Judged, Resolver, shared_guard, veto_text
from rippl_autogen.runs import Resolved
from rippl_core import CollectionNotStr, Policy, Verdict
from rippl_core.adapters import ToolSettingsMap


@dataclass
class ToolVetoedException(ToolException):
    """A tool call denied by Rippl. Unlike a bare `ToolException`, `str()` is the reason."""

    verdict: Verdict | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return self.content


class RipplInterventionHandler(DefaultInterventionHandler):
    """Vetoes `FunctionCall` messages whose action rests on a retracted premise.

    Args:
        rippl: an `AsyncRippl` handle, a sync `Rippl`, `RipplConnection` options, or a `Guard`.
        resolver, policy, unguarded, capture, tool_settings: as for `RipplWorkbench`.
        tool_agent_types: only check calls sent to agents of these types (default: every
            FunctionCall sent through the runtime).
    """

    PENDING = 4096  # allowed calls awaiting their result (the oldest are forgotten)

    def __init__(self, rippl: Target | Link | Guard, *, resolver: Resolver | None = None,
                 policy: Policy | None = None, unguarded: CollectionNotStr[str] = (),
                 capture: bool = True, tool_agent_types: CollectionNotStr[str] | None = None,
                 tool_settings: ToolSettingsMap | None = None) -> None:
        self._guard = shared_guard(rippl, resolver=resolver, policy=policy, unguarded=unguarded,
                                   capture=capture, tool_settings=tool_settings)
        self._types = None if tool_agent_types is None else frozenset(tool_agent_types)
        self.recent_vetoes: deque[ToolVetoedException] = deque(maxlen=256)
        self._running: OrderedDict[tuple[AgentId, str], Judged] = OrderedDict()

    @property
    def guard(self) -> Guard:
        return self._guard

    async def on_send(self, message: Any, *, message_context: MessageContext,
                      recipient: AgentId) -> Any | type[DropMessage]:
        if not isinstance(message, FunctionCall):
            return message
        if self._types is not None and recipient.type not in self._types:
            return message
        # the arguments are JSON text: the guard decodes them, and judges text that is no JSON
        # object like any call it cannot map (policy.unknown)
        who = Resolved(recipient.key, self._caller(message_context), recipient.key)
        judged = await self._guard.before_in(who, message.name, message.arguments, message.id)
        verdict = judged.verdict
        if verdict is not None and not verdict.allowed:
            vetoed = ToolVetoedException(call_id=message.id, content=veto_text(message.name, verdict),
                                         name=message.name, verdict=verdict)
            self.recent_vetoes.append(vetoed)
            raise vetoed
        if judged.capture is not None:
            self._running[(recipient, message.id)] = judged
            while len(self._running) > self.PENDING:
                self._running.popitem(last=False)
        return message

    async def on_response(self, message: Any, *, sender: AgentId,
                          recipient: AgentId | None) -> Any | type[DropMessage]:
        """A tool agent's result: record the execution of the call it answers."""
        if isinstance(message, FunctionExecutionResult):
            judged = self._running.pop((sender, message.call_id), None)
            if judged is not None:
                await self._guard.after(judged, message.content, ok=not message.is_error)
        return message

    @staticmethod
    def _caller(context: MessageContext) -> str | None:
        return context.sender.type if context.sender is not None else None

    async def close(self) -> None:
        """Close a graph handle this handler opened itself (from RipplConnection options)."""
        await self._guard.link.close()
