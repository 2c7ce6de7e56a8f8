"""Record stores on the handles: `rippl.records("crew")` and `await arippl.records("crew")...`.

A `RecordStore` is a named set of records on the handle's graph; several stores share one graph
(and its claims). See `rippl_core.records` for the model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rippl_core._runtime.timeutil import TimeLike, now_ms
from rippl_core._runtime.validation import SequenceNotStr
from rippl_core.causal.joined import Joined
from rippl_core.records import ops
from rippl_core.records.model import Record, ScopeSummary, check_store, view_of

if TYPE_CHECKING:
    from rippl_core._runtime.driver import AsyncDriver, SyncDriver


class RecordStore:
    """A named store of records (memories) held as claims; every method is one operation."""

    store: str

    def __init__(self, driver: SyncDriver, store: str,
                 joined: Callable[[], Joined | None] = lambda: None) -> None:
        self._driver, self.store = driver, check_store(store)
        self._joined = joined  # who is writing now (a captured run: `capture.memory`)
        self._driver.run(ops.ensure_schema)

    def save(self, records: Sequence[Record]) -> list[Record]:
        """Insert or replace records (all or nothing); a changed record gets a new version.
        Saved while a captured run writes, each record's claim rests on what the run carried."""
        joined = self._joined()
        return self._driver.run(lambda: ops.save(self.store, records, now=now_ms(), joined=joined),
                                write=True)

    def get(self, record_id: str, *, as_of: TimeLike | None = None,
            known_at: TimeLike | None = None) -> Record | None:
        """One record (its open version, or the version holding at `as_of` as known at `known_at`)."""
        return self._driver.run(lambda: ops.get(self.store, record_id,
                                                view=view_of(as_of, known_at)))

    def find(self, *, scope_prefix: str | None = None, categories: SequenceNotStr[str] | None = None,
             ids: SequenceNotStr[str] | None = None, older_than: TimeLike | None = None,
             metadata_filter: Mapping[str, Any] | None = None, limit: int | None = None,
             offset: int = 0, as_of: TimeLike | None = None,
             known_at: TimeLike | None = None) -> list[Record]:
        """Records matching every filter given, newest first, whatever their claim's status."""
        return self._driver.run(lambda: ops.find(
            self.store, view=view_of(as_of, known_at), prefix=scope_prefix, categories=categories,
            ids=ids, older_than=older_than, metadata_filter=metadata_filter, limit=limit,
            offset=offset))

    def search(self, embedding: Sequence[float], *, scope_prefix: str | None = None,
               categories: SequenceNotStr[str] | None = None,
               metadata_filter: Mapping[str, Any] | None = None, limit: int = 10,
               min_score: float = 0.0, include_at_risk: bool = True,
               as_of: TimeLike | None = None,
               known_at: TimeLike | None = None) -> list[tuple[Record, float]]:
        """Most similar records (cosine) whose claim holds, best first; never a retracted one."""
        return self._driver.run(lambda: ops.search(
            self.store, embedding, view=view_of(as_of, known_at), prefix=scope_prefix,
            categories=categories, metadata_filter=metadata_filter, limit=limit,
            min_score=min_score, include_at_risk=include_at_risk))

    def delete(self, *, scope_prefix: str | None = None, categories: SequenceNotStr[str] | None = None,
               ids: SequenceNotStr[str] | None = None, older_than: TimeLike | None = None,
               metadata_filter: Mapping[str, Any] | None = None, purge: bool = False) -> int:
        """End the matching records (history kept for as-of reads), or erase them (purge)."""
        return self._driver.run(lambda: ops.delete(
            self.store, now=now_ms(), prefix=scope_prefix, categories=categories, ids=ids,
            older_than=older_than, metadata_filter=metadata_filter, purge=purge), write=True)

    def touch(self, ids: SequenceNotStr[str]) -> int:
        """Record an access to these records (no new version); returns how many."""
        return self._driver.run(lambda: ops.touch(self.store, ids, now=now_ms()), write=True)

    def summary(self, scope: str = "/", *, as_of: TimeLike | None = None,
                known_at: TimeLike | None = None) -> ScopeSummary:
        """What a scope holds: how many records, their categories, oldest and newest, sub-scopes."""
        return self._driver.run(lambda: ops.summary(self.store, scope,
                                                    view=view_of(as_of, known_at)))


class AsyncRecordStore:
    """The asyncio twin of `RecordStore`."""

    store: str

    def __init__(self, driver: AsyncDriver, store: str,
                 joined: Callable[[], Joined | None] = lambda: None) -> None:
        self._driver, self.store = driver, check_store(store)
        self._joined = joined
        self._ready = False

    async def _ensure(self) -> None:
        if not self._ready:
            await self._driver.run(ops.ensure_schema)
            self._ready = True

    async def save(self, records: Sequence[Record]) -> list[Record]:
        """Insert or replace records (all or nothing); a changed record gets a new version.
        Saved while a captured run writes, each record's claim rests on what the run carried."""
        await self._ensure()
        joined = self._joined()
        return await self._driver.run(lambda: ops.save(self.store, records, now=now_ms(),
                                                       joined=joined), write=True)

    async def get(self, record_id: str, *, as_of: TimeLike | None = None,
                  known_at: TimeLike | None = None) -> Record | None:
        """One record (its open version, or the version holding at `as_of` as known at `known_at`)."""
        await self._ensure()
        return await self._driver.run(lambda: ops.get(self.store, record_id,
                                                      view=view_of(as_of, known_at)))

    async def find(self, *, scope_prefix: str | None = None,
                   categories: SequenceNotStr[str] | None = None, ids: SequenceNotStr[str] | None = None,
                   older_than: TimeLike | None = None,
                   metadata_filter: Mapping[str, Any] | None = None, limit: int | None = None,
                   offset: int = 0, as_of: TimeLike | None = None,
                   known_at: TimeLike | None = None) -> list[Record]:
        """Records matching every filter given, newest first, whatever their claim's status."""
        await self._ensure()
        return await self._driver.run(lambda: ops.find(
            self.store, view=view_of(as_of, known_at), prefix=scope_prefix, categories=categories,
            ids=ids, older_than=older_than, metadata_filter=metadata_filter, limit=limit,
            offset=offset))

    async def search(self, embedding: Sequence[float], *, scope_prefix: str | None = None,
                     categories: SequenceNotStr[str] | None = None,
                     metadata_filter: Mapping[str, Any] | None = None, limit: int = 10,
                     min_score: float = 0.0, include_at_risk: bool = True,
                     as_of: TimeLike | None = None,
                     known_at: TimeLike | None = None) -> list[tuple[Record, float]]:
        """Most similar records (cosine) whose claim holds, best first; never a retracted one."""
        await self._ensure()
        return await self._driver.run(lambda: ops.search(
            self.store, embedding, view=view_of(as_of, known_at), prefix=scope_prefix,
            categories=categories, metadata_filter=metadata_filter, limit=limit,
            min_score=min_score, include_at_risk=include_at_risk))

    async def delete(self, *, scope_prefix: str | None = None,
                     categories: SequenceNotStr[str] | None = None, ids: SequenceNotStr[str] | None = None,
                     older_than: TimeLike | None = None,
                     metadata_filter: Mapping[str, Any] | None = None,
                     purge: bool = False) -> int:
        """End the matching records (history kept for as-of reads), or erase them (purge)."""
        await self._ensure()
        return await self._driver.run(lambda: ops.delete(
            self.store, now=now_ms(), prefix=scope_prefix, categories=categories, ids=ids,
            older_than=older_than, metadata_filter=metadata_filter, purge=purge), write=True)

    async def touch(self, ids: SequenceNotStr[str]) -> int:
        """Record an access to these records (no new version); returns how many."""
        await self._ensure()
        return await self._driver.run(lambda: ops.touch(self.store, ids, now=now_ms()),
                                      write=True)

    async def summary(self, scope: str = "/", *, as_of: TimeLike | None = None,
                      known_at: TimeLike | None = None) -> ScopeSummary:
        """What a scope holds: how many records, their categories, oldest and newest, sub-scopes."""
        await self._ensure()
        return await self._driver.run(lambda: ops.summary(self.store, scope,
                                                          view=view_of(as_of, known_at)))
