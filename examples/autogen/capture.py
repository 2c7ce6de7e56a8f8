"""Capture and a repeat: a call rests on what the agent read, and asking again does not lift a veto.

Nothing is declared in advance: Rippl records the agent's run as it happens (`register_rippl`: a
model-client wrapper records each turn, the workbench each call and its result). The ops agent
reads shard 09's health ("healthy", answered by a replica that, unknown to anyone yet, is six hours
stale), announces a maintenance window (it runs), and hands off to a person to approve migrating
billing onto shard 09: the team stops and its state is saved. Meanwhile a replica monitor finds the
reading stale and proposes retracting it; the on-call engineer approves. The team is rebuilt from
its saved state (the same `run=` continues the trace) and told to go ahead: the migration is vetoed
before it runs, with the trail reading -> turn -> call. The model simply asks again (the same call,
its arguments in another order): vetoed again, naming the first veto. It re-plans on shard 07,
which runs. `rippl.compensations()` lists the announcement, which ran on a reading since retracted.

    uv run python examples/autogen/capture.py
    uv run python examples/autogen/capture.py --live    # a real model (see helpers.py)
"""

from __future__ import annotations

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import Handoff
from autogen_agentchat.conditions import HandoffTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.models import ChatCompletionClient
from rippl_autogen import register_rippl
from rippl_autogen.testing import ScriptedModel, calls, tool_call

from rippl_core import AsyncRippl

from helpers import ask, fleet, main

RUN = "inc-4472"  # the application's conversation id: the run outlives the team objects
SYSTEM = ("You are the ops agent for the payments database. Announce a maintenance window before a "
          "migration, and hand off to the user for approval before migrating tables. If a call "
          "comes back VETOED, find a plan that does not rest on the retracted premise. When the "
          "work is done, say what happened and end with TERMINATE.")


SCRIPT = [
    calls(tool_call("get_shard_health", shard="09")),
    calls(tool_call("announce_window", shard="09", at="02:00Z")),
    calls(tool_call("transfer_to_user")),  # asks a person to approve the migration
    calls(tool_call("migrate_tables", table="billing", shard="09")),
    calls(tool_call("migrate_tables", shard="09", table="billing")),  # the same call again
    calls(tool_call("get_shard_health", shard="07")),  # re-plans on the fallback
    calls(tool_call("migrate_tables", table="billing", shard="07")),
    "Billing is on shard 07. The shard 09 window was announced on a retracted reading: withdraw "
    "it. TERMINATE",
]


def ops_team(model: ChatCompletionClient, rippl: AsyncRippl) -> RoundRobinGroupChat:
    ops = AssistantAgent("ops", model_client=model, system_message=SYSTEM, max_tool_iterations=6,
                         tools=[fleet.get_shard_health, fleet.announce_window, fleet.migrate_tables],
                         handoffs=[Handoff(target="user", description="ask a person to approve")])
    team = RoundRobinGroupChat([ops], termination_condition=HandoffTermination("user")
                               | TextMentionTermination("TERMINATE"))
    register_rippl(team, rippl, run=RUN, memory=False)
    return team


async def story(rippl: AsyncRippl, model: ChatCompletionClient | None = None) -> None:
    fleet.reset()
    model = model or ScriptedModel(SCRIPT)
    team = ops_team(model, rippl)
    await ask(team, "Move billing off shard 03 (the plan: shard 09). Announce a window first.")
    saved = await team.save_state()  # the team waits for a person: it may even be rebuilt elsewhere

    await fleet.retract_stale_reading_async(rippl)

    resumed = ops_team(model, rippl)
    await resumed.load_state(saved)
    await ask(resumed, "Approved: migrate billing to shard 09.")

    print("\nExecuted on a premise since retracted (rippl.compensations()):")
    for owed in await rippl.compensations():
        print("  " + owed.explain().replace("\n", "\n  "))


if __name__ == "__main__":
    main(story, __doc__, live=True)
