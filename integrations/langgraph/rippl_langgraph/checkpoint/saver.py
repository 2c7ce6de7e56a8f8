"""`FalkorDBSaver` and `AsyncFalkorDBSaver`: LangGraph checkpointers storing checkpoints in FalkorDB.

Both run the same generator operations (`ops.CheckpointOps`) through the core drivers, so the sync
and async savers share one implementation. Checkpoints live in the tenant's companion graph
"checkpoints" (among the tenant's keys: the same shard of a cluster, deleted with the tenant by
`Rippl.drop()`), with its own version key, so checkpoint writes never contend with causal writes.

Checkpoints are chained and every read verifies what it returns (`rippl_core.adapters.checkpoints`):
a checkpoint edited, replaced, replayed or deleted outside Rippl is refused with
`CheckpointIntegrityError`, so a graph never resumes from a state nobody wrote. Options shared by
both savers: `signing_key` (Ed25519, the service's or a reviewer's) signs what the saver writes;
`trusted_keys` makes every read require a signature by one of them; `anchor` (a `HeadAnchor`, e.g.
`FileAnchor(path)`) keeps each thread's newest head outside the database, which catches a store
restored from an older copy; `accept_unchained` serves checkpoints written before the chain (sealed
by the migration; refused by default).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Collection, Coroutine, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from types import TracebackType
from typing import Any, Final, Self

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from rippl_core import AsyncRippl, InvalidInputError, Rippl, SigningKey
from rippl_core.adapters import (
    AsyncStateGraph,
    ChainPolicy,
    ChainReport,
    HeadAnchor,
    StateGraph,
    acheckpoint_heads_digest,
    averify_checkpoints,
    checkpoint_heads_digest,
    from_ms,
    throwaway_database,
    verify_checkpoints,
)
from rippl_core.adapters import checkpoints as chain
from rippl_langgraph.checkpoint.ops import PAGE, CheckpointOps, configurable
from rippl_langgraph.checkpoint.queries import SCHEMA

# The checkpoints live in the tenant's companion graph "checkpoints": among the keys Rippl keeps
# for the tenant (its slot of a cluster), so `Rippl.drop()` deletes them with the rest.
COMPANION: Final = "checkpoints"


@contextmanager
def connection_options(conn_string: str) -> Iterator[dict[str, Any]]:
    """The `Rippl.open` options a connection string stands for: a FalkorDB server URL
    (`falkordb://host:6379`, `rediss://...`, `unix://...`), the path of an embedded database file,
    or `":memory:"` for an embedded database in a temporary folder, deleted on exit."""
    if not isinstance(conn_string, str) or not conn_string:
        raise InvalidInputError("give a FalkorDB URL (falkordb://host:6379), the path of a database "
                                "file, or \":memory:\" for a throwaway one")
    if conn_string != ":memory:":
        yield {"url": conn_string} if "://" in conn_string else {"path": conn_string}
        return
    with throwaway_database() as db:  # deleted once its server stopped, not while it writes
        yield {"path": db}


def _next_version(current: str | int | float | None) -> str:
    """Monotonic string versions, as langgraph's own savers use: `{n:032}.{random:016}`."""
    import random

    if current is None:
        number = 0
    elif isinstance(current, int | float):
        number = int(current)
    else:
        number = int(str(current).split(".")[0])
    return f"{number + 1:032}.{random.random():016}"


def _limit(limit: int | None) -> int | None:
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        raise InvalidInputError("limit must be an integer or None")
    return limit


class _ChainedSaver(BaseCheckpointSaver[str]):
    """What both savers set up alike: the serializer, the chain policy that signs and verifies
    checkpoints, and the cache of verified digests."""

    policy: ChainPolicy

    def __init__(self, *, serde: SerializerProtocol | None, signing_key: SigningKey | None,
                 trusted_keys: Collection[str | Ed25519PublicKey] | None,
                 anchor: HeadAnchor | None, accept_unchained: bool) -> None:
        super().__init__(serde=serde)
        self.policy = ChainPolicy.of(signing_key=signing_key, trusted_keys=trusted_keys,
                                     anchor=anchor, accept_unchained=accept_unchained)
        self._cache = chain.DigestCache()


class FalkorDBSaver(_ChainedSaver):
    """A synchronous LangGraph checkpointer on FalkorDB (embedded by default, or a server).

    Give it an open `Rippl` handle (it shares its connection and tenant) or the same connection
    options as `Rippl.open` (`path=`, `url=`, `graph=`), in which case it owns the handle and
    closes it in `close()`:

        with FalkorDBSaver(graph="ops") as saver:
            app = builder.compile(checkpointer=saver)

    The async methods run the sync ones in a worker thread; for asyncio code prefer
    `AsyncFalkorDBSaver`.
    """

    graph: str

    def __init__(self, memory: Rippl | None = None, *, path: str | os.PathLike[str] | None = None,
                 url: str | None = None, graph: str = "rippl",
                 serde: SerializerProtocol | None = None, signing_key: SigningKey | None = None,
                 trusted_keys: Collection[str | Ed25519PublicKey] | None = None,
                 anchor: HeadAnchor | None = None, accept_unchained: bool = False) -> None:
        super().__init__(serde=serde, signing_key=signing_key, trusted_keys=trusted_keys,
                         anchor=anchor, accept_unchained=accept_unchained)
        if memory is not None and (path is not None or url is not None):
            raise InvalidInputError("give either a Rippl handle or path/url, not both")
        if memory is not None and not isinstance(memory, Rippl):
            raise InvalidInputError(
                f"FalkorDBSaver needs a Rippl handle, got {type(memory).__name__}; "
                "use AsyncFalkorDBSaver with an AsyncRippl handle")
        self._owned = memory is None
        self.memory: Rippl = memory if memory is not None else Rippl.open(path, url=url, graph=graph)
        try:
            self._store = StateGraph(self.memory, SCHEMA, companion=COMPANION)
            self.graph = self._store.graph
            self.setup()
        except BaseException:
            self.close()
            raise

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, *, graph: str = "rippl",
                         serde: SerializerProtocol | None = None,
                         signing_key: SigningKey | None = None,
                         trusted_keys: Collection[str | Ed25519PublicKey] | None = None,
                         anchor: HeadAnchor | None = None,
                         accept_unchained: bool = False) -> Iterator[FalkorDBSaver]:
        """A saver on its own connection, closed on exit, as with langgraph's SQLite and Postgres
        savers. `conn_string` is a FalkorDB URL, a database file path, or ":memory:":

            with FalkorDBSaver.from_conn_string("falkordb://localhost:6379") as saver:
                saver.setup()  # idempotent; the saver also sets itself up when it opens
                app = builder.compile(checkpointer=saver)
        """
        with connection_options(conn_string) as options, cls(
                **options, graph=graph, serde=serde, signing_key=signing_key,
                trusted_keys=trusted_keys, anchor=anchor,
                accept_unchained=accept_unchained) as saver:
            yield saver

    # -- lifecycle --------------------------------------------------------------------------
    def setup(self) -> None:
        """Create the indexes of the checkpoint graph (idempotent)."""
        self._store.setup()

    def close(self) -> None:
        """Close the handle if this saver opened it."""
        if self._owned and getattr(self, "memory", None) is not None:
            self.memory.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def drop(self) -> None:
        """Delete every checkpoint of every thread (the whole checkpoint graph)."""
        self._store.drop()
        self._cache.clear()

    @property
    def _ops(self) -> CheckpointOps:
        return CheckpointOps(self.serde, self.policy, self._cache)

    def verify(self, thread_id: str | None = None, *,
               expected_heads_digest: str | None = None) -> ChainReport:
        """Check every checkpoint of the store (or of one thread), with this saver's trusted keys
        and anchor: every problem found, and the checkpoints written before the chain."""
        return verify_checkpoints(self.memory, thread_id=thread_id,
                                  trusted_keys=self.policy.trusted_keys, anchor=self.policy.anchor,
                                  expected_heads_digest=expected_heads_digest)

    def heads_digest(self) -> str:
        """The digest of every thread's head (`checkpoint_heads_digest`): what the receipt log's
        anchored tree head covers."""
        return checkpoint_heads_digest(self.memory)

    # -- BaseCheckpointSaver ----------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._store.run(lambda: self._ops.get_tuple(config))

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        pages = _Pages(config, filter, before, limit)
        while (read := pages.next_read(self._ops)) is not None:
            yield from pages.take(self._store.run(read))

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        # a blind commit (upserts computed by the queries): one round trip, no WATCH
        return self._store.run(lambda: self._ops.put(config, checkpoint, metadata, new_versions))

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        self._store.run(lambda: self._ops.put_writes(config, writes, task_id, task_path), write=True)

    def delete_thread(self, thread_id: str) -> None:
        self._store.run(lambda: self._ops.delete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._store.run(lambda: self._ops.delete_for_runs(run_ids), write=True)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._store.run(lambda: self._ops.copy_thread(source_thread_id, target_thread_id),
                         write=True)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only each namespace's newest checkpoint of these threads (`"keep_latest"`, with
        what a DeltaChannel needs to rebuild it), or delete them (`"delete"`)."""
        self._store.run(lambda: self._ops.prune(thread_ids, strategy), write=True)

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        return _next_version(current)

    def checkpoint_time(self, config: RunnableConfig) -> datetime | None:
        """When the checkpoint named by `config` was taken (the latest of the thread if the config
        names none); None if there is no such checkpoint."""
        return from_ms(self._store.run(lambda: self._ops.taken_at(config)))

    # -- async: the sync methods in a worker thread ------------------------------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        items = self.list(config, filter=filter, before=before, limit=limit)
        while (item := await asyncio.to_thread(next, items, None)) is not None:
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)


def _list_args(config: RunnableConfig | None, before: RunnableConfig | None) -> dict[str, Any]:
    args: dict[str, Any] = {"thread_id": None, "checkpoint_ns": None, "checkpoint_id": None,
                            "before": get_checkpoint_id(before) if before else None}
    if config is not None:
        conf = configurable(config)
        args["thread_id"] = str(conf["thread_id"])
        ns = conf.get("checkpoint_ns")
        args["checkpoint_ns"] = None if ns is None else str(ns)
        args["checkpoint_id"] = get_checkpoint_id(config)
    return args


def _page_size(remaining: int | None, filter: dict[str, Any] | None) -> int:
    if remaining is None or filter:
        return PAGE
    return max(1, min(remaining, PAGE))


class _Pages:
    """The paging of `list` and `alist`, shared: which page to read next, and which of its
    checkpoints to yield under `limit`."""

    def __init__(self, config: RunnableConfig | None, filter: dict[str, Any] | None,
                 before: RunnableConfig | None, limit: int | None) -> None:
        self.remaining = _limit(limit)
        self.args = _list_args(config, before)
        self.filter = filter
        self.cursor: Any = None
        self.done = False

    def next_read(self, ops: CheckpointOps) -> Callable[[], Any] | None:
        """The read of the next page, or None when the listing is complete."""
        if self.done or (self.remaining is not None and self.remaining <= 0):
            return None
        cursor, size = self.cursor, _page_size(self.remaining, self.filter)
        return lambda: ops.page(**self.args, cursor=cursor, filter=self.filter, limit=size)

    def take(self, page: Any) -> list[CheckpointTuple]:
        """The checkpoints of a page that are still wanted; remembers where to go on."""
        found = list(page.tuples)
        if self.remaining is not None:
            found = found[: max(self.remaining, 0)]
            self.remaining -= len(found)
        self.done, self.cursor = not page.full, page.cursor
        return found


class AsyncFalkorDBSaver(_ChainedSaver):
    """The asyncio LangGraph checkpointer on FalkorDB, for `ainvoke`/`astream`.

        async with await AsyncFalkorDBSaver.open(graph="ops") as saver:
            app = builder.compile(checkpointer=saver)
            await app.ainvoke(inputs, {"configurable": {"thread_id": "t1"}})

    or `AsyncFalkorDBSaver(handle)` on an open `AsyncRippl`. Its sync methods (used by
    `invoke`/`get_state`) run the async ones on the saver's event loop and may only be called from
    another thread while that loop runs, as with langgraph's `AsyncSqliteSaver`; for sync code use
    `FalkorDBSaver`.
    """

    graph: str

    def __init__(self, memory: AsyncRippl, *, serde: SerializerProtocol | None = None,
                 signing_key: SigningKey | None = None,
                 trusted_keys: Collection[str | Ed25519PublicKey] | None = None,
                 anchor: HeadAnchor | None = None, accept_unchained: bool = False) -> None:
        super().__init__(serde=serde, signing_key=signing_key, trusted_keys=trusted_keys,
                         anchor=anchor, accept_unchained=accept_unchained)
        if not isinstance(memory, AsyncRippl):
            raise InvalidInputError(
                f"AsyncFalkorDBSaver needs an AsyncRippl handle, got {type(memory).__name__}; "
                "use FalkorDBSaver with a Rippl handle")
        self.memory = memory
        self._owned = False
        self._store = AsyncStateGraph(memory, SCHEMA, companion=COMPANION)
        self.graph = self._store.graph
        self._ready = False
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    @classmethod
    async def open(cls, path: str | os.PathLike[str] | None = None, *, url: str | None = None,
                   graph: str = "rippl", serde: SerializerProtocol | None = None,
                   signing_key: SigningKey | None = None,
                   trusted_keys: Collection[str | Ed25519PublicKey] | None = None,
                   anchor: HeadAnchor | None = None,
                   accept_unchained: bool = False) -> AsyncFalkorDBSaver:
        """Open the graph with the same options as `AsyncRippl.open`; `aclose()` closes it."""
        memory = await AsyncRippl.open(path, url=url, graph=graph)
        try:
            saver = cls(memory, serde=serde, signing_key=signing_key, trusted_keys=trusted_keys,
                        anchor=anchor, accept_unchained=accept_unchained)
            saver._owned = True
            await saver.setup()
        except BaseException:
            await memory.close()
            raise
        return saver

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, conn_string: str, *, graph: str = "rippl",
                               serde: SerializerProtocol | None = None,
                               signing_key: SigningKey | None = None,
                               trusted_keys: Collection[str | Ed25519PublicKey] | None = None,
                               anchor: HeadAnchor | None = None,
                               accept_unchained: bool = False
                               ) -> AsyncIterator[AsyncFalkorDBSaver]:
        """A saver on its own connection, closed on exit, as with langgraph's async SQLite and
        Postgres savers. `conn_string` is a FalkorDB URL, a database file path, or ":memory:":

            async with AsyncFalkorDBSaver.from_conn_string("falkordb://localhost:6379") as saver:
                await saver.setup()  # idempotent; the saver also sets itself up when it opens
                app = builder.compile(checkpointer=saver)
        """
        with connection_options(conn_string) as options:
            saver = await cls.open(options.get("path"), url=options.get("url"), graph=graph,
                                   serde=serde, signing_key=signing_key, trusted_keys=trusted_keys,
                                   anchor=anchor, accept_unchained=accept_unchained)
            async with saver:
                yield saver

    async def setup(self) -> None:
        """Create the indexes of the checkpoint graph (idempotent)."""
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        if self._ready:
            return
        await self._store.setup()
        self._ready = True

    async def aclose(self) -> None:
        if self._owned:
            await self.memory.close()

    async def __aenter__(self) -> Self:
        await self.setup()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def adrop(self) -> None:
        """Delete every checkpoint of every thread (the whole checkpoint graph)."""
        await self._store.drop()
        self._cache.clear()
        self._ready = False

    @property
    def _ops(self) -> CheckpointOps:
        return CheckpointOps(self.serde, self.policy, self._cache)

    async def averify(self, thread_id: str | None = None, *,
                      expected_heads_digest: str | None = None) -> ChainReport:
        """Check every checkpoint of the store (or of one thread); see `FalkorDBSaver.verify`."""
        return await averify_checkpoints(self.memory, thread_id=thread_id,
                                         trusted_keys=self.policy.trusted_keys,
                                         anchor=self.policy.anchor,
                                         expected_heads_digest=expected_heads_digest)

    async def aheads_digest(self) -> str:
        """The digest of every thread's head; see `FalkorDBSaver.heads_digest`."""
        return await acheckpoint_heads_digest(self.memory)

    async def _run[T](self, make: Any, *, write: bool = False) -> T:
        if not self._ready:
            await self.setup()
        return await self._store.run(make, write=write)

    # -- async BaseCheckpointSaver ----------------------------------------------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._run(lambda: self._ops.get_tuple(config))

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        pages = _Pages(config, filter, before, limit)
        while (read := pages.next_read(self._ops)) is not None:
            for found in pages.take(await self._run(read)):
                yield found

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return await self._run(lambda: self._ops.put(config, checkpoint, metadata, new_versions))

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        await self._run(lambda: self._ops.put_writes(config, writes, task_id, task_path),
                        write=True)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._run(lambda: self._ops.delete_thread(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._run(lambda: self._ops.delete_for_runs(run_ids), write=True)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._run(lambda: self._ops.copy_thread(source_thread_id, target_thread_id),
                        write=True)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only each namespace's newest checkpoint of these threads (`"keep_latest"`, with
        what a DeltaChannel needs to rebuild it), or delete them (`"delete"`)."""
        await self._run(lambda: self._ops.prune(thread_ids, strategy), write=True)

    async def acheckpoint_time(self, config: RunnableConfig) -> datetime | None:
        """When the checkpoint named by `config` was taken (the latest if it names none)."""
        return from_ms(await self._run(lambda: self._ops.taken_at(config)))

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        return _next_version(current)

    # -- sync: the async methods on the saver's loop, from another thread --------------------
    def _block[T](self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if self.loop is None or not self.loop.is_running() or running is self.loop:
            coro.close()
            raise asyncio.InvalidStateError(
                "synchronous calls to AsyncFalkorDBSaver must come from another thread while its "
                "event loop runs; from async code use the async interface (await "
                "graph.ainvoke(...)), and for sync code use FalkorDBSaver")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._block(self.aget_tuple(config))

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        async def collect() -> list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before, limit=limit)]
        yield from self._block(collect())

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        return self._block(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        self._block(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._block(self.adelete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._block(self.adelete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._block(self.acopy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._block(self.aprune(thread_ids, strategy=strategy))

    def checkpoint_time(self, config: RunnableConfig) -> datetime | None:
        return self._block(self.acheckpoint_time(config))
