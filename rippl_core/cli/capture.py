"""Commands over captured runs: what already ran on a premise since retracted, and pruning."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from rippl_core.cli.app import (
    Output,
    OutputFormat,
    command,
    connection,
    console,
    print_json,
    styled,
    time_option,
)

if TYPE_CHECKING:
    from rippl_core.models import Compensation


def compensation_lines(found: list[Compensation]) -> list[Text]:
    """Styled lines for a list of compensations (user text never read as markup)."""
    lines = []
    for c in found:
        call = f" {c.tool}({json.dumps(c.args or {})})" if c.tool else ""
        run = f" in run {c.run}" if c.run else ""
        lines.append(styled("[bold]{}[/bold]{}{} executed {}, now [red]Premise Retracted[/red]",
                            c.action, call, run, c.executed_at.isoformat()))
        for b in c.blockers:
            why = f" ({b.reason})" if b.reason else ""
            lines.append(Text(f"  {b.premise} is {b.status}{why}: " + " -> ".join(b.trail)))
    return lines


@command("compensations")
def compensations_cmd(
    ctx: typer.Context,
    as_of: Annotated[str | None, typer.Option(help="As of this time (ISO-8601 with a zone).",
                                              callback=time_option)] = None,
    known_at: Annotated[str | None, typer.Option(help="As Rippl knew it then.",
                                                 callback=time_option)] = None,
    format: OutputFormat = Output.table,
) -> None:
    """Actions that already ran on a premise since retracted: what may need undoing."""
    with connection(ctx).open() as rippl:
        found = rippl.compensations(as_of=as_of, known_at=known_at)
    if format is Output.json:
        print_json([c.model_dump(mode="json") for c in found])
        return
    for line in compensation_lines(found):
        console.print(line)
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
                  + (f": {', '.join(removed)}" if removed else ""))
