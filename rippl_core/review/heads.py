"""Signed tree heads: the small statement of the log an outsider keeps (RFC 9162's STH).

A head is `{"log", "size", "root", "at"}` (the graph, how many receipts, the Merkle root in hex,
when it was taken, ISO-8601), optionally signed with Ed25519 over its canonical JSON by `by`, whose
public key rides along. As JSON (one object, `signature`, `public_key` and `by` beside the body
fields) it is what `rippl receipts head` prints, what a witness keeps, and what `verify --anchor`
reads back. Pure: `cryptography` and the standard library.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from rippl_core.errors import InvalidInputError
from rippl_core.models import TreeHead
from rippl_core.review import merkle
from rippl_core.review.keys import public_hex

BODY = ("log", "size", "root", "at")


def head_body(head: TreeHead | Mapping[str, Any]) -> dict[str, Any]:
    data = head.model_dump(mode="json") if isinstance(head, TreeHead) else head
    return {name: data.get(name) for name in BODY} | ({"by": data["by"]} if data.get("by") else {})


def signed_bytes(head: TreeHead | Mapping[str, Any]) -> bytes:
    return json.dumps(head_body(head), sort_keys=True, separators=(",", ":")).encode()


def sign_head(head: TreeHead, key: Ed25519PrivateKey, by: str) -> TreeHead:
    head = head.model_copy(update={"by": by})
    return head.model_copy(update={"signature": key.sign(signed_bytes(head)).hex(),
                                   "public_key": public_hex(key)})


def head_model(data: Mapping[str, Any]) -> TreeHead:
    """A head from its JSON form, checked: a malformed one is refused with what it lacks."""
    usage = ("a tree head is a JSON object with log (text), size (an integer >= 0), root (64 hex "
             "characters) and at (an ISO-8601 time), as `rippl receipts head --format json` prints")
    if not isinstance(data, Mapping):
        raise InvalidInputError(f"{usage}; got {type(data).__name__}")
    size, root = data.get("size"), data.get("root")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0 or not isinstance(root, str) \
            or len(root) != 64 or any(c not in "0123456789abcdef" for c in root) \
            or not isinstance(data.get("log"), str) or not isinstance(data.get("at"), str):
        raise InvalidInputError(f"{usage}; got {json.dumps(dict(data))[:200]}")
    try:
        return TreeHead.model_validate({k: data.get(k) for k in (*BODY, "by", "signature",
                                                                 "public_key")})
    except ValueError:
        raise InvalidInputError(f"{usage}; got {json.dumps(dict(data))[:200]}") from None


def head_json(head: TreeHead) -> dict[str, Any]:
    return {k: v for k, v in head.model_dump(mode="json").items() if v is not None}


def head_problems(head: TreeHead, trusted: Mapping[str, str] | None = None) -> list[str]:
    """Whether a head's signature verifies (by its own key, or by `by`'s trusted key if given);
    an unsigned head has no problem unless trusted keys are required."""
    where = f"the head of {head.size} receipts taken at {head.at.isoformat()}"
    if head.signature is None:
        return [f"{where} is not signed; with trusted keys a signed head is required"] \
            if trusted else []
    key = (trusted or {}).get(str(head.by)) if trusted else head.public_key
    if key is None:
        return [f"{where} is signed by {head.by!r}, whose key is not among the trusted keys"]
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(str(key))).verify(
            bytes.fromhex(head.signature), signed_bytes(head))
    except (InvalidSignature, ValueError, TypeError):
        return [f"{where}: its signature by {head.by} does not verify (edited)"]
    return []


def anchored_problems(leaves: list[bytes], heads: list[TreeHead], log: str | None = None,
                      trusted: Mapping[str, str] | None = None) -> list[str]:
    """Check a log (its leaf hashes, in order) against heads anchored outside the database:
    each head's tree must be a prefix of this one (the log only grew since), which a cut tail,
    a rewritten or re-sealed history, or a stripped signature breaks, whatever keys are trusted.
    The latest head is checked with an RFC 9162 consistency proof from it to the whole log."""
    tree = merkle.Tree(leaves)
    problems: list[str] = []
    for head in heads:
        where = f"the head anchored at {head.at.isoformat()} ({head.size} receipts)"
        problems.extend(head_problems(head, trusted))
        if log is not None and head.log != log:
            problems.append(f"{where} is of the log {head.log!r}, not {log!r}")
        elif head.size > len(leaves):
            problems.append(f"{where} covers more receipts than the log's {len(leaves)}: receipts "
                            "were cut from the tail (and the head moved back)")
        elif tree.root(head.size).hex() != head.root:
            problems.append(f"{where} does not match the log's first {head.size} receipts: history "
                            "was rewritten (edited, re-sealed, re-signed or stripped) since")
    if heads and not problems:
        latest = heads[-1]
        proof = tree.consistency_proof(latest.size)
        ok = merkle.verify_consistency(latest.size, len(leaves), bytes.fromhex(latest.root),
                                       tree.root(), proof) if latest.size else \
            latest.root == merkle.EMPTY_ROOT.hex()
        if not ok:
            problems.append(f"the log is not consistent with the latest anchored head "
                            f"({latest.size} receipts)")
    return problems
