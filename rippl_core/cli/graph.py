"""Commands over the causal graph: load, show, blast-radius, check, retract, reinstate, stats,
and the list of graphs (tenants) of the database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from rippl_core.cli import render
from rippl_core.cli.app import EXIT_DENIED, command, connection, console
from rippl_core.cli.capture import compensation_lines
from rippl_core.cli.render import STATE_STYLE
from rippl_core.client import Rippl
from rippl_core.models import Verdict, Wave


@command("load")
def load_cmd(ctx: typer.Context, file: Annotated[Path, typer.Argument(help="YAML or JSON graph.")],
             replace: bool = typer.Option(False, help="Overwrite nodes whose content differs.")
             ) -> None:
    """Load a whole graph from a YAML or JSON file (all or nothing)."""
    with connection(ctx).open() as rippl:
        report = rippl.load(file, replace=replace)
    console.print(f"loaded {file}: {len(report.created)} created, {len(report.unchanged)} "
                  f"unchanged, {len(report.replaced)} updated, {report.edges} edges")


@command("show")
def show_cmd(ctx: typer.Context, node_id: str,
             json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Show one node: its status and what supports it."""
    with connection(ctx).open() as rippl:
        node = rippl.get(node_id)
        owed = [c for c in rippl.compensations() if c.action == node.id
                or any(node.id in b.trail for b in c.blockers)]
    if json_out:
        console.print_json(node.model_dump_json())
        return
    style = STATE_STYLE[node.state]
    console.print(f"[bold]{node.id}[/bold] {node.kind}: [{style}]{node.status}[/]")
    console.print(f"  {node.text}", highlight=False)
    for field in ("uri", "source_type", "tool", "reason"):
        if getattr(node, field):
            console.print(f"  {field}: {getattr(node, field)}", highlight=False)
    if node.args is not None:
        console.print(f"  args: {json.dumps(node.args)}", highlight=False)
    for i, justification in enumerate(node.justifications, 1):
        console.print(f"  justification {i}: {' + '.join(justification)}")
    if not node.justifications:
        console.print("  (a premise: nothing supports it but itself)")
    if owed:
        console.print("  [bold]executed on a premise since retracted (compensate):[/bold]")
        for line in compensation_lines(owed):
            console.print(f"    {line}", highlight=False)


@command("blast-radius")
def blast_cmd(ctx: typer.Context, node_id: str,
              max_depth: int | None = typer.Option(None, help="Stop after this many levels."),
              format: str = typer.Option("tree", help="tree, json, mermaid or dot.")) -> None:
    """Everything downstream of a node, exact at any depth."""
    with connection(ctx).open() as rippl:
        root = rippl.get(node_id)
        reached = rippl.blast_radius(node_id, max_depth=max_depth)
        texts = {n: rippl.get(n).text for n in [r.id for r in reached]} if format == "tree" else {}
    if format == "json":
        console.print_json(json.dumps([r.model_dump(mode="json") | {"status": r.status}
                                       for r in reached]))
    elif format == "mermaid":
        print(render.mermaid(root, reached))
    elif format == "dot":
        print(render.dot(root, reached))
    elif format == "tree":
        console.print(render.tree(root, reached, texts))
        console.print(f"{len(reached)} nodes downstream of {node_id}")
    else:
        raise typer.BadParameter("format must be tree, json, mermaid or dot")


def print_verdict(verdict: Verdict) -> None:
    colour = "green" if verdict.allowed else "red"
    console.print(f"[{colour}]{'ALLOW' if verdict.allowed else 'DENY'}[/] {verdict.reason}",
                  highlight=False)
    for blocker in verdict.blockers:
        why = f" ({blocker.reason})" if blocker.reason else ""
        console.print(f"  [red]{blocker.premise}[/] {blocker.status}{why}: "
                      + " -> ".join(blocker.trail), highlight=False)


@command("check")
def check_cmd(ctx: typer.Context, target: str,
              at_risk: str = typer.Option("block", help="block or allow at-risk premises."),
              as_of: str | None = typer.Option(None, "--as-of", help="Was it allowed at this time "
                                                                     "(ISO-8601 with offset)?"),
              known_at: str | None = typer.Option(None, "--known-at", help="...as known at this "
                                                                           "time (default now)."),
              json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Pre-flight check of an action or decision. Exit code 2 when denied."""
    with connection(ctx).open() as rippl:
        verdict = rippl.check(target, at_risk=at_risk, as_of=as_of, known_at=known_at)
    if json_out:
        console.print_json(verdict.model_dump_json())
    else:
        print_verdict(verdict)
    if not verdict.allowed:
        raise typer.Exit(EXIT_DENIED)


def print_wave(wave: Wave, verb: str) -> None:
    console.print(f"{verb} {wave.root}: {len(wave.transitions)} status changes")
    for t in wave.transitions:
        console.print(f"  {t.id} {t.kind}: {t.before} -> [{STATE_STYLE[t.after]}]{t.after}[/]")


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
def stats_cmd(ctx: typer.Context) -> None:
    """Counts of nodes by kind and status."""
    with connection(ctx).open() as rippl:
        stats = rippl.stats()
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
    conn = connection(ctx)
    names = Rippl.list_graphs(conn.db, url=conn.url)
    if json_out:
        console.print_json(json.dumps(names))
        return
    for name in names:
        console.print(name, highlight=False, markup=False)
