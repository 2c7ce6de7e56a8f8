"""Delegation: a veto binds the team. A task refused to one agent does not become a fresh act in
another agent's hands.

A `langgraph-supervisor` supervisor hands "move billing to shard 09" to its lead engineer, who
reads shard 09's health ("healthy", from a replica that, unknown to anyone yet, is six hours
stale). While the lead thinks, a replica monitor finds the reading stale and the on-call engineer
approves its retraction: the lead's migration is vetoed, and the lead says so. The supervisor does
what supervisors do with a blocked task: it re-assigns it, to the operator, who never read the
health check. The operator's identical migration stays vetoed, naming the lead's veto and the
hand-over; its different plan (shard 07) runs. Only a person lifts the veto, for the whole team.

    uv run python examples/langgraph/delegation.py    (pip install langgraph-supervisor)
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph_supervisor import create_supervisor
from rippl_langgraph import FalkorDBSaver, RipplMiddleware
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import Rippl

from helpers import ask, fleet, main, retracted_meanwhile

TO_09 = {"table": "billing", "shard": "09"}


def story(rippl: Rippl) -> None:
    fleet.reset()
    lead = create_agent(
        ScriptedChatModel(script=[
            calls(tool_call("get_shard_health", {"shard": "09"})),
            retracted_meanwhile(rippl, calls(tool_call("migrate_tables", TO_09))),
            AIMessage("Vetoed: the shard 09 reading was retracted. Someone else must decide.")]),
        [tool(fleet.get_shard_health), tool(fleet.migrate_tables)],
        middleware=[RipplMiddleware(rippl, agent="lead")], name="lead")
    operator = create_agent(
        ScriptedChatModel(script=[
            calls(tool_call("migrate_tables", {"shard": "09", "table": "billing"})),  # the same act
            calls(tool_call("get_shard_health", {"shard": "07"})),
            calls(tool_call("migrate_tables", {"table": "billing", "shard": "07"})),
            AIMessage("Billing is on shard 07.")]),
        [tool(fleet.get_shard_health), tool(fleet.migrate_tables)],
        middleware=[RipplMiddleware(rippl, agent="operator")], name="operator")
    supervisor = create_supervisor(
        [lead, operator], output_mode="full_history",
        model=ScriptedChatModel(script=[calls(tool_call("transfer_to_lead", {})),
                                        calls(tool_call("transfer_to_operator", {})),
                                        AIMessage("Billing moved to shard 07.")]))
    team = supervisor.compile(checkpointer=FalkorDBSaver(rippl))
    ask(team, "Move billing to shard 09.", {"configurable": {"thread_id": "inc-4490"}},
        subgraphs=True)
    print(f"\nWhat ran: {fleet.RAN}")


if __name__ == "__main__":
    main(story, __doc__)
