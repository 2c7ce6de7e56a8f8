"""Which algorithms a key of an issuer's JWKS verifies, and which key verifies a token.

A key verifies only with the algorithm its JWK names (`alg`), or, when it names none, with the
algorithms of its type and curve: RSA the RS/PS family, an EC key the one ES algorithm of its
curve, an Ed25519 key EdDSA. Symmetric keys (`kty: oct`, HMAC) verify nothing: a resource
server holds only the issuer's public keys, and an HMAC check keyed with a public key is the
classic forgery. A key published for encryption (`use: enc`) or without `verify` in its
`key_ops` verifies nothing either. `none` is never an algorithm here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RSA_FAMILY = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
EC_CURVES = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}
OKP_CURVES = {"Ed25519": "EdDSA"}
ASYMMETRIC = RSA_FAMILY | frozenset(EC_CURVES.values()) | frozenset(OKP_CURVES.values())
MAX_KEYS = 100


def algorithms_of(jwk: Mapping[str, Any]) -> frozenset[str]:
    """The algorithms a JWK verifies (empty: it verifies nothing)."""
    if jwk.get("use", "sig") != "sig":
        return frozenset()
    ops = jwk.get("key_ops")
    if ops is not None and (not isinstance(ops, list) or "verify" not in ops):
        return frozenset()
    kty, crv = jwk.get("kty"), jwk.get("crv")
    if kty == "RSA":
        family = RSA_FAMILY
    elif kty == "EC" and crv in EC_CURVES:
        family = frozenset({EC_CURVES[crv]})
    elif kty == "OKP" and crv in OKP_CURVES:
        family = frozenset({OKP_CURVES[crv]})
    else:  # oct (HMAC), unknown types and curves
        return frozenset()
    named = jwk.get("alg")
    if named is None:
        return family
    return frozenset({named}) & family


@dataclass(frozen=True)
class PublishedKey:
    """One verifying key of the issuer's JWKS: its id, the algorithms it verifies, its JWK."""

    kid: str | None
    algorithms: frozenset[str]
    jwk: Mapping[str, Any]


def published_keys(document: object) -> list[PublishedKey]:
    """The verifying keys of a JWKS document (`{"keys": [...]}`); entries that verify nothing are
    left out. Raises ValueError when the document is not a JWKS."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError('not a JWK set (a JSON object with a "keys" list)')
    found = []
    for jwk in document["keys"][:MAX_KEYS]:
        if not isinstance(jwk, dict):
            continue
        algorithms = algorithms_of(jwk)
        kid = jwk.get("kid")
        if algorithms and (kid is None or isinstance(kid, str)):
            found.append(PublishedKey(kid, algorithms, jwk))
    return found


def choose(keys: Sequence[PublishedKey], kid: str | None, alg: str) -> PublishedKey | None:
    """The key that verifies a token with this `kid` and `alg` (None: none of them). A token
    without a kid is verified only when exactly one key could verify it."""
    if kid is not None:
        return next((k for k in keys if k.kid == kid and alg in k.algorithms), None)
    able = [k for k in keys if alg in k.algorithms]
    return able[0] if len(able) == 1 else None


def known(keys: Sequence[PublishedKey], kid: str | None) -> bool:
    """Whether a key of this id is published (whatever it verifies)."""
    return kid is not None and any(k.kid == kid for k in keys)
