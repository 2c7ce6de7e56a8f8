"""Memory: what an agent saves goes out with what it was read from.

The ops graph keeps its long-term memory in Rippl (`compile(store=RipplStore(rippl))`). On thread
inc-4480 the agent reads shard 09's health ("healthy", answered by a replica that, unknown to
anyone yet, is six hours stale) and saves what it read with a `remember` tool (`InjectedStore`):
that memory rests on the reading it was written from. A day later, on thread inc-4481, the agent
recalls "Shard 09 is healthy". While it thinks, a replica monitor finds the reading stale and the
on-call engineer approves its retraction: the memory goes OUT with it (nobody dropped it), and the
migration resting on the recall is vetoed, the trail running reading -> run inc-4480 wrote it ->
the memory -> the call. A third thread recalls nothing: a memory that no longer holds is not
served.

    uv run python examples/langgraph/memory.py
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedStore, ToolNode, tools_condition
from langgraph.store.base import BaseStore
from rippl_langgraph import FalkorDBSaver, RipplStore, add_preflight
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import Rippl

from helpers import ask, fleet, main, retracted_meanwhile

WHERE = ("ops", "shards")


@tool
def remember(fact: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
    """Save a fact about shard 09 to long-term memory."""
    store.put(WHERE, "09-health", {"text": fact})
    return "saved"


@tool
def recall(store: Annotated[BaseStore, InjectedStore()]) -> str:
    """Recall what long-term memory holds about shard 09."""
    found = store.get(WHERE, "09-health")
    return found.value["text"] if found else "nothing remembered about shard 09"


def ops_graph(rippl: Rippl, script: list[Any]) -> Any:
    model = ScriptedChatModel(script=script)
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([tool(fleet.get_shard_health), tool(fleet.migrate_tables),
                                      remember, recall]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return add_preflight(graph, memory=rippl).compile(checkpointer=FalkorDBSaver(rippl),
                                                      store=RipplStore(rippl))


def story(rippl: Rippl) -> None:
    fleet.reset()
    ask(ops_graph(rippl, [calls(tool_call("get_shard_health", {"shard": "09"})),
                          calls(tool_call("remember", {"fact": "Shard 09 is healthy"})),
                          AIMessage("Noted: shard 09 is healthy.")]),
        "Check shard 09 and remember what you find.", {"configurable": {"thread_id": "inc-4480"}})
    ask(ops_graph(rippl, [calls(tool_call("recall", {})),
                          retracted_meanwhile(rippl, calls(tool_call(
                              "migrate_tables", {"table": "billing", "shard": "09"}))),
                          AIMessage("Not migrating: what I remembered no longer holds.")]),
        "Move billing to a healthy shard.", {"configurable": {"thread_id": "inc-4481"}})
    memory = rippl.ask("ops", "shards/09-health")
    assert memory is not None
    print(f"\nThe memory: {memory.describe()}")
    ask(ops_graph(rippl, [calls(tool_call("recall", {})), AIMessage("Nothing to go on.")]),
        "What do we know about shard 09?", {"configurable": {"thread_id": "inc-4482"}})


if __name__ == "__main__":
    main(story, __doc__)
