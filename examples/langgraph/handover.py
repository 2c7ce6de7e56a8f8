"""A hand-over and an override: what one agent read travels in its report, and only a person lifts
the veto, for one call.

A supervisor graph runs a research agent, then a supervisor agent, on one thread (each its own run:
`inc-4473/research`, `inc-4473/supervisor`). The researcher reads shard 09's health and reports
"healthy". Before the supervisor acts, a replica monitor finds the reading stale and a person
approves its retraction. The supervisor never read the health check itself, but the report it
acts on carried it: its resize of shard 09 is vetoed, the trail naming both runs. The supervisor
asks for an override (`rippl.override`, proposed by the agent); the on-call engineer checks the
shard by hand and approves it through the review gate. Exactly that call runs, once: asking again
is vetoed again.

    uv run python examples/langgraph/handover.py
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.config import get_config
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command, interrupt
from rippl_langgraph import FalkorDBSaver, RipplMiddleware, run_id
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import Rippl, ToolCall

from helpers import ask, fleet, main


def override_tool(rippl: Rippl) -> Any:
    @tool
    def request_override(tool: str, arguments: dict[str, Any], reason: str) -> str:
        """Ask a person to let one vetoed call run once; waits for their answer."""
        call = ToolCall(name=tool, args=arguments)
        proposal = rippl.override(call, run=run_id(get_config()), reason=reason, by="supervisor")
        return str(interrupt({"override": proposal.id, "call": f"{tool}({arguments})"}))
    return request_override


RESEARCHER = [calls(tool_call("get_shard_health", {"shard": "09"})),
              AIMessage("Shard 09 is healthy: a safe target for the billing replicas.")]
RESIZE = {"shard": "09", "replicas": 3}
SUPERVISOR = [
    calls(tool_call("resize_replicas", RESIZE)),
    calls(tool_call("request_override", {"tool": "resize_replicas", "arguments": RESIZE,
                                         "reason": "the replica set was verified by hand"})),
    calls(tool_call("resize_replicas", RESIZE)),
    calls(tool_call("resize_replicas", {"shard": "09", "replicas": 3.0})),  # once more
    AIMessage("Shard 09 resized once, under the override; not again."),
]


def story(rippl: Rippl) -> None:
    fleet.reset()
    research = create_agent(ScriptedChatModel(script=RESEARCHER), [tool(fleet.get_shard_health)],
                            middleware=[RipplMiddleware(rippl, agent="researcher")])
    supervisor = create_agent(ScriptedChatModel(script=SUPERVISOR),
                              [tool(fleet.resize_replicas), override_tool(rippl)],
                              middleware=[RipplMiddleware(rippl, agent="supervisor")])
    team = StateGraph(MessagesState)
    team.add_node("research", research)
    team.add_node("supervisor", supervisor)
    team.add_edge(START, "research")
    team.add_edge("research", "supervisor")
    app = team.compile(checkpointer=FalkorDBSaver(rippl), interrupt_before=["supervisor"])
    thread = {"configurable": {"thread_id": "inc-4473"}}

    ask(app, "Is shard 09 healthy? Then size its replicas for billing.", thread, subgraphs=True)
    print("  (the supervisor waits)")
    fleet.retract_stale_reading(rippl)
    ask(app, None, thread, subgraphs=True)
    while (paused := app.get_state(thread, subgraphs=True)).interrupts:
        request = paused.interrupts[0].value
        print(f"  PAUSED: the supervisor asks for override {request['override']} of "
              f"{request['call']}; oncall-engineer checks shard 09 by hand and approves")
        receipt = rippl.approve(request["override"], by="oncall-engineer")
        ask(app, Command(resume=f"override approved by oncall-engineer (receipt {receipt.id})"),
            thread, subgraphs=True)
    for granted in rippl.overrides():  # what a person let run, and which call took it
        print(f"Override {granted.id}: proposed by {granted.proposed_by}, approved by "
              f"{granted.approved_by}, taken by {granted.used_by}")
    print(f"Compensations owed: {len(rippl.compensations())} (it ran under a person's override)")


if __name__ == "__main__":
    main(story, __doc__)
