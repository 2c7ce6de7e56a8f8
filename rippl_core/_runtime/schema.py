"""Creating a graph's indexes and unique constraints, once: one helper for every graph Rippl keeps
(the tenant's causal graph, record stores, companion graphs of framework state).

`ensure(schema, graph)` is an operation (run by either driver): it checks the graph's schema
marker, creates what is missing, tolerates another process creating the same thing meanwhile,
and sets the marker last, so a half-created schema is completed by the next open.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rippl_core._runtime.keys import schema_key
from rippl_core._runtime.op import Command, Op
from rippl_core._runtime.wire import Query
from rippl_core.errors import DatabaseError


@dataclass(frozen=True, slots=True)
class Index:
    """A range index on a node label's property, or on a relationship type's (`on_edges`)."""

    label: str
    prop: str
    on_edges: bool = False

    def create(self) -> Query:
        pattern = f"()-[n:{self.label}]-()" if self.on_edges else f"(n:{self.label})"
        return Query(f"CREATE INDEX FOR {pattern} ON (n.{self.prop})")


@dataclass(frozen=True, slots=True)
class Schema:
    """What a graph needs: unique `id` constraints (each with its index) and range indexes."""

    version: str
    unique_ids: tuple[str, ...] = ()
    indexes: tuple[Index, ...] = ()
    backfills: tuple[Callable[[], Op[None]], ...] = ()  # fill a new indexed property (idempotent)

    def all_indexes(self) -> tuple[Index, ...]:
        return (*(Index(label, "id") for label in self.unique_ids), *self.indexes)

    def __add__(self, other: Schema) -> Schema:
        return Schema(self.version, (*self.unique_ids, *other.unique_ids),
                      (*self.indexes, *other.indexes), (*self.backfills, *other.backfills))


LIST_INDEXES = Query("CALL db.indexes() YIELD label, properties RETURN label, properties",
                     read_only=True)


def existing_indexes() -> Op[set[tuple[str, str]]]:
    """(label, property) of every index of the graph (none for a graph not created yet)."""
    try:
        rows = yield LIST_INDEXES
    except DatabaseError as exc:
        if "empty key" in str(exc):  # a new graph: created by its first index
            return set()
        raise
    return {(row[0], prop) for row in rows for prop in row[1]}


def create_missing(indexes: tuple[Index, ...]) -> Op[None]:
    """Create the indexes the graph does not have yet."""
    have = yield from existing_indexes()
    for index in indexes:
        if (index.label, index.prop) in have:
            continue
        try:
            yield index.create()
        except DatabaseError as exc:
            if "already indexed" not in str(exc).lower():  # another process created it meanwhile
                raise


def exists(graph: str) -> Op[bool]:
    """Whether `graph` was ever opened (its schema marker is set)."""
    return bool((yield Command("EXISTS", schema_key(graph))))


def ensure(schema: Schema, graph: str) -> Op[None]:
    """Bring `graph` to `schema` (idempotent; cheap when the marker says it is done)."""
    marker = schema_key(graph)
    if (yield Command("GET", marker)) == schema.version:
        return
    yield from create_missing(schema.all_indexes())
    for label in schema.unique_ids:
        try:
            yield Command("GRAPH.CONSTRAINT", "CREATE", graph, "UNIQUE", "NODE", label,
                          "PROPERTIES", 1, "id")
        except DatabaseError as exc:
            if "already exists" not in str(exc):
                raise
    for backfill in schema.backfills:
        yield from backfill()
    yield Command("SET", marker, schema.version)
