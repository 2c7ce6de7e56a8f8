"""Quickstart: an AutoGen agent's call is vetoed because what it read was found false.

`register_rippl` gives an `AssistantAgent` Rippl's model-client wrapper and workbench, so its run
is captured as it goes (nothing is declared in advance). Its first task reads shard 09's health:
"healthy". Before its next task, a monitor finds the reading came from a replica six hours stale
and proposes retracting it; a person approves (the review gate). The agent keeps its conversation,
so its migration of billing onto shard 09 rests on that reading: vetoed before it runs, and the
model reads why, with the trail from the reading to the call.

    uv run python examples/autogen/quickstart.py           # a scripted model, offline
    uv run python examples/autogen/quickstart.py --live    # a real model (see helpers.py)
"""

from __future__ import annotations

from autogen_agentchat.agents import AssistantAgent
from autogen_core.models import ChatCompletionClient
from rippl_autogen import register_rippl
from rippl_autogen.testing import ScriptedModel, calls, tool_call

from rippl_core import AsyncRippl

from helpers import ask, fleet, main

SCRIPT = [
    calls(tool_call("get_shard_health", shard="09")),
    "Shard 09 is healthy.",
    calls(tool_call("migrate_tables", table="billing", shard="09")),
    "Rippl vetoed the migration: the shard 09 reading was retracted. Billing stays.",
]


async def story(rippl: AsyncRippl, model: ChatCompletionClient | None = None) -> None:
    fleet.reset()
    agent = AssistantAgent("ops", model_client=model or ScriptedModel(SCRIPT),
                           tools=[fleet.get_shard_health, fleet.migrate_tables],
                           reflect_on_tool_use=True)
    register_rippl(agent, rippl)

    await ask(agent, "Is shard 09 healthy?")

    print("A replica monitor finds the reading stale; a person approves its retraction.")
    review = await rippl.propose_retraction_where(tool="get_shard_health", args={"shard": "09"},
                                                  reason="replica r3 lags its primary by 6 h",
                                                  by="replica-monitor")
    await rippl.approve(review.id, by="alice@oncall")

    await ask(agent, "Then migrate billing onto it.")


if __name__ == "__main__":
    main(story, __doc__, live=True)
