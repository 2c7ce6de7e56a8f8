"""CrewAI's storage folder is the test session's own (the root conftest's crewai_storage).

CrewAI warns of its own deprecations as a crew runs: every test here leaves them out."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.filterwarnings("ignore::DeprecationWarning"))
