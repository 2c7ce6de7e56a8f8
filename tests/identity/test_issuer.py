"""The issuer's metadata and keys: discovery (OpenID Connect, then RFC 8414), the check that the
metadata names the issuer asked for, which published keys verify what, and when the keys are
fetched again (expired, a new key id, never faster than the minimum interval), over real HTTP to
a loopback issuer whose keys the test rotates."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from helpers_clock import ManualClock
from helpers_identity import LoopbackIssuer, loopback_issuer, new_key

from rippl_core.identity.errors import (
    IdentityConfigError,
    IssuerUnavailableError,
    TokenRefusedError,
)
from rippl_core.identity.issuer import MAX_AGE, MIN_INTERVAL, Issuer, check_url, metadata_urls
from rippl_core.identity.keys import (
    MAX_KEYS,
    RSA_FAMILY,
    PublishedKey,
    algorithms_of,
    choose,
    known,
    published_keys,
)
from rippl_core.identity.tokens import JwtVerifier

OLD, NEW = new_key("ES256", kid="2026-old"), new_key("ES256", kid="2026-new")


@pytest.fixture
def issuer() -> Iterator[LoopbackIssuer]:
    with loopback_issuer() as running:
        running.publish(OLD)
        yield running


# -- which keys verify what ----------------------------------------------------------------------
@pytest.mark.parametrize(("jwk", "algorithms"), [
    ({"kty": "RSA"}, RSA_FAMILY),
    ({"kty": "RSA", "alg": "PS384"}, {"PS384"}),
    ({"kty": "RSA", "alg": "ES256"}, set()),  # an alg its type cannot do
    ({"kty": "EC", "crv": "P-256"}, {"ES256"}),
    ({"kty": "EC", "crv": "P-384"}, {"ES384"}),
    ({"kty": "EC", "crv": "P-521", "alg": "ES512"}, {"ES512"}),
    ({"kty": "EC", "crv": "P-256", "alg": "ES384"}, set()),
    ({"kty": "EC", "crv": "secp256k1"}, set()),
    ({"kty": "OKP", "crv": "Ed25519"}, {"EdDSA"}),
    ({"kty": "OKP", "crv": "X25519"}, set()),
    ({"kty": "oct", "k": "c2VjcmV0"}, set()),
    ({"kty": "oct", "alg": "HS256"}, set()),
    ({"kty": "RSA", "use": "enc"}, set()),
    ({"kty": "RSA", "use": "sig"}, RSA_FAMILY),
    ({"kty": "RSA", "key_ops": ["verify"]}, RSA_FAMILY),
    ({"kty": "RSA", "key_ops": ["encrypt"]}, set()),
    ({"kty": "RSA", "key_ops": "verify"}, set()),
    ({"alg": "RS256"}, set()),
])
def test_the_algorithms_a_key_verifies(jwk: dict[str, Any], algorithms: set[str]) -> None:
    assert algorithms_of(jwk) == algorithms


def test_a_jwks_keeps_only_keys_that_verify() -> None:
    keys = published_keys({"keys": [OLD.jwk(), {"kty": "oct", "kid": "x"}, "junk",
                                    {"kty": "RSA", "kid": 7}, {"kty": "RSA"}]})
    assert [(k.kid, sorted(k.algorithms)) for k in keys] == [
        (OLD.kid, ["ES256"]), (None, sorted(RSA_FAMILY))]
    assert len(published_keys({"keys": [OLD.jwk()] * 105})) == MAX_KEYS == 100
    for document in ({"keys": {}}, [], {"kids": []}, None):
        with pytest.raises(ValueError, match="not a JWK set"):
            published_keys(document)


def test_choosing_the_key_of_a_token() -> None:
    a = PublishedKey("a", frozenset({"ES256"}), {})
    b = PublishedKey("b", frozenset({"RS256", "PS256"}), {})
    c = PublishedKey("c", frozenset({"RS256"}), {})
    assert choose([a, b], "a", "ES256") is a
    assert choose([a, b], "a", "RS256") is None  # its id, not its algorithm
    assert choose([a, b], "z", "ES256") is None
    assert choose([a, b], None, "PS256") is b  # no kid: the one key that can
    assert choose([a, b, c], None, "RS256") is None  # two could: none is guessed
    assert choose([], None, "RS256") is None
    assert known([a, b], "b") and not known([a, b], "z") and not known([a, b], None)
    assert not known([PublishedKey(None, frozenset({"ES256"}), {})], None)


# -- where the issuer is -------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["https://login.example.com/realms/rippl", "http://127.0.0.1:9000",
                                 "http://localhost/oidc", "http://[::1]:8080"])
def test_issuer_urls_that_are_accepted(url: str) -> None:
    assert check_url(url) == url


@pytest.mark.parametrize(("url", "why"), [
    ("http://login.example.com", "plain http"), ("ftp://x", "absolute URL"),
    ("login.example.com", "absolute URL"), ("https://x.test/?tenant=1", "absolute URL"),
    ("https://x.test/#a", "absolute URL"), ("https:///p", "absolute URL"),
])
def test_issuer_urls_that_are_refused(url: str, why: str) -> None:
    with pytest.raises(IdentityConfigError, match=why):
        check_url(url)


def test_metadata_is_looked_for_by_oidc_discovery_then_rfc_8414() -> None:
    assert metadata_urls("https://x.test/realms/r/") == [
        "https://x.test/realms/r/.well-known/openid-configuration",
        "https://x.test/.well-known/oauth-authorization-server/realms/r"]
    assert metadata_urls("https://x.test") == ["https://x.test/.well-known/openid-configuration",
                                               "https://x.test/.well-known/oauth-authorization-server"]


async def test_metadata_found_by_either_way() -> None:
    for oidc in (True, False):
        with loopback_issuer(oidc_discovery=oidc) as running:
            metadata = await Issuer(running.url).metadata()
            assert (metadata.issuer, metadata.jwks_uri) == (running.url, f"{running.url}/jwks")
            assert metadata.token_endpoint == f"{running.url}/token"
            assert metadata.userinfo_endpoint is None


async def test_metadata_naming_another_issuer_is_refused() -> None:
    with loopback_issuer() as running:
        running.metadata_issuer = running.url + "/"
        with pytest.raises(IdentityConfigError, match=r"use exactly .* trailing slash"):
            await Issuer(running.url).metadata()
        running.metadata_issuer = "https://evil.test"
        named = re.escape("names the issuer 'https://evil.test'")
        with pytest.raises(IdentityConfigError, match=named) as error:
            await Issuer(running.url).metadata()
        assert "trailing slash" not in str(error.value)


async def test_an_unreachable_issuer_says_so_and_is_retried() -> None:
    with loopback_issuer(failing=True) as running:
        issuer = Issuer(running.url)
        with pytest.raises(IssuerUnavailableError, match="HTTP 500"):
            await issuer.metadata()
        running.failing = False
        assert (await issuer.metadata()).issuer == running.url
    with pytest.raises(IssuerUnavailableError, match="cannot fetch the issuer metadata") as down:
        await Issuer(running.url).metadata()  # stopped: nothing listens
    assert "connect" in str(down.value).lower() and "ConnectError" not in str(down.value)


# -- when the keys are fetched -------------------------------------------------------------------
async def test_keys_are_fetched_once_and_kept(issuer: LoopbackIssuer) -> None:
    clock = ManualClock()
    keys = Issuer(issuer.url, clock=clock)
    for _ in range(3):
        assert (await keys.key(OLD.kid, "ES256")).kid == OLD.kid
    assert issuer.jwks_fetches == 1
    clock.now += MAX_AGE - 1
    await keys.key(OLD.kid, "ES256")
    assert issuer.jwks_fetches == 1
    clock.now += 1  # as old as max_age: fetched again
    await keys.key(OLD.kid, "ES256")
    assert issuer.jwks_fetches == 2


async def test_a_rotation_is_followed_and_a_key_rotated_out_is_refused(issuer: LoopbackIssuer) -> None:
    clock = ManualClock()
    keys = Issuer(issuer.url, clock=clock)
    verify = JwtVerifier(keys)
    assert await verify.verify(OLD.sign(issuer.claims()), issuer.audience)
    issuer.publish(NEW)  # the issuer rotates: OLD is gone
    clock.now += MIN_INTERVAL
    assert await verify.verify(NEW.sign(issuer.claims()), issuer.audience)  # a new id: fetched
    assert issuer.jwks_fetches == 2
    clock.now += MIN_INTERVAL
    with pytest.raises(TokenRefusedError, match=r"2026-old, which the issuer .* does not publish"):
        await verify.verify(OLD.sign(issuer.claims()), issuer.audience)


async def test_new_key_ids_fetch_at_most_once_per_interval(issuer: LoopbackIssuer) -> None:
    clock = ManualClock()
    keys = Issuer(issuer.url, clock=clock)
    await keys.key(OLD.kid, "ES256")
    clock.now += MIN_INTERVAL - 0.01
    for made_up in ("x1", "x2", "x3"):
        with pytest.raises(TokenRefusedError, match="does not publish"):
            await keys.key(made_up, "ES256")
    assert issuer.jwks_fetches == 1
    clock.now += 0.01
    issuer.publish(OLD, NEW)
    assert (await keys.key(NEW.kid, "ES256")).kid == NEW.kid
    assert issuer.jwks_fetches == 2


async def test_a_failed_refetch_keeps_the_keys_held(issuer: LoopbackIssuer) -> None:
    clock = ManualClock()
    keys = Issuer(issuer.url, clock=clock)
    await keys.key(OLD.kid, "ES256")
    issuer.failing = True
    clock.now += MAX_AGE
    assert (await keys.key(OLD.kid, "ES256")).kid == OLD.kid
    assert keys.last_error is not None and "HTTP 500" in keys.last_error
    issuer.failing = False
    clock.now += MAX_AGE
    await keys.key(OLD.kid, "ES256")
    assert keys.last_error is None


async def test_no_keys_ever_fetched_refuses_everything_without_hammering(issuer: LoopbackIssuer) -> None:
    clock = ManualClock()
    keys = Issuer(issuer.url, clock=clock)
    await keys.metadata()
    issuer.failing = True
    with pytest.raises(IssuerUnavailableError, match="HTTP 500"):
        await keys.key(OLD.kid, "ES256")
    clock.now += MIN_INTERVAL - 0.01
    with pytest.raises(IssuerUnavailableError, match="HTTP 500"):
        await keys.key(OLD.kid, "ES256")
    assert issuer.jwks_fetches == 0  # the failing issuer answered 500 before counting
    issuer.failing = False
    with pytest.raises(IssuerUnavailableError, match="HTTP 500"):  # not asked again yet
        await keys.key(OLD.kid, "ES256")
    assert issuer.jwks_fetches == 0
    clock.now += 0.01
    assert (await keys.key(OLD.kid, "ES256")).kid == OLD.kid


async def test_a_jwks_that_is_not_one_is_unavailable(issuer: LoopbackIssuer) -> None:
    issuer.published = "nonsense"  # type: ignore[assignment]
    with pytest.raises(IssuerUnavailableError, match="not a JWK set"):
        await Issuer(issuer.url).key(OLD.kid, "ES256")


async def test_a_token_without_a_kid(issuer: LoopbackIssuer) -> None:
    keys = Issuer(issuer.url, min_interval=0)
    assert (await keys.key(None, "ES256")).kid == OLD.kid  # the one key that can
    assert (await keys.key(None, "ES256")).kid == OLD.kid
    assert issuer.jwks_fetches == 1  # found among the keys held: not fetched again
    issuer.publish(OLD, NEW)
    with pytest.raises(TokenRefusedError, match=r"names no key .* exactly one key for ES256"):
        await Issuer(issuer.url).key(None, "ES256")


async def test_metadata_without_a_jwks_uri_is_refused() -> None:
    with loopback_issuer(metadata_extra={"jwks_uri": None}) as running, \
            pytest.raises(IdentityConfigError, match="names no jwks_uri: its tokens cannot be"):
        await Issuer(running.url).metadata()


async def test_an_endpoint_that_is_not_a_url_of_an_issuer_is_refused() -> None:
    with loopback_issuer(metadata_extra={"token_endpoint": "http://login.example.com/token"}) \
            as running, pytest.raises(IdentityConfigError, match=r"token_endpoint of .* plain http"):
        await Issuer(running.url).metadata()


async def test_a_jwks_larger_than_a_mebibyte_is_refused(issuer: LoopbackIssuer) -> None:
    document = json.dumps({"keys": [OLD.jwk()], "pad": ""}).encode()
    fits = document.replace(b'"pad": ""', b'"pad": "' + b"p" * ((1 << 20) - len(document)) + b'"')
    assert len(fits) == 1 << 20
    issuer.jwks_body = fits
    assert (await Issuer(issuer.url).key(OLD.kid, "ES256")).kid == OLD.kid
    issuer.jwks_body = fits.replace(b'"pad": "', b'"pad": "p')
    with pytest.raises(IssuerUnavailableError, match="larger than 1048576 bytes"):
        await Issuer(issuer.url).key(OLD.kid, "ES256")


async def test_a_jwks_that_is_not_json_is_unavailable(issuer: LoopbackIssuer) -> None:
    issuer.jwks_body = b"<html>maintenance</html>"
    with pytest.raises(IssuerUnavailableError, match=r"the JWKS at .* is not JSON"):
        await Issuer(issuer.url).key(OLD.kid, "ES256")


async def test_redirects_are_not_followed(issuer: LoopbackIssuer) -> None:
    issuer.jwks_redirect = issuer.url + "/.well-known/openid-configuration"
    with pytest.raises(IssuerUnavailableError, match="answered HTTP 302"):
        await Issuer(issuer.url).key(OLD.kid, "ES256")
