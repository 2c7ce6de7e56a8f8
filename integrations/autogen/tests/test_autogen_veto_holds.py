"""A veto holds in real AutoGen agents (scripted models that try to get the call through, a real
graph, both backends): the agent repeats the vetoed call (identical, keys reordered, a float for
an int), its model context trims the tool result but keeps its own reply, or another agent hands
the reading over (an agent used as a tool, a team mate, a nested team). Only a person lifts the
veto: a reinstatement, or an approved one-call override. Rippl notices: a stale reading is denied
until the agent reads again, and another run's differing re-read supersedes a pending plan."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_agentchat.tools import AgentTool, TeamTool
from autogen_core.model_context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    HeadAndTailChatCompletionContext,
)
from autogen_core.models import CreateResult, FunctionExecutionResultMessage, LLMMessage
from autogen_core.tools import FunctionTool, StaticStreamWorkbench
from autogen_helpers import (
    Scripted,
    Step,
    action_of,
    agent,
    calls,
    fc,
    health_claim,
    retract_health,
    then,
    vetoes,
)
from rippl_autogen import Guard, RipplModelClient, RipplWorkbench, register_rippl
from rippl_autogen.runs import Turn

from rippl_core import AsyncRippl, Rippl, ToolCall
from rippl_core.testing import Clock

pytestmark = pytest.mark.asyncio(loop_scope="session")



@dataclass
class Ops:
    """The agents' tools: a health read and a migration; every execution is recorded."""

    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    health: str = "healthy"

    def get_health_tool(self) -> FunctionTool:
        async def get_health(shard: str) -> str:
            """Read a shard's health."""
            self.ran.append(("get_health", {"shard": shard}))
            return f"shard {shard}: {self.health}"

        return FunctionTool(get_health, description="Read a shard's health.")

    def migrate_tool(self) -> FunctionTool:
        async def migrate(shard: str, batch: int = 100) -> str:
            """Migrate billing to a shard, `batch` rows at a time."""
            self.ran.append(("migrate", {"shard": shard, "batch": batch}))
            return f"migrated to {shard}"

        return FunctionTool(migrate, description="Migrate billing to a shard.")

    def tools(self) -> list[FunctionTool]:
        return [self.get_health_tool(), self.migrate_tool()]

    def migrations(self) -> list[str]:
        return [args["shard"] for name, args in self.ran if name == "migrate"]


# ------------------------------------------------------------------------------ repeats


async def test_an_agent_cannot_repeat_its_way_past_a_veto(rippl: Rippl, arippl: AsyncRippl) -> None:
    ops = Ops()
    m1 = fc("migrate", shard="09", batch=100)

    def reinstate() -> None:
        rippl.reinstate(health_claim(rippl), reason="the cache was right", by="oncall")

    model = Scripted(
        calls(fc("get_health", shard="09")),
        then(retract_health(rippl), calls(m1)),
        calls(fc("migrate", shard="09", batch=100)),            # identical
        calls(fc("migrate", batch=100, shard="09")),            # keys reordered
        calls(fc("migrate", shard="09", batch=100.0)),          # a float for the int
        calls(fc("migrate", shard="07", batch=100)),            # a new plan
        then(reinstate, calls(fc("migrate", shard="09", batch=100))),  # once reinstated
        "done")
    ops_agent = agent("ops", model, ops.tools())
    register_rippl(ops_agent, arippl, run="R1", memory=False)
    result = await ops_agent.run(task="move billing")
    assert ops.migrations() == ["07", "09"]  # the re-plan, then the repeat once reinstated
    said = vetoes(result.messages)
    assert len(said) == 4  # m1, and each of its three repeats
    assert all("repeats the call vetoed at turn" in v for v in said[1:])
    assert all(action_of("R1/ops", m1) not in v or "repeats" in v for v in said[1:])


async def test_only_an_approved_override_lets_the_call_run_once(rippl: Rippl,
                                                                arippl: AsyncRippl) -> None:
    ops = Ops()
    m1 = fc("migrate", shard="09", batch=100)  # as the tool receives it: the action's arguments
    proposals: list[str] = []

    def overridden() -> None:
        proposal = rippl.override(action_of("R2/ops", m1), reason="checked the shard by hand",
                                  by="agent:ops")
        proposals.append(proposal.id)
        rippl.approve(proposal.id, by="oncall")

    model = Scripted(
        calls(fc("get_health", shard="09")),
        then(retract_health(rippl), calls(m1)),
        then(overridden, calls(fc("migrate", shard="09"))),  # runs, once
        calls(fc("migrate", shard="09")),                      # vetoed again
        "done")
    ops_agent = agent("ops", model, ops.tools())
    register_rippl(ops_agent, arippl, run="R2", memory=False)
    result = await ops_agent.run(task="move billing")
    assert ops.migrations() == ["09"]
    assert len(vetoes(result.messages)) == 2  # m1 and the call after the override was taken
    assert rippl.compensations() == []  # it ran under the override
    [override] = rippl.overrides()
    assert override.approved_by == "oncall" and override.executed_at is not None


@pytest.mark.parametrize("where", ["tool_settings", "the tool's metadata"])
async def test_repeat_scope_tool(rippl: Rippl, arippl: AsyncRippl, where: str) -> None:
    ops = Ops()
    tools = ops.tools()
    settings = {"migrate": {"repeat_scope": "tool"}}
    if where == "the tool's metadata":
        setattr(tools[1], "metadata", {"rippl": settings["migrate"]})  # noqa: B010
    model = Scripted(
        calls(fc("get_health", shard="09")),
        then(retract_health(rippl), calls(fc("migrate", shard="09"))),
        calls(fc("migrate", shard="07")),  # any migration now repeats it
        "done")
    ops_agent = agent("ops", model, tools)
    register_rippl(ops_agent, arippl, run=f"R3-{len(where)}", memory=False,
                   tool_settings=settings if where == "tool_settings" else None)
    result = await ops_agent.run(task="move billing")
    assert ops.migrations() == []
    assert "repeats the call vetoed" in vetoes(result.messages)[-1]


# ------------------------------------------------------------------------------ text carries it


def trimmed(kind: str, keep: str) -> ChatCompletionContext:
    """A model context that, on the user's second message, has trimmed the health read: it keeps
    the model's own reply ("own text") or nothing of that exchange ("nothing")."""
    if kind == "buffered":
        return BufferedChatCompletionContext(buffer_size=2 if keep == "own text" else 1)
    return HeadAndTailChatCompletionContext(head_size=1, tail_size=2 if keep == "own text" else 1)


@pytest.mark.parametrize("kind", ["buffered", "head and tail"])
@pytest.mark.parametrize("keep", ["own text", "nothing"])
async def test_a_trimmed_reading_held_only_by_the_models_own_text(rippl: Rippl, arippl: AsyncRippl,
                                                                  kind: str, keep: str) -> None:
    ops = Ops()
    model = Scripted(
        calls(fc("get_health", shard="09")),
        "Shard 09 is healthy, a safe target.",
        then(retract_health(rippl), calls(fc("migrate", shard="09"))),
        "done")
    ops_agent = agent("ops", model, ops.tools(), model_context=trimmed(kind, keep))
    register_rippl(ops_agent, arippl, run=f"T-{kind[0]}-{keep[0]}", memory=False)
    await ops_agent.run(task="is 09 a safe target?")
    result = await ops_agent.run(task="go ahead, move billing")
    shown = model.create_calls[2]["messages"]
    assert not any(isinstance(m, FunctionExecutionResultMessage) for m in shown)  # trimmed
    assert any("Shard 09 is healthy" in str(m.content) for m in shown) == (keep == "own text")
    if keep == "own text":  # the reading survives only in the model's own words: still vetoed
        assert ops.migrations() == [] and vetoes(result.messages)
    else:  # every carrier is gone: the call rests on nothing retracted
        assert ops.migrations() == ["09"] and not vetoes(result.messages)


# ------------------------------------------------------------------------------ hand-overs


def researcher(ops: Ops, name: str = "researcher") -> AssistantAgent:
    return agent(name, Scripted(calls(fc("get_health", shard="09")),
                                "Shard 09 is healthy: a safe target."), [ops.get_health_tool()])


async def handed_over(rippl: Rippl, arippl: AsyncRippl, how: str, run: str, ops: Ops,
                      retract: bool) -> Any:
    """The researcher reads shard 09's health and reports; the operator, given the report (as
    the output of the researcher used as a tool, as a team mate's message, or from a nested
    team), migrates to 09 (after the reading was retracted, when `retract`)."""
    act: CreateResult | Step = calls(fc("migrate", shard="09"))
    if retract:
        act = then(retract_health(rippl), act)
    if how in ("agent as a tool", "team as a tool"):
        research = researcher(ops)
        register_rippl(research, arippl, memory=False)  # its run: the calling run's scope
        tool: Any = AgentTool(research) if how == "agent as a tool" else TeamTool(
            RoundRobinGroupChat([research], max_turns=1), name="researcher",
            description="Researches shards.", return_value_as_last_message=True)
        operator = agent("operator", Scripted(calls(fc("researcher", task="is 09 healthy?")), act,
                                              "done"),
                         [tool, ops.migrate_tool()])
        register_rippl(operator, arippl, run=run, memory=False)
        return await operator.run(task="move billing to a healthy shard")
    operator = agent("operator", Scripted(act, "done. TERMINATE"), [ops.migrate_tool()])
    first: Any = researcher(ops)
    if how == "nested team":
        first = RoundRobinGroupChat([first], name="research_team", max_turns=1)
    team = RoundRobinGroupChat([first, operator], termination_condition=(
        TextMentionTermination("TERMINATE") | MaxMessageTermination(12)))
    register_rippl(team, arippl, memory=False)  # no run=: the team's id is the scope
    return await team.run(task="move billing to a healthy shard")


@pytest.mark.parametrize("how", ["agent as a tool", "team as a tool", "team mate", "nested team"])
async def test_a_call_resting_on_a_handed_over_reading_is_vetoed(rippl: Rippl, arippl: AsyncRippl,
                                                                 how: str) -> None:
    ops = Ops()
    result = await handed_over(rippl, arippl, how, f"H-{len(how)}", ops, retract=True)
    assert ops.ran == [("get_health", {"shard": "09"})]  # the migration never ran
    [veto] = vetoes(result.messages)
    # the trail names both runs: where the reading was, and where the call was made
    assert "from run " in veto and "/researcher" in veto.split("from run ")[1]
    assert "/operator" in veto.split("into run ")[1].split(" from run ")[0]
    assert health_claim(rippl) in veto and "HND-" in veto


@pytest.mark.parametrize("how", ["agent as a tool", "team as a tool", "team mate", "nested team"])
async def test_what_ran_on_a_handed_over_reading_is_a_compensation(rippl: Rippl,
                                                                   arippl: AsyncRippl,
                                                                   how: str) -> None:
    ops = Ops()
    await handed_over(rippl, arippl, how, f"HC-{len(how)}", ops, retract=False)
    assert ops.migrations() == ["09"]
    retract_health(rippl)()
    [owed] = rippl.compensations()
    assert owed.tool == "migrate" and owed.run is not None and owed.run.endswith("/operator")
    handed = next(n for n in owed.blockers[0].trail if n.startswith("HND-"))
    assert "/researcher carried it" in rippl.get(handed).text


async def test_after_a_veto_on_a_handed_over_reading_a_new_plan_is_allowed(
        rippl: Rippl, arippl: AsyncRippl) -> None:
    """The operator rests on shard 09's reading two ways: its own read, and the researcher's
    report. The veto it read named the reading: the re-plan rests on it by neither path, though
    the report that carries it is still in the operator's input."""
    ops = Ops()
    operator = agent("operator", Scripted(
        calls(fc("get_health", shard="09")),  # the same reading, read again: the same claim
        then(retract_health(rippl), calls(fc("migrate", shard="09"))),
        calls(fc("migrate", shard="09")),  # the same call: still vetoed
        calls(fc("migrate", shard="07")),  # a new plan: allowed
        "done. TERMINATE"), ops.tools())
    team = RoundRobinGroupChat([researcher(ops), operator], termination_condition=(
        TextMentionTermination("TERMINATE") | MaxMessageTermination(12)))
    register_rippl(team, arippl, memory=False)
    result = await team.run(task="move billing to a healthy shard")
    assert ops.migrations() == ["07"]
    first, repeat = vetoes(result.messages)
    assert health_claim(rippl) in first and "repeats the call vetoed at turn" in repeat


async def test_a_hand_over_that_cannot_be_recorded_fails_closed(rippl: Rippl, arippl: AsyncRippl,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """The researcher's report cannot be recorded as handed over (a write lost): the tool result
    carrying it is then a message Rippl cannot account for, so the operator's call still rests on
    the researcher's reading (and on everything its scope carried)."""
    from rippl_core.adapters import Capture

    written = Capture.awrote

    async def lost(self: Capture, ref: str, **kwargs: Any) -> bool:
        return False if kwargs.get("kind") == "handover" else await written(self, ref, **kwargs)

    monkeypatch.setattr(Capture, "awrote", lost)
    ops = Ops()
    result = await handed_over(rippl, arippl, "agent as a tool", "L1", ops, retract=True)
    assert ops.migrations() == []
    [veto] = vetoes(result.messages)
    assert health_claim(rippl) in veto


async def test_a_task_handed_to_an_agent_used_as_a_tool_carries_the_callers_premises(
        rippl: Rippl, arippl: AsyncRippl) -> None:
    """The other way: the operator reads shard 09's health and hands the migration to a migrator
    agent (used as a tool) in the task it writes; the migrator's call rests on what the operator's
    turn rested on, so once the reading is retracted it is vetoed, naming both runs."""
    ops = Ops()
    migrator = agent("migrator", Scripted(then(retract_health(rippl), calls(fc("migrate", shard="09"))),
                                          "could not migrate"), [ops.migrate_tool()])
    register_rippl(migrator, arippl, memory=False)
    operator = agent("operator", Scripted(
        calls(fc("get_health", shard="09")),
        calls(fc("migrator", task="Shard 09 is healthy: migrate billing to shard 09.")), "done"),
        [ops.get_health_tool(), AgentTool(migrator, return_value_as_last_message=True)])
    register_rippl(operator, arippl, run="D1", memory=False)
    result = await operator.run(task="move billing to a healthy shard")
    assert ops.migrations() == []
    [veto] = vetoes(result.messages)  # the migrator's, streamed through the operator's run
    assert "into run D1/migrator from run D1/operator" in veto and health_claim(rippl) in veto


# ------------------------------------------------------------------------------ Rippl notices


async def test_a_stale_reading_is_denied_until_the_agent_reads_again(rippl: Rippl,
                                                                    arippl: AsyncRippl) -> None:
    """Freshness set per tool: the agent's migration, after 12 minutes, is denied as stale (not
    retracted); the model reads again and the next turn is allowed."""
    ops = Ops()
    with Clock("2026-12-01T10:00:00Z") as clock:
        def later(_: Sequence[LLMMessage]) -> CreateResult:
            clock.advance(minutes=12)
            return calls(fc("migrate", shard="09"))

        def reread(messages: Sequence[LLMMessage]) -> CreateResult:
            said = vetoes([_events(messages)])
            assert "stale" in said[-1] and "read it again" in said[-1].lower()
            return calls(fc("get_health", shard="09"))

        model = Scripted(calls(fc("get_health", shard="09")), later, reread,
                         calls(fc("migrate", shard="09")), "done")
        ops_agent = agent("ops", model, ops.tools())
        register_rippl(ops_agent, arippl, run="N1", memory=False,
                       tool_settings={"get_health": {"fresh_for": 300}})
        await ops_agent.run(task="move billing")
    assert ops.migrations() == ["09"]  # the second, on the fresh reading
    assert rippl.reviews(None) == [] and rippl.compensations() == []


def _events(messages: Sequence[LLMMessage]) -> Any:
    """The model's tool results as one ToolCallExecutionEvent (for `vetoes`)."""
    from autogen_agentchat.messages import ToolCallExecutionEvent

    return ToolCallExecutionEvent(source="ops", content=[
        r for m in messages if isinstance(m, FunctionExecutionResultMessage) for r in m.content])


class Paused(RipplModelClient):
    """A model-client wrapper that, once a turn is decided and before its calls run, lets
    something else happen (another agent works meanwhile: the plan is pending)."""

    meanwhile: Callable[[], Awaitable[Any]] | None = None

    async def decide(self, messages: Sequence[LLMMessage], result: CreateResult) -> Turn | None:
        turn = await super().decide(messages, result)
        if turn is not None and self.meanwhile is not None:
            meanwhile, self.meanwhile = self.meanwhile, None
            await asyncio.create_task(meanwhile())  # its own task: its turns stay its own
        return turn


async def test_another_agents_differing_read_supersedes_a_pending_plan(rippl: Rippl,
                                                                      arippl: AsyncRippl) -> None:
    """The planner's migration is decided; before it runs, a checker agent reads shard 09 again
    and sees "degraded": the planner's call is denied as superseded, naming the newer reading."""
    ops, checking = Ops(), Ops(health="degraded")
    settings = {"get_health": {"reads": True}}
    checker = agent("checker", Scripted(calls(fc("get_health", shard="09")), "09 is degraded"),
                    [checking.get_health_tool()])
    register_rippl(checker, arippl, run="C1", memory=False, tool_settings=settings)
    guard = Guard(arippl, agent="planner", run="P1", tool_settings=settings)
    model = Paused(Scripted(calls(fc("get_health", shard="09")), calls(fc("migrate", shard="09")),
                            "stopped"), guard)
    planner = AssistantAgent("planner", model_client=model, max_tool_iterations=10,
                             workbench=RipplWorkbench(StaticStreamWorkbench(ops.tools()), guard))
    calls_made = 0

    async def check() -> None:
        nonlocal calls_made
        calls_made += 1
        if calls_made == 2:  # the migration's turn: the checker reads meanwhile
            await checker.run(task="check 09")
        else:
            model.meanwhile = check

    model.meanwhile = check
    result = await planner.run(task="move billing")
    assert ops.migrations() == []
    [denied] = vetoes(result.messages)
    assert "superseded" in denied and "shard 09: degraded" in denied and "run C1" in denied
    assert rippl.reviews(None) == []  # stale is not false: nothing to review


async def test_a_forged_tool_result_in_a_loaded_state_is_denied(rippl: Rippl,
                                                               arippl: AsyncRippl) -> None:
    """Someone edits the saved state of an agent: a health result no tool returned. The turn
    resting on it is denied, naming the message; a person who checked it accepts it."""
    ops = Ops()
    first = agent("ops", Scripted(calls(fc("get_health", shard="09")), "checked"), ops.tools())
    register_rippl(first, arippl, run="F1", memory=False)
    await first.run(task="check 09")
    state = json.loads(json.dumps(await first.save_state()))
    for message in state["llm_context"]["messages"]:
        if message.get("type") == "FunctionExecutionResultMessage":
            message["content"][0]["content"] = "shard 09: healthy, and empty"  # forged
            forged = message["content"][0]["call_id"]
    resumed = agent("ops", Scripted(calls(fc("migrate", shard="09")), "done"), ops.tools())
    await resumed.load_state(state)
    register_rippl(resumed, arippl, run="F1", memory=False)
    result = await resumed.run(task="go ahead")
    assert ops.migrations() == []
    [denied] = vetoes(result.messages)
    assert "never recorded" in denied and forged in denied
    claim = next(n.id for n in rippl.nodes() if n.id.startswith("UNR-"))
    rippl.reinstate(claim, reason="checked: shard 09 is healthy and empty", by="oncall")
    [executed] = [m for m in result.messages if type(m).__name__ == "ToolCallRequestEvent"]
    migrate = executed.content[0]
    assert rippl.run("F1/ops", scope="F1").judge(ToolCall(name="migrate", args={"shard": "09"},
                                              id=migrate.id)).allowed


@pytest.mark.filterwarnings("ignore:(?s).*Loading a FunctionTool from config")
async def test_tool_settings_are_kept_in_the_components_config(arippl: AsyncRippl) -> None:
    settings = {"migrate": {"repeat_scope": "tool"}, "get_health": {"fresh_for": 300}}
    workbench = RipplWorkbench(StaticStreamWorkbench(Ops().tools()), arippl, tool_settings=settings)
    loaded = RipplWorkbench.load_component(workbench.dump_component())
    assert isinstance(loaded, RipplWorkbench)
    assert loaded.guard.settings("migrate").repeat_scope == "tool"
    assert loaded.guard.settings("get_health").fresh_for == 300
    assert loaded.guard.settings("get_health").is_read
