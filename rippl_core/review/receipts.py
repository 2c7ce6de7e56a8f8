"""Tamper-evident receipts: canonical JSON (RFC 8785), SHA-256, a hash chain, Ed25519 signatures.

Pure functions: building a receipt and verifying a chain need no database, so an exported chain
(JSON Lines) can be verified anywhere.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from rippl_core.errors import InvalidInputError
from rippl_core.models import Receipt, ReceiptCheck

GENESIS = "0" * 64

type SigningKey = Ed25519PrivateKey | bytes


def canonical(body: Mapping[str, Any]) -> bytes:
    """RFC 8785 (JCS) canonical JSON of a receipt body.

    Receipt bodies hold only ASCII keys, strings, integers, booleans, nulls, lists and maps. For
    that domain JCS equals sorted-key, separator-free JSON with ECMAScript string escaping, which
    `json.dumps` produces ~20x faster than a general JCS encoder; anything outside the domain (a
    float, a non-ASCII key) goes through the general encoder. A property test holds the two equal.
    """
    if _fast_domain(body):
        return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return rfc8785.dumps(dict(body))


def _fast_domain(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int)):
        return not isinstance(value, int) or isinstance(value, bool) or abs(value) < 2**53
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and k.isascii() and _fast_domain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_fast_domain(v) for v in value)
    return False


def digest(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(body)).hexdigest()


def private_key(key: SigningKey) -> Ed25519PrivateKey:
    if isinstance(key, Ed25519PrivateKey):
        return key
    if isinstance(key, bytes) and len(key) == 32:
        return Ed25519PrivateKey.from_private_bytes(key)
    raise InvalidInputError("signing_key must be an Ed25519PrivateKey or its 32 raw bytes")


def public_hex(key: Ed25519PublicKey) -> str:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def seal(body: Mapping[str, Any], signing_key: SigningKey | None) -> dict[str, Any]:
    """The stored form of a receipt: canonical body, its hash, and the optional signature."""
    text = canonical(body)
    record: dict[str, Any] = {"body": text.decode(), "hash": hashlib.sha256(text).hexdigest()}
    if signing_key is not None:
        key = private_key(signing_key)
        record["signature"] = key.sign(record["hash"].encode()).hex()
        record["public_key"] = public_hex(key.public_key())
    return record


def verify_chain(records: Iterable[Mapping[str, Any]], *, head: tuple[int, str] | None = None,
                 public_keys: Mapping[str, str | Ed25519PublicKey] | None = None) -> ReceiptCheck:
    """Re-walk a chain and report every broken link: an edited body, a deleted, inserted or
    reordered receipt, a bad or untrusted signature. `head` is the recorded (seq, hash) of the
    last receipt, which catches a deleted tail. `public_keys` maps an actor to the key it must
    have signed with; without it the key recorded beside each signature is used."""
    if public_keys is not None and not isinstance(public_keys, Mapping):
        raise InvalidInputError("public_keys must map each actor to its Ed25519 public key (hex or "
                                f"Ed25519PublicKey), not a {type(public_keys).__name__}")
    problems: list[str] = []
    previous, expected_seq, count = GENESIS, 1, 0
    for record in records:
        count += 1
        seq = record.get("seq")
        try:
            body = json.loads(record["body"])
        except (KeyError, TypeError, json.JSONDecodeError):
            problems.append(f"receipt #{seq}: body is not JSON")
            continue
        if seq != expected_seq or body.get("seq") != seq:
            problems.append(f"receipt #{seq}: out of order (expected #{expected_seq}); a receipt "
                            "was deleted, inserted or reordered")
        if digest(body) != record.get("hash") or canonical(body).decode() != record["body"]:
            problems.append(f"receipt #{seq}: body does not match its hash (edited)")
        if body.get("prev") != previous:
            problems.append(f"receipt #{seq}: does not link to the receipt before it")
        problems.extend(_signature_problems(record, body, public_keys))
        previous = str(record.get("hash"))
        expected_seq = (seq if isinstance(seq, int) else expected_seq) + 1
    if head is not None and head[0] is not None and (head[0] != expected_seq - 1 or head[1] != previous):
        problems.append(f"the chain ends at #{expected_seq - 1} but its head records #{head[0]}: "
                        "receipts were deleted or appended outside Rippl")
    return ReceiptCheck(ok=not problems, count=count, problems=problems)


def _signature_problems(record: Mapping[str, Any], body: Mapping[str, Any],
                        public_keys: Mapping[str, str | Ed25519PublicKey] | None) -> list[str]:
    seq, actor = record.get("seq"), body.get("actor")
    trusted = (public_keys or {}).get(str(actor))
    signature = record.get("signature")
    if signature is None:
        return [f"receipt #{seq}: not signed by {actor}, whose key is required"] if trusted else []
    key_hex = trusted if trusted is not None else record.get("public_key")
    try:
        key = key_hex if isinstance(key_hex, Ed25519PublicKey) else \
            Ed25519PublicKey.from_public_bytes(bytes.fromhex(str(key_hex)))
        key.verify(bytes.fromhex(str(signature)), str(record.get("hash")).encode())
    except (InvalidSignature, ValueError, TypeError):
        return [f"receipt #{seq}: signature by {actor} does not verify"]
    return []


def receipt_model(props: Mapping[str, Any]) -> Receipt:
    body = json.loads(props["body"])
    return Receipt(id=props["id"], seq=props["seq"], kind=body["kind"], review=body.get("review"),
                   claim=body["claim"], actor=body["actor"], at=body["at"], hash=props["hash"],
                   prev_hash=body["prev"], body=body, signature=props.get("signature"),
                   public_key=props.get("public_key"))


def export_line(r: Receipt) -> str:
    """One stored receipt as a line of an exported chain (JSON, no newline)."""
    record = {"seq": r.seq, "id": r.id, "body": canonical(r.body).decode(), "hash": r.hash,
              "signature": r.signature, "public_key": r.public_key}
    return json.dumps({k: v for k, v in record.items() if v is not None})


def export_jsonl(receipts: Iterable[Receipt], path: Path) -> int:
    """Write a chain as JSON Lines (one stored receipt per line); returns how many."""
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for r in receipts:
            out.write(export_line(r) + "\n")
            count += 1
    return count


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read an exported chain."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"cannot read receipts from {path}: {exc}") from None
