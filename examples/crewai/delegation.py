"""Delegation: a veto binds the team. A task refused to one agent does not become a fresh act in
another agent's hands.

The lead (`allow_delegation=True`) reads shard 09's health ("healthy", from a replica that, unknown
to anyone yet, is six hours stale). While it thinks, a replica monitor finds the reading stale and
the on-call engineer approves its retraction: the lead's migration is vetoed. The lead does what
leads do with a blocked task: "Delegate work to coworker", to the operator, who never read the
health check. The operator's identical migration stays vetoed, naming the lead's veto and the
delegation; its different plan (shard 07) runs. Only a person lifts the veto, for the whole crew.

    uv run python examples/crewai/delegation.py
"""

from __future__ import annotations

from crewai import Agent, Crew, Task
from crewai.tools import tool
from rippl_crewai import rippl_guard
from rippl_crewai.testing import ScriptedLLM, native_call

from rippl_core import Rippl

from helpers import Follow, fleet, main, retracted_meanwhile

TO_09 = {"table": "billing", "shard": "09"}


def story(rippl: Rippl) -> None:
    fleet.reset()

    with rippl_guard(rippl) as hooks:
        follow = Follow(hooks)
        operator = Agent(role="operator", goal="Run migrations", backstory="You run migrations.",
                         tools=[tool(fleet.get_shard_health), tool(fleet.migrate_tables)],
                         step_callback=follow, llm=ScriptedLLM([
                             native_call("migrate_tables", {"shard": "09", "table": "billing"}),
                             native_call("get_shard_health", {"shard": "07"}),
                             native_call("migrate_tables", {"table": "billing", "shard": "07"}),
                             "Billing is on shard 07."], native=True))
        lead = Agent(role="lead", goal="Move billing", backstory="You lead the migration.",
                     tools=[tool(fleet.get_shard_health), tool(fleet.migrate_tables)],
                     allow_delegation=True, step_callback=follow, llm=ScriptedLLM([
                         native_call("get_shard_health", {"shard": "09"}),
                         retracted_meanwhile(rippl, native_call("migrate_tables", TO_09)),
                         native_call("delegate_work_to_coworker", {
                             "task": "Migrate the billing tables to shard 09.",
                             "context": "the billing migration", "coworker": "operator"}),
                         "The operator moved billing."], native=True))
        task = Task(description="Move billing to shard 09.", expected_output="where billing is",
                    agent=lead)
        Crew(agents=[lead, operator], tasks=[task]).kickoff()
    print(f"\nWhat ran: {fleet.RAN}")


if __name__ == "__main__":
    main(story, __doc__)
