"""Signing in with the identity provider (OpenID Connect, authorization code with PKCE): two
routes, each a top-level navigation of the browser.

- `GET /api/oidc/login[?next=#view]`: begins a sign-in (`signin.LoginStates`): its `state` goes
  into a short-lived cookie (HttpOnly, SameSite=Lax so that the provider's redirect back carries
  it, Secure off loopback) and the browser to the provider's authorization endpoint.
- `GET /api/oidc/callback?code=...&state=...`: finishes it: the state must be this browser's and
  unused, the code is exchanged with the PKCE verifier, the ID token verified with this
  sign-in's nonce, the person's role read from the provider's groups. A person in none of the
  groups is refused. Then the session cookie (as for a reviewer token: HttpOnly, SameSite=Strict,
  Secure off loopback, it expires) and back to the console.

A refusal is a small page saying why and what to do, with a link back; nothing is signed in.
"""

from __future__ import annotations

import html

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from rippl_core.console.access import COOKIE, base_url, console, cookie_path, secure_cookies
from rippl_core.console.provider import IdentityProvider
from rippl_core.console.signin import LOGIN_TTL, SignInError, authorization_url, role_of
from rippl_core.identity.errors import IdentityError

LOGIN_COOKIE = "rippl_oidc"
CALLBACK = "api/oidc/callback"

router: APIRouter = APIRouter(prefix="/api/oidc", tags=["session"])


def _provider(request: Request) -> IdentityProvider:
    provider = console(request).provider
    if provider is None:
        raise SignInError("this console signs reviewers in with their token (the Sign in dialog), "
                          "not with an identity provider", 404)
    return provider


@router.get("/login", response_class=RedirectResponse, status_code=303)
async def login(request: Request, next: str = "") -> Response:
    """Begin signing in at the identity provider."""
    try:
        provider = _provider(request)
        metadata = await provider.metadata()
    except (SignInError, IdentityError) as exc:
        return refusal(request, exc)
    assert metadata.authorization_endpoint is not None
    pending = console(request).logins.open(next)
    where = authorization_url(metadata.authorization_endpoint, client_id=provider.config.client_id,
                              redirect_uri=base_url(request) + CALLBACK,
                              scopes=provider.config.scopes, pending=pending)
    response = RedirectResponse(where, status_code=303)
    response.set_cookie(LOGIN_COOKIE, pending.state, max_age=int(LOGIN_TTL), httponly=True,
                        samesite="lax", secure=secure_cookies(request),
                        path=cookie_path(request) + "api/oidc/")
    return response


@router.get("/callback", response_class=RedirectResponse, status_code=303)
async def callback(request: Request, state: str | None = None, code: str | None = None,
                   error: str | None = None, error_description: str | None = None) -> Response:
    """Finish signing in (the identity provider sends the browser here)."""
    console_state = console(request)
    try:
        provider = _provider(request)
        pending = console_state.logins.take(state, request.cookies.get(LOGIN_COOKIE))
        if error is not None:
            raise SignInError(f"the identity provider refused the sign-in ({error}"
                              f"{': ' + error_description if error_description else ''})", 403)
        if not code:
            raise SignInError("the identity provider sent no code: start again with Sign in")
        tokens = await provider.exchange(code, verifier=pending.verifier,
                                         redirect_uri=base_url(request) + CALLBACK)
        person = await provider.person(tokens, nonce=pending.nonce)
        role = role_of(person.roles)
        if role is None:
            roles = provider.config.roles
            raise SignInError(f"{person.display} ({person.subject}) is in none of the console's "
                              f"groups ({roles.reviewer}, {roles.proposer}, {roles.reader} in the "
                              f"{roles.claim} claim): ask an administrator of the identity "
                              "provider to add you to one", 403)
    except (SignInError, IdentityError) as exc:
        return refusal(request, exc)
    session = console_state.sessions.open(person.subject, role, person.name)
    response = RedirectResponse(base_url(request) + pending.next, status_code=303)
    response.set_cookie(COOKIE, session.id, httponly=True, samesite="strict",
                        secure=secure_cookies(request), path=cookie_path(request),
                        max_age=int(console_state.sessions.ttl))
    response.delete_cookie(LOGIN_COOKIE, path=cookie_path(request) + "api/oidc/")
    return response


def refusal(request: Request, exc: SignInError | IdentityError) -> HTMLResponse:
    """A sign-in refused: a page saying why, with a link back to the console."""
    status = exc.status if exc.status >= 400 else 400
    page = (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Sign-in refused"
            f"</title></head><body><main><h1>Sign-in refused</h1><p id=\"why\">{html.escape(str(exc))}"
            f"</p><p>Nothing was signed in. <a href=\"{html.escape(base_url(request))}\">Back to "
            "the console</a></p></main></body></html>")
    response = HTMLResponse(page, status_code=status)
    response.delete_cookie(LOGIN_COOKIE, path=cookie_path(request) + "api/oidc/")
    return response
