"""Creating a graph's indexes and unique constraints, once: one helper for every graph Rippl keeps
(the tenant's causal graph, record stores, companion graphs of framework state).

`ensure(schema, keys)` is an operation (run by either driver): it checks the graph's schema
marker, creates what is missing, tolerates another process creating the same thing meanwhile,
and sets the marker last, so a half-created schema is completed by the next open. Unique
constraints are created under one lock per server (`SCHEMA_LOCK`, one per shard of a cluster):
FalkorDB (4.22) crashes when two `GRAPH.CONSTRAINT CREATE` run at once, even on two graphs. Before that, a
tenant graph still stored under the layout before tagged keys (graph key = the graph name) is
moved to its tagged keys, once, atomically (`migrate`).
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from redis.crc import key_slot

from rippl_core._runtime.keys import COMPANIONS, PREFIX, Keys, tenant_of
from rippl_core._runtime.op import Command, Op, Pause
from rippl_core._runtime.wire import Query
from rippl_core.errors import DatabaseError, UnavailableError


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
    if schema.unique_ids:
        yield from locked(create_constraints(schema.unique_ids, keys))
    for backfill in schema.backfills:
        yield from backfill()
    yield Command("SET", keys.schema, schema.version)


def create_constraints(labels: tuple[str, ...], keys: Keys) -> Op[None]:
    """A unique `id` constraint on each label (one another process created already is fine)."""
    for label in labels:
        try:
            yield Command("GRAPH.CONSTRAINT", "CREATE", keys.graph, "UNIQUE", "NODE", label,
                          "PROPERTIES", 1, "id")
        except DatabaseError as exc:
            if "already exists" not in str(exc):
                raise


# One lock per server process (the crash is per process): on a single server one key; in a
# Redis Cluster one key per shard, in a slot of the shard the graph lives on (`lock_key`).
SCHEMA_LOCK = f"{PREFIX}:schema-lock"
LOCK_MS = 10_000  # a holder that died frees the lock after this long
LOCK_POLL_S = 0.005
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


def lock_key() -> Op[str]:
    """`SCHEMA_LOCK` on a single server; in a Redis Cluster, `SCHEMA_LOCK:{t}` with a tag `t` that
    hashes to the first slot of the shard this connection serves (the tenant's shard)."""
    try:
        nodes = yield Command("CLUSTER", "NODES")
    except DatabaseError:  # "cluster support disabled": a single server (or a Sentinel primary)
        return SCHEMA_LOCK
    text = nodes.decode() if isinstance(nodes, bytes) else str(nodes)
    mine = next(line.split() for line in text.splitlines() if "myself" in line.split()[2])
    first = min(int(part.split("-")[0]) for part in mine[8:] if not part.startswith("["))
    return f"{SCHEMA_LOCK}:{{{_tag_in_slot(first)}}}"


def _tag_in_slot(slot: int) -> str:
    """The smallest decimal hash tag whose key slot is `slot`."""
    return next(str(n) for n in itertools.count() if key_slot(str(n).encode()) == slot)


def locked[T](body: Op[T]) -> Op[T]:
    """Run `body` holding the schema lock (waiting for it at most twice its expiry)."""
    key, token = (yield from lock_key()), secrets.token_hex(8)
    for _ in range(round(2 * LOCK_MS / 1000 / LOCK_POLL_S)):
        if (yield Command("SET", key, token, "NX", "PX", LOCK_MS)):
            break
        yield Pause(LOCK_POLL_S)
    else:
        raise UnavailableError(
            f"another process has held Rippl's schema lock ({key}) for over "
            f"{2 * LOCK_MS // 1000} s while creating a graph's constraints; try again, or delete "
            "that key if no Rippl process is opening a graph")
    release = Command("EVAL", _RELEASE, 1, key, token)
    try:
        result = yield from body
    except GeneratorExit:  # the driver itself gave up: the lock expires by itself
        raise
    except BaseException:
        yield release
        raise
    yield release
    return result


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
