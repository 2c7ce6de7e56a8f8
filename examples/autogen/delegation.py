"""Delegation: a veto binds the team. A task refused to one agent does not become a fresh act in
another agent's hands.

A `Swarm` of two agents (run inc-4490): the lead reads shard 09's health ("healthy", from a replica
that, unknown to anyone yet, is six hours stale) and waits for a person's go-ahead. Meanwhile a
replica monitor finds the reading stale and the on-call engineer approves its retraction. Told to
go ahead, the lead's migration is vetoed; the lead hands the task off to the operator
(`HandoffMessage`), who never read the health check. The operator's identical migration stays
vetoed, naming the lead's veto; its different plan (shard 07) runs. Only a person lifts the veto,
for the whole team.

    uv run python examples/autogen/delegation.py
"""

from __future__ import annotations

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import Handoff
from autogen_agentchat.conditions import HandoffTermination, TextMentionTermination
from autogen_agentchat.messages import HandoffMessage
from autogen_agentchat.teams import Swarm
from rippl_autogen import register_rippl
from rippl_autogen.testing import ScriptedModel, calls, tool_call

from rippl_core import AsyncRippl

from helpers import ask, fleet, main


async def story(rippl: AsyncRippl) -> None:
    fleet.reset()
    lead = AssistantAgent(
        "lead", tools=[fleet.get_shard_health, fleet.migrate_tables], max_tool_iterations=4,
        handoffs=["operator", Handoff(target="user", description="ask a person to approve")],
        model_client=ScriptedModel([
            calls(tool_call("get_shard_health", shard="09")),
            calls(tool_call("transfer_to_user")),  # waits for the go-ahead
            calls(tool_call("migrate_tables", table="billing", shard="09")),
            calls(tool_call("transfer_to_operator"))]))  # vetoed: hands the task on
    operator = AssistantAgent(
        "operator", tools=[fleet.get_shard_health, fleet.migrate_tables], max_tool_iterations=6,
        model_client=ScriptedModel([
            calls(tool_call("migrate_tables", shard="09", table="billing")),  # the same act
            calls(tool_call("get_shard_health", shard="07")),
            calls(tool_call("migrate_tables", table="billing", shard="07")),
            "Billing is on shard 07. TERMINATE"]))
    team = Swarm([lead, operator], termination_condition=HandoffTermination("user")
                 | TextMentionTermination("TERMINATE"))
    register_rippl(team, rippl, run="inc-4490", memory=False)
    await ask(team, "Move billing to shard 09.")

    await fleet.retract_stale_reading_async(rippl)
    await ask(team, HandoffMessage(source="user", target="lead", content="Go ahead."))
    print(f"\nWhat ran: {fleet.RAN}")


if __name__ == "__main__":
    main(story, __doc__)
