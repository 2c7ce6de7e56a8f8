"""Creating a graph's indexes and unique constraints, once: one helper for every graph Rippl keeps
(the tenant's causal graph, record stores, companion graphs of framework state).

`ensure(schema, keys)` is an operation (run by either driver): it checks the graph's schema
marker, creates what is missing, tolerates another process creating the same thing meanwhile,
and sets the marker last, so a half-created schema is completed by the next open. Before that, a
tenant graph still stored under the layout before tagged keys (graph key = the graph name) is
moved to its tagged keys, once, atomically (`migrate`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rippl_core._runtime.keys import COMPANIONS, Keys, tenant_of
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


def exists(keys: Keys) -> Op[bool]:
    """Whether the graph of `keys` was ever opened (its schema marker is set, in today's key layout
    or in the legacy one, which opening migrates)."""
    if (yield Command("EXISTS", keys.schema)):
        return True
    return bool((yield Command("EXISTS", keys.legacy.schema)))


def ensure(schema: Schema, keys: Keys, *, migrate_legacy: bool = False) -> Op[None]:
    """Bring the graph of `keys` to `schema` (idempotent; cheap when the marker says it is done),
    first moving a legacy graph of the same name to its keys if `migrate_legacy`."""
    if (yield Command("GET", keys.schema)) == schema.version:
        return
    if migrate_legacy:
        yield from migrate(keys)
    yield from create_missing(schema.all_indexes())
    for label in schema.unique_ids:
        try:
            yield Command("GRAPH.CONSTRAINT", "CREATE", keys.graph, "UNIQUE", "NODE", label,
                          "PROPERTIES", 1, "id")
        except DatabaseError as exc:
            if "already exists" not in str(exc):
                raise
    for backfill in schema.backfills:
        yield from backfill()
    yield Command("SET", keys.schema, schema.version)


# KEYS: the legacy schema marker, (legacy graph, new graph) pairs, then legacy keys to delete.
# ARGV: the number of pairs, then per pair the text left at the legacy graph's key ('' for none).
_MIGRATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local pairs, moved = tonumber(ARGV[1]), 0
for i = 0, pairs - 1 do
  local from, to = KEYS[2 + 2 * i], KEYS[3 + 2 * i]
  if redis.call('TYPE', from)['ok'] == 'graphdata' and redis.call('EXISTS', to) == 0 then
    redis.call('RENAME', from, to)
    if ARGV[2 + i] ~= '' then redis.call('SET', from, ARGV[2 + i]) end
    moved = moved + 1
  end
end
for i = 2 + 2 * pairs, #KEYS do redis.call('DEL', KEYS[i]) end
return moved
"""


def migrate(keys: Keys) -> Op[int]:
    """Move tenant `keys.name`'s graph (and its companion graphs) from the layout before tagged
    keys to its keys, in one atomic script; returns how many graphs moved (0: nothing to do).

    Only a graph that Rippl created is moved (its legacy schema marker exists). The old graph key
    is left holding a short text saying where the graph went, so a process still running an
    older Rippl fails (WRONGTYPE: its checks deny) instead of writing to a new, empty graph. Keys
    that have the shape of a tagged tenant key are never deleted nor overwritten: they may belong
    to a tenant of the new layout."""
    legacy = keys.legacy
    if tenant_of(legacy.graph) is not None:
        return 0  # a legacy graph named like a tagged key: it cannot be told apart, leave it
    moves = [(legacy.graph, keys.graph),
             *((legacy.companion_graph(c), keys.of(c).graph) for c in COMPANIONS)]
    stale = [key for key in legacy.plain_keys() if tenant_of(key) is None]
    notes = ["" if tenant_of(old) is not None else
             f"moved to {new} by Rippl (tagged tenant keys); upgrade this client" for old, new in moves]
    flat = [key for pair in moves for key in pair]
    moved = yield Command("EVAL", _MIGRATE, 1 + len(flat) + len(stale), legacy.schema, *flat,
                          *stale, len(moves), *notes)
    return int(moved)
