"""Who is asking: the request dependencies every console route declares (`Read`, `Reviewer`,
`Proposing`, `SignedIn`). Each reads the request's credentials (the session cookie with its CSRF
header, or an `Authorization: Bearer` token: a reviewer's or monitor's token from the files, or,
with an identity provider, a monitor's access token verified with the provider's keys) and asks
`auth` for the decision; a refusal becomes the HTTP error it names. The routes (`api.py`,
`runs.py`, `oidc.py`) import from here, never from each other."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from pydantic import BaseModel

from rippl_core.console.auth import (
    Action,
    Decision,
    Session,
    authorize_propose,
    authorize_provider,
    authorize_read,
    authorize_write,
    is_loopback,
)
from rippl_core.console.state import ConsoleState

COOKIE = "rippl_session"
CSRF_HEADER = "x-csrf-token"


def console(request: Request) -> ConsoleState:
    state: ConsoleState = request.app.state.console
    return state


def bearer_of(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def session_of(request: Request) -> Session | None:
    return console(request).sessions.get(request.cookies.get(COOKIE))


def base_url(request: Request) -> str:
    """The console's address as the browser (and a monitor) sees it: its public URL when
    configured, else the address this request came to (its Host header was checked)."""
    provider = console(request).provider
    configured = provider.config.public_url if provider is not None else None
    return (configured or str(request.base_url)).rstrip("/") + "/"


def secure_cookies(request: Request) -> bool:
    """Cookies are Secure except over plain HTTP on loopback (a console on this machine)."""
    return request.url.scheme == "https" or not is_loopback(request.url.hostname or "")


def cookie_path(request: Request) -> str:
    return (request.scope.get("root_path") or "") + "/"


async def decide(request: Request, action: Action) -> Decision:
    """The decision on this request for `action` (read, propose, write)."""
    state = console(request)
    session, bearer = session_of(request), bearer_of(request)
    csrf = request.headers.get(CSRF_HEADER)
    if state.provider is not None:
        base = base_url(request)
        verified = await state.provider.bearer(bearer, [base, base.rstrip("/")]) if bearer else None
        return authorize_provider(action, read_open=state.read_open, session=session,
                                  bearer=verified, csrf=csrf)
    if action == "read":
        return authorize_read(state.read_open, state.reviewers, session, bearer)
    if action == "propose":
        return authorize_propose(state.reviewers, state.proposers, session, bearer, csrf)
    return authorize_write(state.reviewers, session, bearer, csrf, state.proposers)


def _enforce(decision: Decision) -> str | None:
    if not decision.allowed:
        raise HTTPException(decision.status, decision.reason)
    return decision.who


async def reader(request: Request) -> str | None:
    return _enforce(await decide(request, "read"))


async def reviewer(request: Request) -> str:
    name = _enforce(await decide(request, "write"))
    assert name is not None
    return name


class Proposer(BaseModel):
    """Who proposes: a person (a reviewer, or a proposer signed in with the identity provider),
    or a monitor (a machine's token, which never decides)."""

    name: str
    monitor: bool


async def proposer(request: Request) -> Proposer:
    decision = await decide(request, "propose")
    name = _enforce(decision)
    assert name is not None
    return Proposer(name=name, monitor=decision.proposer)


def signed_in(request: Request) -> Session:
    """A signed-in session, with its CSRF token (for signing out)."""
    session = session_of(request)
    if session is None:
        raise HTTPException(401, "not signed in")
    csrf = request.headers.get(CSRF_HEADER)
    if not csrf or not hmac.compare_digest(csrf, session.csrf):
        raise HTTPException(403, "missing or wrong X-CSRF-Token header; reload the page")
    return session


def display_name(request: Request, who: str) -> str | None:
    """The display name of who decides, when they signed in with the identity provider."""
    session = session_of(request)
    return session.name if session is not None and session.who == who else None


Read = Depends(reader)
Reviewer = Annotated[str, Depends(reviewer)]
Proposing = Annotated[Proposer, Depends(proposer)]
SignedIn = Annotated[Session, Depends(signed_in)]
