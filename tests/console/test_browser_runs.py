"""The Runs tab in a real browser (headless Debian chromium, driven by Playwright) against
`rippl serve` on a loopback port and a real FalkorDB server, read anonymously: a scripted run
(a reading, an executed call on it, the reading retracted, a vetoed call) is listed with its
counts and filters; its page shows its turns in order, what each rested on, its calls with their
verdicts and executions; and it updates live, without a reload, when the script records another
turn."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers_browser import IMG, Page
from helpers_capture import HEALTH, owed_and_vetoed
from helpers_core import loopback_graph

from rippl_core import Rippl, ToolCall
from rippl_core.testing import FalkorDBServer

ROLLBACK = ToolCall(name="rollback_window", args={"shard": "09"}, id="c4")


@pytest.fixture(scope="module")
def graph(falkordb_server: FalkorDBServer) -> Iterator[Rippl]:
    with loopback_graph(falkordb_server.url, "browser-runs") as handle:
        yield handle


def test_the_runs_tab_and_a_run_page_update_live(browser: Any, console_url: str,
                                                 graph: Rippl) -> None:
    claim = owed_and_vetoed(graph, "ops-run", read="healthy (served from replica r3)",
                            announced="window announced", reason="served from a stale cache")
    run = graph.run("ops-run", agent="ops", framework="langgraph")
    graph.run("quiet-run", agent="bot", framework="crewai").decide("t1", [HEALTH])

    viewer = Page(browser, console_url + "#runs")
    page = viewer.page
    page.wait_for_selector("#runs tbody tr[data-run='ops-run']")
    cells = page.locator("#runs tbody tr[data-run='ops-run'] td").all_inner_texts()
    assert cells[0:3] == ["ops-run", "ops", "langgraph"]
    assert cells[5:] == ["3", "3", "1", "1"]  # turns, calls, vetoes, open compensations
    assert page.locator("#runs tbody tr").count() == 2

    # filters: has open compensations, then an agent
    page.check("#runs-open")
    page.wait_for_function("() => document.querySelectorAll('#runs tbody tr').length === 1")
    assert page.locator("#runs tbody tr").get_attribute("data-run") == "ops-run"
    page.uncheck("#runs-open")
    page.fill("#runs-agent", "bot")
    page.wait_for_function("() => document.querySelector('#runs tbody tr')?.dataset.run === 'quiet-run'"
                           " && document.querySelectorAll('#runs tbody tr').length === 1")
    page.fill("#runs-agent", "")
    page.wait_for_selector("#runs tbody tr[data-run='ops-run']")

    # the run's page: turns in order, what they rested on, verdicts and executions
    page.click("#runs tbody tr[data-run='ops-run']")
    page.wait_for_selector("#run-turns > li")
    turns = page.locator("#run-turns > li").evaluate_all("els => els.map(e => e.dataset.turn)")
    assert turns == ["t1", "t2", "t3"]
    t2 = page.locator("#run-turns > li[data-turn='t2']")
    reading = t2.locator(f"li.rested[data-claim='{claim}']")
    assert "Retracted" in reading.inner_text() and "fresh until" in reading.inner_text()
    announce = t2.locator("li.call")
    assert "announce_window" in announce.inner_text() and "executed" in announce.inner_text()
    assert "open compensation" in announce.inner_text() and "window announced" in announce.inner_text()
    migrate = page.locator("#run-turns > li[data-turn='t3'] li.call")
    assert migrate.get_attribute("data-verdict") == "vetoed"
    assert claim in migrate.inner_text() and "not executed" in migrate.inner_text()
    assert migrate.locator(f".named button:has-text('{claim}')").count() == 1  # the trail, clickable

    # live: the script records another turn; the page shows it without a reload
    page.evaluate("window.__sameDocument = true")
    [allowed] = run.decide("t4", [ROLLBACK], context=[])  # rests on the run's instructions only
    assert allowed.allowed
    page.wait_for_selector("#run-turns > li[data-turn='t4']", timeout=15_000)
    page.wait_for_function("() => document.querySelector("
                           "'#runs tbody tr[data-run=\"ops-run\"] td:nth-child(6)').textContent === '4'",
                           timeout=15_000)
    assert page.evaluate("window.__sameDocument") is True
    assert page.locator("#run-turns > li[data-turn='t4'] li.call").get_attribute("data-verdict") == "allowed"
    IMG.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMG / "console-runs.png"))

    # and click through to the explorer, focused on the vetoed call
    migrate.locator("button.link").first.click()
    page.wait_for_function("() => !document.querySelector('#view-explorer').hidden")
    assert viewer.errors == []

    # a run's page has its own address
    linked = Page(browser, console_url + "#runs/ops-run")
    linked.page.wait_for_selector("#run-turns > li[data-turn='t4']")
    assert linked.page.inner_text("#run-detail h2") == "Run ops-run"
    assert linked.errors == []


def test_the_runs_table_shows_every_column_at_1400_pixels(browser: Any, console_url: str,
                                                           graph: Rippl) -> None:
    """Beside a run's page, in a 1,400-pixel window, the table keeps every column in view (long
    run ids and agents wrap), the vetoes and open compensations included."""
    long_id = "mcp:ticket-4711:9f2c4e1a7b3d5e6f0a1b2c3d"
    wide = graph.run(long_id, agent="mcp:claude-desktop/ops-agent", framework="langgraph")
    wide.decide("t1", [HEALTH.model_copy(update={"id": "w1"})])
    viewer = Page(browser, console_url + "#runs/" + long_id, width=1400)
    page = viewer.page
    page.wait_for_selector(f"#runs tbody tr[data-run='{long_id}']")
    page.wait_for_selector("#run-turns > li")
    layout = page.evaluate("""(id) => {
        const pane = document.querySelector('#runs').closest('.pane').getBoundingClientRect();
        const inside = (el) => { const r = el.getBoundingClientRect();
            return r.left >= pane.left && r.right <= pane.right && r.width > 0; };
        const scroller = document.querySelector('#runs').closest('.pane');
        return {overflow: scroller.scrollWidth - scroller.clientWidth,
                headers: [...document.querySelectorAll('#runs thead th')].map(
                    (th) => [th.textContent, inside(th)]),
                cells: [...document.querySelector(`#runs tbody tr[data-run="${id}"]`).cells].map(
                    (td) => [td.textContent, inside(td)])}; }""", long_id)
    assert layout["overflow"] <= 0
    assert [h for h, seen in layout["headers"] if not seen] == []
    assert layout["headers"][-2:] == [["vetoes", True], ["open compensations", True]]
    assert [c for c, seen in layout["cells"] if not seen] == []
    assert layout["cells"][0][0] == long_id  # wrapped, not cut
    assert viewer.errors == []
