"""A large wave on the explorer, in a real browser (headless Debian chromium, driven by
Playwright) against `rippl serve` on a loopback port and a real FalkorDB server.

A claim with 3,000 dependents: the explorer focuses on it (2,500 nodes, zoomed far out) and
draws it at its "dense" level of detail (no labels, one line per pair of pixels); the proposal's
wave is applied in slices of at most 250 events, the scene is redrawn only when states change
(not on every animation frame of the rings), and the node marks take the wave's colours.
Zoomed in, the same page draws labels and curves, and a click on a node selects it. Nothing here
measures time: the benchmark (bench/scripts/bench_console.py) does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers_browser import COLOURS, Page, close_to
from helpers_core import loopback_graph

from rippl_core import Rippl
from rippl_core.testing import FalkorDBServer

DEPENDENTS = 3_000


@pytest.fixture(scope="module")
def graph(falkordb_server: FalkorDBServer) -> Iterator[Rippl]:
    with loopback_graph(falkordb_server.url, "browser-wave") as handle:
        handle.load({"sources": [{"id": "SRC-WIDE", "title": "one dashboard"}],
                     "claims": [{"id": "CLM-WIDE", "text": "the cluster is healthy",
                                 "sources": ["SRC-WIDE"]}],
                     "decisions": [{"id": f"DEC-{i:05d}", "title": f"decision {i}",
                                    "premises": ["CLM-WIDE"]} for i in range(DEPENDENTS)]})
        yield handle


def stats(page: Any) -> dict[str, Any]:
    return dict(page.evaluate("window.rippl.explorer.stats()"))


def on_screen(page: Any, count: int = 3, step: int = 97) -> list[str]:
    """Decisions (every `step`-th) whose mark is on the canvas, away from its edges."""
    return list(page.evaluate("""([count, step]) => {
        const box = document.querySelector('#graph').getBoundingClientRect(), found = [];
        for (let i = 0; i < 3000 && found.length < count; i += step) {
            const id = 'DEC-' + String(i).padStart(5, '0'), at = window.rippl.explorer.nodeAt(id);
            const inside = at && at.fillX > 40 && at.fillY > 60 && at.fillX < box.width - 40;
            if (inside && at.fillY < box.height - 40) found.push(id);
        }
        return found; }""", [count, step]))


def settled(page: Any) -> None:
    """Wait until the wave's rings are gone (the pixels are then the nodes' own)."""
    page.wait_for_function("() => !window.rippl.explorer.stats().animating", timeout=15_000)
    page.wait_for_timeout(100)


def test_a_large_wave_is_drawn_in_level_of_detail_and_applied_in_slices(
        browser: Any, console_url: str, graph: Rippl) -> None:
    watcher = Page(browser, console_url + "#explorer")
    page = watcher.page
    page.wait_for_selector("#graph-scope:has-text('too many to draw')")
    page.fill("#find", "CLM-WIDE")
    page.press("#find", "Enter")
    page.wait_for_selector("#graph-scope:has-text('neighbourhood of CLM-WIDE')")
    watcher.wait_count("IN", 2500)  # the source, the claim and the 2,498 nearest decisions
    # the panel is sent the nearest 60 of the claim's 3,000 dependents, and counts them all
    page.wait_for_selector(f"#node-detail h3:has-text('Rests on it ({DEPENDENTS})')")
    assert f"and {DEPENDENTS - 60} more" in page.inner_text("#node-detail")
    # zoomed to fit 2,500 nodes: the dense level of detail, whole-pixel marks in status colours
    page.wait_for_function("() => window.rippl.explorer.stats().lod === 'dense'")
    before = stats(page)
    assert before["labelsDrawn"] == 0
    assert 0 < before["edgesDrawn"] < 2500  # one line per pair of pixels, not one per edge
    nodes = on_screen(page)
    assert nodes, "no decision on screen"
    for node in nodes:
        assert close_to(watcher.pixel(node), COLOURS["IN"]), (node, watcher.pixel(node))

    slices = before["slices"]
    page.evaluate("""() => { window.__appliedFrames = []; document.addEventListener('rippl:applied',
        (e) => window.__appliedFrames.push(e.detail.changed)); }""")
    graph.propose_retraction("CLM-WIDE", reason="the dashboard was stale", by="monitor")
    watcher.wait_count("AT_RISK", 2499)  # all but the source
    page.wait_for_function("() => window.__appliedFrames.length >= 7")  # 3,002 events, 500 a frame
    settled(page)
    after = stats(page)
    applied = page.evaluate("window.__appliedFrames")
    assert sum(applied) == 2499, applied
    # applied in slices of at most 250 events: 3,002 events take at least 13 tasks
    assert after["slices"] - slices >= 13, (slices, after)
    # the scene is redrawn when states change, the rings alone on the frames between
    assert after["sceneDraws"] - before["sceneDraws"] < after["frames"] - before["frames"], (before, after)
    for node in nodes:
        assert close_to(watcher.pixel(node), COLOURS["AT_RISK"]), (node, watcher.pixel(node))
    assert watcher.count("IN") == 1

    # zoomed in: curves, labels, and a click selects the node under the pointer
    page.focus("#graph")
    for _ in range(16):
        page.keyboard.press("+")
    # (the claim's 2,500 edges still cross the view: more than 600, they are drawn as pixels)
    page.wait_for_function("() => window.rippl.explorer.stats().lod.startsWith('full')")
    page.wait_for_function("() => window.rippl.explorer.stats().labelsDrawn > 0")
    [node] = on_screen(page, 1, 1) or pytest.fail("no decision on screen zoomed in")
    at = page.evaluate("(id) => window.rippl.explorer.nodeAt(id)", node)
    box = page.locator("#graph").bounding_box()
    page.mouse.click(box["x"] + at["x"], box["y"] + at["y"])
    page.wait_for_selector(f"#node-detail h2:has-text('{node}')")
    assert close_to(watcher.pixel(node), COLOURS["AT_RISK"]), (node, watcher.pixel(node))
    assert not watcher.errors, watcher.errors
    watcher.context.close()
