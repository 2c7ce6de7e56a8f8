"""I/O at the edge: run operation generators against FalkorDB, synchronously or with asyncio.

Reads go out as GRAPH.RO_QUERY. A write operation runs under WATCH of the graph's version key; its
reads see one consistent graph and its `Commit` goes out in MULTI/EXEC together with the version
bump and its events, so concurrent writers never interleave: the loser re-runs from the start.
Database errors become Rippl's typed errors and are raised inside the operation, at the request
that failed (see `rippl_core._runtime.op`).
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

from rippl_core._runtime.keys import events_channel, version_key
from rippl_core._runtime.op import Batch, Command, Commit, Op
from rippl_core._runtime.wire import Query, parse
from rippl_core.errors import ConflictError, DatabaseError, RipplError, UnavailableError

MAX_ATTEMPTS = 64


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


class _Step:
    """One operation's progress: send it replies, or raise an error inside it at its request."""

    def __init__(self, gen: Op[Any]) -> None:
        self.gen, self.done, self.value = gen, False, None
        self.send(None)

    def send(self, reply: Any) -> None:
        try:
            self.value = self.gen.send(reply)
        except StopIteration as stop:
            self.done, self.value = True, stop.value

    def throw(self, exc: RipplError) -> None:
        try:
            self.value = self.gen.throw(exc)
        except StopIteration as stop:
            self.done, self.value = True, stop.value


class SyncDriver:
    """Runs operations with a blocking redis client."""

    def __init__(self, client: redis.Redis, graph: str, where: str) -> None:
        self.client, self.graph, self.where = client, graph, where

    def query(self, query: Query | Batch) -> Any:
        """One read (or a batch of reads), isolated from any commit in flight.

        FalkorDB runs the statements of a MULTI/EXEC one at a time and lets read-only queries from
        other connections in between; a read sent inside MULTI/EXEC runs after a whole commit or
        before it, never in the middle. It costs no extra round trip."""
        queries = query.queries if isinstance(query, Batch) else (query,)
        with translated_errors(self.where):
            replies = [parse(r) for r in self._transact(
                [_args(self.graph, q) for q in queries], retry=True)]
        return replies if isinstance(query, Batch) else replies[0]

    def blind(self, commit: Commit) -> list[Any]:
        """A blind commit, in one round trip (see `Commit`)."""
        with translated_errors(self.where):
            replies = self._transact(_commit_commands(self.graph, commit), retry=False)
        return [parse(r) for r in replies[: len(commit.queries)]]

    def _transact(self, commands: list[tuple[Any, ...]], *, retry: bool) -> list[Any]:
        """The results of `commands` run in one MULTI/EXEC, sent on a pooled connection directly
        (the client's pipeline object costs more CPU than a read); with `retry` (reads, which
        are idempotent) sent once more on a fresh connection if the connection drops."""
        packed = _isolated(commands)
        pool = self.client.connection_pool
        for attempt in range(2 if retry else 1):
            conn = pool.get_connection()
            try:
                conn.send_packed_command(conn.pack_commands(packed))
                replies = [conn.read_response() for _ in packed]
            except (redis.ConnectionError, redis.TimeoutError):
                conn.disconnect()
                if retry and not attempt:
                    continue
                raise
            except BaseException:
                conn.disconnect()  # whatever was left unread goes with the connection
                raise
            finally:
                pool.release(conn)
            return _results(replies[-1])
        raise AssertionError("unreachable")

    def command(self, command: Command) -> Any:
        with translated_errors(self.where):
            return self.client.execute_command(*command.args)

    def run[T](self, make: Callable[[], Op[T]], *, write: bool = False) -> T:
        if not write:
            return self._drive(make(), self.query, self.command, None)
        for attempt in range(MAX_ATTEMPTS):
            with translated_errors(self.where), self.client.pipeline() as pipe:
                try:
                    pipe.watch(version_key(self.graph))
                    read = lambda q: _each(q, lambda one: parse(  # noqa: E731
                        pipe.execute_command(*_args(self.graph, one))))
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
            try:
                with translated_errors(self.where):
                    if isinstance(request, Commit) and pipe is None:
                        reply = self.blind(_blind(request))
                    elif isinstance(request, Commit):
                        reply = self._commit(pipe, request)
                        read, command = self.query, self.command  # the transaction is over
                    elif isinstance(request, Command):
                        reply = command(request)
                    else:
                        reply = read(request)
            except RipplError as exc:
                step.throw(exc)
                continue
            step.send(reply)
        return step.value  # type: ignore[return-value]

    def _commit(self, pipe: Any, commit: Commit) -> list[Any]:
        _queue(pipe, self.graph, commit)
        return _replies(pipe.execute(), commit)


class AsyncDriver:
    """Runs the same operations with an asyncio redis client."""

    def __init__(self, client: redis.asyncio.Redis, graph: str, where: str) -> None:
        self.client, self.graph, self.where = client, graph, where

    async def query(self, query: Query | Batch) -> Any:
        """One read (or a batch of reads), isolated from any commit in flight (see
        `SyncDriver.query`)."""
        queries = query.queries if isinstance(query, Batch) else (query,)
        with translated_errors(self.where):
            replies = [parse(r) for r in await self._transact(
                [_args(self.graph, q) for q in queries], retry=True)]
        return replies if isinstance(query, Batch) else replies[0]

    async def blind(self, commit: Commit) -> list[Any]:
        """A blind commit, in one round trip (see `Commit`)."""
        with translated_errors(self.where):
            replies = await self._transact(_commit_commands(self.graph, commit), retry=False)
        return [parse(r) for r in replies[: len(commit.queries)]]

    async def _transact(self, commands: list[tuple[Any, ...]], *, retry: bool) -> list[Any]:
        """The asyncio twin of `SyncDriver._transact`."""
        packed = _isolated(commands)
        pool = self.client.connection_pool
        for attempt in range(2 if retry else 1):
            conn = await pool.get_connection()
            try:
                await conn.send_packed_command(conn.pack_commands(packed))
                replies = [await conn.read_response() for _ in packed]
            except (redis.ConnectionError, redis.TimeoutError):
                await conn.disconnect()
                if retry and not attempt:
                    continue
                raise
            except BaseException:
                await conn.disconnect()  # whatever was left unread goes with the connection
                raise
            finally:
                await pool.release(conn)
            return _results(replies[-1])
        raise AssertionError("unreachable")

    async def command(self, command: Command) -> Any:
        with translated_errors(self.where):
            return await self.client.execute_command(*command.args)

    async def run[T](self, make: Callable[[], Op[T]], *, write: bool = False) -> T:
        if not write:
            return await self._drive(make(), self.query, self.command, None)
        for attempt in range(MAX_ATTEMPTS):
            with translated_errors(self.where):
                async with self.client.pipeline() as pipe:
                    try:
                        await pipe.watch(version_key(self.graph))

                        async def read(q: Query | Batch, pipe: Any = pipe) -> Any:
                            replies = [parse(await pipe.execute_command(*_args(self.graph, one)))
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
            try:
                with translated_errors(self.where):
                    if isinstance(request, Commit) and pipe is None:
                        reply = await self.blind(_blind(request))
                    elif isinstance(request, Commit):
                        reply = await self._commit(pipe, request)
                        read, command = self.query, self.command  # the transaction is over
                    elif isinstance(request, Command):
                        reply = await command(request)
                    else:
                        reply = await read(request)
            except RipplError as exc:
                step.throw(exc)
                continue
            step.send(reply)
        return step.value  # type: ignore[return-value]

    async def _commit(self, pipe: Any, commit: Commit) -> list[Any]:
        _queue(pipe, self.graph, commit)
        return _replies(await pipe.execute(), commit)


def _isolated(commands: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Commands wrapped in MULTI/EXEC (see `SyncDriver.query` and `Commit`)."""
    return [("MULTI",), *commands, ("EXEC",)]


def _results(executed: Any) -> list[Any]:
    """The results of an EXEC, raising the first error among them."""
    if not isinstance(executed, list):
        raise redis.ResponseError(f"the transaction was not executed: {executed!r}")
    for result in executed:
        if isinstance(result, Exception):
            raise result
    return executed


def _commit_commands(graph: str, commit: Commit) -> list[tuple[Any, ...]]:
    """A commit's queries, the version bump that fails concurrent writers, and its events."""
    commands: list[tuple[Any, ...]] = [_args(graph, q) for q in commit.queries]
    commands.append(("INCR", version_key(graph)))
    if commit.events:  # one message per commit: a JSON array of its events, in order
        commands.append(("PUBLISH", events_channel(graph), json.dumps(commit.events)))
    return commands


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


def _queue(pipe: Any, graph: str, commit: Commit) -> None:
    """Queue a commit on a watched pipeline (queueing is synchronous for both clients): its
    queries, the version bump that fails concurrent writers, and its events."""
    pipe.multi()
    for command in _commit_commands(graph, commit):
        pipe.execute_command(*command)


def _replies(replies: list[Any], commit: Commit) -> list[Any]:
    return [parse(r) for r in replies[: len(commit.queries)]]
