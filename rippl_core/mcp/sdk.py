"""The MCP SDK, whichever major version is installed: the one module that knows the difference.

mcp 2.x renamed FastMCP to `MCPServer` (in `mcp.server.mcpserver`), takes the server's version in
its constructor and the HTTP host and port when it is run, and spells model fields in snake_case.
mcp 1.x (which CrewAI still pins) has `mcp.server.fastmcp`, takes the host and port in the
constructor (its DNS-rebinding protection is set from the host there) and spells them in camelCase.
Everything else Rippl uses is the same in both.
"""

# No `from __future__ import annotations` here: the server reads tool signatures at registration.

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the type checker sees the lock's major (1.x, which CrewAI pins)
    from mcp.server.fastmcp import Context as _Context
    from mcp.server.fastmcp import FastMCP as Server
    from mcp.server.fastmcp.exceptions import ResourceError, ToolError
    from mcp.server.fastmcp.utilities.func_metadata import FuncMetadata

    Context = _Context[Any, Any, Any]  # tools see the class itself: the SDK finds it by issubclass
    MAJOR: int = 1
else:
    try:
        from mcp.server.mcpserver import Context
        from mcp.server.mcpserver import MCPServer as Server
        from mcp.server.mcpserver.exceptions import ResourceError, ToolError
        from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata

        MAJOR = 2
    except ModuleNotFoundError as exc:
        if exc.name != "mcp.server.mcpserver":  # no SDK at all: the caller explains how to install it
            raise
        from mcp.server.fastmcp import Context
        from mcp.server.fastmcp import FastMCP as Server
        from mcp.server.fastmcp.exceptions import ResourceError, ToolError
        from mcp.server.fastmcp.utilities.func_metadata import FuncMetadata

        MAJOR = 1


def server_options(*, version: str, host: str, port: int) -> dict[str, Any]:
    """The constructor options that differ: 2.x takes the version (host and port go to `run_http`),
    1.x takes the host and port (and gets the version from `set_version`)."""
    return {"version": version} if MAJOR == 2 else {"host": host, "port": port}


def set_version(server: Server, version: str) -> None:
    """Report `version` (not the SDK's) in the initialize handshake."""
    if MAJOR == 1:
        server._mcp_server.version = version


async def run_http(server: Server, *, host: str, port: int) -> None:
    """Serve streamable HTTP on host:port (the endpoint is /mcp) until cancelled. On a loopback host
    both majors refuse requests whose Host or Origin header names another site (DNS rebinding)."""
    if MAJOR == 2:
        # checked against the lock's 1.x, whose method takes no host or port
        await server.run_streamable_http_async(host=host, port=port)  # type: ignore[call-arg]
    else:
        await server.run_streamable_http_async()  # 1.x: host and port were given to the constructor


def connection_of(ctx: Context) -> Any:
    """An object that lives as long as the client's connection (and no longer): 1.x's session is
    one per connection; 2.x makes a session per request over the connection it keeps privately."""
    session = ctx.session
    return getattr(session, "_connection", session)


def client_name(ctx: Context) -> str:
    """The client's name from its initialize handshake, or "" outside a request."""
    try:
        params = ctx.session.client_params
    except Exception:  # no session (called outside a request)
        return ""
    info = getattr(params, "client_info", None) or getattr(params, "clientInfo", None)
    return str(getattr(info, "name", "") or "")


__all__ = ["MAJOR", "Context", "FuncMetadata", "ResourceError", "Server", "ToolError", "client_name",
           "connection_of", "run_http", "server_options", "set_version"]
