"""A hand-over and an override: what one agent read travels in its report, and only a person lifts
the veto, for one call.

Two agents, two tasks, each task a run of its own. The researcher reads shard 09's health and
reports "healthy"; when its task ends, a replica monitor finds the reading stale and a person
approves its retraction. The supervisor's task takes the report as its context (a hand-over): the
supervisor never read the health check itself, but the report carried it, so its resize of shard
09 is vetoed, the trail naming both runs. The supervisor asks for an override (`rippl.override`,
proposed by the agent); the on-call engineer checks the shard by hand and approves it through the
review gate. Exactly that call runs, once: asking again is vetoed again.

    uv run python examples/crewai/handover.py
"""

from __future__ import annotations

from typing import Any

from crewai import Agent, Crew, Task
from crewai.tools import tool
from rippl_crewai import rippl_guard
from rippl_crewai.testing import ScriptedLLM, native_call

from rippl_core import Rippl

from helpers import Follow, fleet, main

RESIZE = {"shard": "09", "replicas": 3}


def override_tool(rippl: Rippl, follow: Follow) -> Any:
    @tool("request_override")
    def request_override(reason: str) -> str:
        """Ask a person to let your last vetoed call run once; waits for their answer."""
        follow()
        vetoed = next(v.target for v in reversed(follow.hooks.verdicts) if not v.allowed and v.target)
        proposal = rippl.override(vetoed, reason=reason, by="supervisor")
        # the person: the on-call engineer checks shard 09 by hand and approves
        receipt = rippl.approve(proposal.id, by="oncall-engineer")
        print(f"  oncall-engineer approves override {proposal.id} of {vetoed} (receipt {receipt.id})")
        return f"override {proposal.id} approved by oncall-engineer: the call may run once"
    return request_override


RESEARCHER = [native_call("get_shard_health", {"shard": "09"}),
              "Shard 09 is healthy: a safe target for the billing replicas."]
SUPERVISOR = [
    native_call("resize_replicas", RESIZE),
    native_call("request_override", {"reason": "the replica set was verified by hand"}),
    native_call("resize_replicas", RESIZE),
    native_call("resize_replicas", {"shard": "09", "replicas": 3.0}),  # once more
    "Shard 09 resized once, under the override; not again.",
]


def story(rippl: Rippl) -> None:
    def monitor(_: Any) -> None:  # when the research is done: the replica monitor, then a person
        follow()
        fleet.retract_stale_reading(rippl)

    fleet.reset()
    with rippl_guard(rippl) as hooks:
        follow = Follow(hooks)
        researcher = Agent(role="researcher", goal="Find out whether shard 09 is healthy",
                           backstory="You read the fleet's dashboards.", step_callback=follow,
                           llm=ScriptedLLM(RESEARCHER, native=True),
                           tools=[tool(fleet.get_shard_health)])
        supervisor = Agent(role="supervisor", goal="Size shard 09's replicas for billing",
                           backstory="You run the fleet's changes.", step_callback=follow,
                           llm=ScriptedLLM(SUPERVISOR, native=True), max_iter=8,
                           tools=[tool(fleet.resize_replicas), override_tool(rippl, follow)])
        research = Task(description="Is shard 09 healthy?", expected_output="a short report",
                        agent=researcher, callback=monitor)
        resize = Task(description="Size shard 09's replicas for billing, if the research found it "
                      "healthy.", expected_output="what was resized", agent=supervisor,
                      context=[research])
        print(f"answer: {Crew(agents=[researcher, supervisor], tasks=[research, resize]).kickoff()}")
    [granted] = rippl.overrides()
    print(f"Override {granted.id}: proposed by {granted.proposed_by}, approved by "
          f"{granted.approved_by}, taken by {granted.used_by}; compensations owed: "
          f"{len(rippl.compensations())}")


if __name__ == "__main__":
    main(story, __doc__)
