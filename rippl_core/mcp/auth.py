"""The MCP server over HTTP as an OAuth 2.1 resource server (the MCP authorization spec), on the
SDK's own hooks: `AuthSettings` (the issuer, this server's resource URL, the scopes every
request needs) and a `TokenVerifier` (here `ResourceServer.verify_token`), whose bearer
middleware and protected resource metadata (RFC 9728, at
`/.well-known/oauth-protected-resource/mcp`) the SDK serves.

A bearer token is a JWT verified against the issuer's keys (`rippl_core.identity`: discovered,
cached, refetched on rotation, the algorithm pinned to the key, `none` and HMAC refused) for
the audience of this server's resource URL (RFC 8707). What it names becomes the request's
principal: the agent of the runs its client starts, the proposer of what it proposes, the
reviewer of what it decides (see `scopes` for what each scope allows). Why a token was refused
is kept for the request (`REFUSAL`), so that the 401 says it (`gate`), not only "unauthorized".
"""

from __future__ import annotations

from contextvars import ContextVar

from pydantic import AnyHttpUrl

from rippl_core.identity.errors import IdentityError
from rippl_core.identity.issuer import Issuer
from rippl_core.identity.roles import Principal, principal_of
from rippl_core.identity.tokens import JwtVerifier
from rippl_core.mcp import sdk
from rippl_core.mcp.options import OAuthOptions
from rippl_core.mcp.scopes import CHECK

# Why the request's bearer token was refused: set by the verifier while the SDK's middleware
# authenticates, read by the gate in the same request (None: it was not refused, or none came).
REFUSAL: ContextVar[IdentityError | None] = ContextVar("rippl_mcp_refusal", default=None)


class RipplAccessToken(sdk.AccessToken):
    """The SDK's access token with the principal Rippl read from it."""

    principal: Principal


def principal_of_token(token: object) -> Principal | None:
    """The principal of an access token the verifier accepted (None: no such token)."""
    return token.principal if isinstance(token, RipplAccessToken) else None


class ResourceServer:
    """One MCP server's OAuth configuration, and the SDK's `TokenVerifier` for it."""

    def __init__(self, options: OAuthOptions, *, host: str, port: int) -> None:
        self.options = options
        self.issuer = Issuer(options.issuer)
        self.verifier = JwtVerifier(self.issuer)
        self.resource = options.resource_for(host, port)
        self.metadata_url = str(sdk.build_resource_metadata_url(AnyHttpUrl(self.resource)))

    def settings(self) -> sdk.AuthSettings:
        return sdk.auth_settings(issuer=self.options.issuer, resource=self.resource,
                                 required_scopes=list(self.options.required_scopes))

    async def verify_token(self, token: str) -> sdk.AccessToken | None:
        """The SDK's `TokenVerifier`: the token's access, or None (and why, in REFUSAL)."""
        try:
            claims = await self.verifier.verify(token, self.resource)
            principal = principal_of(claims, self.options.roles)
        except IdentityError as exc:
            REFUSAL.set(exc)
            return None
        REFUSAL.set(None)
        return RipplAccessToken(token=token, client_id=principal.client_id or principal.subject,
                                scopes=sorted(principal.scopes), expires_at=principal.expires,
                                resource=self.resource, principal=principal)

    def advertised_scopes(self) -> list[str]:
        """What the protected resource metadata lists (the scopes a client asks for first):
        `rippl:check` and the scopes every request needs; a client asks for more when a request
        needs them (a 403 `insufficient_scope` names them: step-up authorization)."""
        return list(dict.fromkeys([CHECK, *self.options.required_scopes]))
