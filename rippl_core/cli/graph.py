"""Commands over the causal graph: load, show, blast-radius, check, retract, reinstate, stats,
and the list of graphs (tenants) of the database."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from rippl_core.cli import render
from rippl_core.cli.app import (
    EXIT_DENIED,
    GraphFormat,
    GraphOutput,
    Output,
    OutputFormat,
    command,
    connection,
    console,
    errors,
    print_json,
    styled,
    time_option,
)
from rippl_core.cli.capture import compensation_lines
from rippl_core.cli.render import STATE_STYLE
from rippl_core.vocabulary import public_status

if TYPE_CHECKING:
    from rippl_core.models import Verdict, Wave

_STAGES = {"read": "reading the file", "check": "checking nodes", "write": "writing the graph"}


@command("load")
def load_cmd(ctx: typer.Context, file: Annotated[Path, typer.Argument(help="YAML or JSON graph.")],
             replace: bool = typer.Option(False, help="Overwrite nodes whose content differs.")
             ) -> None:
    """Load a whole graph from a YAML or JSON file (all or nothing), with a progress bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with connection(ctx).open(create=True) as rippl, Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=errors, transient=True, disable=not errors.is_terminal,
    ) as progress:
        task = progress.add_task(_STAGES["read"], total=1)

        def advance(stage: str, done: int, total: int) -> None:
            progress.update(task, description=_STAGES.get(stage, stage), completed=done, total=total)

        report = rippl.load(file, replace=replace, progress=advance)
    console.print(f"loaded {file}: {len(report.created)} created, {len(report.unchanged)} "
                  f"unchanged, {len(report.replaced)} updated, {report.edges} edges")


@command("show")
def show_cmd(ctx: typer.Context, node_id: str, format: OutputFormat = Output.table) -> None:
    """Show one node: its status and what supports it."""
    with connection(ctx).open() as rippl:
        node = rippl.get(node_id)
        owed = [c for c in rippl.compensations() if c.action == node.id
                or any(node.id in b.trail for b in c.blockers)]
    if format is Output.json:
        print_json(node.model_dump(mode="json") | {"status": node.status})
        return
    console.print(styled(f"[bold]{{}}[/bold] {{}}: [{STATE_STYLE[node.state]}]{{}}[/]",
                         node.id, node.kind, node.status))
    console.print(f"  {node.text}")
    for field in ("uri", "source_type", "tool", "key", "value", "reason"):
        if getattr(node, field):
            console.print(f"  {field}: {getattr(node, field)}")
    if node.args is not None:
        console.print(f"  args: {json.dumps(node.args)}")
    for i, justification in enumerate(node.justifications, 1):
        console.print(f"  justification {i}: {' + '.join(justification)}")
    if not node.justifications:
        console.print("  (a premise: nothing supports it but itself)")
    if owed:
        console.print(styled("  [bold]executed on a premise since retracted (compensate):[/bold]"))
        for line in compensation_lines(owed):
            console.print(Text("    ") + line)


@command("blast-radius")
def blast_cmd(ctx: typer.Context, node_id: str,
              max_depth: int | None = typer.Option(None, help="Stop after this many levels."),
              format: GraphFormat = GraphOutput.table) -> None:
    """Everything downstream of a node, exact at any depth: a tree, JSON, Mermaid or DOT."""
    with connection(ctx).open() as rippl:
        root = rippl.get(node_id)
        reached = rippl.blast_radius(node_id, max_depth=max_depth)
        texts = ({n: rippl.get(n).text for n in [r.id for r in reached]}
                 if format is GraphOutput.table else {})
    if format is GraphOutput.json:
        print_json([r.model_dump(mode="json") | {"status": r.status} for r in reached])
    elif format is GraphOutput.mermaid:
        print(render.mermaid(root, reached))
    elif format is GraphOutput.dot:
        print(render.dot(root, reached))
    else:
        console.print(render.tree(root, reached, texts))
        console.print(f"{len(reached)} nodes downstream of {node_id}")


def print_verdict(verdict: Verdict) -> None:
    colour = "green" if verdict.allowed else "red"
    console.print(styled(f"[{colour}]{{}}[/] {{}}", "ALLOW" if verdict.allowed else "DENY",
                         verdict.reason))
    for blocker in verdict.blockers:
        why = f" ({blocker.reason})" if blocker.reason else ""
        console.print(styled("  [red]{}[/] {}{}: {}", blocker.premise, blocker.status, why,
                             " -> ".join(blocker.trail)))


class AtRisk(StrEnum):
    """What a check does with a premise proposed for retraction (not yet decided)."""

    block = "block"
    allow = "allow"


@command("check")
def check_cmd(ctx: typer.Context, target: str,
              at_risk: Annotated[AtRisk, typer.Option(help="What an at-risk premise does.")
                                 ] = AtRisk.block,
              as_of: Annotated[str | None, typer.Option(
                  "--as-of", callback=time_option,
                  help="Was it allowed at this time (ISO-8601 with offset)?")] = None,
              known_at: Annotated[str | None, typer.Option(
                  "--known-at", callback=time_option,
                  help="...as known at this time (default now).")] = None,
              format: OutputFormat = Output.table) -> None:
    """Pre-flight check of an action or decision. Exit code 3 when denied."""
    with connection(ctx).open() as rippl:
        verdict = rippl.check(target, at_risk=at_risk.value, as_of=as_of, known_at=known_at)
    if format is Output.json:
        print_json(verdict.model_dump(mode="json"))
    else:
        print_verdict(verdict)
    if not verdict.allowed:
        raise typer.Exit(EXIT_DENIED)


def print_wave(wave: Wave, verb: str) -> None:
    console.print(f"{verb} {wave.root}: {len(wave.transitions)} status changes")
    for t in wave.transitions:
        console.print(styled(f"  {{}} {{}}: {{}} -> [{STATE_STYLE[t.after]}]{{}}[/]", t.id, t.kind,
                             public_status(t.kind, t.before), public_status(t.kind, t.after)))


@command("retract")
def retract_cmd(ctx: typer.Context, claim_id: str,
                reason: str = typer.Option(..., help="Why the claim is false."),
                by: str = typer.Option(..., help="Who retracts it.")) -> None:
    """Retract a claim (or source) at once and mark everything resting on it."""
    with connection(ctx).open() as rippl:
        print_wave(rippl.retract(claim_id, reason=reason, by=by), "retracted")


@command("reinstate")
def reinstate_cmd(ctx: typer.Context, claim_id: str,
                  reason: str = typer.Option(..., help="Why the claim holds after all."),
                  by: str = typer.Option(..., help="Who reinstates it.")) -> None:
    """Reinstate a retracted claim and restore what rested on it."""
    with connection(ctx).open() as rippl:
        print_wave(rippl.reinstate(claim_id, reason=reason, by=by), "reinstated")


@command("stats")
def stats_cmd(ctx: typer.Context, format: OutputFormat = Output.table) -> None:
    """Counts of nodes by kind and status."""
    from rich.table import Table

    with connection(ctx).open() as rippl:
        stats = rippl.stats()
    if format is Output.json:
        print_json(stats.model_dump(mode="json"))
        return
    table = Table("kind", "nodes", "statuses")
    for kind, count in sorted(stats.nodes.items()):
        statuses = ", ".join(f"{s}: {n}" for s, n in sorted(stats.statuses[kind].items()))
        table.add_row(kind, str(count), statuses)
    console.print(table)
    console.print(f"{stats.edges} causal edges")


@command("graphs")
def graphs_cmd(ctx: typer.Context,
               json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the graphs (tenants) of the database (every shard of a cluster)."""
    from rippl_core.client import Rippl

    conn = connection(ctx)
    names = Rippl.list_graphs(conn.db, url=conn.url)
    if json_out:
        console.print_json(json.dumps(names))
        return
    for name in names:
        console.print(name, highlight=False, markup=False)
