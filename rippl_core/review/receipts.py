"""Tamper-evident receipts: canonical JSON (RFC 8785), SHA-256, a hash chain, Ed25519 signatures,
and the leaves of the log's Merkle tree.

Pure functions: building a receipt and verifying a chain need no database, so an exported chain
(JSON Lines) can be verified anywhere.

Each receipt is also a leaf of an RFC 9162 Merkle tree (`review/merkle.py`), whatever its kind: the
leaf is the canonical JSON of what the receipt stores and proves (its body, hash, signature and
public key), so editing, re-signing or stripping the signature of any receipt changes the root.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from rippl_core.errors import InvalidInputError
from rippl_core.models import Receipt, ReceiptCheck
from rippl_core.review import merkle
from rippl_core.review.keys import Registry, statement_problems

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


def receipt_id(seq: Any) -> str:
    """A receipt's id, derived from its hashed sequence number."""
    return f"RCP-{seq:08d}" if isinstance(seq, int) else f"RCP-{seq}"


# The fields of a stored receipt: its hashed body and what proves it, and copies of body fields
# kept beside it for queries (each must equal the body's; the id is derived from the body's seq).
PROOF = ("body", "hash", "signature", "public_key")
MIRRORED = ("kind", "actor")


def leaf_data(record: Mapping[str, Any]) -> bytes:
    """A receipt's leaf in the Merkle tree: the canonical JSON of its proof fields (those present),
    the same for every receipt kind."""
    return canonical({k: record[k] for k in PROOF if record.get(k) is not None})


def leaf_hash(record: Mapping[str, Any]) -> bytes:
    return merkle.leaf_hash(leaf_data(record))


def verify_chain(records: Iterable[Mapping[str, Any]], *, head: tuple[int, str] | None = None,
                 public_keys: Mapping[str, str | Ed25519PublicKey] | None = None,
                 distinct_approver: bool = False) -> ReceiptCheck:
    """Re-walk a chain and report every broken link: an edited body, a deleted, inserted or
    reordered receipt, a field beside the body that disagrees with it, a bad or untrusted
    signature, a reviewer key misused (see `review/keys.py`). `head` is the recorded (seq, hash)
    of the last receipt, which catches a deleted tail. `public_keys` maps an actor to the key it
    must have signed with; without it the key recorded beside each signature is used.
    `distinct_approver`: an approval by the identity that proposed the review is a problem too.
    The check's `root` is the Merkle root of the receipts walked (one leaf each)."""
    public_keys = _trusted(public_keys)
    problems: list[str] = []
    registry = Registry()
    frontier: list[bytes] = []
    previous, expected_seq, count = GENESIS, 1, 0
    for record in records:
        frontier, _ = merkle.frontier_append(frontier, count, leaf_hash(record))
        count += 1
        seq = record.get("seq")
        try:
            body = json.loads(record["body"])
            if not isinstance(body, dict):
                raise TypeError
        except (KeyError, TypeError, json.JSONDecodeError):
            problems.append(f"receipt #{seq}: body is not a JSON object")
            continue
        if seq != expected_seq or body.get("seq") != seq:
            problems.append(f"receipt #{seq}: out of order (expected #{expected_seq}); a receipt "
                            "was deleted, inserted or reordered")
        if digest(body) != record.get("hash") or canonical(body).decode() != record["body"]:
            problems.append(f"receipt #{seq}: body does not match its hash (edited)")
        if body.get("prev") != previous:
            problems.append(f"receipt #{seq}: does not link to the receipt before it")
        problems.extend(_field_problems(record, body))
        signature = _signature_problems(record, body, public_keys)
        problems.extend(signature)
        problems.extend(statement_problems(seq, body))
        problems.extend(registry.problems(seq, record, body, record.get("signature") is not None
                                          and not signature))
        problems.extend(_statement_trust_problems(seq, body, public_keys))
        if distinct_approver and body.get("kind") == "retraction_approved" \
                and body.get("proposed_by") == body.get("actor"):
            problems.append(f"receipt #{seq}: {body.get('actor')} approved their own proposal "
                            "(separation of duties)")
        previous = str(record.get("hash"))
        expected_seq = (seq if isinstance(seq, int) else expected_seq) + 1
    if head is not None and head[0] is not None and (head[0] != expected_seq - 1 or head[1] != previous):
        problems.append(f"the chain ends at #{expected_seq - 1} but its head records #{head[0]}: "
                        "receipts were deleted or appended outside Rippl")
    return ReceiptCheck(ok=not problems, count=count, problems=problems,
                        root=merkle.frontier_root(frontier).hex())


def _same_key(key: object, trusted: str | Ed25519PublicKey) -> bool:
    wanted = public_hex(trusted) if isinstance(trusted, Ed25519PublicKey) else str(trusted).lower()
    return str(key).lower() == wanted


def _statement_trust_problems(seq: object, body: Mapping[str, Any],
                              public_keys: Mapping[str, str | Ed25519PublicKey] | None) -> list[str]:
    """With trusted keys, a statement's key must be the trusted key of its signer."""
    trusted = (public_keys or {}).get(str(body.get("actor")))
    if trusted is None or "statement" not in body:
        return []
    if not _same_key(body.get("statement_key"), trusted):
        return [f"receipt #{seq}: the statement is signed by a key that is not {body.get('actor')}'s "
                "trusted key"]
    return []


def _trusted(public_keys: Any) -> Mapping[str, str | Ed25519PublicKey] | None:
    """The trusted keys, checked: each actor (a string) to an Ed25519 public key, given as an
    Ed25519PublicKey or as its 32 raw bytes in hex."""
    if public_keys is None:
        return None
    usage = ("public_keys must map each actor to its Ed25519 public key (an Ed25519PublicKey, or "
             "64 hex characters)")
    if not isinstance(public_keys, Mapping):
        raise InvalidInputError(f"{usage}, not a {type(public_keys).__name__}")
    for actor, key in public_keys.items():
        if not isinstance(actor, str):
            raise InvalidInputError(f"{usage}; the actor {actor!r} is not a string")
        if isinstance(key, Ed25519PublicKey):
            continue
        try:
            Ed25519PublicKey.from_public_bytes(bytes.fromhex(key))
        except (TypeError, ValueError):
            raise InvalidInputError(f"{usage}; the key of {actor!r} is {key!r:.80}") from None
    return public_keys


def _field_problems(record: Mapping[str, Any], body: Mapping[str, Any]) -> list[str]:
    """Every field a reader may rely on is covered by the hash: the copies kept beside the body
    must equal it, and nothing else may sit beside it."""
    seq, problems = record.get("seq"), []
    for key, value in record.items():
        if key in PROOF or key == "seq":
            continue
        expected: object
        if key == "id":
            expected = receipt_id(body.get("seq"))
        elif key in MIRRORED:
            expected = body.get(key)
        else:
            problems.append(f"receipt #{seq}: field {key!r} is not covered by its hash")
            continue
        if value != expected:
            problems.append(f"receipt #{seq}: its {key} {value!r} differs from its hashed body "
                            f"({expected!r}): edited")
    return problems


def _signature_problems(record: Mapping[str, Any], body: Mapping[str, Any],
                        public_keys: Mapping[str, str | Ed25519PublicKey] | None) -> list[str]:
    seq, actor = record.get("seq"), body.get("actor")
    trusted = (public_keys or {}).get(str(actor))
    signature = record.get("signature")
    if signature is None:
        if trusted is None or ("statement" in body and _same_key(body.get("statement_key"), trusted)):
            return []  # a statement signed by the trusted key (checked on its own) is its signature
        return [f"receipt #{seq}: not signed by {actor}, whose key is required"]
    key_hex = trusted if trusted is not None else record.get("public_key")
    try:
        key = key_hex if isinstance(key_hex, Ed25519PublicKey) else \
            Ed25519PublicKey.from_public_bytes(bytes.fromhex(str(key_hex)))
        key.verify(bytes.fromhex(str(signature)), str(record.get("hash")).encode())
    except (InvalidSignature, ValueError, TypeError):
        return [f"receipt #{seq}: signature by {actor} does not verify"]
    return []


def receipt_model(props: Mapping[str, Any]) -> Receipt:
    """A receipt as a reader sees it: every field from the hashed body (the id derived from its
    seq), so nothing shown is outside what the hash and signature cover."""
    body = json.loads(props["body"])
    return Receipt(id=receipt_id(body["seq"]), seq=body["seq"], kind=body["kind"],
                   review=body.get("review"), claim=body.get("claim"), actor=body["actor"],
                   at=body["at"], hash=props["hash"], prev_hash=body["prev"], body=body,
                   signature=props.get("signature"), public_key=props.get("public_key"))


def export_lines(records: Sequence[Mapping[str, Any]], *, head: tuple[int, str] | None,
                 signing_key: SigningKey | None = None, by: str | None = None,
                 log: str | None = None) -> list[str]:
    """A chain as JSON Lines (no newlines): first its head (how many receipts, the last seq and
    hash, as the database records them; signed by `by` with `signing_key` if given), then each
    receipt as stored, one per line (so an edit made in the database shows in the file too). The
    head is what makes a cut tail detectable."""
    if (signing_key is None) != (by is None):
        raise InvalidInputError("to sign an export, give both the signing key and who signs (by)")
    seq, last = head if head is not None else (0, GENESIS)
    summary: dict[str, Any] = {"count": len(records), "seq": seq, "hash": last,
                               "exported_at": datetime.now(UTC).isoformat()}
    if by is not None:
        summary["by"] = by
    if log is not None:
        summary["log"] = log
    lines = [json.dumps({"head": summary, **_sign(summary, signing_key)})]
    lines.extend(json.dumps({k: v for k, v in record.items() if v is not None}) for record in records)
    return lines


def _sign(summary: Mapping[str, Any], signing_key: SigningKey | None) -> dict[str, Any]:
    if signing_key is None:
        return {}
    key = private_key(signing_key)
    return {"signature": key.sign(digest(summary).encode()).hex(),
            "public_key": public_hex(key.public_key())}


def verify_export(records: Sequence[Mapping[str, Any]], *,
                  public_keys: Mapping[str, str | Ed25519PublicKey] | None = None,
                  distinct_approver: bool = False) -> ReceiptCheck:
    """Verify an exported chain, its head included: a cut or padded tail, a missing or edited
    head, and (when `public_keys` are given) a head not signed by a trusted key are reported."""
    public_keys = _trusted(public_keys)
    heads = [i for i, record in enumerate(records) if "head" in record]
    receipts = [record for record in records if "head" not in record]
    if not heads:
        check = verify_chain(receipts, public_keys=public_keys,
                         distinct_approver=distinct_approver)
        return _failed(check, "the file has no head (how many receipts, the last hash): a cut "
                       "tail cannot be detected. Export it again with `rippl receipts export`")
    if heads != [0]:
        check = verify_chain(receipts, public_keys=public_keys,
                         distinct_approver=distinct_approver)
        return _failed(check, "the head must be the file's first line, and only one")
    summary = records[0]["head"]
    if not isinstance(summary, dict) or not {"count", "seq", "hash"} <= summary.keys() \
            or not isinstance(summary["seq"], int):
        return _failed(verify_chain(receipts, public_keys=public_keys,
                         distinct_approver=distinct_approver),
                       "the head is malformed (it needs count, seq and hash)")
    check = verify_chain(receipts, head=(summary["seq"], summary["hash"]), public_keys=public_keys,
                         distinct_approver=distinct_approver)
    problems = []
    if summary["count"] != len(receipts):
        problems.append(f"the head records {summary['count']} receipts but the file holds "
                        f"{len(receipts)}: receipts were cut or added")
    problems.extend(_head_signature_problems(records[0], summary, public_keys))
    return _failed(check, *problems) if problems else check


def _failed(check: ReceiptCheck, *problems: str) -> ReceiptCheck:
    return check.model_copy(update={"ok": False, "problems": [*check.problems, *problems]})


def _head_signature_problems(record: Mapping[str, Any], summary: Mapping[str, Any],
                             public_keys: Mapping[str, str | Ed25519PublicKey] | None) -> list[str]:
    by, signature = summary.get("by"), record.get("signature")
    trusted = (public_keys or {}).get(str(by)) if by is not None else None
    if signature is None:
        return ["the head is not signed: with trusted keys given, a signed export is required "
                "(rippl receipts export FILE --key KEY --by NAME)"] if public_keys else []
    if public_keys and trusted is None:
        return [f"the head is signed by {by!r}, whose key is not among the trusted keys"]
    key_hex = trusted if trusted is not None else record.get("public_key")
    try:
        key = key_hex if isinstance(key_hex, Ed25519PublicKey) else \
            Ed25519PublicKey.from_public_bytes(bytes.fromhex(str(key_hex)))
        key.verify(bytes.fromhex(str(signature)), digest(summary).encode())
    except (InvalidSignature, ValueError, TypeError):
        return [f"the head's signature by {by} does not verify (edited)"]
    return []


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read an exported chain: one JSON object per line."""
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot read receipts from {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"{path} is not a receipts export (not UTF-8 text); export one "
                                "with `rippl receipts export FILE`") from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            raise InvalidInputError(f"{path}, line {number}: not a JSON object (was the file cut or "
                                    "edited?); a receipts export holds one object per line")
        records.append(record)
    return records
