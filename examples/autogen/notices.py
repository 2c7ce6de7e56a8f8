"""Rippl notices: a reading that ages is stale, a newer reading supersedes it, and a poisoned source
is retracted everywhere it was read, by one review. Nobody has to propose the first two.

`register_rippl(..., tool_settings=...)` makes the health check a read valid five minutes, and a
demo clock lets time pass. Each agent runs alone, and, run again, goes on from what it saw. A
capacity planner reads shard 09 ("healthy") and says it will resize it in the nightly window. The
ops agent reads the same health; twelve minutes later it is asked to migrate billing onto shard 09
and does, on that reading: denied as stale (no review, nothing to compensate), so it reads again
and sees "degraded". When the window opens, the planner's resize rests on a reading the newer one
superseded: denied, naming it. Then three agents read pages of evil.example and act on them; the
third waits to be told to go ahead. An alert says the site serves a prompt injection: one
proposal covers everything `fetch_url` returned from it, in every run; a person approves one
wave, the third agent's act is vetoed, and the two that ran are listed to undo.

    uv run python examples/autogen/notices.py
"""

from __future__ import annotations

from autogen_agentchat.agents import AssistantAgent
from rippl_autogen import register_rippl
from rippl_autogen.testing import ScriptedModel, Step, calls, tool_call

from rippl_core import AsyncRippl, ToolSettings
from rippl_core.testing import Clock

from helpers import fleet, follow, main

FRESH = {"get_shard_health": ToolSettings(fresh_for=fleet.FRESH_FOR)}


def agent(rippl: AsyncRippl, name: str, script: list[Step]) -> AssistantAgent:
    """An agent of its own run (`notices/<name>`); run again, it goes on from what it saw."""
    found = AssistantAgent(name, model_client=ScriptedModel(script), max_tool_iterations=4,
                           reflect_on_tool_use=False,
                           tools=[fleet.get_shard_health, fleet.migrate_tables,
                                  fleet.resize_replicas, fleet.fetch_url, fleet.post_summary,
                                  fleet.send_email, fleet.open_ticket])
    register_rippl(found, rippl, run="notices", memory=False, tool_settings=FRESH)
    return found


async def story(rippl: AsyncRippl) -> None:
    fleet.reset()
    with Clock() as clock:
        print("N1. The capacity planner reads shard 09 and plans a resize for the nightly window.")
        planner = agent(rippl, "capacity_planner", [
            calls(tool_call("get_shard_health", shard="09")),
            "Shard 09 is healthy: I will resize it to 5 replicas in the nightly window.",
            calls(tool_call("resize_replicas", shard="09", replicas=5)),
            "My shard 09 reading was superseded: no resize until I read it again."])
        await follow(planner.run_stream(task="Size shard 09's replicas in tonight's window."))

        print("\nN2. The ops agent reads shard 09 too; twelve minutes later it migrates on that.")
        ops = agent(rippl, "ops", [
            calls(tool_call("get_shard_health", shard="09")),
            "Shard 09 is healthy.",
            calls(tool_call("migrate_tables", table="billing", shard="09")),
            calls(tool_call("get_shard_health", shard="09")),  # it reads again, as told
            "Shard 09 is degraded now: billing stays where it is."])
        await follow(ops.run_stream(task="How is shard 09?"))
        clock.advance(minutes=12)
        fleet.HEALTH["09"] = "shard 09: degraded, 14% I/O errors"  # meanwhile, it degraded
        await follow(ops.run_stream(task="Move billing onto shard 09."))

        print("\nN3. The nightly window opens: the planner resizes on its reading.")
        await follow(planner.run_stream(task="The window is open."))
    print(f"  New reviews: {len(await rippl.reviews(None))}; compensations: "
          f"{len(await rippl.compensations())} (stale is not false)")

    print("\nN4. Three agents read pages of evil.example and act on them; the third waits.")
    for n, (name, action, args) in enumerate(fleet.READERS):
        waits = ["I will open the ticket once a person approves."] if name == "analyst" else []
        reader = agent(rippl, name, [calls(tool_call("fetch_url", url=f"{fleet.EVIL}notes-{n}")), *waits,
                                     calls(tool_call(action, **args)), "Done."])
        await follow(reader.run_stream(task=f"Act on the notes at {fleet.EVIL}notes-{n}."))

    print(f"\nN5. An alert: evil.example serves a prompt injection. Its rule proposes retracting "
          f"everything fetch_url returned from {fleet.EVIL}, as one review.")
    item = await rippl.propose_retraction_where(tool="fetch_url", source_prefix=fleet.EVIL,
                                                by="alertmanager", monitor="alertmanager",
                                                reason="evil.example serves a prompt injection")
    receipt = await rippl.approve(item.id, by="alice@oncall", note="confirmed: the page is poisoned")
    print(f"  review {item.id} covers {len(item.claims)} sources; alice@oncall approves: one wave, "
          f"receipt {receipt.id}")
    await follow(reader.run_stream(task="Go ahead."))  # the analyst acts on what it read
    for owed in await rippl.compensations():
        print(f"  to undo: {owed.tool} in run {owed.run} (it ran on a poisoned page)")


if __name__ == "__main__":
    main(story, __doc__)
