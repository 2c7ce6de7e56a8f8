"""Who a verified token names, and what the issuer says they may do.

- The principal: its subject (`sub`, or the client's id when a token names no subject), the
  client it was issued to (`client_id` or `azp`), its display name (`name`, else
  `preferred_username`, else `email`), its scopes (`scope`, space-separated, or `scp`).
- Machine or person: a token a client obtained for itself (the client credentials grant) names
  the client as its subject (RFC 9068), or says so (`gty: client-credentials`, Auth0;
  `idtyp: app`, Entra ID). Such a principal is a machine: it may be a proposer, never a reviewer.
- Roles from a claim the issuer sets (`groups` by default; a dotted path reaches a nested one,
  e.g. Keycloak's `realm_access.roles`): a member of the reviewer group is a reviewer, of the
  proposer group a proposer, of the reader group a reader. The groups' names are configured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rippl_core._runtime.validation import MAX_ID_LENGTH
from rippl_core.identity.errors import TokenRefusedError

# The scopes of Rippl's tokens (what each allows: rippl_core.mcp.scopes; the console reads
# monitors' tokens by them too)
CHECK_SCOPE, PROPOSE_SCOPE, REVIEW_SCOPE = "rippl:check", "rippl:propose", "rippl:review"
GROUPS_CLAIM = "groups"
REVIEWER_GROUP, PROPOSER_GROUP, READER_GROUP = "rippl-reviewers", "rippl-proposers", "rippl-readers"


class Role(StrEnum):
    """What a person (or, for `proposer`, a machine) may do in Rippl."""

    REVIEWER = "reviewer"  # approve and reject; and propose, and read
    PROPOSER = "proposer"  # propose retractions; and read
    READER = "reader"  # read


def claim_values(claims: Mapping[str, Any], path: str) -> list[str]:
    """The strings a claim holds (a list of strings, or one string): the claim named `path`, or,
    when there is none, the one a dotted `path` reaches (Keycloak's `realm_access.roles`; a
    namespaced claim such as Auth0's `https://rippl.example.com/groups` is found by its name)."""
    value: Any = claims.get(path, claims)
    for part in path.split(".") if value is claims else ():
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


@dataclass(frozen=True)
class RoleMap:
    """Which claim carries the groups, and which group gives which role."""

    claim: str = GROUPS_CLAIM
    reviewer: str = REVIEWER_GROUP
    proposer: str = PROPOSER_GROUP
    reader: str = READER_GROUP

    def roles(self, claims: Mapping[str, Any]) -> frozenset[Role]:
        groups = set(claim_values(claims, self.claim))
        return frozenset(role for role, group in ((Role.REVIEWER, self.reviewer),
                                                  (Role.PROPOSER, self.proposer),
                                                  (Role.READER, self.reader)) if group in groups)


@dataclass(frozen=True)
class Principal:
    """Who a verified token names (see the module docstring)."""

    subject: str
    issuer: str
    client_id: str | None = None
    name: str | None = None
    scopes: frozenset[str] = frozenset()
    roles: frozenset[Role] = frozenset()
    machine: bool = False
    expires: int | None = None

    @property
    def display(self) -> str:
        """The display name, or the subject."""
        return self.name or self.subject

    @property
    def reviewer(self) -> bool:
        """A person the issuer marks as a reviewer (a machine never is one)."""
        return Role.REVIEWER in self.roles and not self.machine


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes a token grants: `scope` (space-separated, RFC 9068) or `scp` (a list, or a
    space-separated string)."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        for value in claim_values(claims, name):
            found.update(value.split())
    return frozenset(found)


def is_machine(claims: Mapping[str, Any]) -> bool:
    """Whether a token was issued to a client for itself (no person behind it)."""
    subject = claims.get("sub")
    client = claims.get("client_id") or claims.get("azp")
    return (subject is None or subject == client or claims.get("gty") == "client-credentials"
            or claims.get("idtyp") == "app")


def principal_of(claims: Mapping[str, Any], roles: RoleMap) -> Principal:
    """The principal of verified claims; TokenRefusedError when they name nobody usable."""
    client = claims.get("client_id") or claims.get("azp")
    subject = claims.get("sub") or client
    if not isinstance(subject, str) or not subject or subject != subject.strip() \
            or len(subject) > MAX_ID_LENGTH or not subject.isprintable():
        raise TokenRefusedError("the token names no usable subject (sub) or client (client_id): "
                                f"an identity is a printable string of at most {MAX_ID_LENGTH} "
                                "characters")
    name = next((claims[k] for k in ("name", "preferred_username", "email")
                 if isinstance(claims.get(k), str) and claims[k].strip()), None)
    exp = claims.get("exp")
    return Principal(subject=subject, issuer=str(claims.get("iss")),
                     client_id=client if isinstance(client, str) else None,
                     name=" ".join(name.split())[:MAX_ID_LENGTH] if name else None,
                     scopes=scopes_of(claims), roles=roles.roles(claims),
                     machine=is_machine(claims), expires=exp if isinstance(exp, int) else None)
