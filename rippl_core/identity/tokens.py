"""The verification of a JWT from the issuer: every check that decides whether a bearer token (an
access token, or an ID token at sign-in) is accepted, with PyJWT doing the cryptography.

In order, each refusal naming what was wrong and what to do:

1. It is a JWS whose header PyJWT reads: a string key id, no critical extension (`crit`).
2. Its `alg` is an asymmetric signature algorithm: `none` (an unsigned token) and HMAC (`HS*`:
   keyed with a public key, anyone could forge one) are refused before any key is looked at.
3. The issuer publishes the key it names (`kid`), for that very algorithm (see `keys`); a key
   id not seen yet makes the issuer's keys be fetched again once (rotation).
4. The signature verifies with that key, the algorithm pinned to it.
5. `iss` is the issuer, `aud` names this audience (RFC 8707: the server's resource URL; at
   sign-in, the console's client id), `exp` is present and past no clock, `nbf` and `iat` are
   not in the future (a little leeway for clocks apart).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import jwt

from rippl_core.identity.errors import TokenRefusedError
from rippl_core.identity.issuer import Issuer
from rippl_core.identity.keys import ASYMMETRIC

LEEWAY = 30.0  # seconds a clock may be ahead of the issuer's (nbf, iat)
MAX_TOKEN = 16_384  # characters
REQUIRED = ["exp", "iss", "aud"]


class JwtVerifier:
    """Verifies JWTs of one issuer (see the module docstring)."""

    def __init__(self, issuer: Issuer, *, leeway: float = LEEWAY,
                 clock: Callable[[], float] = time.time) -> None:
        self.issuer, self.leeway, self.clock = issuer, leeway, clock

    async def verify(self, token: str, audience: str | Sequence[str]) -> dict[str, Any]:
        """The token's claims, once every check passed; TokenRefusedError (or
        IssuerUnavailableError: nothing can be verified now) otherwise."""
        audiences = [audience] if isinstance(audience, str) else list(audience)
        header = self._header(token)
        alg = header["alg"]
        key = await self.issuer.key(header.get("kid"), alg)
        try:
            verifying = jwt.PyJWK(dict(key.jwk), algorithm=alg).key
        except jwt.PyJWTError as exc:
            raise TokenRefusedError(f"the issuer's key {key.kid} cannot verify {alg} ({exc})") from None
        now = self.clock()
        try:
            claims: dict[str, Any] = jwt.decode(
                token, verifying, algorithms=[alg], audience=audiences, issuer=self.issuer.url,
                leeway=self.leeway, options={"require": REQUIRED})
        except jwt.ExpiredSignatureError:
            raise _expired(_claim(token, 'exp')) from None
        except jwt.ImmatureSignatureError:
            raise TokenRefusedError("the token is not valid yet (its nbf or iat is in the "
                                    "future); check this server's clock, or use it later") from None
        except jwt.InvalidAudienceError:
            raise TokenRefusedError(
                f"the token was issued for another audience ({_unverified(token, 'aud')}), not "
                f"for {' or '.join(audiences)}: ask the issuer for a token for this one (the "
                f"`resource` parameter, RFC 8707)") from None
        except jwt.InvalidIssuerError:
            raise TokenRefusedError(f"the token was issued by {_unverified(token, 'iss')}, not by "
                                    f"{self.issuer.url}, the one issuer this server trusts") from None
        except jwt.InvalidSignatureError:
            raise TokenRefusedError(f"the token's signature does not verify with the issuer's key "
                                    f"{key.kid}: it was altered, or forged") from None
        except jwt.MissingRequiredClaimError as exc:
            raise TokenRefusedError(f"the token has no {exc.claim} claim; an access token names "
                                    f"its issuer, audience and expiry ({', '.join(REQUIRED)})") from None
        except jwt.PyJWTError as exc:
            raise TokenRefusedError(f"the token is not valid: {exc}") from None
        if claims["exp"] <= now:  # the leeway is for clocks apart, not for expired tokens
            raise _expired(claims["exp"])
        return claims

    @staticmethod
    def _header(token: str) -> dict[str, Any]:
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN:
            raise TokenRefusedError(f"the bearer token is empty or longer than {MAX_TOKEN} "
                                    "characters; send the access token the issuer gave you")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.DecodeError:
            raise TokenRefusedError("the bearer token is not a JWT (three base64url parts "
                                    "separated by dots); send the access token the issuer gave "
                                    "you, in the JWT format") from None
        except jwt.PyJWTError as exc:  # a kid that is no string, a critical extension (crit)
            raise TokenRefusedError(f"the token's header is refused: {exc}") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg.lower() == "none":
            raise TokenRefusedError("the token is unsigned (alg none): only tokens the issuer "
                                    "signed are accepted")
        if alg.upper().startswith("HS"):
            raise TokenRefusedError(f"the token is signed with {alg}, a shared-secret (HMAC) "
                                    "algorithm: only the issuer's public-key signatures are "
                                    "accepted")
        if alg not in ASYMMETRIC:
            raise TokenRefusedError(f"the token's algorithm {alg} is not accepted (only "
                                    f"{', '.join(sorted(ASYMMETRIC))})")
        return header


def _expired(exp: object) -> TokenRefusedError:
    when = f" at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(exp))}" \
        if isinstance(exp, int | float) else ""
    return TokenRefusedError(f"the token expired{when}; get a new one from the issuer")


def _claim(token: str, claim: str) -> object:
    """A claim of a token that failed verification, for a message only (never trusted)."""
    try:
        return jwt.decode(token, options={"verify_signature": False}).get(claim)
    except jwt.PyJWTError:
        return None


def _unverified(token: str, claim: str) -> str:
    return repr(_claim(token, claim))[:200]
