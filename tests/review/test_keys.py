"""Reviewer keys, outside any database: the statements reviewers sign, and the registry a log
carries, walked receipt by receipt (who may sign what, rotation, revocation), and signed tree heads
checked against a log. Chains are built with the functions the log uses (`seal`,
`sign_statement`), so each rule is pinned by the problem it reports, exactly."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rippl_core import InvalidInputError
from rippl_core.models import TreeHead
from rippl_core.review import merkle
from rippl_core.review.heads import (
    anchored_problems,
    head_json,
    head_model,
    head_problems,
    sign_head,
    signed_bytes,
)
from rippl_core.review.keys import (
    Registry,
    canonical_statement,
    decision_statement,
    public_hex,
    registration_statement,
    registry_of,
    sign_statement,
    signature_valid,
    statement_problems,
)
from rippl_core.review.receipts import GENESIS, leaf_hash, receipt_id, seal, verify_chain

KEYS = {name: Ed25519PrivateKey.from_private_bytes(hashlib.sha256(name.encode()).digest())
        for name in ("alice", "alice2", "bob", "mallory", "log")}
PUB = {name: public_hex(key) for name, key in KEYS.items()}


class Log:
    """A chain built receipt by receipt, as the log appends them."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def add(self, body: dict[str, Any], *, seal_with: str | None = None) -> dict[str, Any]:
        seq = len(self.records) + 1
        prev = self.records[-1]["hash"] if self.records else GENESIS
        full = {"at": "2026-01-01T00:00:00+00:00", **body, "seq": seq, "prev": prev}
        record = {"id": receipt_id(seq), "seq": seq, "kind": body["kind"], "actor": body["actor"],
                  **seal(full, KEYS[seal_with] if seal_with else None)}
        self.records.append(record)
        return record

    def register(self, reviewer: str, key: str, *, seal_with: str | None = None,
                 statement_by: str | None = None) -> None:
        statement = registration_statement(reviewer, PUB[key])
        self.add({"kind": "key_registered", "actor": reviewer, "reviewer": reviewer,
                  "public_key": PUB[key], **sign_statement(statement, KEYS[statement_by or key])},
                 seal_with=seal_with or key)

    def decide(self, actor: str, key: str | None, *, review: str = "REV-1",
               kind: str = "retraction_approved", proposed_by: str = "monitor",
               seal_with: str | None = None) -> None:
        body = {"kind": kind, "actor": actor, "review": review, "claim": "C1",
                "proposed_by": proposed_by, "note": "ok", "affected": []}
        if key is not None:
            body |= sign_statement(decision_statement(kind=kind, reviewer=actor, review=review,
                                                      claim="C1", proposed_by=proposed_by,
                                                      note="ok"), KEYS[key])
        self.add(body, seal_with=seal_with)

    def revoke(self, reviewer: str, key: str, by: str = "security") -> None:
        self.add({"kind": "key_revoked", "actor": by, "reviewer": reviewer, "public_key": PUB[key],
                  "reason": "lost"})

    def problems(self, **kw: Any) -> list[str]:
        return verify_chain(self.records, **kw).problems


def test_statements_are_canonical_and_signed() -> None:
    statement = decision_statement(kind="retraction_approved", reviewer="alice", review="REV-1",
                                   claim="C1", proposed_by="bob", note="é ok")
    assert canonical_statement(statement) == (
        '{"claim":"C1","kind":"retraction_approved","note":"é ok","proposed_by":"bob",'
        '"review":"REV-1","reviewer":"alice"}').encode()
    signed = sign_statement(statement, KEYS["alice"])
    assert signed["statement_key"] == PUB["alice"] and signed["statement"] == statement
    assert signature_valid(statement, signed["statement_signature"], PUB["alice"]) is True
    assert signature_valid(statement, signed["statement_signature"], PUB["bob"]) is False
    assert signature_valid(statement | {"note": "x"}, signed["statement_signature"],
                           PUB["alice"]) is False
    assert signature_valid(statement, "zz", PUB["alice"]) is False
    assert signature_valid(statement, signed["statement_signature"], "00") is False
    assert signature_valid(statement, None, None) is False


def test_a_statement_must_say_what_its_receipt_says() -> None:
    statement = decision_statement(kind="retraction_approved", reviewer="alice", review="REV-1",
                                   claim="C1", proposed_by="bob", note="ok")
    body = {"kind": "retraction_approved", "actor": "alice", "review": "REV-1", "claim": "C1",
            "proposed_by": "bob", "note": "ok", **sign_statement(statement, KEYS["alice"])}
    assert statement_problems(3, body) == []
    assert statement_problems(3, {"kind": "x"}) == []
    assert statement_problems(3, body | {"actor": "bob"}) == [
        "receipt #3: the signed statement's reviewer 'alice' differs from the receipt's ('bob')"]
    assert statement_problems(3, body | {"note": "changed"}) == [
        "receipt #3: the signed statement's note 'ok' differs from the receipt's ('changed')"]
    assert statement_problems(3, body | {"statement_key": PUB["bob"]}) == [
        "receipt #3: the statement signed by alice does not verify"]
    assert statement_problems(3, body | {"statement": "text"}) == [
        "receipt #3: its statement is not an object"]


def test_an_honest_log_with_keys_verifies_and_its_registry_follows_it() -> None:
    log = Log()
    log.decide("ops", None, kind="retraction")
    log.register("alice", "alice")
    log.decide("alice", "alice")
    log.decide("alice", None, seal_with="alice", kind="retraction")  # a sealed receipt counts too
    log.register("alice", "alice2", seal_with="alice", statement_by="alice2")  # a rotation
    log.decide("alice", "alice2")
    log.register("bob", "bob")
    log.revoke("bob", "bob")
    log.decide("bob", None, kind="retraction_rejected")  # no key any more: unsigned is fine
    log.register("alice", "alice2")  # registering the current key again rotates nothing
    log.decide("alice", "alice2", review="REV-9")
    assert log.problems() == []
    registry = registry_of((r, json.loads(r["body"])) for r in log.records)
    assert registry.keys() == {"alice": PUB["alice2"]}
    assert registry.current["alice"] == (PUB["alice2"], 10)
    assert registry.retired == {PUB["alice"]: (5, "rotated"), PUB["bob"]: (8, "revoked")}
    assert registry.owner == {PUB["alice"]: "alice", PUB["alice2"]: "alice", PUB["bob"]: "bob"}


def test_a_key_signing_for_another_reviewer_is_reported() -> None:
    log = Log()
    log.register("alice", "alice")
    log.decide("bob", "alice")  # bob's decision, signed by alice's key
    assert log.problems() == ["receipt #2: made by bob but signed with the key registered to alice"]
    sealed = Log()
    sealed.register("alice", "alice")
    sealed.decide("bob", None, seal_with="alice")
    assert sealed.problems() == ["receipt #2: made by bob but signed with the key registered to alice"]


def test_a_stripped_or_foreign_signature_of_a_registered_reviewer_is_reported() -> None:
    log = Log()
    log.register("alice", "alice")
    log.decide("alice", None)
    log.decide("alice", "mallory", review="REV-2")
    log.decide("alice", None, seal_with="mallory", review="REV-3")
    expected = "not signed by alice, whose key was registered at #1 (a signature was stripped or forged)"
    assert log.problems() == [f"receipt #{n}: {expected}" for n in (2, 3, 4)]
    # a revocation needs no signature of the reviewer whose key it revokes
    log.revoke("alice", "alice", by="alice")
    assert log.problems() == [f"receipt #{n}: {expected}" for n in (2, 3, 4)]


def test_retired_keys_sign_nothing_after() -> None:
    log = Log()
    log.register("alice", "alice")
    log.register("alice", "alice2", seal_with="alice", statement_by="alice2")
    log.decide("alice", "alice")
    log.revoke("alice", "alice2")
    log.decide("alice", "alice2", review="REV-2")
    log.decide("alice", None, review="REV-3", seal_with="alice2")
    problems = log.problems()
    assert problems[0] == (f"receipt #3: signed with alice's key {PUB['alice'][:16]}…, rotated at #2: "
                           "a retired key signs nothing after")
    assert problems[1] == "receipt #3: not signed by alice, whose key was registered at #2 (a " \
                          "signature was stripped or forged)"
    assert problems[2:] == [
        f"receipt #5: signed with alice's key {PUB['alice2'][:16]}…, revoked at #4: a retired key "
        "signs nothing after",
        f"receipt #6: signed with alice's key {PUB['alice2'][:16]}…, revoked at #4: a retired key "
        "signs nothing after"]


def test_registrations_need_proof_of_possession_and_the_current_keys_seal() -> None:
    cases: list[tuple[Any, str]] = [
        (lambda log: log.register("alice", "alice", statement_by="mallory"),
         "receipt #1: a key registration must be made by the reviewer and signed with the key it "
         "registers"),
        (lambda log: log.add({"kind": "key_registered", "actor": "alice", "reviewer": "alice",
                              "public_key": PUB["alice"], **sign_statement(
                                  registration_statement("alice", PUB["alice"]), KEYS["mallory"]),
                              "statement_key": PUB["alice"]}),
         "receipt #1: the statement signed by alice does not verify"),
        (lambda log: log.add({"kind": "key_registered", "actor": "admin", "reviewer": "alice",
                              "public_key": PUB["alice"], **sign_statement(
                                  registration_statement("alice", PUB["alice"]), KEYS["alice"])}),
         "receipt #1: the signed statement's reviewer 'alice' differs from the receipt's ('admin')"),
        (lambda log: log.add({"kind": "key_registered", "actor": "alice", "reviewer": "alice",
                              "public_key": PUB["alice"]}),
         "receipt #1: a key registration must be made by the reviewer and signed with the key it "
         "registers"),
    ]
    for make, expected in cases:
        log = Log()
        make(log)
        assert expected in log.problems(), log.problems()
    log = Log()
    log.register("alice", "alice")
    log.register("alice", "alice2")  # sealed with the new key only: not authorised
    assert log.problems() == [
        "receipt #2: rotates alice's key without the seal of the key it replaces"]
    registry = registry_of((r, json.loads(r["body"])) for r in log.records)
    assert registry.keys() == {"alice": PUB["alice"]}
    log = Log()
    log.register("alice", "alice")
    log.register("bob", "alice", statement_by="alice")  # bob claims alice's key
    assert log.problems() == [
        f"receipt #2: registers key {PUB['alice'][:16]}…, which is retired or another reviewer's"]
    log = Log()
    log.register("alice", "alice")
    log.revoke("alice", "alice")
    log.register("alice", "alice")
    assert log.problems()[-1] == \
        f"receipt #3: registers key {PUB['alice'][:16]}…, which is retired or another reviewer's"


def test_revoking_a_key_that_is_not_the_reviewers_is_reported() -> None:
    log = Log()
    log.register("alice", "alice")
    log.revoke("alice", "bob")
    log.revoke("carol", "alice")
    assert log.problems() == [
        f"receipt #2: revokes key {PUB['bob'][:16]}…, which is not alice's registered key",
        f"receipt #3: revokes key {PUB['alice'][:16]}…, which is not carol's registered key"]
    assert Registry().keys() == {}


def test_trusted_keys_apply_to_statements_and_separation_of_duties() -> None:
    log = Log()
    log.decide("alice", "alice", proposed_by="alice")
    assert log.problems() == []
    assert log.problems(public_keys={"alice": PUB["alice"]}) == []
    assert log.problems(public_keys={"alice": KEYS["alice"].public_key()}) == []
    assert log.problems(public_keys={"alice": PUB["bob"]}) == [
        "receipt #1: not signed by alice, whose key is required",
        "receipt #1: the statement is signed by a key that is not alice's trusted key"]
    assert log.problems(distinct_approver=True) == [
        "receipt #1: alice approved their own proposal (separation of duties)"]
    rejected = Log()
    rejected.decide("alice", "alice", proposed_by="alice", kind="retraction_rejected")
    assert rejected.problems(distinct_approver=True) == []


# ------------------------------------------------------------------------------- tree heads


def head(size: int, root: bytes, log: str = "g") -> TreeHead:
    return TreeHead(log=log, size=size, root=root.hex(), at=datetime(2026, 1, 1, tzinfo=UTC))


def test_heads_are_signed_over_their_body() -> None:
    leaves = [merkle.leaf_hash(bytes([i])) for i in range(5)]
    signed = sign_head(head(5, merkle.root(leaves)), KEYS["log"], "operator")
    assert signed.by == "operator" and signed.public_key == PUB["log"]
    assert head_problems(signed) == []
    assert head_problems(signed, {"operator": PUB["log"]}) == []
    assert head_problems(signed.model_copy(update={"size": 4})) == [
        "the head of 4 receipts taken at 2026-01-01T00:00:00+00:00: its signature by operator "
        "does not verify (edited)"]
    assert head_problems(signed, {"operator": PUB["bob"]})[0].endswith("does not verify (edited)")
    assert head_problems(signed, {"someone": PUB["log"]}) == [
        "the head of 5 receipts taken at 2026-01-01T00:00:00+00:00 is signed by 'operator', whose "
        "key is not among the trusted keys"]
    unsigned = head(5, merkle.root(leaves))
    assert head_problems(unsigned) == []
    assert head_problems(unsigned, {"operator": PUB["log"]}) == [
        "the head of 5 receipts taken at 2026-01-01T00:00:00+00:00 is not signed; with trusted "
        "keys a signed head is required"]
    assert head_model(json.loads(signed.model_dump_json())) == signed
    # the canonical JSON the signature covers: sorted keys, no spaces
    assert signed_bytes(signed) == ('{"at":"2026-01-01T00:00:00Z","by":"operator","log":"g","root":"'
                                    + signed.root + '","size":5}').encode()
    empty = head_model({"log": "g", "size": 0, "root": merkle.EMPTY_ROOT.hex(),
                        "at": "2026-01-01T00:00:00Z"})
    assert empty.size == 0 and head_problems(empty) == []
    assert head_json(unsigned) == {"log": "g", "size": 5, "root": unsigned.root,
                                   "at": "2026-01-01T00:00:00Z"}
    assert head_model(head_json(signed)) == signed and set(head_json(signed)) == {
        "log", "size", "root", "at", "by", "signature", "public_key"}


@pytest.mark.parametrize("bad", [[], {"log": "g"}, {"log": "g", "size": -1, "root": "00" * 32,
                                                    "at": "2026-01-01T00:00:00Z"},
                                 {"log": "g", "size": True, "root": "00" * 32, "at": "x"},
                                 {"log": "g", "size": 1, "root": "0" * 63, "at": "x"},
                                 {"log": "g", "size": 1, "root": "G" * 64, "at": "x"},
                                 {"log": 3, "size": 1, "root": "0" * 64, "at": "x"},
                                 {"log": "g", "size": 1, "root": "0" * 64, "at": "not a time"}])
def test_malformed_heads_are_refused(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="a tree head is a JSON object"):
        head_model(bad)


def test_a_refused_head_is_quoted_up_to_200_characters() -> None:
    for bad in ({"log": "g" * 500, "size": -1}, {"log": "g" * 500, "size": 1, "root": "0" * 64,
                                                 "at": "not a time"}):
        with pytest.raises(InvalidInputError) as refused:
            head_model(bad)
        assert str(refused.value).endswith("; got " + json.dumps(bad)[:200])


def test_anchored_heads_are_checked_against_the_log() -> None:
    records = Log()
    for n in range(6):
        records.decide("ops", None, kind="retraction", review=f"REV-{n}")
    leaves = [leaf_hash(r) for r in records.records]
    tree = merkle.Tree(leaves)
    heads = [head(0, merkle.EMPTY_ROOT), head(3, tree.root(3)), head(6, tree.root(6))]
    assert anchored_problems(leaves, heads, "g") == []
    assert anchored_problems(leaves, [head(0, merkle.EMPTY_ROOT)], "g") == []
    assert anchored_problems(leaves[:5], heads, "g") == [
        "the head anchored at 2026-01-01T00:00:00+00:00 (6 receipts) covers more receipts than the "
        "log's 5: receipts were cut from the tail (and the head moved back)"]
    forged = [*leaves[:2], merkle.leaf_hash(b"forged"), *leaves[3:]]
    assert anchored_problems(forged, heads, "g") == [
        f"the head anchored at 2026-01-01T00:00:00+00:00 ({n} receipts) does not match the log's "
        f"first {n} receipts: history was rewritten (edited, re-sealed, re-signed or stripped) since"
        for n in (3, 6)]
    assert anchored_problems(leaves, heads, "other")[0] == \
        "the head anchored at 2026-01-01T00:00:00+00:00 (0 receipts) is of the log 'g', not 'other'"
    assert anchored_problems(leaves, [head(0, merkle.leaf_hash(b"x"))], "g") == [
        "the head anchored at 2026-01-01T00:00:00+00:00 (0 receipts) does not match the log's first "
        "0 receipts: history was rewritten (edited, re-sealed, re-signed or stripped) since"]
    assert anchored_problems(leaves, heads) == []  # no log name given: heads of any log
    signed = sign_head(head(6, tree.root(6)), KEYS["log"], "operator")
    assert anchored_problems(leaves, [signed.model_copy(update={"by": "x"})], "g") == [
        "the head of 6 receipts taken at 2026-01-01T00:00:00+00:00: its signature by x does not "
        "verify (edited)"]
