"""Fixtures of the capture tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rippl_core._runtime import driver
from rippl_core._runtime.wire import Query
from rippl_core.testing import Clock


@pytest.fixture
def clock() -> Iterator[Clock]:
    """Time frozen at 2026-12-01 10:00 UTC, moved by hand (`clock.advance`)."""
    with Clock("2026-12-01T10:00:00Z") as frozen:
        yield frozen


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The text of every query this process sends to the server, in order."""
    texts: list[str] = []
    args = driver._args

    def spy(graph: str, query: Query) -> tuple[str, ...]:
        texts.append(query.text)
        return args(graph, query)

    monkeypatch.setattr(driver, "_args", spy)
    yield texts
