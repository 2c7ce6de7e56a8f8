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
from rippl_core.review.receipts import GENESIS, export_jsonl, public_hex, read_jsonl, verify_chain

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


def _forge_after(handle: Rippl, seq: int, forged_id: str = "RCP-forged") -> None:
    """Insert a well-formed receipt linking to #seq at the end (the head is left alone)."""
    prev = stored(handle, seq)
    body = {"kind": "reinstatement", "seq": seq + 1, "prev": prev["hash"], "review": None,
            "claim": "CLM-001", "actor": "alice", "at": "2026-01-01T00:00:00+00:00", "affected": []}
    text = rfc8785.dumps(body).decode()
    cypher(handle, "CREATE (r:Receipt) SET r += $props",
           props={"id": forged_id, "seq": seq + 1, "kind": "reinstatement", "actor": "alice",
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
        cypher(h, "MATCH (r:Receipt) WHERE r.seq >= 3 SET r.seq = r.seq + 1"), _forge_after(h, 2)), "#4"),
    "append a forged one": (lambda h: _forge_after(h, 5), "head"),
    "forge a signature": (lambda h: cypher(h, "MATCH (r:Receipt {seq: 3}) SET r.signature = $s",
                                           s="ab" * 64), "#3"),
    "drop a signature's key": (lambda h: cypher(h, "MATCH (r:Receipt {seq: 5}) SET r.public_key = $k",
                                                k="00" * 32), "#5"),
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


def test_a_re_signed_receipt_passes_only_without_trusted_keys(chained: Rippl) -> None:
    _resigned(chained, 3, KEYS["mallory"])  # the attacker's own key, recorded beside it
    assert chained.verify_receipts().ok
    check = chained.verify_receipts(public_keys=TRUSTED)
    assert not check.ok and any("#3" in p and "alice" in p for p in check.problems)


def test_trusted_keys_require_a_signature(chained: Rippl) -> None:
    check = chained.verify_receipts(public_keys={**TRUSTED, "bob": TRUSTED["alice"]})
    assert not check.ok and any("#4" in p and "not signed" in p for p in check.problems)
    wrong = chained.verify_receipts(public_keys={"alice": TRUSTED["carol"]})
    assert not wrong.ok and any("#3" in p for p in wrong.problems)


def test_a_fully_consistent_forgery_is_caught_by_trusted_keys(chained: Rippl) -> None:
    _forge_after(chained, 5)  # claims to be by alice, unsigned
    forged = stored(chained, 6)
    cypher(chained, "MATCH (h:ReceiptHead) SET h.seq = 6, h.hash = $h", h=forged["hash"])
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


def test_export_and_verify_outside_the_database(chained: Rippl, tmp_path: Path) -> None:
    path = tmp_path / "receipts.jsonl"
    receipts = chained.receipts()
    assert export_jsonl(receipts, path) == 5
    head = (receipts[-1].seq, receipts[-1].hash)
    chained.redis.execute_command("GRAPH.DELETE", chained.keys.graph)  # the database is gone
    records = read_jsonl(path)
    assert len(records) == 5
    assert verify_chain(records).ok
    assert verify_chain(records, head=head, public_keys=TRUSTED).ok
    lines = path.read_text().splitlines()

    def verify(new_lines: list[str], **kw: Any) -> Any:
        path.write_text("\n".join(new_lines) + "\n")
        return verify_chain(read_jsonl(path), **kw)

    edited = json.loads(lines[1])
    edited["body"] = edited["body"].replace("oncall", "mallory")
    assert not verify([lines[0], json.dumps(edited), *lines[2:]]).ok
    assert not verify([lines[0], *lines[2:]]).ok
    assert not verify([lines[1], lines[0], *lines[2:]]).ok
    assert verify(lines[:-1]).ok  # a cut tail needs the anchor
    assert not verify(lines[:-1], head=head).ok
    resigned = json.loads(lines[2])
    resigned["signature"] = KEYS["mallory"].sign(resigned["hash"].encode()).hex()
    resigned["public_key"] = public_hex(KEYS["mallory"].public_key())
    assert not verify([*lines[:2], json.dumps(resigned), *lines[3:]], public_keys=TRUSTED).ok
    path.write_text("not json\n")
    with pytest.raises(InvalidInputError):
        read_jsonl(path)


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
