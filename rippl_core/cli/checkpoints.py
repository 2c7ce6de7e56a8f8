"""`rippl checkpoints verify`: check a checkpoint store (LangGraph's FalkorDBSaver writes it)
without LangGraph: every checkpoint, blob, pending write and head against its chain."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rippl_core.cli.app import (
    EXIT_ERROR,
    Output,
    OutputFormat,
    app,
    command,
    connection,
    console,
    print_json,
    public_keys_file,
    styled,
)

if TYPE_CHECKING:
    from rippl_core.adapters.checkpoints import ChainReport

checkpoints_app = typer.Typer(help="Checkpoints that notice tampering (LangGraph threads).",
                              no_args_is_help=True)
app.add_typer(checkpoints_app, name="checkpoints")


def print_report(report: ChainReport) -> None:
    if report.ok:
        console.print(styled("[green]ok[/green]: {} checkpoints of {} threads verify",
                             report.checkpoints, report.threads))
    else:
        console.print(styled("[red]{} problems[/red], {} unchained, in {} checkpoints of {} threads",
                             len(report.problems), len(report.unchained), report.checkpoints,
                             report.threads))
    for found in [*report.problems, *report.unchained]:
        where = f"thread {found.thread_id!r}" + (f" ns {found.checkpoint_ns!r}"
                                                 if found.checkpoint_ns else "")
        console.print(f"  {where} checkpoint {found.checkpoint_id or '-'}: {found.problem}")
    if report.heads_digest:
        console.print(f"  digest of every head: {report.heads_digest}")


@command("verify", on=checkpoints_app)
def checkpoints_verify(ctx: typer.Context,
                       thread: Annotated[str | None, typer.Option(
                           "--thread", help="Check one thread (by default the whole store).")
                       ] = None,
                       keys: Annotated[Path | None, typer.Option(
                           help="JSON file mapping a name to a trusted Ed25519 public key (hex): "
                                "every checkpoint must then be signed by one of them.")] = None,
                       anchor: Annotated[Path | None, typer.Option(
                           help="The FileAnchor file the savers keep outside the database: a "
                                "thread older than its anchored head is a problem.")] = None,
                       heads_digest: Annotated[str | None, typer.Option(
                           "--heads-digest", help="The digest of every head recorded outside "
                                                  "the database (e.g. by the receipt log).")
                       ] = None,
                       format: OutputFormat = Output.table) -> None:
    """Verify every checkpoint against its chain; exit 1 on any problem or unchained checkpoint
    (written before the chain: reported, never silently trusted)."""
    from rippl_core.adapters.checkpoints import FileAnchor, verify_checkpoints

    trusted = public_keys_file(keys)
    with connection(ctx).open() as rippl:
        report = verify_checkpoints(
            rippl, thread_id=thread, trusted_keys=None if trusted is None else list(trusted.values()),
            anchor=None if anchor is None else FileAnchor(anchor),
            expected_heads_digest=heads_digest)
    if format is Output.json:
        print_json(asdict(report))
    else:
        print_report(report)
    if not report.ok:
        raise typer.Exit(EXIT_ERROR)


@command("heads-digest", on=checkpoints_app)
def checkpoints_heads_digest(ctx: typer.Context) -> None:
    """Print the digest of every thread's head (what the receipt log's anchored head covers)."""
    from rippl_core.adapters.checkpoints import checkpoint_heads_digest

    with connection(ctx).open() as rippl:
        console.print(checkpoint_heads_digest(rippl))
