"""Declared premises and belief time travel: a plan written down in advance, a premise found false,
and what the crew's memory recalled before and after.

The incident graph (examples/incident.yaml) declares the plan and what it rests on: ACT-001
"migrate billing to shard 09" <- DEC-001 <- CLM-001 "Shard 09 is healthy"; ACT-012, a rollback of
checkout-api, rests on other claims. The crew's memory lives in the same graph (`RipplStorage`).
The engineer's first task rolls checkout-api back (allowed). Between the tasks, telemetry disputes
CLM-001 and a person approves its retraction. The second task migrates billing to shard 09 as
planned: vetoed before it runs, with the trail CLM-001 -> DEC-001 -> ACT-001. The engineer takes
the pre-approved shard 07 fallback instead (allowed). The memory no longer recalls "shard 09 is
healthy"; recalled as of before the retraction, it still shows what was believed then: Verified
then, Retracted now.

    uv run python examples/crewai/premises.py
    uv run python examples/crewai/premises.py --live    # a real model (see helpers.py)
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from crewai import Agent, BaseLLM, Crew, Memory, Task
from crewai.tools import tool
from rippl_crewai import RipplStorage, rippl_guard
from rippl_crewai.testing import HashEmbedder, ScriptedLLM, native_call

from rippl_core import Rippl

from helpers import Follow, fleet, main

INCIDENT = Path(__file__).parents[1] / "incident.yaml"
FACTS = [("Shard 09 is healthy: 0 replication lag, no I/O errors", "CLM-001"),
         ("Shard 07 is healthy with 58% disk free", "CLM-003")]


SCRIPT = [
    native_call("rollback_deploy", {"service": "checkout-api", "to_version": "2.3.7"}),
    "checkout-api is back on 2.3.7.",
    native_call("migrate_tables", {"table": "billing", "shard": "09"}),
    native_call("migrate_tables", {"table": "billing", "shard": "07"}),
    "Billing moved to shard 07, the pre-approved fallback: the shard 09 plan was vetoed because "
    "CLM-001 was retracted.",
]


def story(rippl: Rippl, model: BaseLLM | None = None) -> None:
    fleet.reset()
    rippl.load(INCIDENT)
    llm = model or ScriptedLLM(SCRIPT, native=True)
    storage = RipplStorage(rippl, store="ops-crew")
    memory = Memory(storage=storage, llm=llm, embedder=HashEmbedder())
    for text, claim in FACTS:
        memory.remember(text, scope="/fleet/shards", categories=["health"], importance=0.8,
                        metadata={"rippl_claim": claim}, source="grafana")
    before = datetime.now(UTC)

    def retract(_: Any) -> None:  # between the tasks: the monitor, then a person
        follow()
        print("Telemetry disputes CLM-001 'Shard 09 is healthy'; a person approves the retraction.")
        review = rippl.propose_retraction("CLM-001", by="grafana",
                                          reason="disk errors on shard 09: 214 reallocated sectors")
        rippl.approve(review.id, by="priya")

    with rippl_guard(rippl) as hooks:
        follow = Follow(hooks)
        engineer = Agent(role="database engineer", goal="Keep checkout and billing healthy",
                         backstory="You run the payments Postgres fleet and follow the incident "
                         "plan.", llm=llm, step_callback=follow, max_iter=6,
                         tools=[tool(fleet.rollback_deploy), tool(fleet.migrate_tables)])
        rollback = Task(description="Roll back checkout-api to v2.3.7 (DEC-008).", agent=engineer,
                        expected_output="what was rolled back", callback=retract)
        migrate = Task(description="Move the billing tables off shard 03 before month-end close. "
                       "The plan (DEC-001) moves them to shard 09; the pre-approved fallback is "
                       "shard 07 (DEC-002).", expected_output="where billing lives", agent=engineer)
        print(f"answer: {Crew(agents=[engineer], tasks=[rollback, migrate]).kickoff()}")

    recalled = [m.record.content for m in memory.recall("is shard 09 healthy", depth="shallow")]
    print(f"\nMemory now, 'is shard 09 healthy': {recalled}")
    past = Memory(storage=storage.as_of(before), llm=llm, embedder=HashEmbedder(), read_only=True)
    for match in past.recall("is shard 09 healthy", depth="shallow", limit=1):
        said = match.record.metadata
        print(f"Memory as of before the retraction: {match.record.content!r}: "
              f"{said.get('rippl_status')} then, {said.get('rippl_status_now')} now")


if __name__ == "__main__":
    main(story, __doc__, live=True)
