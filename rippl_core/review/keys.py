"""A key per reviewer: signed statements, and the key registry the log itself records.

A reviewer holds an Ed25519 key of their own (made by `rippl keys new`, or in the browser). What
they sign is a *statement*: a small canonical JSON object naming the receipt kind it authorises,
the reviewer, and the fields of the decision (for an approval: the review, the claim, who proposed
it, the note). The statement, its signature and the key go into the receipt's hashed body, so
"who approved" is checkable from an export alone, and a statement can be signed where the receipt
is not built (a browser, which knows the review but not the chain's next sequence number).

Keys are registered and revoked by receipts too (`key_registered`, `key_revoked`): a registration
carries a statement signed by the key it registers (proof of possession), a rotation is a new
registration (the old key retires), a revocation retires a key. Walking the log in order, then:

- a key registered to one reviewer never signs for another (a receipt by bob signed with alice's
  key is reported);
- a reviewer with a registered key signs every receipt they make (except a revocation, which may
  come from someone who lost the key): a stripped signature is reported;
- a retired key (rotated or revoked) signs nothing after it retired.

Pure functions (`cryptography` and the standard library only), so the offline verifier uses them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

REGISTERED, REVOKED = "key_registered", "key_revoked"
# The body fields of a receipt that carries a reviewer's signed statement.
STATEMENT, STATEMENT_SIGNATURE, STATEMENT_KEY = "statement", "statement_signature", "statement_key"


def canonical_statement(statement: Mapping[str, Any]) -> bytes:
    """The bytes a reviewer signs: sorted keys, no spaces, UTF-8 (what `JSON.stringify` of an
    object with sorted keys gives in a browser, for the strings, nulls and integers a statement
    holds)."""
    return json.dumps(statement, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def public_hex(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def sign_statement(statement: Mapping[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    """The body fields carrying `statement` signed with `key`."""
    return {STATEMENT: dict(statement),
            STATEMENT_SIGNATURE: key.sign(canonical_statement(statement)).hex(),
            STATEMENT_KEY: public_hex(key)}


def signature_valid(statement: Mapping[str, Any], signature: object, key: object) -> bool:
    """Whether `signature` (hex) is `key`'s (hex) over the statement."""
    try:
        public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(str(key)))
        public.verify(bytes.fromhex(str(signature)), canonical_statement(statement))
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def decision_statement(*, kind: str, reviewer: str, review: str, claim: str, proposed_by: str,
                       note: str | None) -> dict[str, Any]:
    """What a reviewer signs to approve (kind `retraction_approved`) or reject
    (`retraction_rejected`) a review."""
    return {"kind": kind, "reviewer": reviewer, "review": review, "claim": claim,
            "proposed_by": proposed_by, "note": note}


def registration_statement(reviewer: str, public_key: str) -> dict[str, Any]:
    """What a reviewer signs, with the key being registered, to register it."""
    return {"kind": REGISTERED, "reviewer": reviewer, "public_key": public_key}


def statement_problems(seq: object, body: Mapping[str, Any]) -> list[str]:
    """A statement in a body must be signed by its key and say what the body says: each of its
    fields equals the body's field of the same name (`reviewer`: the body's actor)."""
    statement = body.get(STATEMENT)
    if statement is None:
        return []
    if not isinstance(statement, dict):
        return [f"receipt #{seq}: its statement is not an object"]
    problems = []
    for name, value in statement.items():
        expected = body.get("actor") if name == "reviewer" else body.get(name)
        if value != expected:
            problems.append(f"receipt #{seq}: the signed statement's {name} {value!r} differs "
                            f"from the receipt's ({expected!r})")
    if not signature_valid(statement, body.get(STATEMENT_SIGNATURE), body.get(STATEMENT_KEY)):
        problems.append(f"receipt #{seq}: the statement signed by {body.get('actor')} does not "
                        "verify")
    return problems


class Registry:
    """The reviewer keys a log records, as of the receipt being walked."""

    def __init__(self) -> None:
        self.current: dict[str, tuple[str, object]] = {}  # reviewer -> (key, registered at seq)
        self.owner: dict[str, str] = {}                   # key -> reviewer it was registered to
        self.retired: dict[str, tuple[object, str]] = {}  # key -> (seq, "revoked" | "rotated")

    def problems(self, seq: object, record: Mapping[str, Any], body: Mapping[str, Any],
                 record_signed: bool) -> list[str]:
        """Check one receipt against the registry as it stands, then apply it if it registers or
        revokes a key. `record_signed`: the receipt's own signature verified."""
        actor, kind = str(body.get("actor")), body.get("kind")
        used = [str(k) for k in (record.get("public_key") if record_signed else None,
                                 body.get(STATEMENT_KEY) if STATEMENT in body else None)
                if k is not None]
        problems = []
        for key in dict.fromkeys(used):
            if key in self.retired:
                at, why = self.retired[key]
                problems.append(f"receipt #{seq}: signed with {self.owner.get(key, '?')}'s key "
                                f"{key[:16]}…, {why} at #{at}: a retired key signs nothing after")
            elif kind != REGISTERED and self.owner.get(key, actor) != actor:
                problems.append(f"receipt #{seq}: made by {actor} but signed with the key "
                                f"registered to {self.owner[key]}")
        registered = self.current.get(actor)
        if registered is not None and kind not in (REGISTERED, REVOKED) \
                and registered[0] not in used:
            problems.append(f"receipt #{seq}: not signed by {actor}, whose key was registered at "
                            f"#{registered[1]} (a signature was stripped or forged)")
        if kind == REGISTERED:
            problems.extend(self._register(seq, body, actor, record.get("public_key")
                                           if record_signed else None))
        elif kind == REVOKED:
            problems.extend(self._revoke(seq, body))
        return problems

    def _register(self, seq: object, body: Mapping[str, Any], actor: str,
                  sealed_by: object) -> list[str]:
        key, reviewer = str(body.get("public_key")), body.get("reviewer")
        if reviewer != actor or body.get(STATEMENT_KEY) != key or STATEMENT not in body:
            return [f"receipt #{seq}: a key registration must be made by the reviewer and signed "
                    "with the key it registers"]
        if key in self.retired or self.owner.get(key, actor) != actor:
            return [f"receipt #{seq}: registers key {key[:16]}…, which is retired or another "
                    "reviewer's"]
        previous = self.current.get(actor)
        if previous is not None and previous[0] != key:
            if sealed_by != previous[0]:
                return [f"receipt #{seq}: rotates {actor}'s key without the seal of the key it "
                        "replaces"]
            self.retired[previous[0]] = (seq, "rotated")
        self.current[actor] = (key, seq)
        self.owner[key] = actor
        return []

    def _revoke(self, seq: object, body: Mapping[str, Any]) -> list[str]:
        key, reviewer = str(body.get("public_key")), str(body.get("reviewer"))
        if self.current.get(reviewer, ("",))[0] != key:
            return [f"receipt #{seq}: revokes key {key[:16]}…, which is not {reviewer}'s "
                    "registered key"]
        del self.current[reviewer]
        self.retired[key] = (seq, "revoked")
        return []

    def keys(self) -> dict[str, str]:
        """Each reviewer's current key."""
        return {reviewer: key for reviewer, (key, _) in self.current.items()}


def registry_of(bodies: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> Registry:
    """The registry after the (record, body) pairs of a log, trusting their signatures (for a
    verified log)."""
    registry = Registry()
    for record, body in bodies:
        registry.problems(body.get("seq"), record, body, record.get("signature") is not None)
    return registry
