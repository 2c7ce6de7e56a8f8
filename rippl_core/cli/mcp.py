"""`rippl mcp`: serve the graph to MCP clients (Claude Desktop, Cursor, agent frameworks)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from rippl_core.cli.app import command, connection, errors, signing_key_file, styled
from rippl_core.mcp import serve  # light: the SDK is imported when a server is built
from rippl_core.mcp.options import DEFAULT_MAX_RUNS


class TransportChoice(StrEnum):
    """How MCP clients reach the server."""

    stdio = "stdio"
    http = "http"


class LogLevel(StrEnum):
    """The server's log level."""

    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"


@command("mcp")
def mcp_cmd(
    ctx: typer.Context,
    transport: Annotated[TransportChoice, typer.Option(
        help="stdio (for a client that starts the server) or http (streamable HTTP).")
    ] = TransportChoice.stdio,
    host: Annotated[str, typer.Option(help="HTTP: the address to bind. Keep 127.0.0.1 unless you "
                                           "put authentication in front.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP: the port (the endpoint is /mcp).")] = 8000,
    allow_review: Annotated[bool, typer.Option(
        "--allow-review", help="Also offer approve_review / reject_review as tools (off by default: "
                               "a human decides). Needs --reviewer.")] = False,
    reviewer: Annotated[str | None, typer.Option(
        help="With --allow-review: the identity every approval's receipt names.")] = None,
    log_level: Annotated[LogLevel, typer.Option(help="Server log level (to stderr).",
                                                case_sensitive=False)] = LogLevel.WARNING,
    max_runs: Annotated[int, typer.Option(
        min=1, help="The most clients' runs held in memory; the least recently used leave first "
                    "(the graph keeps them, and they continue when used again).")] = DEFAULT_MAX_RUNS,
    reviewer_key: Annotated[Path | None, typer.Option(
        help="With --allow-review: the reviewer's key file; their decisions are signed with it "
             "(required when they have a registered key).")] = None,
) -> None:
    """Serve Rippl to MCP clients: check_premises, blast_radius, explain, the review queue and
    belief memory as tools. stdio by default; --transport http for streamable HTTP."""
    conn = connection(ctx)
    if transport is TransportChoice.http:
        where = f"http://{host}:{port}/mcp"
        errors.print(f"rippl MCP server for graph {conn.graph!r} on {where}")
        if host not in ("127.0.0.1", "localhost", "::1"):
            errors.print(styled("[yellow]warning:[/yellow] listening on {} without authentication; "
                                "anyone who can reach it can use the tools", host))
    serve(db=conn.db, url=conn.url, graph=conn.graph, transport=transport.value, host=host, port=port,
          allow_review=allow_review, reviewer=reviewer, log_level=log_level.value, max_runs=max_runs,
          reviewer_key=signing_key_file(reviewer_key))
