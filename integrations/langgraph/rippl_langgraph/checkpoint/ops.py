"""The checkpointer's operations as sans-IO generators, shared by the sync and async savers.

Each operation yields a `rippl_core.wire.Query` to read (and gets rows back) or a
`rippl_core.adapters.Commit` to write (applied atomically in MULTI/EXEC by the core drivers).

Values are serialised with the saver's serde (`dumps_typed`: a type tag and bytes) and stored as the
type tag plus the bytes in base64, in string properties of the graph nodes: the core's clients decode
replies as UTF-8, base64 keeps arbitrary bytes intact through the Cypher wire format, and keeping
blobs in the graph (rather than in side keys) means a checkpoint, its blobs and its writes are
written in one transaction and deleted by one query per label.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from rippl_core import InvalidInputError
from rippl_core.adapters import Batch, Commit, Op, now_ms
from rippl_langgraph.checkpoint import queries

PAGE = 64  # checkpoints fetched per round trip when listing


# json.dumps with these options, without building an encoder on every call
_KEY_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                                   allow_nan=False)


def key(*parts: Any) -> str:
    """A fixed-length node key for a tuple of ids (thread, namespace, checkpoint, ...)."""
    text = _KEY_JSON.encode(parts)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _canonical(value: Any) -> str | None:
    """Canonical JSON of a metadata value for exact-match filtering, or None if not JSON."""
    def norm(v: Any) -> Any:
        if isinstance(v, float) and math.isfinite(v) and v.is_integer():
            return int(v)
        if isinstance(v, Mapping):
            return {str(k): norm(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [norm(x) for x in v]
        return v
    try:
        return _CANONICAL_JSON.encode(norm(value))
    except (TypeError, ValueError):
        return None


def meta_kv(metadata: Mapping[str, Any]) -> list[str]:
    """The filterable form of metadata: one `key=<canonical json>` string per top-level key."""
    pairs = []
    for name, value in metadata.items():
        encoded = _canonical(value)
        if encoded is not None:
            pairs.append(f"{name}={encoded}")
    return pairs


def _taken_at(checkpoint: Mapping[str, Any]) -> int:
    try:
        return int(datetime.fromisoformat(str(checkpoint["ts"])).timestamp() * 1000)
    except (KeyError, ValueError, TypeError):
        return now_ms()


def thread_key(thread_id: str) -> str:
    return key("thread", thread_id)


def head_key(thread_id: str, checkpoint_ns: str) -> str:
    return head_key_of(thread_key(thread_id), checkpoint_ns)


def head_key_of(tkey: str, checkpoint_ns: str) -> str:
    """The key of the (thread, namespace) head, from the thread's key."""
    return key("head", tkey, checkpoint_ns)


def run_key(run_id: str) -> str:
    return key("run", run_id)


def clean(value: Any, what: str) -> str:
    """An id LangGraph hands us (thread, namespace, channel, task) as a string FalkorDB can take."""
    text = str(value)
    if "\x00" in text:
        raise InvalidInputError(f"{what} {text!r} contains a NUL character, which FalkorDB cannot "
                                "store; remove it")
    return text


def configurable(config: RunnableConfig | None) -> Mapping[str, Any]:
    if not config or not isinstance(config.get("configurable"), Mapping):
        raise InvalidInputError(
            "the config has no 'configurable' section; pass "
            "{'configurable': {'thread_id': ...}} as LangGraph does"
        )
    conf = config["configurable"]
    if conf.get("thread_id") is None:
        raise InvalidInputError("the config has no thread_id; pass {'configurable': {'thread_id': ...}}")
    return conf


def tuple_config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                             "checkpoint_id": checkpoint_id}}


@dataclass(frozen=True)
class Page:
    """One page of listed checkpoints and the cursor to the next."""

    tuples: list[CheckpointTuple]
    cursor: tuple[str, str] | None
    full: bool


class CheckpointOps:
    """The checkpointer's logic over a serde; the savers run these generators."""

    def __init__(self, serde: SerializerProtocol) -> None:
        self.serde = serde

    # -- codec ------------------------------------------------------------------------------
    def dump(self, value: Any) -> tuple[str, str]:
        type_, data = self.serde.dumps_typed(value)
        return type_, base64.b64encode(data).decode("ascii")

    def load(self, type_: str, data: str | None) -> Any:
        return self.serde.loads_typed((type_, base64.b64decode(data or "")))

    # -- writes -----------------------------------------------------------------------------
    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> Op[RunnableConfig]:
        conf = configurable(config)
        thread_id = clean(conf["thread_id"], "thread_id")
        checkpoint_ns = clean(conf.get("checkpoint_ns") or "", "checkpoint_ns")
        parent_id = conf.get("checkpoint_id")
        stored: dict[str, Any] = dict(checkpoint)
        tkey = thread_key(thread_id)
        values: dict[str, Any] = stored.pop("channel_values", None) or {}
        blobs = []
        for channel, version in new_versions.items():
            clean(channel, "channel")
            type_, data = self.dump(values[channel]) if channel in values else ("empty", "")
            blobs.append({"key": key(thread_id, checkpoint_ns, channel, version),
                          "props": {"thread_key": tkey, "thread_id": thread_id,
                                    "checkpoint_ns": checkpoint_ns, "channel": channel,
                                    "version": version, "type": type_, "data": data}})
        full_meta = get_checkpoint_metadata(config, metadata)
        type_, data = self.dump(stored)
        meta_type, meta = self.dump(full_meta)
        run_id = full_meta.get("run_id")
        props = {
            "thread_key": tkey, "thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": clean(checkpoint["id"], "checkpoint id"), "parent_id": parent_id,
            "type": type_, "data": data,
            "meta_type": meta_type, "meta": meta, "meta_kv": meta_kv(full_meta),
            "blob_keys": [key(thread_id, checkpoint_ns, ch, v)
                          for ch, v in checkpoint.get("channel_versions", {}).items()],
            "run_id": str(run_id) if run_id is not None else None,
            "run_key": run_key(str(run_id)) if run_id is not None else None,
            "taken_at": _taken_at(checkpoint), "recorded_at": now_ms(),
        }
        checkpoint_key = key(thread_id, checkpoint_ns, checkpoint["id"])
        # upserts only: a blind commit (no read needed), one transaction, one round trip
        yield Commit(queries.put_checkpoint(checkpoint_key, props, blobs,
                                            head_key(thread_id, checkpoint_ns)), blind=True)
        return tuple_config(thread_id, checkpoint_ns, checkpoint["id"])

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> Op[None]:
        conf = configurable(config)
        thread_id = clean(conf["thread_id"], "thread_id")
        checkpoint_ns = clean(conf.get("checkpoint_ns") or "", "checkpoint_ns")
        checkpoint_id = conf.get("checkpoint_id")
        task_id, task_path = clean(task_id, "task_id"), clean(task_path or "", "task_path")
        if checkpoint_id is None:
            raise InvalidInputError("put_writes needs the checkpoint_id of the checkpoint the writes follow")
        cp_key = key(thread_id, checkpoint_ns, checkpoint_id)
        regular: list[dict[str, Any]] = []
        special: list[dict[str, Any]] = []
        for position, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(clean(channel, "channel"), position)
            type_, data = self.dump(value)
            row = {"key": key(thread_id, checkpoint_ns, checkpoint_id, task_id, idx),
                   "props": {"cp_key": cp_key, "thread_key": thread_key(thread_id),
                             "thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                             "checkpoint_id": checkpoint_id, "task_id": task_id, "idx": idx,
                             "channel": channel, "type": type_, "data": data,
                             "task_path": task_path}}
            (special if idx < 0 else regular).append(row)
        commit = Commit(blind=True)
        if regular:
            commit.queries.append(queries.put_writes(regular, overwrite=False))
        if special:
            commit.queries.append(queries.put_writes(special, overwrite=True))
        if commit.queries:
            yield commit

    def delete_thread(self, thread_id: str) -> Op[None]:
        yield Commit(queries.delete_thread(thread_key(str(thread_id))), blind=True)

    def prune(self, thread_ids: Sequence[str], strategy: str) -> Op[None]:
        """`"delete"`: the threads' every checkpoint. `"keep_latest"`: each (thread, namespace)
        keeps its newest checkpoint, with its pending writes and the blobs it names, and the
        ancestors a `DeltaChannel` of it is rebuilt from: back to the checkpoint where each
        channel counted in its `counters_since_delta_snapshot` was last written in full."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInputError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or "
                                    "'delete'")
        tkeys = sorted({thread_key(clean(t, "thread_id")) for t in thread_ids})
        if not tkeys:
            return
        if strategy == "delete":
            yield Commit([q for t in tkeys for q in queries.delete_thread(t)])
            return
        rows, blob_rows, heads = yield Batch(*queries.prune_candidates(tkeys))
        found = {row[2]: row for row in rows}
        keep: set[str] = set()
        for _thread, ns, latest in heads:
            current, needed = found.get(latest), None
            while current is not None:
                keep.add(current[2])
                counters = self.load(current[5], current[6]).get("counters_since_delta_snapshot")
                needed = set(counters or ()) if needed is None else needed & set(counters or ())
                parent = current[3]
                if not needed or parent is None:
                    break
                current = found.get(key(current[4], ns, parent))
        doomed = [k for k in found if k not in keep]
        kept_blobs = {b for k in keep for b in found[k][7] or ()}
        blobs = [b for (b,) in blob_rows if b not in kept_blobs]
        if doomed or blobs:
            yield Commit(queries.delete_pruned(doomed, blobs))

    def delete_for_runs(self, run_ids: Sequence[str]) -> Op[None]:
        keys = [run_key(str(r)) for r in run_ids]
        if not keys:
            return
        pairs = yield queries.runs_threads(keys)
        moved, emptied = [], []
        for tkey, ns in pairs:  # heads whose checkpoints go: point them at the newest survivor
            survivor = yield queries.newest_outside_runs(tkey, ns, keys)
            hkey = head_key_of(tkey, ns)
            if survivor:
                moved.append({"key": hkey, "latest_id": survivor[0][0], "latest_key": survivor[0][1]})
            else:
                emptied.append(hkey)
        commit = Commit(queries.delete_runs(keys))
        if moved:
            commit.queries.append(queries.set_heads(moved))
        if emptied:
            commit.queries.append(queries.delete_heads(emptied))
        yield commit

    def copy_thread(self, source: str, target: str) -> Op[None]:
        """Copy every checkpoint (the whole parent chain), blob and write of a thread."""
        rows = yield queries.thread_nodes(thread_key(str(source)))
        if not rows:
            return
        by_label: dict[str, list[dict[str, Any]]] = {}
        for label, props in rows:
            props = {**props, "thread_id": str(target), "thread_key": thread_key(str(target))}
            ns = props.get("checkpoint_ns", "")
            if label == queries.CHECKPOINT:
                props["key"] = key(target, ns, props["checkpoint_id"])
                versions = self.load(props["type"], props["data"]).get("channel_versions", {})
                props["blob_keys"] = [key(target, ns, ch, v) for ch, v in versions.items()]
            elif label == queries.BLOB:
                props["key"] = key(target, ns, props["channel"], props["version"])
            elif label == queries.HEAD:
                props["key"] = head_key(str(target), ns)
                props["latest_key"] = key(target, ns, props["latest_id"])
            else:
                props["cp_key"] = key(target, ns, props["checkpoint_id"])
                props["key"] = key(target, ns, props["checkpoint_id"], props["task_id"], props["idx"])
            row_key = props.pop("key")
            by_label.setdefault(label, []).append({"key": row_key, "props": props})
        yield Commit([queries.create_nodes(label, chunk)
                      for label, items in by_label.items() for chunk in _chunks(items)])

    # -- reads ------------------------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> Op[CheckpointTuple | None]:
        """One checkpoint by id, or the newest through the (thread, namespace) head: indexed
        lookups, whatever the thread's length."""
        conf = configurable(config)
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns") or "")
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is not None:
            rows = yield queries.read_by_keys([key(thread_id, ns, checkpoint_id)])
        else:
            rows = yield queries.read_latest(head_key(thread_id, ns))
        return self._tuple(rows[0]) if rows else None

    def page(self, *, thread_id: str | None, checkpoint_ns: str | None = None,
             checkpoint_id: str | None = None, before: str | None = None,
             cursor: tuple[str, str] | None = None, filter: Mapping[str, Any] | None = None,
             limit: int | None = PAGE) -> Op[Page]:
        """One page of checkpoints, newest first; a filter value that is not JSON is compared
        after loading (so the page may hold fewer matches than `limit`)."""
        exact, loose = [], {}
        for name, value in (filter or {}).items():
            encoded = _canonical(value)
            if encoded is None:
                loose[name] = value
            else:
                exact.append(f"{name}={encoded}")
        rows = yield queries.read_checkpoints(
            thread_key=None if thread_id is None else thread_key(thread_id),
            checkpoint_ns=checkpoint_ns, checkpoint_id=checkpoint_id,
            before=before, cursor=cursor, meta_kv=exact, limit=limit)
        rows = sorted(rows, key=lambda r: (r[2], r[8]), reverse=True)
        tuples = []
        for row in rows:
            found = self._tuple(row)
            if all(found.metadata.get(k) == v for k, v in loose.items()):
                tuples.append(found)
        last = (rows[-1][2], rows[-1][8]) if rows else None
        return Page(tuples, last, limit is not None and len(rows) >= limit)

    def _tuple(self, row: Sequence[Any]) -> CheckpointTuple:
        (thread_id, checkpoint_ns, checkpoint_id, parent_id, type_, data, meta_type, meta, _key,
         blobs, writes) = row
        checkpoint: Checkpoint = self.load(type_, data)
        values = {channel: self.load(btype, bdata) for channel, btype, bdata in blobs
                  if btype != "empty"}
        ordered = sorted(writes, key=lambda w: writes_sort_key(w[5] or "", w[0], int(w[1])))
        return CheckpointTuple(
            config=tuple_config(thread_id, checkpoint_ns, checkpoint_id),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self.load(meta_type, meta),
            parent_config=(tuple_config(thread_id, checkpoint_ns, parent_id)
                           if parent_id else None),
            pending_writes=[(task_id, channel, self.load(wtype, wdata))
                            for task_id, _idx, channel, wtype, wdata, _path in ordered],
        )

    def taken_at(self, config: RunnableConfig) -> Op[int | None]:
        """When the checkpoint named by `config` was taken (epoch ms); the latest when no id."""
        conf = configurable(config)
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns") or "")
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is None:
            rows = yield queries.latest_checkpoint_time(head_key(thread_id, ns))
        else:
            rows = yield queries.checkpoint_times([key(thread_id, ns, checkpoint_id)])
            rows = [(r[1],) for r in rows]
        return int(rows[0][0]) if rows and rows[0][0] is not None else None


def _chunks[T](rows: Sequence[T], size: int = 500) -> list[Sequence[T]]:
    return [rows[i:i + size] for i in range(0, len(rows), size)]
