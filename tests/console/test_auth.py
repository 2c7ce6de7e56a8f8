"""Every allow/deny branch of the console's auth module, pinned: reviewer tokens, sessions, CSRF,
the Host/Origin/content-type checks, and the bind-address rule."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from helpers_clock import ManualClock
from hypothesis import given
from hypothesis import strategies as st

from rippl_core.console.auth import (
    LOOPBACK_NAMES,
    MIN_TOKEN_LENGTH,
    AuthConfigError,
    Reviewers,
    Session,
    Sessions,
    authorize_propose,
    authorize_read,
    authorize_write,
    check_bind,
    content_type_allowed,
    host_allowed,
    host_name,
    is_loopback,
    load_reviewers,
    new_token,
    origin_allowed,
    parse_reviewers,
)

ALICE = "alice-token-0123456789"
BOB = "bob-token-9876543210ab"
BOB_HASH = hashlib.sha256(BOB.encode()).hexdigest()
REVIEWERS = parse_reviewers([f"alice: {ALICE}", f"bob@example.com: sha256:{BOB_HASH}"], where="test")


# -- reviewer tokens ---------------------------------------------------------------------------
def test_tokens_identify_their_reviewer_plain_or_hashed() -> None:
    assert REVIEWERS.identify(ALICE) == "alice"
    assert REVIEWERS.identify(BOB) == "bob@example.com"
    assert REVIEWERS.names == ["alice", "bob@example.com"]
    assert bool(REVIEWERS) and not Reviewers()


@pytest.mark.parametrize("token", [None, "", ALICE[:-1], ALICE + "x", ALICE.upper(),
                                   hashlib.sha256(BOB.encode()).hexdigest(), "sha256:" + "0" * 64])
def test_anything_but_the_exact_token_identifies_nobody(token: str | None) -> None:
    assert REVIEWERS.identify(token) is None


def test_comments_and_blank_lines_are_skipped() -> None:
    parsed = parse_reviewers(["# reviewers", "", f"  carol : {ALICE}  "], where="f")
    assert parsed.identify(ALICE) == "carol"


@pytest.mark.parametrize(("entry", "problem"), [
    (f"alice {ALICE}", "expected 'name: token'"),
    (f": {ALICE}", "expected 'name: token'"),
    (f"al ice: {ALICE}", "expected 'name: token'"),
    (f"-alice: {ALICE}", "expected 'name: token'"),
    (f"{'a' * 65}: {ALICE}", "expected 'name: token'"),
    ("alice: short", "at least"),
    (f"alice: {'x' * (MIN_TOKEN_LENGTH - 1)}", "at least"),
    ("alice: has a space in it ok", "at least"),
    ("alice: tökentökentökentöken", "at least"),
    ("alice: sha256:abc", "at least"),
])
def test_bad_entries_are_refused_with_the_line(entry: str, problem: str) -> None:
    with pytest.raises(AuthConfigError, match=problem) as error:
        parse_reviewers(["# first", entry], where="reviewers.txt")
    assert "reviewers.txt, entry 2" in str(error.value)


def test_the_shortest_allowed_token_is_accepted() -> None:
    token = "x" * MIN_TOKEN_LENGTH
    assert parse_reviewers([f"dave: {token}"], where="f").identify(token) == "dave"


@pytest.mark.parametrize("entries", [[f"alice: {ALICE}", f"alice: {BOB}"],
                                     [f"alice: {ALICE}", f"bob: {ALICE}"]])
def test_a_name_or_token_given_twice_is_refused(entries: list[str]) -> None:
    with pytest.raises(AuthConfigError, match="twice"):
        parse_reviewers(entries, where="f")


def test_load_from_file_and_environment(tmp_path: Path) -> None:
    file = tmp_path / "reviewers"
    file.write_text(f"alice: {ALICE}\n", encoding="utf-8")
    both = load_reviewers(file, f"bob: {BOB},\ncarol: {'c' * 20}")
    assert both.names == ["alice", "bob", "carol"]
    assert load_reviewers(None, None).names == []
    assert load_reviewers(file, "").names == ["alice"]
    with pytest.raises(AuthConfigError, match="twice"):
        load_reviewers(file, f"alice: {BOB}")
    with pytest.raises(AuthConfigError, match="twice"):
        load_reviewers(file, f"eve: {ALICE}")
    with pytest.raises(AuthConfigError, match="cannot read"):
        load_reviewers(tmp_path / "missing", None)


def test_new_tokens_are_long_random_and_accepted() -> None:
    a, b = new_token(), new_token()
    assert a != b and len(a) >= 40
    assert parse_reviewers([f"x: {a}"], where="f").identify(a) == "x"


# -- sessions ----------------------------------------------------------------------------------
def test_sessions_open_find_expire_and_close() -> None:
    clock = ManualClock()
    sessions = Sessions(ttl=60, clock=clock)
    one = sessions.open("alice")
    assert one.who == "alice" and one.id != one.csrf and len(one.csrf) >= 40
    assert sessions.get(one.id) == one
    assert sessions.get(None) is None and sessions.get("") is None and sessions.get("nope") is None
    clock.now += 59.9
    assert sessions.get(one.id) == one
    clock.now += 0.1  # expires exactly at ttl
    assert sessions.get(one.id) is None
    two = sessions.open("bob")
    sessions.close(two.id)
    assert sessions.get(two.id) is None
    sessions.close(None)  # closing nothing is harmless


def test_opening_a_session_drops_expired_ones() -> None:
    clock = ManualClock()
    sessions = Sessions(ttl=10, clock=clock)
    old = sessions.open("alice")
    clock.now += 11
    sessions.open("bob")
    assert old.id not in sessions._sessions


# -- request checks ----------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "name"), [
    ("127.0.0.1:8765", "127.0.0.1"), ("localhost", "localhost"), ("LocalHost:80", "localhost"),
    ("[::1]:8765", "::1"), ("[::1]", "::1"), ("review.example.com:443", "review.example.com"),
    ("", None), ("a b", None), ("user@host", None), ("host:port", None), ("[::1", None),
    ("host:123456", None), ("evil.com/x", None),
])
def test_host_name(value: str, name: str | None) -> None:
    assert host_name(value) == name


@pytest.mark.parametrize(("host", "allowed"), [
    ("127.0.0.1:8765", True), ("localhost:1", True), ("[::1]:8765", True),
    (None, False), ("", False), ("evil.example:8765", False), ("127.0.0.1.evil.example", False),
    ("localhost.evil.example:8765", False), ("0.0.0.0:8765", False),
])
def test_host_check(host: str | None, allowed: bool) -> None:
    assert host_allowed(host, LOOPBACK_NAMES) is allowed


@pytest.mark.parametrize(("origin", "allowed"), [
    (None, True), ("http://127.0.0.1:8765", True), ("https://localhost", True),
    ("http://[::1]:8765", True), ("null", False), ("", False), ("http://evil.example", False),
    ("ftp://127.0.0.1:8765", False), ("http://127.0.0.1:8765/path", False),
    ("http://127.0.0.1.evil.example", False), ("127.0.0.1:8765", False),
])
def test_origin_check(origin: str | None, allowed: bool) -> None:
    assert origin_allowed(origin, LOOPBACK_NAMES) is allowed


@pytest.mark.parametrize(("method", "content_type", "allowed"), [
    ("GET", None, True), ("HEAD", "text/plain", True), ("OPTIONS", None, True),
    ("POST", "application/json", True), ("POST", "Application/JSON; charset=utf-8", True),
    ("DELETE", "application/json", True), ("put", "application/json", True),
    ("POST", None, False), ("POST", "text/plain", False),
    ("PATCH", "application/x-www-form-urlencoded", False),
    ("DELETE", "multipart/form-data", False), ("POST", "application/jsonp", False),
])
def test_state_changes_must_be_json(method: str, content_type: str | None, allowed: bool) -> None:
    assert content_type_allowed(method, content_type) is allowed


@given(st.text(max_size=40))
def test_no_made_up_host_passes_unless_it_is_an_allowed_name(host: str) -> None:
    if host_allowed(host, LOOPBACK_NAMES):
        assert host_name(host) in LOOPBACK_NAMES


# -- who may write, who may read ----------------------------------------------------------------
SESSION = Session("sid", "alice", "csrf-token", expires=float("inf"))


def test_a_write_by_session_needs_the_csrf_token() -> None:
    ok = authorize_write(REVIEWERS, SESSION, None, "csrf-token")
    assert (ok.allowed, ok.who) == (True, "alice")
    for csrf in (None, "", "csrf-token ", "CSRF-TOKEN", "other"):
        refused = authorize_write(REVIEWERS, SESSION, None, csrf)
        assert (refused.allowed, refused.who, refused.status) == (False, None, 403)
        assert "CSRF" in refused.reason


def test_a_write_by_bearer_token_needs_no_csrf_and_names_the_token_holder() -> None:
    ok = authorize_write(REVIEWERS, None, BOB, None)
    assert (ok.allowed, ok.who) == (True, "bob@example.com")
    # the bearer decides even when a session cookie of someone else comes along
    assert authorize_write(REVIEWERS, SESSION, BOB, None).who == "bob@example.com"
    refused = authorize_write(REVIEWERS, SESSION, "wrong-token-xxxxxxxx", "csrf-token")
    assert (refused.allowed, refused.status) == (False, 401)


def test_a_write_without_credentials_or_reviewers_is_refused() -> None:
    anonymous = authorize_write(REVIEWERS, None, None, "csrf-token")
    assert (anonymous.allowed, anonymous.status) == (False, 401)
    assert "sign in" in anonymous.reason
    nobody = authorize_write(Reviewers(), SESSION, ALICE, "csrf-token")
    assert (nobody.allowed, nobody.status) == (False, 403)
    assert "no reviewers" in nobody.reason


def test_reads_are_open_only_when_configured_so() -> None:
    assert authorize_read(True, Reviewers(), None, None).allowed
    assert authorize_read(True, REVIEWERS, SESSION, None).who == "alice"
    assert authorize_read(True, REVIEWERS, None, None).who is None
    closed = authorize_read(False, REVIEWERS, None, None)
    assert (closed.allowed, closed.status) == (False, 401)
    assert authorize_read(False, REVIEWERS, SESSION, None).who == "alice"  # no CSRF on reads
    assert authorize_read(False, REVIEWERS, None, ALICE).who == "alice"
    assert not authorize_read(False, REVIEWERS, None, "nope-nope-nope-nope").allowed
    assert authorize_read(False, Reviewers(), SESSION, None).status == 403


# -- binding -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("LOCALHOST", True),
    ("::1", True), ("[::1]", True), ("0.0.0.0", False), ("::", False), ("192.168.1.5", False),
    ("example.com", False), ("10.0.0.1", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_loopback_binds_without_flags_and_allows_loopback_names() -> None:
    assert check_bind("127.0.0.1", allow_remote=False, reviewers=Reviewers()) == LOOPBACK_NAMES
    assert "127.0.0.2" in check_bind("127.0.0.2", allow_remote=False, reviewers=Reviewers())
    extra = check_bind("localhost", allow_remote=False, reviewers=Reviewers(), extra_hosts=["Rippl.Local"])
    assert "rippl.local" in extra


def test_a_remote_bind_needs_the_flag_then_reviewers_then_host_names() -> None:
    with pytest.raises(AuthConfigError, match="--allow-remote"):
        check_bind("192.168.1.5", allow_remote=False, reviewers=REVIEWERS)
    with pytest.raises(AuthConfigError, match="without reviewer authentication"):
        check_bind("192.168.1.5", allow_remote=True, reviewers=Reviewers())
    allowed = check_bind("192.168.1.5", allow_remote=True, reviewers=REVIEWERS)
    assert allowed == LOOPBACK_NAMES | {"192.168.1.5"}
    with pytest.raises(AuthConfigError, match="--allowed-host"):
        check_bind("0.0.0.0", allow_remote=True, reviewers=REVIEWERS)
    wildcard = check_bind("0.0.0.0", allow_remote=True, reviewers=REVIEWERS,
                          extra_hosts=["review.example.com"])
    assert wildcard == LOOPBACK_NAMES | {"review.example.com"}
    assert "0.0.0.0" not in wildcard


def test_proposers_load_apart_from_reviewers_and_never_hold_a_key() -> None:
    from rippl_core.console.auth import AuthConfigError, load_proposers, load_reviewers

    reviewers = load_reviewers(None, "alice: alice-token-0123456789abcdef")
    proposers = load_proposers(None, "scanner: scanner-token-0123456789abcdef", reviewers)
    assert list(proposers.names) == ["scanner"]
    with pytest.raises(AuthConfigError, match="a proposer has no reviewer key"):
        load_proposers(None, "scanner: scanner-token-0123456789abcdef ed25519:" + "ab" * 32,
                       reviewers)
    with pytest.raises(AuthConfigError, match="alice is both a reviewer and a proposer"):
        load_proposers(None, "alice: other-token-0123456789abcdefgh", reviewers)


SCANNER = "scanner-token-0123456789"
PROPOSERS = parse_reviewers([f"scanner: {SCANNER}"], where="proposers")


def test_a_proposers_token_proposes_as_a_monitor() -> None:
    for reviewers in (REVIEWERS, Reviewers()):
        decision = authorize_propose(reviewers, PROPOSERS, None, SCANNER, None)
        assert (decision.allowed, decision.who, decision.proposer) == (True, "scanner", True)


def test_a_reviewer_proposes_as_any_change_is_made() -> None:
    by_session = authorize_propose(REVIEWERS, PROPOSERS, SESSION, None, "csrf-token")
    assert (by_session.allowed, by_session.who, by_session.proposer) == (True, "alice", False)
    assert authorize_propose(REVIEWERS, PROPOSERS, SESSION, None, "wrong").status == 403
    by_token = authorize_propose(REVIEWERS, Reviewers(), None, ALICE, None)
    assert (by_token.allowed, by_token.who, by_token.proposer) == (True, "alice", False)
    unknown = authorize_propose(REVIEWERS, PROPOSERS, None, "wrong-token-xxxxxxxx", None)
    assert (unknown.allowed, unknown.status, unknown.reason) == (False, 401, "unknown reviewer token")


def test_with_proposers_only_a_proposers_token_proposes() -> None:
    none = authorize_propose(Reviewers(), PROPOSERS, SESSION, None, "csrf-token")
    assert (none.allowed, none.status) == (False, 401) and "send a proposer's token" in none.reason
    wrong = authorize_propose(Reviewers(), PROPOSERS, None, ALICE, None)
    assert (wrong.allowed, wrong.status, wrong.reason) == (False, 401, "unknown proposer token")
    nobody = authorize_propose(Reviewers(), Reviewers(), None, SCANNER, None)
    assert (nobody.allowed, nobody.status) == (False, 403) and "no reviewers" in nobody.reason


def test_a_reviewer_key_must_be_written_as_rippl_keys_prints_it() -> None:
    key = "ab" * 32
    assert parse_reviewers([f"alice: {ALICE} ed25519:{key}"], where="f").keys == {"alice": key}
    for bad in ("ed25519:" + "AB" * 32, "ed25519:" + "ab" * 31, "ed25519:xyz"):
        with pytest.raises(AuthConfigError, match=r"entry 1 \(alice\): after the token, a reviewer key"):
            parse_reviewers([f"alice: {ALICE} {bad}"], where="f")
