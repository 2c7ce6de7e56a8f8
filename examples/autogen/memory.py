"""Memory: what an agent saves goes out with what it was read from.

The scout (run inc-4480) reads shard 09's health ("healthy", answered by a replica that, unknown to
anyone yet, is six hours stale) and saves what it read with a tool that calls `RipplMemory.add`:
that memory rests on the reading it was written from. The operator (run inc-4481, the same
`RipplMemory` as its memory) is shown "Shard 09 is healthy" before its model call, and waits for a
person's go-ahead. Meanwhile a replica monitor finds the reading stale and the on-call engineer
approves its retraction: the memory goes OUT with it (nobody dropped it). Told to go ahead, the
operator migrates on what it was shown: vetoed, the trail running reading -> run inc-4480 wrote it
-> the memory -> the call.

    uv run python examples/autogen/memory.py
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from autogen_agentchat.agents import AssistantAgent
from autogen_core.memory import MemoryContent, MemoryMimeType
from rippl_autogen import RipplMemory, register_rippl
from rippl_autogen.testing import ScriptedModel, calls, tool_call

from rippl_core import AsyncRippl

from helpers import ask, fleet, main


def note_tool(memory: RipplMemory) -> Callable[[str], Awaitable[str]]:
    async def save_note(fact: str) -> str:
        """Save a fact to the team's memory."""
        await memory.add(MemoryContent(content=fact, mime_type=MemoryMimeType.TEXT,
                                       metadata={"topic": "shard-09-health"}))
        return "saved"
    return save_note


async def story(rippl: AsyncRippl) -> None:
    fleet.reset()
    memory = RipplMemory(rippl, agent="ops")
    scout = AssistantAgent("scout", tools=[fleet.get_shard_health, note_tool(memory)],
                           max_tool_iterations=4, model_client=ScriptedModel([
                               calls(tool_call("get_shard_health", shard="09")),
                               calls(tool_call("save_note", fact="Shard 09 is healthy")),
                               "Noted: shard 09 is healthy."]))
    register_rippl(scout, rippl, run="inc-4480", memory=False)
    await ask(scout, "Check shard 09 and note what you find.")

    operator = AssistantAgent("operator", memory=[memory], tools=[fleet.migrate_tables],
                              max_tool_iterations=4, model_client=ScriptedModel([
                                  "Memory says shard 09 is healthy. Waiting for a go-ahead.",
                                  calls(tool_call("migrate_tables", table="billing", shard="09")),
                                  "Not migrating: what I was shown no longer holds."]))
    register_rippl(operator, rippl, run="inc-4481", memory=False)
    await ask(operator, "Move billing to a healthy shard.")

    await fleet.retract_stale_reading_async(rippl)
    await ask(operator, "Go ahead.")
    belief = await rippl.ask("ops", "shard-09-health")
    assert belief is not None
    print(f"\nThe memory: {belief.describe()}")


if __name__ == "__main__":
    main(story, __doc__)
