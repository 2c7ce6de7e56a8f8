"""Which scope each MCP request needs, and who may use the review tools: the policy the HTTP gate
applies to every JSON-RPC message (pure: no server, no SDK)."""

from __future__ import annotations

from typing import Any

import pytest

from rippl_core.identity.roles import Principal, Role
from rippl_core.mcp.scopes import (
    CHECK,
    CHECKING,
    PROPOSE,
    PROPOSING,
    REVIEW,
    REVIEWING,
    TOOLS,
    refusal,
    scope_of,
    tool_scope,
)

ISS = "https://login.example.com"


def who(*scopes: str, machine: bool = False, roles: frozenset[Role] = frozenset()) -> Principal:
    return Principal(subject="agent-7", issuer=ISS, scopes=frozenset(scopes), machine=machine,
                     roles=roles)


def call(tool: object) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool}}


def test_every_tool_has_exactly_one_scope() -> None:
    assert not (CHECKING & PROPOSING) and not (CHECKING & REVIEWING) and not (PROPOSING & REVIEWING)
    assert {tool_scope(t) for t in CHECKING} == {CHECK}
    assert {tool_scope(t) for t in PROPOSING} == {PROPOSE}
    assert {tool_scope(t) for t in REVIEWING} == {REVIEW}
    assert tool_scope("no_such_tool") == CHECK
    assert {"propose_retraction", "propose_override", "approve_review", "check_premises"} <= TOOLS


@pytest.mark.parametrize(("method", "params", "scope"), [
    ("tools/call", {"name": "propose_retraction"}, PROPOSE),
    ("tools/call", {"name": "approve_review"}, REVIEW),
    ("tools/call", {"name": "explain"}, CHECK),
    ("tools/call", {"name": 7}, CHECK), ("tools/call", {}, CHECK), ("tools/call", None, CHECK),
    ("resources/read", {"uri": "rippl://node/CLM-1"}, CHECK),
    ("resources/subscribe", {}, CHECK), ("prompts/get", {}, CHECK), ("completion/complete", {}, CHECK),
    ("initialize", {}, None), ("tools/list", {}, None), ("ping", None, None),
    ("notifications/initialized", None, None), (None, None, None),
])
def test_the_scope_a_request_needs(method: object, params: object, scope: str | None) -> None:
    assert scope_of(method, params) == scope


def test_a_token_without_any_rippl_scope_is_refused_everything() -> None:
    for message in ({"method": "initialize"}, call("explain")):
        denied = refusal(who("openid", "email"), message)
        assert denied is not None and (denied.status, denied.error, denied.scope) == (
            403, "insufficient_scope", CHECK)
        assert "none of Rippl's scopes" in denied.reason


def test_a_missing_scope_names_what_to_ask_for_keeping_what_is_held() -> None:
    denied = refusal(who(CHECK), call("propose_retraction"))
    assert denied is not None and (denied.status, denied.error) == (403, "insufficient_scope")
    assert denied.scope == f"{CHECK} {PROPOSE}" and "needs the scope rippl:propose" in denied.reason
    assert "agent-7" in denied.reason
    reading = refusal(who(PROPOSE), {"method": "resources/read"})
    assert reading is not None and reading.scope == f"{CHECK} {PROPOSE}"
    assert refusal(who(PROPOSE), {"method": "tools/list"}) is None  # any Rippl scope lists
    reviewing = refusal(who(CHECK, PROPOSE), call("approve_review"))
    assert reviewing is not None and reviewing.scope == f"{CHECK} {PROPOSE} {REVIEW}"


def test_held_scopes_pass() -> None:
    assert refusal(who(CHECK), call("check_premises")) is None
    assert refusal(who(CHECK, PROPOSE), call("propose_override")) is None
    assert refusal(who(PROPOSE), call("report_compensation_attempt")) is None


def test_review_tools_need_a_person_the_issuer_marks_a_reviewer() -> None:
    reviewer = frozenset({Role.REVIEWER})
    assert refusal(who(REVIEW, roles=reviewer), call("approve_review")) is None
    machine = refusal(who(REVIEW, machine=True, roles=reviewer), call("reject_review"))
    assert machine is not None and (machine.status, machine.error, machine.scope) == (
        403, "access_denied", None)
    assert "a machine's token" in machine.reason
    reader = refusal(who(REVIEW, roles=frozenset({Role.READER})), call("resolve_compensation"))
    assert reader is not None and (reader.status, reader.error, reader.scope) == (
        403, "access_denied", None)
    assert "does not mark agent-7 as a reviewer" in reader.reason
    # a machine may still propose and check
    assert refusal(who(CHECK, PROPOSE, machine=True), call("propose_retraction")) is None
