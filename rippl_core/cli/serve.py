"""`rippl serve`: the review console in the browser (the queue, the graph, receipts, beliefs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rippl_core.cli.app import Connection, command, connection, errors


def announce(url: str, names: list[str], graph: str, *, one_off: bool) -> None:
    errors.print(f"rippl console for graph {graph!r} on {url}", highlight=False, soft_wrap=True)
    if one_off:
        errors.print("  open that link to sign in as the one-off reviewer (the token is valid until "
                     "the server stops)", highlight=False)
    elif names:
        errors.print(f"  reviewers: {', '.join(names)}", highlight=False)
    else:
        errors.print("  read-only: no reviewers configured (--reviewers FILE, RIPPL_REVIEWERS or "
                     "--reviewer NAME)", highlight=False)


def run_console(conn: Connection, *, host: str, port: int, reviewers: Path | None,
                reviewer: str | None, allow_remote: bool, allowed_host: list[str],
                distinct_approver: bool, log_level: str) -> None:
    from rippl_core.console import serve  # FastAPI and uvicorn only when serving

    serve(db=conn.db, url=conn.url, graph=conn.graph, host=host, port=port,
          reviewers_file=reviewers, reviewer=reviewer, allow_remote=allow_remote,
          allowed_hosts=allowed_host, distinct_approver=distinct_approver, log_level=log_level,
          announce=lambda url, known: announce(url, known.names, conn.graph,
                                               one_off=reviewer is not None))


@command("serve")
def serve_cmd(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to bind. Anything but loopback needs "
                                           "--allow-remote and reviewers.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8765,
    reviewers: Annotated[Path | None, typer.Option(
        help="File of reviewers, one 'name: token' (or 'name: sha256:<hex>') per line; also "
             "RIPPL_REVIEWERS.")] = None,
    reviewer: Annotated[str | None, typer.Option(
        help="A one-off reviewer: a fresh token is made and printed in the sign-in link.")] = None,
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Allow a non-loopback --host (reads then need a reviewer too).")] = False,
    allowed_host: Annotated[list[str], typer.Option(
        help="A host name clients use to reach the console (the Host header is checked); "
             "repeatable.")] = [],  # noqa: B006 - typer needs a list default
    distinct_approver: Annotated[bool, typer.Option(
        "--distinct-approver", help="Whoever proposed a retraction may not approve it.")] = False,
    log_level: Annotated[str, typer.Option(help="Server log level.")] = "warning",
) -> None:
    """Serve the review console: the review queue, the live graph explorer, receipts and beliefs,
    on http://127.0.0.1:8765/. Needs FastAPI and uvicorn (the console extra of rippl-core)."""
    run_console(connection(ctx), host=host, port=port, reviewers=reviewers, reviewer=reviewer,
                allow_remote=allow_remote, allowed_host=allowed_host,
                distinct_approver=distinct_approver, log_level=log_level)
