"""The errors of identity: a token refused (401), an issuer that cannot be reached or answers
nonsense (503: nothing can be verified, so nothing is allowed), and a configuration refused
before anything is served. Each message says what to do next."""

from __future__ import annotations

from rippl_core.errors import InvalidInputError, RipplError


class IdentityError(RipplError):
    """Base of the identity errors; `status` is the HTTP status a server answers with."""

    status: int = 401


class TokenRefusedError(IdentityError):
    """The bearer token is not one this server accepts (expired, for another audience, badly
    signed, ...): 401, `invalid_token`."""

    status = 401


class IssuerUnavailableError(IdentityError):
    """The issuer's metadata or keys could not be fetched, so no token can be verified: 503."""

    status = 503


class IdentityConfigError(IdentityError, InvalidInputError):
    """The identity configuration is refused (an issuer that is not https, metadata naming
    another issuer, ...); nothing is served."""

    status = 500
