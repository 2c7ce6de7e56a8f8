"""The issuer: where it publishes its endpoints (its metadata, by OpenID Connect Discovery 1.0 or
RFC 8414) and its signing keys (the JWKS at `jwks_uri`), fetched when first needed and kept.

The metadata must name exactly the issuer it was fetched for (a mix-up defence: a token is then
accepted only with that `iss`). The keys are refetched when they are older than `max_age`, and
when a token names a key id not among them (the issuer rotated its keys): at most once per
`min_interval` seconds, so that tokens naming made-up key ids cannot make the server hammer the
issuer. A refetch drops the keys the issuer no longer publishes. A failed refetch keeps the keys
held (and says so); with none held, nothing can be verified and every token is refused (503).

An issuer is https, or http on a loopback address (a provider on this machine, as in the tests).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from rippl_core.identity.errors import (
    IdentityConfigError,
    IssuerUnavailableError,
    TokenRefusedError,
)
from rippl_core.identity.keys import PublishedKey, choose, known, published_keys

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
MAX_DOCUMENT = 1 << 20  # bytes of a metadata or JWKS document
TIMEOUT = 10.0
MAX_AGE = 600.0  # seconds the keys are kept before they are fetched again
MIN_INTERVAL = 1.0  # seconds between two fetches of the keys


def check_url(url: str, *, what: str = "issuer") -> str:
    """`url` if it can identify an issuer (or an endpoint of one): an absolute https URL, or http
    on loopback, without a query or fragment."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.query or parts.fragment:
        raise IdentityConfigError(f"the {what} must be an absolute URL such as "
                                  f"https://login.example.com/realms/rippl, got {url!r}")
    if parts.scheme == "http" and parts.hostname not in LOOPBACK:
        raise IdentityConfigError(f"the {what} {url} is plain http: tokens and keys would travel "
                                  "unprotected. Use its https URL (http is accepted on loopback "
                                  "only, for a provider on this machine)")
    return url


def metadata_urls(issuer: str) -> list[str]:
    """Where the metadata of `issuer` may be: OpenID Connect Discovery, then RFC 8414."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    return [f"{issuer.rstrip('/')}/.well-known/openid-configuration",
            f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{path}"]


@dataclass(frozen=True)
class Metadata:
    """What Rippl uses of an issuer's metadata."""

    issuer: str
    jwks_uri: str
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    userinfo_endpoint: str | None = None
    end_session_endpoint: str | None = None

    @classmethod
    def of(cls, document: Mapping[str, Any], issuer: str, where: str) -> Metadata:
        named = document.get("issuer")
        if named != issuer:
            hint = (f" (use exactly {named!r}: the issuer identifier is compared as written, "
                    "trailing slash included)" if isinstance(named, str)
                    and named.rstrip("/") == issuer.rstrip("/") else "")
            raise IdentityConfigError(f"the metadata at {where} names the issuer {named!r}, not "
                                      f"{issuer!r}{hint}; a token is accepted only from the "
                                      "issuer its metadata names")
        endpoints: dict[str, str | None] = {}
        for name in ("jwks_uri", "authorization_endpoint", "token_endpoint", "userinfo_endpoint",
                     "end_session_endpoint"):
            value = document.get(name)
            endpoints[name] = check_url(value, what=f"{name} of {issuer}") \
                if isinstance(value, str) else None
        jwks_uri = endpoints.pop("jwks_uri")
        if jwks_uri is None:
            raise IdentityConfigError(f"the metadata of {issuer} names no jwks_uri: its tokens "
                                      "cannot be verified")
        return cls(issuer, jwks_uri, **endpoints)


async def fetch_json(url: str, *, what: str) -> Any:
    """The JSON document at `url`, or IssuerUnavailableError saying what failed."""
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
            response = await http.get(url, headers={"Accept": "application/json"})
    except httpx.HTTPError as exc:
        raise IssuerUnavailableError(f"cannot fetch the {what} from {url}: "
                                     f"{str(exc) or type(exc).__name__}; "
                                     "check that the identity provider is up and reachable from "
                                     "this server") from None
    if response.status_code != 200:
        raise IssuerUnavailableError(f"the {what} at {url} answered HTTP {response.status_code}")
    if len(response.content) > MAX_DOCUMENT:
        raise IssuerUnavailableError(f"the {what} at {url} is larger than {MAX_DOCUMENT} bytes")
    try:
        return json.loads(response.content)
    except ValueError:
        raise IssuerUnavailableError(f"the {what} at {url} is not JSON") from None


class Issuer:
    """One issuer's metadata and keys, fetched lazily and kept (see the module docstring)."""

    def __init__(self, url: str, *, max_age: float = MAX_AGE, min_interval: float = MIN_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.url = check_url(url)
        self.max_age, self.min_interval, self.clock = max_age, min_interval, clock
        self._metadata: Metadata | None = None
        self._keys: list[PublishedKey] | None = None
        self._fetched = float("-inf")  # when the keys were last asked for (success or not)
        self._lock = asyncio.Lock()
        self.last_error: str | None = None  # why the last refetch of the keys failed

    async def metadata(self) -> Metadata:
        """The issuer's metadata (fetched once; a failure is retried at the next call)."""
        if self._metadata is None:
            problems = []
            for where in metadata_urls(self.url):
                try:
                    document = await fetch_json(where, what="issuer metadata")
                except IssuerUnavailableError as exc:
                    problems.append(str(exc))
                    continue
                if isinstance(document, dict):
                    self._metadata = Metadata.of(document, self.url, where)
                    break
                problems.append(f"the issuer metadata at {where} is not a JSON object")
            else:
                raise IssuerUnavailableError(f"no metadata for the issuer {self.url}: "
                                             f"{'; '.join(problems)}")
        return self._metadata

    async def key(self, kid: str | None, alg: str) -> PublishedKey:
        """The published key that verifies a token with this `kid` and `alg`; TokenRefusedError
        when there is none (after a refetch, when the id is new), IssuerUnavailableError when no
        keys could ever be fetched."""
        keys = await self._current()
        found = choose(keys, kid, alg)
        if found is None and not known(keys, kid):
            keys = await self._refetch()
            found = choose(keys, kid, alg)
        if found is not None:
            return found
        if known(keys, kid):
            able = sorted(next(k for k in keys if k.kid == kid).algorithms)
            raise TokenRefusedError(f"the token says alg {alg}, but the issuer's key {kid} "
                                    f"verifies only {', '.join(able)}: a token's algorithm must "
                                    "be the one its key is published for")
        if kid is None:
            raise TokenRefusedError(f"the token names no key (kid) and the issuer {self.url} does "
                                    f"not publish exactly one key for {alg}; ask the issuer for "
                                    "tokens whose header names their key")
        raise TokenRefusedError(f"the token was signed with key {kid}, which the issuer "
                                f"{self.url} does not publish (a key it rotated out, or another "
                                "issuer's): get a new token")

    async def _current(self) -> list[PublishedKey]:
        if self._keys is None or self.clock() - self._fetched >= self.max_age:
            return await self._refetch()
        return self._keys

    async def _refetch(self) -> list[PublishedKey]:
        """Fetch the keys again, unless they were asked for less than `min_interval` ago."""
        async with self._lock:
            if self.clock() - self._fetched < self.min_interval:
                if self._keys is None:  # the issuer failed a moment ago: do not ask again yet
                    raise IssuerUnavailableError(self.last_error or "no keys yet")
                return self._keys
            self._fetched = self.clock()
            try:
                metadata = await self.metadata()
                document = await fetch_json(metadata.jwks_uri, what="JWKS")
                try:
                    keys = published_keys(document)
                except ValueError as exc:
                    raise IssuerUnavailableError(f"the JWKS at {metadata.jwks_uri}: {exc}") from None
            except IssuerUnavailableError as exc:
                self.last_error = str(exc)
                if self._keys is None:
                    raise
                return self._keys  # keep what is held: the issuer may be back at the next fetch
            self._keys, self.last_error = keys, None
            return keys
