"""The OpenID Connect sign-in's own decisions, pinned: a sign-in is finished once, only in the
browser that began it and only in time; the authorization request carries state, nonce and an
S256 PKCE challenge; the ID token must carry the nonce and, naming an authorized party, this
client; the highest role wins; a sign-in lands only on a fragment of the console."""

from __future__ import annotations

import base64
import hashlib
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from helpers_clock import ManualClock

from rippl_core.console.signin import (
    LOGIN_TTL,
    MAX_PENDING,
    LoginStates,
    SignInError,
    authorization_url,
    challenge,
    check_id_token,
    fragment,
    role_of,
)
from rippl_core.identity.roles import Role


def test_a_sign_in_is_finished_once_by_the_browser_that_began_it() -> None:
    states = LoginStates(clock=ManualClock())
    begun = states.open("#queue")
    assert len({begun.state, begun.nonce, begun.verifier}) == 3
    # 256 random bits for state and nonce, 384 for the PKCE verifier (43 to 128 characters)
    assert (len(begun.state), len(begun.nonce), len(begun.verifier)) == (43, 43, 64)
    assert begun.next == "#queue" and len(states) == 1
    with pytest.raises(SignInError, match="not begun in this browser") as other:
        states.take(begun.state, "another-browsers-state")
    assert other.value.status == 400
    for state, cookie in ((begun.state, None), (None, begun.state), ("", ""), (begun.state, "")):
        with pytest.raises(SignInError, match="not begun in this browser"):
            states.take(state, cookie)
    assert states.take(begun.state, begun.state) == begun
    with pytest.raises(SignInError, match="expired or was already used"):
        states.take(begun.state, begun.state)  # a replayed callback
    assert len(states) == 0


def test_a_sign_in_expires() -> None:
    clock = ManualClock()
    states = LoginStates(clock=clock)
    assert LOGIN_TTL == 600
    late, in_time = states.open(), states.open()
    clock.now += LOGIN_TTL - 0.01
    assert states.take(in_time.state, in_time.state) == in_time
    clock.now += 0.01  # exactly its ttl
    with pytest.raises(SignInError, match="expired"):
        states.take(late.state, late.state)


def test_sign_ins_begun_are_bounded_and_expired_ones_dropped() -> None:
    clock = ManualClock()
    states = LoginStates(clock=clock, limit=3)
    first, *_ = [states.open() for _ in range(3)]
    newest = states.open()
    assert len(states) == 3
    with pytest.raises(SignInError):
        states.take(first.state, first.state)  # the oldest gave way
    assert states.take(newest.state, newest.state) == newest
    clock.now += LOGIN_TTL
    states.open()
    assert len(states) == 1  # the expired ones left when a new one began
    assert MAX_PENDING == 1024 and LoginStates().limit == 1024


def test_the_authorization_request() -> None:
    begun = LoginStates().open()
    url = authorization_url("https://login.example.com/authorize", client_id="rippl-console",
                            redirect_uri="https://rippl.example.com/api/oidc/callback",
                            scopes=["openid", "profile", "groups"], pending=begun)
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == "https://login.example.com/authorize"
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert query == {"response_type": "code", "client_id": "rippl-console",
                     "redirect_uri": "https://rippl.example.com/api/oidc/callback",
                     "scope": "openid profile groups", "state": begun.state, "nonce": begun.nonce,
                     "code_challenge": challenge(begun.verifier), "code_challenge_method": "S256"}
    with_query = authorization_url("https://x.test/auth?tenant=a", client_id="c", redirect_uri="r",
                                   scopes=["openid"], pending=begun)
    assert with_query.startswith("https://x.test/auth?tenant=a&response_type=code&")


def test_the_pkce_challenge_is_s256() -> None:
    # RFC 7636, appendix B
    assert challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") == \
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    digest = hashlib.sha256(b"x").digest()
    assert challenge("x") == base64.urlsafe_b64encode(digest).decode().rstrip("=")


@pytest.mark.parametrize(("claims", "why"), [
    ({}, "nonce"), ({"nonce": "other"}, "nonce"), ({"nonce": 7}, "nonce"),
    ({"nonce": "n-1", "azp": "another-client"}, "issued to another client"),
])
def test_an_id_token_not_of_this_sign_in_is_refused(claims: dict[str, Any], why: str) -> None:
    with pytest.raises(SignInError, match=why) as refused:
        check_id_token(claims, nonce="n-1", client_id="rippl-console")
    assert refused.value.status == 401


def test_an_id_token_of_this_sign_in_passes() -> None:
    check_id_token({"nonce": "n-1"}, nonce="n-1", client_id="rippl-console")
    check_id_token({"nonce": "n-1", "azp": "rippl-console"}, nonce="n-1", client_id="rippl-console")


def test_the_highest_role_wins() -> None:
    assert role_of(frozenset({Role.READER, Role.REVIEWER})) is Role.REVIEWER
    assert role_of(frozenset({Role.READER, Role.PROPOSER})) is Role.PROPOSER
    assert role_of(frozenset({Role.READER})) is Role.READER
    assert role_of(frozenset()) is None


@pytest.mark.parametrize(("value", "kept"), [
    ("#queue", "#queue"), ("#runs/mcp:abc:1", "#runs/mcp:abc:1"), ("#" + "a" * 299, "#" + "a" * 299),
    ("", ""), (None, ""), ("queue", ""), ("https://evil.example/", ""), ("//evil.example", ""),
    ("#a b", ""), ("#\n", ""), ("#é", ""), ("#" + "a" * 300, ""),
])
def test_a_sign_in_lands_only_on_a_fragment(value: str | None, kept: str) -> None:
    assert fragment(value) == kept
