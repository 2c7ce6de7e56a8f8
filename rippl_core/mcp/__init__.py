"""Rippl as an MCP server: the pre-flight check, the review queue and belief memory as tools for any
MCP client (Claude Desktop, Cursor, an agent framework's MCP workbench).

Run it with `rippl mcp` (stdio) or `rippl mcp --transport http --port 8000` (streamable HTTP on
127.0.0.1). It needs the official MCP SDK: `pip install 'rippl-core[mcp]'`. Importing this package
does not; the SDK is imported when a server is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rippl_core.errors import RipplError

if TYPE_CHECKING:
    from mcp.server.fastmcp import FastMCP

    from rippl_core.client import AsyncRippl

INSTALL_HINT = "pip install 'rippl-core[mcp]'"


class McpUnavailableError(RipplError, ImportError):
    """The `mcp` SDK is not installed."""


def _server_module() -> Any:
    try:
        from rippl_core.mcp import server
    except ImportError as exc:
        if exc.name is not None and (exc.name == "mcp" or exc.name.startswith("mcp.")):
            raise McpUnavailableError(
                f"the MCP server needs the official MCP SDK, which is not installed ({exc}). "
                f"Install it with: {INSTALL_HINT}"
            ) from exc
        raise
    return server


def build_server(rippl: AsyncRippl, *, allow_review: bool = False, reviewer: str | None = None,
                 **settings: Any) -> FastMCP:
    """A FastMCP server over an open `AsyncRippl` handle (see `rippl_core.mcp.server.build_server`)."""
    return _server_module().build_server(rippl, allow_review=allow_review, reviewer=reviewer,
                                         **settings)


def serve(**options: Any) -> None:
    """Open the graph and serve it until the client disconnects or the process is stopped (see
    `rippl_core.mcp.server.serve`)."""
    _server_module().serve(**options)


__all__ = ["INSTALL_HINT", "McpUnavailableError", "build_server", "serve"]
