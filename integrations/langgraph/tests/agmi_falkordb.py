"""agmi (agent-memory-integrity) adapters for FalkorDBSaver on the embedded store.

agmi's at-rest attacks edit the store directly (here: Cypher on the checkpoint graph, bypassing the
saver, as someone holding the database would), then reopen the saver and ask it, the way LangGraph
resumes (`get` of the thread's newest checkpoint, then `list`), whether the store is still
trustworthy: an exception from either is a refusal. A record is a checkpoint of the attacked thread,
in id order; its content is the checkpoint node's payload and the blob of its `state` channel (what
the agent would resume believing), seeded through `FalkorDBSaver.put` like agmi's own SqliteSaver
adapter seeds SqliteSaver.

`FalkorDBAdapter` keeps nothing outside the database; `FalkorDBAnchoredAdapter` gives the saver a
`FileAnchor` in a folder the snapshot attack does not copy (the attacker holds the database's
files, not the anchor).
"""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from agmi.adapters.base import MemoryAdapter, Record
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from rippl_langgraph import FalkorDBSaver
from rippl_langgraph.checkpoint import queries
from rippl_langgraph.checkpoint.ops import key, meta_kv, thread_key

from rippl_core._runtime.wire import parse
from rippl_core.adapters import FileAnchor

THREAD, OTHER_THREAD = "agmi-thread", "agmi-thread-B"
SEED_TOKEN, OTHER_TOKEN = "agmi-seed-", "agmi-othr-"  # the same length: edits keep the encoding
GRAPH = "agmi"
# What an edit moves: a checkpoint's payload and seal, never its identity (key, id, thread).
PAYLOAD = ("type", "data", "meta_type", "meta", "meta_kv", "blob_keys", "seal", "bd")


class FalkorDBAdapter(MemoryAdapter):
    name = "rippl-falkordb"
    supports_replay = True
    supports_metadata = True
    supports_snapshot = True
    anchored = False

    def __init__(self) -> None:
        self._dir: Path | None = None
        self._saver: FalkorDBSaver | None = None

    # --- lifecycle ----------------------------------------------------------------------------
    @property
    def db(self) -> Path:
        assert self._dir is not None
        return self._dir / "store" / "rippl.db"

    def setup(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="agmi-rippl-"))
        self._open()

    def _open(self) -> None:
        anchor = FileAnchor(self._dir / "anchor" / "heads.jsonl") if self.anchored and self._dir \
            else None
        self._saver = FalkorDBSaver(path=self.db, graph=GRAPH, anchor=anchor)

    def _close(self) -> None:
        if self._saver is not None:
            self._saver.close()
            self._saver = None

    def teardown(self) -> None:
        self._close()
        self._wait_stopped()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def reload(self) -> None:
        self._close()
        self._open()

    @property
    def saver(self) -> FalkorDBSaver:
        assert self._saver is not None
        return self._saver

    def _cypher(self, text: str, params: dict[str, Any] | None = None) -> Any:
        from rippl_core.adapters import Query
        return self.saver.memory.redis.execute_command(
            "GRAPH.QUERY", self.saver.graph, Query(text, params or {}).command(), "--compact")

    def _rows(self, text: str, params: dict[str, Any]) -> list[Any]:
        return parse(self._cypher(text, params))

    # --- seeding through the saver ---------------------------------------------------------
    def _seed(self, thread: str, token: str, n: int) -> None:
        config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        checkpoint, version = empty_checkpoint(), None
        for i in range(n):
            checkpoint = create_checkpoint(checkpoint, None, i)
            version = self.saver.get_next_version(version, None)
            checkpoint["channel_values"] = {"state": f"{token}{i}"}
            checkpoint["channel_versions"] = {"state": version}
            config = self.saver.put(config, checkpoint, {"source": "loop", "step": i, "writes": {}},
                                    {"state": version})

    def seed(self, n: int) -> None:
        self._seed(THREAD, SEED_TOKEN, n)

    def seed_other(self, n: int) -> None:
        self._seed(OTHER_THREAD, OTHER_TOKEN, n)

    # --- the raw store -----------------------------------------------------------------------
    def _read(self, thread: str) -> list[Record]:
        rows = self._rows(
            f"MATCH (c:{queries.CHECKPOINT} {{thread_key: $t}}) "
            f"OPTIONAL MATCH (b:{queries.BLOB} {{key: c.blob_keys[0]}}) "
            "RETURN properties(c), b.data ORDER BY c.checkpoint_id", {"t": thread_key(thread)})
        return [Record(seq=i, fields={**props, "state": blob}) for i, (props, blob) in
                enumerate(rows)]

    def read_all_raw(self) -> list[Record]:
        return self._read(THREAD)

    def read_other_raw(self) -> list[Record]:
        return self._read(OTHER_THREAD)

    def _key_at(self, seq: int) -> str | None:
        records = self.read_all_raw()
        return records[seq].fields["key"] if seq < len(records) else None

    def _write_payload(self, target: str, fields: dict[str, Any]) -> None:
        payload = {name: fields.get(name) for name in PAYLOAD}
        self._cypher(f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) SET c += $p", {"k": target, "p": payload})
        if fields.get("blob_keys") and fields.get("state") is not None:
            self._cypher(f"MATCH (b:{queries.BLOB} {{key: $k}}) SET b.data = $d",
                         {"k": fields["blob_keys"][0], "d": fields["state"]})

    def write_raw(self, record: Record) -> None:
        """The record's payload onto the checkpoint at its position; past the tail, a new
        checkpoint node (as a forger who knows the layout would add one)."""
        target = self._key_at(record.seq)
        if target is not None:
            self._write_payload(target, record.fields)
            return
        props = {k: v for k, v in record.fields.items() if k != "state"}
        ns = props.get("checkpoint_ns", "")
        props["key"] = key(THREAD, ns, props["checkpoint_id"])
        props["parent_key"] = key(THREAD, ns, props["parent_id"])
        blob = key(THREAD, ns, "state", "forged", props["checkpoint_id"])
        props["blob_keys"] = [blob]
        self._cypher(f"CREATE (b:{queries.BLOB}) SET b = $p", {"p": {
            "key": blob, "thread_key": thread_key(THREAD), "thread_id": THREAD,
            "checkpoint_ns": ns, "channel": "state", "version": "forged", "type": "msgpack",
            "data": record.fields["state"]}})
        self._cypher(f"CREATE (c:{queries.CHECKPOINT}) SET c = $p", {"p": props})

    def delete_raw(self, seq: int) -> None:
        target = self._key_at(seq)
        if target is None:
            return
        self._cypher(f"MATCH (w:{queries.WRITE} {{cp_key: $k}}) DELETE w", {"k": target})
        self._cypher(f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) DELETE c", {"k": target})

    # --- content, identity, owner ----------------------------------------------------------------
    def mutate_payload(self, record: Record) -> Record:
        """Change what the agent would resume believing: the seed token in the state blob,
        same length, so the blob still decodes."""
        state = base64.b64decode(record.fields["state"])
        for i in range(100):
            token = f"{SEED_TOKEN}{i}".encode()
            if token in state:
                record.fields["state"] = base64.b64encode(
                    state.replace(token, f"agmi-TAMP-{i}".encode(), 1)).decode()
                return record
        raise RuntimeError("seed token not found in the state blob")

    def forge_record(self, template: Record) -> Record:
        """A plausible new tip: a later id, the old tip as parent, the payload copied and
        altered (its blob is a new one, so the genuine tip keeps its own)."""
        forged = Record(seq=template.seq + 1, fields=dict(template.fields))
        head, _, tail = str(template.fields["checkpoint_id"]).rpartition("-")
        forged.fields["checkpoint_id"] = f"{head}-{int(tail, 16) + 1:012x}"
        forged.fields["parent_id"] = template.fields["checkpoint_id"]
        return self.mutate_payload(forged)

    def identity_of(self, record: Record) -> str:
        return str(record.fields["checkpoint_id"])

    def payload_of(self, record: Record) -> str:
        return json.dumps([record.fields.get(name) for name in ("type", "data")]
                          + [record.fields.get("state")])

    def owner_of(self, record: Record) -> str | None:
        return str(record.fields["thread_id"])

    # --- replay and metadata ----------------------------------------------------------------
    def replay_onto(self, victim_seq: int, donor: Record) -> None:
        target = self._key_at(victim_seq)
        if target is None:
            raise RuntimeError("no victim checkpoint at that position")
        self._write_payload(target, {name: donor.fields.get(name) for name in PAYLOAD})

    def read_meta(self, seq: int) -> dict[str, Any]:
        fields = self.read_all_raw()[seq].fields
        loaded: dict[str, Any] = self.saver.serde.loads_typed(
            (fields["meta_type"], base64.b64decode(fields["meta"])))
        return loaded

    def write_meta(self, seq: int, meta: dict[str, Any]) -> None:
        target = self._key_at(seq)
        if target is None:
            raise RuntimeError("no checkpoint at that position")
        type_, data = self.saver.serde.dumps_typed(meta)
        self._cypher(f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) "
                     "SET c.meta_type = $t, c.meta = $m, c.meta_kv = $kv",
                     {"k": target, "t": type_, "m": base64.b64encode(data).decode(),
                      "kv": meta_kv(meta)})

    # --- the whole store: its files on disk ----------------------------------------------------
    def _wait_stopped(self, timeout: float = 30.0) -> None:
        """Until the embedded server of the store has stopped (its files are then complete)."""
        registry = self.db.with_name(self.db.name + ".server")
        try:
            pid = int(json.loads(registry.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    return
            except psutil.NoSuchProcess:
                return
            time.sleep(0.05)
        raise RuntimeError(f"the embedded server (pid {pid}) did not stop")

    def snapshot_store(self) -> object:
        self._close()
        self._wait_stopped()
        copy = Path(tempfile.mkdtemp(prefix="agmi-snap-")) / "store"
        shutil.copytree(self.db.parent, copy)
        self._open()
        return copy

    def restore_store(self, token: object) -> None:
        assert isinstance(token, Path)
        self._close()
        self._wait_stopped()
        shutil.rmtree(self.db.parent)
        shutil.copytree(token, self.db.parent)
        shutil.rmtree(token.parent, ignore_errors=True)
        self._open()

    def append_genuine(self) -> None:
        self.reload()
        latest = self.saver.get_tuple({"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}})
        assert latest is not None
        checkpoint = create_checkpoint(latest.checkpoint, None, 99)
        version = self.saver.get_next_version(latest.checkpoint["channel_versions"]["state"], None)
        checkpoint["channel_values"] = {"state": f"{SEED_TOKEN}late"}
        checkpoint["channel_versions"] = {"state": version}
        self.saver.put(latest.config, checkpoint, {"source": "loop", "step": 99, "writes": {}},
                       {"state": version})

    # --- the saver's own answer ------------------------------------------------------------
    def verify(self) -> bool:
        config: Any = {"configurable": {"thread_id": THREAD}}
        self.verify_detail = None
        try:
            if self.saver.get(config) is None:
                self.verify_detail = "get() returned no checkpoint"
                return False
            list(self.saver.list(config))
            return True
        except Exception as exc:  # agmi scores any refusal; the tests check its type
            self.verify_detail = f"{type(exc).__name__}: {exc}"[:240]
            self.last_error = exc
            return False


class FalkorDBAnchoredAdapter(FalkorDBAdapter):
    """The same saver with a `FileAnchor` kept outside the database's folder."""

    name = "rippl-falkordb+anchor"
    anchored = True
