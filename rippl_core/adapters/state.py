"""Framework state (e.g. LangGraph checkpoints) in a companion graph of the tenant's graph."""

from __future__ import annotations

from collections.abc import Callable

from rippl_core._runtime import schema as _schema
from rippl_core._runtime.driver import AsyncDriver, SyncDriver, translated_errors
from rippl_core._runtime.keys import companion_graph, schema_key, version_key
from rippl_core._runtime.op import Op
from rippl_core._runtime.schema import Schema
from rippl_core._runtime.validation import check_id
from rippl_core.adapters.handles import Handle
from rippl_core.client import AsyncRippl, Rippl


def _state_graph_name(handle: Handle, name: str | None, default: str) -> str:
    return check_id(name if name is not None else companion_graph(handle.graph, default),
                    what="graph name")


class StateGraph:
    """Framework state (e.g. LangGraph checkpoints) in a companion graph of the handle's tenant,
    on the same server: its writes never contend with the causal graph's. Operations are
    generators of `Query`/`Commit`, like the core's; `run` drives them."""

    def __init__(self, handle: Rippl, schema: Schema, *, suffix: str, name: str | None = None) -> None:
        self.handle, self.schema = handle, schema
        self.graph = _state_graph_name(handle, name, suffix)
        self._driver = SyncDriver(handle.redis, self.graph, handle.location.describe())

    def setup(self) -> None:
        """Create the graph's indexes (idempotent; cheap once done)."""
        self._driver.run(lambda: _schema.ensure(self.schema, self.graph))

    def run[R](self, make: Callable[[], Op[R]], *, write: bool = False) -> R:
        return self._driver.run(make, write=write)

    def drop(self) -> None:
        """Delete the graph and its keys."""
        with translated_errors(self.handle.location.describe()):
            self.handle.redis.delete(self.graph, schema_key(self.graph), version_key(self.graph))


class AsyncStateGraph:
    """The asyncio twin of `StateGraph`."""

    def __init__(self, handle: AsyncRippl, schema: Schema, *, suffix: str,
                 name: str | None = None) -> None:
        self.handle, self.schema = handle, schema
        self.graph = _state_graph_name(handle, name, suffix)
        self._driver = AsyncDriver(handle.redis, self.graph, handle.location.describe())

    async def setup(self) -> None:
        """Create the graph's indexes (idempotent; cheap once done)."""
        await self._driver.run(lambda: _schema.ensure(self.schema, self.graph))

    async def run[R](self, make: Callable[[], Op[R]], *, write: bool = False) -> R:
        return await self._driver.run(make, write=write)

    async def drop(self) -> None:
        """Delete the graph and its keys."""
        with translated_errors(self.handle.location.describe()):
            await self.handle.redis.delete(self.graph, schema_key(self.graph), version_key(self.graph))
