"""I/O at the edge: run operation generators against FalkorDB, synchronously or with asyncio.

Reads go out as GRAPH.RO_QUERY, each in a MULTI/EXEC with ROLE: a read answered by a server that
is not a primary (a demoted primary after a failover, a replica named by mistake) fails instead of
returning possibly stale data (an embedded database's reads skip the ROLE: its server serves that
file alone and has no replica to be). A write operation runs under WATCH of the graph's version key; its
reads see one consistent graph and its `Commit` goes out in MULTI/EXEC together with the version
bump and its events, so concurrent writers never interleave: the loser re-runs from the start.
Then, on the same connection, WAIT holds the acknowledgement until `location.replicas` replicas
have the commit (so a failover cannot lose an acknowledged write); fewer in time raises
`ReplicationError`. Database errors become Rippl's typed errors and are raised inside the
operation, at the request that failed (see `rippl_core._runtime.op`); an unreachable database also
drops the idle connections, so the next ones ask Sentinel or the cluster where the primary is now.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis
import redis.asyncio

from rippl_core._runtime.connection import Location
from rippl_core._runtime.keys import Keys
from rippl_core._runtime.op import Batch, Command, Commit, GraphName, Op, Pause
from rippl_core._runtime.wire import Query, parse
from rippl_core.errors import (
    ConflictError,
    DatabaseError,
    ReplicationError,
    RipplError,
    UnavailableError,
)

MAX_ATTEMPTS = 64
# The server answered, but it no longer serves this graph as its primary: demoted to a replica
# (READONLY, or ROLE), a cluster slot that moved (MOVED, ASK) or is not served (CLUSTERDOWN...).
_NOT_PRIMARY = (redis.exceptions.ReadOnlyError, redis.exceptions.AskError,
                redis.exceptions.TryAgainError, redis.exceptions.ClusterDownError)


class NotPrimaryError(redis.ConnectionError):
    """A read was answered by a server whose ROLE is not master."""


def _args(graph: str, query: Query) -> tuple[str, ...]:
    command = ("GRAPH.RO_QUERY" if query.read_only else "GRAPH.QUERY", graph, query.command())
    return command if query.plain else (*command, "--compact")


@contextmanager
def translated_errors(location: Location) -> Iterator[None]:
    """Turn redis exceptions into Rippl's typed errors."""
    try:
        yield
    except (redis.WatchError, RipplError):
        raise
    except (redis.ConnectionError, redis.TimeoutError, OSError, *_NOT_PRIMARY) as exc:
        reason = f"cannot reach {location.describe()}: {str(exc).rstrip('.')}"
        raise UnavailableError(f"{reason}. {location.hint}",
                               cli=f"{reason}. {location.cli_hint}") from exc
    except redis.ResponseError as exc:
        if "unique constraint" in str(exc):
            raise ConflictError(f"a node with this id already exists ({exc})") from exc
        raise DatabaseError(f"FalkorDB refused the query: {exc}") from exc


def _asks_role(location: Location) -> bool:
    """Whether reads must ask the server's ROLE: not for an embedded database, whose server Rippl
    started for this file alone (no replica serves it, no failover can demote it)."""
    return location.topology != "embedded"


def _primary_reads(replies: list[Any], location: Location) -> list[Any]:
    """The rows of each read sent before ROLE, if a primary answered them."""
    if not _asks_role(location):
        return [parse(r) for r in replies]
    *rows, role = replies
    if role[0] != "master":
        raise NotPrimaryError(f"the server answering for {location.describe()} is a {role[0]}, "
                              "not the primary (a failover may have demoted it)")
    return [parse(r) for r in rows]


def _acknowledge(acked: int | None, location: Location) -> None:
    wanted = location.replicas or 0
    if acked is not None and acked < wanted:
        raise ReplicationError(
            f"the write was applied on the primary of {location.describe()}, but only {acked} of "
            f"{wanted} replica(s) confirmed it within {location.replica_timeout_ms} ms, so it is "
            "not acknowledged: a failover now could lose it. Check the replicas (INFO "
            "replication); a retry may find the write already applied.")


class _WaitingPipeline(redis.client.Pipeline):
    """A transaction pipeline that, right after EXEC and on the same connection, WAITs for the
    replicas (WAIT counts the writes of its own connection, so it must be this one)."""

    replicas, timeout_ms, acked = 0, 0, None

    def _execute_transaction(self, connection: Any, commands: Any, raise_on_error: bool) -> Any:
        replies = super()._execute_transaction(connection, commands, raise_on_error)
        if self.replicas:
            connection.send_command("WAIT", self.replicas, self.timeout_ms)
            self.acked = int(connection.read_response())
        return replies


class _AsyncWaitingPipeline(redis.asyncio.client.Pipeline):
    """The asyncio twin of `_WaitingPipeline`."""

    replicas, timeout_ms, acked = 0, 0, None

    async def _execute_transaction(self, connection: Any, commands: Any,
                                   raise_on_error: bool) -> Any:
        replies = await super()._execute_transaction(connection, commands, raise_on_error)
        if self.replicas:
            await connection.send_command("WAIT", self.replicas, self.timeout_ms)
            self.acked = int(await connection.read_response())
        return replies


def _waiting[P: (_WaitingPipeline, _AsyncWaitingPipeline)](kind: type[P], client: Any,
                                                             location: Location) -> P:
    pipe = kind(client.connection_pool, client.response_callbacks, True, None)
    pipe.replicas, pipe.timeout_ms = location.replicas or 0, location.replica_timeout_ms
    return pipe


def _backoff(attempt: int) -> float:
    return random.uniform(0, 0.002 * min(attempt, 10))


class _Step[T]:
    """One operation's progress: send it replies, or raise an error inside it at its request.
    `value` is what it asks for next; once `done`, `result` is what it returned."""

    result: T

    def __init__(self, gen: Op[T]) -> None:
        self.gen, self.done = gen, False
        self.value: Any = None
        self.send(None)

    def send(self, reply: Any) -> None:
        try:
            self.value = self.gen.send(reply)
        except StopIteration as stop:
            self.done, self.result = True, stop.value

    def throw(self, exc: RipplError) -> None:
        try:
            self.value = self.gen.throw(exc)
        except StopIteration as stop:
            self.done, self.result = True, stop.value


class SyncDriver:
    """Runs operations with a blocking redis client, on the graph whose keys are `keys`."""

    client: redis.Redis
    keys: Keys
    location: Location

    def __init__(self, client: redis.Redis, keys: Keys, location: Location) -> None:
        self.client, self.keys, self.location = client, keys, location

    def query(self, query: Query | Batch) -> Any:
        """One read (or a batch of reads), isolated from any commit in flight, answered by the
        primary.

        FalkorDB runs the statements of a MULTI/EXEC one at a time and lets read-only queries from
        other connections in between; a read sent inside MULTI/EXEC runs after a whole commit or
        before it, never in the middle. It costs no extra round trip (nor does the ROLE)."""
        queries = query.queries if isinstance(query, Batch) else (query,)
        with translated_errors(self.location), self.client.pipeline(transaction=True) as pipe:
            for q in queries:
                pipe.execute_command(*_args(self.keys.graph, q))
            if _asks_role(self.location):
                pipe.execute_command("ROLE")
            replies = _primary_reads(pipe.execute(), self.location)
        return replies if isinstance(query, Batch) else replies[0]

    def blind(self, commit: Commit) -> list[Any]:
        """A blind commit, in one round trip (see `Commit`)."""
        with translated_errors(self.location), \
                _waiting(_WaitingPipeline, self.client, self.location) as pipe:
            return self._commit(pipe, commit)

    def command(self, command: Command) -> Any:
        with translated_errors(self.location):
            return self.client.execute_command(*command.args)

    def run[T](self, make: Callable[[], Op[T]], *, write: bool = False) -> T:
        try:
            return self._run(make, write)
        except UnavailableError:  # the next connections ask again where the primary is
            self.client.connection_pool.disconnect(inuse_connections=False)
            raise

    def _run[T](self, make: Callable[[], Op[T]], write: bool) -> T:
        if not write:
            return self._drive(make(), self.query, self.command, None)
        for attempt in range(MAX_ATTEMPTS):
            with translated_errors(self.location), \
                    _waiting(_WaitingPipeline, self.client, self.location) as pipe:
                try:
                    pipe.watch(self.keys.version)
                    read = lambda q: _each(q, lambda one: parse(  # noqa: E731
                        pipe.execute_command(*_args(self.keys.graph, one))))
                    run = lambda c: pipe.execute_command(*c.args)  # noqa: E731
                    return self._drive(make(), read, run, pipe)
                except redis.WatchError:
                    time.sleep(_backoff(attempt))
        raise ConflictError("too many concurrent writers kept changing the graph; try again")

    def _drive[T](self, gen: Op[T], read: Callable[[Query], Any],
                  command: Callable[[Command], Any], pipe: Any) -> T:
        step = _Step(gen)
        while not step.done:
            request = step.value
            reply: Any
            try:
                with translated_errors(self.location):
                    if isinstance(request, Commit) and pipe is None:
                        reply = self.blind(_blind(request))
                    elif isinstance(request, Commit):
                        reply = self._commit(pipe, request)
                        read, command = self.query, self.command  # the transaction is over
                    elif isinstance(request, Command):
                        reply = command(request)
                    elif isinstance(request, GraphName):
                        reply = self.keys.name
                    elif isinstance(request, Pause):
                        time.sleep(request.seconds)
                        reply = None
                    else:
                        reply = read(request)
            except RipplError as exc:
                step.throw(exc)
                continue
            step.send(reply)
        return step.result

    def _commit(self, pipe: Any, commit: Commit) -> list[Any]:
        _queue(pipe, self.keys, commit)
        replies = pipe.execute()
        _acknowledge(pipe.acked, self.location)
        return _replies(replies, commit)


class AsyncDriver:
    """Runs the same operations with an asyncio redis client."""

    client: redis.asyncio.Redis
    keys: Keys
    location: Location

    def __init__(self, client: redis.asyncio.Redis, keys: Keys, location: Location) -> None:
        self.client, self.keys, self.location = client, keys, location

    async def query(self, query: Query | Batch) -> Any:
        """One read (or a batch of reads), isolated from any commit in flight, answered by the
        primary (see `SyncDriver.query`)."""
        queries = query.queries if isinstance(query, Batch) else (query,)
        with translated_errors(self.location):
            async with self.client.pipeline(transaction=True) as pipe:
                for q in queries:
                    pipe.execute_command(*_args(self.keys.graph, q))
                if _asks_role(self.location):
                    pipe.execute_command("ROLE")
                replies = _primary_reads(await pipe.execute(), self.location)
        return replies if isinstance(query, Batch) else replies[0]

    async def blind(self, commit: Commit) -> list[Any]:
        """A blind commit, in one round trip (see `Commit`)."""
        with translated_errors(self.location):
            async with _waiting(_AsyncWaitingPipeline, self.client, self.location) as pipe:
                return await self._commit(pipe, commit)

    async def command(self, command: Command) -> Any:
        with translated_errors(self.location):
            return await self.client.execute_command(*command.args)

    async def run[T](self, make: Callable[[], Op[T]], *, write: bool = False) -> T:
        try:
            return await self._run(make, write)
        except UnavailableError:  # the next connections ask again where the primary is
            await self.client.connection_pool.disconnect(inuse_connections=False)
            raise

    async def _run[T](self, make: Callable[[], Op[T]], write: bool) -> T:
        if not write:
            return await self._drive(make(), self.query, self.command, None)
        for attempt in range(MAX_ATTEMPTS):
            with translated_errors(self.location):
                async with _waiting(_AsyncWaitingPipeline, self.client, self.location) as pipe:
                    try:
                        await pipe.watch(self.keys.version)

                        async def read(q: Query | Batch, pipe: Any = pipe) -> Any:
                            replies = [parse(await pipe.execute_command(*_args(self.keys.graph, one)))
                                       for one in (q.queries if isinstance(q, Batch) else (q,))]
                            return replies if isinstance(q, Batch) else replies[0]

                        async def run(c: Command, pipe: Any = pipe) -> Any:
                            return await pipe.execute_command(*c.args)

                        return await self._drive(make(), read, run, pipe)
                    except redis.WatchError:
                        await asyncio.sleep(_backoff(attempt))
        raise ConflictError("too many concurrent writers kept changing the graph; try again")

    async def _drive[T](self, gen: Op[T], read: Callable[[Query], Awaitable[Any]],
                        command: Callable[[Command], Awaitable[Any]], pipe: Any) -> T:
        step = _Step(gen)
        while not step.done:
            request = step.value
            reply: Any
            try:
                with translated_errors(self.location):
                    if isinstance(request, Commit) and pipe is None:
                        reply = await self.blind(_blind(request))
                    elif isinstance(request, Commit):
                        reply = await self._commit(pipe, request)
                        read, command = self.query, self.command  # the transaction is over
                    elif isinstance(request, Command):
                        reply = await command(request)
                    elif isinstance(request, GraphName):
                        reply = self.keys.name
                    elif isinstance(request, Pause):
                        await asyncio.sleep(request.seconds)
                        reply = None
                    else:
                        reply = await read(request)
            except RipplError as exc:
                step.throw(exc)
                continue
            step.send(reply)
        return step.result

    async def _commit(self, pipe: Any, commit: Commit) -> list[Any]:
        _queue(pipe, self.keys, commit)
        replies = await pipe.execute()
        _acknowledge(pipe.acked, self.location)
        return _replies(replies, commit)


def _each(request: Query | Batch, run: Callable[[Query], Any]) -> Any:
    """Run a read or each read of a batch (inside a watched transaction, one by one)."""
    if isinstance(request, Batch):
        return [run(q) for q in request.queries]
    return run(request)


def _blind(commit: Commit) -> Commit:
    """A commit sent by a read operation must be blind: nothing was read under WATCH for it."""
    if not commit.blind:
        raise TypeError("a read operation sent a commit that is not blind; run it with write=True")
    return commit


def _queue(pipe: Any, keys: Keys, commit: Commit) -> None:
    """Queue a commit on a watched pipeline (queueing is synchronous for both clients): its
    queries, the version bump that fails concurrent writers, and its events (sharded pub/sub:
    the channel is in the tenant's slot, so a cluster keeps the whole commit on one shard)."""
    pipe.multi()
    for query in commit.queries:
        pipe.execute_command(*_args(keys.graph, query))
    pipe.incr(keys.version)
    if commit.events:  # one message per commit: a JSON array of its events, in order
        pipe.execute_command("SPUBLISH", keys.events, json.dumps(commit.events))


def _replies(replies: list[Any], commit: Commit) -> list[Any]:
    return [parse(r) for r in replies[: len(commit.queries)]]
