"""Quickstart: a CrewAI crew's call is vetoed because what it read was found false.

The crew has two tasks: check shard 09's health, then migrate billing onto it. Reading shard 09
returns "healthy", and Rippl records the reading as what the agent's later work rests on
(capture, on by default: nothing is declared in advance). When the check is done, a monitor finds
the reading came from a replica six hours stale and proposes retracting it; a person approves (the
review gate). The migration task acts on the check's report, so the call is vetoed before it
runs, and the model reads why, with the trail from the reading to the call.

    uv run python examples/crewai/quickstart.py           # a scripted model, offline
    uv run python examples/crewai/quickstart.py --live    # a real model (see helpers.py)
"""

from __future__ import annotations

from typing import Any

from crewai import Agent, BaseLLM, Crew, Task
from crewai.tools import tool
from rippl_crewai import rippl_guard
from rippl_crewai.testing import ScriptedLLM, native_call

from rippl_core import Rippl

from helpers import Follow, fleet, main

SCRIPT = [native_call("get_shard_health", {"shard": "09"}), "Shard 09 is healthy.",
          native_call("migrate_tables", {"table": "billing", "shard": "09"}),
          "Rippl vetoed the migration: the shard 09 reading was retracted. Billing stays."]


def story(rippl: Rippl, model: BaseLLM | None = None) -> None:
    def monitor(_: Any) -> None:  # when the check is done: the replica monitor, then a person
        follow()
        print("A replica monitor finds the reading stale; a person approves its retraction.")
        review = rippl.propose_retraction_where(tool="get_shard_health", args={"shard": "09"},
                                                reason="replica r3 lags its primary by 6 h",
                                                by="replica-monitor")
        rippl.approve(review.id, by="alice@oncall")

    fleet.reset()
    with rippl_guard(rippl) as hooks:
        follow = Follow(hooks)
        ops = Agent(role="ops engineer", goal="Move billing off shard 03", backstory="You run the "
                    "payments database fleet.", llm=model or ScriptedLLM(SCRIPT, native=True),
                    tools=[tool(fleet.get_shard_health), tool(fleet.migrate_tables)],
                    step_callback=follow)
        check = Task(description="Is shard 09 healthy?", expected_output="its health", agent=ops,
                     callback=monitor)
        move = Task(description="Migrate billing onto shard 09 if it is healthy.",
                    context=[check], expected_output="where billing is", agent=ops)
        print(f"answer: {Crew(agents=[ops], tasks=[check, move]).kickoff()}")


if __name__ == "__main__":
    main(story, __doc__, live=True)
