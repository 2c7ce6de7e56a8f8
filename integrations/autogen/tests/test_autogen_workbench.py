"""RipplWorkbench in real AssistantAgents driven by a replayed model, on a real FalkorDB graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import TextMessage
from autogen_core import CancellationToken
from autogen_core.tools import StaticStreamWorkbench, StaticWorkbench, Workbench
from autogen_helpers import (
    TO_07,
    TO_09,
    Ops,
    StreamingMigrate,
    call,
    calls,
    plain_tools,
    replay,
    results_of,
    seen_by_model,
)
from rippl_autogen import RipplConnection, RipplStreamWorkbench, RipplWorkbench

from rippl_core import AsyncRippl, InvalidInputError, Policy, Rippl, ToolCall
from rippl_core.testing import free_port, start_falkordb_server

pytestmark = pytest.mark.asyncio(loop_scope="session")

INCIDENT = Path(__file__).parents[3] / "examples" / "incident.yaml"


def agent(workbench: Workbench, *turns: Any, reflect: bool = False) -> tuple[AssistantAgent, Any]:
    client = replay(*turns)
    return AssistantAgent("ops", model_client=client, workbench=workbench,
                          reflect_on_tool_use=reflect), client


def retract_shard_09(rippl: Rippl) -> None:
    rippl.retract("CLM-001", reason="replication lag 45 s and I/O errors on shard 09", by="grafana")


async def test_allowed_call_runs_unchanged(incident: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    ops_agent, _ = agent(RipplWorkbench(StaticWorkbench(ops.tools()), arippl),
                         calls(call("migrate_tables", **TO_09)))
    result = await ops_agent.run(task="move billing")
    [outcome] = results_of(result.messages)
    assert not outcome.is_error and outcome.content == "migrated billing to shard 09"
    assert ops.ran == [("migrate_tables", TO_09)]


async def test_retracted_premise_vetoes_with_trail(incident: Rippl, arippl: AsyncRippl,
                                                   ops: Ops) -> None:
    retract_shard_09(incident)
    ops_agent, client = agent(RipplWorkbench(StaticWorkbench(ops.tools()), arippl),
                              calls(call("migrate_tables", **TO_09)), "I will pick another shard.",
                              reflect=True)  # the model reads the veto and answers
    result = await ops_agent.run(task="move billing")
    [outcome] = results_of(result.messages)
    assert outcome.is_error
    assert outcome.content.startswith("VETOED by Rippl: the call to migrate_tables did not run.")
    assert "ACT-001 denied: Premise Retracted" in outcome.content
    assert "CLM-001 is Retracted (replication lag 45 s and I/O errors on shard 09)" in outcome.content
    assert "CLM-001 -> DEC-001 -> ACT-001" in outcome.content
    assert ops.ran == []  # the inner tool never ran
    assert "VETOED by Rippl" in seen_by_model(client, 1)  # the model was told why
    assert result.messages[-1].content == "I will pick another shard."


async def test_mixed_calls_in_one_turn(incident: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    retract_shard_09(incident)
    ops_agent, _ = agent(RipplWorkbench(StaticWorkbench(ops.tools()), arippl),
                         calls(call("migrate_tables", **TO_09), call("migrate_tables", **TO_07),
                               call("rollback_deploy", service="checkout-api", to_version="2.3.7")))
    result = await ops_agent.run(task="move billing, roll back checkout")
    outcomes = results_of(result.messages)
    assert [o.is_error for o in outcomes] == [True, False, False]
    assert "ACT-001" in outcomes[0].content
    assert sorted(ops.ran, key=str) == sorted([("migrate_tables", TO_07), (
        "rollback_deploy", {"service": "checkout-api", "to_version": "2.3.7"})], key=str)


async def test_undeclared_calls_are_captured_and_strict_policy_denies_them(
        incident: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    turn = calls(call("shard_health", shard="09"))
    captured, _ = agent(RipplWorkbench(StaticWorkbench(ops.tools()), arippl), turn)
    [outcome] = results_of((await captured.run(task="health?")).messages)
    assert not outcome.is_error  # judged by what its run observed: nothing retracted
    assert ops.ran == [("shard_health", {"shard": "09"})]

    strict = Policy(unknown="deny")  # a strict allow-list: only declared actions
    denied, _ = agent(RipplWorkbench(StaticWorkbench(ops.tools()), arippl, policy=strict), turn)
    [outcome] = results_of((await denied.run(task="health?")).messages)
    assert outcome.is_error and "no declared action matches shard_health" in \
        outcome.content
    unknown_args, _ = agent(RipplWorkbench(StaticWorkbench(ops.tools()), arippl, policy=strict),
                            calls(call("migrate_tables", table="billing", shard="11")))
    [outcome] = results_of((await unknown_args.run(task="move")).messages)
    assert outcome.is_error and "denied (policy unknown='deny')" in outcome.content
    uncaptured, _ = agent(RipplWorkbench(StaticWorkbench(ops.tools()), arippl, capture=False), turn)
    [outcome] = results_of((await uncaptured.run(task="health?")).messages)
    assert outcome.is_error  # without capture, what no action declares is denied (unknown='deny')
    assert ops.ran == [("shard_health", {"shard": "09"})]

    exempt, _ = agent(RipplWorkbench(StaticWorkbench(ops.tools()), arippl, policy=strict,
                                     unguarded=["shard_health"]), turn)
    [outcome] = results_of((await exempt.run(task="health?")).messages)
    assert not outcome.is_error and len(ops.ran) == 2
    lenient, _ = agent(RipplWorkbench(StaticWorkbench(ops.tools()), arippl, capture=False,
                                      policy=Policy(unknown="allow")), turn)
    [outcome] = results_of((await lenient.run(task="health?")).messages)
    assert not outcome.is_error and len(ops.ran) == 3


async def test_unreachable_graph_denies_and_says_so(ops: Ops) -> None:
    nowhere = RipplConnection(url=f"falkordb://127.0.0.1:{free_port()}", graph="ops")
    wb = RipplWorkbench(StaticWorkbench(ops.tools()), nowhere)
    result = await wb.call_tool("migrate_tables", TO_07)
    assert result.is_error
    assert "denied (fail closed): the run" in result.to_text()
    assert "could not be recorded or checked" in result.to_text()
    assert "cannot reach FalkorDB server" in result.to_text()
    # on_error='allow' cannot let through a call that cannot be recorded...
    captured = RipplWorkbench(StaticWorkbench(ops.tools()), nowhere, policy=Policy(on_error="allow"))
    assert (await captured.call_tool("migrate_tables", TO_07)).is_error
    assert ops.ran == []
    # ...without capture it lets a call through when the graph cannot be checked
    lenient = RipplWorkbench(StaticWorkbench(ops.tools()), nowhere, capture=False,
                             policy=Policy(on_error="allow"))
    assert not (await lenient.call_tool("migrate_tables", TO_07)).is_error
    assert ops.ran == [("migrate_tables", TO_07)]
    unchecked = RipplWorkbench(StaticWorkbench(ops.tools()), nowhere, capture=False)
    assert "the premise graph could not be checked" in (
        await unchecked.call_tool("migrate_tables", TO_07)).to_text()


async def test_graph_lost_mid_run_denies(ops: Ops) -> None:
    server = start_falkordb_server()
    try:
        handle = await AsyncRippl.open(url=server.url, graph="ops")
        await handle.load(INCIDENT)
        wb = RipplWorkbench(StaticWorkbench(ops.tools()), handle)
        assert not (await wb.call_tool("migrate_tables", TO_07)).is_error
        server.stop()
        lost = await wb.call_tool("migrate_tables", TO_07)
        assert lost.is_error and "could not be recorded or checked" in lost.to_text()
        assert ops.ran == [("migrate_tables", TO_07)]
        await handle.close()
    finally:
        server.stop()


async def test_at_risk_premise_blocks_until_reviewed(incident: Rippl, arippl: AsyncRippl,
                                                     ops: Ops) -> None:
    if not hasattr(incident, "propose_retraction"):
        pytest.skip("review gate not in this core yet")
    incident.propose_retraction("CLM-001", reason="lag alerts on shard 09", by="grafana")
    wb = RipplWorkbench(StaticWorkbench(ops.tools()), arippl)
    blocked = await wb.call_tool("migrate_tables", TO_09)
    assert blocked.is_error and "awaiting human review" in blocked.to_text()
    brave = RipplWorkbench(StaticWorkbench(ops.tools()), arippl, policy=Policy(at_risk="allow"))
    assert not (await brave.call_tool("migrate_tables", TO_09)).is_error
    assert ops.ran == [("migrate_tables", TO_09)]


async def test_resolvers_map_calls_to_actions(incident: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    retract_shard_09(incident)
    # a mapping: every rollback_deploy call executes ACT-012 (which holds)
    mapped = RipplWorkbench(StaticWorkbench(ops.tools()), arippl,
                            resolver={"rollback_deploy": "ACT-012"})
    assert not (await mapped.call_tool("rollback_deploy", {"service": "x", "to_version": "1"})).is_error

    async def by_shard(name: str, args: dict[str, Any]) -> str | ToolCall | None:
        return {"09": "ACT-001", "07": "ACT-002"}.get(args.get("shard", "")) if name == "migrate_tables" \
            else None

    wb = RipplWorkbench(StaticWorkbench(ops.tools()), arippl, resolver=by_shard)
    assert (await wb.call_tool("migrate_tables", {"table": "ledger", "shard": "09"})).is_error
    assert not (await wb.call_tool("migrate_tables", {"table": "ledger", "shard": "07"})).is_error

    def broken(name: str, args: dict[str, Any]) -> str:
        raise KeyError("no such team")

    failing = RipplWorkbench(StaticWorkbench(ops.tools()), arippl, resolver=broken)
    result = await failing.call_tool("migrate_tables", TO_07)
    assert result.is_error and "the call to migrate_tables could not be mapped to an action" in (
        result.to_text())
    assert "KeyError: 'no such team'" in result.to_text()  # the resolver's own failure
    assert ops.ran == [("rollback_deploy", {"service": "x", "to_version": "1"}),
                       ("migrate_tables", {"table": "ledger", "shard": "07"})]


async def test_streaming_passes_through_and_veto_streams_one_error(incident: Rippl,
                                                                   arippl: AsyncRippl,
                                                                   ops: Ops) -> None:
    wb = RipplWorkbench(StaticStreamWorkbench([StreamingMigrate(ops)]), arippl)
    assert isinstance(wb, RipplStreamWorkbench) and isinstance(wb, StaticStreamWorkbench)
    retract_shard_09(incident)
    ops_agent, _ = agent(wb, calls(call("migrate_tables", **TO_07)),
                         calls(call("migrate_tables", **TO_09)))
    streamed = [e async for e in ops_agent.run_stream(task="move billing to 07")]
    progress = [e.content for e in streamed if isinstance(e, TextMessage)
                and e.source == "migrate_tables"]
    assert progress == ["copying billing: 50%", "copying billing: 100%"]
    assert isinstance(streamed[-1], TaskResult)
    [outcome] = results_of(streamed)
    assert not outcome.is_error and outcome.content == "migrated billing to 07"

    streamed = [e async for e in ops_agent.run_stream(task="now to 09")]
    assert not [e for e in streamed if isinstance(e, TextMessage) and e.source == "migrate_tables"]
    [outcome] = results_of(streamed)
    assert outcome.is_error and "VETOED by Rippl" in outcome.content
    assert ops.ran == [("migrate_tables", TO_07)]


async def test_keyword_construction_picks_the_streaming_form(arippl: AsyncRippl, ops: Ops) -> None:
    wb = RipplWorkbench(inner=StaticStreamWorkbench(ops.tools()), rippl=arippl)
    assert isinstance(wb, RipplStreamWorkbench)


async def test_plain_workbench_streams_one_result(incident: Rippl, arippl: AsyncRippl,
                                                  ops: Ops) -> None:
    wb = RipplWorkbench(StaticWorkbench(ops.tools()), arippl)
    assert type(wb) is RipplWorkbench  # a non-streaming inner: AssistantAgent uses call_tool
    events = [e async for e in wb.call_tool_stream("migrate_tables", TO_07, CancellationToken())]
    assert len(events) == 1 and not events[0].is_error


@pytest.mark.filterwarnings("ignore:(?s).*Loading a FunctionTool from config")
async def test_component_round_trip(incident: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    wb = RipplWorkbench(StaticWorkbench(plain_tools()), arippl, resolver={"rollback_deploy": "ACT-012"},
                        policy=Policy(at_risk="allow"), unguarded=["shard_health"])
    dumped = json.loads(wb.dump_component().model_dump_json())
    assert dumped["provider"] == "rippl_autogen.RipplWorkbench"
    guard = dumped["config"]["guard"]
    assert guard["connection"]["graph"] == incident.graph
    assert guard["actions"] == {"rollback_deploy": "ACT-012"}
    assert guard["unguarded"] == ["shard_health"]
    # under capture, a policy silent on unknown calls judges them by the run
    assert guard["policy"] == {"at_risk": "allow", "unknown": "record", "on_error": "deny"}
    assert guard["capture"] is True and guard.get("run") is None

    loaded = Workbench.load_component(dumped)
    assert isinstance(loaded, RipplWorkbench)
    assert loaded.guard.policy == Policy(at_risk="allow", unknown="record")
    assert loaded.guard.link.target == RipplConnection.of(arippl)
    retract_shard_09(incident)
    async with loaded:  # opens its own handle on first use, closes it on stop()
        assert "ACT-001" in (await loaded.call_tool("migrate_tables", TO_09)).to_text()
        rolled = await loaded.call_tool("rollback_deploy", {"service": "s", "to_version": "1"})
        assert rolled.to_text() == "rolled s back to 1" and not rolled.is_error
        assert (await loaded.call_tool("shard_health", {"shard": "01"})).to_text() == "shard 01: ok"
    assert loaded.guard.link._owned is None

    streaming = RipplWorkbench(StaticStreamWorkbench(plain_tools()), arippl)
    again = Workbench.load_component(streaming.dump_component())
    assert isinstance(again, RipplStreamWorkbench)


@pytest.mark.filterwarnings("ignore:(?s).*Loading a FunctionTool from config")
async def test_agent_with_guarded_workbench_round_trips(incident: Rippl, arippl: AsyncRippl) -> None:
    from autogen_core.tools import FunctionTool

    def page_oncall(team: str, reason: str, window: str) -> str:
        return f"paged {team}"

    wb = RipplWorkbench(StaticWorkbench([FunctionTool(page_oncall, description="page")]), arippl)
    ops_agent, _ = agent(wb, "ok")
    loaded = AssistantAgent.load_component(ops_agent.dump_component())
    [loaded_wb] = loaded._workbench
    assert isinstance(loaded_wb, RipplWorkbench)
    args = {"team": "payments-dba", "reason": "billing cutover to shard 09",
            "window": "2026-10-13T02:00:00Z"}
    assert not (await loaded_wb.call_tool("page_oncall", args)).is_error
    retract_shard_09(incident)
    assert "ACT-009" in (await loaded_wb.call_tool("page_oncall", args)).to_text()
    await loaded_wb.stop()


async def test_callable_resolver_refuses_to_serialise(arippl: AsyncRippl, ops: Ops) -> None:
    wb = RipplWorkbench(StaticWorkbench(ops.tools()), arippl, resolver=lambda name, args: None)
    with pytest.raises(InvalidInputError, match="cannot be serialised"):
        wb.dump_component()


async def test_bad_construction_is_refused(ops: Ops) -> None:
    with pytest.raises(InvalidInputError, match="Workbench"):
        RipplWorkbench(ops.tools(), RipplConnection())  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="AsyncRippl or Rippl"):
        RipplWorkbench(StaticWorkbench(ops.tools()), "falkordb://localhost")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="single string"):
        RipplWorkbench(StaticWorkbench(ops.tools()), RipplConnection(), unguarded="shard_health")


async def test_sync_handle_works_through_a_thread(incident: Rippl, ops: Ops) -> None:
    wb = RipplWorkbench(StaticWorkbench(ops.tools()), incident)
    assert not (await wb.call_tool("migrate_tables", TO_09)).is_error
    retract_shard_09(incident)
    assert (await wb.call_tool("migrate_tables", TO_09)).is_error
