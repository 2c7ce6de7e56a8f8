"""`RipplInterventionHandler`: the Core-API hook, for `FunctionCall` messages sent to tool agents.

    runtime = SingleThreadedAgentRuntime(intervention_handlers=[RipplInterventionHandler(rippl)])

A vetoed call never reaches the `ToolAgent`: the handler raises `ToolVetoedException`, a
`ToolException`, which the runtime hands to the caller. `tool_agent_caller_loop` turns it into
`FunctionExecutionResult(is_error=True, content="Error: VETOED by Rippl: ...")`, so the model reads
the reason and every blocking trail.

Only the Core API routes tool calls through the runtime. AgentChat's AssistantAgent runs its tools
inside the agent: guard those with `RipplWorkbench` or `guard_tools`.
Stop a runtime that vetoed a call with `runtime.stop()`: in autogen-core 0.7.5,
`stop_when_idle()` never returns after an intervention handler raised.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from autogen_core import AgentId, DefaultInterventionHandler, DropMessage, FunctionCall, MessageContext
from autogen_core.tool_agent import ToolException

from rippl_autogen.connection import Link, Target
from rippl_autogen.guard import Guard, Resolver, veto_text
from rippl_core import Policy, Verdict


@dataclass
class ToolVetoedException(ToolException):
    """A tool call denied by Rippl. Unlike a bare `ToolException`, `str()` is the reason."""

    verdict: Verdict | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return self.content


class RipplInterventionHandler(DefaultInterventionHandler):
    """Vetoes `FunctionCall` messages whose action rests on a retracted premise.

    Args:
        rippl: an `AsyncRippl` handle, a sync `Rippl`, or `RipplConnection` options.
        resolver, policy, unguarded: as for `RipplWorkbench`.
        tool_agent_types: only check calls sent to agents of these types (default: every
            FunctionCall sent through the runtime).
    """

    def __init__(self, rippl: Target | Link, *, resolver: Resolver | None = None,
                 policy: Policy | None = None, unguarded: Collection[str] = (),
                 tool_agent_types: Collection[str] | None = None) -> None:
        self._guard = Guard(rippl, resolver=resolver, policy=policy, unguarded=unguarded)
        self._types = None if tool_agent_types is None else frozenset(tool_agent_types)
        self.recent_vetoes: deque[ToolVetoedException] = deque(maxlen=256)

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
        verdict = await self._guard.acheck(message.name, message.arguments, message.id)
        if verdict is not None and not verdict.allowed:
            vetoed = ToolVetoedException(call_id=message.id, content=veto_text(message.name, verdict),
                                         name=message.name, verdict=verdict)
            self.recent_vetoes.append(vetoed)
            raise vetoed
        return message

    async def close(self) -> None:
        """Close a graph handle this handler opened itself (from RipplConnection options)."""
        await self._guard.link.close()
