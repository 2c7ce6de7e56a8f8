"""Shared pieces of the LangGraph adapter tests: ops tools that record what ran, graphs built the
way LangGraph users build them (model node, conditional edge, ToolNode), and a health reading
retracted while a scripted model thinks."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool, StructuredTool, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from rippl_langgraph import VETO_PREFIX
from rippl_langgraph.testing import ScriptedChatModel

from rippl_core import Rippl

MIGRATE_09 = {"table": "billing", "shard": "09"}  # ACT-001, rests on CLM-001
MIGRATE_07 = {"table": "billing", "shard": "07"}  # ACT-002, the safe fallback
ROLLBACK = {"service": "checkout-api", "to_version": "2.3.7"}  # ACT-012, unrelated to CLM-001
HEALTHY = 'get_health({"shard":"09"}) returned'  # the claim a get_health(shard="09") became


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


@dataclass
class Recording:
    """Tools that record every execution they answer in `ran`: the tool's name and arguments
    (defaults filled in), in the order they ran."""

    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def recorded(self, run: BaseTool) -> BaseTool:
        """`run`, a tool made of a function (`@tool`), as a tool that records each execution."""
        assert isinstance(run, StructuredTool) and run.func is not None, run
        function, signature = run.func, inspect.signature(run.func)

        def execute(*args: Any, **kwargs: Any) -> str:
            answer = function(*args, **kwargs)
            called = signature.bind(*args, **kwargs)
            called.apply_defaults()
            self.ran.append((run.name, dict(called.arguments)))
            return str(answer)

        return StructuredTool.from_function(execute, name=run.name, description=run.description,
                                            args_schema=run.args_schema)

    def names(self) -> list[str]:
        return [name for name, _ in self.ran]


@tool
def migrate_tables(table: str, shard: str) -> str:
    """Migrate a set of tables to a shard."""
    return f"migrated {table} to shard {shard}"


@tool
def rollback_deploy(service: str, to_version: str) -> str:
    """Roll a service back to a version."""
    return f"rolled {service} back to {to_version}"


@tool
def delete_database(name: str) -> str:
    """A tool no action of the graph describes."""
    return f"deleted {name}"


@tool
def shard_health(shard: str) -> str:
    """Read-only health lookup."""
    return f"shard {shard}: disk errors on /dev/nvme1" if shard == "09" else "healthy"


@dataclass
class Ops(Recording):
    """Tools of the incident graph that record every execution."""

    def tools(self) -> list[BaseTool]:
        return [self.recorded(run) for run in (migrate_tables, rollback_deploy, delete_database,
                                               shard_health)]


def model_node(model: ScriptedChatModel) -> Any:
    def agent(state: State) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    async def aagent(state: State) -> dict[str, list[BaseMessage]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    return RunnableLambda(agent, afunc=aagent, name="agent")


def react_builder(model: ScriptedChatModel | RunnableLambda[Any, Any],
                  tools: Sequence[BaseTool] | ToolNode) -> StateGraph:
    """agent -> tools_condition -> tools -> agent, as in LangGraph's own tutorials (the agent: the
    model's turn, or a node of the test's own)."""
    builder = StateGraph(State)
    builder.add_node("agent", model if isinstance(model, RunnableLambda) else model_node(model))
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


def veto_texts(messages: Sequence[BaseMessage]) -> list[str]:
    """What the tools answered with a veto, in order."""
    return [str(m.content) for m in messages
            if isinstance(m, ToolMessage) and str(m.content).startswith(VETO_PREFIX)]


# ------------------------------------------------------------------------------ a reading retracted


def health_claim(rippl: Rippl) -> str:
    """The claim the reading of shard 09's health (`get_health`) became."""
    [claim] = [n.id for n in rippl.nodes() if n.kind.value == "Claim" and n.text.startswith(HEALTHY)]
    return claim


def retract_health(rippl: Rippl) -> Callable[[list[BaseMessage]], None]:
    """A side effect a script step runs first: a monitor proposes the health reading false and a
    reviewer approves (while the model is thinking)."""
    def act(_: list[BaseMessage]) -> None:
        review = rippl.propose_retraction(health_claim(rippl), reason="served from a stale cache",
                                          by="replica-monitor")
        rippl.approve(review.id, by="oncall")
    return act


def then(effect: Callable[[list[BaseMessage]], Any],
         reply: AIMessage) -> Callable[[list[BaseMessage]], AIMessage]:
    """A script step: `effect` runs on what the model was shown, then the model answers `reply`."""
    def step(messages: list[BaseMessage]) -> AIMessage:
        effect(messages)
        return reply
    return step
