"""RipplInterventionHandler in a real SingleThreadedAgentRuntime with a ToolAgent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from autogen_core import (
    AgentId,
    FunctionCall,
    MessageContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    message_handler,
)
from autogen_core.models import FunctionExecutionResult, FunctionExecutionResultMessage, UserMessage
from autogen_core.tool_agent import ToolAgent, ToolException, tool_agent_caller_loop
from autogen_helpers import TO_07, TO_09, Ops, call, calls, replay, seen_by_model
from rippl_autogen import RipplConnection, RipplInterventionHandler, ToolVetoedException

from rippl_core import AsyncRippl, Policy, Rippl
from rippl_core.testing import free_port

pytestmark = pytest.mark.asyncio(loop_scope="session")


@dataclass
class Note:
    text: str


class Echo(RoutedAgent):
    """A non-tool agent: its messages must pass the handler untouched."""

    @message_handler
    async def on_note(self, message: Note, ctx: MessageContext) -> Note:
        return Note(message.text.upper())


async def running(handler: RipplInterventionHandler, ops: Ops) -> SingleThreadedAgentRuntime:
    runtime = SingleThreadedAgentRuntime(intervention_handlers=[handler])
    tools = ops.tools()
    await ToolAgent.register(runtime, "tools", lambda: ToolAgent("ops tools", tools))
    await Echo.register(runtime, "echo", lambda: Echo("echo"))
    runtime.start()
    return runtime


@pytest.fixture
async def stop_after() -> AsyncIterator[list[SingleThreadedAgentRuntime]]:
    runtimes: list[SingleThreadedAgentRuntime] = []
    yield runtimes
    for runtime in runtimes:
        await asyncio.wait_for(runtime.stop(), timeout=30)  # never stop_when_idle after a veto


def results(messages: list[object]) -> list[FunctionExecutionResult]:
    return [r for m in messages if isinstance(m, FunctionExecutionResultMessage) for r in m.content]


async def test_caller_loop_gets_the_reason(incident: Rippl, arippl: AsyncRippl, ops: Ops,
                                           stop_after: list[SingleThreadedAgentRuntime]) -> None:
    handler = RipplInterventionHandler(arippl)
    runtime = await running(handler, ops)
    stop_after.append(runtime)
    incident.retract("CLM-001", reason="I/O errors on shard 09", by="grafana")
    client = replay(calls(call("migrate_tables", **TO_09), call("migrate_tables", **TO_07)),
                    "Moved billing to shard 07 instead.")
    out = await tool_agent_caller_loop(runtime, AgentId("tools", "default"), client,
                                       [UserMessage(content="move billing", source="user")],
                                       ops.tools())
    vetoed, allowed = results(out)
    assert vetoed.is_error and vetoed.content.startswith(
        "Error: VETOED by Rippl: the call to migrate_tables did not run.")
    assert "CLM-001 -> DEC-001 -> ACT-001" in vetoed.content
    assert not allowed.is_error and allowed.content == "migrated billing to shard 07"
    assert ops.ran == [("migrate_tables", TO_07)]
    assert "VETOED by Rippl" in seen_by_model(client, 1)
    [exc] = handler.recent_vetoes
    assert isinstance(exc, ToolException) and exc.verdict is not None
    assert exc.verdict.blockers[0].premise == "CLM-001"


async def test_other_messages_pass_untouched(incident: Rippl, arippl: AsyncRippl, ops: Ops,
                                             stop_after: list[SingleThreadedAgentRuntime]) -> None:
    runtime = await running(RipplInterventionHandler(arippl, tool_agent_types=["tools"]), ops)
    stop_after.append(runtime)
    assert await runtime.send_message(Note("hi"), AgentId("echo", "default")) == Note("HI")
    # a FunctionCall to a type the handler does not watch is not checked
    unwatched = SingleThreadedAgentRuntime(
        intervention_handlers=[RipplInterventionHandler(arippl, tool_agent_types=["other"])])
    tools = ops.tools()
    await ToolAgent.register(unwatched, "tools", lambda: ToolAgent("t", tools))
    unwatched.start()
    stop_after.append(unwatched)
    incident.retract("CLM-001", reason="I/O errors", by="grafana")
    result = await unwatched.send_message(call("migrate_tables", **TO_09), AgentId("tools", "default"))
    assert isinstance(result, FunctionExecutionResult) and not result.is_error


async def test_direct_send_raises_the_veto(incident: Rippl, arippl: AsyncRippl, ops: Ops,
                                           stop_after: list[SingleThreadedAgentRuntime]) -> None:
    runtime = await running(RipplInterventionHandler(arippl, unguarded=["shard_health"],
                                                     policy=Policy(unknown="deny")), ops)
    stop_after.append(runtime)
    tools = AgentId("tools", "default")
    health = await runtime.send_message(call("shard_health", shard="09"), tools)
    assert health.content == "shard 09: ok"
    with pytest.raises(ToolVetoedException) as vetoed:
        await runtime.send_message(call("restart_service", service="billing"), tools)
    assert "no declared action matches restart_service" in str(vetoed.value)
    assert "strict allow-list" in str(vetoed.value)
    with pytest.raises(ToolVetoedException, match="not JSON"):
        await runtime.send_message(FunctionCall(id="c1", name="migrate_tables", arguments="{oops"),
                                   tools)
    with pytest.raises(ToolVetoedException, match="not a JSON object"):
        await runtime.send_message(FunctionCall(id="c2", name="migrate_tables",
                                                arguments=json.dumps([1])), tools)
    assert ops.ran == [("shard_health", {"shard": "09"})]


async def test_unreachable_graph_denies(ops: Ops, stop_after: list[SingleThreadedAgentRuntime]) -> None:
    nowhere = RipplConnection(url=f"falkordb://127.0.0.1:{free_port()}")
    runtime = await running(RipplInterventionHandler(nowhere), ops)
    stop_after.append(runtime)
    with pytest.raises(ToolVetoedException, match="could not be recorded or checked"):
        await runtime.send_message(call("migrate_tables", **TO_07), AgentId("tools", "default"))
    assert ops.ran == []
