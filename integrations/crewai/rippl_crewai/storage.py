"""`RipplStorage`: CrewAI's memory `StorageBackend` over Rippl's claim graph.

    memory = Memory(storage=RipplStorage(rippl), llm=..., embedder=...)

Every memory record states a claim of the graph: the claim derived from its content, supported by
a source for the record's `source` (or, for records without one, the store's own source); a record
whose metadata names `rippl_claim` states that existing claim instead. Truth maintenance therefore
applies to memories: retract the claim, or the source it came from, and recall stops returning it.
A claim under a proposed retraction is still recalled (set include_at_risk=False to hide it);
`rippl_status` in the recalled record's metadata says which.

Records are versioned (saving a changed record ends the old version; deleting ends it), so recall
can be asked about the past: `Memory(storage=storage.as_of(t), ...)` recalls what the memory held
at `t`, with each claim's status as it was then (`rippl_status`) and now (`rippl_status_now`).

Under capture (the default) a recall inside a crew's task is an observation of that task's run
(`rippl_crewai.runs`): the claims of the records returned are recorded as seen by the run, for the
rest of it (CrewAI puts what the agent recalls into the task's prompt), so a later retraction of
one vetoes the calls that rested on it. A recall that cannot be recorded returns nothing: the
agent never reads a memory its run has no record of. A save inside a crew's task is the run's:
each record naming no source rests on what the run carried (the saving tool call's premises, or,
for CrewAI's own save of a task's output, everything the run carried) instead of the store's own
source, so it goes OUT when they are retracted and a later recall of it hands them on.

CrewAI's `MemoryRecord` timestamps are naive UTC (`datetime.utcnow()`); they are read as UTC and
given back naive UTC. Times passed to `as_of` follow Rippl's rule: aware datetimes or ISO-8601
strings with an offset.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from crewai.memory.types import MemoryRecord, ScopeInfo

from rippl_core import InvalidInputError, NotFoundError, Record, RecordStore, Rippl, TimeLike, Wave
from rippl_core.adapters import RunRef, Writing, current_writing, to_ms, writing
from rippl_crewai._guard import check_memory
from rippl_crewai.runs import FRAMEWORK, run_id, scope_of

logger: logging.Logger = logging.getLogger("rippl")

CLAIM_KEY = "rippl_claim"
STATUS_KEY = "rippl_status"
STATUS_NOW_KEY = "rippl_status_now"
_DERIVED = (STATUS_KEY, STATUS_NOW_KEY)


def _utc(value: datetime | None) -> datetime | None:
    """CrewAI's naive timestamps are UTC."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _naive(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC).replace(tzinfo=None)


def _stored(value: datetime | None, what: str) -> datetime:
    """A time every record read from Rippl carries, as CrewAI's naive UTC."""
    naive = _naive(value)
    if naive is None:
        raise InvalidInputError(f"the record has no {what}: only records read from a Rippl store "
                                "become CrewAI memory records")
    return naive


def to_record(record: MemoryRecord) -> Record:
    """A CrewAI memory record as a Rippl record (`rippl_claim` in metadata names its claim)."""
    if not isinstance(record, MemoryRecord):
        raise InvalidInputError(f"expected a crewai MemoryRecord, got {type(record).__name__}")
    metadata = {k: v for k, v in record.metadata.items() if k not in _DERIVED}
    claim = metadata.pop(CLAIM_KEY, None)
    if claim is not None and not isinstance(claim, str):
        raise InvalidInputError(f"metadata[{CLAIM_KEY!r}] must be a claim id, got {claim!r}")
    return Record(id=record.id, content=record.content, scope=record.scope,
                  categories=list(record.categories), metadata=metadata,
                  importance=record.importance, embedding=record.embedding, source=record.source,
                  private=record.private, created_at=_utc(record.created_at),
                  last_accessed=_utc(record.last_accessed), claim=claim)


def to_memory(record: Record) -> MemoryRecord:
    """A Rippl record as a CrewAI memory record, its claim and status in the metadata."""
    metadata = {**record.metadata, CLAIM_KEY: record.claim, STATUS_KEY: record.claim_status}
    if record.claim_state_now is not None and record.claim_state_now != record.claim_state:
        metadata[STATUS_NOW_KEY] = record.claim_status_now
    return MemoryRecord(id=record.id, content=record.content, scope=record.scope,
                        categories=list(record.categories), metadata=metadata,
                        importance=record.importance,
                        created_at=_stored(record.created_at, "created_at"),
                        last_accessed=_stored(record.last_accessed, "last_accessed"),
                        embedding=record.embedding, source=record.source, private=record.private)


class RipplStorage:
    """A CrewAI memory backend (`crewai.memory.storage.backend.StorageBackend`) on a Rippl graph.

    store: the name of this memory within the graph (several memories can share a graph and its
        claims). include_at_risk: recall records whose claim has a pending retraction proposal
        (flagged `rippl_status: Proposed Retraction`). keep_history: deletions end records (kept
        for as-of recall); False erases them and their history. capture: a recall in a crew's
        task is an observation of its run (default).
    """

    rippl: Rippl
    records: RecordStore
    store: str
    include_at_risk: bool
    keep_history: bool

    def __init__(self, memory: Rippl, *, store: str = "crewai", include_at_risk: bool = True,
                 keep_history: bool = True, as_of: TimeLike | None = None,
                 known_at: TimeLike | None = None, capture: bool = True) -> None:
        self.rippl = check_memory(memory)
        if not isinstance(capture, bool):
            raise InvalidInputError("capture must be True or False")
        self.capture = capture
        self.records = self.rippl.records(store)
        self.store = self.records.store
        self.include_at_risk = bool(include_at_risk)
        self.keep_history = bool(keep_history)
        if as_of is not None:
            to_ms(as_of, name="as_of")
        if known_at is not None:
            to_ms(known_at, name="known_at")
        self._as_of, self._known_at = as_of, known_at

    # -- time ------------------------------------------------------------------------------------
    def as_of(self, when: TimeLike, *, known_at: TimeLike | None = None) -> RipplStorage:
        """A read-only view of this memory as it was at `when` (valid time), as known at
        `known_at` (transaction time, default now). Writes to it are refused."""
        return RipplStorage(self.rippl, store=self.store, include_at_risk=self.include_at_risk,
                            keep_history=self.keep_history, as_of=when, known_at=known_at,
                            capture=self.capture)

    @property
    def read_only(self) -> bool:
        return self._as_of is not None or self._known_at is not None

    def _time(self) -> dict[str, Any]:
        return {"as_of": self._as_of, "known_at": self._known_at}

    def _writable(self) -> None:
        if self.read_only:
            raise InvalidInputError(
                f"this memory view is read-only (as of {self._as_of}); write through the live "
                "RipplStorage, and give the view to Memory(read_only=True)")

    # -- StorageBackend --------------------------------------------------------------------------
    def save(self, records: list[MemoryRecord]) -> None:
        """Insert records (a record with an id already stored replaces it as a new version).
        Under capture, saved in a crew's task each record rests on what the run carried: on
        what the tool call saving it rested on, or, for CrewAI's own save of a task's output,
        on everything the run carried (`rippl_core.capture.memory`)."""
        self._writable()
        with writing(self._writer()):
            self.records.save([to_record(r) for r in records])

    def update(self, record: MemoryRecord) -> None:
        """Replace the record with the same id (a new version; the old one is kept for as-of)."""
        self._writable()
        with writing(self._writer()):
            self.records.save([to_record(record)])

    def _writer(self) -> Writing | None:
        """Who writes now: the tool call running (the hooks say), else the crew's task running
        (not a flow outside any kickoff: CrewAI's memory saves through a flow of its own)."""
        found = current_writing(self.rippl.graph)
        run = run_id(flows=False) if self.capture and found is None else None
        if run is None:
            return found
        return Writing(RunRef(run, framework=FRAMEWORK, scope=scope_of(run)),
                       graph=self.rippl.graph)

    def search(self, query_embedding: list[float], scope_prefix: str | None = None,
               categories: list[str] | None = None, metadata_filter: dict[str, Any] | None = None,
               limit: int = 10, min_score: float = 0.0) -> list[tuple[MemoryRecord, float]]:
        """Most similar records (cosine similarity, computed exactly in FalkorDB), best first;
        records of retracted claims are never returned. In a crew's task, the claims returned
        are recorded as observed by its run."""
        found = self.records.search(query_embedding, scope_prefix=scope_prefix,
                                    categories=categories, metadata_filter=metadata_filter,
                                    limit=limit, min_score=min_score,
                                    include_at_risk=self.include_at_risk, **self._time())
        if not self._observed([record.claim for record, _ in found]):
            return []
        return [(to_memory(record), score) for record, score in found]

    def _observed(self, claims: list[str | None]) -> bool:
        """Record the claims a recall returns as observed by the current run (if there is one).
        False when they could not be recorded (then the recall returns nothing)."""
        run = run_id() if self.capture else None
        seen = sorted({claim for claim in claims if claim})
        if run is None or not seen:
            return True
        try:
            self.rippl.run(run, framework=FRAMEWORK, scope=scope_of(run)).observe(seen)
        except Exception as exc:
            logger.warning("memory recall in run %s returned nothing: its claims could not be "
                           "recorded as observed: %s: %s", run, type(exc).__name__, exc)
            return False
        return True

    def delete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
               record_ids: list[str] | None = None, older_than: datetime | None = None,
               metadata_filter: dict[str, Any] | None = None) -> int:
        """End (or with keep_history=False erase) the records matching every filter given."""
        self._writable()
        return self.records.delete(scope_prefix=scope_prefix, categories=categories,
                                   ids=record_ids, older_than=_utc(older_than),
                                   metadata_filter=metadata_filter, purge=not self.keep_history)

    def get_record(self, record_id: str) -> MemoryRecord | None:
        record = self.records.get(record_id, **self._time())
        return to_memory(record) if record is not None else None

    def list_records(self, scope_prefix: str | None = None, limit: int = 200,
                     offset: int = 0) -> list[MemoryRecord]:
        """Records in a scope, newest first, whatever their claim's status (see `rippl_status`)."""
        found = self.records.find(scope_prefix=scope_prefix, limit=limit, offset=offset,
                                  **self._time())
        return [to_memory(record) for record in found]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        summary = self.records.summary(scope or "/", **self._time())
        return ScopeInfo(path=summary.path, record_count=summary.count,
                         categories=sorted(summary.categories),
                         oldest_record=_naive(summary.oldest), newest_record=_naive(summary.newest),
                         child_scopes=summary.children)

    def list_scopes(self, parent: str = "/") -> list[str]:
        return self.records.summary(parent or "/", **self._time()).children

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        return dict(self.records.summary(scope_prefix or "/", **self._time()).categories)

    def count(self, scope_prefix: str | None = None) -> int:
        return self.records.summary(scope_prefix or "/", **self._time()).count

    def reset(self, scope_prefix: str | None = None) -> None:
        """Delete every record in the scope (None: the whole store)."""
        self.delete(scope_prefix=scope_prefix)

    def touch_records(self, record_ids: list[str]) -> None:
        """Mark records as just accessed (CrewAI calls this after a recall; no new version)."""
        if not self.read_only:
            self.records.touch(record_ids)

    def close(self) -> None:
        """Nothing to release: the Rippl handle belongs to the caller, who closes it."""

    async def asave(self, records: list[MemoryRecord]) -> None:
        await asyncio.to_thread(self.save, records)

    async def asearch(self, query_embedding: list[float], scope_prefix: str | None = None,
                      categories: list[str] | None = None,
                      metadata_filter: dict[str, Any] | None = None, limit: int = 10,
                      min_score: float = 0.0) -> list[tuple[MemoryRecord, float]]:
        return await asyncio.to_thread(self.search, query_embedding, scope_prefix, categories,
                                       metadata_filter, limit, min_score)

    async def adelete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
                      record_ids: list[str] | None = None, older_than: datetime | None = None,
                      metadata_filter: dict[str, Any] | None = None) -> int:
        return await asyncio.to_thread(self.delete, scope_prefix, categories, record_ids,
                                       older_than, metadata_filter)

    # -- Rippl extras ----------------------------------------------------------------------------
    def claim_of(self, record_id: str) -> str:
        """The id of the claim a record states."""
        record = self.records.get(record_id, **self._time())
        if record is None:
            raise NotFoundError(f"memory record {record_id} not found in store {self.store!r}")
        return str(record.claim)

    def retract(self, record_id: str, *, reason: str, by: str) -> Wave:
        """Retract the claim a record states: it, and every record stating it, stop being
        recalled; whatever rests on the claim in the graph is blocked too."""
        self._writable()
        return self.rippl.retract(self.claim_of(record_id), reason=reason, by=by)
