"""Premises flow through LangGraph's long-term memory (`RipplStore`), in real graphs with scripted
models (both backends): an agent on thread T1 reads a shard's health and saves what it read with
a `remember` tool (`InjectedStore`), or a node of the graph saves it; the reading is retracted
through the review gate; the same agent on thread T2, having recalled the memory, migrates:
vetoed, the trail running reading -> run T1 wrote it -> memory -> T2's turn -> the call. A memory
written from a reading that aged is denied as stale later; one a person also stated holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool, tool
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import InjectedStore, ToolNode, tools_condition
from langgraph.store.base import BaseStore
from langgraph_helpers import State, health_claim, retract_health, then, thread
from rippl_langgraph import VETO_PREFIX, FalkorDBSaver, RipplStore, add_preflight
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import Rippl
from rippl_core import State as Status
from rippl_core.testing import Clock

NAMESPACE, KEY = ("ops", "shards"), "09-health"
TEXT = "Shard 09 is healthy"


@dataclass
class Ops:
    ran: list[str] = field(default_factory=list)
    recalled: list[str | None] = field(default_factory=list)

    def tools(self) -> list[BaseTool]:
        ran, recalled = self.ran, self.recalled

        @tool
        def get_health(shard: str) -> str:
            """Read a shard's health."""
            return f"shard {shard}: healthy"

        @tool
        def remember(text: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
            """Save a fact to long-term memory."""
            store.put(NAMESPACE, KEY, {"text": text})
            return "saved"

        @tool
        def recall(store: Annotated[BaseStore, InjectedStore()]) -> str:
            """Recall what long-term memory holds about shard 09."""
            item = store.get(NAMESPACE, KEY)
            recalled.append(None if item is None else item.value["text"])
            return "nothing remembered" if item is None else item.value["text"]

        @tool
        def migrate(shard: str) -> str:
            """Migrate billing onto a shard."""
            ran.append(shard)
            return f"migrated to {shard}"

        return [get_health, remember, recall, migrate]


def graph(rippl: Rippl, model: ScriptedChatModel, ops: Ops, saver: FalkorDBSaver,
          note: bool = False) -> Any:
    """model -> tools_condition -> preflight -> ToolNode -> model; with `note`, a node after the
    tools that writes the shard's health to the store itself."""
    def agent(state: State) -> dict[str, list[Any]]:
        return {"messages": [model.invoke(state["messages"])]}

    def noted(state: State, *, store: BaseStore) -> dict[str, list[Any]]:
        if any(isinstance(m, ToolMessage) and m.content == "shard 09: healthy"
               for m in state["messages"][-1:]):
            store.put(NAMESPACE, KEY, {"text": TEXT})  # the graph's own write
        return {"messages": []}

    builder = StateGraph(State)
    builder.add_node("agent", RunnableLambda(agent, name="agent"))
    builder.add_node("tools", ToolNode(ops.tools(), handle_tool_errors=False))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    if note:
        builder.add_node("note", noted)
        builder.add_edge("tools", "note")
        builder.add_edge("note", "agent")
    else:
        builder.add_edge("tools", "agent")
    return add_preflight(builder, memory=rippl).compile(checkpointer=saver, store=RipplStore(rippl))


def vetoes(model: ScriptedChatModel) -> dict[str, str]:
    return {m.tool_call_id: str(m.content) for m in model.seen[-1]
            if isinstance(m, ToolMessage) and str(m.content).startswith(VETO_PREFIX)}


def second_thread(rippl: Rippl, ops: Ops, saver: FalkorDBSaver) -> ScriptedChatModel:
    """T2: recall, (the reading is retracted), migrate."""
    model = ScriptedChatModel(script=[
        calls(tool_call("recall", {}, "r1")),
        then(retract_health(rippl), calls(tool_call("migrate", {"shard": "09"}, "m1"))),
        AIMessage("stopped")])
    graph(rippl, model, ops, saver).invoke({"messages": [HumanMessage("move billing")]},
                                           thread("T2"))
    return model


FIRST = [calls(tool_call("get_health", {"shard": "09"}, "h1")),
         calls(tool_call("remember", {"text": TEXT}, "s1")), AIMessage("noted")]


def test_a_memory_a_tool_wrote_from_a_reading_is_vetoed_with_it(rippl: Rippl,
                                                                 saver: FalkorDBSaver) -> None:
    ops = Ops()
    graph(rippl, ScriptedChatModel(script=FIRST), ops, saver).invoke(
        {"messages": [HumanMessage("check shard 09 and remember it")]}, thread("T1"))
    model = second_thread(rippl, ops, saver)
    assert ops.recalled == [TEXT] and ops.ran == []
    veto = vetoes(model)["m1"]
    memory = rippl.ask("ops", "shards/09-health")
    assert memory is not None and memory.claim_state is Status.OUT and memory.rests_on_retracted
    # the trail: the reading, run T1's write, the memory, T2's turn, the call
    trail = rippl.check(model.seen[-1][-1].artifact["rippl_verdict"]["target"]).blockers[0].trail
    assert trail[0] == health_claim(rippl) and memory.claim in trail
    assert rippl.get(trail[1]).text.startswith("run T1 wrote it (turn ")
    assert health_claim(rippl) in veto
    # a recall now skips it: a retracted memory is no longer served as current
    ops.recalled.clear()
    graph(rippl, ScriptedChatModel(script=[calls(tool_call("recall", {}, "r9")), AIMessage("ok")]),
          ops, saver).invoke({"messages": [HumanMessage("what do we know?")]}, thread("T3"))
    assert ops.recalled == [None]


def test_a_memory_a_node_wrote_rests_on_what_the_run_carried(rippl: Rippl,
                                                             saver: FalkorDBSaver) -> None:
    ops = Ops()
    graph(rippl, ScriptedChatModel(script=[calls(tool_call("get_health", {"shard": "09"}, "h1")),
                                           AIMessage("noted")]), ops, saver, note=True).invoke(
        {"messages": [HumanMessage("check shard 09")]}, thread("T1"))
    memory = rippl.ask("ops", "shards/09-health")
    assert memory is not None
    [writer] = rippl.get(memory.claim).justifications
    assert rippl.get(writer[0]).text.startswith("run T1 wrote it: ")
    model = second_thread(rippl, ops, saver)
    assert ops.ran == [] and "m1" in vetoes(model)


def test_a_memory_someone_also_stated_holds_after_the_retraction(rippl: Rippl,
                                                                  saver: FalkorDBSaver) -> None:
    ops = Ops()
    graph(rippl, ScriptedChatModel(script=FIRST), ops, saver).invoke(
        {"messages": [HumanMessage("check shard 09 and remember it")]}, thread("T1"))
    rippl.add_source("SRC-oncall", "the on-call engineer checked shard 09 by hand", kind="human")
    RipplStore(rippl).put(NAMESPACE, KEY, {"text": TEXT, "sources": ["SRC-oncall"]})  # a person
    second_thread(rippl, ops, saver)
    assert ops.ran == ["09"]  # it still holds: the person said so too
    memory = rippl.ask("ops", "shards/09-health")
    assert memory is not None and memory.claim_state is Status.IN


def test_a_memory_written_from_a_reading_that_aged_is_denied_as_stale(
        rippl: Rippl, saver: FalkorDBSaver) -> None:
    ops = Ops()
    tools = ops.tools()
    with Clock("2026-12-01T10:00:00Z", ticking=True) as clock:
        tools[0].metadata = {"rippl": {"fresh_for": 300}}  # a health reading holds 5 minutes
        first = ScriptedChatModel(script=FIRST)

        def agent_graph(model: ScriptedChatModel) -> Any:
            def agent(state: State) -> dict[str, list[Any]]:
                return {"messages": [model.invoke(state["messages"])]}
            builder = StateGraph(State)
            builder.add_node("agent", RunnableLambda(agent, name="agent"))
            builder.add_node("tools", ToolNode(tools))
            builder.add_edge(START, "agent")
            builder.add_conditional_edges("agent", tools_condition)
            builder.add_edge("tools", "agent")
            return add_preflight(builder, memory=rippl).compile(checkpointer=saver,
                                                                store=RipplStore(rippl))

        agent_graph(first).invoke({"messages": [HumanMessage("check and remember")]}, thread("T1"))
        clock.advance(minutes=12)

        def later(_: list[BaseMessage]) -> AIMessage:
            return calls(tool_call("migrate", {"shard": "09"}, "m1"))
        second = ScriptedChatModel(script=[calls(tool_call("recall", {}, "r1")), later,
                                           AIMessage("stopped")])
        agent_graph(second).invoke({"messages": [HumanMessage("move billing")]}, thread("T2"))
    veto = vetoes(second)["m1"]
    assert "denied as stale" in veto and "Read it again" in veto and ops.ran == []
