"""`rippl serve`: the review console in the browser (the queue, the graph, receipts, beliefs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rippl_core.cli.app import Connection, command, connection, errors, signing_key_file
from rippl_core.errors import InvalidInputError


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
                distinct_approver: bool, log_level: str, anchor: str | None = None,
                anchor_interval: float = 300.0, anchor_key: Path | None = None,
                anchor_by: str | None = None, proposers: Path | None = None,
                alert_rules: Path | None = None) -> None:
    from rippl_core.console import serve  # FastAPI and uvicorn only when serving

    key = signing_key_file(anchor_key)
    if (key is None) != (anchor_by is None):
        raise InvalidInputError("--anchor-key and --anchor-by go together: who signs the heads, "
                                "with which key")
    serve(db=conn.db, url=conn.url, graph=conn.graph, host=host, port=port,
          reviewers_file=reviewers, reviewer=reviewer, allow_remote=allow_remote,
          allowed_hosts=allowed_host, distinct_approver=distinct_approver, log_level=log_level,
          announce=lambda url, known: announce(url, known.names, conn.graph,
                                               one_off=reviewer is not None),
          anchor=anchor, anchor_interval=anchor_interval, anchor_key=key, anchor_by=anchor_by,
          report=lambda line: errors.print(line, highlight=False, soft_wrap=True),
          proposers_file=proposers, alert_rules=alert_rules)


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
    anchor: Annotated[str | None, typer.Option(
        help="Anchor the receipt log's head at this witness (file:PATH, git:PATH or an http(s) "
             "URL) periodically while serving.")] = None,
    anchor_interval: Annotated[float, typer.Option(
        help="Seconds between anchorings (only when the log grew).")] = 300.0,
    anchor_key: Annotated[Path | None, typer.Option(
        help="Sign the anchored heads with this key file (hex).")] = None,
    anchor_by: Annotated[str | None, typer.Option(help="With --anchor-key: who signs.")] = None,
    proposers: Annotated[Path | None, typer.Option(
        help="File of proposers (monitors), one 'name: token' per line; also RIPPL_PROPOSERS. "
             "They may propose retractions with their bearer token, never decide.")] = None,
    alert_rules: Annotated[Path | None, typer.Option(
        help="Rules (YAML) mapping Alertmanager alert labels to provenance queries: serves the "
             "webhook POST /api/alertmanager (see docs/monitors.md).")] = None,
) -> None:
    """Serve the review console: the review queue, the live graph explorer, receipts and beliefs,
    on http://127.0.0.1:8765/. Needs FastAPI and uvicorn (the console extra of rippl-core)."""
    run_console(connection(ctx), host=host, port=port, reviewers=reviewers, reviewer=reviewer,
                allow_remote=allow_remote, allowed_host=allowed_host,
                distinct_approver=distinct_approver, log_level=log_level, anchor=anchor,
                anchor_interval=anchor_interval, anchor_key=anchor_key, anchor_by=anchor_by,
                proposers=proposers, alert_rules=alert_rules)
