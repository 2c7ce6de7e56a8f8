"""Tamper-evident receipts: what a receipt holds, the hash chain, Ed25519 signatures, every kind of
tampering done straight in the database, and the JSON Lines export verified outside it. Both
backends."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from typer.testing import CliRunner

from rippl_core import InvalidInputError, Rippl
from rippl_core._runtime.wire import Query, parse
from rippl_core.cli import app
from rippl_core.review.receipts import (
    GENESIS,
    public_hex,
    read_jsonl,
    receipt_id,
    verify_chain,
    verify_export,
)

pytestmark = pytest.mark.on_cluster  # also on a 3-shard cluster, in the `cluster` step

KEYS = {name: Ed25519PrivateKey.from_private_bytes(hashlib.sha256(name.encode()).digest())
        for name in ("alice", "carol", "mallory")}
TRUSTED = {"alice": public_hex(KEYS["alice"].public_key()), "carol": public_hex(KEYS["carol"].public_key())}


def cypher(handle: Rippl, text: str, **params: Any) -> list[tuple[Any, ...]]:
    """Write straight to the graph, as an attacker with database access would."""
    return parse(handle.redis.execute_command("GRAPH.QUERY", handle.keys.graph, Query(text, params).command(),
                                              "--compact"))


def stored(handle: Rippl, seq: int) -> dict[str, Any]:
    return cypher(handle, "MATCH (r:Receipt {seq: $seq}) RETURN properties(r)", seq=seq)[0][0]


def make_chain(handle: Rippl) -> None:
    """Five receipts of every kind; #3 and #5 signed."""
    handle.retract("CLM-002", reason="stale reading", by="telemetry")
    handle.reinstate("CLM-002", reason="fresh reading agrees", by="oncall")
    item = handle.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    handle.approve(item.id, by="alice", note="confirmed", signing_key=KEYS["alice"])
    other = handle.propose_retraction("CLM-004", reason="maybe", by="monitor")
    handle.reject(other.id, by="bob", note="no")
    handle.reinstate("CLM-001", reason="false alarm", by="carol",
                     signing_key=KEYS["carol"].private_bytes_raw())


@pytest.fixture
def chained(incident: Rippl) -> Rippl:
    make_chain(incident)
    return incident


def test_receipts_hold_the_change_and_chain_by_hash(chained: Rippl) -> None:
    receipts = chained.receipts()
    assert [(r.seq, r.kind, r.actor, r.claim) for r in receipts] == [
        (1, "retraction", "telemetry", "CLM-002"), (2, "reinstatement", "oncall", "CLM-002"),
        (3, "retraction_approved", "alice", "CLM-001"), (4, "retraction_rejected", "bob", "CLM-004"),
        (5, "reinstatement", "carol", "CLM-001")]
    previous = GENESIS
    for r in receipts:
        record = stored(chained, r.seq)
        assert record["body"] == rfc8785.dumps(json.loads(record["body"])).decode()  # canonical JSON
        assert r.hash == record["hash"] == hashlib.sha256(record["body"].encode()).hexdigest()
        assert r.prev_hash == r.body["prev"] == previous
        assert {"kind", "seq", "prev", "review", "claim", "actor", "at", "affected"} <= set(r.body)
        previous = r.hash
    approved = receipts[2]
    assert approved.review is not None and approved.body["note"] == "confirmed"
    assert approved.body["proposed_by"] == "monitor" and approved.body["reason"] == "disk errors"
    assert len(approved.body["affected"]) == 18
    assert {"id": "ACT-001", "before": "AT_RISK", "after": "OUT"} in approved.body["affected"]
    assert {"id": "CLM-002", "before": "IN", "after": "OUT"} in receipts[0].body["affected"]
    assert [(a["id"], a["before"], a["after"]) for a in receipts[1].body["affected"]] == \
        [(a["id"], a["after"], a["before"]) for a in receipts[0].body["affected"]]  # undone exactly
    assert receipts[2].signature and receipts[2].public_key == TRUSTED["alice"]
    assert receipts[4].signature and receipts[4].public_key == TRUSTED["carol"]
    assert receipts[0].signature is None and receipts[0].public_key is None
    check = chained.verify_receipts()
    assert check.ok and check.count == 5 and check.problems == []
    assert chained.verify_receipts(public_keys=TRUSTED).ok
    assert chained.verify_receipts(public_keys={"alice": KEYS["alice"].public_key()}).ok


def test_an_empty_chain_verifies(rippl: Rippl) -> None:
    assert rippl.receipts() == []
    check = rippl.verify_receipts()
    assert check.ok and check.count == 0


def _resigned(handle: Rippl, seq: int, key: Ed25519PrivateKey) -> None:
    record = stored(handle, seq)
    cypher(handle, "MATCH (r:Receipt {seq: $seq}) SET r.signature = $sig, r.public_key = $pub", seq=seq,
           sig=key.sign(record["hash"].encode()).hex(), pub=public_hex(key.public_key()))


def _rebody(handle: Rippl, seq: int, change: Callable[[dict[str, Any]], None], *, rehash: bool) -> None:
    body = json.loads(stored(handle, seq)["body"])
    change(body)
    text = rfc8785.dumps(body).decode()
    props = {"body": text, **({"hash": hashlib.sha256(text.encode()).hexdigest()} if rehash else {})}
    cypher(handle, "MATCH (r:Receipt {seq: $seq}) SET r += $props", seq=seq, props=props)


def _forge_after(handle: Rippl, seq: int, forged_id: str | None = None) -> None:
    """Insert a well-formed receipt linking to #seq at the end (the head is left alone)."""
    prev = stored(handle, seq)
    body = {"kind": "reinstatement", "seq": seq + 1, "prev": prev["hash"], "review": None,
            "claim": "CLM-001", "actor": "alice", "at": "2026-01-01T00:00:00+00:00", "affected": []}
    text = rfc8785.dumps(body).decode()
    cypher(handle, "CREATE (r:Receipt) SET r += $props",
           props={"id": forged_id or receipt_id(seq + 1), "seq": seq + 1, "kind": "reinstatement",
                  "actor": "alice",
                  "body": text, "hash": hashlib.sha256(text.encode()).hexdigest()})


TAMPERING: dict[str, tuple[Callable[[Rippl], None], str]] = {
    "edit a body": (lambda h: _rebody(h, 2, lambda b: b.update(actor="mallory"), rehash=False), "#2"),
    "edit a body and its hash": (lambda h: _rebody(h, 2, lambda b: b.update(reason="x"), rehash=True), "#3"),
    "edit the last body and hash": (
        lambda h: _rebody(h, 5, lambda b: b["affected"].pop(), rehash=True), "head"),
    "edit an affected status": (
        lambda h: _rebody(h, 3, lambda b: b["affected"][0].update(after="IN"), rehash=False), "#3"),
    "edit a stored hash": (
        lambda h: cypher(h, "MATCH (r:Receipt {seq: 1}) SET r.hash = $x", x="0" * 64), "#1"),
    "delete one": (lambda h: cypher(h, "MATCH (r:Receipt {seq: 3}) DELETE r"), "#4"),
    "delete the first": (lambda h: cypher(h, "MATCH (r:Receipt {seq: 1}) DELETE r"), "#2"),
    "delete the tail": (lambda h: cypher(h, "MATCH (r:Receipt {seq: 5}) DELETE r"), "head"),
    "delete the tail and the head": (
        lambda h: cypher(h, "MATCH (r:Receipt {seq: 5}), (x:ReceiptHead) DELETE r, x"), "head"),
    "swap two": (lambda h: cypher(h, "MATCH (a:Receipt {seq: 2}), (b:Receipt {seq: 3}) "
                                     "SET a.seq = 3, b.seq = 2"), "#2"),
    "insert a forged one in the middle": (lambda h: (
        cypher(h, "MATCH (r:Receipt) WHERE r.seq >= 3 SET r.seq = r.seq + 1"),
        _forge_after(h, 2, "RCP-forged")), "#4"),
    "append a forged one": (lambda h: _forge_after(h, 5), "head"),
    "forge a signature": (lambda h: cypher(h, "MATCH (r:Receipt {seq: 3}) SET r.signature = $s",
                                           s="ab" * 64), "#3"),
    "drop a signature's key": (lambda h: cypher(h, "MATCH (r:Receipt {seq: 5}) SET r.public_key = $k",
                                                k="00" * 32), "#5"),
    "edit a receipt's id": (lambda h: cypher(h, "MATCH (r:Receipt {seq: 2}) SET r.id = 'RCP-x'"), "#2"),
    "edit a receipt's kind": (lambda h: cypher(
        h, "MATCH (r:Receipt {seq: 3}) SET r.kind = 'retraction_rejected'"), "#3"),
    "edit a receipt's actor": (lambda h: cypher(h, "MATCH (r:Receipt {seq: 1}) SET r.actor = 'alice'"),
                               "#1"),
    "add a field beside the body": (lambda h: cypher(
        h, "MATCH (r:Receipt {seq: 5}) SET r.approved_by = 'alice'"), "#5"),
    "duplicate a receipt": (lambda h: cypher(
        h, "MATCH (r:Receipt {seq: 4}) CREATE (c:Receipt) SET c += properties(r), c.id = 'RCP-copy'"), "#4"),
}


@pytest.mark.parametrize("name", list(TAMPERING))
def test_tampering_is_detected(chained: Rippl, name: str) -> None:
    tamper, where = TAMPERING[name]
    tamper(chained)
    check = chained.verify_receipts()
    assert not check.ok, name
    assert any(where in problem for problem in check.problems), check.problems


def _retreed(handle: Rippl, open_rippl: Callable[..., Rippl]) -> Rippl:
    """Rebuild the stored Merkle tree from the receipts as they now are (a thorough attacker
    does): the tree is dropped, and the next open computes it again."""
    cypher(handle, "MATCH (m:MerkleNode) DELETE m")
    cypher(handle, "MATCH (h:ReceiptHead) REMOVE h.size, h.root, h.frontier")
    handle.redis.set(handle.keys.schema, "6")
    return open_rippl(graph=handle.graph)


def test_a_re_signed_receipt_passes_only_without_trusted_keys(
        chained: Rippl, open_rippl: Callable[..., Rippl]) -> None:
    _resigned(chained, 3, KEYS["mallory"])  # the attacker's own key, recorded beside it
    assert not chained.verify_receipts().ok  # the stored tree's root no longer matches
    chained = _retreed(chained, open_rippl)
    assert chained.verify_receipts().ok  # without an anchor or trusted keys: unseen
    check = chained.verify_receipts(public_keys=TRUSTED)
    assert not check.ok and any("#3" in p and "alice" in p for p in check.problems)


def test_trusted_keys_require_a_signature(chained: Rippl) -> None:
    check = chained.verify_receipts(public_keys={**TRUSTED, "bob": TRUSTED["alice"]})
    assert not check.ok and any("#4" in p and "not signed" in p for p in check.problems)
    wrong = chained.verify_receipts(public_keys={"alice": TRUSTED["carol"]})
    assert not wrong.ok and any("#3" in p for p in wrong.problems)


def test_a_fully_consistent_forgery_is_caught_by_trusted_keys(
        chained: Rippl, open_rippl: Callable[..., Rippl]) -> None:
    _forge_after(chained, 5)  # claims to be by alice, unsigned
    forged = stored(chained, 6)
    cypher(chained, "MATCH (h:ReceiptHead) SET h.seq = 6, h.hash = $h", h=forged["hash"])
    chained = _retreed(chained, open_rippl)
    assert chained.verify_receipts().ok  # a perfect rewrite, head included, needs an outside anchor
    check = chained.verify_receipts(public_keys=TRUSTED)
    assert not check.ok and any("#6" in p for p in check.problems)


def test_signing_key_must_be_ed25519(rippl: Rippl) -> None:
    rippl.add_claim("C", "c")
    for bad in (b"short", "a string", 42, b"\x00" * 31):
        with pytest.raises(InvalidInputError):
            rippl.retract("C", reason="r", by="x", signing_key=bad)  # type: ignore[arg-type]
    assert rippl.receipts() == [] and not rippl.get("C").retracted


# ------------------------------------------------------------------------------------ export


def save(path: Path, lines: list[str]) -> int:
    path.write_text("".join(f"{line}\n" for line in lines))
    return len(lines)


def test_what_a_reader_sees_is_covered_by_the_hash(chained: Rippl) -> None:
    """The model shows the hashed body's fields, whatever is stored beside the body."""
    before = chained.receipts()
    cypher(chained, "MATCH (r:Receipt {seq: 3}) SET r.id = 'RCP-x', r.kind = 'x', r.actor = 'mallory'")
    assert chained.receipts() == before
    assert [r.id for r in before] == [receipt_id(seq) for seq in range(1, 6)]


def test_export_and_verify_outside_the_database(chained: Rippl, tmp_path: Path) -> None:
    path = tmp_path / "receipts.jsonl"
    assert save(path, chained.export_receipts()) == 6  # the head, then 5 receipts
    head = (chained.receipts()[-1].seq, chained.receipts()[-1].hash)
    chained.redis.execute_command("GRAPH.DELETE", chained.keys.graph)  # the database is gone
    records = read_jsonl(path)
    assert len(records) == 6 and records[0]["head"]["count"] == 5
    assert records[0]["head"]["seq"] == head[0] and records[0]["head"]["hash"] == head[1]
    assert verify_export(records).ok
    assert verify_export(records).count == 5
    assert verify_chain(records[1:], head=head, public_keys=TRUSTED).ok
    lines = path.read_text().splitlines()

    def verify(new_lines: list[str], **kw: Any) -> Any:
        path.write_text("\n".join(new_lines) + "\n")
        return verify_export(read_jsonl(path), **kw)

    edited = json.loads(lines[2])
    edited["body"] = edited["body"].replace("oncall", "mallory")
    assert not verify([*lines[:2], json.dumps(edited), *lines[3:]]).ok
    assert not verify([*lines[:2], *lines[3:]]).ok
    assert not verify([lines[0], lines[2], lines[1], *lines[3:]]).ok
    resigned = json.loads(lines[3])
    resigned["signature"] = KEYS["mallory"].sign(resigned["hash"].encode()).hex()
    resigned["public_key"] = public_hex(KEYS["mallory"].public_key())
    assert not verify([*lines[:3], json.dumps(resigned), *lines[4:]], public_keys=TRUSTED).ok
    relabelled = json.loads(lines[1]) | {"id": "RCP-00000099"}
    assert not verify([lines[0], json.dumps(relabelled), *lines[2:]]).ok
    path.write_text("not json\n")
    with pytest.raises(InvalidInputError):
        read_jsonl(path)


@pytest.mark.parametrize("cut", [1, 2, 5])
def test_a_cut_tail_of_an_export_is_detected(chained: Rippl, tmp_path: Path, cut: int) -> None:
    path = tmp_path / "receipts.jsonl"
    save(path, chained.export_receipts())
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-cut]) + "\n")
    check = verify_export(read_jsonl(path))
    assert not check.ok and check.count == 5 - cut
    assert any("cut" in p for p in check.problems), check.problems


def test_a_file_cut_mid_line_or_not_text_is_refused(chained: Rippl, tmp_path: Path) -> None:
    path = tmp_path / "receipts.jsonl"
    save(path, chained.export_receipts())
    text = path.read_bytes()
    path.write_bytes(text[: len(text) - 40])
    with pytest.raises(InvalidInputError, match="line 6"):
        read_jsonl(path)
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        read_jsonl(path)
    path.write_text('[1, 2]\n"a string"\n')
    with pytest.raises(InvalidInputError, match="line 1"):
        read_jsonl(path)


def test_an_export_without_a_head_is_reported(chained: Rippl, tmp_path: Path) -> None:
    path = tmp_path / "receipts.jsonl"
    save(path, chained.export_receipts())
    lines = path.read_text().splitlines()
    for variant in (lines[1:], [*lines[1:], lines[0]], [lines[0], *lines[1:3], lines[0], *lines[3:]]):
        path.write_text("\n".join(variant) + "\n")
        check = verify_export(read_jsonl(path))
        assert not check.ok and any("head" in p for p in check.problems), check.problems


def test_a_rewritten_head_is_caught_by_its_signature(chained: Rippl, tmp_path: Path) -> None:
    path = tmp_path / "receipts.jsonl"
    save(path, chained.export_receipts(signing_key=KEYS["alice"], by="alice"))
    records = read_jsonl(path)
    assert verify_export(records, public_keys=TRUSTED).ok
    # Cut the last receipt and rewrite the head to match: consistent, but the signature breaks.
    cut = [dict(records[0], head=records[0]["head"] | {"count": 4, "seq": 4,
                                                       "hash": records[-2]["hash"]}), *records[1:-1]]
    assert verify_export(cut).ok is False
    assert not verify_export(cut, public_keys=TRUSTED).ok
    # Re-signed by an untrusted key, or not signed at all: refused when keys are in use.
    unsigned = [{"head": cut[0]["head"]}, *cut[1:]]
    assert verify_export(unsigned).ok  # without an anchor, a perfect rewrite cannot be told apart
    problems = verify_export(unsigned, public_keys=TRUSTED).problems
    assert any("not signed" in p for p in problems), problems
    mallory = KEYS["mallory"]
    forged_head = cut[0]["head"] | {"by": "mallory"}
    from rippl_core.review.receipts import digest

    forged = [{"head": forged_head, "signature": mallory.sign(digest(forged_head).encode()).hex(),
               "public_key": public_hex(mallory.public_key())}, *cut[1:]]
    problems = verify_export(forged, public_keys=TRUSTED).problems
    assert any("not among the trusted keys" in p for p in problems), problems


@pytest.mark.asyncio(loop_scope="session")
async def test_the_async_handle_exports_the_same_chain(chained: Rippl, arippl: Any,
                                                       tmp_path: Path) -> None:
    sync_path, async_path = tmp_path / "sync.jsonl", tmp_path / "async.jsonl"
    save(sync_path, chained.export_receipts())
    assert save(async_path, await arippl.export_receipts()) == 6
    strip = [{k: v for k, v in r.items() if k != "head"} | (
        {"head": {k: v for k, v in r["head"].items() if k != "exported_at"}} if "head" in r else {})
        for r in read_jsonl(async_path)]
    assert strip == [{k: v for k, v in r.items() if k != "head"} | (
        {"head": {k: v for k, v in r["head"].items() if k != "exported_at"}} if "head" in r else {})
        for r in read_jsonl(sync_path)]
    assert verify_export(read_jsonl(async_path)).ok


def test_cli_verify_exits_non_zero_on_a_broken_chain(chained: Rippl, backend: dict[str, object],
                                                     tmp_path: Path) -> None:
    where = ["--db", str(backend["path"])] if "path" in backend else ["--url", str(backend["url"])]
    runner = CliRunner()
    ok = runner.invoke(app, [*where, "--graph", chained.graph, "receipts", "verify"])
    assert ok.exit_code == 0, ok.output
    export = tmp_path / "chain.jsonl"
    exported = runner.invoke(app, [*where, "--graph", chained.graph, "receipts", "export", str(export)])
    assert exported.exit_code == 0, exported.output
    assert runner.invoke(app, [*where, "--graph", chained.graph, "receipts", "verify",
                               "--file", str(export)]).exit_code == 0
    cypher(chained, "MATCH (r:Receipt {seq: 2}) DELETE r")
    broken = runner.invoke(app, [*where, "--graph", chained.graph, "receipts", "verify"])
    assert broken.exit_code != 0
