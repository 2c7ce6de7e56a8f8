"""Verifying receipts, outside any database: the problem a verifier reports for each tamper class,
exactly (its kind and the receipt it names, and no other), for a chain and for an exported file.

The chains here are built with the functions the gate uses (`seal`, `receipt_id`), so a verifier
that accepted a tampered chain, or reported an intact one, fails these tests whatever else the
suite checks through the database (tests/review/test_receipts.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rippl_core import InvalidInputError
from rippl_core.review.receipts import (
    GENESIS,
    _fast_domain,
    canonical,
    digest,
    export_lines,
    private_key,
    public_hex,
    read_jsonl,
    receipt_id,
    receipt_model,
    seal,
    verify_chain,
    verify_export,
)

KEYS = {name: Ed25519PrivateKey.from_private_bytes(hashlib.sha256(name.encode()).digest())
        for name in ("alice", "bob", "mallory")}
TRUSTED = {name: public_hex(KEYS[name].public_key()) for name in ("alice", "bob")}
ACTORS = ["alice", "bob", "alice", "bob"]


def chain(n: int = 4, *, signed: bool = True) -> list[dict[str, Any]]:
    """n receipts as stored (the id, seq, kind and actor beside the sealed body), alternately by
    alice and bob, each signed by its actor."""
    records, prev = [], GENESIS
    for seq in range(1, n + 1):
        actor = ACTORS[(seq - 1) % len(ACTORS)]
        body = {"kind": "retraction", "seq": seq, "prev": prev, "review": None, "claim": f"C{seq}",
                "actor": actor, "at": "2026-01-01T00:00:00+00:00", "affected": []}
        sealed = seal(body, KEYS[actor] if signed else None)
        records.append({"id": receipt_id(seq), "seq": seq, "kind": "retraction", "actor": actor,
                        **sealed})
        prev = sealed["hash"]
    return records


def rebody(record: dict[str, Any], rehash: bool, **change: Any) -> dict[str, Any]:
    body = json.loads(record["body"]) | change
    text = canonical(body).decode()
    return record | {"body": text} | ({"hash": hashlib.sha256(text.encode()).hexdigest()}
                                      if rehash else {})


def problems(records: list[dict[str, Any]], **kw: Any) -> list[str]:
    check = verify_chain(records, **kw)
    assert check.ok is (not check.problems)
    assert check.count == len(records)
    return check.problems


def test_an_intact_chain_verifies_with_and_without_trusted_keys() -> None:
    records = chain()
    assert problems(records) == []
    assert problems(records, public_keys=TRUSTED) == []
    assert problems(records, public_keys={"alice": KEYS["alice"].public_key()}) == []
    assert problems(records, head=(4, records[-1]["hash"])) == []
    assert problems([]) == [] and problems([], head=(0, GENESIS)) == []


def test_an_edited_body_is_reported_as_edited_and_nothing_else() -> None:
    records = chain()
    records[1] = rebody(records[1], rehash=False, claim="C-forged")
    assert problems(records) == ["receipt #2: body does not match its hash (edited)"]


def test_a_body_that_is_not_canonical_is_reported_as_edited() -> None:
    """Same content and hash, but the stored text is not the canonical form that was hashed."""
    records = chain()
    records[1] = records[1] | {"body": json.dumps(json.loads(records[1]["body"]), indent=1)}
    assert problems(records) == ["receipt #2: body does not match its hash (edited)"]


def test_an_edited_body_and_hash_breaks_the_next_link() -> None:
    records = chain()
    records[1] = rebody(records[1], rehash=True, claim="C-forged")
    # #2 is consistent with itself, but its signature covers the old hash and #3 links to it
    assert problems(records) == ["receipt #2: signature by bob does not verify",
                                 "receipt #3: does not link to the receipt before it"]


@pytest.mark.parametrize("body", ["not json", "[1, 2]", '"a string"', None])
def test_a_body_that_is_not_a_json_object_is_reported(body: str | None) -> None:
    records = chain()
    records[1] = records[1] | {"body": body} if body is not None else \
        {k: v for k, v in records[1].items() if k != "body"}
    # the walk goes on: #3 is out of order (#2 was not counted) and links to #1's successor
    assert problems(records) == [
        "receipt #2: body is not a JSON object",
        "receipt #3: out of order (expected #2); a receipt was deleted, inserted or reordered",
        "receipt #3: does not link to the receipt before it"]


def test_a_deleted_receipt_is_out_of_order_and_unlinked() -> None:
    records = chain()
    del records[1]
    assert problems(records) == [
        "receipt #3: out of order (expected #2); a receipt was deleted, inserted or reordered",
        "receipt #3: does not link to the receipt before it"]


def test_swapped_receipts_are_out_of_order() -> None:
    records = chain()
    records[1], records[2] = records[2], records[1]
    assert problems(records) == [
        "receipt #3: out of order (expected #2); a receipt was deleted, inserted or reordered",
        "receipt #3: does not link to the receipt before it",
        "receipt #2: out of order (expected #4); a receipt was deleted, inserted or reordered",
        "receipt #2: does not link to the receipt before it",
        "receipt #4: out of order (expected #3); a receipt was deleted, inserted or reordered",
        "receipt #4: does not link to the receipt before it"]


def test_a_stored_seq_that_disagrees_with_the_body_is_out_of_order() -> None:
    records = chain()
    records[1] = records[1] | {"seq": 3}  # the body says 2
    assert problems(records)[0] == (
        "receipt #3: out of order (expected #2); a receipt was deleted, inserted or reordered")
    # a body whose seq disagrees with a correct stored one, re-hashed and re-signed
    records = chain(signed=False)
    records[1] = rebody(records[1], rehash=True, seq=7) | {"id": receipt_id(7)}
    records[2] = rebody(records[2], rehash=True, prev=records[1]["hash"])
    records[3] = rebody(records[3], rehash=True, prev=records[2]["hash"])
    assert problems(records) == [
        "receipt #2: out of order (expected #2); a receipt was deleted, inserted or reordered"]


def test_a_seq_that_is_not_a_number_is_out_of_order_and_the_walk_goes_on() -> None:
    records = chain(signed=False)
    records[1] = records[1] | {"seq": "2"}
    assert problems(records) == [
        "receipt #2: out of order (expected #2); a receipt was deleted, inserted or reordered"]


def test_a_head_catches_a_cut_or_padded_tail() -> None:
    records = chain()
    last = records[-1]["hash"]
    assert problems(records[:-1], head=(4, last)) == [
        "the chain ends at #3 but its head records #4: receipts were deleted or appended outside "
        "Rippl"]
    assert problems(records, head=(3, records[2]["hash"])) == [
        "the chain ends at #4 but its head records #3: receipts were deleted or appended outside "
        "Rippl"]
    # the right length, the wrong last hash
    assert len(problems(records, head=(4, records[2]["hash"]))) == 1
    assert problems([], head=(1, last)) == [
        "the chain ends at #0 but its head records #1: receipts were deleted or appended outside "
        "Rippl"]
    assert problems(records, head=None) == []


def test_fields_beside_the_body_must_equal_it() -> None:
    records = chain()
    records[0] = records[0] | {"id": "RCP-x"}
    records[1] = records[1] | {"kind": "retraction_rejected"}
    records[2] = records[2] | {"actor": "mallory"}
    records[3] = records[3] | {"approved_by": "alice"}
    assert problems(records) == [
        "receipt #1: its id 'RCP-x' differs from its hashed body ('RCP-00000001'): edited",
        "receipt #2: its kind 'retraction_rejected' differs from its hashed body ('retraction'): "
        "edited",
        "receipt #3: its actor 'mallory' differs from its hashed body ('alice'): edited",
        "receipt #4: field 'approved_by' is not covered by its hash"]


def test_a_chain_of_bare_proofs_verifies() -> None:
    """The id, kind and actor beside the body are optional: the body is what is verified."""
    bare = [{k: v for k, v in r.items() if k in ("seq", "body", "hash", "signature", "public_key")}
            for r in chain()]
    assert problems(bare, public_keys=TRUSTED) == []


def test_signatures() -> None:
    records = chain()
    # forged bytes, bytes that are not hex, a recorded key that is not a key
    records[0] = records[0] | {"signature": "ab" * 64}
    records[1] = records[1] | {"signature": "not hex"}
    records[2] = records[2] | {"public_key": "00" * 31}
    assert problems(records) == ["receipt #1: signature by alice does not verify",
                                 "receipt #2: signature by bob does not verify",
                                 "receipt #3: signature by alice does not verify"]


def test_a_re_signed_receipt_passes_only_without_trusted_keys() -> None:
    records = chain()
    mallory = KEYS["mallory"]
    records[2] = records[2] | {"signature": mallory.sign(records[2]["hash"].encode()).hex(),
                               "public_key": public_hex(mallory.public_key())}
    assert problems(records) == []
    assert problems(records, public_keys=TRUSTED) == ["receipt #3: signature by alice does not verify"]
    assert problems(records, public_keys={"alice": KEYS["alice"].public_key()}) == [
        "receipt #3: signature by alice does not verify"]
    assert problems(records, public_keys={"bob": TRUSTED["bob"]}) == []  # alice's key not given


def test_trusted_keys_require_a_signature_of_their_actors_only() -> None:
    records = chain(signed=False)
    assert problems(records) == []
    assert problems(records, public_keys={"bob": TRUSTED["bob"]}) == [
        "receipt #2: not signed by bob, whose key is required",
        "receipt #4: not signed by bob, whose key is required"]


@pytest.mark.parametrize(("keys", "says"), [
    (["alice"], "not a list"),
    ({1: TRUSTED["alice"]}, "the actor 1 is not a string"),
    ({"alice": "zz"}, "the key of 'alice' is 'zz'"),
    ({"alice": "00" * 31}, "the key of 'alice'"),
    ({"alice": 42}, "the key of 'alice' is 42"),
])
def test_trusted_keys_are_checked(keys: Any, says: str) -> None:
    for verify in (lambda: verify_chain(chain(), public_keys=keys),
                   lambda: verify_export([], public_keys=keys)):
        with pytest.raises(InvalidInputError, match="public_keys must map each actor") as raised:
            verify()
        assert says in str(raised.value)


# ------------------------------------------------------------------------- canonical JSON


def test_canonical_json_at_the_edges_of_the_fast_domain() -> None:
    top = 2**53 - 1
    assert canonical({"x": top, "y": -top}) == b'{"x":9007199254740991,"y":-9007199254740991}'
    assert canonical({"b": True, "n": None, "l": [False, 1, "é"]}) == \
        rfc8785.dumps({"b": True, "n": None, "l": [False, 1, "é"]})
    for big in (2**53, -(2**53), 2**64):  # outside I-JSON's exact integers: the reference refuses
        with pytest.raises(rfc8785.IntegerDomainError):
            canonical({"x": big})
        with pytest.raises(rfc8785.IntegerDomainError):
            canonical({"x": [{"y": big}]})
    # non-ASCII keys sort by UTF-16 code units in JCS, not by code points as json.dumps does
    keys = {"\ue000": 1, "\U0001f600": 2}
    assert canonical(keys) == rfc8785.dumps(keys) == '{"\U0001f600":2,"\ue000":1}'.encode()
    assert canonical({"x": 1.5}) == b'{"x":1.5}'


@pytest.mark.parametrize(("value", "fast"), [
    (None, True), ("é", True), (True, True), (0, True), (2**53 - 1, True), (-(2**53) + 1, True),
    ({"a": [1, {"b": None, "c": "d"}], "e": False}, True), ([], True), ({}, True),
    (2**53, False), (-(2**53), False), (1.5, False), ({"é": 1}, False), ({1: "a"}, False),
    ({"a": [1, 2.5]}, False), ((1, 2), False), ({"a": (1,)}, False), ([{"a": 2**60}], False),
])
def test_receipt_bodies_take_the_fast_encoder(value: object, fast: bool) -> None:
    """Every receipt body is in the domain where sorted-key JSON is JCS (the ~20x faster path);
    anything else goes to the reference encoder (the property test holds the two equal)."""
    assert _fast_domain(value) is fast


def test_digest_and_seal() -> None:
    body = {"seq": 1, "a": "b"}
    assert digest(body) == hashlib.sha256(b'{"a":"b","seq":1}').hexdigest()
    assert seal(body, None) == {"body": '{"a":"b","seq":1}', "hash": digest(body)}
    signed = seal(body, KEYS["alice"].private_bytes_raw())
    assert signed["public_key"] == TRUSTED["alice"]
    KEYS["alice"].public_key().verify(bytes.fromhex(signed["signature"]), digest(body).encode())


@pytest.mark.parametrize("bad", [b"\x00" * 31, b"\x00" * 33, "a string", 42, None])
def test_a_signing_key_is_ed25519(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="Ed25519PrivateKey or its 32 raw bytes"):
        private_key(bad)
    assert private_key(KEYS["bob"]) is KEYS["bob"]
    assert public_hex(private_key(KEYS["bob"].private_bytes_raw()).public_key()) == TRUSTED["bob"]


def test_receipt_ids_and_what_a_reader_sees() -> None:
    assert receipt_id(7) == "RCP-00000007" and receipt_id("x") == "RCP-x"
    record = chain()[1]
    seen = receipt_model(record | {"kind": "x", "actor": "mallory", "id": "RCP-y"})
    assert (seen.id, seen.seq, seen.kind, seen.actor, seen.claim) == \
        ("RCP-00000002", 2, "retraction", "bob", "C2")
    assert (seen.hash, seen.signature, seen.public_key) == \
        (record["hash"], record["signature"], TRUSTED["bob"])
    assert seen.prev_hash == chain()[0]["hash"] and seen.review is None


# --------------------------------------------------------------------------------- export


def exported(records: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    head = (records[-1]["seq"], records[-1]["hash"]) if records else None
    return [json.loads(line) for line in export_lines(records, head=head, **kw)]


def export_problems(lines: list[dict[str, Any]], **kw: Any) -> list[str]:
    check = verify_export(lines, **kw)
    assert check.ok is (not check.problems)
    assert check.count == sum(1 for line in lines if "head" not in line)
    return check.problems


def test_an_export_is_its_head_then_each_receipt() -> None:
    records = chain()
    lines = exported(records)
    head = lines[0]["head"]
    assert set(lines[0]) == {"head"}
    assert (head["count"], head["seq"], head["hash"]) == (4, 4, records[-1]["hash"])
    assert "by" not in head and "exported_at" in head
    assert lines[1:] == records
    assert export_problems(lines) == [] and export_problems(lines, public_keys=TRUSTED) != []
    empty = exported([])
    assert empty[0]["head"] | {"exported_at": None} == \
        {"count": 0, "seq": 0, "hash": GENESIS, "exported_at": None}
    assert export_problems(empty) == []
    # a receipt's empty fields are left out
    assert json.loads(export_lines([records[0] | {"signature": None}], head=None)[1]) == \
        {k: v for k, v in records[0].items() if k != "signature"}


def test_a_signed_export_verifies_against_trusted_keys() -> None:
    lines = exported(chain(), signing_key=KEYS["alice"], by="alice")
    assert lines[0]["head"]["by"] == "alice" and lines[0]["public_key"] == TRUSTED["alice"]
    assert export_problems(lines) == []
    assert export_problems(lines, public_keys=TRUSTED) == []
    for wrong in ({"signing_key": KEYS["alice"]}, {"by": "alice"}):
        with pytest.raises(InvalidInputError, match="both the signing key and who signs"):
            export_lines(chain(), head=None, **wrong)


def test_a_cut_or_padded_export_is_reported_by_its_head() -> None:
    lines = exported(chain())
    assert export_problems(lines[:-1]) == [
        "the chain ends at #3 but its head records #4: receipts were deleted or appended outside "
        "Rippl",
        "the head records 4 receipts but the file holds 3: receipts were cut or added"]
    assert export_problems(lines[:1]) == [
        "the chain ends at #0 but its head records #4: receipts were deleted or appended outside "
        "Rippl",
        "the head records 4 receipts but the file holds 0: receipts were cut or added"]
    padded = [lines[0] | {"head": lines[0]["head"] | {"count": 5}}, *lines[1:]]
    assert export_problems(padded) == [
        "the head records 5 receipts but the file holds 4: receipts were cut or added"]


def test_an_export_without_its_head_first_and_alone_is_reported() -> None:
    lines = exported(chain())
    no_head = "the file has no head (how many receipts, the last hash): a cut tail cannot be " \
              "detected. Export it again with `rippl receipts export`"
    misplaced = "the head must be the file's first line, and only one"
    assert export_problems(lines[1:]) == [no_head]
    assert export_problems([*lines[1:], lines[0]]) == [misplaced]
    assert export_problems([*lines, lines[0]]) == [misplaced]
    # the receipts are still verified: a broken link is reported beside the missing head
    broken = [lines[1], lines[3], lines[4]]
    assert export_problems(broken)[-1] == no_head and len(export_problems(broken)) == 3
    assert export_problems([*broken, lines[0]])[-1] == misplaced


@pytest.mark.parametrize("head", [[1, 2], "x", {"count": 4, "seq": 4}, {"seq": 4, "hash": "h"},
                                  {"count": 4, "hash": "h"}, {"count": 4, "seq": None, "hash": "h"},
                                  {"count": 4, "seq": "4", "hash": "h"}])
def test_a_malformed_head_is_reported(head: Any) -> None:
    lines = exported(chain())
    assert export_problems([{"head": head}, *lines[1:]]) == [
        "the head is malformed (it needs count, seq and hash)"]
    assert export_problems([{"head": head}, *lines[2:]])[-1] == \
        "the head is malformed (it needs count, seq and hash)"


def test_a_head_signature() -> None:
    lines = exported(chain(), signing_key=KEYS["alice"], by="alice")
    edited = [lines[0] | {"head": lines[0]["head"] | {"count": 4, "exported_at": "x"}}, *lines[1:]]
    says = "the head's signature by alice does not verify (edited)"
    assert export_problems(edited) == [says]
    assert export_problems(edited, public_keys=TRUSTED) == [says]
    # verified with the trusted key, not the one recorded beside it
    swapped = [lines[0] | {"public_key": TRUSTED["bob"]}, *lines[1:]]
    assert export_problems(swapped) == [says]
    assert export_problems(swapped, public_keys=TRUSTED) == []
    assert export_problems(swapped, public_keys={"alice": KEYS["alice"].public_key(),
                                                 "bob": TRUSTED["bob"]}) == []
    garbled = [lines[0] | {"signature": "not hex"}, *lines[1:]]
    assert export_problems(garbled) == [says]
    # unsigned: fine alone, required once trusted keys are given
    unsigned = exported(chain())
    assert export_problems(unsigned, public_keys=TRUSTED) == [
        "the head is not signed: with trusted keys given, a signed export is required "
        "(rippl receipts export FILE --key KEY --by NAME)"]
    # signed by a key not trusted, or by no one named
    mallory = exported(chain(), signing_key=KEYS["mallory"], by="mallory")
    assert export_problems(mallory) == []
    assert export_problems(mallory, public_keys=TRUSTED) == [
        "the head is signed by 'mallory', whose key is not among the trusted keys"]
    nameless = [{k: v for k, v in mallory[0].items()} | {"head": {
        k: v for k, v in mallory[0]["head"].items() if k != "by"}}, *mallory[1:]]
    assert export_problems(nameless) == ["the head's signature by None does not verify (edited)"]
    assert export_problems(nameless, public_keys=TRUSTED) == [
        "the head is signed by None, whose key is not among the trusted keys"]


def test_read_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "chain.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"b": 2}\n')
    assert read_jsonl(path) == [{"a": 1}, {"b": 2}]
    path.write_text('{"a": 1}\n{"b": \n')
    with pytest.raises(InvalidInputError, match=r"chain\.jsonl, line 2: not a JSON object"):
        read_jsonl(path)
    with pytest.raises(InvalidInputError,
                       match=r"^cannot read receipts from .*missing: No such file or directory$"):
        read_jsonl(tmp_path / "missing")


def test_a_chain_starts_from_sixty_four_zeros() -> None:
    """The genesis link is part of the format: a chain written by another Rippl, or by hand, starts
    from 64 zeros, and an empty export's head records them."""
    body = {"kind": "retraction", "seq": 1, "prev": "0" * 64, "review": None, "claim": "C",
            "actor": "alice", "at": "2026-01-01T00:00:00+00:00", "affected": []}
    assert problems([{"seq": 1, **seal(body, None)}]) == []
    assert problems([{"seq": 1, **seal(body | {"prev": "0" * 65}, None)}]) == [
        "receipt #1: does not link to the receipt before it"]
    assert json.loads(export_lines([], head=None)[0])["head"]["hash"] == "0" * 64
