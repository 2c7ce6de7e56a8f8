"""The console's ASGI application: the JSON API, the live stream and the web UI, behind the
request checks of `auth`.

`create_app(rippl, ...)` returns a FastAPI app; serve it (`rippl serve`) or mount it in another
ASGI app (`parent.mount("/console", app)`): every URL the UI uses is relative to its page.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rippl_core.client import AsyncRippl
from rippl_core.console import api
from rippl_core.console import oidc as oidc_routes
from rippl_core.console import runs as runs_api
from rippl_core.console.auth import (
    LOOPBACK_NAMES,
    AuthConfigError,
    Reviewers,
    content_type_allowed,
    host_allowed,
    origin_allowed,
)
from rippl_core.console.monitors import AlertRules
from rippl_core.console.notify import Notifier, Webhook
from rippl_core.console.provider import IdentityProvider, OidcConfig
from rippl_core.console.state import ConsoleState
from rippl_core.console.stream import KEEPALIVE, EventHub
from rippl_core.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    ReviewError,
    RipplError,
    UnavailableError,
)

STATIC = Path(__file__).parent / "static"
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self'; "
                                 b"img-src 'self' data:; connect-src 'self'; object-src 'none'; "
                                 b"base-uri 'none'; frame-ancestors 'none'; form-action 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-cache"),
]
STATUS = [(NotFoundError, 404), (InvalidInputError, 422), (ReviewError, 409), (ConflictError, 409),
          (UnavailableError, 503)]


class RequestChecks:
    """Refuses a request whose Host is not ours (DNS rebinding), whose Origin is another site's, or
    that changes state without a JSON body; adds the security headers to every response."""

    app: ASGIApp
    allowed: frozenset[str]

    def __init__(self, app: ASGIApp, allowed_hosts: frozenset[str]) -> None:
        self.app, self.allowed = app, allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = None
        if not host_allowed(headers.get("host"), self.allowed):
            refusal = (421, "invalid Host header: this console answers only to its own host names")
        elif not origin_allowed(headers.get("origin"), self.allowed):
            refusal = (403, "cross-origin request refused")
        elif not content_type_allowed(scope["method"], headers.get("content-type")):
            refusal = (415, "send JSON (Content-Type: application/json)")
        if refusal is not None:
            response = JSONResponse({"detail": refusal[1]}, status_code=refusal[0])
            await response(scope, receive, self._secured(send))
            return
        await self.app(scope, receive, self._secured(send))

    @staticmethod
    def _secured(send: Send) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *((k, v) for k, v in SECURITY_HEADERS if k not in names)]
            await send(message)
        return wrapped


def create_app(rippl: AsyncRippl, *, reviewers: Reviewers | None = None, read_open: bool = True,
               allowed_hosts: frozenset[str] = LOOPBACK_NAMES,
               keepalive: float = KEEPALIVE, proposers: Reviewers | None = None,
               alert_rules: AlertRules | None = None, webhooks: Sequence[Webhook] = (),
               oidc: OidcConfig | None = None) -> FastAPI:
    """The review console over an open `AsyncRippl` handle (which the caller closes).

    `reviewers` may approve and reject (none: the console is read-only); `read_open=False` makes
    reads need a reviewer too (for a console reachable beyond this machine); the Host header must
    name one of `allowed_hosts`. `proposers` (monitors) may propose retractions with their
    bearer token, never decide; `alert_rules` serve Alertmanager's webhook (POST
    /api/alertmanager) with a proposer's token. The live stream subscribes on its first client and
    stops with the app's lifespan (when mounted in another app, `await
    app.state.console.hub.close()`). `webhooks` receive the events they choose, signed, from the
    app's start on (console/notify.py; how deliveries go is at /api/notifications). With `oidc`,
    people sign in with that identity provider (OpenID Connect) instead of reviewer tokens, their
    roles from its groups, and monitors bring its access tokens (console/oidc.py)."""
    if oidc is not None and (reviewers or proposers):
        raise AuthConfigError("with an identity provider (--oidc-issuer), reviewers and proposers "
                              "come from its groups and tokens: leave out --reviewers, "
                              "--reviewer, --proposers, RIPPL_REVIEWERS and RIPPL_PROPOSERS")
    state = ConsoleState(rippl, reviewers or Reviewers(), EventHub(rippl, keepalive=keepalive),
                         read_open, proposers=proposers or Reviewers(), alert_rules=alert_rules,
                         provider=IdentityProvider(oidc) if oidc is not None else None)
    if webhooks:
        state.notifier = Notifier(state.hub, rippl.graph, list(webhooks))

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if state.notifier is not None:
            await state.notifier.start()
        try:
            yield
        finally:
            if state.notifier is not None:
                await state.notifier.close()
            await state.hub.close()

    app = FastAPI(
        title="Rippl review console", version="1", lifespan=lifespan,
        description="The human review gate of a Rippl graph: the review queue, the causal graph, "
                    "receipts and beliefs, and the live event stream (Server-Sent Events at "
                    "/api/events). Reads are open on loopback; approving and rejecting need an "
                    "authenticated reviewer (POST /api/session, then the session cookie and the "
                    "X-CSRF-Token header, or an Authorization: Bearer token).",
        openapi_url="/api/openapi.json", docs_url=None, redoc_url=None)
    app.state.console = state
    app.add_middleware(RequestChecks, allowed_hosts=allowed_hosts)

    @app.exception_handler(RipplError)
    async def rippl_error(_: Request, exc: RipplError) -> JSONResponse:
        status = next((code for cls, code in STATUS if isinstance(exc, cls)), 500)
        return JSONResponse({"detail": str(exc), "error": type(exc).__name__}, status_code=status)

    app.include_router(api.router)
    app.include_router(runs_api.router)
    app.include_router(oidc_routes.router)
    app.mount("/", StaticFiles(directory=STATIC, html=True), name="ui")
    return app
