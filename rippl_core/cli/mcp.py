"""`rippl mcp`: serve the graph to MCP clients (Claude Desktop, Cursor, agent frameworks)."""

from __future__ import annotations

from typing import Annotated

import typer

from rippl_core.cli.app import command, connection, errors
from rippl_core.mcp import serve


@command("mcp")
def mcp_cmd(
    ctx: typer.Context,
    transport: Annotated[str, typer.Option(help="stdio (for a client that starts the server) or "
                                                "http (streamable HTTP).")] = "stdio",
    host: Annotated[str, typer.Option(help="HTTP: the address to bind. Keep 127.0.0.1 unless you "
                                           "put authentication in front.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP: the port (the endpoint is /mcp).")] = 8000,
    allow_review: Annotated[bool, typer.Option(
        "--allow-review", help="Also offer approve_review / reject_review as tools (off by default: "
                               "a human decides). Needs --reviewer.")] = False,
    reviewer: Annotated[str | None, typer.Option(
        help="With --allow-review: the identity every approval's receipt names.")] = None,
    log_level: Annotated[str, typer.Option(help="Server log level (to stderr).")] = "WARNING",
) -> None:
    """Serve Rippl to MCP clients: check_premises, blast_radius, explain, the review queue and
    belief memory as tools. stdio by default; --transport http for streamable HTTP."""
    if transport not in ("stdio", "http"):
        raise typer.BadParameter("transport must be stdio or http", param_hint="--transport")
    conn = connection(ctx)
    if transport == "http":
        where = f"http://{host}:{port}/mcp"
        errors.print(f"rippl MCP server for graph {conn.graph!r} on {where}", highlight=False)
        if host not in ("127.0.0.1", "localhost", "::1"):
            errors.print(f"[yellow]warning:[/yellow] listening on {host} without authentication; "
                         "anyone who can reach it can use the tools", highlight=False)
    serve(db=conn.db, url=conn.url, graph=conn.graph, transport=transport, host=host, port=port,
          allow_review=allow_review, reviewer=reviewer, log_level=log_level)
