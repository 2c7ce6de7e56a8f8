"""End to end in a real browser: headless Debian chromium (driven by Playwright, never a downloaded
browser) against `rippl serve` on a loopback port and a real FalkorDB server.

A reviewer opens the queue and sees a proposal arrive live; an unauthenticated approve is refused;
the reviewer approves, and a second page's explorer recolours with the cascade without a reload;
a rejection restores it; a contradiction shows both claims and their sources. Screenshots go to a
temporary folder, or to docs/img/ (which the README shows) when RIPPL_SCREENSHOTS=docs/img is set:
a test run leaves the tree as it was."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers_browser import IMG, Page
from helpers_capture import vetoed_migrate
from helpers_console import ALICE, INCIDENT, incident_graph, serving

from rippl_core import Rippl, ToolCall
from rippl_core.testing import FalkorDBServer

WAVE = 18


@pytest.fixture(scope="module")
def graph(falkordb_server: FalkorDBServer) -> Iterator[Rippl]:
    with incident_graph(falkordb_server.url, "browser") as handle:
        yield handle


@pytest.fixture(scope="module")
def console_url(falkordb_server: FalkorDBServer, graph: Rippl,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`rippl --url URL --graph G serve --port P --reviewers FILE --distinct-approver`."""
    folder = tmp_path_factory.mktemp("console")
    reviewers = folder / "reviewers"
    reviewers.write_text(f"# who may decide\nalice: {ALICE}\n", encoding="utf-8")
    with serving(falkordb_server.url, graph.graph, folder / "server.log", "--reviewers",
                 str(reviewers), "--distinct-approver") as url:
        yield url


def test_the_review_gate_in_the_browser(browser: Any, console_url: str, graph: Rippl) -> None:
    IMG.mkdir(parents=True, exist_ok=True)
    reviewer = Page(browser, console_url + "#queue")
    watcher = Page(browser, console_url + "#explorer")
    watcher.page.evaluate("window.__sameDocument = true")
    watcher.page.wait_for_function("() => document.querySelector('#count-IN').textContent === '71'")
    watcher.wait_colour("CLM-001", "IN")

    # the reviewer signs in with a token (exchanged for a session cookie)
    reviewer.page.click("#sign-in")
    reviewer.page.fill("#token", ALICE)
    reviewer.page.click("#sign-in-form button[type=submit]")
    reviewer.page.wait_for_selector("#who:has-text('reviewer: alice')")
    assert reviewer.page.is_visible("#sod")  # separation of duties is on, and said so

    # a monitor proposes a retraction: it arrives live in the queue, with its blast radius
    item = graph.propose_retraction("CLM-001", reason="SMART errors on shard 09",
                                    by="monitor:disk-health", evidence="grafana: io errors")
    reviewer.page.wait_for_selector(f"[data-review='{item.id}']", timeout=15_000)
    reviewer.page.wait_for_selector("#preview-out li", timeout=15_000)
    assert reviewer.page.inner_text("#queue-count") == "1"
    out = reviewer.page.inner_text("#preview-out")
    survives = reviewer.page.inner_text("#preview-survives")
    assert "ACT-001" in out and "CLM-001" in out and "DEC-012" not in out
    assert "DEC-012" in survives and "still holds through CLM-006 + CLM-016" in survives
    assert reviewer.page.inner_text("#proposer") == "monitor:disk-health"
    # ... and the amber wave reaches the second page
    watcher.wait_count("AT_RISK", WAVE)
    watcher.wait_colour("CLM-001", "AT_RISK")
    watcher.wait_colour("ACT-001", "AT_RISK")
    reviewer.page.screenshot(path=str(IMG / "console-queue.png"))

    # an unauthenticated approve is refused (the watcher never signed in)
    refused = watcher.page.evaluate("""async (id) => {
        const r = await fetch('api/reviews/' + id + '/approve', {method: 'POST',
            headers: {'Content-Type': 'application/json'}, body: JSON.stringify({note: 'sneaky'})});
        return [r.status, (await r.json()).detail]; }""", item.id)
    assert refused[0] == 401 and "sign in" in refused[1]
    assert [e for e in watcher.errors if "401" in e] == [
        "Failed to load resource: the server responded with a status of 401 (Unauthorized)"]
    watcher.errors.clear()  # that one was ours
    assert graph.review(item.id).status == "pending"

    # the reviewer approves with a reason; the red cascade recolours the other page, no reload
    reviewer.page.fill("#decision-note", "confirmed on the host")
    reviewer.page.click("#approve")
    reviewer.page.wait_for_selector("#toast:has-text('names alice')", timeout=15_000)
    watcher.wait_count("OUT", WAVE)
    watcher.wait_count("AT_RISK", 0)
    watcher.wait_colour("ACT-001", "OUT")
    watcher.wait_colour("DEC-012", "IN")  # survives through its other justification
    assert watcher.page.evaluate("window.__sameDocument") is True
    watcher.page.wait_for_timeout(200)
    watcher.page.screenshot(path=str(IMG / "console-explorer.png"))
    receipt = graph.receipts()[-1]
    assert (receipt.actor, receipt.review) == ("alice", item.id)
    assert receipt.body["note"] == "confirmed on the host"

    # receipts: the chain verifies, and names the authenticated reviewer
    reviewer.page.click("#tab-receipts")
    reviewer.page.wait_for_selector("#verify.ok")
    assert "alice" in reviewer.page.inner_text("#receipts tbody")
    reviewer.page.click("#receipts tbody tr")  # the latest receipt: its inclusion proof is shown
    reviewer.page.wait_for_selector("#receipt-proof:has-text('audit path')")
    assert f"leaf {receipt.seq - 1} of {receipt.seq}" in reviewer.page.inner_text("#receipt-proof")

    # a second proposal, rejected: the at-risk region recovers on the other page
    graph.reinstate("CLM-001", reason="disk replaced", by="alice")
    watcher.wait_count("OUT", 0)
    second = graph.propose_retraction("CLM-001", reason="flapping again", by="monitor:disk-health")
    reviewer.page.click("#tab-queue")
    reviewer.page.wait_for_selector(f"[data-review='{second.id}']", timeout=15_000)
    watcher.wait_count("AT_RISK", WAVE)
    watcher.wait_colour("ACT-001", "AT_RISK")
    reviewer.page.wait_for_selector("#decision-note")
    reviewer.page.fill("#decision-note", "a one-off blip")
    reviewer.page.click("#reject")
    watcher.wait_count("AT_RISK", 0)
    watcher.wait_colour("ACT-001", "IN")
    watcher.wait_colour("CLM-001", "IN")
    reviewer.page.wait_for_selector("#queue-empty:not([hidden])")
    assert graph.review(second.id).decided_by == "alice"

    # the explorer's side panel explains a node on click (keyboard: arrows and Enter work too)
    watcher.page.focus("#graph")
    watcher.page.keyboard.press("ArrowDown")
    watcher.page.wait_for_selector("#node-detail h2")
    watcher.page.fill("#find", "DEC-012")
    watcher.page.press("#find", "Enter")
    watcher.page.wait_for_selector("#node-detail h2:has-text('DEC-012')")
    assert "justification 2" in watcher.page.inner_text("#node-detail")

    reviewer.page.click("#tab-beliefs")
    reviewer.page.wait_for_timeout(200)
    assert reviewer.errors == [] and watcher.errors == []


def test_a_reviewer_signs_in_the_browser_with_their_own_key(
        browser: Any, falkordb_server: FalkorDBServer, tmp_path: Path) -> None:
    """The reviewers file names alice's public key: she loads her key file's text in the sign-in
    dialog (it never leaves the page), the console registers it in the log (signed with it, by
    WebCrypto Ed25519), and her approval carries a statement her key signed; an unsigned approval
    in her name is refused."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from rippl_core.review.keys import canonical_statement, public_hex, signature_valid

    handle = Rippl.open(url=falkordb_server.url, graph=f"browser-keys-{uuid.uuid4().hex[:8]}")
    key = Ed25519PrivateKey.generate()
    reviewers = tmp_path / "reviewers"
    reviewers.write_text(f"alice: {ALICE} ed25519:{public_hex(key)}\n", encoding="utf-8")
    try:
        handle.load(INCIDENT)
        item = handle.propose_retraction("CLM-001", reason="SMART errors", by="monitor:disk")
        with serving(falkordb_server.url, handle.graph, tmp_path / "server.log", "--reviewers",
                     str(reviewers)) as url:
            page = Page(browser, url + "#queue")
            assert page.page.evaluate("async () => await (await import('./js/keys.js')).supported()")
            # without the key, deciding in alice's name is refused
            page.page.click("#sign-in")
            page.page.fill("#token", ALICE)
            page.page.click("#sign-in-form button[type=submit]")
            page.page.wait_for_selector("#sign-in-error:has-text('load it')")
            refused = page.page.evaluate("""async ([id, csrf]) => {
                const r = await fetch('api/reviews/' + id + '/approve', {method: 'POST',
                    headers: {'Content-Type': 'application/json', 'X-CSRF-Token': csrf},
                    body: JSON.stringify({note: 'unsigned'})});
                return [r.status, (await r.json()).detail]; }""",
                [item.id, page.page.evaluate("window.rippl.session.csrf")])
            assert refused[0] == 422 and "sign the decision" in refused[1]
            page.errors.clear()  # the refused request logs an error; it was ours
            assert handle.review(item.id).status == "pending"
            # with the key: registered in the log, then the approval is signed in the page
            page.page.fill("#token", ALICE)
            page.page.fill("#reviewer-key", key.private_bytes_raw().hex())
            page.page.click("#sign-in-form button[type=submit]")
            page.page.wait_for_selector("#toast:has-text('with your key')", timeout=15_000)
            page.page.wait_for_selector("#decide label:has-text('signed with your key')")
            assert page.page.inner_text("#who") == "reviewer: alice"
            page.page.fill("#decision-note", "confirmed on the host")
            page.page.click("#approve")
            page.page.wait_for_selector("#toast:has-text('signed with their key')",
                                        timeout=15_000)
            assert page.errors == []
        registration, approval = handle.receipts()[-2:]
        assert registration.kind == "key_registered" and registration.body["reviewer"] == "alice"
        assert registration.body["public_key"] == public_hex(key)
        assert handle.reviewer_keys() == {"alice": public_hex(key)}
        assert (approval.kind, approval.actor, approval.review) == (
            "retraction_approved", "alice", item.id)
        statement = approval.body["statement"]
        assert statement == {"kind": "retraction_approved", "reviewer": "alice", "review": item.id,
                             "claim": "CLM-001", "proposed_by": "monitor:disk",
                             "note": "confirmed on the host"}
        assert approval.body["statement_key"] == public_hex(key)
        assert signature_valid(statement, approval.body["statement_signature"], public_hex(key))
        key.public_key().verify(bytes.fromhex(approval.body["statement_signature"]),
                                canonical_statement(statement))
        check = handle.verify_receipts()
        assert check.ok, check.problems
    finally:
        handle.drop()
        handle.close()


def test_an_override_in_the_queue_is_shown_as_one_call_and_approved_signed(
        browser: Any, falkordb_server: FalkorDBServer, tmp_path: Path) -> None:
    """An agent's one-call override waits in the queue as what it is: the call, its run and the
    retracted premises it would run despite (nothing goes OUT). Its proposer cannot approve it;
    alice approves it with her key, the receipt carries her signed `override_approved` statement,
    and exactly that call runs once."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from rippl_core.review.keys import public_hex, signature_valid

    handle = Rippl.open(url=falkordb_server.url, graph=f"browser-override-{uuid.uuid4().hex[:8]}")
    key = Ed25519PrivateKey.generate()
    reviewers = tmp_path / "reviewers"
    reviewers.write_text(f"alice: {ALICE} ed25519:{public_hex(key)}\n", encoding="utf-8")
    try:
        agent, claim, migrate, veto = vetoed_migrate(handle)
        item = handle.override(veto.target, run="thread-1", reason="checked by hand", by="bob")
        with serving(falkordb_server.url, handle.graph, tmp_path / "server.log", "--reviewers",
                     str(reviewers), "--distinct-approver") as url:
            page = Page(browser, url + "#queue")
            page.page.wait_for_selector(f"[data-review='{item.id}']", timeout=15_000)
            card = page.page.inner_text(f"[data-review='{item.id}']")
            assert 'Override: let migrate({"shard":"09"}) run once' in card and "run thread-1" in card
            page.page.wait_for_selector("#preview-overridden li", timeout=15_000)
            assert claim in page.page.inner_text("#preview-overridden")
            assert page.page.inner_text("#override-call") == 'migrate({"shard":"09"})'
            assert page.page.query_selector("#preview-out") is None  # nothing goes OUT
            page.page.click("#sign-in")
            page.page.fill("#token", ALICE)
            page.page.fill("#reviewer-key", key.private_bytes_raw().hex())
            page.page.click("#sign-in-form button[type=submit]")
            page.page.wait_for_selector("#decide label:has-text('signed with your key')",
                                        timeout=15_000)
            assert page.page.inner_text("#approve") == "Approve override"
            page.page.fill("#decision-note", "shard checked by hand")
            page.page.click("#approve")
            page.page.wait_for_selector("#toast:has-text('signed with their key')", timeout=15_000)
            assert page.errors == []
        approval = handle.receipts()[-1]
        assert (approval.kind, approval.actor, approval.review) == ("override_approved", "alice",
                                                                    item.id)
        statement = approval.body["statement"]
        assert statement == {"kind": "override_approved", "reviewer": "alice", "review": item.id,
                             "claim": claim, "proposed_by": "bob", "note": "shard checked by hand"}
        assert signature_valid(statement, approval.body["statement_signature"], public_hex(key))
        [once] = agent.decide("t3", [migrate.model_copy(update={"id": "c3"})], context=["c2"],
                              told=["c2"])
        [twice] = agent.decide("t4", [migrate.model_copy(update={"id": "c4"})], context=["c2"],
                               told=["c2"])
        assert once.allowed and not twice.allowed
        check = handle.verify_receipts()
        assert check.ok, check.problems
    finally:
        handle.drop()
        handle.close()


def test_a_contradiction_shows_both_sides_in_the_queue(browser: Any, console_url: str,
                                                        graph: Rippl) -> None:
    reviewer = Page(browser, console_url + "#queue")
    reviewer.page.click("#sign-in")
    reviewer.page.fill("#token", ALICE)
    reviewer.page.click("#sign-in-form button[type=submit]")
    reviewer.page.wait_for_selector("#who:has-text('reviewer: alice')")
    graph.add_source("SRC-k-grafana", "Grafana: shard-12 health, 09:00 UTC")
    graph.add_source("SRC-k-pager", "PagerDuty: shard-12 degraded, 09:12 UTC")
    graph.add_claim("CLM-k-healthy", "Shard 12 is healthy", sources=["SRC-k-grafana"],
                    key="shard-12/health", value="healthy")
    graph.add_claim("CLM-k-degraded", "Shard 12 is degraded", sources=["SRC-k-pager"],
                    key="shard-12/health", value="degraded")
    [item] = [r for r in graph.reviews() if r.claim == "CLM-k-healthy"]
    reviewer.page.wait_for_selector(f"[data-review='{item.id}']", timeout=15_000)
    assert "contradicted by CLM-k-degraded" in reviewer.page.inner_text(f"[data-review='{item.id}']")
    reviewer.page.click(f"[data-review='{item.id}']")
    reviewer.page.wait_for_selector("#contradiction", timeout=15_000)
    shown = reviewer.page.inner_text("#contradiction")
    assert "found by the key detector on key shard-12/health" in shown
    assert "Shard 12 is healthy [shard-12/health = healthy]" in shown
    assert "Shard 12 is degraded [shard-12/health = degraded]" in shown
    assert "Grafana: shard-12 health" in shown and "PagerDuty: shard-12 degraded" in shown
    assert reviewer.page.inner_text("#proposer") == "rippl:key-detector"
    assert reviewer.errors == []
    graph.reject(item.id, by="alice")


def test_the_explorer_draws_nodes_created_while_it_is_open(browser: Any, console_url: str,
                                                            graph: Rippl) -> None:
    """Created nodes are announced (`node_created`, a captured turn, an execution's result): the
    open explorer draws them without being reloaded by hand."""
    watcher = Page(browser, console_url + "#explorer")
    page = watcher.page
    page.wait_for_function("() => window.rippl.explorer.stateOf('CLM-001') !== null")
    page.evaluate("window.__marker = 'the same page'")
    graph.add_claim("CLM-live", "created while the explorer was open", sources=["SRC-001"])
    watcher.wait_colour("CLM-live", "IN")
    health = ToolCall(name="get_shard_health", args={"shard": "12"}, id="live-1")
    run = graph.run("explorer-live", agent="ops")
    run.decide("t1", [health])
    decision = graph.run_trace("explorer-live").turns[0].decision
    page.wait_for_function("(id) => window.rippl.explorer.stateOf(id) !== null", arg=decision,
                           timeout=15_000)
    result = run.executed(health, "healthy")
    assert result is not None
    page.wait_for_function("(id) => window.rippl.explorer.stateOf(id) === 'IN'", arg=result,
                           timeout=15_000)
    assert page.evaluate("window.__marker") == "the same page"  # redrawn live, never reloaded
    assert watcher.errors == []
    watcher.context.close()
