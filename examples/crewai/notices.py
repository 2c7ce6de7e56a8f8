"""Rippl notices: a reading that ages is stale, a newer reading supersedes it, and a poisoned source
is retracted everywhere it was read, by one review. Nobody has to propose the first two.

The health check is a read whose readings stay valid five minutes (`tool_settings`); a demo clock
lets time pass. A capacity planner reads shard 09 ("healthy") and decides, in one turn, to wait for
the nightly window and then resize shard 09; its crew waits on a thread of its own. Meanwhile the
ops agent reads the same health; after twelve minutes in its change queue it migrates billing onto
shard 09 on that reading: denied as stale (no review, nothing to compensate), so it reads again and
sees "degraded". When the window opens, the planner's resize is judged before it runs: denied as
superseded, naming the newer reading. Then three crews read pages of evil.example and act on them
(two calls run, the third waits for a person). An alert says the site serves a prompt injection:
one proposal covers everything `fetch_url` returned from it, in every run; a person approves one
wave, the waiting call is vetoed, and what ran on the pages is listed to undo.

    uv run python examples/crewai/notices.py
"""

from __future__ import annotations

import threading
from typing import Any

from crewai import Agent, Crew, Task
from crewai.tools import BaseTool, tool
from rippl_crewai import register_rippl_hooks
from rippl_crewai.testing import ScriptedLLM, native_call

from rippl_core import Rippl, ToolSettings
from rippl_core.testing import Clock

from helpers import Follow, fleet, main

FRESH = {"get_shard_health": ToolSettings(fresh_for=fleet.FRESH_FOR)}
READ_HEALTH = tool(fleet.get_shard_health)
ACTS = [tool(fleet.post_summary), tool(fleet.send_email), tool(fleet.open_ticket)]


class Wait:
    """A `wait_for` tool that returns once `over()` is called (a window opens, a person answers);
    `waiting` is set while it waits."""

    def __init__(self) -> None:
        self.waiting, self.done = threading.Event(), threading.Event()

    def over(self) -> None:
        self.done.set()

    def tool(self) -> BaseTool:
        @tool("wait_for")
        def wait_for(reason: str) -> str:
            """Wait: for the nightly window, or for a person."""
            self.waiting.set()
            self.done.wait(timeout=120)
            return f"done waiting: {reason}"
        wait_for.max_usage_count = 9  # a usage limit makes CrewAI run a turn's calls in order
        return wait_for


def crew(role: str, script: list[Any], tools: list[BaseTool], follow: Follow) -> Crew:
    agent = Agent(role=role, goal="Keep the payments fleet healthy", backstory="You work on the "
                  "payments Postgres fleet.", llm=ScriptedLLM(script, native=True), tools=tools,
                  max_iter=8, step_callback=follow)
    return Crew(agents=[agent], tasks=[Task(description=f"Do the {role}'s work.", agent=agent,
                                            expected_output="a summary")])


def start(crew: Crew) -> threading.Thread:
    """Kick the crew off on a thread of its own (it may wait while the story goes on)."""
    working = threading.Thread(target=crew.kickoff)
    working.start()
    return working


def story(rippl: Rippl) -> None:
    fleet.reset()
    # global hooks (not rippl_guard's scope): each crew works on a thread of its own
    hooks = register_rippl_hooks(rippl, tool_settings=FRESH, unguarded=["wait_for"])
    follow = Follow(hooks)
    try:
        with Clock() as clock:
            print("N1. The capacity planner reads shard 09 and, in one turn, waits for the nightly "
                  "window and then resizes it.")
            window = Wait()
            planner = crew("capacity planner", [
                native_call("get_shard_health", {"shard": "09"}),
                [*native_call("wait_for", {"reason": "the nightly window"}),
                 *native_call("resize_replicas", {"shard": "09", "replicas": 5})],
                "My shard 09 reading was superseded: no resize until I read it again."],
                [READ_HEALTH, window.tool(), tool(fleet.resize_replicas)], follow)
            planning = start(planner)
            window.waiting.wait(timeout=120)
            follow()
            print("  (the resize waits for the nightly window)")

            print("\nN2. The ops agent reads shard 09 too; twelve minutes later it migrates on that.")
            queue = Wait()
            ops = crew("ops agent", [
                native_call("get_shard_health", {"shard": "09"}),
                [*native_call("wait_for", {"reason": "a change slot"}),
                 *native_call("migrate_tables", {"table": "billing", "shard": "09"})],
                native_call("get_shard_health", {"shard": "09"}),  # it reads again, as told
                "Shard 09 is degraded now: billing stays where it is."],
                [READ_HEALTH, queue.tool(), tool(fleet.migrate_tables)], follow)
            working = start(ops)
            queue.waiting.wait(timeout=120)
            clock.advance(minutes=12)  # the slot comes twelve minutes later; the shard degraded
            fleet.HEALTH["09"] = "shard 09: degraded, 14% I/O errors"
            queue.over()
            working.join(timeout=120)
            follow()

            print("\nN3. The nightly window opens: the planner's resize is judged before it runs.")
            window.over()
            planning.join(timeout=120)
            follow()
        print(f"  New reviews: {len(rippl.reviews(None))}; compensations: "
              f"{len(rippl.compensations())} (stale is not false)")

        print("\nN4. Three crews read pages of evil.example and act on them; the third waits.")
        approval = Wait()
        for n, (role, action, args) in enumerate(fleet.READERS):
            act = native_call(action, args)
            if role == "analyst":  # it waits for a person's approval, then acts
                act = [*native_call("wait_for", {"reason": "a person's approval"}), *act]
            reader = crew(role, [native_call("fetch_url", {"url": f"{fleet.EVIL}notes-{n}"}), act, "Done."],
                          [tool(fleet.fetch_url), approval.tool(), *ACTS], follow)
            acting = start(reader)
            if role != "analyst":
                acting.join(timeout=120)
        approval.waiting.wait(timeout=120)
        follow()

        print(f"\nN5. An alert: evil.example serves a prompt injection. Its rule proposes retracting "
              f"everything fetch_url returned from {fleet.EVIL}, as one review.")
        item = rippl.propose_retraction_where(tool="fetch_url", source_prefix=fleet.EVIL,
                                              by="alertmanager", monitor="alertmanager",
                                              reason="evil.example serves a prompt injection")
        receipt = rippl.approve(item.id, by="alice@oncall", note="confirmed: the page is poisoned")
        print(f"  review {item.id} covers {len(item.claims)} sources; alice@oncall approves: one "
              f"wave, receipt {receipt.id}")
        approval.over()
        acting.join(timeout=120)
        follow()
    finally:
        hooks.unregister()
    for owed in rippl.compensations():
        print(f"  to undo: {owed.tool} in run {owed.run} (it ran on a poisoned page)")


if __name__ == "__main__":
    main(story, __doc__)
