"""`rippl demo`: the incident story, the belief-time story, the capture story, the memory story
and the notices story, offline, in seconds; with `--serve`, then the review console on the demo
graph."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from rippl_core.cli.app import command, connection, console, errors
from rippl_core.cli.serve import run_console


class Story(StrEnum):
    """Which story the demo tells."""

    all = "all"
    incident = "incident"
    beliefs = "beliefs"
    capture = "capture"
    memory = "memory"
    notices = "notices"

DEMO_REVIEWER = "demo-reviewer"
DEMO_GRAPH = "rippl-demo"


@command("demo")
def demo_cmd(ctx: typer.Context,
             temporal: bool | None = typer.Option(None, "--temporal/--causal",
                                                  help="Only the belief-time story, or only the "
                                                       "incident story."),
             story: Annotated[Story, typer.Option(help="Which story.")] = Story.all,
             serve: bool = typer.Option(False, "--serve",
                                        help="Then open the demo graph in the review console, "
                                             "with a pending proposal and a one-off reviewer."),
             port: int = typer.Option(8765, help="With --serve: the console's port.")) -> None:
    """Run the demo: a vetoed tool call, its blast radius and receipt; belief time travel; a run
    captured as it happens, its call vetoed after a pause, with what to compensate; a memory that
    goes out with the reading it was written from, and a veto that binds the team; and readings
    that age and supersede one another (stale is not false)."""
    from rippl_core.cli.stories import incident  # the stories, their models and the client

    chosen = {None: story.value, True: "beliefs", False: "incident"}[temporal]
    conn = connection(ctx)
    if conn.graph not in ("rippl", DEMO_GRAPH):
        errors.print(f"note: the demo writes only its own graph {DEMO_GRAPH!r} (it starts by "
                     f"emptying it); graph {conn.graph!r} is left untouched", highlight=False,
                     markup=False)
    conn.graph = DEMO_GRAPH  # the demo empties its graph first: never any other graph
    with conn.open(create=True) as rippl:
        incident.run(rippl, console, story=chosen)
        if serve and chosen in ("all", "incident"):
            item = incident.propose_again(rippl)
            console.print(f"\nA monitor proposes retracting {item.claim} again ({item.id}): decide "
                          "it in the console.")
    if serve:
        run_console(conn, host="127.0.0.1", port=port, reviewers=None, reviewer=DEMO_REVIEWER,
                    allow_remote=False, allowed_host=[], distinct_approver=True, log_level="warning")
