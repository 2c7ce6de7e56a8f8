"""Every Cypher text the FalkorDB checkpointer sends. Labels come from this module only; every value
(thread ids, namespaces, blobs) is a parameter.

Layout, in the tenant's companion graph "checkpoints" (key `rippl:{<tenant>}:checkpoints:graph`):

    (:Checkpoint {key, thread_key, thread_id, checkpoint_ns, checkpoint_id, parent_id, type, data,
                  meta_type, meta, meta_kv, blob_keys, run_key, run_id, taken_at, recorded_at,
                  parent_key, head_key, seal, base, base_sig})
    (:CheckpointBlob {key, thread_key, thread_id, checkpoint_ns, channel, version, type, data})
    (:CheckpointWrite {key, cp_key, thread_key, thread_id, checkpoint_ns, checkpoint_id, task_id,
                       idx, channel, type, data, task_path})
    (:CheckpointWrites {key (= the checkpoint's key), thread_key, chain})   the manifest of its
                                                                writes, their seal, signature
    (:CheckpointHead {key, thread_key, thread_id, checkpoint_ns, latest_id, latest_key, seal})
                                                 the newest, per (thread, namespace)

The chain (digests, signatures, what a read verifies) is `rippl_core.adapters.checkpoints`.

A checkpoint stores the channel versions it sees as `blob_keys` (one blob per channel version, as
langgraph's own savers do), so a read is one round trip of indexed lookups.

Every indexed property is a fixed-length hex digest (`*key`), never a caller's string: FalkorDB's
range index does not find strings that are empty or end in white space or control characters
(`MATCH (n:T) WHERE n.v = ' '` misses with an index on T.v, finds without), and thread ids are
caller strings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rippl_core.adapters import Query
from rippl_core.adapters import checkpoints as chain

CHECKPOINT, BLOB, WRITE, WRITES, HEAD = (chain.CHECKPOINT, chain.BLOB, chain.WRITE, chain.WRITES,
                                         chain.HEAD)
LABELS = chain.LABELS
SCHEMA = chain.SCHEMA
read_latest: Callable[[str], Query] = chain.read_latest
read_by_keys: Callable[..., Query] = chain.read_by_keys


def put_checkpoint(key: str, props: Mapping[str, Any], blobs: Sequence[Mapping[str, Any]],
                   head_key: str, head: Mapping[str, Any]) -> list[Query]:
    """A checkpoint with its new channel blobs (rows of {key, props}), and its (thread,
    namespace) head pointed at it if it is the newest (`head`: the head's digest and signature of
    it; the last statement returns the head's newest id if it moved): statements sent together
    in one transaction. Reading the latest checkpoint is then two indexed lookups whatever the thread's
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
        "h.latest_id = $props.checkpoint_id "
        "WITH h WHERE h.latest_id <= $props.checkpoint_id SET h += $head, h.latest_key = $key "
        "RETURN h.latest_id",
        {"key": key, "props": props, "hk": head_key, "head": head})
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
    """Re-point heads: rows of {key, props: {latest_id, latest_key, seal, thread_id}}."""
    return Query(f"UNWIND $rows AS r MATCH (h:{HEAD} {{key: r.key}}) SET h += r.props",
                 {"rows": rows})


def set_bases(rows: Sequence[Mapping[str, Any]]) -> Query:
    """Mark checkpoints whose parent Rippl deletes as where their chain begins: rows of {key,
    props: {base, base_sig}}."""
    return Query(f"UNWIND $rows AS r MATCH (c:{CHECKPOINT} {{key: r.key}}) SET c += r.props",
                 {"rows": rows})


def run_checkpoints(run_keys: Sequence[str]) -> Query:
    """The keys of the checkpoints these runs wrote."""
    return Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{run_key: k}}) RETURN c.key",
                 {"keys": list(run_keys)}, read_only=True)


def orphaned_children(thread_keys: Sequence[str], doomed: Sequence[str]) -> Query:
    """The checkpoints of these threads that survive a deletion of `doomed` but lose their
    parent to it: (key, digest)."""
    return Query(f"UNWIND $tks AS t MATCH (c:{CHECKPOINT} {{thread_key: t}}) "
                 "WHERE c.parent_key IN $doomed AND NOT c.key IN $doomed RETURN c.key, c.seal",
                 {"tks": list(thread_keys), "doomed": list(doomed)}, read_only=True)


def delete_heads(keys: Sequence[str]) -> Query:
    return Query(f"UNWIND $keys AS k MATCH (h:{HEAD} {{key: k}}) DELETE h", {"keys": list(keys)})


def read_write_set(cp_key: str) -> Query:
    """The manifest and seal of a checkpoint's pending writes."""
    return Query(f"MATCH (s:{WRITES} {{key: $k}}) RETURN s.chain", {"k": cp_key},
                 read_only=True)


def put_writes(cp_key: str, write_set: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> Query:
    """Pending writes (rows of {key, props}) with the new manifest and seal of the checkpoint's
    writes (committed under WATCH of the manifest read: see `CheckpointOps.put_writes`)."""
    return Query(
        f"MERGE (t:{WRITES} {{key: $k}}) SET t += $set "
        f"FOREACH (r IN $rows | MERGE (w:{WRITE} {{key: r.key}}) SET w += r.props)",
        {"k": cp_key, "set": write_set, "rows": list(rows)})


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
    return chain.rows_after(text, params)


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
            for label in (WRITE, WRITES, BLOB, CHECKPOINT, HEAD)]


def runs_threads(run_keys: Sequence[str]) -> Query:
    """(thread_key, namespace, thread_id) of the threads holding checkpoints of these runs."""
    return Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{run_key: k}}) "
                 "RETURN DISTINCT c.thread_key, c.checkpoint_ns, c.thread_id",
                 {"keys": list(run_keys)}, read_only=True)


def blobs_by_version(thread_key: str, checkpoint_ns: str, pairs: Sequence[tuple[str, Any]]) -> Query:
    """The stored blobs of these (channel, version) pairs of a (thread, namespace): key,
    thread id, namespace, channel, version, type, data."""
    return Query(f"UNWIND $pairs AS p MATCH (b:{BLOB} {{thread_key: $tk}}) "
                 "WHERE b.checkpoint_ns = $ns AND b.channel = p[0] AND b.version = p[1] "
                 "RETURN b.key, b.thread_id, b.checkpoint_ns, b.channel, b.version, b.type, b.data",
                 {"tk": thread_key, "ns": checkpoint_ns, "pairs": [list(p) for p in pairs]},
                 read_only=True)


def newest_outside_runs(thread_key: str, checkpoint_ns: str, run_keys: Sequence[str]) -> Query:
    """The newest checkpoint of a (thread, namespace) that none of these runs wrote."""
    return Query(f"MATCH (c:{CHECKPOINT} {{thread_key: $tk}}) WHERE c.checkpoint_ns = $ns AND "
                 "NOT coalesce(c.run_key, '') IN $keys "
                 "RETURN c.checkpoint_id, c.key, c.seal ORDER BY c.checkpoint_id DESC LIMIT 1",
                 {"tk": thread_key, "ns": checkpoint_ns, "keys": list(run_keys)}, read_only=True)


def delete_runs(run_keys: Sequence[str]) -> list[Query]:
    """Checkpoints whose metadata names one of the runs, with their pending writes."""
    keys = {"keys": list(run_keys)}
    return [
        Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{run_key: k}}) "
              f"MATCH (w:{WRITE} {{cp_key: c.key}}) DELETE w", keys),
        Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{run_key: k}}) "
              f"MATCH (s:{WRITES} {{key: c.key}}) DELETE s", keys),
        Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{run_key: k}}) DELETE c", keys),
    ]


def prune_candidates(thread_keys: Sequence[str]) -> tuple[Query, Query, Query]:
    """What pruning these threads decides on: every checkpoint (thread, namespace, key, parent
    key, metadata, blob keys), every blob key, and each (thread, namespace) head's newest key."""
    keys = {"keys": list(thread_keys)}
    return (
        Query(f"UNWIND $keys AS t MATCH (c:{CHECKPOINT} {{thread_key: t}}) "
              "RETURN c.thread_key, c.checkpoint_ns, c.key, c.parent_id, c.thread_id, "
              "c.meta_type, c.meta, c.blob_keys, c.seal", keys, read_only=True),
        Query(f"UNWIND $keys AS t MATCH (b:{BLOB} {{thread_key: t}}) RETURN b.key", keys,
              read_only=True),
        Query(f"UNWIND $keys AS t MATCH (h:{HEAD} {{thread_key: t}}) "
              "RETURN h.thread_key, h.checkpoint_ns, h.latest_key", keys, read_only=True),
    )


def delete_pruned(checkpoints: Sequence[str], blobs: Sequence[str]) -> list[Query]:
    """Delete checkpoints (with their pending writes) and blobs, by key."""
    return [
        Query(f"UNWIND $keys AS k MATCH (w:{WRITE} {{cp_key: k}}) DELETE w", {"keys": list(checkpoints)}),
        Query(f"UNWIND $keys AS k MATCH (s:{WRITES} {{key: k}}) DELETE s", {"keys": list(checkpoints)}),
        Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{key: k}}) DELETE c", {"keys": list(checkpoints)}),
        Query(f"UNWIND $keys AS k MATCH (b:{BLOB} {{key: k}}) DELETE b", {"keys": list(blobs)}),
    ]


def thread_nodes(thread_key: str) -> Query:
    """Every stored property of a thread's checkpoints, blobs, writes and heads (copy_thread)."""
    return Query(" UNION ALL ".join(
        f"MATCH (n:{label} {{thread_key: $t}}) RETURN '{label}' AS label, properties(n) AS props"
        for label in LABELS), {"t": thread_key}, read_only=True)


def create_nodes(label: str, rows: Sequence[Mapping[str, Any]]) -> Query:
    """Create nodes of one of this module's labels: rows of {key, props}."""
    assert label in LABELS
    return Query(f"UNWIND $rows AS r MERGE (n:{label} {{key: r.key}}) SET n += r.props", {"rows": rows})
