"""guard_tools / GuardedTool: tools passed as `tools=[...]` to a real AssistantAgent."""

from __future__ import annotations

import json

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import TextMessage
from autogen_core import CancellationToken
from autogen_core.tools import BaseTool, StreamTool
from autogen_helpers import TO_07, TO_09, Ops, StreamingMigrate, call, calls, plain_tools, replay, results_of
from rippl_autogen import GuardedStreamTool, GuardedTool, RipplConnection, ToolVetoedError, guard_tools

from rippl_core import AsyncRippl, InvalidInputError, Policy, PremiseRetractedError, Rippl
from rippl_core.testing import free_port

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_guarded_tools_in_an_agent(incident: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    tools = guard_tools(ops.tools(), arippl, unguarded=["shard_health"])
    assert [type(t) for t in tools] == [GuardedTool] * 3  # unguarded ones too: they are recorded
    uncaptured = guard_tools(ops.tools(), arippl, unguarded=["shard_health"], capture=False)
    assert [type(t) for t in uncaptured] == [GuardedTool, GuardedTool, type(ops.tools()[2])]
    assert [t.schema for t in tools] == [t.schema for t in ops.tools()]
    incident.retract("CLM-001", reason="I/O errors on shard 09", by="grafana")
    client = replay(calls(call("migrate_tables", **TO_09), call("migrate_tables", **TO_07),
                          call("shard_health", shard="07")))
    agent = AssistantAgent("ops", model_client=client, tools=tools)
    outcomes = results_of((await agent.run(task="move billing")).messages)
    assert [o.is_error for o in outcomes] == [True, False, False]
    assert outcomes[0].content.startswith("VETOED by Rippl: the call to migrate_tables did not run.")
    assert "CLM-001 -> DEC-001 -> ACT-001" in outcomes[0].content
    assert sorted(ops.names()) == ["migrate_tables", "shard_health"]
    assert ("migrate_tables", TO_07) in ops.ran


async def test_plain_functions_are_wrapped(incident: Rippl, arippl: AsyncRippl) -> None:
    ran: list[str] = []

    async def rollback_deploy(service: str, to_version: str) -> str:
        """Roll back a deploy."""
        ran.append(service)
        return "done"

    [tool] = guard_tools([rollback_deploy], arippl, policy=Policy(unknown="deny"))
    assert isinstance(tool, GuardedTool) and tool.description == "Roll back a deploy."
    ok = await tool.run_json({"service": "checkout-api", "to_version": "2.3.7"}, CancellationToken())
    assert ok == "done" and ran == ["checkout-api"]
    with pytest.raises(ToolVetoedError) as vetoed:
        await tool.run_json({"service": "payments", "to_version": "1.0"}, CancellationToken())
    assert isinstance(vetoed.value, PremiseRetractedError)
    assert "no declared action matches rollback_deploy" in str(vetoed.value)
    assert ran == ["checkout-api"]
    [captured] = guard_tools([rollback_deploy], arippl)  # the default: judged by its run
    assert await captured.run_json({"service": "payments", "to_version": "1.0"},
                                   CancellationToken()) == "done"
    assert ran == ["checkout-api", "payments"]


async def test_direct_run_is_guarded_too(incident: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    tool = GuardedTool(ops.tools()[0], arippl)
    incident.retract("CLM-001", reason="I/O errors", by="grafana")
    with pytest.raises(ToolVetoedError, match="ACT-001"):
        await tool.run(tool.args_type().model_validate(TO_09), CancellationToken())
    assert ops.ran == []


async def test_stream_tool_stays_streaming(incident: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    [tool] = guard_tools([StreamingMigrate(ops)], arippl)
    assert isinstance(tool, GuardedStreamTool) and isinstance(tool, StreamTool)
    incident.retract("CLM-001", reason="I/O errors", by="grafana")
    client = replay(calls(call("migrate_tables", **TO_07)), calls(call("migrate_tables", **TO_09)))
    agent = AssistantAgent("ops", model_client=client, tools=[tool])
    streamed = [e async for e in agent.run_stream(task="to 07")]
    assert [e.content for e in streamed if isinstance(e, TextMessage) and e.source == "migrate_tables"] \
        == ["copying billing: 50%", "copying billing: 100%"]
    streamed = [e async for e in agent.run_stream(task="to 09")]
    assert not [e for e in streamed if isinstance(e, TextMessage) and e.source == "migrate_tables"]
    [outcome] = results_of(streamed)
    assert outcome.is_error and "VETOED by Rippl" in outcome.content
    assert ops.ran == [("migrate_tables", TO_07)]


async def test_unreachable_graph_denies(ops: Ops) -> None:
    nowhere = RipplConnection(url=f"falkordb://127.0.0.1:{free_port()}")
    [tool] = guard_tools(ops.tools()[:1], nowhere)
    with pytest.raises(ToolVetoedError, match="could not be recorded or checked"):
        await tool.run_json(TO_07, CancellationToken())
    assert ops.ran == []


@pytest.mark.filterwarnings("ignore:(?s).*Loading a FunctionTool from config")
async def test_component_round_trip(incident: Rippl, arippl: AsyncRippl) -> None:
    tool = GuardedTool(plain_tools()[0], arippl, resolver={"migrate_tables": "ACT-002"})
    dumped = json.loads(tool.dump_component().model_dump_json())
    assert dumped["provider"] == "rippl_autogen.GuardedTool"
    assert dumped["config"]["guard"]["actions"] == {"migrate_tables": "ACT-002"}
    loaded = BaseTool.load_component(dumped)
    assert isinstance(loaded, GuardedTool) and loaded.name == "migrate_tables"
    assert await loaded.run_json(TO_09, CancellationToken()) == "migrated billing to shard 09"
    incident.retract("CLM-003", reason="shard 07 lag", by="grafana")  # ACT-002 rests on it
    with pytest.raises(ToolVetoedError, match="ACT-002"):
        await loaded.run_json(TO_09, CancellationToken())
    await loaded.close()


async def test_keyword_construction(arippl: AsyncRippl, ops: Ops) -> None:
    assert isinstance(GuardedTool(inner=StreamingMigrate(ops), rippl=arippl), GuardedStreamTool)
    assert type(GuardedTool(inner=ops.tools()[0], rippl=arippl)) is GuardedTool


async def test_bad_input_is_refused(arippl: AsyncRippl) -> None:
    with pytest.raises(InvalidInputError, match="BaseTool"):
        GuardedTool("migrate_tables", arippl)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="cannot guard"):
        guard_tools([42], arippl)  # type: ignore[list-item]
