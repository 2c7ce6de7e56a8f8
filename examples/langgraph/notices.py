"""Rippl notices: a reading that ages is stale, a newer reading supersedes it, and a poisoned source
is retracted everywhere it was read, by one review. Nobody has to propose the first two.

Each agent is a `create_agent` graph with `RipplMiddleware(tool_settings=...)`: the health check
is a read whose readings stay valid five minutes, and a demo clock lets time pass. A capacity
planner reads shard 09 ("healthy") and decides to resize it; its graph stops before the tool step
(`interrupt_before`), the resize waiting for the nightly window. The ops agent reads the same
health; twelve minutes later, on that reading, it migrates billing onto shard 09: denied as stale
(no review, nothing to compensate), so it reads again and sees "degraded". Resumed when the window
opens, the planner's pending resize is judged again: denied as superseded, naming the newer
reading. Then three agents read pages of evil.example and act on them; the third stops before its
act. An alert says the site serves a prompt injection: one proposal covers everything `fetch_url`
returned from it, in every thread; a person approves one wave, the waiting call is vetoed on
resume, and the two that ran are listed to undo.

    uv run python examples/langgraph/notices.py
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from rippl_langgraph import FalkorDBSaver, RipplMiddleware
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import Rippl, ToolSettings
from rippl_core.testing import Clock

from helpers import ask, fleet, main

FRESH = {"get_shard_health": ToolSettings(fresh_for=fleet.FRESH_FOR)}


TOOLS = [tool(f) for f in (fleet.get_shard_health, fleet.migrate_tables, fleet.resize_replicas,
                          fleet.fetch_url, fleet.post_summary, fleet.send_email, fleet.open_ticket)]


def agent(rippl: Rippl, name: str, script: list[AIMessage], *, waits: bool = False) -> Any:
    """An agent of its own run; `waits`: each tool step waits until it is resumed."""
    return create_agent(ScriptedChatModel(script=script), TOOLS,
                        middleware=[RipplMiddleware(rippl, agent=name, tool_settings=FRESH)],
                        checkpointer=FalkorDBSaver(rippl),
                        interrupt_before=["tools"] if waits else None)


def story(rippl: Rippl) -> None:
    fleet.reset()
    with Clock() as clock:
        print("N1. The capacity planner reads shard 09 and plans a resize for the nightly window.")
        planner = agent(rippl, "capacity-planner", [
            calls(tool_call("get_shard_health", {"shard": "09"})),
            calls(tool_call("resize_replicas", {"shard": "09", "replicas": 5})),
            AIMessage("My shard 09 reading was superseded: no resize until I read it again.")],
            waits=True)
        window = {"configurable": {"thread_id": "notices/capacity-planner"}}
        ask(planner, "Size shard 09's replicas tonight.", window)
        ask(planner, None, window)  # the read runs; the resize waits for the window
        print("  (the resize waits for the nightly window)")

        print("\nN2. The ops agent reads shard 09 too; twelve minutes later it migrates on that.")
        ops = agent(rippl, "ops-agent", [
            calls(tool_call("get_shard_health", {"shard": "09"})),
            AIMessage("Shard 09 is healthy."),
            calls(tool_call("migrate_tables", {"table": "billing", "shard": "09"})),
            calls(tool_call("get_shard_health", {"shard": "09"})),  # it reads again, as told
            AIMessage("Shard 09 is degraded now: billing stays where it is.")])
        thread = {"configurable": {"thread_id": "notices/ops-agent"}}
        ask(ops, "How is shard 09?", thread)
        clock.advance(minutes=12)
        fleet.HEALTH["09"] = "shard 09: degraded, 14% I/O errors"  # meanwhile, it degraded
        ask(ops, "Move billing onto shard 09.", thread)

        print("\nN3. The nightly window opens: the planner's resize is judged before it runs.")
        ask(planner, None, window)
    print(f"  New reviews: {len(rippl.reviews(None))}; compensations: {len(rippl.compensations())} "
          "(stale is not false)")

    print("\nN4. Three agents read pages of evil.example and act on them; the third waits.")
    for n, (name, action, args) in enumerate(fleet.READERS):
        waits = name == "analyst"
        reader = agent(rippl, name, [calls(tool_call("fetch_url", {"url": f"{fleet.EVIL}notes-{n}"})),
                                     calls(tool_call(action, args)), AIMessage("Done.")],
                       waits=waits)
        run = {"configurable": {"thread_id": f"notices/{name}"}}
        ask(reader, "Act on the notes.", run)
        if waits:
            ask(reader, None, run)  # the page is read; the act waits for a person

    print(f"\nN5. An alert: evil.example serves a prompt injection. Its rule proposes retracting "
          f"everything fetch_url returned from {fleet.EVIL}, as one review.")
    item = rippl.propose_retraction_where(tool="fetch_url", source_prefix=fleet.EVIL, by="alertmanager",
                                          monitor="alertmanager",
                                          reason="evil.example serves a prompt injection")
    receipt = rippl.approve(item.id, by="alice@oncall", note="confirmed: the page is poisoned")
    print(f"  review {item.id} covers {len(item.claims)} sources; alice@oncall approves: one wave, "
          f"receipt {receipt.id}")
    ask(reader, None, run)  # the waiting call is judged before it runs
    for owed in rippl.compensations():
        print(f"  to undo: {owed.tool} in run {owed.run} (it ran on a poisoned page)")


if __name__ == "__main__":
    main(story, __doc__)
