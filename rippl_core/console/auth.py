"""Who may read and who may decide: reviewer tokens, sessions, CSRF, and the Host/Origin checks.

Every allow/deny decision of the console is one function here, so each can be pinned by a test:

- `host_allowed`, `origin_allowed`, `content_type_allowed`: checks on every request (against DNS
  rebinding and cross-site requests), like the MCP server's HTTP transport.
- `authorize_write`: a state-changing request needs an authenticated reviewer, by a bearer token
  or by a session cookie plus its CSRF token; the identity it returns is what receipts name.
- `authorize_propose`: a proposal needs a reviewer (as for a change) or a proposer: a monitor's
  bearer token, which can propose and never approve, reject or change anything else.
- `authorize_read`: reads are open on loopback, else need a reviewer.
- `authorize_provider`: the same three questions when people sign in with an identity provider
  (OpenID Connect): a session's role comes from the provider's groups, and a bearer token is a
  monitor's (client credentials), which proposes with `rippl:propose` and never decides.
- `check_bind`: a non-loopback address needs an explicit flag and reviewers (or a provider).

Proposers (monitors: an alerting webhook, a script) come from their own file or RIPPL_PROPOSERS,
in the same format; a name or token may not be both a reviewer's and a proposer's.

Reviewers come from a file or an environment variable, one `name: token` per line (or per comma
in the variable); a token may be given as `sha256:<hex>` of itself, so the file need not hold it.
A reviewer's Ed25519 public key may follow the token (`name: token ed25519:<64 hex>`): their
decisions through the console must then be signed with that key (in the browser), and it is the
key the log registers for them.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from rippl_core.errors import InvalidInputError
from rippl_core.identity.roles import CHECK_SCOPE, PROPOSE_SCOPE, Principal, Role

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
MIN_TOKEN_LENGTH = 16
SESSION_TTL = 12 * 3600.0
ENV_VAR = "RIPPL_REVIEWERS"
PROPOSERS_ENV_VAR = "RIPPL_PROPOSERS"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")
_HASHED = re.compile(r"^sha256:[0-9a-f]{64}$")
_PUBLIC_KEY = re.compile(r"^ed25519:[0-9a-f]{64}$")
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class AuthConfigError(InvalidInputError):
    """The reviewer configuration or the bind address is refused; the message says how to fix it."""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh reviewer token (32 random bytes, URL-safe)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Reviewers:
    """The reviewers allowed to decide, by the SHA-256 of their token."""

    by_digest: dict[str, str] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # reviewer -> Ed25519 public key (hex)

    def identify(self, token: str | None) -> str | None:
        """The reviewer whose token this is, or None. Compares against every entry in constant
        time, so timing says nothing about which entry almost matched."""
        if not token:
            return None
        wanted = digest(token)
        found = None
        for known, name in self.by_digest.items():
            if hmac.compare_digest(known, wanted):
                found = name
        return found

    @property
    def names(self) -> list[str]:
        return sorted(set(self.by_digest.values()))

    def __bool__(self) -> bool:
        return bool(self.by_digest)

    def merged(self, other: Reviewers) -> Reviewers:
        clash = set(self.names) & set(other.names)
        if clash or set(self.by_digest) & set(other.by_digest):
            raise AuthConfigError(f"reviewer configured twice: {', '.join(sorted(clash)) or 'a token'}")
        return Reviewers({**self.by_digest, **other.by_digest}, {**self.keys, **other.keys})


def parse_reviewers(entries: Iterable[str], *, where: str) -> Reviewers:
    """Reviewers from `name: token` entries (blank entries and `#` comments are skipped)."""
    by_digest: dict[str, str] = {}
    keys: dict[str, str] = {}
    for number, raw in enumerate(entries, 1):
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        name, sep, value = (part.strip() for part in entry.partition(":"))
        token, _, public = value.rpartition(" ")
        value, public = (token.strip(), public) if public.startswith("ed25519:") else (value, "")
        if public:
            if not _PUBLIC_KEY.match(public):
                raise AuthConfigError(f"{where}, entry {number} ({name}): after the token, a "
                                      "reviewer key is written ed25519:<64 lower-case hex digits> "
                                      "(as `rippl keys new` prints it)")
            keys[name] = public.removeprefix("ed25519:")
        if not sep or not _NAME.match(name):
            raise AuthConfigError(f"{where}, entry {number}: expected 'name: token' with a name of "
                                  "letters, digits and ._@+- (up to 64)")
        if _HASHED.match(value):
            key = value.removeprefix("sha256:")
        elif len(value) >= MIN_TOKEN_LENGTH and value.isascii() and value.isprintable() \
                and " " not in value:
            key = digest(value)
        else:
            raise AuthConfigError(f"{where}, entry {number} ({name}): the token must be at least "
                                  f"{MIN_TOKEN_LENGTH} printable ASCII characters without spaces, "
                                  "or sha256:<64 hex digits> of it")
        if name in by_digest.values() or key in by_digest:
            raise AuthConfigError(f"{where}, entry {number}: {name} or its token appears twice")
        by_digest[key] = name
    return Reviewers(by_digest, keys)


def load_reviewers(file: Path | None = None, env_value: str | None = None, *,
                   role: str = "reviewers", env_var: str = ENV_VAR) -> Reviewers:
    """Reviewers from a file (one `name: token` per line) and from the value of RIPPL_REVIEWERS
    (entries separated by commas or newlines); proposers the same way (`role`, `env_var`)."""
    reviewers = Reviewers()
    if file is not None:
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise AuthConfigError(f"cannot read the {role} file {file}: {exc}") from None
        reviewers = parse_reviewers(text.splitlines(), where=str(file))
    if env_value:
        entries = env_value.replace(",", "\n").splitlines()
        reviewers = reviewers.merged(parse_reviewers(entries, where=env_var))
    return reviewers


def load_proposers(file: Path | None, env_value: str | None, reviewers: Reviewers) -> Reviewers:
    """Proposers (monitors) from a file and RIPPL_PROPOSERS; none may share a reviewer's name or
    token (a proposer never approves, so it must never be mistaken for a reviewer)."""
    proposers = load_reviewers(file, env_value, role="proposers", env_var=PROPOSERS_ENV_VAR)
    if proposers.keys:
        raise AuthConfigError("a proposer has no reviewer key: it never decides, so nothing it "
                              "does is signed; remove the ed25519:... after its token")
    clash = set(proposers.names) & set(reviewers.names)
    if clash or set(proposers.by_digest) & set(reviewers.by_digest):
        raise AuthConfigError(f"{', '.join(sorted(clash)) or 'a token'} is both a reviewer and a "
                              "proposer; give each monitor its own name and token")
    return proposers


# ------------------------------------------------------------------------------------ sessions


@dataclass(frozen=True)
class Session:
    """A signed-in person: who (a reviewer's name, or an identity provider's subject), their role
    (from the reviewers file: always a reviewer; from the provider: its groups), their display
    name (from the provider), the CSRF token of their changes, when it ends."""

    id: str
    who: str
    csrf: str
    expires: float
    role: Role = Role.REVIEWER
    name: str | None = None


class Sessions:
    """Server-side sessions: a random id in an HttpOnly cookie, a person and a CSRF token."""

    ttl: float
    clock: Callable[[], float]

    def __init__(self, ttl: float = SESSION_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl, self.clock = ttl, clock
        self._sessions: dict[str, Session] = {}

    def open(self, who: str, role: Role = Role.REVIEWER, name: str | None = None) -> Session:
        now = self.clock()
        self._sessions = {k: s for k, s in self._sessions.items() if s.expires > now}
        session = Session(secrets.token_urlsafe(32), who, secrets.token_urlsafe(32), now + self.ttl,
                          role, name)
        self._sessions[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        session = self._sessions.get(session_id) if session_id else None
        if session is None:
            return None
        if session.expires <= self.clock():
            del self._sessions[session.id]
            return None
        return session

    def close(self, session_id: str | None) -> None:
        self._sessions.pop(session_id or "", None)


# ----------------------------------------------------------------------------- request checks


def host_name(value: str) -> str | None:
    """The host of a Host header or an origin's authority, lower-cased, without port or brackets
    (None when malformed)."""
    match = re.fullmatch(r"(\[[0-9a-fA-F:.]+\]|[^:\[\]/@\s]+)(:\d{1,5})?", value)
    if match is None:
        return None
    return match.group(1).strip("[]").lower()


def host_allowed(host: str | None, allowed: frozenset[str]) -> bool:
    """The Host header names one of the allowed hosts (any port): a DNS-rebinding page's requests
    carry its own host name and are refused."""
    return host is not None and host_name(host) in allowed


def origin_allowed(origin: str | None, allowed: frozenset[str]) -> bool:
    """No Origin (a same-origin GET, or a client that is not a browser), or an http(s) origin on
    an allowed host."""
    if origin is None:
        return True
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.path == "" and \
        host_name(parts.netloc) in allowed


def content_type_allowed(method: str, content_type: str | None) -> bool:
    """A state-changing request carries JSON: a cross-site HTML form cannot send it without a CORS
    preflight, which the console never answers."""
    if method.upper() not in UNSAFE_METHODS:
        return True
    return (content_type or "").split(";")[0].strip().lower() == "application/json"


@dataclass(frozen=True)
class Decision:
    """Allowed (with who, None for an anonymous read) or refused with a status and why.
    `proposer`: the identity is a monitor's (a machine that proposes), not a person's."""

    allowed: bool
    who: str | None = None
    status: int = 200
    reason: str = ""
    proposer: bool = False


NOT_A_REVIEWER = ("this is a proposer's token (a monitor): it can propose retractions, never "
                  "approve, reject or change anything else; a reviewer decides")


def _refuse(status: int, reason: str) -> Decision:
    return Decision(False, None, status, reason)


def _reviewer(reviewers: Reviewers, session: Session | None, bearer: str | None) -> Decision:
    if not reviewers:
        return _refuse(403, "no reviewers are configured: start the console with --reviewers FILE "
                            f"or {ENV_VAR} (or --reviewer NAME for a one-off token)")
    if bearer is not None:
        name = reviewers.identify(bearer)
        return Decision(True, name) if name else _refuse(401, "unknown reviewer token")
    if session is None:
        return _refuse(401, "sign in as a reviewer first (POST /api/session with your token)")
    return Decision(True, session.who)


def _csrf_refused(session: Session, csrf: str | None) -> Decision | None:
    """A change by session needs the session's CSRF token in its header."""
    if not csrf or not hmac.compare_digest(csrf, session.csrf):
        return _refuse(403, "missing or wrong X-CSRF-Token header; reload the page")
    return None


def authorize_write(reviewers: Reviewers, session: Session | None, bearer: str | None,
                    csrf: str | None, proposers: Reviewers | None = None) -> Decision:
    """A state-changing request: a reviewer by bearer token, or by session with its CSRF token.
    A proposer's token is refused (403), whatever the reviewers."""
    if bearer is not None and proposers and proposers.identify(bearer) is not None:
        return _refuse(403, NOT_A_REVIEWER)
    decision = _reviewer(reviewers, session, bearer)
    if not decision.allowed or bearer is not None:
        return decision
    assert session is not None
    return _csrf_refused(session, csrf) or decision


def authorize_propose(reviewers: Reviewers, proposers: Reviewers, session: Session | None,
                      bearer: str | None, csrf: str | None) -> Decision:
    """A proposal: by a proposer's bearer token (a monitor), or as any change is (a reviewer)."""
    name = proposers.identify(bearer)  # None without a token, or for one no proposer holds
    if name is not None:
        return Decision(True, name, proposer=True)
    if not reviewers and proposers:
        return _refuse(401, "send a proposer's token (Authorization: Bearer TOKEN)"
                       if bearer is None else "unknown proposer token")
    return authorize_write(reviewers, session, bearer, csrf)


def authorize_read(read_open: bool, reviewers: Reviewers, session: Session | None,
                   bearer: str | None) -> Decision:
    """A read: open when the console serves loopback only, else a reviewer's."""
    if read_open:
        return Decision(True, session.who if session else None)
    return _reviewer(reviewers, session, bearer)


# ------------------------------------------------------------ signed in with the identity provider

SIGN_IN = ("sign in first: the console's Sign in button takes you to your identity provider "
           "(GET api/oidc/login)")
Action = Literal["read", "propose", "write"]


@dataclass(frozen=True)
class Bearer:
    """A bearer token, with an identity provider: who it names once verified (a monitor, with
    the client credentials grant), or why it was refused (and the status to refuse with)."""

    principal: Principal | None
    refused: str = ""
    status: int = 401


def authorize_provider(action: Action, *, read_open: bool, session: Session | None,
                       bearer: Bearer | None, csrf: str | None) -> Decision:
    """A request to a console whose people sign in with an identity provider (OpenID Connect).

    - A bearer token is a machine's (a monitor's): with `rippl:propose` it proposes, with
      `rippl:check` or `rippl:propose` it reads; it never decides, whatever it carries.
    - A session is a person's, with the role the provider's groups gave them at sign-in: a
      reader reads, a proposer also proposes, a reviewer also decides; every change carries the
      session's CSRF token.
    - Without either, reads are open on loopback only; anything else needs a sign-in.
    """
    if bearer is not None:
        principal = bearer.principal
        if principal is None:
            return _refuse(bearer.status, bearer.refused)
        if action == "write":
            return _refuse(403, f"{principal.subject} sent a token (a monitor's): it can propose, "
                                "never approve, reject or change anything else; a reviewer signs "
                                "in and decides")
        if action == "propose":
            if PROPOSE_SCOPE in principal.scopes:
                return Decision(True, principal.subject, proposer=True)
            return _refuse(403, f"the token of {principal.subject} does not carry {PROPOSE_SCOPE}: "
                                "ask the identity provider for a token with it, for this console")
        if read_open or principal.scopes & {CHECK_SCOPE, PROPOSE_SCOPE}:
            return Decision(True, principal.subject)
        return _refuse(403, f"the token of {principal.subject} carries neither {CHECK_SCOPE} nor "
                            f"{PROPOSE_SCOPE}: it reads nothing here")
    if session is None:
        return Decision(True, None) if action == "read" and read_open else _refuse(401, SIGN_IN)
    if action == "read":
        return Decision(True, session.who)
    allowed = (Role.REVIEWER,) if action == "write" else (Role.REVIEWER, Role.PROPOSER)
    if session.role not in allowed:
        what = "a reviewer decides" if action == "write" else "a reviewer or a proposer proposes"
        return _refuse(403, f"{session.name or session.who} is signed in as a {session.role}: only "
                            f"{what} (the identity provider's groups say who is which)")
    return _csrf_refused(session, csrf) or Decision(True, session.who)


# ----------------------------------------------------------------------------------- binding


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def check_bind(host: str, *, allow_remote: bool, reviewers: Reviewers,
               extra_hosts: Iterable[str] = (), provider: bool = False) -> frozenset[str]:
    """Refuse a non-loopback address without the explicit flag or without authentication
    (reviewers, or an identity `provider`); returns the host names the Host header may carry."""
    allowed = LOOPBACK_NAMES | {h.strip("[]").lower() for h in extra_hosts}
    if is_loopback(host):
        return allowed | {host.strip("[]").lower()}
    if not allow_remote:
        raise AuthConfigError(f"binding to {host} serves the console beyond this machine; pass "
                              "--allow-remote to mean it (reviewer tokens are then required)")
    if not reviewers and not provider:
        raise AuthConfigError(f"refusing to serve on {host} without reviewer authentication: give "
                              f"--reviewers FILE or {ENV_VAR}, or sign people in with "
                              "--oidc-issuer")
    if is_unspecified(host) and not set(extra_hosts):
        raise AuthConfigError(f"{host} listens on every address; name the host names clients use "
                              "with --allowed-host (the Host header is checked against them)")
    return allowed if is_unspecified(host) else allowed | {host.strip("[]").lower()}
