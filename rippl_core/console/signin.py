"""The OpenID Connect sign-in's decisions (authorization code with PKCE, RFC 7636 and OpenID
Connect Core), kept apart from the network so that each can be pinned by a test:

- `LoginStates`: a sign-in begun here. `open` draws a fresh `state` (which the browser also
  keeps in a short-lived cookie), `nonce` and PKCE `verifier`; `take` hands it back once, only
  to the browser holding its cookie, and only before it expires: a callback that was not begun
  in this browser (login CSRF), replayed, or too late is refused.
- `authorization_url`: where the browser goes to sign in (S256 code challenge, state, nonce).
- `check_id_token`: the ID token's `nonce` is the one sent (a replayed token is refused), and
  its `azp`, when it names one, is this console's client.
- `role_of`: the highest role the provider's groups give (reviewer, proposer, reader).
- `fragment`: where in the console to land after sign-in (a fragment of the page, nothing else).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from rippl_core.errors import RipplError
from rippl_core.identity.roles import Role

LOGIN_TTL = 600.0  # seconds a sign-in may take at the provider
MAX_PENDING = 1024  # sign-ins begun and not finished, held at once
RANKS = (Role.REVIEWER, Role.PROPOSER, Role.READER)


class SignInError(RipplError):
    """A sign-in refused; the message says why and what to do. `status` is the HTTP status."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def challenge(verifier: str) -> str:
    """The S256 code challenge of a PKCE verifier: base64url(SHA-256(verifier)), unpadded."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


@dataclass(frozen=True)
class Pending:
    """A sign-in begun: what the callback must match, and where to land."""

    state: str
    nonce: str
    verifier: str
    next: str
    expires: float


class LoginStates:
    """Sign-ins begun and not finished (see the module docstring)."""

    def __init__(self, ttl: float = LOGIN_TTL, limit: int = MAX_PENDING,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl, self.limit, self.clock = ttl, limit, clock
        self._pending: OrderedDict[str, Pending] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pending)

    def open(self, next_: str = "") -> Pending:
        now = self.clock()
        for state in [s for s, p in self._pending.items() if p.expires <= now]:
            del self._pending[state]
        while len(self._pending) >= self.limit:  # the oldest sign-in gives way
            self._pending.popitem(last=False)
        pending = Pending(secrets.token_urlsafe(32), secrets.token_urlsafe(32),
                          secrets.token_urlsafe(48), fragment(next_), now + self.ttl)
        self._pending[pending.state] = pending
        return pending

    def take(self, state: str | None, cookie: str | None) -> Pending:
        """The sign-in this callback finishes, once; SignInError otherwise."""
        if not state or not cookie or not hmac.compare_digest(state, cookie):
            raise SignInError("this sign-in was not begun in this browser (or its cookie was "
                              "lost): start again with Sign in")
        pending = self._pending.pop(state, None)
        if pending is None or pending.expires <= self.clock():
            raise SignInError("this sign-in expired or was already used: start again with Sign in")
        return pending


def authorization_url(endpoint: str, *, client_id: str, redirect_uri: str,
                      scopes: Sequence[str], pending: Pending) -> str:
    """Where the browser signs in: the provider's authorization endpoint with this sign-in's
    state, nonce and PKCE challenge."""
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
             "scope": " ".join(scopes), "state": pending.state, "nonce": pending.nonce,
             "code_challenge": challenge(pending.verifier), "code_challenge_method": "S256"}
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"


def check_id_token(claims: Mapping[str, Any], *, nonce: str, client_id: str) -> None:
    """The checks of a verified ID token that are this sign-in's own (its signature, issuer,
    audience and times were verified with the provider's keys)."""
    sent = claims.get("nonce")
    if not isinstance(sent, str) or not hmac.compare_digest(sent, nonce):
        raise SignInError("the identity provider's ID token does not carry this sign-in's nonce "
                          "(a replayed token?): start again with Sign in", 401)
    azp = claims.get("azp")
    if azp is not None and azp != client_id:
        raise SignInError(f"the ID token was issued to another client ({azp!r}): check "
                          "--oidc-client-id", 401)


def role_of(roles: frozenset[Role]) -> Role | None:
    """The highest of the roles (None: no role)."""
    return next((role for role in RANKS if role in roles), None)


def fragment(value: str | None) -> str:
    """A place in the console to land after sign-in: `#view` or `#view/item`, else nothing."""
    if value and value.startswith("#") and len(value) <= 300 and value.isprintable() \
            and value.isascii() and " " not in value:
        return value
    return ""
