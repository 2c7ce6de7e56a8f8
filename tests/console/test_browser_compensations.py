"""The compensation workflow in a real browser (headless Debian chromium via Playwright, against
`rippl serve` on a loopback port and a real FalkorDB server): a compensation appears live when a
retraction reaches an executed action, an agent's attempt appears live, an anonymous or CSRF-less
resolve is refused, and the signed-in reviewer's resolution writes a receipt that
`rippl receipts verify` accepts."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from helpers_browser import Page
from helpers_console import ALICE, INCIDENT, serving
from helpers_core import loopback_graph

from rippl_core import Rippl
from rippl_core.testing import FalkorDBServer, free_port


@pytest.fixture(scope="module")
def graph(falkordb_server: FalkorDBServer) -> Iterator[Rippl]:
    with loopback_graph(falkordb_server.url, "comp-browser") as handle:
        handle.load(INCIDENT)
        handle.mark_executed("ACT-001")
        yield handle


@pytest.fixture(scope="module")
def console_url(falkordb_server: FalkorDBServer, graph: Rippl,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve(falkordb_server, graph, tmp_path_factory)


def serve(falkordb_server: FalkorDBServer, graph: Rippl, tmp_path_factory: pytest.TempPathFactory,
          *options: str) -> Iterator[str]:
    """`rippl serve` on a free port, stopped afterwards."""
    folder = tmp_path_factory.mktemp("console")
    reviewers = folder / "reviewers"
    reviewers.write_text(f"alice: {ALICE}\n", encoding="utf-8")
    with serving(falkordb_server.url, graph.graph, folder / "server.log", "--reviewers",
                 str(reviewers), *options, env={"RIPPL_NOTIFY_SECRET": "s3cret-for-the-test"}) as url:
        yield url


def open_page(browser: Any, url: str) -> tuple[Any, list[str]]:
    opened = Page(browser, url, width=1280)
    return opened.page, opened.errors


POST_RESOLVE = """async ([action, csrf]) => {
    const headers = {'Content-Type': 'application/json'};
    if (csrf) headers['X-CSRF-Token'] = csrf;
    const r = await fetch('api/compensations/' + action + '/resolve', {method: 'POST', headers,
        body: JSON.stringify({resolution: 'not needed', note: 'sneaky'})});
    return r.status; }"""


def test_resolving_a_compensation_in_the_browser(browser: Any, console_url: str, graph: Rippl,
                                                 falkordb_server: FalkorDBServer) -> None:
    reviewer, errors = open_page(browser, console_url + "#compensations")
    reviewer.click("#sign-in")
    reviewer.fill("#token", ALICE)
    reviewer.click("#sign-in-form button[type=submit]")
    reviewer.wait_for_selector("#who:has-text('reviewer: alice')")
    watcher, watcher_errors = open_page(browser, console_url + "#compensations")
    assert watcher.inner_text("#comp-count") == "0"

    # the retraction reaches the executed action: the compensation arrives live on both pages
    graph.retract("CLM-001", reason="disk errors on shard 09", by="monitor")
    for page in (reviewer, watcher):
        page.wait_for_selector("[data-action='ACT-001']", timeout=15_000)
        page.wait_for_function("() => document.querySelector('#comp-count').textContent === '1'")
    assert "CLM-001" in reviewer.inner_text("[data-action='ACT-001']")
    assert watcher.is_disabled("[data-action='ACT-001'] [data-resolve='compensated']")  # read-only

    # an agent reports an attempt: it appears live, for a person to confirm
    attempt = graph.report_compensation_attempt("ACT-001", what="ran rollback_migration(billing)",
                                                output="12 tables restored", by="ops-agent")
    reviewer.wait_for_selector(f"[data-action='ACT-001'] .attempts:has-text('{attempt.id}')",
                               timeout=15_000)

    # refused: an anonymous resolve, and a signed-in one without the CSRF token
    assert watcher.evaluate(POST_RESOLVE, ["ACT-001", None]) == 401
    assert reviewer.evaluate(POST_RESOLVE, ["ACT-001", None]) == 403
    assert graph.compensations()[0].status == "open"
    watcher_errors.clear()
    errors.clear()  # the two refusals' console lines were ours

    # the reviewer confirms the attempt with a note: a receipt naming alice
    reviewer.fill("#comp-note-ACT-001", "checked the restored tables by hand")
    reviewer.click("[data-action='ACT-001'] [data-resolve='compensated']")
    reviewer.wait_for_selector("#comp-status:has-text('receipt RCP-')", timeout=15_000)
    watcher.wait_for_function("() => document.querySelector('#comp-count').textContent === '0'",
                              timeout=15_000)
    [done] = graph.compensations(include_resolved=True)
    assert done.status == "compensated" and done.resolution is not None
    assert done.resolution.by == "alice" and done.resolution.attempt == attempt.id
    receipt = graph.receipts()[-1]
    assert receipt.kind == "compensation_resolved" and receipt.actor == "alice"
    verified = subprocess.run(
        [sys.executable, "-m", "rippl_core.cli", "--url", falkordb_server.url, "--graph", graph.graph,
         "receipts", "verify"], capture_output=True, text=True, timeout=120, check=False)
    assert verified.returncode == 0 and "chain intact" in verified.stdout, verified.stdout + verified.stderr

    # resolved ones show on request, with who resolved them
    reviewer.check("#comp-resolved")
    reviewer.wait_for_selector("[data-action='ACT-001']:has-text('compensated by alice')")
    assert errors == [] and watcher_errors == []


def test_a_failing_webhook_shows_in_the_console(browser: Any, falkordb_server: FalkorDBServer,
                                                tmp_path_factory: pytest.TempPathFactory) -> None:
    """Nothing listens at the webhook's port: the page header says deliveries are failing."""
    with Rippl.open(url=falkordb_server.url, graph=f"notify-browser-{uuid.uuid4().hex[:8]}") as graph:
        graph.load(INCIDENT)
        dead = f"http://127.0.0.1:{free_port()}/hook"
        servers = serve(falkordb_server, graph, tmp_path_factory, "--notify", dead,
                        "--notify-events", "review_proposed")
        try:
            url = next(servers)
            page, errors = open_page(browser, url + "#queue")
            assert page.is_hidden("#notify") or "0 delivered" in page.inner_text("#notify")
            graph.propose_retraction("CLM-001", reason="disk errors", by="monitor")
            page.wait_for_selector(f"#notify.bad:has-text('webhook {dead} failing')", timeout=20_000)
            assert "refused" in page.inner_text("#notify").lower()
            assert errors == []
        finally:
            servers.close()
            graph.drop()
