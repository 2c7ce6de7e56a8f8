"""Declared premises and belief time travel: a plan written down in advance, a premise found
false, and what the operator believed before and after.

The incident graph (examples/incident.yaml) declares the billing migration and what it rests on:
ACT-001 "migrate billing to shard 09" <- DEC-001 <- CLM-001 "Shard 09 is healthy". A planner and
an operator (a `RoundRobinGroupChat`) work the plan; the operator's `RipplMemory` holds what it
believes (shard 09 and shard 07 are healthy) and injects it before each model call. The operator
provisions shard 09 (allowed). Telemetry then disputes CLM-001 and a person approves its
retraction. Told to continue, the operator tries the migration to shard 09: vetoed before it
runs, with the trail CLM-001 -> DEC-001 -> ACT-001; it falls back to shard 07 (allowed). Its
memory no longer injects the shard 09 belief, and belief time travel (`rippl.beliefs("operator",
as_of=...)`) shows what it believed when the work began: Verified then, Retracted now.

    uv run python examples/autogen/premises.py
    uv run python examples/autogen/premises.py --live    # a real model (see helpers.py)
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import ChatCompletionClient
from rippl_autogen import RipplMemory, register_rippl
from rippl_autogen.testing import ScriptedModel, calls, tool_call

from rippl_core import AsyncRippl

from helpers import ask, fleet, main

INCIDENT = Path(__file__).parents[1] / "incident.yaml"
PLANNER = ("You are the incident planner for the payments database. Say in one or two sentences "
           "what the operator should do next. You never call tools.")
OPERATOR = ("You are the operator. Do the planner's step with your tools. If a call comes back "
            "VETOED, read the trail and choose an action that does not rest on the retracted "
            "premise (billing's pre-approved fallback home is shard 07). When the step is done, say "
            "what happened in one sentence and end with TERMINATE.")


PLANNER_SCRIPT = [
    "Provision shard 09 for billing's write load first (16k IOPS, 64 GB max_wal_size).",
    "Shard 09's health is retracted. Migrate billing now; if shard 09 is vetoed, use the "
    "pre-approved shard 07 fallback.",
]
OPERATOR_SCRIPT = [
    calls(tool_call("resize_volume", shard="09", iops=16000, max_wal_size_gb=64)),
    "Shard 09 is provisioned for billing. TERMINATE",
    calls(tool_call("migrate_tables", table="billing", shard="09")),
    calls(tool_call("migrate_tables", table="billing", shard="07")),
    "Rippl vetoed the move to shard 09 (CLM-001 was retracted), so billing went to the shard 07 "
    "fallback instead. TERMINATE",
]


async def story(rippl: AsyncRippl, model: ChatCompletionClient | None = None) -> None:
    fleet.reset()
    await rippl.load(INCIDENT)
    memory = RipplMemory(rippl, "operator")
    for claim, topic, source in (("CLM-001", "shard-09-health", "SRC-001"),
                                 ("CLM-003", "shard-07-health", "SRC-013")):
        await memory.add(MemoryContent(content=(await rippl.get(claim)).text,
                                       mime_type=MemoryMimeType.TEXT,
                                       metadata={"claim_id": claim, "topic": topic,
                                                 "sources": [source]}))
    began = datetime.now(UTC)
    planner = AssistantAgent("planner", model_client=model or ScriptedModel(PLANNER_SCRIPT),
                             system_message=PLANNER)
    operator = AssistantAgent("operator", model_client=model or ScriptedModel(OPERATOR_SCRIPT),
                              tools=[fleet.resize_volume, fleet.migrate_tables], memory=[memory],
                              system_message=OPERATOR, max_tool_iterations=4)
    team = RoundRobinGroupChat([planner, operator], termination_condition=(
        TextMentionTermination("TERMINATE") | MaxMessageTermination(12)))
    register_rippl(team, rippl, memory=False)  # every agent's tools guarded, its run captured

    await ask(team, "INC-4471 follow-up: billing must leave shard 03 before month-end. "
                    "Start with shard 09.")

    print("Telemetry disputes CLM-001 'Shard 09 is healthy'; a person approves the retraction.")
    review = await rippl.propose_retraction(
        "CLM-001", reason="Grafana: replication lag 45 s and I/O errors on shard 09",
        by="grafana-alert", evidence="https://grafana.internal/d/pg-shards?var-shard=09")
    await rippl.approve(review.id, by="priya.raman", note="confirmed on the host")

    await ask(team, "Update: CLM-001 was retracted. Continue the billing migration.")

    print("What the operator believed when the work began (rippl.beliefs(as_of=...)):")
    for belief in await rippl.beliefs("operator", as_of=began):
        print(f"  {belief.topic}: {belief.text} [{belief.claim_status} then, "
              f"{belief.claim_status_now} now]")


if __name__ == "__main__":
    main(story, __doc__, live=True)
