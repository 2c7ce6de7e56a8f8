"""A hand-over and an override: what one agent read travels in its report, and only a person lifts
the veto, for one call.

The supervisor asks a researcher agent, used as one of its tools (`AgentTool`), whether shard 09 is
healthy; the researcher (a run of its own: `inc-4473/researcher`) reads shard 09's health and
reports "healthy". A replica monitor then finds the reading stale and a person approves its
retraction. The supervisor never read the health check itself, but the report it acts on carried
it: its resize of shard 09 is vetoed, the trail naming both runs. The supervisor asks for an
override (`rippl.override`, proposed by the agent) and hands off to a person; the on-call engineer
checks the shard by hand and approves it through the review gate. Exactly that call runs, once:
asking again is vetoed again.

    uv run python examples/autogen/handover.py
"""

from __future__ import annotations

from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import Handoff
from autogen_agentchat.conditions import HandoffTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_agentchat.tools import AgentTool
from rippl_autogen import register_rippl
from rippl_autogen.testing import ScriptedModel, calls, tool_call

from rippl_core import AsyncRippl, ToolCall

from helpers import ask, fleet, main

RUN = "inc-4473"
RESIZE = {"shard": "09", "replicas": 3}


def override_tool(rippl: AsyncRippl) -> Any:
    async def request_override(tool: str, arguments: dict[str, Any], reason: str) -> str:
        """Ask a person to let one vetoed call run once (then hand off to them)."""
        proposal = await rippl.override(ToolCall(name=tool, args=arguments), run=f"{RUN}/supervisor",
                                        reason=reason, by="supervisor")
        return f"override {proposal.id} proposed: a person must approve it"
    return request_override


RESEARCHER = [calls(tool_call("get_shard_health", shard="09")),
              "Shard 09 is healthy: a safe target for the billing replicas."]
SUPERVISOR = [
    calls(tool_call("researcher", task="Is shard 09 healthy?")),
    calls(tool_call("transfer_to_user")),  # reports, and waits for the go-ahead
    calls(tool_call("resize_replicas", **RESIZE)),
    calls(tool_call("request_override", tool="resize_replicas", arguments=RESIZE,
                    reason="the replica set was verified by hand")),
    calls(tool_call("transfer_to_user")),  # a person must approve the override
    calls(tool_call("resize_replicas", **RESIZE)),
    calls(tool_call("resize_replicas", shard="09", replicas=3.0)),  # once more
    "Shard 09 resized once, under the override; not again. TERMINATE",
]


async def story(rippl: AsyncRippl) -> None:
    fleet.reset()
    researcher = AssistantAgent("researcher", description="Checks a shard's health.",
                                model_client=ScriptedModel(RESEARCHER), tools=[fleet.get_shard_health],
                                reflect_on_tool_use=True)
    supervisor = AssistantAgent(
        "supervisor", model_client=ScriptedModel(SUPERVISOR), max_tool_iterations=6,
        tools=[AgentTool(researcher), fleet.resize_replicas, override_tool(rippl)],
        handoffs=[Handoff(target="user", description="ask a person")])
    register_rippl(researcher, rippl, memory=False)  # its run joins the scope of the call running it
    team = RoundRobinGroupChat([supervisor], termination_condition=HandoffTermination("user")
                               | TextMentionTermination("TERMINATE"))
    register_rippl(team, rippl, run=RUN, memory=False)

    await ask(team, "Is shard 09 healthy? Then size its replicas for billing.")
    await fleet.retract_stale_reading_async(rippl)

    await ask(team, "Go ahead.")
    [proposal] = await rippl.reviews()  # the override the supervisor asked for
    receipt = await rippl.approve(proposal.id, by="oncall-engineer")
    print(f"  oncall-engineer checks shard 09 by hand and approves override {proposal.id} "
          f"(receipt {receipt.id})")
    await ask(team, "Override approved: go ahead, once.")
    [granted] = await rippl.overrides()
    print(f"Override {granted.id}: proposed by {granted.proposed_by}, approved by "
          f"{granted.approved_by}, taken by {granted.used_by}; compensations owed: "
          f"{len(await rippl.compensations())}")


if __name__ == "__main__":
    main(story, __doc__)
