"""Who is asking: the request dependencies every console route declares (`Read`, `Reviewer`,
`Proposing`). Each reads the request's credentials (the session cookie with its CSRF header, or
an `Authorization: Bearer` token) and asks `auth` for the decision; a refusal becomes the HTTP
error it names. The routes (`api.py`, `runs.py`) import from here, never from each other."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from pydantic import BaseModel

from rippl_core.console.auth import (
    Decision,
    Session,
    authorize_propose,
    authorize_read,
    authorize_write,
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


def _enforce(decision: Decision) -> str | None:
    if not decision.allowed:
        raise HTTPException(decision.status, decision.reason)
    return decision.reviewer


def reader(request: Request) -> str | None:
    state = console(request)
    return _enforce(authorize_read(state.read_open, state.reviewers, session_of(request),
                                   bearer_of(request)))


def reviewer(request: Request) -> str:
    state = console(request)
    name = _enforce(authorize_write(state.reviewers, session_of(request), bearer_of(request),
                                    request.headers.get(CSRF_HEADER), state.proposers))
    assert name is not None
    return name


class Proposer(BaseModel):
    """Who proposes: a reviewer, or a proposer (a monitor, which never decides)."""

    name: str
    monitor: bool


def proposer(request: Request) -> Proposer:
    state = console(request)
    decision = authorize_propose(state.reviewers, state.proposers, session_of(request),
                                 bearer_of(request), request.headers.get(CSRF_HEADER))
    name = _enforce(decision)
    assert name is not None
    return Proposer(name=name, monitor=decision.proposer)


Read = Depends(reader)
Reviewer = Annotated[str, Depends(reviewer)]
Proposing = Annotated[Proposer, Depends(proposer)]
