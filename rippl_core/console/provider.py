"""The console's identity provider (OpenID Connect): its configuration, and what the console asks
of it over the network. The sign-in's own decisions are in `signin`, who may do what in `auth`.

- `bearer`: a monitor's access token (client credentials) verified with the provider's keys
  (`rippl_core.identity`), for this console (its public URL is the audience, RFC 8707).
- `exchange`: the authorization code for tokens, with the PKCE verifier (the client secret,
  when the client has one, by HTTP Basic authentication).
- `person`: who signed in: the ID token verified (audience: the client id) with this sign-in's
  nonce, the userinfo endpoint's claims merged in (its `sub` must be the ID token's), the role
  from the configured groups claim.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from rippl_core.console.auth import Bearer
from rippl_core.console.signin import SignInError, check_id_token
from rippl_core.identity.errors import IdentityConfigError, IdentityError, IssuerUnavailableError
from rippl_core.identity.issuer import TIMEOUT, Issuer, Metadata, check_url
from rippl_core.identity.roles import Principal, RoleMap, principal_of
from rippl_core.identity.tokens import JwtVerifier

SCOPES = ("openid", "profile", "email")
SECRET_ENV = "RIPPL_OIDC_CLIENT_SECRET"


@dataclass(frozen=True)
class OidcConfig:
    """How the console signs people in: the provider (`issuer`), this console's client there
    (`client_id`, and `client_secret` for a confidential client; a public one uses PKCE alone),
    the scopes it asks for, which groups give which role, and the console's address as browsers
    and monitors see it (`public_url`; None: the address each request came to)."""

    issuer: str
    client_id: str
    client_secret: str | None = None
    scopes: tuple[str, ...] = SCOPES
    roles: RoleMap = field(default_factory=RoleMap)
    public_url: str | None = None

    def __post_init__(self) -> None:
        check_url(self.issuer)
        if self.public_url is not None:
            check_url(self.public_url, what="console's public URL")
        if "openid" not in self.scopes:
            raise IdentityConfigError("--oidc-scope must include openid (the sign-in is OpenID "
                                      "Connect)")


class IdentityProvider:
    """The provider, as the console uses it (see the module docstring)."""

    def __init__(self, config: OidcConfig) -> None:
        self.config = config
        self.issuer = Issuer(config.issuer)
        self.verifier = JwtVerifier(self.issuer)

    async def metadata(self) -> Metadata:
        """The provider's metadata, with the endpoints a sign-in needs."""
        found = await self.issuer.metadata()
        if found.authorization_endpoint is None or found.token_endpoint is None:
            raise IssuerUnavailableError(f"the metadata of {found.issuer} names no "
                                         "authorization_endpoint or token_endpoint: people "
                                         "cannot sign in with it")
        return found

    async def bearer(self, token: str, audiences: Sequence[str]) -> Bearer:
        """A bearer token as verified for this console."""
        try:
            claims = await self.verifier.verify(token, audiences)
            return Bearer(principal_of(claims, self.config.roles))
        except IdentityError as exc:
            return Bearer(None, f"{exc}", exc.status)

    async def exchange(self, code: str, *, verifier: str, redirect_uri: str) -> Mapping[str, Any]:
        """The token endpoint's answer to the authorization code (with the PKCE verifier)."""
        metadata = await self.metadata()
        assert metadata.token_endpoint is not None
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                "code_verifier": verifier}
        auth = None
        if self.config.client_secret is None:
            form["client_id"] = self.config.client_id
        else:  # client_secret_basic: each part form-encoded first (RFC 6749, 2.3.1)
            auth = httpx.BasicAuth(quote(self.config.client_id, safe=""),
                                   quote(self.config.client_secret, safe=""))
        answer = await _call("POST", metadata.token_endpoint, auth=auth, data=form)
        document = _json(answer, metadata.token_endpoint)
        if answer.status_code != 200 or not isinstance(document.get("id_token"), str):
            error = document.get("error", f"HTTP {answer.status_code}")
            raise SignInError(f"the identity provider did not exchange the code ({error}: "
                              f"{document.get('error_description', 'no ID token')}); start again "
                              "with Sign in, and check the client id and secret", 502)
        return document

    async def person(self, tokens: Mapping[str, Any], *, nonce: str) -> Principal:
        """Who signed in (see the module docstring)."""
        try:
            claims = await self.verifier.verify(tokens["id_token"], self.config.client_id)
        except IdentityError as exc:
            raise SignInError(f"the identity provider's ID token is refused: {exc}", 401) from None
        check_id_token(claims, nonce=nonce, client_id=self.config.client_id)
        metadata = await self.metadata()
        access = tokens.get("access_token")
        if metadata.userinfo_endpoint is not None and isinstance(access, str):
            answer = await _call("GET", metadata.userinfo_endpoint,
                                 headers={"Authorization": f"Bearer {access}"})
            info = _json(answer, metadata.userinfo_endpoint)
            if answer.status_code == 200:
                if info.get("sub") != claims.get("sub"):
                    raise SignInError("the userinfo endpoint names another subject than the ID "
                                      "token: sign-in refused", 401)
                claims = {**info, **claims}  # the ID token's own claims win
        try:
            return principal_of(claims, self.config.roles)
        except IdentityError as exc:
            raise SignInError(str(exc), 401) from None


async def _call(method: str, url: str, **options: Any) -> httpx.Response:
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
            return await http.request(method, url, **options)
    except httpx.HTTPError as exc:
        raise IssuerUnavailableError(f"cannot reach the identity provider at {url}: "
                                     f"{str(exc) or type(exc).__name__}") from None


def _json(answer: httpx.Response, url: str) -> dict[str, Any]:
    try:
        document = answer.json()
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise IssuerUnavailableError(f"the identity provider's answer at {url} is not a JSON "
                                     f"object (HTTP {answer.status_code})")
    return document
