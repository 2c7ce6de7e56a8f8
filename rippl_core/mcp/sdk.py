"""The MCP SDK, whichever major version is installed: the one module that knows the difference.

mcp 2.x renamed FastMCP to `MCPServer` (in `mcp.server.mcpserver`), takes the server's version in
its constructor and the HTTP host and port when it is run, and spells model fields in snake_case.
mcp 1.x (which CrewAI still pins) has `mcp.server.fastmcp`, takes the host and port in the
constructor (its DNS-rebinding protection is set from the host there) and spells them in camelCase.
2.x keeps a request's `_meta` a dict (1.x a model with extra attributes), and also serves the
2026-07-28 revision over HTTP: a request without a handshake or a session, each one on a
connection object of its own. The auth hooks (`AuthSettings`, `TokenVerifier`, `AccessToken`, the
bearer middleware and the protected resource metadata) live at the same paths in both; only
`AuthSettings.validate_token_resource` is new (1.25). Everything else Rippl uses is the same.
"""

# No `from __future__ import annotations` here: the server reads tool signatures at registration.

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.auth.settings import AuthSettings
from starlette.applications import Starlette
from starlette.types import ASGIApp

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


def http_app(server: Server, *, host: str) -> Starlette:
    """The streamable HTTP app (the endpoint is /mcp; with auth settings, the SDK's bearer
    middleware and the protected resource metadata too). On a loopback host both majors refuse
    requests whose Host or Origin header names another site (DNS rebinding): 2.x is told the host
    here, 1.x was told in the constructor."""
    if MAJOR == 2:
        # checked against the lock's 1.x, whose method takes no host
        return server.streamable_http_app(host=host)  # type: ignore[call-arg]
    return server.streamable_http_app()


async def serve_app(app: ASGIApp, *, host: str, port: int, log_level: str) -> None:
    """Serve an ASGI app on host:port with uvicorn (as the SDK's own runner does) until cancelled."""
    import uvicorn

    await uvicorn.Server(uvicorn.Config(app, host=host, port=port,
                                        log_level=log_level.lower())).serve()


def auth_settings(*, issuer: str, resource: str, required_scopes: list[str]) -> AuthSettings:
    """The SDK's settings of a resource server. From mcp 1.25 the SDK can also refuse a token whose
    `resource` is not this server's (`validate_token_resource`): asked for where it exists (the
    verifier checks the audience itself in every version)."""
    options: dict[str, Any] = {"issuer_url": issuer, "resource_server_url": resource,
                               "required_scopes": required_scopes}
    if "validate_token_resource" in AuthSettings.model_fields:
        options["validate_token_resource"] = True
    return AuthSettings.model_validate(options)


def authenticated(scope: Mapping[str, Any]) -> AccessToken | None:
    """The access token the SDK's bearer middleware accepted for this ASGI request, if any."""
    user = scope.get("user")
    return user.access_token if isinstance(user, AuthenticatedUser) else None


def access_token(ctx: Context) -> AccessToken | None:
    """The access token of the HTTP request a tool runs for (None over stdio, or without auth)."""
    request = _http_request(ctx)
    scope = getattr(request, "scope", None)
    return authenticated(scope) if isinstance(scope, Mapping) else None


def _stateless_versions() -> tuple[str, ...]:
    """The protocol revisions the installed SDK serves without a handshake (each request carries
    its own `_meta` envelope): 2026-07-28 on 2.x; none on 1.x."""
    try:
        module = importlib.import_module("mcp_types.version")
    except ImportError:
        return ()
    return tuple(getattr(module, "MODERN_PROTOCOL_VERSIONS", ()))


_STATELESS_VERSIONS = _stateless_versions()


class _Pipe:
    """The one client of a stdio server that speaks a handshake-less revision (the SDK makes a
    connection object per request there, but the pipe is one client's)."""


PIPE = _Pipe()


def connection_of(ctx: Context) -> Any | None:
    """An object that lives as long as the client's connection (and no longer), or None when the
    request came on no connection of its own: an HTTP request without an `Mcp-Session-Id` (the
    2026-07-28 revision, or a server run stateless), which stands alone.

    1.x's session is one per connection; 2.x makes a session per request over the connection it
    keeps privately, and a connection per request for a 2026-07-28 request."""
    session = ctx.session
    connection = getattr(session, "_connection", session)
    request = _http_request(ctx)
    if request is not None:
        headers = getattr(request, "headers", None)
        return connection if headers is not None and headers.get("mcp-session-id") else None
    if _protocol_version(ctx) in _STATELESS_VERSIONS:  # stdio without a handshake: one pipe
        return PIPE
    return connection


def _http_request(ctx: Context) -> Any | None:
    try:
        return ctx.request_context.request
    except (AttributeError, ValueError, LookupError):  # outside a request
        return None


def _protocol_version(ctx: Context) -> str | None:
    try:
        version = getattr(ctx.request_context, "protocol_version", None)  # 2.x only
    except (AttributeError, ValueError, LookupError):
        return None
    return version if isinstance(version, str) else None


def request_meta(ctx: Context, key: str) -> object | None:
    """The value of `key` in the request's `params._meta` (None when absent): 1.x parses `_meta`
    into a model whose extra keys are attributes, 2.x keeps it a dict."""
    try:
        meta = ctx.request_context.meta
    except (AttributeError, ValueError, LookupError):  # outside a request
        return None
    if meta is None:
        return None
    if isinstance(meta, Mapping):
        return cast(Mapping[str, object], meta).get(key)
    extra: dict[str, object] = getattr(meta, "model_extra", None) or {}
    return extra.get(key, getattr(meta, key, None))


def client_name(ctx: Context) -> str:
    """The client's name from its initialize handshake, or "" outside a request."""
    try:
        params = ctx.session.client_params
    except Exception:  # no session (called outside a request)
        return ""
    info = getattr(params, "client_info", None) or getattr(params, "clientInfo", None)
    return str(getattr(info, "name", "") or "")


__all__ = ["MAJOR", "PIPE", "AccessToken", "AuthSettings", "Context", "FuncMetadata",
           "ResourceError", "Server", "ToolError", "access_token", "auth_settings", "authenticated",
           "build_resource_metadata_url", "client_name", "connection_of",
           "create_protected_resource_routes", "http_app", "request_meta", "serve_app",
           "server_options", "set_version"]
