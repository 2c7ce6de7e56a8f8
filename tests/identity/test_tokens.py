"""Every check of a bearer JWT, against a loopback issuer whose keys the test controls: real HTTP,
real keys, PyJWT. A good token passes; each bad property is refused with the reason that names
it (and what to do), before or after the key is fetched as the check requires."""

from __future__ import annotations

import time
from collections.abc import Iterator

import jwt
import pytest
from helpers_identity import (
    LoopbackIssuer,
    hmac_signed,
    loopback_issuer,
    new_key,
    unsigned,
)

from rippl_core.identity.errors import IssuerUnavailableError, TokenRefusedError
from rippl_core.identity.issuer import Issuer
from rippl_core.identity.tokens import LEEWAY, JwtVerifier

EC = new_key("ES256")
RSA = new_key("RS256")
OTHER = new_key("ES256")
ED = new_key("EdDSA")


@pytest.fixture
def issuer() -> Iterator[LoopbackIssuer]:
    with loopback_issuer() as running:
        running.publish(EC, RSA, ED)
        yield running


def verifier(issuer: LoopbackIssuer, **options: float) -> JwtVerifier:
    return JwtVerifier(Issuer(issuer.url, min_interval=0), **options)


async def refused(issuer: LoopbackIssuer, token: str, audience: str | None = None) -> str:
    with pytest.raises(TokenRefusedError) as error:
        await verifier(issuer).verify(token, audience or issuer.audience)
    return str(error.value)


@pytest.mark.parametrize("key", [EC, RSA, ED], ids=lambda k: k.alg)
async def test_a_good_token_gives_its_claims(issuer: LoopbackIssuer, key: object) -> None:
    claims = issuer.claims(sub="agent-7", scope="rippl:check rippl:propose")
    assert await verifier(issuer).verify(key.sign(claims), issuer.audience) == claims  # type: ignore[attr-defined]


async def test_an_rsa_key_without_alg_verifies_the_pss_family_too(issuer: LoopbackIssuer) -> None:
    issuer.publish(RSA.jwk(alg=None))
    token = RSA.sign(issuer.claims(), alg="PS256")
    assert (await verifier(issuer).verify(token, issuer.audience))["sub"] == "agent-7"
    issuer.publish(RSA)  # its JWK names RS256: then a PS256 token is refused
    assert "verifies only RS256" in await refused(issuer, token)


async def test_one_of_several_audiences_suffices(issuer: LoopbackIssuer) -> None:
    token = EC.sign(issuer.claims(aud=["https://other.test", issuer.audience]))
    assert await verifier(issuer).verify(token, issuer.audience)
    assert await verifier(issuer).verify(EC.sign(issuer.claims()), ["x", issuer.audience])


async def test_an_unsigned_token_is_refused_before_any_key_is_fetched(issuer: LoopbackIssuer) -> None:
    assert "unsigned (alg none)" in await refused(issuer, unsigned(issuer.claims()))
    assert issuer.jwks_fetches == 0


async def test_hmac_is_refused_even_keyed_with_the_published_key(issuer: LoopbackIssuer) -> None:
    """The classic forgery: HS256 keyed with the issuer's public key (here its x coordinate)."""
    forged = hmac_signed(issuer.claims(), EC.jwk()["x"].encode() * 2, EC.kid)
    assert "shared-secret (HMAC)" in await refused(issuer, forged)
    secret = b"a-secret-the-issuer-published-by-mistake"
    issuer.publish({"kty": "oct", "k": jwt.utils.base64url_encode(secret).decode(), "kid": "shared",
                    "alg": "HS256"})
    assert "shared-secret (HMAC)" in await refused(issuer, hmac_signed(issuer.claims(), secret,
                                                                       "shared"))
    assert issuer.jwks_fetches == 0


async def test_a_token_signed_with_another_algorithm_than_its_keys_is_refused(
        issuer: LoopbackIssuer) -> None:
    token = jwt.encode(issuer.claims(), RSA.private, algorithm="RS384", headers={"kid": RSA.kid})
    assert "verifies only RS256" in await refused(issuer, token)
    wrong_curve = new_key("ES384", kid=EC.kid)  # an ES384 token under the P-256 key's id
    assert "verifies only ES256" in await refused(issuer, wrong_curve.sign(issuer.claims()))


@pytest.mark.parametrize(("headers", "why"), [
    ({"alg": "ES256K"}, "algorithm ES256K is not accepted"),
    ({"crit": ["exp"]}, "header is refused: Unsupported critical extension"),
    ({"kid": 7}, "header is refused: Key ID header parameter must be a string"),
])
async def test_odd_headers_are_refused(issuer: LoopbackIssuer, headers: dict[str, object],
                                       why: str) -> None:
    assert why in await refused(issuer, _with_header(EC.sign(issuer.claims()), headers))
    assert issuer.jwks_fetches == 0


def _with_header(token: str, extra: dict[str, object]) -> str:
    """The token with its header changed (its signature no longer matters: refused first)."""
    import json

    header = jwt.get_unverified_header(token) | extra
    encoded = jwt.utils.base64url_encode(json.dumps(header).encode()).decode()
    return ".".join([encoded, *token.split(".")[1:]])


@pytest.mark.parametrize("token", ["not-a-jwt", "a.b.c", "x" * 100])
async def test_what_is_not_a_jwt_is_refused(issuer: LoopbackIssuer, token: str) -> None:
    assert "is not a JWT" in await refused(issuer, token)


def sized(issuer: LoopbackIssuer, length: int) -> str:
    """A good token of exactly `length` characters (padded in its claims and its header)."""
    base = len(EC.sign(issuer.claims(pad="")))
    for extra in range(8):
        for size in range(max(0, (length - base) * 3 // 4 - 8), (length - base) * 3 // 4 + 8):
            token = EC.sign(issuer.claims(pad="p" * size), headers={"x": "x" * extra})
            if len(token) == length:
                return token
    raise AssertionError(f"no token of {length} characters")


async def test_a_token_is_at_most_16384_characters(issuer: LoopbackIssuer) -> None:
    assert await verifier(issuer).verify(sized(issuer, 16_384), issuer.audience)
    assert "empty or longer than 16384 characters" in await refused(issuer, sized(issuer, 16_385))
    assert "empty or longer than 16384 characters" in await refused(issuer, "")


async def test_a_published_key_that_cannot_verify_refuses_its_tokens(issuer: LoopbackIssuer) -> None:
    issuer.publish({"kty": "RSA", "kid": "broken", "alg": "RS256", "e": "AQAB"})  # no modulus
    why = await refused(issuer, RSA.sign(issuer.claims(), kid="broken"))
    assert "the issuer's key broken cannot verify RS256" in why


async def test_a_token_whose_payload_is_not_json_is_refused(issuer: LoopbackIssuer) -> None:
    signed = jwt.PyJWS().encode(b"not json", EC.private, algorithm="ES256", headers={"kid": EC.kid})
    assert "the token is not valid" in await refused(issuer, signed)


async def test_a_claim_quoted_in_a_refusal_is_cut_at_200_characters(issuer: LoopbackIssuer) -> None:
    audience = "https://other.test/" + "a" * 300
    why = await refused(issuer, EC.sign(issuer.claims(aud=audience)))
    assert f"({repr(audience)[:200]})" in why


async def test_expired_tokens_are_refused_saying_when(issuer: LoopbackIssuer) -> None:
    now = int(time.time())
    long_ago = await refused(issuer, EC.sign(issuer.claims(exp=now - 3600)))
    assert "the token expired at" in long_ago and "get a new one" in long_ago
    # within PyJWT's leeway, but expired all the same: the leeway is for clocks, not for expiry
    assert "the token expired at" in await refused(issuer, EC.sign(issuer.claims(exp=now - 5)))


async def test_expiry_is_exact(issuer: LoopbackIssuer) -> None:
    now = int(time.time())
    checker = JwtVerifier(Issuer(issuer.url), clock=lambda: float(now))
    with pytest.raises(TokenRefusedError, match="expired"):
        await checker.verify(EC.sign(issuer.claims(exp=now)), issuer.audience)
    assert await checker.verify(EC.sign(issuer.claims(exp=now + 1)), issuer.audience)


async def test_a_token_not_valid_yet_is_refused_beyond_the_leeway(issuer: LoopbackIssuer) -> None:
    now = int(time.time())
    later = await refused(issuer, EC.sign(issuer.claims(nbf=now + 3600)))
    assert "not valid yet" in later
    assert "not valid yet" in await refused(issuer, EC.sign(issuer.claims(iat=now + 3600)))
    skewed = EC.sign(issuer.claims(nbf=now + int(LEEWAY) // 3))
    assert await verifier(issuer).verify(skewed, issuer.audience)


async def test_a_token_for_another_audience_is_refused_naming_both(issuer: LoopbackIssuer) -> None:
    why = await refused(issuer, EC.sign(issuer.claims(aud="https://other.test/mcp")))
    assert "'https://other.test/mcp'" in why and issuer.audience in why and "RFC 8707" in why


async def test_a_token_of_another_issuer_is_refused(issuer: LoopbackIssuer) -> None:
    why = await refused(issuer, EC.sign(issuer.claims(iss="https://evil.test")))
    assert "'https://evil.test'" in why and f"not by {issuer.url}" in why


async def test_a_bad_signature_is_refused(issuer: LoopbackIssuer) -> None:
    head, _body, signature = EC.sign(issuer.claims()).split(".")
    tampered = ".".join([head, EC.sign(issuer.claims(sub="admin")).split(".")[1], signature])
    assert "does not verify" in await refused(issuer, tampered)
    forged = OTHER.sign(issuer.claims(), kid=EC.kid)  # another key, claiming the issuer's id
    assert "does not verify" in await refused(issuer, forged)


@pytest.mark.parametrize("claim", ["exp", "iss", "aud"])
async def test_a_token_without_a_required_claim_is_refused(issuer: LoopbackIssuer, claim: str) -> None:
    why = await refused(issuer, EC.sign(issuer.claims(**{claim: None})))
    assert f"no {claim} claim" in why


async def test_an_unknown_key_is_looked_for_once_then_refused(issuer: LoopbackIssuer) -> None:
    check = verifier(issuer)
    assert await check.verify(EC.sign(issuer.claims()), issuer.audience)
    assert issuer.jwks_fetches == 1
    with pytest.raises(TokenRefusedError, match=f"key {OTHER.kid}, which the issuer .* does not publish"):
        await check.verify(OTHER.sign(issuer.claims()), issuer.audience)
    assert issuer.jwks_fetches == 2


async def test_the_issuer_being_down_refuses_every_token_as_unavailable() -> None:
    with loopback_issuer(failing=True) as down, \
            pytest.raises(IssuerUnavailableError, match="no metadata for the issuer"):
        await verifier(down).verify(EC.sign(down.claims()), down.audience)
