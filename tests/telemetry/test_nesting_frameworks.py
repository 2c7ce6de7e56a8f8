"""Rippl's spans inside AutoGen's, CrewAI's traces (scripted models, the SDK's
in-memory exporter): the veto event sits under the span of the tool call it stopped.

- AutoGen AgentChat, traced by OpenInference's instrumentation: under the agent's tool-call span.
- AutoGen Core, traced by the runtime's own tracing: under the runtime's span of the intervention
  that stopped the FunctionCall on its way to the tool agent.
- CrewAI, traced by OpenInference's instrumentation: under the tool's span (a GuardedTool checks
  inside the tool's own run).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from helpers_telemetry import Telemetry, ancestors, events
from opentelemetry import trace

from rippl_core import Rippl

MIGRATE_ARGS = {"table": "billing", "shard": "09"}
TRAIL = ("C-09 -> D-move -> A-move",)


def declare(rippl: Rippl) -> None:
    rippl.add_claim("C-09", "shard 09 has room for billing")
    rippl.add_decision("D-move", "move billing to 09", premises=["C-09"])
    rippl.add_action("A-move", "migrate billing to 09", decisions=["D-move"], tool="migrate_tables",
                     args=MIGRATE_ARGS)
    rippl.retract("C-09", reason="shard 09 is full", by="alice")


def the_veto(otel: Telemetry) -> tuple[Any, dict[str, Any]]:
    """The one Rippl span that vetoed the migration, and its veto event."""
    vetoing = [s for s in otel.rippl() if events(s) and "migrate_tables" in s.name]
    assert vetoing, [s.name for s in otel.rippl()]
    span = vetoing[-1]  # the judgement at execution (a recorded turn may have vetoed it before)
    [veto] = events(span)
    assert veto["rippl.veto.reason"] == "retracted" and veto["rippl.veto.trails"] == TRAIL
    return span, veto


# ------------------------------------------------------------------------------------ AutoGen


@pytest.mark.asyncio(loop_scope="session")
async def test_autogen_agentchat_veto_under_the_agents_tool_call(rippl: Rippl, otel: Telemetry) -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_core.tools import StaticWorkbench
    from autogen_helpers import Ops, call, calls, replay
    from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor
    from rippl_autogen import RipplWorkbench

    declare(rippl)
    otel.exporter.clear()
    instrumentor = AutogenAgentChatInstrumentor()
    instrumentor.instrument(tracer_provider=otel.provider)
    try:
        ops = Ops()
        migrate = call("migrate_tables", **MIGRATE_ARGS)
        agent = AssistantAgent("mover", model_client=replay(calls(migrate), "done"),
                               workbench=RipplWorkbench(StaticWorkbench(ops.tools()), rippl))
        await agent.run(task="move billing to shard 09")
    finally:
        instrumentor.uninstrument()
    assert ops.names() == []
    span, veto = the_veto(otel)
    assert veto["gen_ai.tool.call.id"] == migrate.id
    chain = ancestors(span, otel.spans())
    assert chain[0].name == "mover.migrate_tables", [s.name for s in chain]
    assert (chain[0].attributes or {})["openinference.span.kind"] == "TOOL"
    assert chain[-1].name.startswith("mover."), [s.name for s in chain]


@pytest.mark.asyncio(loop_scope="session")
async def test_autogen_core_veto_under_the_runtimes_intervention_span(rippl: Rippl,
                                                                      otel: Telemetry) -> None:
    from autogen_core import AgentId, FunctionCall, SingleThreadedAgentRuntime
    from autogen_core.tool_agent import ToolAgent, ToolException
    from autogen_helpers import Ops
    from rippl_autogen import RipplInterventionHandler

    declare(rippl)
    otel.exporter.clear()
    ops = Ops()
    runtime = SingleThreadedAgentRuntime(tracer_provider=otel.provider,
                                         intervention_handlers=[RipplInterventionHandler(rippl)])
    await ToolAgent.register(runtime, "tools", lambda: ToolAgent("the tools", ops.tools()))
    runtime.start()
    try:
        with trace.get_tracer("tests").start_as_current_span("the caller"), \
                pytest.raises(ToolException):
            await runtime.send_message(
                FunctionCall(id="fc-1", name="migrate_tables", arguments=json.dumps(MIGRATE_ARGS)),
                AgentId("tools", "session-1"))
    finally:
        await runtime.stop()
    assert ops.names() == []
    span, veto = the_veto(otel)
    assert veto["gen_ai.tool.call.id"] == "fc-1"
    chain = ancestors(span, otel.spans())
    assert chain and "intercept" in chain[0].name and "RipplInterventionHandler" in chain[0].name, \
        [s.name for s in chain]
    assert chain[0].instrumentation_scope is not None
    assert chain[0].instrumentation_scope.name.startswith("autogen")


# ------------------------------------------------------------------------------------ CrewAI


@pytest.fixture
def crewai_instrumented(otel: Telemetry) -> Iterator[Telemetry]:
    from openinference.instrumentation.crewai import CrewAIInstrumentor

    instrumentor = CrewAIInstrumentor()
    instrumentor.instrument(tracer_provider=otel.provider)
    try:
        yield otel
    finally:
        instrumentor.uninstrument()


def test_crewai_veto_under_the_tools_span(rippl: Rippl, crewai_instrumented: Telemetry) -> None:
    from crewai_helpers import MigrateTablesTool, run_crew
    from rippl_crewai import guard_tools
    from rippl_crewai.testing import ScriptedLLM, native_call

    declare(rippl)
    otel = crewai_instrumented
    otel.exporter.clear()
    migrate = MigrateTablesTool()
    llm = ScriptedLLM([native_call("migrate_tables", MIGRATE_ARGS, "c-1"), "done: nothing moved"],
                      native=True)
    run_crew(llm, guard_tools([migrate], rippl))
    span, _ = the_veto(otel)
    chain = ancestors(span, otel.spans())
    names = [s.name for s in chain]
    assert chain and (chain[0].attributes or {}).get("openinference.span.kind") == "TOOL", names
    assert "migrate" in chain[0].name.lower(), names
    assert any("kickoff" in n.lower() or "crew" in n.lower() for n in names), names
