"""Signing in to the console with a real OpenID provider, in a real browser: headless Debian
chromium (Playwright) against `rippl serve --oidc-issuer ...` on a loopback port, a real FalkorDB
server, and oidc-provider on loopback (tests/helpers_oidc.py).

A reviewer signs in through the provider's own login and consent pages, loads their key (the
console registers it in the log), and approves a retraction: the receipt names the provider's
subject with the display name, signed with their key. A signed-in reader cannot approve. A
monitor's client credentials token proposes and never approves. CSRF and Origin checks hold.
Signing out ends the session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from helpers_browser import IMG, Page
from helpers_console import incident_graph, serving
from helpers_oidc import OidcProvider

from rippl_core import Rippl
from rippl_core.testing import FalkorDBServer, free_port

APPROVE = """async ([id, csrf]) => {
    const headers = {'Content-Type': 'application/json'};
    if (csrf) headers['X-CSRF-Token'] = csrf;
    const r = await fetch('api/reviews/' + id + '/approve', {method: 'POST', headers,
        body: JSON.stringify({note: 'from the page'})});
    return [r.status, (await r.json()).detail]; }"""


@pytest.fixture(scope="module")
def graph(falkordb_server: FalkorDBServer) -> Iterator[Rippl]:
    with incident_graph(falkordb_server.url, "browser-oidc") as handle:
        yield handle


@pytest.fixture(scope="module")
def console_url(falkordb_server: FalkorDBServer, graph: Rippl, oidc_provider: OidcProvider,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`rippl --url URL --graph G serve --port P --oidc-issuer I --oidc-client-id C` with the
    client's secret in RIPPL_OIDC_CLIENT_SECRET, its client registered at the provider."""
    port = free_port()
    client = oidc_provider.register("rippl-console", scope="openid profile email",
                                    redirect_uris=[f"http://127.0.0.1:{port}/api/oidc/callback"])
    folder = tmp_path_factory.mktemp("console-oidc")
    with serving(falkordb_server.url, graph.graph, folder / "server.log", "--oidc-issuer",
                 oidc_provider.issuer, "--oidc-client-id", client.client_id, port=port,
                 env={"RIPPL_OIDC_CLIENT_SECRET": client.client_secret}) as url:
        yield url


def sign_in(browser: Any, url: str, login: str, shown: str) -> Page:
    """A new browser (its own cookies) signed in as `login` through the provider's pages."""
    opened = Page(browser, url + "#queue", loopback_only=True)
    page = opened.page
    page.click("#sign-in")
    page.wait_for_selector("input[name=login]")  # the provider's own login page
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any password")
    page.click("button[type=submit]")
    page.wait_for_selector("button:has-text('Continue')")  # its consent page
    page.click("button:has-text('Continue')")
    page.wait_for_selector(f"#who:has-text('{shown}')", timeout=15_000)
    page.wait_for_selector("#live.on")
    return opened


def test_a_reviewer_signs_in_with_the_provider_and_approves_signed(
        browser: Any, console_url: str, graph: Rippl, oidc_provider: OidcProvider) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from rippl_core.review.keys import public_hex, signature_valid

    item = graph.propose_retraction("CLM-001", reason="SMART errors", by="monitor:disk")
    reviewer = sign_in(browser, console_url, "ana", "reviewer: Ana Lima")
    page = reviewer.page
    session = page.evaluate("window.rippl.session")
    assert (session["reviewer"], session["who"], session["role"]) == ("ana", "ana", "reviewer")
    cookie = next(c for c in reviewer.context.cookies() if c["name"] == "rippl_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and not cookie["secure"]
    assert cookie["expires"] > 0  # a session that ends (not a browser-session cookie)

    # CSRF and Origin still hold for a session from the provider
    refused = page.evaluate(APPROVE, [item.id, None])
    assert refused[0] == 403 and "CSRF" in refused[1]
    reviewer.errors.clear()  # the refused request logs an error; it was ours
    jar = {"rippl_session": cookie["value"]}
    cross = httpx.post(f"{console_url}api/reviews/{item.id}/approve", json={"note": "x"},
                       cookies=jar, timeout=30, headers={"X-CSRF-Token": session["csrf"],
                                                         "Origin": "http://evil.example"})
    assert cross.status_code == 403 and "cross-origin" in cross.text
    assert graph.review(item.id).status == "pending"

    # her own key, loaded in the page, registered in the log, signs her decision
    key = Ed25519PrivateKey.generate()
    page.click("#load-key")
    assert page.is_hidden("#token-field")
    page.fill("#reviewer-key", key.private_bytes_raw().hex())
    page.click("#sign-in-form button[type=submit]")
    page.wait_for_selector("#toast:has-text('Your key signs your decisions')", timeout=15_000)
    assert page.is_hidden("#load-key")
    page.click(f"[data-review='{item.id}']")
    page.wait_for_selector("#decide label:has-text('as Ana Lima (signed with your key)')",
                           timeout=15_000)
    page.fill("#decision-note", "confirmed on the host")
    page.click("#approve")
    page.wait_for_selector("#toast:has-text('names ana, signed with their key')", timeout=15_000)
    IMG.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMG / "console-oidc.png"))
    registration, approval = graph.receipts()[-2:]
    assert (registration.kind, registration.body["reviewer"]) == ("key_registered", "ana")
    assert (approval.kind, approval.actor, approval.review) == ("retraction_approved", "ana", item.id)
    assert approval.body["actor_name"] == "Ana Lima"
    statement = approval.body["statement"]
    assert statement["reviewer"] == "ana"
    assert signature_valid(statement, approval.body["statement_signature"], public_hex(key))
    assert graph.verify_receipts().ok
    page.click("#tab-receipts")
    page.wait_for_selector("#receipts tbody:has-text('Ana Lima (ana)')", timeout=15_000)

    # signing out ends the session: the next change is refused
    page.click("#sign-out")
    page.wait_for_selector("#who:has-text('read-only')")
    after = httpx.post(f"{console_url}api/reviews/{item.id}/reject", json={"note": "x"},
                       cookies=jar, headers={"X-CSRF-Token": session["csrf"]}, timeout=30)
    assert after.status_code == 401
    assert reviewer.errors == []
    graph.reinstate("CLM-001", reason="disk replaced", by="oncall")


def test_a_reader_cannot_approve_and_a_monitor_token_only_proposes(
        browser: Any, console_url: str, graph: Rippl, oidc_provider: OidcProvider) -> None:
    item = graph.propose_retraction("CLM-006", reason="flapping", by="monitor:disk")
    reader = sign_in(browser, console_url, "rui", "reader: Rui Costa")
    page = reader.page
    page.click(f"[data-review='{item.id}']")
    page.wait_for_selector("#decide:has-text('You are signed in as a reader')", timeout=15_000)
    assert page.query_selector("#approve") is None
    refused = page.evaluate(APPROVE, [item.id, page.evaluate("window.rippl.session.csrf")])
    assert refused[0] == 403 and "Rui Costa is signed in as a reader" in refused[1]
    reader.errors.clear()
    assert graph.review(item.id).status == "pending"

    monitor = oidc_provider.register(f"monitor-{uuid.uuid4().hex[:6]}", scope="rippl:propose")
    bearer = {"Authorization": f"Bearer {oidc_provider.client_credentials(monitor, console_url)}"}
    proposed = httpx.post(f"{console_url}api/reviews", json={"claim": "CLM-016", "reason": "alert"},
                          headers=bearer, timeout=30)
    assert proposed.status_code == 201, proposed.text
    assert proposed.json()["monitor"] == monitor.client_id
    page.wait_for_selector(f"[data-review='{proposed.json()['id']}']", timeout=15_000)  # live
    never = httpx.post(f"{console_url}api/reviews/{proposed.json()['id']}/approve",
                       json={"note": "x"}, headers=bearer, timeout=30)
    assert never.status_code == 403 and "never approve" in never.text
    assert graph.review(proposed.json()["id"]).status == "pending"
    assert reader.errors == []
    for review in (item.id, proposed.json()["id"]):
        graph.reject(review, by="oncall")
