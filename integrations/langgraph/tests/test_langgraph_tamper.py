"""Checkpoints that notice tampering: a graph never resumes from a state nobody wrote.

The store is edited the way someone holding the database would (Cypher on the checkpoint graph,
bypassing the saver); every read the graph resumes through (`get_tuple`, `list`, sync and async)
must refuse what no saver wrote, with `CheckpointIntegrityError` naming the thread and the
checkpoint. agmi's at-rest attacks run against the embedded store (`agmi_falkordb`)."""

from __future__ import annotations

import base64
import json
import operator
import uuid
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from agmi.attacks.at_rest import AT_REST_ATTACKS_WITH_SNAPSHOT
from agmi.check import verdict
from agmi_falkordb import FalkorDBAdapter, FalkorDBAnchoredAdapter
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from rippl_langgraph import AsyncFalkorDBSaver, FalkorDBSaver
from rippl_langgraph.checkpoint import queries
from rippl_langgraph.checkpoint.ops import key, thread_key

from rippl_core import AsyncRippl, CheckpointIntegrityError, Rippl
from rippl_core.adapters import FileAnchor, Head, Query, verify_checkpoints
from rippl_core.adapters import checkpoints as chain
from rippl_core.review.receipts import public_hex

ASYNC = pytest.mark.asyncio(loop_scope="session")


def cypher(saver: FalkorDBSaver | AsyncFalkorDBSaver, handle: Rippl, text: str,
           **params: Any) -> Any:
    """A raw query on the checkpoint graph, as an attacker holding the database sends it."""
    return handle.redis.execute_command("GRAPH.QUERY", saver.graph, Query(text, params).command(),
                                        "--compact")


def seed(saver: FalkorDBSaver, thread: str, n: int, *, ns: str = "") -> list[dict[str, Any]]:
    """n checkpoints of a thread, each with a new version of its `state` channel."""
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
    checkpoint, version, stored = empty_checkpoint(), None, []
    for i in range(n):
        checkpoint = create_checkpoint(checkpoint, None, i)
        version = saver.get_next_version(version, None)
        checkpoint["channel_values"] = {"state": f"value-{i}"}
        checkpoint["channel_versions"] = {"state": version}
        config = saver.put(config, checkpoint, {"source": "loop", "step": i}, {"state": version})
        stored.append(config)
    return stored


def latest(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def refused(saver: FalkorDBSaver, config: Any) -> CheckpointIntegrityError:
    """The integrity error a read of `config` raises (get_tuple, then list)."""
    with pytest.raises(CheckpointIntegrityError) as caught:
        saver.get_tuple(config)
    with pytest.raises(CheckpointIntegrityError):
        list(saver.list({"configurable": {"thread_id": config["configurable"]["thread_id"]}}))
    return caught.value


# ------------------------------------------------------------------------------ agmi attacks


def test_agmi_every_at_rest_attack_is_rejected_on_read() -> None:
    """agmi 0.6.3's nine at-rest attacks: every one REJECTED (refused on read, with
    CheckpointIntegrityError) with an anchor outside the database; without one, the whole-store
    rollback is honestly ACCEPTED (every byte of the older copy is genuine) and the rest REJECTED."""
    verdicts: dict[str, dict[str, str]] = {}
    for adapter in (FalkorDBAdapter(), FalkorDBAnchoredAdapter()):
        verdicts[adapter.name] = {}
        for attack in AT_REST_ATTACKS_WITH_SNAPSHOT:
            result = attack().run(adapter)
            verdicts[adapter.name][attack.name] = verdict(result, adapter)
            if result.detected:
                assert "CheckpointIntegrityError" in result.detail, (attack.name, result.detail)
    names = [attack.name for attack in AT_REST_ATTACKS_WITH_SNAPSHOT]
    assert verdicts["rippl-falkordb+anchor"] == dict.fromkeys(names, "REJECTED")
    assert verdicts["rippl-falkordb"] == {**dict.fromkeys(names, "REJECTED"),
                                          "snapshot_rollback": "ACCEPTED"}


# -------------------------------------------------------------------------- the resume path


class Review(TypedDict):
    log: Annotated[list[str], operator.add]


def review_graph(ran: list[str]) -> StateGraph:
    """read -> (a human approves, interrupt) -> act: the act rests on what read put in the state."""
    def read(state: Review) -> dict[str, list[str]]:
        return {"log": ["shard 09: degraded"]}

    def approve(state: Review) -> dict[str, list[str]]:
        answer = interrupt("migrate onto shard 09?")
        return {"log": [f"approved: {answer}"]}

    def act(state: Review) -> dict[str, list[str]]:
        ran.append(state["log"][0])
        return {"log": ["migrated"]}

    builder = StateGraph(Review)
    builder.add_node("read", read)
    builder.add_node("approve", approve)
    builder.add_node("act", act)
    builder.add_edge(START, "read")
    builder.add_edge("read", "approve")
    builder.add_edge("approve", "act")
    builder.add_edge("act", END)
    return builder


def forge_reading(saver: FalkorDBSaver | AsyncFalkorDBSaver, handle: Rippl, thread: str) -> None:
    """Rewrite what the paused thread read ("degraded" -> "healthy!") in its stored state, in
    place, keeping the encoding valid: what an attacker with the database would do."""
    found = cypher(saver, handle, f"MATCH (b:{queries.BLOB} {{thread_key: $t}}) "
                   "RETURN b.key, b.data", t=thread_key(thread))
    edited = 0
    for (_, blob_key), (_, data) in found[1]:
        raw = base64.b64decode(data or "")
        if b"degraded" in raw:
            cypher(saver, handle, f"MATCH (b:{queries.BLOB} {{key: $k}}) SET b.data = $d",
                   k=blob_key, d=base64.b64encode(raw.replace(b"degraded", b"healthy!")).decode())
            edited += 1
    assert edited


def test_a_graph_does_not_resume_from_a_tampered_checkpoint(rippl: Rippl,
                                                            saver: FalkorDBSaver) -> None:
    ran: list[str] = []
    app = review_graph(ran).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "paused"}}
    app.invoke({"log": []}, config)
    assert app.get_state(config).next == ("approve",)
    forge_reading(saver, rippl, "paused")

    resumed = review_graph(ran).compile(checkpointer=FalkorDBSaver(rippl))  # as after a restart
    with pytest.raises(CheckpointIntegrityError) as caught:
        resumed.invoke(Command(resume="yes"), config)
    assert caught.value.thread_id == "paused" and caught.value.checkpoint_id
    assert "paused" in str(caught.value) and caught.value.checkpoint_id in str(caught.value)
    assert any("blob of channel 'log'" in p and "edited" in p for p in caught.value.problems)
    assert ran == []  # the act that rested on the forged reading never ran


@ASYNC
async def test_an_async_graph_does_not_resume_from_a_tampered_checkpoint(
        rippl: Rippl, arippl: AsyncRippl) -> None:
    ran: list[str] = []
    saver = AsyncFalkorDBSaver(arippl)
    app = review_graph(ran).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": f"paused-{uuid.uuid4().hex[:6]}"}}
    try:
        await app.ainvoke({"log": []}, config)
        forge_reading(saver, rippl, config["configurable"]["thread_id"])
        resumed = review_graph(ran).compile(checkpointer=AsyncFalkorDBSaver(arippl))
        with pytest.raises(CheckpointIntegrityError):
            await resumed.ainvoke(Command(resume="yes"), config)
        with pytest.raises(CheckpointIntegrityError):
            [t async for t in saver.alist(config)]
        assert ran == []
    finally:
        await saver.adrop()


# --------------------------------------------------------------------- what a read checks


def test_an_untouched_store_verifies_and_serves(saver: FalkorDBSaver, rippl: Rippl) -> None:
    stored = seed(saver, "t", 4)
    saver.put_writes(stored[-1], [("state", "pending"), ("__interrupt__", "ask")], "task-1")
    found = FalkorDBSaver(rippl).get_tuple(latest("t"))  # another saver: an empty digest cache
    assert found is not None and found.checkpoint["channel_values"] == {"state": "value-3"}
    assert sorted(found.pending_writes or []) == [("task-1", "__interrupt__", "ask"),
                                                  ("task-1", "state", "pending")]
    assert len(list(FalkorDBSaver(rippl).list(latest("t")))) == 4
    report = saver.verify()
    assert report.ok and report.checkpoints == 4 and report.threads == 1 and not report.problems


def _in_seal(index: int, value: Any) -> Any:
    """An edit of one field kept in a checkpoint's seal (digest, parent digest, blob digests,
    chained)."""
    def edit(seal: str) -> str:
        import json
        fields = json.loads(seal)
        fields[index] = value
        return json.dumps(fields)
    return edit


# Each edit of one stored field of a checkpoint, as an attacker would make it.
EDITS = {
    "data": ("data", lambda v: v[:-4] + "AAA="),
    "meta": ("meta", lambda v: v[:-4] + "AAA="),
    "type": ("type", lambda v: "json"),
    "parent_id": ("parent_id", lambda v: (v or "1f1f0000-0000-6000-8000-000000000000")[:-1] + "0"),
    "blob_keys": ("blob_keys", lambda v: [key("x")]),
    "digest": ("seal", _in_seal(0, "0" * 64)),
    "pdigest": ("seal", _in_seal(1, "0" * 64)),
    "chained": ("seal", _in_seal(2, False)),
    "blob digests": ("bd", lambda v: ["0" * 64]),
}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(sorted(EDITS)), position=st.integers(0, 3))
def test_an_edit_of_any_sealed_field_is_refused(saver: FalkorDBSaver, rippl: Rippl, field: str,
                                                position: int) -> None:
    thread = f"edit-{uuid.uuid4().hex[:8]}"
    stored = seed(saver, thread, 4)
    target = stored[position]["configurable"]["checkpoint_id"]
    ckey = key(thread, "", target)
    prop, edit = EDITS[field]
    rows = cypher(saver, rippl, f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) RETURN c.{prop}",
                  k=ckey)[1]
    value = rows[0][0][1] if prop not in ("blob_keys", "bd") else None
    cypher(saver, rippl, f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) SET c.{prop} = $v",
           k=ckey, v=edit(value))
    fresh = FalkorDBSaver(rippl)
    if prop == "bd":  # what get_tuple serves is unchanged (it recomputes them from the blobs)
        assert fresh.get_tuple(stored[position]) is not None
        with pytest.raises(CheckpointIntegrityError) as caught:
            list(fresh.list(latest(thread)))
        error = caught.value
    else:
        error = refused(fresh, stored[position])
    assert error.checkpoint_id == target and error.thread_id == thread
    assert any("does not match its digest" in p for p in error.problems), error.problems
    assert not saver.verify(thread).ok


def test_the_newest_checkpoints_deleted_with_the_head_left(saver: FalkorDBSaver,
                                                          rippl: Rippl) -> None:
    stored = seed(saver, "t", 3)
    newest = stored[-1]["configurable"]["checkpoint_id"]
    cypher(saver, rippl, f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) DELETE c",
           k=key("t", "", newest))
    with pytest.raises(CheckpointIntegrityError, match=r"its head names checkpoint .* missing"):
        saver.get_tuple(latest("t"))
    assert any(p.checkpoint_id == newest for p in saver.verify("t").problems)


def test_a_deleted_head_and_a_head_moved_back(saver: FalkorDBSaver, rippl: Rippl) -> None:
    stored = seed(saver, "t", 3)
    hkey = chain.head_key("t", "")
    older = stored[1]["configurable"]["checkpoint_id"]
    cypher(saver, rippl, f"MATCH (h:{queries.HEAD} {{key: $k}}) SET h.latest_id = $i, "
           "h.latest_key = $l", k=hkey, i=older, l=key("t", "", older))
    with pytest.raises(CheckpointIntegrityError, match="another checkpoint or digest"):
        saver.get_tuple(latest("t"))
    with pytest.raises(CheckpointIntegrityError, match="newer than the thread's head"):
        list(saver.list(latest("t")))
    cypher(saver, rippl, f"MATCH (h:{queries.HEAD} {{key: $k}}) DELETE h", k=hkey)
    with pytest.raises(CheckpointIntegrityError, match="head is missing"):
        saver.get_tuple(latest("t"))


def test_pending_writes_edited_deleted_or_forged(saver: FalkorDBSaver, rippl: Rippl) -> None:
    for case in ("edit", "delete", "forge", "manifest"):
        thread = f"writes-{case}"
        stored = seed(saver, thread, 2)
        saver.put_writes(stored[-1], [("state", "a"), ("state", "b")], "task-1")
        cp_key = key(thread, "", stored[-1]["configurable"]["checkpoint_id"])
        if case == "edit":
            cypher(saver, rippl, f"MATCH (w:{queries.WRITE} {{cp_key: $k}}) WITH w LIMIT 1 "
                   "SET w.data = $d", k=cp_key, d=saver.serde.dumps_typed("forged")[1].hex())
            words = "was edited"
        elif case == "delete":
            cypher(saver, rippl, f"MATCH (w:{queries.WRITE} {{cp_key: $k}}) WITH w LIMIT 1 "
                   "DELETE w", k=cp_key)
            words = "missing (deleted)"
        elif case == "forge":
            cypher(saver, rippl, f"MATCH (w:{queries.WRITE} {{cp_key: $k}}) WITH w LIMIT 1 "
                   f"CREATE (f:{queries.WRITE}) SET f = properties(w), f.key = $f, f.idx = 7",
                   k=cp_key, f=key("forged"))
            words = "never sealed"
        else:
            chain_text = cypher(saver, rippl, f"MATCH (s:{queries.WRITES} {{key: $k}}) "
                                "RETURN s.chain", k=cp_key)[1][0][0][1]
            manifest, seal, sig, pub = json.loads(chain_text)
            cypher(saver, rippl, f"MATCH (s:{queries.WRITES} {{key: $k}}) SET s.chain = $c",
                   k=cp_key, c=json.dumps([manifest[:1], seal, sig, pub]))
            words = "manifest of its pending writes"
        error = refused(saver, latest(thread))
        assert any(words in p for p in error.problems), (case, error.problems)


def test_legitimate_deletions_keep_the_chain_verifying(saver: FalkorDBSaver) -> None:
    """prune, delete_for_runs and copy_thread remove or reseal checkpoints through Rippl: what
    they leave verifies (the oldest kept checkpoint is marked as where its chain begins)."""
    seed(saver, "pruned", 5)
    saver.prune(["pruned"])
    assert len(list(saver.list(latest("pruned")))) == 1 and saver.verify("pruned").ok
    config: Any = {"configurable": {"thread_id": "runs", "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    for run in ("r1", "r2", "r1"):
        checkpoint = create_checkpoint(checkpoint, None, 0)
        config = saver.put(config, checkpoint, {"run_id": run, "step": 0}, {})
    saver.delete_for_runs(["r2"])  # the last checkpoint survives its deleted parent
    assert len(list(saver.list(latest("runs")))) == 2 and saver.verify("runs").ok
    seed(saver, "source", 3)
    saver.copy_thread("source", "copy")
    assert [t.checkpoint["channel_values"] for t in saver.list(latest("copy"))] == \
        [{"state": f"value-{i}"} for i in (2, 1, 0)]
    assert saver.verify().ok


def test_a_tampered_thread_is_not_copied(saver: FalkorDBSaver, rippl: Rippl) -> None:
    stored = seed(saver, "src", 2)
    cypher(saver, rippl, f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) SET c.meta = 'x'",
           k=key("src", "", stored[0]["configurable"]["checkpoint_id"]))
    with pytest.raises(CheckpointIntegrityError):
        saver.copy_thread("src", "dst")
    assert saver.get_tuple(latest("dst")) is None


# ------------------------------------------------------------------------------- signatures


def test_signed_checkpoints_resist_a_writer_who_knows_the_scheme(saver: FalkorDBSaver,
                                                                 rippl: Rippl) -> None:
    """Without keys, a writer who recomputes the digests after an edit is not caught (the
    boundary docs/design.md states); with a signing key and trusted_keys, the re-sealed
    checkpoint is refused, and so is one signed by another key."""
    key_ = Ed25519PrivateKey.generate()
    trusted = [public_hex(key_.public_key())]
    signer = FalkorDBSaver(rippl, signing_key=key_, trusted_keys=trusted)
    stored = seed(signer, "signed", 2)
    assert signer.get_tuple(latest("signed")) is not None and signer.verify("signed").ok

    def reseal(thread: str, *, signing: Ed25519PrivateKey | None) -> None:
        """Edit the newest checkpoint's metadata and recompute its digest and its head's, as a
        writer who knows the scheme would (signing with their own key, if given)."""
        row = cypher(signer, rippl, f"MATCH (c:{queries.CHECKPOINT} {{thread_key: $t}}) "
                     "RETURN properties(c) ORDER BY c.checkpoint_id DESC LIMIT 1",
                     t=thread_key(thread))
        from rippl_core._runtime.wire import parse
        props = parse(row)[0][0]
        meta = base64.b64encode(signer.serde.dumps_typed({"source": "forged", "step": 9})[1]).decode()
        _, pdigest, _, _, _ = json.loads(props["seal"])
        bd = props["bd"]
        digest = chain.checkpoint_digest(
            thread_id=thread, checkpoint_ns="", checkpoint_id=props["checkpoint_id"],
            parent_id=props.get("parent_id"), pdigest=pdigest, type_=props["type"],
            data=props["data"], meta_type=props["meta_type"], meta=meta,
            blob_keys=props["blob_keys"], blob_digests=bd, chained=True)
        sig = {} if signing is None else {
            "sig": signing.sign(digest.encode()).hex(), "pub": public_hex(signing.public_key())}
        cypher(signer, rippl, f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) "
               "SET c.meta = $m, c.seal = $s", k=props["key"], m=meta,
               s=chain.pack_seal(digest, pdigest, True, sig))
        cypher(signer, rippl, f"MATCH (h:{queries.HEAD} {{key: $k}}) SET h.seal = $s",
               k=chain.head_key(thread, ""), s=chain.pack_head(digest, {}))

    reseal("signed", signing=None)
    with pytest.raises(CheckpointIntegrityError, match="not signed"):
        signer.get_tuple(latest("signed"))
    reseal("signed", signing=Ed25519PrivateKey.generate())
    with pytest.raises(CheckpointIntegrityError, match="not among trusted_keys"):
        signer.get_tuple(latest("signed"))

    plain = FalkorDBSaver(rippl)
    seed(plain, "unsigned", 2)
    reseal("unsigned", signing=None)
    assert plain.get_tuple(latest("unsigned")).metadata["source"] == "forged"  # the boundary
    assert stored


def test_a_signing_key_that_its_own_trusted_keys_would_refuse(rippl: Rippl) -> None:
    from rippl_core import InvalidInputError
    with pytest.raises(InvalidInputError, match="not among trusted_keys"):
        FalkorDBSaver(rippl, signing_key=Ed25519PrivateKey.generate(),
                      trusted_keys=[public_hex(Ed25519PrivateKey.generate().public_key())])


# ---------------------------------------------------------------------- anchors and heads


def test_an_anchor_catches_a_store_rolled_back(saver: FalkorDBSaver, rippl: Rippl,
                                               tmp_path: Path) -> None:
    """An older copy of a thread (its newest checkpoint and head removed together, every digest
    left genuine) passes the chain; the head kept outside the database does not agree."""
    anchor = FileAnchor(tmp_path / "heads.jsonl")
    anchored = FalkorDBSaver(rippl, anchor=anchor)
    stored = seed(anchored, "t", 3)
    newest = stored[-1]["configurable"]["checkpoint_id"]
    assert anchor.expected("t", "") == Head("t", "", newest, anchor.expected("t", "").digest)
    before = FileAnchor(tmp_path / "heads.jsonl").expected("t", "")  # another process's view
    assert before is not None and before.checkpoint_id == newest

    older = stored[1]["configurable"]["checkpoint_id"]
    parent_seal = cypher(saver, rippl, f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) "
                         "RETURN c.seal", k=key("t", "", older))[1][0][0][1]
    cypher(saver, rippl, f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) DELETE c",
           k=key("t", "", newest))
    cypher(saver, rippl, f"MATCH (h:{queries.HEAD} {{key: $k}}) SET h.latest_id = $i, "
           "h.latest_key = $l, h.seal = $s", k=chain.head_key("t", ""), i=older,
           l=key("t", "", older), s=chain.pack_head(chain.seal_digest(parent_seal) or "", {}))
    assert FalkorDBSaver(rippl).get_tuple(latest("t")) is not None  # no anchor: not noticed
    with pytest.raises(CheckpointIntegrityError, match="older than its anchor"):
        FalkorDBSaver(rippl, anchor=FileAnchor(tmp_path / "heads.jsonl")).get_tuple(latest("t"))
    report = verify_checkpoints(rippl, anchor=FileAnchor(tmp_path / "heads.jsonl"))
    assert not report.ok and any("older than its anchor" in p.problem for p in report.problems)
    anchored.delete_thread("t")  # a deletion through Rippl is not a rollback
    assert FalkorDBSaver(rippl, anchor=FileAnchor(tmp_path / "heads.jsonl")).get_tuple(
        latest("t")) is None


def test_the_digest_of_every_head(saver: FalkorDBSaver) -> None:
    """It moves when any thread moves, and a verify against an older value fails: what the
    receipt log's anchored head covers."""
    seed(saver, "a", 2)
    seed(saver, "b", 1)
    first = saver.heads_digest()
    assert first == saver.heads_digest() == saver.verify().heads_digest
    assert saver.verify(expected_heads_digest=first).ok
    seed(saver, "b", 1)  # b's first checkpoint again: a new id, so b's head moves
    assert saver.heads_digest() != first
    report = saver.verify(expected_heads_digest=first)
    assert not report.ok and "every head differs" in report.problems[0].problem


# -------------------------------------------------------------------------------- migration


def test_a_store_written_before_the_chain_is_sealed_once_and_reported(saver: FalkorDBSaver,
                                                                      rippl: Rippl) -> None:
    """A store of the earlier layout (no digests, schema marker 1) is sealed when a saver first
    opens it: its checkpoints are unchained (refused by default, served with
    accept_unchained=True, reported by verify), an edit after the migration is caught, and new
    checkpoints chain onto them."""
    stored = seed(saver, "old", 3)
    saver.put_writes(stored[-1], [("state", "w")], "task")
    cypher(saver, rippl, f"MATCH (c:{queries.CHECKPOINT}) REMOVE c.seal, c.bd, c.parent_key, "
           "c.head_key")
    cypher(saver, rippl, f"MATCH (s:{queries.WRITES}) DELETE s")
    cypher(saver, rippl, f"MATCH (h:{queries.HEAD}) REMOVE h.seal, h.thread_id")
    rippl.redis.set(saver._store.keys.schema, "1")

    migrated = FalkorDBSaver(rippl)
    with pytest.raises(CheckpointIntegrityError, match="unchained"):
        migrated.get_tuple(latest("old"))
    report = migrated.verify()
    assert not report.ok and not report.problems and len(report.unchained) == 3
    accepting = FalkorDBSaver(rippl, accept_unchained=True)
    found = accepting.get_tuple(latest("old"))
    assert found is not None and found.pending_writes == [("task", "state", "w")]
    following = create_checkpoint(found.checkpoint, None, 3)
    config = accepting.put(found.config, following, {"source": "loop", "step": 3}, {})
    assert FalkorDBSaver(rippl).get_tuple(config) is not None  # chained: served by default
    cypher(saver, rippl, f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) SET c.meta = 'x'",
           k=key("old", "", stored[0]["configurable"]["checkpoint_id"]))
    assert any(p.checkpoint_id == stored[0]["configurable"]["checkpoint_id"]
               for p in FalkorDBSaver(rippl).verify().problems)


# ---------------------------------------------------------------------------------- the CLI


def test_rippl_checkpoints_verify(tmp_path: Path) -> None:
    """`rippl checkpoints verify [--thread]` checks the store without LangGraph: exit 0 when it
    verifies, 1 naming the thread, the checkpoint and the problem when it does not."""
    from typer.testing import CliRunner

    from rippl_core.cli import app

    db = tmp_path / "rippl.db"
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(app, ["--db", str(db), "--graph", "ops", "checkpoints", *args])

    with FalkorDBSaver(path=db, graph="ops") as saver:
        stored = seed(saver, "t1", 3)
        seed(saver, "t2", 2)
        ok = run("verify")
        assert ok.exit_code == 0 and "5 checkpoints of 2 threads verify" in ok.output, ok.output
        digest = run("heads-digest")
        assert digest.exit_code == 0 and digest.output.strip() == saver.heads_digest()
        target = stored[1]["configurable"]["checkpoint_id"]
        cypher(saver, saver.memory, f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) SET c.meta = 'x'",
               k=key("t1", "", target))
        broken = run("verify")
        assert broken.exit_code == 1 and "'t1'" in broken.output and target in broken.output
        assert "does not match its digest" in broken.output
        assert run("verify", "--thread", "t2").exit_code == 0
        as_json = json.loads(run("verify", "--thread", "t1", "--format", "json").output)
        assert as_json["ok"] is False and as_json["problems"][0]["checkpoint_id"] == target
        rolled = run("verify", "--heads-digest", "0" * 64)
        assert rolled.exit_code == 1 and "every head differs" in rolled.output


def test_concurrent_put_writes_of_one_checkpoint_are_all_sealed(saver: FalkorDBSaver) -> None:
    """Parallel tasks write to one checkpoint from several threads: every write joins the
    manifest (the manifest is read under WATCH, a writer that lost the race re-runs), so the
    checkpoint verifies and serves all of them."""
    import threading

    [stored] = seed(saver, "parallel", 1)

    def write(i: int) -> None:
        saver.put_writes(stored, [("state", f"from {i}"), ("__resume__", i)], f"task-{i}")

    workers = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    found = saver.get_tuple(stored)
    assert found is not None and len(found.pending_writes or []) == 16
    assert {w[2] for w in found.pending_writes or [] if w[1] == "state"} == {f"from {i}" for i in range(8)}


def test_trusted_keys_as_key_objects_and_a_store_larger_than_a_page(saver: FalkorDBSaver,
                                                                    rippl: Rippl) -> None:
    """trusted_keys take Ed25519PublicKey objects as well as hex; a whole-store check pages
    through more checkpoints than one read returns (64), each of them checked."""
    key_ = Ed25519PrivateKey.generate()
    signer = FalkorDBSaver(rippl, signing_key=key_, trusted_keys=[key_.public_key()])
    stored = seed(signer, "long", 70)
    assert signer.get_tuple(latest("long")) is not None
    report = signer.verify()
    assert report.ok and report.checkpoints == 70
    cypher(saver, rippl, f"MATCH (c:{queries.CHECKPOINT} {{key: $k}}) SET c.meta = 'x'",
           k=key("long", "", stored[3]["configurable"]["checkpoint_id"]))
    assert [p.checkpoint_id for p in signer.verify("long").problems] == \
        [stored[3]["configurable"]["checkpoint_id"]]
