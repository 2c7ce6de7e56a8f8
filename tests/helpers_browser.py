"""The console's browser tests share one way to drive a browser: headless Debian chromium
(/usr/bin/chromium, never a downloaded browser) through Playwright's sync API, launched by the
`browser` fixture of tests/console/conftest.py (one per test module: Playwright's sync API marks
its own event loop running between calls, so it must not outlive the module's synchronous tests),
and pages that record every console error and uncaught exception."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
COLOURS = {"IN": (0x2B, 0x8A, 0x3E), "AT_RISK": (0xE6, 0x77, 0x00), "OUT": (0xC9, 0x2A, 0x2A)}
# Screenshots go to a temporary folder, or to docs/img/ (which the README shows) when
# RIPPL_SCREENSHOTS=docs/img is set: a test run leaves the tree as it was.
IMG = Path(os.environ.get("RIPPL_SCREENSHOTS") or tempfile.mkdtemp(prefix="rippl-shots-"))
if not IMG.is_absolute():
    IMG = REPO / IMG
LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


def unavailable() -> str | None:
    """Why no browser can be launched here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (it is in the test dependency group)"
    if not CHROMIUM.exists() and shutil.which("chromium") is None:
        return "Debian's chromium is not installed (apt-get install -y chromium)"
    return None


@contextlib.contextmanager
def launched() -> Iterator[Any]:
    """Headless chromium, closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def offline(context: Any) -> Any:
    """Refuse every request the context makes beyond loopback (a page of an identity provider
    may link fonts from the Internet; the tests run offline)."""
    context.route("**/*", lambda route: route.continue_() if urlsplit(route.request.url).hostname
                  in LOOPBACK else route.abort())
    return context


class Page:
    """A browser page of its own context that records every console error and uncaught
    exception, with the explorer's helpers (the colour a node is drawn in, the counts)."""

    def __init__(self, browser: Any, url: str, *, width: int = 1440, height: int = 900,
                 live: bool = True, loopback_only: bool = False) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": height})
        if loopback_only:
            offline(self.context)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url)
        if live:
            self.page.wait_for_selector("#live.on")

    def pixel(self, node: str) -> tuple[int, int, int] | None:
        """The colour the explorer's canvas shows inside a node's box (off its label)."""
        rgba = self.page.evaluate("""(id) => {
            const at = window.rippl.explorer.nodeAt(id);
            if (!at) return null;
            const canvas = document.querySelector('#graph'), dpr = window.devicePixelRatio || 1;
            return Array.from(canvas.getContext('2d').getImageData(
                Math.round(at.fillX * dpr), Math.round(at.fillY * dpr), 1, 1).data); }""", node)
        return None if rgba is None else (rgba[0], rgba[1], rgba[2])

    def wait_colour(self, node: str, state: str) -> None:
        """Wait until the node's state changed and the canvas draws it in its status colour."""
        self.page.wait_for_function("""([id, state]) => window.rippl.explorer.stateOf(id) === state""",
                                    arg=[node, state], timeout=15_000)
        self.page.wait_for_timeout(50)
        assert close_to(self.pixel(node), COLOURS[state]), (node, state, self.pixel(node))

    def count(self, state: str) -> int:
        return int(self.page.inner_text(f"#count-{state}"))

    def wait_count(self, state: str, value: int) -> None:
        self.page.wait_for_function(
            "([s, v]) => document.querySelector('#count-' + s).textContent === String(v)",
            arg=[state, value], timeout=15_000)

    def sign_in(self, token: str, who: str) -> None:
        """Sign in with a reviewer token through the dialog."""
        self.page.click("#sign-in")
        self.page.fill("#token", token)
        self.page.click("#sign-in-form button[type=submit]")
        self.page.wait_for_selector(f"#who:has-text('reviewer: {who}')")


def close_to(actual: tuple[int, int, int] | None, expected: tuple[int, int, int]) -> bool:
    return actual is not None and all(abs(a - e) <= 40 for a, e in zip(actual, expected, strict=True))
