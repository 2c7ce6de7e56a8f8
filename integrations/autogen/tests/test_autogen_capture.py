"""Provenance capture in real AssistantAgents and teams (scripted models, a real graph, both
backends): what each run records, a veto after a pause, replays, trimmed history, the told rule,
failing closed, concurrent runs, and memory reads as observations of the right run."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import Handoff
from autogen_agentchat.conditions import HandoffTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import CancellationToken, FunctionCall
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage
from autogen_core.tools import FunctionTool, StaticWorkbench
from autogen_helpers import (
    TO_07,
    TO_09,
    Ops,
    Scripted,
    action_of,
    call,
    calls,
    decision_of,
    premises_of,
    replay,
    result_of,
    results_of,
    run_claim,
    vetoed_in,
)
from rippl_autogen import (
    Guard,
    RipplConnection,
    RipplMemory,
    RipplModelClient,
    RipplWorkbench,
    guard_tools,
    register_rippl,
)
from rippl_autogen.runs import current_turn, memory_messages, memory_ref

from rippl_core import AsyncRippl, Rippl
from rippl_core.testing import free_port, start_falkordb_server

pytestmark = pytest.mark.asyncio(loop_scope="session")


def ops_agent(model: Any, ops: Ops, **kwargs: Any) -> AssistantAgent:
    return AssistantAgent("ops", model_client=model, tools=ops.tools(), max_tool_iterations=6,
                          **kwargs)


def team_of(*agents: AssistantAgent) -> RoundRobinGroupChat:
    return RoundRobinGroupChat(list(agents), termination_condition=(
        HandoffTermination("user") | TextMentionTermination("TERMINATE")))


# ------------------------------------------------------------------------------ by default


async def test_capture_is_the_default(rippl: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    health = call("shard_health", shard="09")
    rollback = call("rollback_deploy", service="billing", to_version="2")
    migrate = call("migrate_tables", **TO_09)
    agent = ops_agent(replay(calls(health), calls(rollback, migrate), "done"), ops)
    register_rippl(agent, arippl, run="conv-1", memory=False)  # nothing declared in the graph
    await agent.run(task="move billing to 09")
    assert ops.names() == ["shard_health", "rollback_deploy", "migrate_tables"]

    run = "conv-1/ops"
    reading = result_of(health, "shard 09: ok")
    assert rippl.get(reading).text == 'shard_health({"shard":"09"}) returned: shard 09: ok'
    # the first turn rests on the run alone, the second on the run and the health reading
    assert premises_of(rippl, action_of(run, health)) == {run_claim(run)}
    assert premises_of(rippl, action_of(run, migrate)) == {reading, run_claim(run)}
    # one decision per model turn drives each of its calls; each call ran and is marked so
    assert decision_of(rippl, action_of(run, rollback)) == decision_of(rippl, action_of(run, migrate))
    for fc in (health, rollback, migrate):
        node = rippl.get(action_of(run, fc))
        assert node.tool == fc.name and node.args == json.loads(fc.arguments)
        assert node.executed_at is not None


async def test_an_error_result_counts_as_executed(rippl: Rippl, arippl: AsyncRippl) -> None:
    def flaky(shard: str) -> str:
        """Fails after starting."""
        raise RuntimeError(f"disk full on {shard}")

    broken = call("flaky", shard="09")
    agent = AssistantAgent("ops", model_client=replay(calls(broken), "done"),
                           tools=[FunctionTool(flaky, description="flaky")])
    register_rippl(agent, arippl, run="conv-e", memory=False)
    [outcome] = results_of((await agent.run(task="go")).messages)
    assert outcome.is_error and "disk full on 09" in outcome.content
    assert rippl.get(action_of("conv-e/ops", broken)).executed_at is not None


# ------------------------------------------------------------------------- pause and resume


def paused_script(health: FunctionCall, rollback: FunctionCall, migrate: FunctionCall,
                  fallback: FunctionCall) -> Scripted:
    """Read health, act on it, hand off for approval; after the pause migrate, and re-plan to
    the fallback if the model is told the migration was vetoed."""
    return Scripted(calls(health), calls(rollback), calls(call("transfer_to_user")),
                    calls(migrate),
                    lambda seen: calls(fallback) if vetoed_in(seen) else "migrated. TERMINATE",
                    "done. TERMINATE")


async def test_a_retraction_approved_during_a_pause_vetoes_on_resume(
        rippl: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    health, rollback = call("shard_health", shard="09"), call("rollback_deploy", service="b",
                                                              to_version="1")
    migrate, fallback = call("migrate_tables", **TO_09), call("migrate_tables", **TO_07)
    team = team_of(ops_agent(paused_script(health, rollback, migrate, fallback), ops,
                             handoffs=[Handoff(target="user")]))
    register_rippl(team, arippl, memory=False)  # no run=: the team's id names the run
    first = await team.run(task="move billing to 09")
    assert "Handoff to user" in str(first.stop_reason)
    run = f"{team._team_id}/ops"
    reading = result_of(health, "shard 09: ok")

    review = rippl.propose_retraction(reading, reason="served from a stale cache", by="monitor")
    rippl.approve(review.id, by="alice")
    second = await team.run(task="approved: go ahead")  # the same team: the same run

    vetoed, moved = results_of(second.messages)
    assert vetoed.is_error and vetoed.call_id == migrate.id
    assert f"{reading} -> {decision_of(rippl, action_of(run, migrate))} -> " \
           f"{action_of(run, migrate)}" in vetoed.content
    assert not moved.is_error and ("migrate_tables", TO_07) in ops.ran
    assert ("migrate_tables", TO_09) not in ops.ran
    # the told rule: the re-plan does not rest on the reading the veto named, though its result
    # message is still in the model's input
    assert reading not in premises_of(rippl, action_of(run, fallback))
    assert result_of(rollback, "rolled b back to 1") in premises_of(rippl, action_of(run, fallback))
    # the rollback ran on the retracted reading: listed for compensation, with the trail
    [owed] = rippl.compensations()
    assert owed.action == action_of(run, rollback) and owed.run == run
    assert owed.blockers[0].premise == reading


async def test_run_survives_a_rebuilt_team_only_with_an_app_run_id(rippl: Rippl, arippl: AsyncRippl,
                                                                   ops: Ops) -> None:
    """The default run (the team's id) does not survive save_state/load_state into a new team:
    the history the rebuilt team resumes with is not on record for its new run, so its tool
    results are held as never recorded (denied until a person accepts them), not as the old
    reading. `run=` continues the run: the veto names the retracted reading."""
    outcomes = {}
    for run in (None, "conv-7"):
        health, rollback = call("shard_health", shard="09"), call("rollback_deploy", service="b",
                                                                  to_version="1")
        migrate, fallback = call("migrate_tables", **TO_09), call("migrate_tables", **TO_07)
        model = paused_script(health, rollback, migrate, fallback)
        team = team_of(ops_agent(model, ops, handoffs=[Handoff(target="user")]))
        register_rippl(team, arippl, memory=False, run=run)
        await team.run(task="move billing to 09")
        state = await team.save_state()
        rippl.retract(result_of(health, "shard 09: ok"), reason="stale cache", by="monitor")

        rebuilt = team_of(ops_agent(model, ops, handoffs=[Handoff(target="user")]))
        await rebuilt.load_state(state)
        register_rippl(rebuilt, arippl, memory=False, run=run)
        [outcome, *_] = results_of((await rebuilt.run(task="go ahead")).messages)
        outcomes[run] = outcome
        rippl.reinstate(result_of(health, "shard 09: ok"), reason="next round", by="monitor")
    assert outcomes[None].is_error and "never recorded" in outcomes[None].content
    assert "stale cache" not in outcomes[None].content  # a new run: not the old reading
    assert outcomes["conv-7"].is_error and "VETOED by Rippl" in outcomes["conv-7"].content
    assert "stale cache" in outcomes["conv-7"].content


# --------------------------------------------------------------------- replays and trimming


async def test_a_replayed_turn_records_nothing_twice(rippl: Rippl, arippl: AsyncRippl) -> None:
    migrate = call("migrate_tables", **TO_09)
    wrapper = RipplModelClient(replay(calls(migrate), calls(migrate)), arippl, agent="ops",
                               run="conv-r")
    said = [UserMessage(content="move billing", source="user")]
    await wrapper.create(said)
    turn = current_turn.get()
    assert turn is not None and turn.run == "conv-r/ops" and turn.verdicts[migrate.id] is not None
    recorded = rippl.stats()
    again = await wrapper.create(said)  # the provider answered the same turn again
    assert isinstance(again.content, list) and again.content[0].id == migrate.id
    assert rippl.stats() == recorded
    assert rippl.get(action_of("conv-r/ops", migrate)).tool == "migrate_tables"


async def test_trimmed_history_keeps_what_the_models_own_turn_carries(rippl: Rippl,
                                                                       arippl: AsyncRippl,
                                                                       ops: Ops) -> None:
    first, second = call("shard_health", shard="09"), call("shard_health", shard="07")
    migrate = call("migrate_tables", **TO_07)
    agent = ops_agent(replay(calls(first), calls(second), calls(migrate), "done"), ops,
                      model_context=BufferedChatCompletionContext(buffer_size=2))
    register_rippl(agent, arippl, run="conv-t", memory=False)
    await agent.run(task="check, then move")
    # the model saw only the last two messages: its turn that read 07 and the 07 reading; the 09
    # reading was trimmed, but that turn was made from it, so it carries it (premises flow with
    # the text that carries them; test_autogen_veto_holds has one whose every carrier is gone)
    assert premises_of(rippl, action_of("conv-t/ops", migrate)) == {
        result_of(first, "shard 09: ok"), result_of(second, "shard 07: ok"), run_claim("conv-t/ops")}


# ------------------------------------------------------------------------------ fail closed


async def test_an_unreachable_graph_denies_every_call(ops: Ops) -> None:
    nowhere = RipplConnection(url=f"falkordb://127.0.0.1:{free_port()}", graph="ops")
    agent = ops_agent(replay(calls(call("shard_health", shard="09"),
                                   call("migrate_tables", **TO_07)), "done"), ops)
    register_rippl(agent, nowhere, memory=False)
    outcomes = results_of((await agent.run(task="go")).messages)
    assert [o.is_error for o in outcomes] == [True, True]  # unguarded or not: not on record
    assert all("could not be recorded or checked" in o.content for o in outcomes)
    assert ops.ran == []


async def test_a_graph_lost_between_turns_denies_the_next_turn(ops: Ops) -> None:
    server = start_falkordb_server()
    try:
        handle = await AsyncRippl.open(url=server.url, graph="ops")
        agent = ops_agent(replay(calls(call("shard_health", shard="09")), "ok",
                                 calls(call("migrate_tables", **TO_07)), "ok"), ops)
        register_rippl(agent, handle, run="conv-l", memory=False)
        await agent.run(task="check")
        server.stop()
        [outcome] = results_of((await agent.run(task="move")).messages)
        assert outcome.is_error and "could not be recorded or checked" in outcome.content
        assert ops.ran == [("shard_health", {"shard": "09"})]
        await handle.close()
    finally:
        server.stop()


async def test_a_memory_message_that_cannot_be_recorded_denies_its_turn(arippl: AsyncRippl,
                                                                        ops: Ops) -> None:
    migrate = call("migrate_tables", **TO_07)
    hooks = Guard(arippl, agent="ops", run="conv-m")
    wrapper = RipplModelClient(replay(calls(migrate)), hooks)
    workbench = RipplWorkbench(StaticWorkbench(ops.tools()), hooks)
    text = "What ops believes now: 1. the freeze is over (claim CLM-GONE)"
    memory_messages.carried(memory_ref(text), ["CLM-GONE"])  # a claim this graph does not hold
    await wrapper.create([SystemMessage(content=text), UserMessage(content="go", source="user")])
    result = await workbench.call_tool("migrate_tables", TO_07, CancellationToken(), migrate.id)
    assert result.is_error and "the memory the model read in run conv-m/ops could not be " \
                               "recorded" in result.to_text()
    assert ops.ran == []


# ----------------------------------------------------------------------------- concurrency


def reading_tools(ops: Ops, label: str) -> list[FunctionTool]:
    async def shard_health(shard: str) -> str:
        """Read-only: the health of a shard."""
        return f"shard {shard}: ok (probe {label})"

    async def migrate_tables(table: str, shard: str) -> str:
        """Copy a table onto a shard."""
        ops.ran.append(("migrate_tables", {"table": table, "shard": shard, "run": label}))
        return f"migrated {table} to {shard}"

    return [FunctionTool(shard_health, description="health"),
            FunctionTool(migrate_tables, description="migrate")]


async def test_concurrent_runs_stay_separate(rippl: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    health = {label: call("shard_health", shard="09") for label in "ab"}
    migrate = {label: call("migrate_tables", **TO_09) for label in "ab"}
    agents = {label: AssistantAgent("ops", tools=reading_tools(ops, label), model_client=replay(
        calls(health[label]), calls(migrate[label]))) for label in "ab"}  # one tool round a run
    for label, agent in agents.items():
        register_rippl(agent, arippl, run=f"conv-{label}", memory=False)
    await asyncio.gather(*(agent.run(task="check 09") for agent in agents.values()))
    readings = {label: result_of(health[label], f"shard 09: ok (probe {label})") for label in "ab"}
    rippl.retract(readings["a"], reason="probe a hit a stale replica", by="monitor")
    await asyncio.gather(*(agent.run(task="move") for agent in agents.values()))
    assert ops.ran == [("migrate_tables", {**TO_09, "run": "b"})]  # only a's reading was false
    for label, other in (("a", "b"), ("b", "a")):
        rests_on = premises_of(rippl, action_of(f"conv-{label}/ops", migrate[label]))
        assert readings[label] in rests_on and readings[other] not in rests_on


# ---------------------------------------------------------------------------------- memory


async def remember(memory: RipplMemory, claim: str, text: str) -> None:
    await memory.add(MemoryContent(content=text, mime_type=MemoryMimeType.TEXT,
                                   metadata={"claim_id": claim, "topic": claim.lower()}))


async def test_memory_reads_are_observations_of_the_reading_agents_run(
        rippl: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    await remember(RipplMemory(arippl, "planner"), "CLM-PLAN", "Billing moves this week")
    await remember(RipplMemory(arippl, "ops"), "CLM-OPS", "Shard 09 has room for billing")
    migrate = call("migrate_tables", **TO_09)
    planner = AssistantAgent("planner", model_client=replay("Move billing to 09."))
    ops_agent_ = ops_agent(replay(calls(migrate), "done. TERMINATE"), ops)
    team = team_of(planner, ops_agent_)
    register_rippl(team, arippl, run="conv-mem")  # a RipplMemory per agent, bound to its run
    await team.run(task="plan and move billing")
    # its own memory read, and the planner's only through the planner's message, which was
    # written from it (a hand-over from the planner's run, never an observation of ops' run)
    premises = premises_of(rippl, action_of("conv-mem/ops", migrate))
    [handed] = [p for p in premises if p.startswith("HND-")]
    assert premises == {"CLM-OPS", run_claim("conv-mem/ops"), handed}
    assert rippl.get(handed).text.startswith("run conv-mem/planner carried it")
    assert rippl.get(handed).text.endswith("Billing moves this week")

    rippl.retract("CLM-OPS", reason="shard 09 is full", by="capacity-monitor")
    assert rippl.compensations()[0].action == action_of("conv-mem/ops", migrate)


async def test_a_memory_no_hook_was_bound_to_is_recorded_by_the_model_wrapper(
        rippl: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    memory = RipplMemory(arippl, "ops")
    await remember(memory, "CLM-ROOM", "Shard 09 has room for billing")
    migrate = call("migrate_tables", **TO_09)
    # hand-built hooks with their own guards (so their own default runs), in a solo agent
    agent = AssistantAgent("ops", memory=[memory], model_client=RipplModelClient(
        replay(calls(migrate), "done"), arippl, agent="ops"),
        workbench=RipplWorkbench(StaticWorkbench(ops.tools()), arippl, agent="ops"))
    await agent.run(task="move billing")
    run = agent._model_client.guard.scope.resolve().run  # type: ignore[attr-defined]
    # the call ran in the wrapper's run (the workbench found the turn), resting on the memory
    assert premises_of(rippl, action_of(run, migrate)) == {"CLM-ROOM", run_claim(run)}
    assert rippl.get(action_of(run, migrate)).executed_at is not None


async def test_a_query_from_a_tool_is_an_observation_of_the_calling_run(
        rippl: Rippl, arippl: AsyncRippl) -> None:
    memory = RipplMemory(arippl, "ops")
    await remember(memory, "CLM-ROOM", "Shard 09 has room for billing")

    async def recall(topic: str) -> str:
        """Look something up in memory."""
        found = await memory.query(topic)
        return f"{len(found.results)} beliefs"

    lookup, migrate = call("recall", topic="room"), call("migrate_tables", **TO_09)
    tools = [FunctionTool(recall, description="recall"), *Ops().tools()[:1]]
    agent = AssistantAgent("ops", model_client=replay(calls(lookup), calls(migrate), "done"),
                           tools=tools, max_tool_iterations=3)
    register_rippl(agent, arippl, run="conv-q", memory=False)
    await agent.run(task="move billing if there is room")
    assert "CLM-ROOM" in premises_of(rippl, action_of("conv-q/ops", migrate))


# ------------------------------------------------------------------------- other hooks


async def test_streamed_turns_and_guarded_tools_are_captured(rippl: Rippl, arippl: AsyncRippl,
                                                             ops: Ops) -> None:
    health, migrate = call("shard_health", shard="09"), call("migrate_tables", **TO_09)
    hooks = Guard(arippl, agent="ops", run="conv-s")
    agent = AssistantAgent("ops", tools=guard_tools(ops.tools(), hooks), model_client_stream=True,
                           model_client=RipplModelClient(replay(calls(health), calls(migrate),
                                                                "done"), hooks),
                           max_tool_iterations=3)
    [_ async for _ in agent.run_stream(task="check and move")]
    assert premises_of(rippl, action_of("conv-s/ops", migrate)) == {
        result_of(health, "shard 09: ok"), run_claim("conv-s/ops")}
    assert rippl.get(action_of("conv-s/ops", migrate)).executed_at is not None


@pytest.mark.filterwarnings("ignore:(?s).*Loading a FunctionTool from config")
async def test_the_wrapped_agent_still_round_trips(arippl: AsyncRippl) -> None:
    from autogen_helpers import plain_tools

    agent = AssistantAgent("ops", model_client=replay("ok"), tools=plain_tools())
    register_rippl(agent, arippl, run="conv-d", memory=False)
    dumped = agent.dump_component()
    assert dumped.config["model_client"]["provider"] == "rippl_autogen.RipplModelClient"
    loaded = AssistantAgent.load_component(dumped)
    assert isinstance(loaded._model_client, RipplModelClient)
    assert loaded._model_client.guard.scope.run == "conv-d"
    assert loaded._model_client.guard.scope.agent == "ops"
    assert isinstance(loaded._workbench[0], RipplWorkbench)
    await loaded._model_client.close()


async def test_without_the_model_wrapper_memory_and_calls_share_the_teams_run(
        rippl: Rippl, arippl: AsyncRippl, ops: Ops) -> None:
    """Hand-built hooks without the model wrapper: the memory records its message for the team's
    run of the agent, and each call is a turn of its own there, resting on all the run saw."""
    memory = RipplMemory(arippl, "ops")
    await remember(memory, "CLM-ROOM", "Shard 09 has room for billing")
    migrate = call("migrate_tables", **TO_09)
    agent = AssistantAgent("ops", memory=[memory], model_client=replay(calls(migrate), "TERMINATE"),
                           workbench=RipplWorkbench(StaticWorkbench(ops.tools()), arippl))
    team = team_of(agent)
    await team.run(task="move billing")
    run = f"{team._team_id}/ops"
    migrated = action_of(run, migrate)
    assert premises_of(rippl, migrated) == {"CLM-ROOM", run_claim(run)}
    rippl.retract("CLM-ROOM", reason="shard 09 filled up", by="capacity-monitor")
    assert [c.action for c in rippl.compensations()] == [migrated]


async def test_the_intervention_handler_captures_per_session(rippl: Rippl, arippl: AsyncRippl,
                                                             ops: Ops) -> None:
    from autogen_core import AgentId, SingleThreadedAgentRuntime
    from autogen_core.tool_agent import ToolAgent
    from rippl_autogen import RipplInterventionHandler, ToolVetoedException

    runtime = SingleThreadedAgentRuntime(intervention_handlers=[RipplInterventionHandler(arippl)])
    tools = ops.tools()
    await ToolAgent.register(runtime, "tools", lambda: ToolAgent("ops tools", tools))
    runtime.start()
    try:
        checked = {key: call("shard_health", shard=shard) for key, shard in (("s1", "09"),
                                                                            ("s2", "07"))}
        for key, fc in checked.items():
            await runtime.send_message(fc, AgentId("tools", key))
            assert rippl.get(action_of(key, fc)).executed_at is not None  # from its response
        rippl.retract(result_of(checked["s1"], "shard 09: ok"), reason="stale", by="monitor")
        with pytest.raises(ToolVetoedException, match="stale"):
            await runtime.send_message(call("migrate_tables", **TO_09), AgentId("tools", "s1"))
        moved = await runtime.send_message(call("migrate_tables", **TO_07), AgentId("tools", "s2"))
        assert not moved.is_error
        assert ops.ran == [("shard_health", {"shard": "09"}), ("shard_health", {"shard": "07"}),
                           ("migrate_tables", TO_07)]
    finally:
        await asyncio.wait_for(runtime.stop(), timeout=30)
