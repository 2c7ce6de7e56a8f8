"""The receipt log as a transparency log, through the database (both backends): proofs read from
the stored tree verify against the tree head; a graph written before the tree gets it on open;
anchored heads catch a cut tail, a re-sealed history and a stripped signature without any trusted
key; reviewer keys: who signed, rotation, revocation; the CLI's log commands and the offline
verifier."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from typer.testing import CliRunner

from rippl_core import ConflictError, InvalidInputError, NotFoundError, ReviewError, Rippl
from rippl_core._runtime.wire import Query, parse
from rippl_core.cli import app
from rippl_core.review import merkle
from rippl_core.review.anchor import witness as anchor_witness
from rippl_core.review.keys import public_hex
from rippl_core.review.receipts import leaf_hash, receipt_id

KEYS = {name: Ed25519PrivateKey.from_private_bytes(hashlib.sha256(name.encode()).digest())
        for name in ("alice", "bob", "mallory", "alice2", "log")}
REPO = Path(__file__).resolve().parents[2]


def cypher(handle: Rippl, text: str, **params: Any) -> list[tuple[Any, ...]]:
    """Write straight to the graph, as an attacker with database access would."""
    return parse(handle.redis.execute_command("GRAPH.QUERY", handle.keys.graph,
                                              Query(text, params).command(), "--compact"))


def stored(handle: Rippl, seq: int) -> dict[str, Any]:
    return cypher(handle, "MATCH (r:Receipt {seq: $seq}) RETURN properties(r)", seq=seq)[0][0]


def make_log(handle: Rippl) -> None:
    """Six receipts: alice registers her key and signs her approval, an unsigned retraction and
    reinstatement by ops, a rejection by bob."""
    handle.retract("CLM-002", reason="stale", by="ops")
    handle.register_key("alice", signing_key=KEYS["alice"])
    item = handle.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    handle.approve(item.id, by="alice", note="confirmed", signing_key=KEYS["alice"])
    other = handle.propose_retraction("CLM-004", reason="maybe", by="monitor")
    handle.reject(other.id, by="bob", note="no")
    handle.reinstate("CLM-002", reason="fresh reading", by="ops")


@pytest.fixture
def logged(incident: Rippl) -> Rippl:
    make_log(incident)
    return incident


def proves(proof: Any) -> bool:
    return merkle.verify_inclusion(proof.index, proof.tree_size, bytes.fromhex(proof.leaf_hash),
                                   [bytes.fromhex(p) for p in proof.proof], bytes.fromhex(proof.root))


def consistent(proof: Any, old_root: str | None = None) -> bool:
    return merkle.verify_consistency(proof.old_size, proof.new_size,
                                     bytes.fromhex(old_root or proof.old_root),
                                     bytes.fromhex(proof.new_root),
                                     [bytes.fromhex(p) for p in proof.proof])


def test_every_receipt_is_a_leaf_and_every_proof_verifies(logged: Rippl) -> None:
    receipts = logged.receipts()
    assert [r.kind for r in receipts] == ["retraction", "key_registered", "retraction_approved",
                                          "retraction_rejected", "reinstatement"]
    records = [stored(logged, r.seq) for r in receipts]
    leaves = [leaf_hash(record) for record in records]
    head = logged.tree_head()
    assert (head.log, head.size, head.root) == (logged.graph, 5, merkle.root(leaves).hex())
    for size in range(1, 6):
        for seq in range(1, size + 1):
            proof = logged.prove(receipt_id(seq), tree_size=size)
            assert proof.leaf_hash == leaves[seq - 1].hex() and proof.index == seq - 1
            assert proof.root == merkle.Tree(leaves).root(size).hex()
            assert proves(proof)
        for old in range(size + 1):
            proof = logged.consistency(old, new_size=size)
            assert proof.new_root == merkle.Tree(leaves).root(size).hex()
            assert old == 0 or consistent(proof)
    assert logged.prove(3).receipt == "RCP-00000003"
    check = logged.verify_receipts()
    assert check.ok, check.problems
    assert check.root == head.root


def test_bad_proof_requests_are_refused(logged: Rippl) -> None:
    with pytest.raises(NotFoundError, match="no receipt RCP-00000006"):
        logged.prove("RCP-00000006")
    with pytest.raises(NotFoundError, match="no receipt RCP-00000004"):
        logged.prove(4, tree_size=3)
    for bad in ("RCP-x", "6", 0, -1, True, None):
        with pytest.raises(InvalidInputError, match="RCP-00000042"):
            logged.prove(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="between 0 and the log's 5"):
        logged.prove(1, tree_size=6)
    with pytest.raises(InvalidInputError, match="a log never shrinks"):
        logged.consistency(4, new_size=3)
    with pytest.raises(InvalidInputError, match="between 0 and the log's 5"):
        logged.consistency(1, new_size=9)


def test_a_tampered_stored_tree_cannot_forge_a_proof(logged: Rippl) -> None:
    """The stored tree is a cache: a node changed in the database makes proofs fail against
    an honest root, and verification, which recomputes every leaf, reports the head."""
    head = logged.tree_head()
    cypher(logged, "MATCH (m:MerkleNode {id: '0:0'}) SET m.h = $h", h="00" * 32)
    proof = logged.prove(2)
    assert not merkle.verify_inclusion(proof.index, proof.tree_size, bytes.fromhex(proof.leaf_hash),
                                       [bytes.fromhex(p) for p in proof.proof],
                                       bytes.fromhex(head.root))
    cypher(logged, "MATCH (h:ReceiptHead) SET h.root = $r", r="11" * 32)
    check = logged.verify_receipts()
    assert not check.ok and any("stored tree head" in p for p in check.problems)


def test_a_graph_written_before_the_tree_gets_it_on_open(logged: Rippl,
                                                         open_rippl: Any) -> None:
    """Remove the tree and the schema marker (the state an older Rippl left); opening the graph
    again rebuilds the same tree, so the old chain verifies and keeps growing."""
    head = logged.tree_head()
    cypher(logged, "MATCH (m:MerkleNode) DELETE m")
    cypher(logged, "MATCH (h:ReceiptHead) REMOVE h.size, h.root, h.frontier")
    logged.redis.set(logged.keys.schema, "6")
    with pytest.raises(ConflictError, match="backfill"):
        logged.retract("CLM-004", reason="x", by="ops")
    reopened = open_rippl(graph=logged.graph)
    assert reopened.tree_head().root == head.root
    assert proves(reopened.prove(3))
    reopened.retract("CLM-004", reason="x", by="ops")
    check = reopened.verify_receipts()
    assert check.ok and check.count == 6, check.problems


# ---------------------------------------------------------------------- anchoring and tampering


def _cut_tail_and_move_head(handle: Rippl) -> None:
    cypher(handle, "MATCH (r:Receipt {seq: 5}) DELETE r")
    cypher(handle, "MATCH (h:ReceiptHead) SET h.seq = 4, h.hash = $h", h=stored(handle, 4)["hash"])


def _reseal(handle: Rippl, seq: int, change: dict[str, Any]) -> None:
    """Rewrite a receipt's body and re-seal everything after it: a chain whose every hash and
    link is consistent again, with its head moved to match."""
    prev = stored(handle, seq - 1)["hash"] if seq > 1 else "0" * 64
    last = max(r.seq for r in handle.receipts())
    for s in range(seq, last + 1):
        record = stored(handle, s)
        body = json.loads(record["body"]) | {"prev": prev} | (change if s == seq else {})
        body = {k: v for k, v in body.items() if v is not None or k in ("review", "claim")}
        text = rfc8785.dumps(body).decode()
        digest = hashlib.sha256(text.encode()).hexdigest()
        cypher(handle, "MATCH (r:Receipt {seq: $s}) SET r.body = $b, r.hash = $h, r.signature = NULL, "
                       "r.public_key = NULL", s=s, b=text, h=digest)
        prev = digest
    cypher(handle, "MATCH (h:ReceiptHead) SET h.hash = $h", h=prev)


def _strip_signature(handle: Rippl) -> None:
    cypher(handle, "MATCH (r:Receipt {seq: 3}) SET r.signature = NULL, r.public_key = NULL")


def _rebuilt(handle: Rippl, open_rippl: Any) -> Rippl:
    """Make the stored tree match the tampered receipts, as a thorough attacker would: drop it and
    let the next open rebuild it from the receipts."""
    cypher(handle, "MATCH (m:MerkleNode) DELETE m")
    cypher(handle, "MATCH (h:ReceiptHead) REMOVE h.size, h.root, h.frontier")
    handle.redis.set(handle.keys.schema, "6")
    rebuilt: Rippl = open_rippl(graph=handle.graph)
    return rebuilt


TAMPERING = {
    "cut the tail and move the head": _cut_tail_and_move_head,
    "rewrite history and re-seal": lambda h: _reseal(h, 1, {"reason": "nothing happened"}),
    "strip a signature": _strip_signature,
}


@pytest.mark.parametrize("name", list(TAMPERING))
def test_anchored_heads_catch_rewrites_without_trusted_keys(logged: Rippl, open_rippl: Any,
                                                            tmp_path: Path, name: str) -> None:
    """A perfect rewrite (chain, head and tree consistent again) passes the chain's own checks;
    the head anchored before it fails it, without any trusted key, and no head of the rewritten
    log is ever anchored over the honest one."""
    witness = f"file:{tmp_path / 'heads.jsonl'}"
    anchored = logged.anchor(witness)
    assert anchored.size == 5
    assert logged.verify_receipts(anchor=witness).ok
    TAMPERING[name](logged)
    assert not logged.verify_receipts().ok  # the stored tree no longer matches the receipts
    rewritten = _rebuilt(logged, open_rippl)
    assert rewritten.verify_receipts().ok  # perfect: only the anchor can tell
    check = rewritten.verify_receipts(anchor=witness)
    assert not check.ok and check.anchored == 5
    assert any("anchored" in p for p in check.problems), check.problems
    with pytest.raises(ConflictError, match="does not extend the head anchored"):
        rewritten.anchor(witness)
    assert [h.size for h in anchor_witness(witness).heads(logged.graph)] == [5]


def test_a_receipt_edited_after_its_tree_leaf_is_never_anchored(logged: Rippl,
                                                                tmp_path: Path) -> None:
    """Anchoring checks the receipts it adds beyond the last anchored head against the tree's
    leaves: an edit the stored tree does not reflect is refused, not vouched for."""
    witness = tmp_path / "heads.jsonl"
    logged.anchor(witness)
    logged.retract("CLM-003", reason="x", by="ops")
    cypher(logged, "MATCH (r:Receipt {seq: 6}) SET r.signature = 'ab'")
    with pytest.raises(ConflictError, match="#6 does not match the log's tree"):
        logged.anchor(witness)
    cypher(logged, "MATCH (r:Receipt {seq: 6}) DELETE r")
    with pytest.raises(ConflictError, match="not all in the log"):
        logged.anchor(witness)


def test_removing_a_reviewers_signed_statement_is_caught_without_an_anchor(logged: Rippl) -> None:
    """alice registered her key (#2), so her approval (#3) must carry her signature: re-sealed
    without her statement, the chain says whose signature is missing."""
    _reseal(logged, 3, {"statement": None, "statement_signature": None, "statement_key": None})
    problems = logged.verify_receipts().problems
    assert any("#3" in p and "not signed by alice, whose key was registered at #2" in p
               for p in problems), problems


def test_the_git_and_http_witnesses(logged: Rippl, tmp_path: Path) -> None:
    repo = tmp_path / "witness"
    first = logged.anchor(f"git:{repo}", signing_key=KEYS["log"], by="rippl-log")
    logged.retract("CLM-004", reason="x", by="ops")
    second = logged.anchor(f"git:{repo}")
    history = subprocess.run(["git", "-C", str(repo), "log", "--format=%s"], capture_output=True,
                             text=True, check=True).stdout.splitlines()
    assert history == [f"{logged.graph}: 6 receipts, root {second.root}",
                       f"{logged.graph}: 5 receipts, root {first.root}"]
    assert first.signature and first.public_key == public_hex(KEYS["log"])
    assert logged.verify_receipts(anchor=str(repo)).ok

    kept: list[dict[str, Any]] = []

    class Witness(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            kept.append(json.loads(self.rfile.read(int(self.headers["Content-Length"])))["head"])
            self.send_response(201)
            self.end_headers()

        def do_GET(self) -> None:
            body = json.dumps({"heads": kept}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Witness)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/heads"
        head = logged.anchor(url)
        assert kept == [{"log": logged.graph, "size": head.size, "root": head.root,
                         "at": kept[0]["at"]}]
        assert logged.verify_receipts(anchor=url).anchored == head.size
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    from rippl_core import UnavailableError

    with pytest.raises(UnavailableError, match="cannot reach the witness"):
        logged.anchor(f"http://127.0.0.1:{server.server_port}/heads")
    _cut_tail_and_move_head(logged)
    assert not logged.verify_receipts(anchor=f"git:{repo}").ok


def test_anchoring_refuses_bad_witnesses(logged: Rippl, tmp_path: Path) -> None:
    empty = tmp_path / "none.jsonl"
    with pytest.raises(InvalidInputError, match="keeps no head"):
        logged.verify_receipts(anchor=empty)
    empty.write_text("not json\n")
    with pytest.raises(InvalidInputError, match="line 1: not JSON"):
        logged.verify_receipts(anchor=empty)
    empty.write_text('{"log": "x", "size": -1}\n')
    with pytest.raises(InvalidInputError, match="a tree head is a JSON object"):
        logged.verify_receipts(anchor=empty)
    with pytest.raises(InvalidInputError, match="both the signing key and who signs"):
        logged.anchor(tmp_path / "h.jsonl", signing_key=KEYS["log"])


# ------------------------------------------------------------------------------- reviewer keys


def test_a_registered_reviewer_must_sign(logged: Rippl) -> None:
    item = logged.propose_retraction("CLM-004", reason="again", by="monitor")
    with pytest.raises(ReviewError, match="alice has a registered reviewer key"):
        logged.approve(item.id, by="alice", note="unsigned")
    with pytest.raises(ReviewError, match="alice has a registered reviewer key"):
        logged.approve(item.id, by="alice", note="bob's key", signing_key=KEYS["bob"])
    assert logged.review(item.id).status == "pending"
    receipt = logged.approve(item.id, by="alice", note="signed", signing_key=KEYS["alice"])
    assert receipt.body["statement_key"] == public_hex(KEYS["alice"])
    assert logged.verify_receipts().ok


def test_a_receipt_signed_by_a_reviewer_who_did_not_approve_is_detected(logged: Rippl) -> None:
    """Rewrite bob's rejection (#4) as if alice's key had signed it, re-sealed: the registry the
    log carries says that key is alice's, so it cannot sign for bob."""
    record = stored(logged, 4)
    body = json.loads(record["body"])
    statement = {"kind": body["kind"], "reviewer": "bob", "review": body["review"],
                 "claim": body["claim"], "proposed_by": body["proposed_by"], "note": body["note"]}
    from rippl_core.review.keys import sign_statement

    body |= sign_statement(statement, KEYS["alice"])
    text = rfc8785.dumps(body).decode()
    cypher(logged, "MATCH (r:Receipt {seq: 4}) SET r.body = $b, r.hash = $h", b=text,
           h=hashlib.sha256(text.encode()).hexdigest())
    problems = logged.verify_receipts().problems
    assert any("#4" in p and "made by bob but signed with the key registered to alice" in p
               for p in problems), problems


def test_rotation_and_revocation_are_receipts(logged: Rippl) -> None:
    with pytest.raises(ReviewError, match="rotation must be sealed"):
        logged.register_key("alice", signing_key=KEYS["alice2"])
    rotated = logged.register_key("alice", signing_key=KEYS["alice2"], current_key=KEYS["alice"])
    assert rotated.body["replaces"] == public_hex(KEYS["alice"])
    assert logged.reviewer_keys() == {"alice": public_hex(KEYS["alice2"])}
    item = logged.propose_retraction("CLM-004", reason="again", by="monitor")
    with pytest.raises(ReviewError):
        logged.approve(item.id, by="alice", note="old key", signing_key=KEYS["alice"])
    logged.approve(item.id, by="alice", note="new key", signing_key=KEYS["alice2"])
    revoked = logged.revoke_key("alice", by="security", reason="laptop stolen")
    assert revoked.kind == "key_revoked" and logged.reviewer_keys() == {}
    assert logged.verify_receipts().ok
    with pytest.raises(NotFoundError, match="no registered key"):
        logged.revoke_key("alice", by="security", reason="again")
    # a signature by the revoked key, written after the revocation, is rejected by the verifier
    logged.retract("CLM-003", reason="late", by="alice", signing_key=KEYS["alice2"])
    problems = logged.verify_receipts().problems
    assert any("revoked at" in p for p in problems), problems


def test_a_browser_style_signature_is_checked_against_the_registered_key(logged: Rippl) -> None:
    from rippl_core.review.keys import canonical_statement, decision_statement

    item = logged.propose_retraction("CLM-004", reason="again", by="monitor")
    statement = decision_statement(kind="retraction_rejected", reviewer="alice", review=item.id,
                                   claim="CLM-004", proposed_by="monitor", note="no")
    forged = KEYS["mallory"].sign(canonical_statement(statement)).hex()
    with pytest.raises(InvalidInputError, match="does not verify"):
        logged.reject(item.id, by="alice", note="no", signature=forged)
    wrong_note = KEYS["alice"].sign(canonical_statement(statement | {"note": "x"})).hex()
    with pytest.raises(InvalidInputError, match="does not verify"):
        logged.reject(item.id, by="alice", note="no", signature=wrong_note)
    good = KEYS["alice"].sign(canonical_statement(statement)).hex()
    receipt = logged.reject(item.id, by="alice", note="no", signature=good)
    assert receipt.body["statement_signature"] == good and receipt.signature is None
    with pytest.raises(ReviewError, match="no registered reviewer key"):
        other = logged.propose_retraction("CLM-004", reason="again", by="monitor")
        logged.reject(other.id, by="bob", note="no", signature=good)
    assert logged.verify_receipts().ok


def test_separation_of_duties_from_the_log_alone(incident: Rippl) -> None:
    item = incident.propose_retraction("CLM-001", reason="disk", by="alice")
    incident.approve(item.id, by="alice", note="mine")
    assert incident.verify_receipts().ok
    check = incident.verify_receipts(distinct_approver=True)
    assert not check.ok and any("approved their own proposal" in p for p in check.problems)


# ---------------------------------------------------------------------------------------- CLI


def test_the_log_commands_and_the_offline_verifier(logged: Rippl, backend: dict[str, object],
                                                   open_rippl: Any, tmp_path: Path) -> None:
    where = ["--db", str(backend["path"])] if "path" in backend else ["--url", str(backend["url"])]
    runner = CliRunner()

    def rippl(*args: str) -> Any:
        return runner.invoke(app, [*where, "--graph", logged.graph, *args])

    key_file = tmp_path / "log.key"
    key_file.write_text(KEYS["log"].private_bytes_raw().hex())
    head = rippl("receipts", "head", "--key", str(key_file), "--by", "log", "--format", "json")
    assert head.exit_code == 0, head.output
    saved = tmp_path / "head.json"
    saved.write_text(head.stdout)
    assert json.loads(head.stdout)["size"] == 5 and json.loads(head.stdout)["by"] == "log"
    proved = rippl("receipts", "prove", "RCP-00000002")
    assert proved.exit_code == 0 and "proof verifies" in proved.output, proved.output
    logged.retract("CLM-004", reason="x", by="ops")
    grown = rippl("receipts", "consistency", str(saved))
    assert grown.exit_code == 0 and "consistent: the log only grew" in grown.output, grown.output
    witness = tmp_path / "heads.jsonl"
    anchored = rippl("receipts", "anchor", "--to", f"file:{witness}")
    assert anchored.exit_code == 0 and "6 receipts" in anchored.output, anchored.output
    export = tmp_path / "export.jsonl"
    assert rippl("receipts", "export", str(export)).exit_code == 0
    assert rippl("receipts", "verify", "--file", str(export), "--anchor", str(witness)).exit_code == 0
    offline = subprocess.run([sys.executable, "-m", "rippl_core.review.verify", str(export),
                              "--anchor", f"file:{witness}", "--json"], capture_output=True,
                             text=True, cwd=REPO, check=False)
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["anchored"] == 6
    # the export cut by one receipt (and its head rewritten to match) fails against the anchor
    lines = export.read_text().splitlines()
    first = json.loads(lines[0])
    first["head"] |= {"count": 5, "seq": 5, "hash": json.loads(lines[-2])["hash"]}
    export.write_text("\n".join([json.dumps(first), *lines[1:-1]]) + "\n")
    assert rippl("receipts", "verify", "--file", str(export)).exit_code == 0  # no anchor: unseen
    cut = subprocess.run([sys.executable, "-m", "rippl_core.review.verify", str(export),
                          "--anchor", str(witness)], capture_output=True, text=True, cwd=REPO,
                         check=False)
    assert cut.returncode == 1 and "receipts were cut" in cut.stdout, cut.stdout
    assert rippl("receipts", "verify", "--file", str(export), "--anchor", str(witness)).exit_code == 1
    # a rewritten log (its tree rebuilt to match): consistency with the saved head fails, and
    # anchoring is refused
    _reseal(logged, 1, {"reason": "nothing"})
    _rebuilt(logged, open_rippl).close()
    assert rippl("receipts", "consistency", str(saved)).exit_code == 1
    refused = rippl("receipts", "anchor", "--to", str(witness))
    assert refused.exit_code == 1 and "does not extend" in refused.stderr
    assert rippl("receipts", "verify", "--anchor", str(witness)).exit_code == 1
    bad = rippl("receipts", "consistency", str(tmp_path / "missing.json"))
    assert bad.exit_code == 2 and "OLD_HEAD" in bad.stderr


def test_the_keys_commands(logged: Rippl, backend: dict[str, object], tmp_path: Path) -> None:
    where = ["--db", str(backend["path"])] if "path" in backend else ["--url", str(backend["url"])]
    runner = CliRunner()

    def rippl(*args: str) -> Any:
        return runner.invoke(app, [*where, "--graph", logged.graph, *args])

    made = rippl("keys", "new", "--out", str(tmp_path / "bob.key"))
    assert made.exit_code == 0 and made.stdout.startswith("ed25519:"), made.output
    assert (tmp_path / "bob.key").stat().st_mode & 0o077 == 0
    again = rippl("keys", "new", "--out", str(tmp_path / "bob.key"))
    assert again.exit_code == 2 and "never overwritten" in again.stderr
    registered = rippl("keys", "register", "bob", "--key", str(tmp_path / "bob.key"))
    assert registered.exit_code == 0, registered.output
    listed = rippl("keys", "list", "--format", "json")
    assert json.loads(listed.stdout)["bob"] == made.stdout.strip().removeprefix("ed25519:")
    item = logged.propose_retraction("CLM-004", reason="x", by="monitor")
    unsigned = rippl("review", "reject", item.id, "--by", "bob", "--note", "no")
    assert unsigned.exit_code == 1 and "pass --key" in unsigned.stderr
    signed = rippl("review", "reject", item.id, "--by", "bob", "--note", "no", "--key",
                   str(tmp_path / "bob.key"))
    assert signed.exit_code == 0, signed.output
    revoked = rippl("keys", "revoke", "bob", "--by", "security", "--reason", "left")
    assert revoked.exit_code == 0 and "revoked by security" in " ".join(revoked.output.split())
    assert rippl("receipts", "verify").exit_code == 0


def test_the_offline_verifier_loads_no_database_client(tmp_path: Path) -> None:
    probe = ("import sys, rippl_core.review.verify as v\n"
             "heavy = {'redis', 'falkordb', 'typer', 'rich', 'fastapi', 'uvicorn', 'yaml'}\n"
             "print(sorted(m for m in heavy if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO,
                          check=True)
    assert done.stdout.strip() == "[]"
    missing = subprocess.run([sys.executable, "-m", "rippl_core.review.verify",
                              str(tmp_path / "none.jsonl")], capture_output=True, text=True,
                             cwd=REPO, check=False)
    assert missing.returncode == 2 and "cannot read receipts" in missing.stderr


@pytest.fixture
def unused() -> Iterator[None]:
    yield


@pytest.mark.asyncio(loop_scope="session")
async def test_the_async_handle_and_periodic_anchoring(logged: Rippl, arippl: Any,
                                                       tmp_path: Path) -> None:
    import asyncio

    from rippl_core.console.server import anchor_periodically

    head = await arippl.tree_head(signing_key=KEYS["log"], by="operator")
    assert (head.size, head.root) == (5, logged.tree_head().root) and head.by == "operator"
    assert proves(await arippl.prove("RCP-00000002", tree_size=4))
    assert consistent(await arippl.consistency(2))
    witness = tmp_path / "heads.jsonl"
    assert (await arippl.anchor(witness)).size == 5
    assert (await arippl.verify_receipts(anchor=witness)).anchored == 5
    assert await arippl.reviewer_keys() == {"alice": public_hex(KEYS["alice"])}
    await arippl.register_key("bob", signing_key=KEYS["bob"])
    item = await arippl.propose_retraction("CLM-004", reason="x", by="monitor")
    with pytest.raises(ReviewError, match="bob has a registered reviewer key"):
        await arippl.reject(item.id, by="bob", note="no")
    assert (await arippl.reject(item.id, by="bob", note="no", signing_key=KEYS["bob"])).body[
        "statement_key"] == public_hex(KEYS["bob"])
    assert (await arippl.revoke_key("bob", by="security", reason="left")).kind == "key_revoked"
    assert (await arippl.verify_receipts(distinct_approver=True)).ok

    periodic = tmp_path / "periodic.jsonl"
    reports: list[str] = []
    task = asyncio.create_task(anchor_periodically(arippl, f"file:{periodic}", 0.05,
                                                   report=reports.append))
    try:
        for _ in range(400):
            if reports:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)  # more ticks: the log did not grow, nothing more is anchored
        assert reports == [f"anchored 8 receipts (root {(await arippl.tree_head()).root[:16]}…) "
                           f"at file:{periodic}"]
        await arippl.retract("CLM-003", reason="x", by="ops")
        for _ in range(400):
            if len(reports) > 1:
                break
            await asyncio.sleep(0.05)
        assert reports[1].startswith("anchored 9 receipts")
        cypher(logged, "MATCH (r:Receipt {seq: 9}) DELETE r")
        cypher(logged, "MATCH (h:ReceiptHead) SET h.seq = 8, h.size = 8")
        for _ in range(400):
            if len(reports) > 2:
                break
            await asyncio.sleep(0.05)
        assert "failed" in reports[2]  # reported, and the console keeps serving
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert [h.size for h in anchor_witness(periodic).heads(logged.graph)] == [8, 9]


def test_rippl_serve_anchors_periodically(logged: Rippl, backend: dict[str, object],
                                          tmp_path: Path) -> None:
    """`rippl serve --anchor WITNESS --anchor-interval S --anchor-key K --anchor-by NAME`: a
    signed head lands at the witness while the console serves, and again when the log grows."""
    import time

    from helpers_process import wait_for_port

    from rippl_core.testing import free_port

    where = ["--db", str(backend["path"])] if "path" in backend else ["--url", str(backend["url"])]
    key_file = tmp_path / "log.key"
    key_file.write_text(KEYS["log"].private_bytes_raw().hex())
    refused = CliRunner().invoke(app, [*where, "--graph", logged.graph, "serve", "--anchor",
                                       "file:x", "--anchor-key", str(key_file)])
    assert refused.exit_code == 2 and "--anchor-by" in refused.stderr
    witness = tmp_path / "heads.jsonl"
    port, log = free_port(), tmp_path / "serve.log"

    def heads() -> list[Any]:
        return anchor_witness(witness).heads(logged.graph)

    def wait(count: int) -> None:
        deadline = time.monotonic() + 60
        while len(heads()) < count and time.monotonic() < deadline:
            time.sleep(0.1)

    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "rippl_core.cli", *where, "--graph", logged.graph, "serve",
             "--port", str(port), "--anchor", f"file:{witness}", "--anchor-interval", "0.2",
             "--anchor-key", str(key_file), "--anchor-by", "operator"],
            stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            wait_for_port(port, process, log)
            wait(1)
            logged.retract("CLM-003", reason="x", by="ops")
            wait(2)
        finally:
            process.terminate()
            process.wait(timeout=30)
    kept = heads()
    assert [h.size for h in kept] == [5, 6], log.read_text()
    assert all(h.by == "operator" and h.public_key == public_hex(KEYS["log"]) for h in kept)
    assert "anchored 6 receipts" in log.read_text()
    assert logged.verify_receipts(anchor=witness).ok
