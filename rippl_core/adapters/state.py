"""Framework state (e.g. LangGraph checkpoints) in a companion graph of the tenant's graph."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rippl_core._runtime import schema as _schema
from rippl_core._runtime.connection import wait_stopped
from rippl_core._runtime.driver import AsyncDriver, SyncDriver, translated_errors
from rippl_core._runtime.keys import Companion, Keys
from rippl_core._runtime.op import Op
from rippl_core._runtime.schema import Schema
from rippl_core.client import AsyncRippl, Rippl


class _Companion[H: (Rippl, AsyncRippl)]:
    """What both twins keep: the tenant's handle, the graph's schema, and its keys."""

    handle: H
    schema: Schema
    keys: Keys
    graph: str

    def __init__(self, handle: H, schema: Schema, companion: Companion) -> None:
        self.handle, self.schema = handle, schema
        self.keys = handle.keys.of(companion)
        self.graph = self.keys.graph


class StateGraph(_Companion[Rippl]):
    """Framework state (e.g. LangGraph checkpoints) in a companion graph of the handle's tenant:
    its keys are the tenant's (same slot of a cluster, deleted by `drop()` of the tenant), but its
    own version counter, so its writes never contend with the causal graph's. Operations are
    generators of `Query`/`Commit`, like the core's; `run` drives them."""

    def __init__(self, handle: Rippl, schema: Schema, *, companion: Companion) -> None:
        super().__init__(handle, schema, companion)
        self._driver = SyncDriver(handle.redis, self.keys, handle.location)

    def setup(self) -> None:
        """Create the graph's indexes (idempotent; cheap once done)."""
        self._driver.run(lambda: _schema.ensure(self.schema, self.keys))

    def run[R](self, make: Callable[[], Op[R]], *, write: bool = False) -> R:
        return self._driver.run(make, write=write)

    def drop(self) -> None:
        """Delete the graph and its keys."""
        with translated_errors(self.handle.location):
            self.handle.redis.delete(self.keys.graph, self.keys.schema, self.keys.version)


class AsyncStateGraph(_Companion[AsyncRippl]):
    """The asyncio twin of `StateGraph`."""

    def __init__(self, handle: AsyncRippl, schema: Schema, *, companion: Companion) -> None:
        super().__init__(handle, schema, companion)
        self._driver = AsyncDriver(handle.redis, self.keys, handle.location)

    async def setup(self) -> None:
        """Create the graph's indexes (idempotent; cheap once done)."""
        await self._driver.run(lambda: _schema.ensure(self.schema, self.keys))

    async def run[R](self, make: Callable[[], Op[R]], *, write: bool = False) -> R:
        return await self._driver.run(make, write=write)

    async def drop(self) -> None:
        """Delete the graph and its keys."""
        with translated_errors(self.handle.location):
            await self.handle.redis.delete(self.keys.graph, self.keys.schema, self.keys.version)


@contextmanager
def throwaway_database(prefix: str = "rippl-memory-") -> Iterator[Path]:
    """The path of an embedded database file in a new temporary folder (a framework's ":memory:"
    store), the folder deleted on exit once the database's server has stopped: the last handle's
    `close()` waits for that; a handle left to the garbage collector does not, so this does."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    db = folder / "rippl.db"
    try:
        yield db
    finally:
        wait_stopped(db)
        shutil.rmtree(folder, ignore_errors=True)
