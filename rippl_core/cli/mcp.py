"""`rippl mcp`: serve the graph to MCP clients (Claude Desktop, Cursor, agent frameworks)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from rippl_core.cli.app import command, connection, errors, signing_key_file, styled
from rippl_core.errors import InvalidInputError
from rippl_core.identity.roles import GROUPS_CLAIM, REVIEWER_GROUP, RoleMap
from rippl_core.mcp import serve  # light: the SDK is imported when a server is built
from rippl_core.mcp.options import DEFAULT_MAX_RUNS, OAuthOptions


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
    host: Annotated[str, typer.Option(help="HTTP: the address to bind. Keep 127.0.0.1 unless "
                                           "clients authenticate (--issuer), or something in front "
                                           "authenticates them.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP: the port (the endpoint is /mcp).")] = 8000,
    allow_review: Annotated[bool, typer.Option(
        "--allow-review", help="Also offer approve_review / reject_review as tools (off by default: "
                               "a human decides). Needs --reviewer, or --issuer (then the person "
                               "whose token decides, a reviewer by their groups).")] = False,
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
    issuer: Annotated[str | None, typer.Option(
        envvar="RIPPL_MCP_ISSUER", show_envvar=False,
        help="HTTP: accept only bearer tokens (JWTs) from this OAuth/OpenID issuer (also "
             "RIPPL_MCP_ISSUER): the server is an OAuth resource server, each token's subject "
             "is its agent. See docs/mcp.md.")] = None,
    audience: Annotated[str | None, typer.Option(
        envvar="RIPPL_MCP_AUDIENCE", show_envvar=False,
        help="With --issuer: this server's resource URL, the audience its tokens must name (also "
             "RIPPL_MCP_AUDIENCE; default http://HOST:PORT/mcp).")] = None,
    required_scope: Annotated[list[str], typer.Option(
        envvar="RIPPL_MCP_REQUIRED_SCOPES", show_envvar=False,
        help="With --issuer: a scope every request's token must carry besides Rippl's own "
             "(repeatable; also RIPPL_MCP_REQUIRED_SCOPES, space-separated).")] = [],  # noqa: B006
    roles_claim: Annotated[str, typer.Option(
        help="With --issuer: the claim holding a person's groups (a dotted path for a nested "
             "one, e.g. realm_access.roles).")] = GROUPS_CLAIM,
    reviewer_group: Annotated[str, typer.Option(
        help="With --issuer and --allow-review: the group (in --roles-claim) whose people may "
             "approve and reject; a machine's token never may.")] = REVIEWER_GROUP,
) -> None:
    """Serve Rippl to MCP clients: check_premises, blast_radius, explain, the review queue and
    belief memory as tools. stdio by default; --transport http for streamable HTTP."""
    conn = connection(ctx)
    oauth = None
    if issuer is not None:
        oauth = OAuthOptions(issuer=issuer, resource=audience, required_scopes=tuple(required_scope),
                             roles=RoleMap(claim=roles_claim, reviewer=reviewer_group))
    elif audience is not None or required_scope:
        raise InvalidInputError("--audience and --required-scope apply with --issuer (the "
                                "identity provider whose tokens the server accepts)")
    if transport is TransportChoice.http:
        where = f"http://{host}:{port}/mcp"
        errors.print(f"rippl MCP server for graph {conn.graph!r} on {where}")
        if oauth is not None:
            errors.print(f"  clients bring tokens from {issuer} for {oauth.resource_for(host, port)}",
                         highlight=False)
        elif host not in ("127.0.0.1", "localhost", "::1"):
            errors.print(styled("[yellow]warning:[/yellow] listening on {} without authentication; "
                                "anyone who can reach it can use the tools (see --issuer)", host))
    serve(db=conn.db, url=conn.url, graph=conn.graph, transport=transport.value, host=host, port=port,
          allow_review=allow_review, reviewer=reviewer, log_level=log_level.value, max_runs=max_runs,
          reviewer_key=signing_key_file(reviewer_key), oauth=oauth)
