"""Rippl as an MCP server: the pre-flight check, the review queue and belief memory as tools for any
MCP client (Claude Desktop, Cursor, an agent framework's MCP workbench).

Run it with `rippl mcp` (stdio) or `rippl mcp --transport http --port 8000` (streamable HTTP on
127.0.0.1; with `--issuer URL`, an OAuth resource server whose clients bring tokens from the
team's identity provider, see docs/mcp.md). It needs the official MCP SDK, 2.x or 1.x:
`pip install 'rippl-core[mcp]'`. Importing this package does not; the SDK is imported when a
server is built.
"""

from __future__ import annotations

import importlib.metadata
from typing import TYPE_CHECKING, Any

from rippl_core.errors import RipplError
from rippl_core.mcp.options import DEFAULT_MAX_RUNS, LogLevel, OAuthOptions

if TYPE_CHECKING:
    from rippl_core.client import AsyncRippl
    from rippl_core.mcp.server import RipplMCP

INSTALL_HINT = "pip install 'rippl-core[mcp]'"
SUPPORTED = "2.x, or 1.x from 1.24"


class McpUnavailableError(RipplError, ImportError):
    """The `mcp` SDK is not installed, or is a version without the server Rippl runs on."""


def _server_module() -> Any:
    try:
        from rippl_core.mcp import server
    except ImportError as exc:
        if exc.name is not None and (exc.name == "mcp" or exc.name.startswith("mcp.")):
            raise McpUnavailableError(_unavailable(exc.name)) from exc
        raise
    return server


def _unavailable(missing: str) -> str:
    if missing == "mcp":
        return ("the MCP server needs the official MCP SDK (the `mcp` package), which is not "
                f"installed. Install it with: {INSTALL_HINT} (or run the server with: uvx --from "
                "'rippl-core[mcp]' rippl mcp)")
    try:
        version = f"mcp {importlib.metadata.version('mcp')}"
    except importlib.metadata.PackageNotFoundError:
        version = "the installed `mcp` package"
    return (f"{version} has no {missing}: Rippl's MCP server runs on mcp {SUPPORTED}. Install a "
            "supported version with: pip install --upgrade 'rippl-core[mcp]'")


def build_server(rippl: AsyncRippl, *, allow_review: bool = False, reviewer: str | None = None,
                 host: str = "127.0.0.1", port: int = 8000, log_level: LogLevel = "WARNING",
                 max_runs: int = DEFAULT_MAX_RUNS, oauth: OAuthOptions | None = None) -> RipplMCP:
    """An MCP server over an open `AsyncRippl` handle (see `rippl_core.mcp.server.build_server`);
    with `oauth`, its HTTP transport is an OAuth resource server."""
    server: RipplMCP = _server_module().build_server(rippl, allow_review=allow_review,
                                                     reviewer=reviewer, host=host, port=port,
                                                     log_level=log_level, max_runs=max_runs,
                                                     oauth=oauth)
    return server


def serve(**options: Any) -> None:
    """Open the graph and serve it until the client disconnects or the process is stopped (see
    `rippl_core.mcp.server.serve`)."""
    _server_module().serve(**options)


__all__ = ["INSTALL_HINT", "SUPPORTED", "LogLevel", "McpUnavailableError", "OAuthOptions",
           "build_server", "serve"]
