"""The review queue shows a retraction by provenance, in a real browser (headless Debian chromium,
driven by Playwright) against `rippl serve` with a proposer and an alert rules file: Alertmanager's
webhook proposes retracting everything fetch_url returned from one domain; the queue shows one item
covering three sources, its query, the monitor, what goes OUT and what survives; the reviewer
approves it as one wave with one receipt, and the executed calls downstream are listed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from helpers_browser import Page
from helpers_console import ALICE, serving

from rippl_core import Rippl
from rippl_core.testing import Clock, FalkorDBServer
from tests.console.test_monitors import FIRING, RULES, WATCHER
from tests.helpers_provenance import Incident, seed


@pytest.fixture(scope="module")
def graph(falkordb_server: FalkorDBServer) -> Iterator[tuple[Rippl, Incident]]:
    handle = Rippl.open(url=falkordb_server.url, graph=f"browser-prov-{uuid.uuid4().hex[:8]}")
    with Clock("2026-12-01T10:00:00Z") as clock:
        incident = seed(handle, clock)
    yield handle, incident
    handle.drop()
    handle.close()


@pytest.fixture(scope="module")
def console_url(falkordb_server: FalkorDBServer, graph: tuple[Rippl, Incident],
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("console-prov")
    (folder / "reviewers").write_text(f"alice: {ALICE}\n", encoding="utf-8")
    (folder / "proposers").write_text(f"alertmanager: {WATCHER}\n", encoding="utf-8")
    (folder / "rules.yaml").write_text(RULES, encoding="utf-8")
    with serving(falkordb_server.url, graph[0].graph, folder / "server.log",
                 "--reviewers", str(folder / "reviewers"), "--proposers", str(folder / "proposers"),
                 "--alert-rules", str(folder / "rules.yaml")) as url:
        yield url


def test_the_queue_shows_a_retraction_by_provenance(browser: Any, console_url: str,
                                                    graph: tuple[Rippl, Incident]) -> None:
    rippl, incident = graph
    url = console_url
    opened = Page(browser, url + "#queue")
    page, errors = opened.page, opened.errors
    page.click("#sign-in")
    page.fill("#token", ALICE)
    page.click("#sign-in-form button[type=submit]")
    page.wait_for_selector("#who:has-text('reviewer: alice')")

    # Alertmanager fires: the proposal arrives live in the queue
    answer = httpx.post(url + "api/alertmanager", json=FIRING,
                        headers={"Authorization": f"Bearer {WATCHER}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    review = answer.json()["outcomes"][0]["review"]
    page.wait_for_selector(f"[data-review='{review}']", timeout=15_000)
    card = page.inner_text(f"[data-review='{review}']")
    assert "Retract 3 sources (tool=fetch_url, source_prefix=https://evil.example/)" in card
    assert "(monitor alertmanager)" in card
    page.wait_for_selector("#preview-out li", timeout=15_000)
    assert page.inner_text("#monitor") == "alertmanager"
    assert page.inner_text("#covers") == "3 sources supporting 3 claims"
    out = page.inner_text("#preview-out")
    item = rippl.review(review)
    assert all(s in out for s in item.claims)
    assert all(c in out for c in incident.evil_claims.values())
    assert all(a in out for a in incident.executed + incident.pending)
    assert "Survives through another source (0)" in page.inner_text("#review-detail")

    # one approval, one wave, one receipt
    before = len(rippl.receipts())
    page.fill("#decision-note", "the injection is confirmed")
    page.click("#approve")
    page.wait_for_selector("#toast:has-text('names alice')", timeout=15_000)
    receipts = rippl.receipts()
    assert len(receipts) == before + 1
    assert receipts[-1].body["sources"] == item.claims and receipts[-1].actor == "alice"
    assert sorted(c.action for c in rippl.compensations()) == sorted(incident.executed)
    page.wait_for_selector("#queue-empty:not([hidden])")
    assert errors == []
    opened.context.close()
