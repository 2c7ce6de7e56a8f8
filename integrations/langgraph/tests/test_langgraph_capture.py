"""Provenance capture in real LangGraph graphs (scripted models, FalkorDB checkpoints, both
backends): nothing is declared in the premise graph; what the run read is what its calls rest on."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    HumanInTheLoopMiddleware,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_store
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command
from langgraph_helpers import Recording, State, migrate_tables, thread, tool_messages
from rippl_langgraph import (
    VETO_PREFIX,
    FalkorDBSaver,
    RipplMiddleware,
    RipplStore,
    add_preflight,
    guarded_tool_node,
    run_id,
)
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import AsyncRippl, InvalidInputError, Rippl
from rippl_core.testing import start_falkordb_server

HEALTH_09 = tool_call("get_shard_health", {"shard": "09"}, "health-09")
ANNOUNCE = tool_call("announce_window", {"shard": "09", "window": "Sat 02:00"}, "announce-09")
MIGRATE_09 = tool_call("migrate_tables", {"table": "billing", "shard": "09"}, "migrate-09")
MIGRATE_07 = tool_call("migrate_tables", {"table": "billing", "shard": "07"}, "migrate-07")
STALE = "served from a stale cache"


@dataclass
class Ops(Recording):
    """Tools no action of the graph describes; every execution is recorded here."""

    barrier: threading.Barrier | None = None

    def tools(self) -> list[BaseTool]:
        barrier = self.barrier

        @tool
        def get_shard_health(shard: str) -> str:
            """Read a shard's health."""
            if barrier is not None:
                barrier.wait(timeout=20)  # concurrent runs: both are mid-flight together
            return f"shard {shard}: healthy (replica r3)"

        @tool
        def announce_window(shard: str, window: str) -> str:
            """Announce a maintenance window."""
            return f"window on {shard} announced for {window}"

        return [self.recorded(run) for run in (get_shard_health, announce_window, migrate_tables)]


def vetoed(messages: list[BaseMessage]) -> bool:
    last = [m for m in messages[-3:] if isinstance(m, ToolMessage)]
    return any(str(m.content).startswith(VETO_PREFIX) for m in last)


def replan(messages: list[BaseMessage]) -> AIMessage:
    """After the migration: move to 07 if it was vetoed, else finish."""
    return calls(MIGRATE_07) if vetoed(messages) else AIMessage("done on 09")


STORY = [calls(HEALTH_09), calls(ANNOUNCE), calls(MIGRATE_09), replan, AIMessage("done on 07")]


def agent_node(model: ScriptedChatModel, trim: Callable[[list[BaseMessage]], list[Any]] | None = None) -> Any:
    def agent(state: State) -> dict[str, list[Any]]:
        removed = trim(state["messages"]) if trim else []
        kept = [m for m in state["messages"] if m.id not in {r.id for r in removed}]
        return {"messages": [*removed, model.invoke(kept)]}

    async def aagent(state: State) -> dict[str, list[Any]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    return RunnableLambda(agent, afunc=aagent, name="agent")


def react(model: ScriptedChatModel, tools: Any, trim: Any = None) -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("agent", agent_node(model, trim))
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


def preflight_app(memory: Rippl | AsyncRippl, ops: Ops, script: list[Any], saver: BaseCheckpointSaver,
                  **compile_options: Any) -> Any:
    model = ScriptedChatModel(script=script)
    builder = add_preflight(react(model, ToolNode(ops.tools())), memory=memory)
    return builder.compile(checkpointer=saver, **compile_options)


def health_claim(store: RipplStore, app: Any, config: dict[str, Any]) -> str:
    """The claim of the captured health read: a premise of a step of the thread."""
    for snapshot in app.get_state_history(config):
        step = store.premises_at_checkpoint(snapshot.config)
        for node in step.premises if step else ():
            if node.text.startswith('get_shard_health({"shard":"09"}) returned'):
                return node.id
    raise AssertionError("no step rested on the health read")


def retract(memory: Rippl, claim: str) -> None:
    review = memory.propose_retraction(claim, reason=STALE, by="replica-monitor")
    memory.approve(review.id, by="oncall")


def owed(memory: Rippl) -> list[tuple[str | None, str | None]]:
    """(run, call id) of every compensation."""
    return sorted((c.run, c.call_id) for c in memory.compensations())


# ------------------------------------------------------------------------------------ run ids


def test_run_ids_are_the_thread_and_the_graph_path() -> None:
    node = {"configurable": {"thread_id": "T1", "checkpoint_ns": "ops_team:4f5e|rippl_preflight:7f42"}}
    assert run_id(node) == "T1/ops_team"
    assert run_id({"configurable": {"thread_id": "T1", "checkpoint_ns": "tools:5af4"}}) == "T1"
    assert run_id({"configurable": {"thread_id": "T1", "checkpoint_ns": "ops_team:4f5e"}},
                  node=False) == "T1/ops_team"
    assert run_id({"configurable": {"thread_id": 7}}) == "7"
    long = run_id({"configurable": {"thread_id": "x" * 300}})
    assert long.startswith("lg-") and long == run_id({"configurable": {"thread_id": "x" * 300}})
    with pytest.raises(InvalidInputError, match="thread_id"):
        run_id({"configurable": {"checkpoint_ns": "tools:1"}})


# ------------------------------------------------------------------------------------ capture


@pytest.mark.parametrize("hook", ["preflight", "toolnode"])
def test_capture_by_default_records_turns_results_and_executions(rippl: Rippl, saver: FalkorDBSaver,
                                                                  hook: str) -> None:
    ops = Ops()
    model = ScriptedChatModel(script=[calls(HEALTH_09), calls(ANNOUNCE), calls(MIGRATE_09), "done"])
    if hook == "preflight":
        builder = add_preflight(react(model, ToolNode(ops.tools())), memory=rippl)
    else:  # the ToolNode alone records each turn when its first call runs
        builder = react(model, guarded_tool_node(ops.tools(), rippl))
    store = RipplStore(rippl, checkpointer=saver)
    app = builder.compile(checkpointer=saver, store=store)
    app.invoke({"messages": [HumanMessage("move billing")]}, thread("T1"))
    assert ops.names() == ["get_shard_health", "announce_window", "migrate_tables"]

    claim = health_claim(store, app, thread("T1"))
    latest = store.premises_at_checkpoint(app.get_state(thread("T1")).config)
    assert latest is not None and latest.run == "T1" and latest.calls[0]["id"] == "migrate-09"
    assert claim in latest.claims()  # the migration rested on the read (and the announcement)
    retract(rippl, claim)
    assert owed(rippl) == [("T1", "announce-09"), ("T1", "migrate-09")]  # executed on it
    assert latest.claims()[claim] == "Verified"  # a snapshot: read again for the status now
    assert store.premises_at_checkpoint(app.get_state(thread("T1")).config).claims()[claim] == "Retracted"


def test_a_retraction_during_a_pause_before_the_tools_vetoes_the_call(rippl: Rippl,
                                                                     saver: FalkorDBSaver) -> None:
    """interrupt_before=["tools"]: on resume only the ToolNode runs (the preflight does not), and
    it judges the call again; the model reads the veto and re-plans without the retracted read."""
    ops = Ops()
    app = preflight_app(rippl, ops, STORY, saver, interrupt_before=["tools"])
    store = RipplStore(rippl, checkpointer=saver)
    config = thread("T1")
    app.invoke({"messages": [HumanMessage("move billing")]}, config)
    while app.get_state(config).next:
        pending = app.get_state(config).values["messages"][-1].tool_calls
        if pending[0]["id"] == "migrate-09":
            retract(rippl, health_claim(store, app, config))  # while the human looks at the plan
        app.invoke(None, config)
    assert ops.names() == ["get_shard_health", "announce_window", "migrate_tables"]
    assert ops.ran[-1] == ("migrate_tables", {"table": "billing", "shard": "07"})
    answers = tool_messages(app.get_state(config).values["messages"])
    assert answers["migrate-09"].status == "error" and STALE in answers["migrate-09"].content
    assert answers["migrate-07"].status == "success"  # told: its turn no longer rests on the read
    assert owed(rippl) == [("T1", "announce-09")]


@pytest.mark.asyncio(loop_scope="session")
async def test_a_retraction_during_a_pause_async(incident: Rippl, arippl: AsyncRippl,
                                                 asaver: Any) -> None:
    ops = Ops()
    app = preflight_app(arippl, ops, STORY, asaver, interrupt_before=["tools"])
    store = RipplStore(arippl, checkpointer=asaver)
    config = thread("T1")
    await app.ainvoke({"messages": [HumanMessage("move billing")]}, config)
    while (state := await app.aget_state(config)).next:
        if state.values["messages"][-1].tool_calls[0]["id"] == "migrate-09":
            step = await store.apremises_at_checkpoint(state.config)
            assert step is not None
            [claim] = [n.id for n in step.premises if n.text.startswith("get_shard_health")]
            review = await arippl.propose_retraction(claim, reason=STALE, by="replica-monitor")
            await arippl.approve(review.id, by="oncall")
        await app.ainvoke(None, config)
    assert ops.ran[-1] == ("migrate_tables", {"table": "billing", "shard": "07"})
    assert ("migrate_tables", {"table": "billing", "shard": "09"}) not in ops.ran
    assert [(c.run, c.call_id) for c in await arippl.compensations()] == [("T1", "announce-09")]


def hitl_agent(memory: Rippl, ops: Ops, script: list[Any], saver: BaseCheckpointSaver,
               *, first: list[Any] | None = None) -> Any:
    model = ScriptedChatModel(script=script)
    return create_agent(model, ops.tools(), checkpointer=saver, middleware=[
        *(first or []), HumanInTheLoopMiddleware({"migrate_tables": True}), RipplMiddleware(memory)])


def test_a_retraction_during_a_human_in_the_loop_pause_vetoes_the_call(rippl: Rippl,
                                                                      saver: FalkorDBSaver) -> None:
    ops = Ops()
    agent = hitl_agent(rippl, ops, STORY, saver)
    store = RipplStore(rippl, checkpointer=saver)
    config = thread("T1")
    out = agent.invoke({"messages": [HumanMessage("move billing")]}, config, version="v2")
    assert out.interrupts and ops.names() == ["get_shard_health", "announce_window"]
    retract(rippl, health_claim(store, agent, config))  # during the human's pause
    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config, version="v2")
    assert out.interrupts  # the re-planned migration waits for the human too
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert ops.ran[-1] == ("migrate_tables", {"table": "billing", "shard": "07"})
    assert ops.names().count("migrate_tables") == 1
    answers = tool_messages(agent.get_state(config).values["messages"])
    assert answers["migrate-09"].status == "error" and STALE in answers["migrate-09"].content
    assert owed(rippl) == [("T1", "announce-09")]


def test_an_edited_call_is_judged_with_its_new_arguments(rippl: Rippl, saver: FalkorDBSaver) -> None:
    """A human edits the migration to shard 07: the edited call is an action of the same turn,
    so it rests on the same read; it runs, and its execution is recorded with the edited args."""
    ops = Ops()
    agent = hitl_agent(rippl, ops, [calls(HEALTH_09), calls(MIGRATE_09), "done"], saver)
    store = RipplStore(rippl, checkpointer=saver)
    config = thread("T1")
    agent.invoke({"messages": [HumanMessage("move billing")]}, config)
    edit = {"type": "edit", "edited_action": {"name": "migrate_tables",
                                              "args": {"table": "billing", "shard": "07"}}}
    agent.invoke(Command(resume={"decisions": [edit]}), config)
    assert ops.ran[-1] == ("migrate_tables", {"table": "billing", "shard": "07"})
    retract(rippl, health_claim(store, agent, config))
    [compensation] = rippl.compensations()
    assert compensation.call_id == "migrate-09" and compensation.args == {"table": "billing", "shard": "07"}


def test_an_edit_does_not_lift_a_veto_of_its_turn(rippl: Rippl, saver: FalkorDBSaver) -> None:
    ops = Ops()
    agent = hitl_agent(rippl, ops, [calls(HEALTH_09), calls(MIGRATE_09), "understood"], saver)
    store = RipplStore(rippl, checkpointer=saver)
    config = thread("T1")
    agent.invoke({"messages": [HumanMessage("move billing")]}, config)
    retract(rippl, health_claim(store, agent, config))
    edit = {"type": "edit", "edited_action": {"name": "migrate_tables",
                                              "args": {"table": "billing", "shard": "07"}}}
    out = agent.invoke(Command(resume={"decisions": [edit]}), config)
    assert ops.names() == ["get_shard_health"]
    assert STALE in tool_messages(out["messages"])["migrate-09"].content


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_the_in_graph_review_decides_a_captured_premise(rippl: Rippl, saver: FalkorDBSaver,
                                                        decision: str) -> None:
    """A monitor proposes retracting the captured read before the migration's turn is decided:
    the preflight pauses with the review (the captured action at risk); the human decides."""
    ops = Ops()
    model = ScriptedChatModel(script=STORY)
    builder = add_preflight(react(model, ToolNode(ops.tools())), memory=rippl, review=True,
                            reviewer="oncall")
    app = builder.compile(checkpointer=saver, interrupt_before=["rippl_preflight"])
    store = RipplStore(rippl, checkpointer=saver)
    config = thread("T1")
    app.invoke({"messages": [HumanMessage("move billing")]}, config)
    reviews = []
    while (state := app.get_state(config)).next:
        if state.interrupts:  # the preflight's review
            reviews.append(state.interrupts[0].value)
            app.invoke(Command(resume=decision), config)
            continue
        if state.values["messages"][-1].tool_calls[0]["id"] == "migrate-09":
            claim = health_claim(store, app, config)
            rippl.propose_retraction(claim, reason=STALE, by="replica-monitor")
        app.invoke(None, config)
    [request] = reviews
    assert request["reviews"][0]["claim"] == claim
    [blocked] = request["tool_calls"]
    assert blocked["id"] == "migrate-09" and blocked["action"].startswith("ACT-")
    if decision == "approve":
        assert ops.ran[-1] == ("migrate_tables", {"table": "billing", "shard": "07"})
        assert owed(rippl) == [("T1", "announce-09")]
    else:
        assert ops.ran[-1] == ("migrate_tables", {"table": "billing", "shard": "09"})
        assert owed(rippl) == []
    assert ops.names().count("migrate_tables") == 1


def test_a_replayed_turn_records_nothing_twice(rippl: Rippl, saver: FalkorDBSaver) -> None:
    ops = Ops()
    app = preflight_app(rippl, ops, [calls(HEALTH_09), calls(MIGRATE_09), "done", "done again"], saver)
    config = thread("T1")
    app.invoke({"messages": [HumanMessage("move billing")]}, config)
    before = rippl.stats()
    [fork] = [s for s in app.get_state_history(config) if s.next == ("rippl_preflight",)
              and s.values["messages"][-1].tool_calls[0]["id"] == "migrate-09"]
    app.invoke(None, fork.config)  # time travel: the preflight and the tools run that turn again
    assert ops.names() == ["get_shard_health", "migrate_tables", "migrate_tables"]
    assert rippl.stats() == before  # the same turn, call, execution and output: nothing new


@pytest.mark.parametrize("trimmed", ["nothing", "the read", "every carrier"])
def test_trimmed_history_leaves_observations_out(rippl: Rippl, saver: FalkorDBSaver,
                                                 trimmed: str) -> None:
    """An observation leaves the context only once every message carrying it is gone: trimming
    the health read (its AI and tool messages) leaves it carried by the announce turn, which read
    it; trimming that turn too takes it out."""
    def trim(messages: list[BaseMessage]) -> list[RemoveMessage]:
        """Before the migration turn, drop messages from the state."""
        if trimmed == "nothing" or not any(m.tool_call_id == "announce-09" for m in messages
                                           if isinstance(m, ToolMessage)):
            return []
        upto = 3 if trimmed == "the read" else 4  # ... and the announce turn that read it
        return [RemoveMessage(id=m.id) for m in messages[1:upto]]

    ops = Ops()
    model = ScriptedChatModel(script=[calls(HEALTH_09), calls(ANNOUNCE), calls(MIGRATE_09), "done"])
    builder = add_preflight(react(model, ToolNode(ops.tools()), trim), memory=rippl)
    store = RipplStore(rippl, checkpointer=saver)
    app = builder.compile(checkpointer=saver, store=store)
    app.invoke({"messages": [HumanMessage("move billing")]}, thread("T1"))
    assert ops.names() == ["get_shard_health", "announce_window", "migrate_tables"]
    retract(rippl, health_claim(store, app, thread("T1")))
    expected = [("T1", "announce-09")] + ([] if trimmed == "every carrier" else [("T1", "migrate-09")])
    assert owed(rippl) == expected


@pytest.mark.parametrize("last", [True, False])
def test_the_middleware_last_sees_the_model_input_after_context_editing(
        rippl: Rippl, saver: FalkorDBSaver, last: bool) -> None:
    """ContextEditingMiddleware clears old tool outputs from the model's request only. Placed last,
    RipplMiddleware sees the cleared request: the migration does not rest on the cleared read.
    Placed first, it sees the request before editing (a superset: it rests on it)."""
    ops = Ops()
    editing = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=1, keep=0)])
    model = ScriptedChatModel(script=[calls(HEALTH_09), calls(MIGRATE_09), "done"])
    rippl_mw = RipplMiddleware(rippl)
    order = [editing, rippl_mw] if last else [rippl_mw, editing]
    agent = create_agent(model, ops.tools(), checkpointer=saver, middleware=order)
    agent.invoke({"messages": [HumanMessage("move billing")]}, thread("T1"))
    assert "cleared" in str(model.seen[1][-1].content).lower()  # the model did not see the read
    store = RipplStore(rippl, checkpointer=saver)
    steps = [store.premises_at_checkpoint(s.config) for s in agent.get_state_history(thread("T1"))]
    rested_on_read = any(n.text.startswith("get_shard_health") for step in steps if step
                         for n in step.premises)
    assert rested_on_read is not last


def test_the_told_rule_through_the_middleware(rippl: Rippl, saver: FalkorDBSaver) -> None:
    """A veto read by the model (in request.messages) takes the read out of its next turn."""
    ops = Ops()
    agent = hitl_agent(rippl, ops, [calls(HEALTH_09), calls(MIGRATE_09), calls(MIGRATE_07), "done"],
                       saver)
    store = RipplStore(rippl, checkpointer=saver)
    config = thread("T1")
    agent.invoke({"messages": [HumanMessage("move billing")]}, config)
    retract(rippl, health_claim(store, agent, config))
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert ops.ran[-1] == ("migrate_tables", {"table": "billing", "shard": "07"})


@pytest.mark.parametrize("handled", [True, False])
def test_a_call_that_ran_and_failed_counts_as_executed(rippl: Rippl, saver: FalkorDBSaver,
                                                       handled: bool) -> None:
    """A tool that raised may have had effects: its execution is recorded (an error ToolMessage
    from the ToolNode, or the exception itself), so a retraction lists it for compensation."""
    ran = []

    @tool
    def drain_shard(shard: str) -> str:
        """Drain a shard's connections (fails half-way)."""
        ran.append(shard)
        raise RuntimeError("drained 40% of connections, then the pooler crashed")

    ops = Ops()
    model = ScriptedChatModel(script=[calls(HEALTH_09), calls(tool_call("drain_shard", {"shard": "09"},
                                                                         "drain-09")), "stopped"])
    tools = ToolNode([*ops.tools(), drain_shard], handle_tool_errors=handled)
    store = RipplStore(rippl, checkpointer=saver)
    app = add_preflight(react(model, tools), memory=rippl).compile(checkpointer=saver, store=store)
    if handled:
        out = app.invoke({"messages": [HumanMessage("drain 09")]}, thread("T1"))
        assert tool_messages(out["messages"])["drain-09"].status == "error"
    else:
        with pytest.raises(RuntimeError, match="pooler crashed"):
            app.invoke({"messages": [HumanMessage("drain 09")]}, thread("T1"))
    assert ran == ["09"]
    retract(rippl, health_claim(store, app, thread("T1")))
    assert owed(rippl) == [("T1", "drain-09")]


# ------------------------------------------------------------------------------------ failures


@pytest.mark.parametrize("hook", ["preflight", "toolnode", "middleware"])
def test_a_graph_that_cannot_record_denies_every_call(hook: str) -> None:
    server = start_falkordb_server()
    memory = Rippl.open(url=server.url, graph="gone")
    server.stop()  # recording fails: every call is denied, and none runs
    try:
        ops = Ops()
        model = ScriptedChatModel(script=[calls(HEALTH_09), "ok"])
        saver = InMemorySaver()
        if hook == "preflight":
            app = add_preflight(react(model, ToolNode(ops.tools())), memory=memory).compile(
                checkpointer=saver)
        elif hook == "toolnode":
            app = react(model, guarded_tool_node(ops.tools(), memory)).compile(checkpointer=saver)
        else:
            app = create_agent(model, ops.tools(), middleware=[RipplMiddleware(memory)],
                               checkpointer=saver)
        out = app.invoke({"messages": [HumanMessage("go")]}, thread("T1"))
        assert ops.ran == []
        veto = tool_messages(out["messages"])["health-09"]
        assert veto.status == "error" and "could not be recorded or checked" in veto.content
    finally:
        memory.close()


def test_a_graph_run_without_a_thread_denies_and_says_why(rippl: Rippl) -> None:
    ops = Ops()
    app = add_preflight(react(ScriptedChatModel(script=[calls(HEALTH_09), "ok"]),
                              ToolNode(ops.tools())), memory=rippl).compile()
    out = app.invoke({"messages": [HumanMessage("go")]})
    assert ops.ran == [] and "thread_id" in tool_messages(out["messages"])["health-09"].content


def test_an_execution_that_cannot_be_recorded_denies_the_runs_next_calls(saver: FalkorDBSaver) -> None:
    server = start_falkordb_server()
    memory = Rippl.open(url=server.url, graph="outage")
    ops = Ops()

    @tool
    def failover(region: str) -> str:
        """Fail the region over (the premise graph's server goes down meanwhile)."""
        ops.ran.append(("failover", {"region": region}))
        server.stop()
        return f"{region} failed over"

    try:
        model = ScriptedChatModel(script=[calls(tool_call("failover", {"region": "eu"}, "f1")),
                                          calls(MIGRATE_09), "stopped"])
        builder = add_preflight(react(model, ToolNode([*ops.tools(), failover])), memory=memory)
        out = builder.compile(checkpointer=saver).invoke({"messages": [HumanMessage("go")]}, thread())
        assert ops.names() == ["failover"]  # its execution is not on record: nothing runs after it
        veto = tool_messages(out["messages"])["migrate-09"]
        assert "could not be recorded or checked" in veto.content
    finally:
        memory.close()
        server.stop()


# ------------------------------------------------------------------------------------ runs


def by_shard(messages: list[BaseMessage]) -> AIMessage:
    """Each thread's model: read its shard's health, migrate there, finish."""
    shard = "09" if "09" in str(messages[0].content) else "07"
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return calls(tool_call("get_shard_health", {"shard": shard}, f"health-{shard}"))
    if len(results) == 1:
        return calls(tool_call("migrate_tables", {"table": "billing", "shard": shard}, f"migrate-{shard}"))
    return AIMessage("done")


def test_concurrent_runs_in_one_graph_stay_separate(rippl: Rippl, saver: FalkorDBSaver) -> None:
    ops = Ops(barrier=threading.Barrier(2))
    model = ScriptedChatModel(script=[by_shard], loop=True)
    store = RipplStore(rippl, checkpointer=saver)
    app = add_preflight(react(model, ToolNode(ops.tools())), memory=rippl).compile(
        checkpointer=saver, store=store)
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda shard: app.invoke({"messages": [HumanMessage(f"to {shard}")]},
                                                      thread(f"T-{shard}")), ["09", "07"]))
    assert len(done) == 2 and sorted(ops.names()) == ["get_shard_health"] * 2 + ["migrate_tables"] * 2
    retract(rippl, health_claim(store, app, thread("T-09")))
    assert owed(rippl) == [("T-09", "migrate-09")]  # the other run read another shard
    other = store.premises_at_checkpoint(app.get_state(thread("T-07")).config)
    assert other is not None and other.run == "T-07"
    assert all(status == "Verified" for status in other.claims().values())


def test_a_subgraph_is_a_run_of_its_own(rippl: Rippl, saver: FalkorDBSaver) -> None:
    """A subgraph node's turns are the run thread/node; its checkpoints name the same run."""
    ops = Ops()
    inner = preflight_app(rippl, ops, STORY, None, interrupt_before=["tools"])
    outer = StateGraph(State)
    outer.add_node("ops_team", inner)
    outer.add_edge(START, "ops_team")
    app = outer.compile(checkpointer=saver)
    store = RipplStore(rippl, checkpointer=saver)
    config = thread("T1")
    app.invoke({"messages": [HumanMessage("move billing")]}, config)
    while (state := app.get_state(config, subgraphs=True)).next:
        sub = state.tasks[0].state
        if sub.values["messages"][-1].tool_calls[0]["id"] == "migrate-09":
            step = store.premises_at_checkpoint(sub.config)
            assert step is not None and step.run == "T1/ops_team"
            [claim] = [n.id for n in step.premises if n.text.startswith("get_shard_health")]
            retract(rippl, claim)
        app.invoke(None, config)
    assert ops.ran[-1] == ("migrate_tables", {"table": "billing", "shard": "07"})
    assert owed(rippl) == [("T1/ops_team", "announce-09")]


# ------------------------------------------------------------------------------------ memory


def memory_graph(memory: Rippl | AsyncRippl, ops: Ops, saver: BaseCheckpointSaver) -> Any:
    """The model node reads the shard-09 belief when its task mentions it, then migrates."""
    model = ScriptedChatModel(script=[by_memory], loop=True)

    def agent(state: State) -> dict[str, list[Any]]:
        if "memory" in str(state["messages"][0].content) and len(state["messages"]) == 1:
            get_store().get(("ops-agent", "shards"), "09-health")
        return {"messages": [model.invoke(state["messages"])]}

    async def aagent(state: State) -> dict[str, list[Any]]:
        if "memory" in str(state["messages"][0].content) and len(state["messages"]) == 1:
            await get_store().aget(("ops-agent", "shards"), "09-health")
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(State)
    builder.add_node("agent", RunnableLambda(agent, afunc=aagent))
    builder.add_node("tools", ToolNode(ops.tools()))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return add_preflight(builder, memory=memory).compile(checkpointer=saver,
                                                         store=RipplStore(memory, checkpointer=saver))


def by_memory(messages: list[BaseMessage]) -> AIMessage:
    if any(isinstance(m, ToolMessage) for m in messages):
        return AIMessage("done")
    name = "memory" if "memory" in str(messages[0].content) else "fresh"
    return calls(tool_call("migrate_tables", {"table": "billing", "shard": "09"}, f"migrate-{name}"))


def remember_health(rippl: Rippl) -> str:
    rippl.add_source("SRC-DASH", "the 09:00 shard dashboard")
    rippl.add_claim("CLM-HEALTHY", "shard 09 is healthy", sources=["SRC-DASH"])
    RipplStore(rippl).put(("ops-agent", "shards"), "09-health", {"claim": "CLM-HEALTHY"})
    return "CLM-HEALTHY"


def test_memory_reads_are_observations_of_the_run_that_read(rippl: Rippl, saver: FalkorDBSaver) -> None:
    claim = remember_health(rippl)
    before = rippl.stats()
    assert RipplStore(rippl).get(("ops-agent", "shards"), "09-health") is not None
    assert rippl.stats() == before  # outside a graph: no run, nothing recorded
    ops = Ops()
    app = memory_graph(rippl, ops, saver)
    app.invoke({"messages": [HumanMessage("migrate, from memory")]}, thread("A"))
    app.invoke({"messages": [HumanMessage("migrate, fresh")]}, thread("B"))
    assert ops.names() == ["migrate_tables", "migrate_tables"]
    retract(rippl, claim)
    assert owed(rippl) == [("A", "migrate-memory")]
    assert RipplStore(rippl).get(("ops-agent", "shards"), "09-health") is None


@pytest.mark.asyncio(loop_scope="session")
async def test_memory_reads_async(rippl: Rippl, arippl: AsyncRippl, asaver: Any) -> None:
    claim = remember_health(rippl)
    ops = Ops()
    app = memory_graph(arippl, ops, asaver)
    await app.ainvoke({"messages": [HumanMessage("migrate, from memory")]}, thread("A"))
    await app.ainvoke({"messages": [HumanMessage("migrate, fresh")]}, thread("B"))
    retract(rippl, claim)
    assert owed(rippl) == [("A", "migrate-memory")]
