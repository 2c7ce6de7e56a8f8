"""Who a verified token names: subject (or client), display name, scopes, machine or person, and
the roles its groups claim gives."""

from __future__ import annotations

from typing import Any

import pytest

from rippl_core.identity.errors import TokenRefusedError
from rippl_core.identity.roles import (
    Principal,
    Role,
    RoleMap,
    claim_values,
    is_machine,
    principal_of,
    scopes_of,
)

ISS = "https://login.example.com"


def test_claim_values_reach_lists_strings_and_nested_claims() -> None:
    claims = {"groups": ["a", 7, "b"], "role": "x", "realm_access": {"roles": ["r1"]}, "n": 3}
    assert claim_values(claims, "groups") == ["a", "b"]
    assert claim_values(claims, "role") == ["x"]
    assert claim_values(claims, "realm_access.roles") == ["r1"]
    assert claim_values(claims, "realm_access.missing") == []
    assert claim_values(claims, "role.deeper") == []
    assert claim_values(claims, "n") == [] and claim_values(claims, "missing") == []
    namespaced = {"https://rippl.example.com/groups": ["rippl-reviewers"], "https://rippl": {}}
    assert claim_values(namespaced, "https://rippl.example.com/groups") == ["rippl-reviewers"]
    assert claim_values({"a.b": "flat", "a": {"b": "nested"}}, "a.b") == ["flat"]


def test_roles_come_from_the_configured_groups() -> None:
    default = RoleMap()
    assert default.roles({"groups": ["rippl-reviewers", "staff"]}) == {Role.REVIEWER}
    assert default.roles({"groups": ["rippl-proposers", "rippl-readers"]}) == {Role.PROPOSER,
                                                                               Role.READER}
    assert default.roles({"groups": "rippl-readers"}) == {Role.READER}
    assert default.roles({"groups": ["Rippl-Reviewers"]}) == set()  # names are exact
    assert default.roles({}) == set()
    keycloak = RoleMap(claim="realm_access.roles", reviewer="approver", proposer="monitor",
                       reader="viewer")
    assert keycloak.roles({"realm_access": {"roles": ["approver", "viewer"]}}) == {Role.REVIEWER,
                                                                                   Role.READER}
    assert keycloak.roles({"groups": ["rippl-reviewers"]}) == set()


@pytest.mark.parametrize(("claims", "scopes"), [
    ({"scope": "rippl:check rippl:propose"}, {"rippl:check", "rippl:propose"}),
    ({"scp": ["rippl:check", "openid"]}, {"rippl:check", "openid"}),
    ({"scp": "rippl:review  rippl:check"}, {"rippl:review", "rippl:check"}),
    ({"scope": "a", "scp": ["b"]}, {"a", "b"}),
    ({"scope": 7}, set()), ({}, set()),
])
def test_scopes(claims: dict[str, Any], scopes: set[str]) -> None:
    assert scopes_of(claims) == scopes


@pytest.mark.parametrize(("claims", "machine"), [
    ({"sub": "monitor-1", "client_id": "monitor-1"}, True),  # client credentials (RFC 9068)
    ({"sub": "monitor-1", "azp": "monitor-1"}, True),
    ({"client_id": "monitor-1"}, True),  # no subject at all
    ({"sub": "x@clients", "azp": "x", "gty": "client-credentials"}, True),  # Auth0
    ({"sub": "0a1b", "azp": "app", "idtyp": "app"}, True),  # Entra ID
    ({"sub": "ana", "client_id": "console"}, False),
    ({"sub": "ana", "azp": "console", "idtyp": "user", "gty": "authorization_code"}, False),
    ({"sub": "ana"}, False),
])
def test_machine_or_person(claims: dict[str, Any], machine: bool) -> None:
    assert is_machine(claims) is machine


def test_the_principal_of_a_person() -> None:
    claims = {"iss": ISS, "sub": "ana", "client_id": "console", "name": "Ana  Lima",
              "preferred_username": "ana.l", "scope": "rippl:review", "groups": ["rippl-reviewers"],
              "exp": 1_900_000_000}
    who = principal_of(claims, RoleMap())
    assert who == Principal(subject="ana", issuer=ISS, client_id="console", name="Ana Lima",
                            scopes=frozenset({"rippl:review"}), roles=frozenset({Role.REVIEWER}),
                            machine=False, expires=1_900_000_000)
    assert who.display == "Ana Lima" and who.reviewer


def test_a_machine_is_never_a_reviewer_whatever_its_groups() -> None:
    claims = {"iss": ISS, "sub": "bot", "client_id": "bot", "groups": ["rippl-reviewers"]}
    who = principal_of(claims, RoleMap())
    assert who.machine and Role.REVIEWER in who.roles and not who.reviewer
    assert who.display == "bot" and who.name is None and who.expires is None


@pytest.mark.parametrize(("claims", "name"), [
    ({"preferred_username": "ana.l", "email": "ana@x"}, "ana.l"),
    ({"name": " ", "email": "ana@x"}, "ana@x"),
    ({"name": 7}, None),
])
def test_the_display_name(claims: dict[str, Any], name: str | None) -> None:
    assert principal_of({"sub": "ana", **claims}, RoleMap()).name == name


def test_a_token_without_a_subject_names_its_client() -> None:
    who = principal_of({"iss": ISS, "client_id": "monitor-1", "exp": "soon"}, RoleMap())
    assert (who.subject, who.client_id, who.machine, who.expires) == ("monitor-1", "monitor-1", True,
                                                                      None)
    assert principal_of({"azp": "app-2"}, RoleMap()).client_id == "app-2"
    assert principal_of({"sub": "ana", "client_id": 7}, RoleMap()).client_id is None


@pytest.mark.parametrize("claims", [{}, {"sub": ""}, {"sub": " ana"}, {"sub": "a" * 129},
                                    {"sub": "a\nb"}, {"sub": 7}, {"client_id": ["x"]}])
def test_a_token_naming_nobody_usable_is_refused(claims: dict[str, Any]) -> None:
    with pytest.raises(TokenRefusedError, match="names no usable subject"):
        principal_of(claims, RoleMap())


def test_the_longest_subject_is_kept() -> None:
    assert principal_of({"sub": "a" * 128}, RoleMap()).subject == "a" * 128


def test_a_principal_is_a_person_unless_said_otherwise() -> None:
    who = Principal(subject="ana", issuer=ISS, roles=frozenset({Role.REVIEWER}))
    assert not who.machine and who.reviewer
    assert not Principal(subject="ana", issuer=ISS).reviewer  # no role, no reviewer
