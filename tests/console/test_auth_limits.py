"""The console's auth limits as numbers a reviewer relies on, written out (not read from the module,
so that changing one is a visible decision): the shortest token, a session's lifetime, a fresh
token's length, the status of an allowed request, and a named remote host."""

from __future__ import annotations

import pytest

from rippl_core.console.auth import (
    LOOPBACK_NAMES,
    AuthConfigError,
    Decision,
    Sessions,
    authorize_read,
    authorize_write,
    check_bind,
    is_unspecified,
    new_token,
    parse_reviewers,
)

REVIEWERS = parse_reviewers(["alice: alice-token-0123456789"], where="test")


def test_a_token_needs_16_characters() -> None:
    assert parse_reviewers(["a: " + "x" * 16], where="f").identify("x" * 16) == "a"
    with pytest.raises(AuthConfigError, match="at least 16 printable ASCII characters"):
        parse_reviewers(["a: " + "x" * 15], where="f")


def test_a_session_lives_twelve_hours_by_default() -> None:
    now = [0.0]
    sessions = Sessions(clock=lambda: now[0])
    session = sessions.open("alice")
    assert session.expires == 12 * 3600
    now[0] = 12 * 3600 - 1
    assert sessions.get(session.id) == session
    now[0] = 12 * 3600
    assert sessions.get(session.id) is None


def test_a_fresh_token_is_32_random_bytes() -> None:
    assert len(new_token()) == 43  # 32 bytes, URL-safe base64 without padding


def test_an_allowed_request_has_status_200() -> None:
    assert Decision(True).status == 200
    assert authorize_read(True, REVIEWERS, None, None) == Decision(True, None, 200, "")
    assert authorize_write(REVIEWERS, None, "alice-token-0123456789", None) == \
        Decision(True, "alice", 200, "")


def test_a_named_remote_host_is_not_every_address() -> None:
    assert is_unspecified("console.example.com") is False
    assert is_unspecified("0.0.0.0") is True and is_unspecified("[::]") is True
    assert check_bind("console.example.com", allow_remote=True, reviewers=REVIEWERS) == \
        LOOPBACK_NAMES | {"console.example.com"}


def test_a_session_id_and_its_csrf_token_are_32_random_bytes_each() -> None:
    session = Sessions().open("alice")
    assert len(session.id) == len(session.csrf) == 43 and session.id != session.csrf


def test_a_reviewer_configured_twice_is_named() -> None:
    other = parse_reviewers(["alice: another-token-0123456"], where="env")
    with pytest.raises(AuthConfigError, match=r"^reviewer configured twice: alice$"):
        REVIEWERS.merged(other)
    same_token = parse_reviewers(["bob: alice-token-0123456789"], where="env")
    with pytest.raises(AuthConfigError, match=r"^reviewer configured twice: a token$"):
        REVIEWERS.merged(same_token)
