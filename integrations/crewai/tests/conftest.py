"""CrewAI keeps task outputs and memory in a per-user folder (~/.local/share/<project>) shared by
every CrewAI version on the machine; a newer version migrates its tables and an older one then
misreads them. The tests (and the example scripts they run) get a folder of their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def crewai_storage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("crewai-data")))
        patch.setenv("CREWAI_STORAGE_DIR", "rippl-tests")
        yield
