"""register_rippl on existing AssistantAgents and on a real team driven by replayed models."""

from __future__ import annotations

import pytest
from autogen_agentchat.agents import AssistantAgent, SocietyOfMindAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.messages import MemoryQueryEvent
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.memory import ListMemory
from autogen_core.tools import StaticWorkbench
from autogen_helpers import TO_07, TO_09, Ops, call, calls, replay, results_of, seen_by_model
from rippl_autogen import RipplMemory, RipplWorkbench, assistant_agents, register_rippl

from rippl_core import AsyncRippl, InvalidInputError, Rippl

pytestmark = pytest.mark.asyncio(loop_scope="session")


def ops_team(ops: Ops) -> tuple[RoundRobinGroupChat, AssistantAgent, AssistantAgent, object]:
    planner = AssistantAgent("planner", model_client=replay("Plan: move billing to shard 09.",
                                                            "Then use the shard 07 fallback."))
    executor_client = replay(calls(call("migrate_tables", **TO_09)),
                             calls(call("migrate_tables", **TO_07)))
    executor = AssistantAgent("executor", model_client=executor_client, tools=ops.tools())
    team = RoundRobinGroupChat([planner, executor], termination_condition=MaxMessageTermination(5))
    return team, planner, executor, executor_client


async def test_team_gets_guard_on_every_agent(incident: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    team, planner, executor, executor_client = ops_team(ops)
    changed = register_rippl(team, arippl, memory=False)
    assert changed == [planner, executor]
    assert all(isinstance(wb, RipplWorkbench) for a in changed for wb in a._workbench)
    assert planner._memory is None

    incident.retract("CLM-001", reason="I/O errors on shard 09", by="grafana")
    result = await team.run(task="Move billing off shard 03.")
    outcomes = results_of(result.messages)
    assert [o.is_error for o in outcomes] == [True, False]
    assert "CLM-001 -> DEC-001 -> ACT-001" in outcomes[0].content
    assert ops.ran == [("migrate_tables", TO_07)]
    assert "VETOED by Rippl" in seen_by_model(executor_client, 1)  # the veto reached the model


async def test_registering_twice_changes_nothing_more(arippl: AsyncRippl, ops: Ops) -> None:
    team, planner, executor, _ = ops_team(ops)
    register_rippl(team, arippl)
    workbenches = list(executor._workbench)
    register_rippl(team, arippl)
    assert executor._workbench == workbenches
    assert [type(m) for m in executor._memory] == [RipplMemory]
    assert [m.agent for a in (planner, executor) for m in a._memory] == ["planner", "executor"]


async def test_single_agent_keeps_its_other_memories(arippl: AsyncRippl, ops: Ops) -> None:
    notes = ListMemory()
    agent = AssistantAgent("ops", model_client=replay("ok"),
                           workbench=StaticWorkbench(ops.tools()), memory=[notes])
    register_rippl(agent, arippl, unguarded=["shard_health"])
    assert agent._memory[0] is notes and isinstance(agent._memory[1], RipplMemory)
    [wb] = agent._workbench
    assert isinstance(wb, RipplWorkbench) and wb.guard.unguarded == {"shard_health"}


async def test_shared_memory_and_nested_teams(arippl: AsyncRippl, ops: Ops) -> None:
    inner_a = AssistantAgent("a", model_client=replay("x"), tools=ops.tools())
    inner_b = AssistantAgent("b", model_client=replay("y"))
    inner = RoundRobinGroupChat([inner_a, inner_b], termination_condition=MaxMessageTermination(2))
    society = SocietyOfMindAgent("society", team=inner, model_client=replay("z"))
    outer_c = AssistantAgent("c", model_client=replay("w"))
    outer = RoundRobinGroupChat([society, outer_c], termination_condition=MaxMessageTermination(2))
    assert assistant_agents(outer) == [inner_a, inner_b, outer_c]
    team_memory = RipplMemory(arippl, "ops-team")
    register_rippl(outer, team_memory)
    assert all(a._memory == [team_memory] for a in (inner_a, inner_b, outer_c))
    assert isinstance(inner_a._workbench[0], RipplWorkbench)


async def test_nothing_to_register_is_an_error(arippl: AsyncRippl) -> None:
    with pytest.raises(InvalidInputError, match="no AssistantAgent"):
        register_rippl(object(), arippl)


async def test_registered_memory_reaches_the_model(incident: Rippl, arippl: AsyncRippl,
                                                   ops: Ops) -> None:
    if not hasattr(arippl, "believe"):
        pytest.skip("belief API not in this core yet")
    await arippl.believe("executor", "CLM-003", topic="shard-07-health")
    team, _, _, executor_client = ops_team(ops)
    register_rippl(team, arippl)
    result = await team.run(task="Move billing off shard 03.")
    events = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    assert events and events[0].source == "executor"
    assert "Shard 07 is healthy" in seen_by_model(executor_client, 0)
