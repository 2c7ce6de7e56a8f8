"""Rippl's spans inside a LangGraph agent's trace (OpenInference's LangChain instrumentation, a
scripted model, the SDK's in-memory exporter): the veto event sits under the tool call it
stopped, and everything is one trace under the agent's root span."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers_telemetry import Telemetry, ancestors, events
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, tool
from openinference.instrumentation.langchain import LangChainInstrumentor
from rippl_langgraph import RipplMiddleware
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import Rippl

MIGRATE = tool_call("migrate_tables", {"table": "billing", "shard": "09"}, "migrate-09")
HEALTH = tool_call("get_shard_health", {"shard": "09"}, "health-09")


@pytest.fixture
def instrumented(otel: Telemetry) -> Iterator[Telemetry]:
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=otel.provider)
    try:
        yield otel
    finally:
        instrumentor.uninstrument()


def tools(ran: list[str]) -> list[BaseTool]:
    @tool
    def get_shard_health(shard: str) -> str:
        """Read a shard's health."""
        ran.append("get_shard_health")
        return f"shard {shard}: healthy"

    @tool
    def migrate_tables(table: str, shard: str) -> str:
        """Migrate tables to a shard."""
        ran.append("migrate_tables")
        return f"migrated {table} to {shard}"

    return [get_shard_health, migrate_tables]


def declare(rippl: Rippl) -> None:
    rippl.add_claim("C-09", "shard 09 has room for billing")
    rippl.add_decision("D-move", "move billing to 09", premises=["C-09"])
    rippl.add_action("A-move", "migrate billing to 09", decisions=["D-move"], tool="migrate_tables",
                     args={"table": "billing", "shard": "09"})
    rippl.retract("C-09", reason="shard 09 is full", by="alice")


def run_agent(rippl: Rippl, ran: list[str], *, sync: bool = True) -> Any:
    model = ScriptedChatModel(script=[calls(HEALTH, MIGRATE), "done"])
    agent = create_agent(model, tools(ran), middleware=[RipplMiddleware(rippl, agent="mover")])
    return agent, {"configurable": {"thread_id": "T-otel"}}


def check_trace(otel: Telemetry) -> None:
    spans = otel.spans()
    judged = [s for s in otel.named("rippl.capture.judge") if events(s)]
    assert len(judged) == 1, [s.name for s in otel.rippl()]
    [veto] = events(judged[0])
    assert veto["gen_ai.tool.call.id"] == "migrate-09" and veto["rippl.veto.reason"] == "retracted"
    assert veto["rippl.veto.trails"] == ("C-09 -> D-move -> A-move",)
    assert (judged[0].attributes or {})["gen_ai.agent.name"] == "mover"
    chain = ancestors(judged[0], spans)
    # the tool call's task in the agent graph (create_agent runs each call as its own task), then
    # the agent itself: one trace, the agent's root at the top
    assert chain[0].name == "tools" and chain[-1].name == "LangGraph", [s.name for s in chain]
    assert chain[0].attributes is not None and chain[0].attributes["openinference.span.kind"] == "CHAIN"
    assert "migrate-09" in str(chain[0].attributes.get("input.value"))
    assert {s.context.trace_id for s in [judged[0], *chain]} == {chain[-1].context.trace_id}
    # the allowed call ran under its own task: its judgement precedes the tool's span, beside it
    allowed = next(s for s in otel.named("rippl.capture.judge get_shard_health"))
    tool_span = next(s for s in spans if s.name == "get_shard_health")
    assert allowed.parent is not None and tool_span.parent is not None
    assert allowed.parent.span_id == tool_span.parent.span_id
    executed = next(s for s in otel.named("rippl.capture.executed get_shard_health"))
    assert executed.parent is not None and executed.parent.span_id == tool_span.parent.span_id
    # the turn was recorded where the model ran
    decided = otel.named("rippl.capture.decide")[0]
    assert "model" in [s.name for s in ancestors(decided, spans)]
    assert events(decided)[0]["gen_ai.tool.call.id"] == "migrate-09"


def test_a_langgraph_veto_sits_under_the_tool_call_it_stopped(rippl: Rippl, instrumented: Telemetry) -> None:
    declare(rippl)
    instrumented.exporter.clear()
    ran: list[str] = []
    agent, config = run_agent(rippl, ran)
    agent.invoke({"messages": [HumanMessage("move billing")]}, config)
    assert ran == ["get_shard_health"]
    check_trace(instrumented)


@pytest.mark.asyncio(loop_scope="session")
async def test_the_same_from_asyncio(rippl: Rippl, instrumented: Telemetry) -> None:
    declare(rippl)
    instrumented.exporter.clear()
    ran: list[str] = []
    agent, config = run_agent(rippl, ran)
    await agent.ainvoke({"messages": [HumanMessage("move billing")]}, config)
    assert ran == ["get_shard_health"]
    check_trace(instrumented)
