"""The checkpointer's operations as sans-IO generators, shared by the sync and async savers.

Each operation yields a `rippl_core.wire.Query` to read (and gets rows back) or a
`rippl_core.adapters.Commit` to write (applied atomically in MULTI/EXEC by the core drivers).

Every checkpoint is chained and sealed as it is written, and every read verifies what it returns
(`rippl_core.adapters.checkpoints`): a checkpoint that does not verify is refused with
`CheckpointIntegrityError`, never served.

Values are serialised with the saver's serde (`dumps_typed`: a type tag and bytes) and stored as the
type tag plus the bytes in base64, in string properties of the graph nodes: the core's clients decode
replies as UTF-8, base64 keeps arbitrary bytes intact through the Cypher wire format, and keeping
blobs in the graph (rather than in side keys) means a checkpoint, its blobs and its writes are
written in one transaction and deleted by one query per label.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Mapping, Sequence
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

from rippl_core import CheckpointIntegrityError, InvalidInputError
from rippl_core.adapters import Batch, ChainPolicy, Commit, Head, Op, now_ms
from rippl_core.adapters import checkpoints as chain
from rippl_langgraph.checkpoint import queries

PAGE = 64  # checkpoints fetched per round trip when listing


_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                                   allow_nan=False)
key: Callable[..., str] = chain.key
thread_key: Callable[[str], str] = chain.thread_key
head_key: Callable[[str, str], str] = chain.head_key
head_key_of: Callable[[str, str], str] = chain.head_key_of


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
    """The checkpointer's logic over a serde, a chain policy (keys, anchor) and a digest cache;
    the savers run these generators."""

    serde: SerializerProtocol
    policy: ChainPolicy
    cache: chain.DigestCache

    def __init__(self, serde: SerializerProtocol, policy: ChainPolicy | None = None,
                 cache: chain.DigestCache | None = None) -> None:
        self.serde = serde
        self.policy = policy if policy is not None else ChainPolicy()
        self.cache = cache if cache is not None else chain.DigestCache()

    # -- codec ------------------------------------------------------------------------------
    def dump(self, value: Any) -> tuple[str, str]:
        type_, data = self.serde.dumps_typed(value)
        return type_, base64.b64encode(data).decode("ascii")

    def load(self, type_: str, data: str | None) -> Any:
        return self.serde.loads_typed((type_, base64.b64decode(data or "")))

    # -- writes -----------------------------------------------------------------------------
    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> Op[RunnableConfig]:
        """A checkpoint, its new blobs and its head in one transaction, chained onto its parent's
        digest (from the cache of what this process wrote or verified; else the parent is read
        and verified first: a put never chains onto a parent that does not verify)."""
        conf = configurable(config)
        thread_id = clean(conf["thread_id"], "thread_id")
        checkpoint_ns = clean(conf.get("checkpoint_ns") or "", "checkpoint_ns")
        raw_parent = conf.get("checkpoint_id")
        parent_id = None if raw_parent is None else clean(raw_parent, "checkpoint id")
        checkpoint_id = clean(checkpoint["id"], "checkpoint id")
        stored: dict[str, Any] = dict(checkpoint)
        tkey = thread_key(thread_id)
        values: dict[str, Any] = stored.pop("channel_values", None) or {}
        blobs: list[dict[str, Any]] = []
        written: dict[Any, tuple[str, str]] = {}
        for channel, version in new_versions.items():
            clean(channel, "channel")
            type_, data = self.dump(values[channel]) if channel in values else ("empty", "")
            digest = chain.blob_digest(thread_id, checkpoint_ns, channel, version, type_, data)
            blob_key = key(thread_id, checkpoint_ns, channel, version, digest)
            written[(channel, version)] = (blob_key, digest)
            blobs.append({"key": blob_key,
                          "props": {"thread_key": tkey, "thread_id": thread_id,
                                    "checkpoint_ns": checkpoint_ns, "channel": channel,
                                    "version": version, "type": type_, "data": data}})
        versions = list(checkpoint.get("channel_versions", {}).items())
        parent_key = None if parent_id is None else key(thread_id, checkpoint_ns, parent_id)
        known = None if parent_key is None else self.cache.get(parent_key)
        resolved = {**(known[1] if known else {}), **written}
        missing = [pair for pair in versions if pair not in resolved]
        pdigest = chain.NO_PARENT if parent_key is None else known[0] if known else ""
        if (parent_key is not None and known is None) or missing:
            found_digest, found = yield from self._chain_onto(
                parent_key if known is None else None, tkey, checkpoint_ns, missing)
            if parent_key is not None and known is None:
                pdigest = found_digest
            resolved = {**found, **resolved}
        blob_keys = [resolved[pair][0] if pair in resolved else key(thread_id, checkpoint_ns, *pair)
                     for pair in versions]
        bd = [resolved[pair][1] if pair in resolved else chain.NO_BLOB for pair in versions]
        full_meta = get_checkpoint_metadata(config, metadata)
        type_, data = self.dump(stored)
        meta_type, meta = self.dump(full_meta)
        digest = chain.checkpoint_digest(
            thread_id=thread_id, checkpoint_ns=checkpoint_ns, checkpoint_id=checkpoint_id,
            parent_id=parent_id, pdigest=pdigest, type_=type_, data=data, meta_type=meta_type,
            meta=meta, blob_keys=blob_keys, blob_digests=bd, chained=True)
        run_id = full_meta.get("run_id")
        hkey = head_key(thread_id, checkpoint_ns)
        props = {
            "thread_key": tkey, "thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id, "parent_id": parent_id, "parent_key": parent_key,
            "head_key": hkey, "type": type_, "data": data,
            "meta_type": meta_type, "meta": meta, "meta_kv": meta_kv(full_meta),
            "blob_keys": blob_keys,
            "seal": chain.pack_seal(digest, pdigest, True, self.policy.sign(digest)), "bd": bd,
            "base": None, "base_sig": None,
            "run_id": str(run_id) if run_id is not None else None,
            "run_key": run_key(str(run_id)) if run_id is not None else None,
            "taken_at": _taken_at(checkpoint), "recorded_at": now_ms(),
        }
        head = {"thread_id": thread_id, "latest_id": checkpoint_id,
                "seal": chain.pack_head(digest, self.policy.sign(
                    chain.head_digest(thread_id, checkpoint_ns, checkpoint_id, digest)))}
        checkpoint_key = key(thread_id, checkpoint_ns, checkpoint_id)
        # upserts only: a blind commit (no read needed), one transaction, one round trip
        replies = yield Commit(queries.put_checkpoint(checkpoint_key, props, blobs, hkey, head),
                               blind=True)
        self.cache.put(checkpoint_key, digest,
                       {pair: resolved[pair] for pair in versions if pair in resolved})
        if replies and replies[-1] and self.policy.anchor is not None:  # the head moved
            self.policy.anchor.advance(Head(thread_id, checkpoint_ns, checkpoint_id, digest))
        return tuple_config(thread_id, checkpoint_ns, checkpoint_id)

    def _chain_onto(self, parent_key: str | None, tkey: str, checkpoint_ns: str,
                    missing: Sequence[tuple[str, Any]]
                    ) -> Op[tuple[str, dict[Any, tuple[str, str]]]]:
        """The digest of the parent (read and verified), and the blob of each channel version
        the checkpoint names that neither this put writes nor the parent names (read): what a
        put chains onto when its cache does not know."""
        reads = []
        if parent_key is not None:
            reads.append(chain.read_by_keys([parent_key]))
        if missing:
            reads.append(queries.blobs_by_version(tkey, checkpoint_ns, missing))
        replies = list((yield Batch(*reads)))
        pdigest, found = chain.PARENT_NOT_STORED, {}
        if parent_key is not None:
            rows = replies.pop(0)
            if rows:
                parent = chain.StoredCheckpoint.of(rows[0])
                lenient = ChainPolicy(self.policy.signing_key, self.policy.trusted_keys, True)
                problems = chain.verify(parent, lenient)
                if problems:
                    raise chain.integrity_error(parent, problems)
                assert parent.digest is not None
                pdigest = parent.digest
                found = _blob_map(parent)
                self.cache.put(parent.key, parent.digest, dict(found))
        if missing:
            for bkey, thread_id, ns, channel, version, type_, data in replies.pop(0):
                found.setdefault((channel, version), (bkey, chain.blob_digest(
                    thread_id, ns, channel, version, type_, data)))
        return pdigest, found

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> Op[None]:
        """Pending writes, sealed: each write's digest joins the manifest of its checkpoint's
        writes, whose seal (and signature) is replaced in the same transaction. A write
        operation (run with `write=True`): the manifest is read under WATCH, so concurrent
        writers of one checkpoint's writes (parallel tasks) are serialised, the loser re-run."""
        conf = configurable(config)
        thread_id = clean(conf["thread_id"], "thread_id")
        checkpoint_ns = clean(conf.get("checkpoint_ns") or "", "checkpoint_ns")
        raw_id = conf.get("checkpoint_id")
        task_id, task_path = clean(task_id, "task_id"), clean(task_path or "", "task_path")
        if raw_id is None:
            raise InvalidInputError("put_writes needs the checkpoint_id of the checkpoint the writes follow")
        checkpoint_id = clean(raw_id, "checkpoint id")
        cp_key = key(thread_id, checkpoint_ns, checkpoint_id)
        rows: list[tuple[bool, dict[str, Any], str]] = []  # (special channel?, {key, props}, digest)
        for position, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(clean(channel, "channel"), position)
            type_, data = self.dump(value)
            digest = chain.write_digest(thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
                                        channel, type_, data, task_path)
            row = {"key": key(thread_id, checkpoint_ns, checkpoint_id, task_id, idx),
                   "props": {"cp_key": cp_key, "thread_key": thread_key(thread_id),
                             "thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                             "checkpoint_id": checkpoint_id, "task_id": task_id, "idx": idx,
                             "channel": channel, "type": type_, "data": data,
                             "task_path": task_path}}
            rows.append((idx < 0, row, digest))
        if not rows:
            return
        found = yield queries.read_write_set(cp_key)  # under WATCH: the saver runs this as a write
        current = chain.unpack_writes(found[0][0] if found else None)
        manifest: dict[str, str] = dict(e.rsplit(":", 1) for e in current[0]) if current else {}
        changed: dict[str, dict[str, Any]] = {}
        for special, write, digest in rows:
            write_key: str = write["key"]
            if special or write_key not in manifest:  # regular writes: the first one stays
                manifest[write_key] = digest
                changed[write_key] = write
        if not changed:
            return
        entries = sorted(f"{k}:{d}" for k, d in manifest.items())
        seal = chain.writes_seal(thread_id, checkpoint_ns, checkpoint_id, entries)
        write_set = {"thread_key": thread_key(thread_id),
                     "chain": chain.pack_writes(entries, seal, self.policy.sign(seal))}
        yield Commit([queries.put_writes(cp_key, write_set, list(changed.values()))])

    def delete_thread(self, thread_id: str) -> Op[None]:
        self.cache.clear()  # what Rippl deletes is not chained onto from the cache
        yield Commit(queries.delete_thread(thread_key(str(thread_id))), blind=True)
        if self.policy.anchor is not None:
            self.policy.anchor.forget(str(thread_id))

    def prune(self, thread_ids: Sequence[str], strategy: str) -> Op[None]:
        """`"delete"`: the threads' every checkpoint. `"keep_latest"`: each (thread, namespace)
        keeps its newest checkpoint, with its pending writes and the blobs it names, and the
        ancestors a `DeltaChannel` of it is rebuilt from: back to the checkpoint where each
        channel counted in its `counters_since_delta_snapshot` was last written in full. The
        oldest kept checkpoint is marked as where its chain now begins."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInputError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or "
                                    "'delete'")
        tkeys = sorted({thread_key(clean(t, "thread_id")) for t in thread_ids})
        if not tkeys:
            return
        self.cache.clear()
        if strategy == "delete":
            yield Commit([q for t in tkeys for q in queries.delete_thread(t)])
            if self.policy.anchor is not None:
                for thread_id in thread_ids:
                    self.policy.anchor.forget(str(thread_id))
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
        bases = self._bases([found[k] for k in keep
                             if found[k][3] is not None and key(found[k][4], found[k][1],
                                                                 found[k][3]) in doomed])
        if doomed or blobs:
            commit = Commit(queries.delete_pruned(doomed, blobs))
            if bases:
                commit.queries.append(queries.set_bases(bases))
            yield commit

    def _bases(self, rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
        """The marks of where the chain begins, for checkpoints whose parent Rippl deletes (rows
        whose key is at [2] and seal at [8], or (key, seal) pairs)."""
        marks = []
        for row in rows:
            ckey, seal = (row[2], row[8]) if len(row) > 2 else (row[0], row[1])
            digest = chain.seal_digest(seal)
            if digest is None:
                continue
            mark = chain.base_mark(digest)
            signed = self.policy.sign(mark)
            marks.append({"key": ckey, "props": {"base": mark, "base_sig": signed.get("sig")}})
        return marks

    def delete_for_runs(self, run_ids: Sequence[str]) -> Op[None]:
        keys = [run_key(str(r)) for r in run_ids]
        if not keys:
            return
        self.cache.clear()
        pairs = yield queries.runs_threads(keys)
        doomed = [k for (k,) in (yield queries.run_checkpoints(keys))]
        orphans = yield queries.orphaned_children(sorted({p[0] for p in pairs}), doomed)
        moved, emptied, anchored = [], [], []
        for tkey, ns, thread_id in pairs:  # heads whose checkpoints go: the newest survivor
            survivor = yield queries.newest_outside_runs(tkey, ns, keys)
            hkey = head_key_of(tkey, ns)
            if survivor:
                latest_id, latest_key, seal = survivor[0]
                digest = chain.seal_digest(seal) or ""
                signed = self.policy.sign(chain.head_digest(thread_id, ns, latest_id, digest))
                moved.append({"key": hkey, "props": {
                    "latest_id": latest_id, "latest_key": latest_key,
                    "seal": chain.pack_head(digest, signed), "thread_id": thread_id}})
                anchored.append(Head(thread_id, ns, latest_id, digest))
            else:
                emptied.append(hkey)
                anchored.append(Head(thread_id, ns, "", ""))
        commit = Commit(queries.delete_runs(keys))
        if moved:
            commit.queries.append(queries.set_heads(moved))
        if emptied:
            commit.queries.append(queries.delete_heads(emptied))
        if bases := self._bases(orphans):
            commit.queries.append(queries.set_bases(bases))
        yield commit
        if self.policy.anchor is not None:
            for head in anchored:
                self.policy.anchor.advance(head)

    def copy_thread(self, source: str, target: str) -> Op[None]:
        """Copy every checkpoint (the whole parent chain), blob and write of a thread, resealed
        for the target thread (a digest covers its thread). The source is verified first: a
        thread that does not verify is not copied."""
        source, target = str(source), str(target)
        report = yield from chain.verify_store(
            ChainPolicy(self.policy.signing_key, self.policy.trusted_keys, True),
            thread_id=source)
        if report.problems:
            first = report.problems[0]
            raise chain.integrity_error(None, [p.problem for p in report.problems
                                               if p.checkpoint_id == first.checkpoint_id],
                                        thread_id=first.thread_id,
                                        checkpoint_ns=first.checkpoint_ns,
                                        checkpoint_id=first.checkpoint_id)
        rows = yield queries.thread_nodes(thread_key(source))
        if not rows:
            return
        copy = _Copy(self, target)
        for label, props in rows:
            copy.add(label, props)
        yield Commit([queries.create_nodes(label, chunk)
                      for label, items in copy.resealed().items() for chunk in _chunks(items)])
        if self.policy.anchor is not None:
            for head in copy.heads:
                self.policy.anchor.advance(head)

    # -- reads ------------------------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> Op[CheckpointTuple | None]:
        """One checkpoint by id, or the newest through the (thread, namespace) head: indexed
        lookups, whatever the thread's length. What it returns is verified."""
        conf = configurable(config)
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns") or "")
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is not None:
            rows = yield chain.read_by_keys([key(thread_id, ns, checkpoint_id)])
            return (yield from self._one(rows[0])) if rows else None
        hkey = head_key(thread_id, ns)
        rows = yield chain.read_latest(hkey)
        if rows:
            return (yield from self._one(rows[0], latest=True))
        # no checkpoint through the head: a new thread, or one whose newest checkpoint is gone
        ((latest_id, count),) = yield chain.head_and_any(hkey, thread_key(thread_id), ns)
        if latest_id is not None:
            problems = [f"its head names checkpoint {latest_id} as the newest, and it is missing: "
                        "the newest checkpoints were deleted outside Rippl"]
        elif count:
            problems = ["it holds checkpoints but its head is missing (deleted outside Rippl)"]
        else:
            problems = chain.anchor_problems(self.policy, None, thread_id=thread_id,
                                             checkpoint_ns=ns)
        if problems:
            raise chain.integrity_error(None, problems, thread_id=thread_id, checkpoint_ns=ns,
                                        checkpoint_id=latest_id)
        return None

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
            if exact and not set(exact) <= set(meta_kv(found.metadata)):
                raise chain.integrity_error(chain.StoredCheckpoint.of(row), [
                    "its filterable metadata (meta_kv) does not match its sealed metadata: edited"])
            if all(found.metadata.get(k) == v for k, v in loose.items()):
                tuples.append(found)
        last = (rows[-1][2], rows[-1][8]) if rows else None
        return Page(tuples, last, limit is not None and len(rows) >= limit)

    def _one(self, row: Sequence[Any], *, latest: bool = False) -> Op[CheckpointTuple]:
        """`_tuple` of a checkpoint read alone (its blob digests recomputed, not read); when it
        does not verify, it is read again with everything a precise report needs (the blob
        digests it recorded, its parent), so the error names each problem."""
        try:
            return self._tuple(row, latest=latest)
        except CheckpointIntegrityError:
            detail = yield chain.read_by_keys([row[8]], links=True)
            if detail:
                stored = chain.StoredCheckpoint.of(detail[0])
                if problems := chain.verify(stored, self.policy, latest=latest):
                    raise chain.integrity_error(stored, problems) from None
            raise

    def _tuple(self, row: Sequence[Any], *, latest: bool = False) -> CheckpointTuple:
        """The CheckpointTuple of a stored row, verified first (`CheckpointIntegrityError`
        instead of a checkpoint that does not verify)."""
        stored = chain.StoredCheckpoint.of(row)
        problems = chain.verify(stored, self.policy, latest=latest)
        if problems:
            raise chain.integrity_error(stored, problems)
        assert stored.digest is not None
        self.cache.put(stored.key, stored.digest, _blob_map(stored))
        checkpoint: Checkpoint = self.load(stored.type, stored.data)
        values = {channel: self.load(btype, bdata)
                  for channel, _version, btype, bdata in stored.blobs.values() if btype != "empty"}
        ordered = sorted(stored.writes, key=lambda w: writes_sort_key(w[6], w[1], w[2]))
        return CheckpointTuple(
            config=tuple_config(stored.thread_id, stored.checkpoint_ns, stored.checkpoint_id),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self.load(stored.meta_type, stored.meta),
            parent_config=(tuple_config(stored.thread_id, stored.checkpoint_ns, stored.parent_id)
                           if stored.parent_id else None),
            pending_writes=[(task_id, channel, self.load(wtype, wdata))
                            for _key, task_id, _idx, channel, wtype, wdata, _path in ordered],
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


class _Copy:
    """A thread's stored nodes copied to another thread, resealed: every digest covers its
    thread, so each blob, checkpoint (parents first), write set and head of the copy gets its own,
    and the copy's chain mirrors the source's."""

    def __init__(self, ops: CheckpointOps, target: str) -> None:
        self.ops, self.target, self.tkey = ops, target, thread_key(target)
        self.nodes: dict[str, list[dict[str, Any]]] = {label: [] for label in queries.LABELS}
        self.heads: list[Head] = []

    def add(self, label: str, props: Mapping[str, Any]) -> None:
        self.nodes[label].append({**props, "thread_id": self.target, "thread_key": self.tkey})

    def resealed(self) -> dict[str, list[dict[str, Any]]]:
        target, policy = self.target, self.ops.policy
        out: dict[str, list[dict[str, Any]]] = {label: [] for label in queries.LABELS}
        blobs: dict[str, tuple[str, str]] = {}  # the source key -> the copy's key and digest
        for props in self.nodes[queries.BLOB]:
            ns = props.get("checkpoint_ns", "")
            digest = chain.blob_digest(target, ns, props["channel"], props["version"],
                                       props["type"], props.get("data"))
            row_key = key(target, ns, props["channel"], props["version"], digest)
            blobs[props["key"]] = (row_key, digest)
            out[queries.BLOB].append({"key": row_key, "props": _without(props, "key")})
        digests: dict[str, str] = {}
        copied = {(p.get("checkpoint_ns", ""), p["checkpoint_id"])
                  for p in self.nodes[queries.CHECKPOINT]}
        for props in sorted(self.nodes[queries.CHECKPOINT],
                            key=lambda p: (p.get("checkpoint_ns", ""), p["checkpoint_id"])):
            ns, checkpoint_id, parent_id = (props.get("checkpoint_ns", ""), props["checkpoint_id"],
                                            props.get("parent_id"))
            source_keys = props.get("blob_keys") or []
            sealed = chain.unpack_seal(props.get("seal"))
            recorded = [str(b) for b in props.get("bd") or []]
            blob_keys = [blobs[k][0] if k in blobs else key(target, ns, "missing", k)
                         for k in source_keys]
            bd = [blobs[k][1] if k in blobs and i < len(recorded) and recorded[i] != chain.NO_BLOB
                  else chain.NO_BLOB for i, k in enumerate(source_keys)]
            if parent_id is None:
                pdigest = chain.NO_PARENT
            elif (ns, parent_id) in copied:
                pdigest = digests[key(target, ns, parent_id)] if sealed and sealed[1] != \
                    chain.PARENT_NOT_STORED else chain.PARENT_NOT_STORED
            else:
                pdigest = chain.PARENT_NOT_STORED
            chained = sealed[2] if sealed else True
            digest = chain.checkpoint_digest(
                thread_id=target, checkpoint_ns=ns, checkpoint_id=checkpoint_id,
                parent_id=parent_id, pdigest=pdigest, type_=props["type"], data=props.get("data"),
                meta_type=props["meta_type"], meta=props.get("meta"), blob_keys=blob_keys,
                blob_digests=bd, chained=chained)
            row_key = key(target, ns, checkpoint_id)
            digests[row_key] = digest
            out[queries.CHECKPOINT].append({"key": row_key, "props": {
                **_without(props, "key", "base", "base_sig"),
                "blob_keys": blob_keys,
                "seal": chain.pack_seal(digest, pdigest, chained, policy.sign(digest)), "bd": bd,
                "parent_key": None if parent_id is None else key(target, ns, parent_id),
                "head_key": head_key(target, ns)}})
        manifests: dict[str, dict[str, str]] = {}
        for props in self.nodes[queries.WRITE]:
            ns, checkpoint_id = props.get("checkpoint_ns", ""), props["checkpoint_id"]
            cp_key = key(target, ns, checkpoint_id)
            row_key = key(target, ns, checkpoint_id, props["task_id"], props["idx"])
            manifests.setdefault(cp_key, {})[row_key] = chain.write_digest(
                target, ns, checkpoint_id, props["task_id"], int(props["idx"]), props["channel"],
                props["type"], props.get("data"), props.get("task_path"))
            out[queries.WRITE].append({"key": row_key,
                                       "props": {**_without(props, "key"), "cp_key": cp_key}})
        for props in self.nodes[queries.WRITES]:
            source_cp = self.nodes_by_key().get(props["key"])
            if source_cp is None:
                continue
            ns, checkpoint_id = source_cp.get("checkpoint_ns", ""), source_cp["checkpoint_id"]
            cp_key = key(target, ns, checkpoint_id)
            entries = sorted(f"{k}:{d}" for k, d in manifests.get(cp_key, {}).items())
            seal = chain.writes_seal(target, ns, checkpoint_id, entries)
            out[queries.WRITES].append({"key": cp_key, "props": {
                "thread_key": self.tkey, "chain": chain.pack_writes(entries, seal,
                                                                    policy.sign(seal))}})
        for props in self.nodes[queries.HEAD]:
            ns = props.get("checkpoint_ns", "")
            latest_id = props["latest_id"]
            latest_key = key(target, ns, latest_id)
            digest = digests.get(latest_key, "")
            self.heads.append(Head(target, ns, latest_id, digest))
            out[queries.HEAD].append({"key": head_key(target, ns), "props": {
                **_without(props, "key"), "latest_key": latest_key,
                "seal": chain.pack_head(digest, policy.sign(
                    chain.head_digest(target, ns, latest_id, digest)))}})
        return out

    def nodes_by_key(self) -> dict[str, Mapping[str, Any]]:
        """The source checkpoints by their (source) key."""
        return {p["key"]: p for p in self.nodes[queries.CHECKPOINT]}


def _without(props: Mapping[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in props.items() if k not in names}


def _blob_map(stored: chain.StoredCheckpoint) -> dict[Any, tuple[str, str]]:
    """The blob of each (channel, version) a verified checkpoint names: (key, digest)."""
    return {(found[0], found[1]): (blob_key, stored.blob_digest_of(blob_key))
            for blob_key, found in stored.blobs.items()}
