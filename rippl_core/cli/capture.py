"""Commands over captured runs: what already ran on a premise since retracted, and pruning."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from rippl_core.cli.app import command, connection, console
from rippl_core.models import Compensation


def compensation_lines(found: list[Compensation]) -> list[str]:
    """Rich markup lines for a list of compensations (user text escaped)."""
    lines = []
    for c in found:
        call = f" {escape(c.tool)}({escape(json.dumps(c.args or {}))})" if c.tool else ""
        run = f" in run {escape(c.run)}" if c.run else ""
        lines.append(f"[bold]{escape(c.action)}[/bold]{call}{run} executed "
                     f"{c.executed_at.isoformat()}, now [red]Premise Retracted[/red]")
        for b in c.blockers:
            why = f" ({escape(b.reason)})" if b.reason else ""
            lines.append(f"  {escape(b.premise)} is {b.status}{why}: "
                         + " -> ".join(escape(n) for n in b.trail))
    return lines


@command("compensations")
def compensations_cmd(
    ctx: typer.Context,
    as_of: Annotated[str | None, typer.Option(help="As of this time (ISO-8601 with a zone).")] = None,
    known_at: Annotated[str | None, typer.Option(help="As Rippl knew it then.")] = None,
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Actions that already ran on a premise since retracted: what may need undoing."""
    with connection(ctx).open() as rippl:
        found = rippl.compensations(as_of=as_of, known_at=known_at)
    if json_out:
        console.print_json(json.dumps([c.model_dump(mode="json") for c in found]))
        return
    for line in compensation_lines(found):
        console.print(line, highlight=False)
    console.print(f"{len(found)} executed action{'s' if len(found) != 1 else ''} to compensate")


@command("prune-runs")
def prune_runs_cmd(
    ctx: typer.Context,
    older_than: Annotated[str, typer.Option(help="Remove runs closed before this time (ISO-8601 "
                                                 "with a zone).")],
    include_open: Annotated[bool, typer.Option(help="Also runs never closed but idle since "
                                                    "then.")] = False,
) -> None:
    """Remove the capture of old runs (receipts, and anything retracted or under review, stay)."""
    with connection(ctx).open() as rippl:
        removed = rippl.prune_runs(older_than=older_than, include_open=include_open)
    console.print(f"pruned {len(removed)} run{'s' if len(removed) != 1 else ''}"
                  + (f": {', '.join(escape(r) for r in removed)}" if removed else ""), highlight=False)
