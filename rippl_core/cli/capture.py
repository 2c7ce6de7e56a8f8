"""Commands over captured runs: what already ran on a premise since retracted, and pruning."""

from __future__ import annotations

import enum
import getpass
import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from rippl_core.cli.app import (
    Output,
    OutputFormat,
    app,
    command,
    connection,
    console,
    handle_errors,
    print_json,
    signing_key_file,
    styled,
    time_option,
)
from rippl_core.cli.review import KEY

if TYPE_CHECKING:
    from rippl_core.models import Compensation


class Resolution(enum.StrEnum):
    compensated = "compensated"
    not_needed = "not needed"


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


compensations_app = typer.Typer(
    help="Actions that already ran on a premise since retracted, open until a reviewer resolves "
         "each (compensated or not needed, receipted).")
app.add_typer(compensations_app, name="compensations")


def compensation_status(c: Compensation) -> Text:
    if c.resolution is None:
        tried = f"; {len(c.attempts)} attempt(s) reported, latest: {c.attempts[-1].what}" \
            if c.attempts else ""
        return styled("  [yellow]open[/yellow]{}", tried)
    r = c.resolution
    return styled("  [green]{}[/green] by {} at {} ({}): {}", r.resolution, r.by,
                  r.at.isoformat(), r.receipt, r.note)


@compensations_app.callback(invoke_without_command=True)
@handle_errors
def compensations_cmd(
    ctx: typer.Context,
    as_of: Annotated[str | None, typer.Option(help="As of this time (ISO-8601 with a zone).",
                                              callback=time_option)] = None,
    known_at: Annotated[str | None, typer.Option(help="As Rippl knew it then.",
                                                 callback=time_option)] = None,
    all: Annotated[bool, typer.Option("--all", help="Resolved ones too.")] = False,
    format: OutputFormat = Output.table,
) -> None:
    """Actions that already ran on a premise since retracted: what may need undoing (the open
    ones; --all: resolved ones too)."""
    if ctx.invoked_subcommand is not None:
        return
    with connection(ctx).open() as rippl:
        found = rippl.compensations(as_of=as_of, known_at=known_at, include_resolved=all)
    if format is Output.json:
        print_json([c.model_dump(mode="json") for c in found])
        return
    for c in found:
        for line in compensation_lines([c]):
            console.print(line)
        console.print(compensation_status(c))
    what = "executed action" + ("s" if len(found) != 1 else "")
    console.print(f"{len(found)} {what} to compensate" if not all else f"{len(found)} {what}")


@command("resolve", on=compensations_app)
def compensations_resolve(
    ctx: typer.Context,
    action_id: Annotated[str, typer.Argument(help="The executed action (its id, as listed).")],
    resolution: Annotated[Resolution, typer.Option("--as", help="How it was resolved.")],
    note: Annotated[str, typer.Option(help="What was done, or why nothing is needed.")],
    by: Annotated[str, typer.Option(help="The reviewer (default: your login name).")] = "",
    attempt: Annotated[str | None, typer.Option(help="The reported attempt (ATT-...) this "
                                                     "confirms.")] = None,
    key: KEY = None,
) -> None:
    """Resolve an open compensation (a reviewer's act, receipted in the chain)."""
    signing_key = signing_key_file(key)
    with connection(ctx).open() as rippl:
        receipt = rippl.resolve_compensation(action_id, resolution=resolution.value, note=note,
                                             by=by or getpass.getuser(), attempt=attempt,
                                             signing_key=signing_key)
    console.print(styled("[bold]{}[/bold] {}: {} {} by {}  sha256 {}…", receipt.id, receipt.kind,
                         action_id, resolution.value, receipt.actor, receipt.hash[:16]))


@command("attempt", on=compensations_app)
def compensations_attempt(
    ctx: typer.Context,
    action_id: Annotated[str, typer.Argument(help="The executed action (its id, as listed).")],
    what: Annotated[str, typer.Option(help="What was done to compensate it.")],
    by: Annotated[str, typer.Option(help="Who (an agent, a script) did it.")],
    output: Annotated[str | None, typer.Option(help="Its output.")] = None,
) -> None:
    """Report an attempt to compensate (a person confirms it with `resolve --attempt`)."""
    with connection(ctx).open() as rippl:
        found = rippl.report_compensation_attempt(action_id, what=what, output=output, by=by)
    console.print(styled("[bold]{}[/bold] reported for {} by {}: {}", found.id, action_id,
                         found.by, found.what))


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
