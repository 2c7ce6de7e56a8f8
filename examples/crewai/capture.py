"""Capture and a repeat: a call rests on what the agent read, and asking again does not lift a veto.

Nothing is declared in advance: Rippl records what each call of the crew rests on as it runs
(capture, the hooks' default). The engineer reads shard 09's health ("healthy", answered by a
replica that, unknown to anyone yet, is six hours stale), announces a maintenance window (it runs)
and plans to migrate billing onto shard 09; the task then waits for a person's approval
(`Task(human_input=True)`). Meanwhile a replica monitor finds the reading stale and proposes
retracting it; the on-call engineer approves. The person says go ahead: the migration is vetoed
before it runs, with the trail reading -> turn -> call. The model simply asks again (the same
call, its arguments in another order): vetoed again, naming the first veto. It re-plans on shard
07, which runs. `rippl.compensations()` lists the announcement, which ran on a reading since
retracted.

    uv run python examples/crewai/capture.py
    uv run python examples/crewai/capture.py --live    # a real model (see helpers.py)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from crewai import Agent, BaseLLM, Crew, Task
from crewai.core.providers.human_input import SyncHumanInputProvider, reset_provider, set_provider
from crewai.tools import tool
from rippl_crewai import rippl_guard
from rippl_crewai.testing import ScriptedLLM, native_call

from rippl_core import Rippl

from helpers import Follow, fleet, main

APPROVAL = "Approved: go ahead with the billing migration."


SCRIPT = [
    native_call("get_shard_health", {"shard": "09"}),
    native_call("announce_window", {"shard": "09", "at": "02:00Z"}),
    "Plan: migrate billing to shard 09 in the 02:00Z window (announced). Awaiting approval.",
    native_call("migrate_tables", {"table": "billing", "shard": "09"}),
    native_call("migrate_tables", {"shard": "09", "table": "billing"}),  # the same call again
    native_call("get_shard_health", {"shard": "07"}),  # re-plans on the fallback
    native_call("migrate_tables", {"table": "billing", "shard": "07"}),
    "Billing is on shard 07. The shard 09 window was announced on a retracted reading: withdraw it.",
]


class Approver(SyncHumanInputProvider):
    """The person the task waits for: `meanwhile` happens while they read the plan; they approve
    it, then accept the answer."""

    def __init__(self, meanwhile: Callable[[], None]) -> None:
        self.meanwhile, self.answers = meanwhile, iter([APPROVAL])

    def _prompt_input(self, crew: Any) -> str:
        answer = next(self.answers, "")
        if answer:
            self.meanwhile()
            print(f"  person: {answer}")
        return answer


def story(rippl: Rippl, model: BaseLLM | None = None) -> None:
    def monitor() -> None:  # while the task waits for the person
        follow()
        fleet.retract_stale_reading(rippl)

    fleet.reset()
    waiting = set_provider(Approver(monitor))
    try:
        with rippl_guard(rippl) as hooks:
            follow = Follow(hooks)
            engineer = Agent(role="database engineer", goal="Move billing off shard 03 safely",
                             backstory="You run the payments Postgres fleet.", max_iter=10,
                             llm=model or ScriptedLLM(SCRIPT, native=True), step_callback=follow,
                             tools=[tool(fleet.get_shard_health), tool(fleet.announce_window),
                                    tool(fleet.migrate_tables)])
            task = Task(description="Move the billing tables off shard 03 (the plan: shard 09). "
                        "Announce a maintenance window first, and get a person's approval before "
                        "you migrate.", expected_output="where billing lives now", agent=engineer,
                        human_input=True)
            print(f"answer: {Crew(agents=[engineer], tasks=[task]).kickoff()}")
    finally:
        reset_provider(waiting)

    print("\nExecuted on a premise since retracted (rippl.compensations()):")
    for owed in rippl.compensations():
        print("  " + owed.explain().replace("\n", "\n  "))


if __name__ == "__main__":
    main(story, __doc__, live=True)
