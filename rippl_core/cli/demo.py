"""`rippl demo`: the incident story and the belief-time story, offline, in seconds."""

from __future__ import annotations

import typer

from rippl_core.cli.app import command, connection, console
from rippl_core.cli.stories import incident


@command("demo")
def demo_cmd(ctx: typer.Context,
             temporal: bool | None = typer.Option(None, "--temporal/--causal",
                                                  help="Only the belief-time story, or only the "
                                                       "incident story (default: both).")) -> None:
    """Run the demo: a vetoed tool call, its blast radius and receipt, then belief time travel."""
    conn = connection(ctx)
    if conn.graph == "rippl":
        conn.graph = "rippl-demo"  # never touch the default graph's data
    with conn.open() as rippl:
        incident.run(rippl, console, temporal=temporal)
