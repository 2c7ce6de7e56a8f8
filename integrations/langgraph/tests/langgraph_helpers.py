"""Shared pieces of the LangGraph adapter tests: ops tools that record what ran, and graphs built
the way LangGraph users build them (model node, conditional edge, ToolNode)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from rippl_langgraph.testing import ScriptedChatModel

MIGRATE_09 = {"table": "billing", "shard": "09"}  # ACT-001, rests on CLM-001
MIGRATE_07 = {"table": "billing", "shard": "07"}  # ACT-002, the safe fallback
ROLLBACK = {"service": "checkout-api", "to_version": "2.3.7"}  # ACT-012, unrelated to CLM-001


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


@dataclass
class Ops:
    """Tools of the incident graph that record every execution."""

    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def tools(self) -> list[BaseTool]:
        ran = self.ran

        @tool
        def migrate_tables(table: str, shard: str) -> str:
            """Migrate a set of tables to a shard."""
            ran.append(("migrate_tables", {"table": table, "shard": shard}))
            return f"migrated {table} to shard {shard}"

        @tool
        def rollback_deploy(service: str, to_version: str) -> str:
            """Roll a service back to a version."""
            ran.append(("rollback_deploy", {"service": service, "to_version": to_version}))
            return f"rolled {service} back to {to_version}"

        @tool
        def delete_database(name: str) -> str:
            """A tool no action of the graph describes."""
            ran.append(("delete_database", {"name": name}))
            return f"deleted {name}"

        @tool
        def shard_health(shard: str) -> str:
            """Read-only health lookup."""
            ran.append(("shard_health", {"shard": shard}))
            return f"shard {shard}: disk errors on /dev/nvme1" if shard == "09" else "healthy"

        return [migrate_tables, rollback_deploy, delete_database, shard_health]

    def names(self) -> list[str]:
        return [name for name, _ in self.ran]


def model_node(model: ScriptedChatModel) -> Any:
    def agent(state: State) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    async def aagent(state: State) -> dict[str, list[BaseMessage]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    from langchain_core.runnables import RunnableLambda

    return RunnableLambda(agent, afunc=aagent, name="agent")


def react_builder(model: ScriptedChatModel, tools: Sequence[BaseTool] | ToolNode) -> StateGraph:
    """agent -> tools_condition -> tools -> agent, as in LangGraph's own tutorials."""
    builder = StateGraph(State)
    builder.add_node("agent", model_node(model))
    builder.add_node("tools", tools if isinstance(tools, ToolNode) else ToolNode(list(tools)))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


def compile_graph(builder: StateGraph, saver: BaseCheckpointSaver) -> CompiledStateGraph:
    return builder.compile(checkpointer=saver)


def tool_messages(messages: Sequence[BaseMessage]) -> dict[str, ToolMessage]:
    """ToolMessages by tool_call_id; fails if a call was answered twice."""
    found: dict[str, ToolMessage] = {}
    for message in messages:
        if isinstance(message, ToolMessage):
            assert message.tool_call_id not in found, f"{message.tool_call_id} answered twice"
            found[message.tool_call_id] = message
    return found


def thread(name: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}
