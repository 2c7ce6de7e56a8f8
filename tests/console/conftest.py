"""The console's browser tests share one `browser`: headless Debian chromium (see
tests/helpers_browser.py), one per test module; a test that takes it is skipped, saying why,
where Playwright or chromium is missing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers_browser import launched, unavailable


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    why = unavailable()
    if why is not None:
        pytest.skip(why)
    with launched() as chromium:
        yield chromium
