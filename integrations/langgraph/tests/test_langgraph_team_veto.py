"""A veto binds the team, in any spelling, in real LangGraph graphs (scripted models, FalkorDB
checkpoints, both backends): a worker vetoed on `migrate(shard="09")` hands the task on, through
a `langgraph-supervisor` supervisor, a `Command(graph=Command.PARENT)` handoff, or a `Send`, and the
next worker's identical call (defaults spelled out, a number quoted) stays vetoed, naming the
original veto; a different act runs; a reinstatement lets it through. Within one agent, the same
call spelt as the tool will receive it is the same act."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.graph import START, StateGraph
from langgraph.types import Command, Send
from langgraph_helpers import State, health_claim, retract_health, then, thread
from langgraph_supervisor import create_supervisor
from rippl_langgraph import VETO_PREFIX, FalkorDBSaver, RipplMiddleware
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import Rippl

# langgraph-supervisor builds its supervisor with the deprecated create_react_agent (its own use)
pytestmark = pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")


@dataclass
class Ops:
    """The workers' tools; every migration that ran is recorded."""

    ran: list[dict[str, Any]] = field(default_factory=list)

    def tools(self) -> list[BaseTool]:
        ran = self.ran

        @tool
        def get_health(shard: str) -> str:
            """Read a shard's health."""
            return f"shard {shard}: healthy"

        @tool
        def migrate(shard: str, rows: int = 100, dry_run: bool = False) -> str:
            """Migrate billing onto a shard, `rows` at a time."""
            ran.append({"shard": shard, "rows": rows, "dry_run": dry_run})
            return f"migrated to {shard}"

        return [get_health, migrate]

    def shards(self) -> list[str]:
        return [r["shard"] for r in self.ran]


def lead_script(rippl: Rippl, *tail: Any) -> list[Any]:
    """The first worker: reads the health, (the reading is retracted), is vetoed on migrate 09,
    then hands over (`tail`) or says so."""
    return [calls(tool_call("get_health", {"shard": "09"}, "h1")),
            then(retract_health(rippl), calls(tool_call("migrate", {"shard": "09"}, "m1"))),
            *(tail or [AIMessage("I could not migrate shard 09: Rippl vetoed it.")])]


# every spelling of the act the lead was refused, as a model may send it
SPELLINGS = [{"shard": "09"}, {"shard": "09", "dry_run": False},
             {"shard": "09", "rows": 100, "dry_run": False}, {"shard": "09", "rows": "100"}]


def helper_script(ids: str) -> list[Any]:
    """The team mate: the same act in every spelling, then a different one."""
    return [*(calls(tool_call("migrate", args, f"{ids}{n}")) for n, args in enumerate(SPELLINGS)),
            calls(tool_call("migrate", {"shard": "07"}, f"{ids}-07")), AIMessage("done")]


def vetoes(messages: list[BaseMessage]) -> dict[str, str]:
    return {m.tool_call_id: str(m.content) for m in messages
            if isinstance(m, ToolMessage) and str(m.content).startswith(VETO_PREFIX)}


def worker(rippl: Rippl, name: str, script: list[Any] | ScriptedChatModel, ops: Ops) -> Any:
    model = script if isinstance(script, ScriptedChatModel) else ScriptedChatModel(script=script)
    return create_agent(model, ops.tools(), middleware=[RipplMiddleware(rippl)], name=name)


def check_held(ops: Ops, helper: ScriptedChatModel, prefix: str, lead: str) -> None:
    """What the team mate read back for each spelling of the act: the veto, naming the lead's."""
    found = vetoes(helper.seen[-1])
    held = [found.get(f"{prefix}{n}", "") for n in range(len(SPELLINGS))]
    assert all(f"of run {lead}" in v and "vetoed at turn" in v for v in held), held
    assert ops.shards() == ["07"]  # only the different act ran


def re_assigned(rippl: Rippl, saver: FalkorDBSaver, output_mode: Literal["full_history", "last_message"],
                run: str) -> tuple[Ops, ScriptedChatModel]:
    """A `langgraph-supervisor` supervisor (its `output_mode`) hands "move billing to 09" to
    worker1, the lead, then to worker2, the team mate; returns the tools and the team mate's
    model."""
    ops = Ops()
    supervisor = create_supervisor(
        [worker(rippl, "worker1", lead_script(rippl), ops),
         worker(rippl, "worker2", helper := ScriptedChatModel(script=helper_script("w2-")), ops)],
        model=ScriptedChatModel(script=[calls(tool_call("transfer_to_worker1", {}, "s1")),
                                        calls(tool_call("transfer_to_worker2", {}, "s2")),
                                        AIMessage("finished")]),
        output_mode=output_mode).compile(checkpointer=saver)
    supervisor.invoke({"messages": [HumanMessage("move billing to 09")]}, thread(run))
    return ops, helper


def test_a_supervisor_re_assigning_the_vetoed_task_does_not_lift_the_veto(
        rippl: Rippl, saver: FalkorDBSaver) -> None:
    ops, helper = re_assigned(rippl, saver, "full_history", "S")
    check_held(ops, helper, "w2-", "S/worker1")


def test_a_supervisor_handing_over_only_the_last_message_does_not_lift_it(
        rippl: Rippl, saver: FalkorDBSaver) -> None:
    """The supervisor sees only the worker's reply (written after it read its veto): the reply
    carries the veto's binding to the next worker."""
    ops, helper = re_assigned(rippl, saver, "last_message", "L")
    check_held(ops, helper, "w2-", "L/worker1")
    rippl.reinstate(health_claim(rippl), reason="the cache was right", by="oncall")
    assert all(rippl.check(a.action).allowed for a in rippl.run_trace("L/worker2").calls
               if a.args.get("shard") == "09")  # a person lifted it, for the whole team


@tool
def hand_to_operator(task: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Hand the task to the operator agent."""
    return Command(goto="operator", graph=Command.PARENT, update={"messages": [
        ToolMessage(f"handed over: {task}", tool_call_id=tool_call_id)]})


def test_a_command_parent_handoff_after_the_veto_does_not_lift_it(
        rippl: Rippl, saver: FalkorDBSaver) -> None:
    ops = Ops()
    lead = create_agent(
        ScriptedChatModel(script=lead_script(
            rippl, calls(tool_call("hand_to_operator", {"task": "migrate billing to 09"}, "x1")))),
        [*ops.tools(), hand_to_operator], middleware=[RipplMiddleware(rippl)], name="lead")
    helper = ScriptedChatModel(script=helper_script("op-"))
    builder = StateGraph(State)
    builder.add_node("lead", lead, destinations=("operator",))
    builder.add_node("operator", worker(rippl, "operator", helper, ops))
    builder.add_edge(START, "lead")
    app = builder.compile(checkpointer=saver)
    app.invoke({"messages": [HumanMessage("move billing to 09")]}, thread("C"))
    check_held(ops, helper, "op-", "C/lead")


def test_a_send_of_the_task_after_the_veto_does_not_lift_it(
        rippl: Rippl, saver: FalkorDBSaver) -> None:
    """The lead's graph fans the task out with `Send`: the operator gets the lead's messages
    (its veto among them) as its input."""
    ops = Ops()
    helper = ScriptedChatModel(script=helper_script("op-"))

    def fan_out(state: State) -> list[Send]:
        return [Send("operator", {"messages": state["messages"]})]

    builder = StateGraph(State)
    builder.add_node("lead", worker(rippl, "lead", lead_script(rippl), ops))
    builder.add_node("operator", worker(rippl, "operator", helper, ops))
    builder.add_edge(START, "lead")
    builder.add_conditional_edges("lead", fan_out, ["operator"])
    app = builder.compile(checkpointer=saver)
    app.invoke({"messages": [HumanMessage("move billing to 09")]}, thread("N"))
    check_held(ops, helper, "op-", "N/lead")


def test_one_agent_spelling_its_vetoed_call_another_way_stays_vetoed(
        rippl: Rippl, saver: FalkorDBSaver) -> None:
    """Defaults spelled out, a number quoted: the tool would receive exactly the vetoed call's
    arguments, so it is the same act (compared after the tool's own validation)."""
    ops = Ops()
    model = ScriptedChatModel(script=[*lead_script(rippl)[:2], *helper_script("r-")])
    agent = create_agent(model, ops.tools(), middleware=[RipplMiddleware(rippl)],
                         checkpointer=saver)
    agent.invoke({"messages": [HumanMessage("move billing to 09")]}, thread("R"))
    found = vetoes(model.seen[-1])
    assert all("repeats the call vetoed at turn" in found[f"r-{n}"] for n in range(len(SPELLINGS)))
    assert ops.shards() == ["07"]


def test_what_a_turn_rested_on_is_found_whatever_the_model_spelt(
        rippl: Rippl, saver: FalkorDBSaver) -> None:
    """The turn is recorded with its calls as the tool receives them (defaults filled): reading
    back what it rested on from a checkpoint finds it all the same."""
    from rippl_langgraph import RipplStore

    ops = Ops()
    model = ScriptedChatModel(script=[calls(tool_call("get_health", {"shard": "07"}, "h1")),
                                      calls(tool_call("migrate", {"shard": "07"}, "m1")),
                                      AIMessage("done")])
    agent = create_agent(model, ops.tools(), middleware=[RipplMiddleware(rippl)],
                         checkpointer=saver)
    agent.invoke({"messages": [HumanMessage("move billing to 07")]}, thread("P"))
    step = RipplStore(rippl, checkpointer=saver).premises_at_checkpoint(
        agent.get_state(thread("P")).config)
    assert step is not None and [c["args"] for c in step.calls] == [{"shard": "07"}]
    assert any(text.startswith('get_health({"shard":"07"}) returned')
               for text in (n.text for n in step.premises))
    [call] = [c for c in rippl.run_trace("P").calls if c.tool == "migrate"]
    assert call.args == {"shard": "07", "rows": 100, "dry_run": False}  # as the tool received it
