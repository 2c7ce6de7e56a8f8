"""The HTTP gate of an MCP server with OAuth: in front of the SDK's /mcp endpoint, behind its bearer
middleware, it refuses before the SDK (or Rippl) sees anything, so that nothing is recorded:

- 401 when no token came, or the token was refused (`WWW-Authenticate: Bearer
  resource_metadata="..."`, RFC 9728, with `error="invalid_token"` and why when one came);
  503 when the issuer's keys cannot be fetched (nothing can be verified);
- 403 when a JSON-RPC message needs a scope the token lacks (`error="insufficient_scope"`,
  `scope="..."`: what to ask the issuer for), or a review tool is called by a token that is not
  a person marked as a reviewer (`access_denied`), per `scopes`.

The body of a POST is read (at most `MAX_BODY` bytes) to see which methods and tools it calls,
then handed on unchanged. `protect` puts the gate in place and serves the protected resource
metadata with the scopes a client should ask for first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rippl_core.identity.errors import IdentityError
from rippl_core.mcp import sdk
from rippl_core.mcp.auth import REFUSAL, ResourceServer, principal_of_token
from rippl_core.mcp.scopes import Refusal, refusal

MAX_BODY = 4 << 20  # bytes of one POST's JSON-RPC messages
METADATA_PATH = "/.well-known/oauth-protected-resource"


def _quoted(text: str) -> str:
    """`text` as an HTTP quoted-string's content (RFC 9110): no quotes, backslashes or controls."""
    return "".join(ch if ch.isprintable() and ch not in '"\\' and ch.isascii() else "'"
                   for ch in text)[:500]


def challenge(status: int, metadata_url: str, *, error: str | None = None, reason: str,
              scope: str | None = None) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and JSON body of a refusal: an OAuth bearer challenge (RFC 6750) naming the
    protected resource metadata (RFC 9728)."""
    params = [f'{name}="{_quoted(value)}"' for name, value in (
        ("error", error), ("error_description", reason if error else None), ("scope", scope),
        ("resource_metadata", metadata_url)) if value]
    body = json.dumps({"error": error or "unauthorized", "error_description": reason}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"www-authenticate", ("Bearer " + ", ".join(params)).encode("ascii"))]
    return headers, body


def messages(body: bytes) -> Iterator[dict[str, Any]]:
    """The JSON-RPC messages of a POST body (one, or a batch); nothing when it is not JSON (the
    SDK answers that with a parse error)."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return
    for message in parsed if isinstance(parsed, list) else [parsed]:
        if isinstance(message, dict):
            yield message


class Gate:
    """The ASGI gate around the SDK's /mcp endpoint (see the module docstring)."""

    def __init__(self, app: ASGIApp, server: ResourceServer) -> None:
        self.app, self.server = app, server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        principal = principal_of_token(sdk.authenticated(scope))
        if principal is None:
            await self._refuse(send, self._unauthenticated())
            return
        if scope["method"] != "POST":  # the SSE stream, the end of a session: nothing to call
            await self.app(scope, receive, send)
            return
        body = await _body(receive)
        if body is None:
            await self._refuse(send, Refusal(413, "invalid_request", f"a request body is at most "
                                             f"{MAX_BODY} bytes"))
            return
        denied = next(filter(None, (refusal(principal, m) for m in messages(body))), None)
        if denied is not None:
            await self._refuse(send, denied)
            return
        await self.app(scope, _replay(body, receive), send)

    def _unauthenticated(self) -> Refusal:
        refused: IdentityError | None = REFUSAL.get()  # set only when a bearer token came
        if refused is not None:
            return Refusal(refused.status, "invalid_token" if refused.status == 401
                           else "temporarily_unavailable", f"{refused} Nothing was done.")
        return Refusal(401, "", f"this MCP server needs a bearer token (Authorization: Bearer ...) "
                       f"issued by {self.server.options.issuer} for {self.server.resource}; its "
                       f"protected resource metadata ({self.server.metadata_url}) says how to get "
                       "one. Nothing was done.")

    async def _refuse(self, send: Send, denied: Refusal) -> None:
        headers, body = challenge(denied.status, self.server.metadata_url, error=denied.error or None,
                                  reason=denied.reason, scope=denied.scope)
        await send({"type": "http.response.start", "status": denied.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def _body(receive: Receive) -> bytes | None:
    """The whole request body (None: larger than MAX_BODY)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body read, then what the client sends next (a disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def again() -> Message:
        return pending.pop() if pending else await receive()

    return again


def protect(app: Starlette, server: ResourceServer) -> Starlette:
    """Put the gate in front of the SDK's /mcp endpoint (behind its bearer middleware, which
    authenticates), and serve the protected resource metadata with the scopes Rippl advertises
    (instead of the SDK's, which would list only the scopes every request needs)."""
    for route in app.router.routes:
        if getattr(route, "path", None) == "/mcp":
            route.app = Gate(route.app, server)  # type: ignore[attr-defined]
    # the URLs as written: the metadata model parses them itself (mcp 2.x keeps an issuer without
    # a path as it is, and its client compares the issuer exactly, trailing slash included)
    urls: list[Any] = [server.resource, server.options.issuer]
    app.router.routes[:] = [*sdk.create_protected_resource_routes(
        resource_url=urls[0], authorization_servers=urls[1:],
        scopes_supported=server.advertised_scopes()),
        *(r for r in app.router.routes if not str(getattr(r, "path", "")).startswith(METADATA_PATH))]
    return app
