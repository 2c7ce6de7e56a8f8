"""The console's tests share one `browser`: headless Debian chromium (see
tests/helpers_browser.py), one per test module; a test that takes it is skipped, saying why,
where Playwright or chromium is missing. A browser test module that defines its `graph` gets
`console_url`: that graph served by `rippl serve` with no reviewers (reads open on loopback),
unless it serves its own. The API's tests share `rippl`: the incident graph on the test server, a
graph of its own for each test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from helpers_browser import launched, unavailable
from helpers_console import INCIDENT, serving

from rippl_core import AsyncRippl, Rippl
from rippl_core.testing import FalkorDBServer


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    why = unavailable()
    if why is not None:
        pytest.skip(why)
    with launched() as chromium:
        yield chromium


@pytest_asyncio.fixture(loop_scope="session")
async def rippl(falkordb_server: FalkorDBServer) -> AsyncIterator[AsyncRippl]:
    handle = await AsyncRippl.open(url=falkordb_server.url, graph=f"console-{uuid.uuid4().hex[:8]}")
    await handle.load(INCIDENT)
    yield handle
    await handle.drop()
    await handle.close()


@pytest.fixture(scope="module")
def console_url(falkordb_server: FalkorDBServer, graph: Rippl,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`rippl --url URL --graph G serve --port P`: no reviewers, reads open on loopback."""
    folder = tmp_path_factory.mktemp("console")
    with serving(falkordb_server.url, graph.graph, folder / "server.log") as url:
        yield url
