"""Who may read, propose and decide in a console whose people sign in with an identity provider
(`authorize_provider`), pinned: a session's role (from the provider's groups) and its CSRF
token; a bearer token is a monitor's, which proposes with rippl:propose and never decides."""

from __future__ import annotations

import pytest

from rippl_core.console.auth import SIGN_IN, Bearer, Session, authorize_provider
from rippl_core.identity.roles import Principal, Role

ISS = "https://login.example.com"


def session(role: Role, name: str | None = "Ana Lima") -> Session:
    return Session("sid", "ana", "csrf-token", float("inf"), role, name)


def monitor(*scopes: str) -> Bearer:
    return Bearer(Principal(subject="scanner", issuer=ISS, scopes=frozenset(scopes), machine=True))


@pytest.mark.parametrize("read_open", [True, False])
def test_without_credentials_only_open_reads_pass(read_open: bool) -> None:
    read = authorize_provider("read", read_open=read_open, session=None, bearer=None, csrf=None)
    assert (read.allowed, read.who) == (read_open, None)
    if not read_open:
        assert (read.status, read.reason) == (401, SIGN_IN)
    for action in ("propose", "write"):
        refused = authorize_provider(action, read_open=read_open, session=None, bearer=None,  # type: ignore[arg-type]
                                     csrf=None)
        assert (refused.allowed, refused.status, refused.reason) == (False, 401, SIGN_IN)


@pytest.mark.parametrize(("role", "propose", "write"), [
    (Role.REVIEWER, True, True), (Role.PROPOSER, True, False), (Role.READER, False, False),
])
def test_a_sessions_role_says_what_it_may_do(role: Role, propose: bool, write: bool) -> None:
    who = session(role)
    for action, allowed in (("read", True), ("propose", propose), ("write", write)):
        decision = authorize_provider(action, read_open=False, session=who, bearer=None,  # type: ignore[arg-type]
                                      csrf="csrf-token")
        assert decision.allowed is allowed, (role, action)
        assert decision.who == ("ana" if allowed else None) and not decision.proposer
        if not allowed:
            assert decision.status == 403
            assert f"Ana Lima is signed in as a {role}: only a reviewer" in decision.reason
    quiet = authorize_provider("write", read_open=False, session=session(Role.READER, None),
                               bearer=None, csrf="csrf-token")
    assert quiet.reason.startswith("ana is signed in as a reader: only a reviewer decides (")
    proposing = authorize_provider("propose", read_open=False, session=session(Role.READER),
                                   bearer=None, csrf="csrf-token")
    assert "only a reviewer or a proposer proposes" in proposing.reason


@pytest.mark.parametrize("action", ["propose", "write"])
def test_a_change_by_session_needs_its_csrf_token(action: str) -> None:
    for csrf in (None, "", "csrf-token ", "other"):
        refused = authorize_provider(action, read_open=True, session=session(Role.REVIEWER),  # type: ignore[arg-type]
                                     bearer=None, csrf=csrf)
        assert (refused.allowed, refused.status) == (False, 403) and "CSRF" in refused.reason
    read = authorize_provider("read", read_open=True, session=session(Role.READER), bearer=None,
                              csrf=None)
    assert (read.allowed, read.who) == (True, "ana")  # reads need none


def test_a_monitors_token_proposes_and_never_decides() -> None:
    propose = authorize_provider("propose", read_open=False, session=None,
                                 bearer=monitor("rippl:propose"), csrf=None)
    assert (propose.allowed, propose.who, propose.proposer) == (True, "scanner", True)
    write = authorize_provider("write", read_open=True, session=session(Role.REVIEWER),
                               bearer=monitor("rippl:propose", "rippl:review"), csrf="csrf-token")
    assert (write.allowed, write.status) == (False, 403) and "never approve" in write.reason
    lacking = authorize_provider("propose", read_open=True, session=None,
                                 bearer=monitor("rippl:check"), csrf=None)
    assert (lacking.allowed, lacking.status) == (False, 403)
    assert "does not carry rippl:propose" in lacking.reason


@pytest.mark.parametrize(("scopes", "read_open", "allowed"), [
    (("rippl:check",), False, True), (("rippl:propose",), False, True), ((), False, False),
    (("openid",), False, False), ((), True, True),
])
def test_a_monitors_token_reads_with_a_rippl_scope(scopes: tuple[str, ...], read_open: bool,
                                                   allowed: bool) -> None:
    read = authorize_provider("read", read_open=read_open, session=None, bearer=monitor(*scopes),
                              csrf=None)
    assert read.allowed is allowed
    assert read.who == ("scanner" if allowed else None)
    if not allowed:
        assert read.status == 403 and "reads nothing here" in read.reason


def test_a_refused_token_is_401_unless_said_otherwise() -> None:
    refused = authorize_provider("read", read_open=True, session=None,
                                 bearer=Bearer(None, "the token expired"), csrf=None)
    assert (refused.allowed, refused.status) == (False, 401)


def test_a_refused_token_is_refused_with_its_status_and_reason() -> None:
    for status in (401, 503):
        refused = authorize_provider("read", read_open=True, session=session(Role.REVIEWER),
                                     bearer=Bearer(None, "the token expired", status), csrf=None)
        assert (refused.allowed, refused.status, refused.reason) == (False, status, "the token expired")
