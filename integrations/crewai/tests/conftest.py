"""CrewAI keeps task outputs and memory in a per-user folder (~/.local/share/<project>) shared by
every CrewAI version on the machine; a newer version migrates its tables and an older one then
misreads them. The tests (and the example scripts they run) get a folder of their own.

CrewAI warns of its own deprecations as a crew runs: every test here leaves them out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(scope="session", autouse=True)
def crewai_storage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("crewai-data")))
        patch.setenv("CREWAI_STORAGE_DIR", "rippl-tests")
        yield


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.filterwarnings("ignore::DeprecationWarning"))
