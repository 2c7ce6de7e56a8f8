"""I/O at the edge: run operation generators against FalkorDB, synchronously or with asyncio.

Reads go out as GRAPH.RO_QUERY. A write operation runs under WATCH of the graph's version key; its
reads see one consistent graph and its `Commit` goes out in MULTI/EXEC together with the version
bump and its events, so concurrent writers never interleave: the loser re-runs from the start.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis
import redis.asyncio

from rippl_core import queries
from rippl_core.engine import Commit, Op
from rippl_core.errors import ConflictError, DatabaseError, UnavailableError
from rippl_core.wire import Query, parse

MAX_ATTEMPTS = 64
SCHEMA_VERSION = "3"  # 2: bitemporal belief indexes, 3: BELIEVES.head


def version_key(graph: str) -> str:
    return f"rippl:{graph}:version"


def graph_keys(graph: str) -> str:
    """The pattern of the plain keys Rippl keeps beside a graph (version, schema marker...)."""
    escaped = "".join(f"\\{c}" if c in "\\*?[]" else c for c in graph)
    return f"rippl:{escaped}:*"


def events_channel(graph: str) -> str:
    """The pub/sub channel carrying the graph's status-change events."""
    return f"rippl:{graph}:events"


def _args(graph: str, query: Query) -> tuple[str, ...]:
    return ("GRAPH.RO_QUERY" if query.read_only else "GRAPH.QUERY", graph, query.command(),
            "--compact")


@contextmanager
def translated_errors(where: str) -> Iterator[None]:
    """Turn redis exceptions into Rippl's typed errors."""
    try:
        yield
    except redis.WatchError:
        raise
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        raise UnavailableError(
            f"cannot reach {where}: {exc}. Is the server running? Check the url/path "
            "(RIPPL_FALKORDB_URL / RIPPL_DB)."
        ) from exc
    except redis.ResponseError as exc:
        if "unique constraint" in str(exc):
            raise ConflictError(f"a node with this id already exists ({exc})") from exc
        raise DatabaseError(f"FalkorDB refused the query: {exc}") from exc


def _backoff(attempt: int) -> float:
    return random.uniform(0, 0.002 * min(attempt, 10))


def _step(gen: Op[Any], value: Any) -> tuple[bool, Any]:
    try:
        return False, gen.send(value)
    except StopIteration as stop:
        return True, stop.value


class SyncDriver:
    """Runs operations with a blocking redis client."""

    def __init__(self, client: redis.Redis, graph: str, where: str) -> None:
        self.client, self.graph, self.where = client, graph, where

    def query(self, query: Query) -> list[tuple[Any, ...]]:
        """One read, isolated from any commit in flight.

        FalkorDB runs the statements of a MULTI/EXEC one at a time and lets read-only queries from
        other connections in between; a read sent inside MULTI/EXEC runs after a whole commit or
        before it, never in the middle. It costs no extra round trip."""
        with translated_errors(self.where), self.client.pipeline(transaction=True) as pipe:
            pipe.execute_command(*_args(self.graph, query))
            return parse(pipe.execute()[0])

    def run[T](self, make: Callable[[], Op[T]], *, write: bool = False) -> T:
        if not write:
            return self._drive(make(), self.query, None)
        for attempt in range(MAX_ATTEMPTS):
            with translated_errors(self.where), self.client.pipeline() as pipe:
                try:
                    pipe.watch(version_key(self.graph))
                    read = lambda q: parse(pipe.execute_command(*_args(self.graph, q)))  # noqa: E731
                    return self._drive(make(), read, pipe)
                except redis.WatchError:
                    time.sleep(_backoff(attempt))
        raise ConflictError("too many concurrent writers kept changing the graph; try again")

    def _drive[T](self, gen: Op[T], read: Callable[[Query], Any], pipe: Any) -> T:
        done, request = _step(gen, None)
        while not done:
            if isinstance(request, Commit):
                done, request = _step(gen, self._commit(pipe, request))
                read = self.query  # the transaction is over: later reads go straight to the server
            else:
                done, request = _step(gen, read(request))
        return request

    def _commit(self, pipe: Any, commit: Commit) -> list[Any]:
        _queue(pipe, self.graph, commit)
        return _replies(pipe.execute(), commit)

    def ensure_schema(self) -> None:
        marker = f"rippl:{self.graph}:schema"
        with translated_errors(self.where):
            if self.client.get(marker) == SCHEMA_VERSION:
                return
            existing = self._indexes()
            for label, prop in _index_specs():
                if (label, prop) not in existing:
                    self._create_index(label, prop)
            for label in queries.ID_LABELS:
                _create_constraint(lambda *a: self.client.execute_command(*a), self.graph, label)
            self.client.set(marker, SCHEMA_VERSION)

    def _create_index(self, label: str, prop: str) -> None:
        try:
            self.query(queries.create_index(label, prop))
        except DatabaseError as exc:
            if "already indexed" not in str(exc):  # another process created it meanwhile
                raise

    def _indexes(self) -> set[tuple[str, str]]:
        try:
            rows = self.query(queries.LIST_INDEXES)
        except DatabaseError as exc:
            if "empty key" in str(exc):  # a new graph: created by its first index
                return set()
            raise
        return {(row[0], prop) for row in rows for prop in row[1]}


class AsyncDriver:
    """Runs the same operations with an asyncio redis client."""

    def __init__(self, client: redis.asyncio.Redis, graph: str, where: str) -> None:
        self.client, self.graph, self.where = client, graph, where

    async def query(self, query: Query) -> list[tuple[Any, ...]]:
        """One read, isolated from any commit in flight (see `SyncDriver.query`)."""
        with translated_errors(self.where):
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.execute_command(*_args(self.graph, query))
                return parse((await pipe.execute())[0])

    async def run[T](self, make: Callable[[], Op[T]], *, write: bool = False) -> T:
        if not write:
            return await self._drive(make(), self.query, None)
        for attempt in range(MAX_ATTEMPTS):
            with translated_errors(self.where):
                async with self.client.pipeline() as pipe:
                    try:
                        await pipe.watch(version_key(self.graph))

                        async def read(q: Query, pipe: Any = pipe) -> Any:
                            return parse(await pipe.execute_command(*_args(self.graph, q)))

                        return await self._drive(make(), read, pipe)
                    except redis.WatchError:
                        await asyncio.sleep(_backoff(attempt))
        raise ConflictError("too many concurrent writers kept changing the graph; try again")

    async def _drive[T](self, gen: Op[T], read: Callable[[Query], Any], pipe: Any) -> T:
        done, request = _step(gen, None)
        while not done:
            if isinstance(request, Commit):
                done, request = _step(gen, await self._commit(pipe, request))
                read = self.query  # the transaction is over: later reads go straight to the server
            else:
                done, request = _step(gen, await read(request))
        return request

    async def _commit(self, pipe: Any, commit: Commit) -> list[Any]:
        _queue(pipe, self.graph, commit)
        return _replies(await pipe.execute(), commit)


def _queue(pipe: Any, graph: str, commit: Commit) -> None:
    """Queue a commit on a watched pipeline (queueing is synchronous for both clients): its
    queries, the version bump that fails concurrent writers, and its events."""
    pipe.multi()
    for query in commit.queries:
        pipe.execute_command(*_args(graph, query))
    pipe.incr(version_key(graph))
    if commit.events:  # one message per commit: a JSON array of its events, in order
        pipe.publish(events_channel(graph), json.dumps(commit.events))


def _replies(replies: list[Any], commit: Commit) -> list[Any]:
    return [parse(r) for r in replies[: len(commit.queries)]]


def _index_specs() -> list[tuple[str, str]]:
    return [(label, "id") for label in queries.ID_LABELS] + list(queries.EXTRA_INDEXES)


def _create_constraint(execute: Callable[..., Any], graph: str, label: str) -> None:
    try:
        execute("GRAPH.CONSTRAINT", "CREATE", graph, "UNIQUE", "NODE", label, "PROPERTIES", 1, "id")
    except redis.ResponseError as exc:
        if "already exists" not in str(exc):
            raise
