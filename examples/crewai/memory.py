"""Memory: what an agent saves goes out with what it was read from.

The crew keeps its memory in Rippl (`Memory(storage=RipplStorage(rippl))`). In a first kickoff the
scout reads shard 09's health ("healthy", answered by a replica that, unknown to anyone yet, is six
hours stale) and saves what it read with a tool (`memory.remember`): that memory rests on the
reading it was written from. In a later kickoff the operator recalls "Shard 09 is healthy". While
it thinks, a replica monitor finds the reading stale and the on-call engineer approves its
retraction: the memory goes OUT with it (nobody dropped it), and the migration resting on the
recall is vetoed, the trail running reading -> the scout's task wrote it -> the memory -> the
call.

    uv run python examples/crewai/memory.py
"""

from __future__ import annotations

import json

from crewai import Agent, Crew, Memory, Task
from crewai.tools import tool
from rippl_crewai import RipplStorage, rippl_guard
from rippl_crewai.testing import HashEmbedder, ScriptedLLM, native_call

from rippl_core import Rippl

from helpers import Follow, fleet, main, retracted_meanwhile

TO_09 = {"table": "billing", "shard": "09"}


def crew_memory(rippl: Rippl) -> Memory:
    """The crew's memory in Rippl; its own model (filing and extracting memories) answers as a
    model asked to file a fact would, with nothing to add."""
    return Memory(storage=RipplStorage(rippl), embedder=HashEmbedder(),
                  llm=ScriptedLLM([lambda _: json.dumps({"memories": []})]))


def story(rippl: Rippl) -> None:
    fleet.reset()
    memory = crew_memory(rippl)

    @tool
    def remember(fact: str) -> str:
        """Save a fact to the crew's memory."""
        memory.remember(fact, scope="/ops", categories=["shards"], importance=0.9)
        return "saved"

    @tool
    def recall(query: str) -> str:
        """Recall what the crew's memory holds."""
        found = memory.recall(query, depth="shallow")
        return "\n".join(m.record.content for m in found) or "nothing remembered"

    with rippl_guard(rippl) as hooks:
        follow = Follow(hooks)
        scout = Agent(role="scout", goal="Know the fleet's health", backstory="You read dashboards.",
                      tools=[tool(fleet.get_shard_health), remember], step_callback=follow,
                      llm=ScriptedLLM([native_call("get_shard_health", {"shard": "09"}),
                                       native_call("remember", {"fact": "Shard 09 is healthy"}),
                                       "Noted: shard 09 is healthy."], native=True))
        Crew(agents=[scout], tasks=[Task(description="Check shard 09 and note what you find.",
                                         expected_output="a note", agent=scout)]).kickoff()
        memory.drain_writes()
        operator = Agent(role="operator", goal="Move billing", backstory="You run migrations.",
                         tools=[recall, tool(fleet.migrate_tables)], step_callback=follow,
                         llm=ScriptedLLM([native_call("recall", {"query": "shard 09 health"}),
                                          retracted_meanwhile(rippl, native_call("migrate_tables", TO_09)),
                                          "Not migrating: what I remembered no longer holds."],
                                         native=True))
        Crew(agents=[operator], tasks=[Task(description="Move billing to a healthy shard.",
                                            expected_output="where billing lives now",
                                            agent=operator)]).kickoff()
    [saved] = [r for r in memory.list_records() if r.content == "Shard 09 is healthy"]
    print(f"\nThe memory {saved.metadata['rippl_claim']}: {saved.metadata['rippl_status']} "
          "(a premise it rests on was retracted; nobody dropped it)")


if __name__ == "__main__":
    main(story, __doc__)
