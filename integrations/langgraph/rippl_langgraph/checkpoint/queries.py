"""Every Cypher text the FalkorDB checkpointer sends. Labels come from this module only; every value
(thread ids, namespaces, blobs) is a parameter.

Layout, in the tenant's companion graph "checkpoints" (key `rippl:{<tenant>}:checkpoints:graph`):

    (:Checkpoint {key, thread_key, thread_id, checkpoint_ns, checkpoint_id, parent_id, type, data,
                  meta_type, meta, meta_kv, blob_keys, run_key, run_id, taken_at, recorded_at})
    (:CheckpointBlob {key, thread_key, thread_id, checkpoint_ns, channel, version, type, data})
    (:CheckpointWrite {key, cp_key, thread_key, thread_id, checkpoint_ns, checkpoint_id, task_id,
                       idx, channel, type, data, task_path})
    (:CheckpointHead {key, thread_key, checkpoint_ns, latest_id, latest_key})   the newest, per
                                                                               (thread, namespace)

A checkpoint stores the channel versions it sees as `blob_keys` (one blob per channel version, as
langgraph's own savers do), so a read is one round trip of indexed lookups.

Every indexed property is a fixed-length hex digest (`*key`), never a caller's string: FalkorDB's
range index does not find strings that are empty or end in white space or control characters
(`MATCH (n:T) WHERE n.v = ' '` misses with an index on T.v, finds without), and thread ids are
caller strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rippl_core.adapters import Index, Query, Schema

CHECKPOINT, BLOB, WRITE, HEAD = "Checkpoint", "CheckpointBlob", "CheckpointWrite", "CheckpointHead"
LABELS = (CHECKPOINT, BLOB, WRITE, HEAD)

SCHEMA = Schema("1", indexes=tuple(Index(label, prop) for label, prop in (
    (CHECKPOINT, "key"), (CHECKPOINT, "thread_key"), (CHECKPOINT, "run_key"),
    (BLOB, "key"), (BLOB, "thread_key"),
    (WRITE, "key"), (WRITE, "cp_key"), (WRITE, "thread_key"),
    (HEAD, "key"), (HEAD, "thread_key"),
)))

_TUPLE_FIELDS = ("c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_id, c.type, c.data, "
                 "c.meta_type, c.meta, c.key")
# For each checkpoint `c`: its channel blobs and pending writes, then the row of a CheckpointTuple.
_WITH_BLOBS_AND_WRITES = (
    f" CALL {{ WITH c UNWIND c.blob_keys AS k MATCH (b:{BLOB} {{key: k}})"
    " RETURN collect([b.channel, b.type, b.data]) AS blobs }"
    f" CALL {{ WITH c MATCH (w:{WRITE} {{cp_key: c.key}})"
    " RETURN collect([w.task_id, w.idx, w.channel, w.type, w.data, w.task_path]) AS writes }"
    f" RETURN {_TUPLE_FIELDS}, blobs, writes"
)



def put_checkpoint(key: str, props: Mapping[str, Any], blobs: Sequence[Mapping[str, Any]],
                   head_key: str) -> list[Query]:
    """A checkpoint with its new channel blobs (rows of {key, props}), and its (thread,
    namespace) head pointed at it if it is the newest: statements sent together in one
    transaction. Reading the latest checkpoint is then two indexed lookups whatever the thread's
    length. A new node is created with its properties inline: a `SET` right after its `CREATE`
    or `MERGE` re-indexes it, at a cost that grows with the nodes of its label (the put of the
    10,000th checkpoint of a thread took 7x the first's; see docs/benchmarks.md, Limits); only
    a re-put of an existing checkpoint or blob sets properties."""
    checkpoint = Query(
        f"OPTIONAL MATCH (c:{CHECKPOINT} {{key: $key}}) "
        f"FOREACH (_ IN CASE WHEN c IS NULL THEN [1] ELSE [] END | "
        f"CREATE (:{CHECKPOINT} {_inline('$key', '$props', props)})) "
        "FOREACH (_ IN CASE WHEN c IS NULL THEN [] ELSE [1] END | SET c += $props) "
        f"WITH count(*) AS done MERGE (h:{HEAD} {{key: $hk}}) ON CREATE SET "
        "h.thread_key = $props.thread_key, h.checkpoint_ns = $props.checkpoint_ns, "
        "h.latest_id = $props.checkpoint_id, h.latest_key = $key "
        "WITH h WHERE h.latest_id < $props.checkpoint_id "
        "SET h.latest_id = $props.checkpoint_id, h.latest_key = $key",
        {"key": key, "props": props, "hk": head_key})
    if not blobs:
        return [checkpoint]
    keys = {k: None for blob in blobs for k in blob["props"]}
    return [Query(
        f"UNWIND $blobs AS r OPTIONAL MATCH (b:{BLOB} {{key: r.key}}) "
        f"FOREACH (_ IN CASE WHEN b IS NULL THEN [1] ELSE [] END | "
        f"CREATE (:{BLOB} {_inline('r.key', 'r.props', keys)})) "
        "FOREACH (_ IN CASE WHEN b IS NULL THEN [] ELSE [1] END | SET b += r.props)",
        {"blobs": blobs}), checkpoint]


def _inline(key: str, props: str, fields: Mapping[str, Any]) -> str:
    """The map literal `{key: <key>, f: <props>.f, ...}` of a node created with its properties
    (a null one is not stored, as with `SET n += map`). `fields` are the saver's own names, the
    keys of the map parameter, which the encoder accepts only as plain identifiers."""
    return "{" + ", ".join([f"key: {key}", *(f"{name}: {props}.{name}" for name in fields)]) + "}"


def set_heads(rows: Sequence[Mapping[str, Any]]) -> Query:
    """Re-point heads: rows of {key, latest_id, latest_key}."""
    return Query(f"UNWIND $rows AS r MATCH (h:{HEAD} {{key: r.key}}) "
                 "SET h.latest_id = r.latest_id, h.latest_key = r.latest_key", {"rows": rows})


def delete_heads(keys: Sequence[str]) -> Query:
    return Query(f"UNWIND $keys AS k MATCH (h:{HEAD} {{key: k}}) DELETE h", {"keys": list(keys)})


def read_latest(head_key: str) -> Query:
    """The newest checkpoint of a (thread, namespace), through its head (the WITH makes the
    checkpoint an index lookup by the head's value; without it FalkorDB joins a scan of every
    checkpoint with the head)."""
    return Query(f"MATCH (h:{HEAD} {{key: $hk}}) WITH h.latest_key AS latest "
                 f"MATCH (c:{CHECKPOINT} {{key: latest}})"
                 + _WITH_BLOBS_AND_WRITES, {"hk": head_key}, read_only=True)


def read_by_keys(keys: Sequence[str]) -> Query:
    """Checkpoints by key (one indexed lookup each)."""
    return Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{key: k}})" + _WITH_BLOBS_AND_WRITES,
                 {"keys": list(keys)}, read_only=True)


def put_writes(rows: Sequence[Mapping[str, Any]], *, overwrite: bool) -> Query:
    """Pending writes: rows of {key, props}. Regular writes keep the first value stored for their
    (task, index); special channels (error, interrupt, resume...) are overwritten."""
    action = "SET" if overwrite else "ON CREATE SET"
    return Query(f"UNWIND $rows AS r MERGE (w:{WRITE} {{key: r.key}}) {action} w += r.props",
                 {"rows": rows})


def read_checkpoints(*, thread_key: str | None, checkpoint_ns: str | None, checkpoint_id: str | None,
                     before: str | None, cursor: tuple[str, str] | None, meta_kv: Sequence[str],
                     limit: int | None) -> Query:
    """Checkpoints newest first, each with its channel blobs and pending writes.

    `before` keeps checkpoints older than a checkpoint id; `cursor` (checkpoint id, key) pages on.
    Only the fragments for the filters given are added to the text; values stay parameters."""
    where: list[str] = []
    params: dict[str, Any] = {}
    match = f"MATCH (c:{CHECKPOINT})"
    if thread_key is not None:
        where.append("c.thread_key = $thread_key")
        params["thread_key"] = thread_key
    if checkpoint_ns is not None:
        where.append("c.checkpoint_ns = $checkpoint_ns")
        params["checkpoint_ns"] = checkpoint_ns
    if checkpoint_id is not None:
        where.append("c.checkpoint_id = $checkpoint_id")
        params["checkpoint_id"] = checkpoint_id
    if before is not None:
        where.append("c.checkpoint_id < $before")
        params["before"] = before
    if cursor is not None:
        where.append("(c.checkpoint_id < $cursor_id OR "
                     "(c.checkpoint_id = $cursor_id AND c.key < $cursor_key))")
        params["cursor_id"], params["cursor_key"] = cursor
    if meta_kv:
        where.append("all(kv IN $meta_kv WHERE kv IN c.meta_kv)")
        params["meta_kv"] = list(meta_kv)
    text = match + (" WHERE " + " AND ".join(where) if where else "")
    text += " WITH c ORDER BY c.checkpoint_id DESC, c.key DESC"
    if limit is not None:
        text += " LIMIT $limit"
        params["limit"] = limit
    return Query(text + _WITH_BLOBS_AND_WRITES, params, read_only=True)


def checkpoint_times(keys: Sequence[str]) -> Query:
    """When each checkpoint was taken (epoch ms), by checkpoint key."""
    return Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{key: k}}) RETURN c.key, c.taken_at",
                 {"keys": list(keys)}, read_only=True)


def latest_checkpoint_time(head_key: str) -> Query:
    return Query(f"MATCH (h:{HEAD} {{key: $hk}}) WITH h.latest_key AS latest "
                 f"MATCH (c:{CHECKPOINT} {{key: latest}}) RETURN c.taken_at", {"hk": head_key},
                 read_only=True)


def delete_thread(thread_key: str) -> list[Query]:
    return [Query(f"MATCH (n:{label} {{thread_key: $t}}) DELETE n", {"t": thread_key})
            for label in (WRITE, BLOB, CHECKPOINT, HEAD)]


def runs_threads(run_keys: Sequence[str]) -> Query:
    """(thread_key, namespace) pairs holding checkpoints of these runs."""
    return Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{run_key: k}}) "
                 "RETURN DISTINCT c.thread_key, c.checkpoint_ns", {"keys": list(run_keys)},
                 read_only=True)


def newest_outside_runs(thread_key: str, checkpoint_ns: str, run_keys: Sequence[str]) -> Query:
    """The newest checkpoint of a (thread, namespace) that none of these runs wrote."""
    return Query(f"MATCH (c:{CHECKPOINT} {{thread_key: $tk}}) WHERE c.checkpoint_ns = $ns AND "
                 "NOT coalesce(c.run_key, '') IN $keys "
                 "RETURN c.checkpoint_id, c.key ORDER BY c.checkpoint_id DESC LIMIT 1",
                 {"tk": thread_key, "ns": checkpoint_ns, "keys": list(run_keys)}, read_only=True)


def delete_runs(run_keys: Sequence[str]) -> list[Query]:
    """Checkpoints whose metadata names one of the runs, with their pending writes."""
    keys = {"keys": list(run_keys)}
    return [
        Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{run_key: k}}) "
              f"MATCH (w:{WRITE} {{cp_key: c.key}}) DELETE w", keys),
        Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{run_key: k}}) DELETE c", keys),
    ]


def prune_candidates(thread_keys: Sequence[str]) -> tuple[Query, Query, Query]:
    """What pruning these threads decides on: every checkpoint (thread, namespace, key, parent
    key, metadata, blob keys), every blob key, and each (thread, namespace) head's newest key."""
    keys = {"keys": list(thread_keys)}
    return (
        Query(f"UNWIND $keys AS t MATCH (c:{CHECKPOINT} {{thread_key: t}}) "
              "RETURN c.thread_key, c.checkpoint_ns, c.key, c.parent_id, c.thread_id, "
              "c.meta_type, c.meta, c.blob_keys", keys, read_only=True),
        Query(f"UNWIND $keys AS t MATCH (b:{BLOB} {{thread_key: t}}) RETURN b.key", keys,
              read_only=True),
        Query(f"UNWIND $keys AS t MATCH (h:{HEAD} {{thread_key: t}}) "
              "RETURN h.thread_key, h.checkpoint_ns, h.latest_key", keys, read_only=True),
    )


def delete_pruned(checkpoints: Sequence[str], blobs: Sequence[str]) -> list[Query]:
    """Delete checkpoints (with their pending writes) and blobs, by key."""
    return [
        Query(f"UNWIND $keys AS k MATCH (w:{WRITE} {{cp_key: k}}) DELETE w", {"keys": list(checkpoints)}),
        Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{key: k}}) DELETE c", {"keys": list(checkpoints)}),
        Query(f"UNWIND $keys AS k MATCH (b:{BLOB} {{key: k}}) DELETE b", {"keys": list(blobs)}),
    ]


def thread_nodes(thread_key: str) -> Query:
    """Every stored property of a thread's checkpoints, blobs and writes (for copy_thread)."""
    return Query(" UNION ALL ".join(
        f"MATCH (n:{label} {{thread_key: $t}}) RETURN '{label}' AS label, properties(n) AS props"
        for label in LABELS), {"t": thread_key}, read_only=True)


def create_nodes(label: str, rows: Sequence[Mapping[str, Any]]) -> Query:
    """Create nodes of one of this module's labels: rows of {key, props}."""
    assert label in LABELS
    return Query(f"UNWIND $rows AS r MERGE (n:{label} {{key: r.key}}) SET n += r.props", {"rows": rows})
