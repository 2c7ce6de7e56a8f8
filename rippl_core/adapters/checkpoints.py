"""Checkpoints that notice tampering: the chained checkpoint store, framework-neutral.

The layout of the companion graph "checkpoints" (LangGraph's checkpointer writes it; the
`rippl checkpoints verify` command and `verify_checkpoints` read it without LangGraph), the
digests that chain it, the optional Ed25519 signatures, and the verification every read runs.

**The chain.** Each checkpoint is sealed when it is written: its `digest` is a SHA-256 over its
identity (thread, namespace, id, parent id), its content and metadata as stored, the key and the
digest of each channel blob it names, and its parent's digest (`pdigest`). Pending writes arrive
after their checkpoint (and may arrive after its children), so they are sealed beside it: a
write set node holds the manifest of the checkpoint's writes (each write's key and digest) and
a seal over the manifest and the checkpoint's identity, replaced atomically (compare and set)
by every `put_writes`. Each (thread, namespace) has a head naming its newest checkpoint and that
checkpoint's digest.

**What a read checks** (`verify`): the checkpoint's digest against its stored fields, each blob
against the digest the checkpoint recorded for it (a missing blob is named), its parent (present
with the digest it was chained to, or legitimately gone: never stored, or pruned by Rippl, which
marks where the chain now begins), its pending writes against their manifest and seal, its head
(the newest checkpoint must be the one the head names, with the head's digest; no checkpoint
may be newer than its head), the signatures when keys are given, and, for the newest checkpoint,
the head kept outside the database (`HeadAnchor`) when one is configured.

**What it catches, and what it cannot.** Without keys, every edit made by a writer who does not
recompute the digests: an edited checkpoint, blob, pending write or metadata, a deleted, inserted,
reordered or replayed checkpoint, a cut tail. With a signing key and `trusted_keys`, also every
edit by a writer who knows the scheme but not the key. Restoring an older complete copy of the
store (every digest and signature genuine, only older) is caught only with a head kept outside
the database: a `HeadAnchor`, or the digest of every head (`heads_digest`) covered by the
receipt log's anchored tree head.

Pure functions and operations (generators of `Query`/`Commit`, run by `StateGraph`): no I/O here.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from rippl_core._runtime.op import Commit, Op
from rippl_core._runtime.schema import Index, Schema
from rippl_core._runtime.wire import Query
from rippl_core.adapters.state import AsyncStateGraph, StateGraph
from rippl_core.client import AsyncRippl, Rippl
from rippl_core.errors import CheckpointIntegrityError, InvalidInputError
from rippl_core.review.receipts import SigningKey, private_key, public_hex

CHECKPOINT: Final = "Checkpoint"
BLOB: Final = "CheckpointBlob"
WRITE: Final = "CheckpointWrite"
WRITES: Final = "CheckpointWrites"
HEAD: Final = "CheckpointHead"
LABELS: Final = (CHECKPOINT, BLOB, WRITE, WRITES, HEAD)

NO_PARENT: Final = ""  # `pdigest` of a checkpoint without a parent
PARENT_NOT_STORED: Final = "-"  # `pdigest` of one whose parent id named no stored checkpoint
NO_BLOB: Final = ""  # a blob digest: the checkpoint named a channel version that was not stored
PAGE: Final = 64  # checkpoints read per round trip when a whole store is checked

_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_KEY_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def _frame(part: Any) -> str:
    """An unambiguous text of a part: its type and length before its content (so no two
    different sequences of parts give the same text, whatever characters the strings hold)."""
    if isinstance(part, str):
        return f"s{len(part)}:{part}"
    if part is None:
        return "n"
    if isinstance(part, bool):
        return "t" if part else "f"
    if isinstance(part, int):
        return f"i{part};"
    if isinstance(part, float):
        return f"d{part!r};"
    if isinstance(part, list | tuple):
        return f"l{len(part)}:" + "".join([f"s{len(p)}:{p}" if type(p) is str else _frame(p)
                                           for p in part])
    raise TypeError(f"cannot seal a {type(part).__name__}")


def _digest(kind: str, *parts: Any) -> str:
    """SHA-256 over the framed kind and parts (see `_frame`; strings, the common part, framed
    inline)."""
    text = "".join([f"s{len(p)}:{p}" if type(p) is str else _frame(p) for p in (kind, *parts)])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def key(*parts: Any) -> str:
    """A fixed-length node key for a tuple of ids (thread, namespace, checkpoint, ...)."""
    return hashlib.blake2b(_KEY_JSON.encode(parts).encode(), digest_size=16).hexdigest()


def thread_key(thread_id: str) -> str:
    return key("thread", thread_id)


def head_key(thread_id: str, checkpoint_ns: str) -> str:
    return head_key_of(thread_key(thread_id), checkpoint_ns)


def head_key_of(tkey: str, checkpoint_ns: str) -> str:
    """The key of the (thread, namespace) head, from the thread's key."""
    return key("head", tkey, checkpoint_ns)


def blob_digest(thread_id: str, checkpoint_ns: str, channel: str, version: Any, type_: str,
                data: str | None) -> str:
    return _digest("blob", thread_id, checkpoint_ns, channel, version, type_, data or "")


def write_digest(thread_id: str, checkpoint_ns: str, checkpoint_id: str, task_id: str, idx: int,
                 channel: str, type_: str, data: str | None, task_path: str | None) -> str:
    return _digest("write", thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type_,
                   data or "", task_path or "")


def checkpoint_digest(*, thread_id: str, checkpoint_ns: str, checkpoint_id: str,
                      parent_id: str | None, pdigest: str, type_: str, data: str | None,
                      meta_type: str, meta: str | None, blob_keys: Sequence[str],
                      blob_digests: Sequence[str], chained: bool) -> str:
    """The seal of a checkpoint: its identity, its parent's digest, its content and metadata as
    stored, the blobs it names with their digests, and whether it was chained when written
    (False: sealed by the migration of a store written before the chain)."""
    return _digest("checkpoint", 1 if chained else 0, thread_id, checkpoint_ns, checkpoint_id,
                   parent_id, pdigest, type_, data or "", meta_type, meta or "", list(blob_keys),
                   list(blob_digests))


def writes_seal(thread_id: str, checkpoint_ns: str, checkpoint_id: str,
                manifest: Iterable[str]) -> str:
    """The seal of a checkpoint's pending writes: their manifest (`<write key>:<digest>` each)."""
    return _digest("writes", thread_id, checkpoint_ns, checkpoint_id, sorted(manifest))


def head_digest(thread_id: str, checkpoint_ns: str, latest_id: str, digest: str) -> str:
    """What a head's signature covers: the (thread, namespace) and its newest checkpoint."""
    return _digest("head", thread_id, checkpoint_ns, latest_id, digest)


def base_mark(digest: str) -> str:
    """The mark Rippl leaves on a checkpoint whose parent it deleted (prune, delete_for_runs):
    the chain now begins there."""
    return _digest("base", digest)


def pack_seal(digest: str, pdigest: str, chained: bool, signed: Mapping[str, str]) -> str:
    """A checkpoint's `seal` property: its digest, its parent's digest, whether it was chained
    when written, and its signature, in one string (a read returns one property instead of five;
    the blob digests the digest covers are the `bd` list beside it, which a read of one
    checkpoint recomputes from the blobs instead of reading)."""
    return _JSON.encode([digest, pdigest, chained, signed.get("sig"), signed.get("pub")])


def unpack_seal(seal: str | None) -> tuple[str, str, bool, str | None, str | None] | None:
    """The fields of a `seal` property (None if absent or not a seal)."""
    if seal is None:
        return None
    try:
        digest, pdigest, chained, sig, pub = json.loads(seal)
    except (TypeError, ValueError):
        return None
    if not isinstance(digest, str):
        return None
    return digest, str(pdigest), chained is not False, sig, pub


def seal_digest(seal: str | None) -> str | None:
    """The digest in a checkpoint's (or a head's) `seal` property."""
    if seal is None:
        return None
    try:
        found = json.loads(seal)
    except (TypeError, ValueError):
        return None
    return found[0] if isinstance(found, list) and found and isinstance(found[0], str) else None


def pack_head(digest: str, signed: Mapping[str, str]) -> str:
    """A head's `seal` property: its newest checkpoint's digest and the head's signature."""
    return _JSON.encode([digest, signed.get("sig"), signed.get("pub")])


def pack_writes(manifest: Sequence[str], seal: str, signed: Mapping[str, str]) -> str:
    """A write set's `chain` property: the manifest, its seal and the seal's signature."""
    return _JSON.encode([list(manifest), seal, signed.get("sig"), signed.get("pub")])


# ------------------------------------------------------------------------------- signatures


@dataclass(frozen=True)
class ChainPolicy:
    """How a store seals and what its reads accept.

    - `signing_key`: an Ed25519 key (the service's or a reviewer's, as for receipts) that signs
      every checkpoint, write set and head written; None: digests only.
    - `trusted_keys`: public keys (hex of the 32 raw bytes, or `Ed25519PublicKey`) of which one
      must have signed every checkpoint read; None: a signature present is checked against the
      key recorded beside it, and an unsigned checkpoint is accepted.
    - `accept_unchained`: serve checkpoints sealed by the migration of a store written before the
      chain (their content before the migration is not attested). Off by default: a read of one
      raises `CheckpointIntegrityError` saying so.
    - `anchor`: the newest head of each thread kept outside the database (`HeadAnchor`), which
      catches a store restored from an older copy.
    """

    signing_key: Ed25519PrivateKey | None = None
    trusted_keys: frozenset[str] | None = None
    accept_unchained: bool = False
    anchor: HeadAnchor | None = None

    @classmethod
    def of(cls, *, signing_key: SigningKey | None = None,
           trusted_keys: Collection[str | Ed25519PublicKey] | None = None,
           accept_unchained: bool = False, anchor: HeadAnchor | None = None) -> ChainPolicy:
        """A policy from the savers' options, checked."""
        key = private_key(signing_key) if signing_key is not None else None
        trusted = None if trusted_keys is None else frozenset(_public(k) for k in trusted_keys)
        if trusted is not None and key is not None and public_hex(key.public_key()) not in trusted:
            raise InvalidInputError("the signing key's public key is not among trusted_keys: every "
                                    "checkpoint this saver writes would be refused on read; add "
                                    "it to trusted_keys")
        if anchor is not None and not isinstance(anchor, HeadAnchor):
            raise InvalidInputError("anchor must be a HeadAnchor (e.g. FileAnchor(path)), not a "
                                    f"{type(anchor).__name__}")
        return cls(key, trusted, bool(accept_unchained), anchor)

    def sign(self, digest: str) -> dict[str, str]:
        """The signature properties stored beside a digest (none without a signing key)."""
        if self.signing_key is None:
            return {}
        return {"sig": self.signing_key.sign(digest.encode()).hex(),
                "pub": public_hex(self.signing_key.public_key())}

    def signature_problem(self, digest: str, sig: Any, pub: Any, what: str) -> str | None:
        """Why the signature beside `digest` is not acceptable, or None."""
        if sig is None:
            if self.trusted_keys is not None:
                return f"{what} is not signed, and trusted_keys require a signature"
            return None
        if self.trusted_keys is not None and pub not in self.trusted_keys:
            return f"{what} is signed by a key that is not among trusted_keys"
        try:
            Ed25519PublicKey.from_public_bytes(bytes.fromhex(str(pub))).verify(
                bytes.fromhex(str(sig)), digest.encode())
        except (InvalidSignature, ValueError, TypeError):
            return f"{what}'s signature does not verify"
        return None


def _public(key: str | Ed25519PublicKey) -> str:
    if isinstance(key, Ed25519PublicKey):
        return public_hex(key)
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(key))
    except (TypeError, ValueError):
        raise InvalidInputError("trusted_keys must hold Ed25519 public keys (Ed25519PublicKey, or "
                                f"the 32 raw bytes as 64 hex characters), not {key!r:.80}") from None
    return key.lower()


# --------------------------------------------------------------------------------- anchors


@dataclass(frozen=True)
class Head:
    """The newest checkpoint of a (thread, namespace), as its head names it."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    digest: str


@runtime_checkable
class HeadAnchor(Protocol):
    """Where the newest head of each thread is kept outside the database, so that a store
    restored from an older copy is noticed: the saver calls `advance` after each put that moved
    a head, and compares the head it reads with `expected`."""

    def advance(self, head: Head) -> None:
        """Record the newest checkpoint of a (thread, namespace); an empty `checkpoint_id` says
        Rippl deleted all of its checkpoints."""
        ...

    def forget(self, thread_id: str) -> None:
        """Rippl deleted the thread (every namespace)."""
        ...

    def expected(self, thread_id: str, checkpoint_ns: str) -> Head | None:
        """The newest checkpoint recorded for a (thread, namespace), or None."""
        ...


class FileAnchor:
    """A `HeadAnchor` in an append-only file outside the database (JSON Lines, one head a
    line; the last line of a (thread, namespace) wins; an empty id: Rippl deleted it).
    Processes sharing the file see each other's heads: each `expected` reads what was appended
    since. Keep the file where a copy of
    the database is not restored with it (another disk, another machine's mount)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._heads: dict[tuple[str, str], Head] = {}
        self._offset = 0
        self._lock = threading.Lock()

    def advance(self, head: Head) -> None:
        with self._lock:
            self._catch_up()
            self._append(head)

    def _append(self, head: Head) -> None:
        line = _JSON.encode([head.thread_id, head.checkpoint_ns, head.checkpoint_id, head.digest])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(line + "\n")  # one write of one line: atomic among O_APPEND writers
        self._catch_up()

    def forget(self, thread_id: str) -> None:
        with self._lock:
            self._catch_up()
            for thread, ns in [k for k in self._heads if k[0] == thread_id]:
                self._append(Head(thread, ns, "", ""))

    def expected(self, thread_id: str, checkpoint_ns: str) -> Head | None:
        with self._lock:
            self._catch_up()
            found = self._heads.get((thread_id, checkpoint_ns))
            return found if found is not None and found.checkpoint_id else None

    def _catch_up(self) -> None:
        try:
            if os.stat(self.path).st_size == self._offset:  # nothing appended since
                return
            with self.path.open("rb") as source:
                source.seek(self._offset)
                chunk = source.read()
        except FileNotFoundError:
            return
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.decode("utf-8").splitlines():
            try:
                thread_id, ns, checkpoint_id, digest = json.loads(line)
            except ValueError:
                continue
            self._heads[(thread_id, ns)] = Head(thread_id, ns, checkpoint_id, digest)


# ------------------------------------------------------------------------------ stored rows


@dataclass(frozen=True)
class StoredCheckpoint:
    """A checkpoint as the store holds it, with everything its verification needs."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    type: str
    data: str | None
    meta_type: str
    meta: str | None
    key: str
    blob_keys: list[str]
    blob_digests: list[str] | None  # as recorded (None: not read; recomputed from the blobs)
    digest: str | None
    pdigest: str | None
    chained: bool
    sig: str | None
    pub: str | None
    base: str | None
    base_sig: str | None
    blobs: dict[str, tuple[str, Any, str, str | None]]  # key -> (channel, version, type, data)
    writes: list[tuple[str, str, int, str, str, str | None, str]]  # key, task, idx, channel...
    write_set: tuple[list[str], str, str | None, str | None] | None  # manifest, seal, sig, pub
    parent: tuple[str | None] | bool | None  # (its digest,) if stored; None if not; False: not read
    head: tuple[str, str, str | None, str | None, str | None] | None  # id, key, digest, sig, pub
    _blob_digests: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, row: Sequence[Any]) -> StoredCheckpoint:
        (thread_id, ns, checkpoint_id, parent_id, type_, data, meta_type, meta, ckey, blob_keys,
         seal, bd, base, base_sig, blobs, writes, write_set, parent, head) = row
        sealed = unpack_seal(seal)
        digest, pdigest, chained, sig, pub = sealed if sealed is not None else \
            (None, None, True, None, None)
        ws = unpack_writes(write_set)
        hd = None
        if head is not None:
            head_seal = _json_list(head[2]) or [None, None, None]
            hd = (head[0], head[1], head_seal[0], head_seal[1], head_seal[2])
        return cls(
            thread_id, ns, checkpoint_id, parent_id, type_, data, meta_type, meta, ckey,
            list(blob_keys or ()), None if bd is None else [str(b) for b in bd], digest, pdigest,
            chained, sig, pub, base, base_sig,
            {b[0]: (b[1], b[2], b[3], b[4]) for b in blobs or () if b is not None},
            [(w[0], w[1], int(w[2]), w[3], w[4], w[5], w[6] or "") for w in writes or ()],
            ws,
            False if parent is False else None if parent is None else (seal_digest(parent[0]),),
            hd,
        )

    def blob_digest_of(self, blob_key: str) -> str:
        """The digest of a blob as read (NO_BLOB when it is missing)."""
        known = self._blob_digests.get(blob_key)
        if known is not None:
            return known
        found = self.blobs.get(blob_key)
        if found is None:
            return NO_BLOB
        channel, version, type_, data = found
        digest = blob_digest(self.thread_id, self.checkpoint_ns, channel, version, type_, data)
        self._blob_digests[blob_key] = digest
        return digest

    def recomputed(self) -> str:
        """The digest of the checkpoint's stored fields: its blob digests as recorded, or, when
        they were not read, as its blobs give them (a changed blob then changes the digest)."""
        blob_digests = self.blob_digests if self.blob_digests is not None else \
            [self.blob_digest_of(k) for k in self.blob_keys]
        return checkpoint_digest(
            thread_id=self.thread_id, checkpoint_ns=self.checkpoint_ns,
            checkpoint_id=self.checkpoint_id, parent_id=self.parent_id,
            pdigest=self.pdigest or "", type_=self.type, data=self.data, meta_type=self.meta_type,
            meta=self.meta, blob_keys=self.blob_keys, blob_digests=blob_digests,
            chained=self.chained)

    def write_manifest(self) -> dict[str, str]:
        """The digest of each pending write as read, by its key."""
        return {w[0]: write_digest(self.thread_id, self.checkpoint_ns, self.checkpoint_id, w[1],
                                   w[2], w[3], w[4], w[5], w[6]) for w in self.writes}


def _json_list(text: Any) -> list[Any] | None:
    try:
        found = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return found if isinstance(found, list) else None


def unpack_writes(text: Any) -> tuple[list[str], str, str | None, str | None] | None:
    """The manifest, seal and signature in a write set's `chain` property (None if absent)."""
    if text is None:
        return None
    found = _json_list(text)
    if found is None or len(found) != 4 or not isinstance(found[0], list):
        return ([], "", None, None)  # present but not a write set: its seal cannot match
    return [str(e) for e in found[0]], str(found[1]), found[2], found[3]


def verify(stored: StoredCheckpoint, policy: ChainPolicy, *, latest: bool = False) -> list[str]:
    """Every reason `stored` must not be served (empty when it verifies). `latest`: it was read
    as its (thread, namespace)'s newest, through the head."""
    if stored.digest is None:
        return ["it has no digest: it was written outside Rippl, or by a Rippl without the chain "
                "after this store was migrated"]
    problems: list[str] = []
    if (stored.blob_digests is not None and len(stored.blob_digests) != len(stored.blob_keys)) \
            or stored.recomputed() != stored.digest:
        what = "its content, metadata, parent link or blob list" if stored.blob_digests is not None \
            else "its content, metadata, parent link or blobs"
        problems.append(f"{what} does not match its digest: it was edited or replaced")
    elif not stored.chained and not policy.accept_unchained:
        problems.append("it is unchained: it was written before this store had the chain, and was "
                        "only sealed when the store was migrated, so its content before then is "
                        "not attested; check it (rippl checkpoints verify), then open the saver "
                        "with accept_unchained=True to serve it")
    if (why := policy.signature_problem(stored.digest, stored.sig, stored.pub, "it")) is not None:
        problems.append(why)
    problems.extend(_blob_problems(stored))
    problems.extend(_parent_problems(stored, policy))
    problems.extend(_write_problems(stored, policy))
    problems.extend(_head_problems(stored, policy, latest=latest))
    return problems


def _blob_problems(stored: StoredCheckpoint) -> list[str]:
    if stored.blob_digests is None:  # not read: the digest check above covers the blobs
        return []
    problems = []
    for blob_key, recorded in zip(stored.blob_keys, stored.blob_digests or (), strict=False):
        found = stored.blobs.get(blob_key)
        if found is None:
            if recorded != NO_BLOB:
                problems.append(f"the blob {blob_key} it names is missing (deleted)")
        elif stored.blob_digest_of(blob_key) != recorded:
            problems.append(f"the blob of channel {found[0]!r} (version {found[1]!r}) was edited, "
                            "or is not the one it was written with")
    return problems


def _parent_problems(stored: StoredCheckpoint, policy: ChainPolicy) -> list[str]:
    if stored.parent is False:  # a read of one checkpoint: its own seal covers its parent's digest
        return []
    if stored.parent_id is None:
        return [] if stored.pdigest in (NO_PARENT, None) else \
            ["it records a parent digest but no parent: its parent link was edited"]
    if isinstance(stored.parent, tuple):
        if stored.pdigest in (PARENT_NOT_STORED, stored.parent[0]):
            return []
        return [f"its parent {stored.parent_id} is not the checkpoint it was chained to (the "
                "parent was edited, replaced or replayed)"]
    if stored.pdigest == PARENT_NOT_STORED:
        return []
    if stored.base is not None and stored.digest is not None and \
            stored.base == base_mark(stored.digest):
        why = policy.signature_problem(stored.base, stored.base_sig, stored.pub if stored.base_sig
                                       else None, "the mark of where its chain begins")
        return [] if why is None else [why]
    return [f"its parent {stored.parent_id} is missing: it was deleted outside Rippl"]


def _write_problems(stored: StoredCheckpoint, policy: ChainPolicy) -> list[str]:
    found = stored.write_manifest()
    if stored.write_set is None:
        return [f"it has pending writes that no put_writes sealed ({len(found)}): forged"] \
            if found else []
    manifest, seal, sig, pub = stored.write_set
    if writes_seal(stored.thread_id, stored.checkpoint_ns, stored.checkpoint_id, manifest) != seal:
        return ["the manifest of its pending writes does not match its seal: edited"]
    problems = []
    if (why := policy.signature_problem(seal, sig, pub, "its pending writes' seal")) is not None:
        problems.append(why)
    recorded = dict(entry.rsplit(":", 1) for entry in manifest)
    for write_key, digest in recorded.items():
        if write_key not in found:
            problems.append(f"its pending write {write_key} is missing (deleted)")
        elif found[write_key] != digest:
            problems.append(f"its pending write {write_key} was edited")
    extra = sorted(set(found) - set(recorded))
    if extra:
        problems.append(f"it has pending writes that were never sealed ({', '.join(extra)}): forged")
    return problems


def _head_problems(stored: StoredCheckpoint, policy: ChainPolicy, *, latest: bool) -> list[str]:
    if stored.head is None:
        return ["its thread's head is missing (deleted outside Rippl)"]
    latest_id, latest_key, digest, sig, pub = stored.head
    problems = []
    if latest and (latest_key != stored.key or digest != stored.digest):
        problems.append("the thread's head names another checkpoint or digest as the newest")
    elif stored.checkpoint_id > latest_id:
        problems.append(f"it is newer than the thread's head ({latest_id}): appended outside "
                        "Rippl, or the head was rolled back")
    if latest and digest is not None:
        if sig is not None or policy.trusted_keys is not None:
            signed = head_digest(stored.thread_id, stored.checkpoint_ns, latest_id, digest)
            if (why := policy.signature_problem(signed, sig, pub, "the thread's head")) is not None:
                problems.append(why)
        if policy.anchor is not None:
            problems.extend(anchor_problems(policy, Head(stored.thread_id, stored.checkpoint_ns,
                                                         latest_id, digest)))
    return problems


def anchor_problems(policy: ChainPolicy, head: Head | None, *, thread_id: str = "",
                    checkpoint_ns: str = "") -> list[str]:
    """How the head read from the store disagrees with the anchor kept outside it (None: the
    store has no head for the thread)."""
    if policy.anchor is None:
        return []
    thread_id = head.thread_id if head is not None else thread_id
    checkpoint_ns = head.checkpoint_ns if head is not None else checkpoint_ns
    anchored = policy.anchor.expected(thread_id, checkpoint_ns)
    if anchored is None:
        return []
    if head is None or head.checkpoint_id < anchored.checkpoint_id:
        return [f"the store is older than its anchor, which names checkpoint "
                f"{anchored.checkpoint_id} as the newest: it was restored from an older copy, or "
                "its newest checkpoints were deleted with the head"]
    if head.checkpoint_id == anchored.checkpoint_id and head.digest != anchored.digest:
        return ["the newest checkpoint's digest differs from the one anchored outside the store"]
    return []


def integrity_error(stored: StoredCheckpoint | None, problems: Sequence[str], *,
                    thread_id: str = "", checkpoint_ns: str = "",
                    checkpoint_id: str | None = None) -> CheckpointIntegrityError:
    """The error a read raises instead of serving a checkpoint that does not verify."""
    if stored is not None:
        thread_id, checkpoint_ns = stored.thread_id, stored.checkpoint_ns
        checkpoint_id = stored.checkpoint_id
    return CheckpointIntegrityError(thread_id=thread_id, checkpoint_ns=checkpoint_ns,
                                    checkpoint_id=checkpoint_id, problems=list(problems))


# --------------------------------------------------------------------------------- queries

# For each checkpoint `c` (and its head `h`, if the match bound it): everything `verify` needs.
# Blobs and writes are collected in subqueries; the write set and the head are single indexed
# lookups, and so is the parent, which reads of a single checkpoint leave out (`links`).
_PARENT = f" OPTIONAL MATCH (p:{CHECKPOINT} {{key: c.parent_key}})"
_REST = (
    f" OPTIONAL MATCH (s:{WRITES} {{key: c.key}})"
    f" CALL {{ WITH c UNWIND coalesce(c.blob_keys, []) AS k MATCH (b:{BLOB} {{key: k}})"
    " RETURN collect([b.key, b.channel, b.version, b.type, b.data]) AS blobs }"
    f" CALL {{ WITH c MATCH (w:{WRITE} {{cp_key: c.key}})"
    " RETURN collect([w.key, w.task_id, w.idx, w.channel, w.type, w.data, w.task_path]) AS writes }"
    " RETURN c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_id, c.type, c.data,"
    " c.meta_type, c.meta, c.key, c.blob_keys, c.seal,"
)
_HEAD_COLUMN = " CASE WHEN h IS NULL THEN null ELSE [h.latest_id, h.latest_key, h.seal] END"
_ROW = _PARENT + _REST + " c.bd, c.base, c.base_sig, blobs, writes, s.chain," + \
    " CASE WHEN p IS NULL THEN null ELSE [p.seal] END," + _HEAD_COLUMN
_ROW_ALONE = _REST + " null AS bd, null AS base, null AS base_sig, blobs, writes, s.chain," + \
    " false AS parent," + _HEAD_COLUMN
_WITH_HEAD = f" OPTIONAL MATCH (h:{HEAD} {{key: c.head_key}})"


def read_latest(hkey: str) -> Query:
    """The newest checkpoint of a (thread, namespace) through its head (no row without a head,
    or when the head names a checkpoint that is missing: `head_and_any` tells which)."""
    return Query(f"MATCH (h:{HEAD} {{key: $hk}}) WITH h MATCH (c:{CHECKPOINT} "
                 "{key: h.latest_key})" + _ROW_ALONE, {"hk": hkey}, read_only=True)


def head_and_any(hkey: str, tkey: str, checkpoint_ns: str) -> Query:
    """When `read_latest` found nothing: the newest id the head names (null without a head), and
    whether the (thread, namespace) holds any checkpoint."""
    return Query(f"OPTIONAL MATCH (h:{HEAD} {{key: $hk}}) WITH h "
                 f"OPTIONAL MATCH (c:{CHECKPOINT} {{thread_key: $tk}}) WHERE c.checkpoint_ns = $ns "
                 "RETURN h.latest_id, count(c)", {"hk": hkey, "tk": tkey, "ns": checkpoint_ns},
                 read_only=True)


def read_by_keys(keys: Sequence[str], *, links: bool = False) -> Query:
    """Checkpoints by key (one indexed lookup each), with their heads (and their parents'
    digests if `links`)."""
    return Query(f"UNWIND $keys AS k MATCH (c:{CHECKPOINT} {{key: k}})" + _WITH_HEAD
                 + (_ROW if links else _ROW_ALONE), {"keys": list(keys)}, read_only=True)


def rows_after(match: str, params: Mapping[str, Any]) -> Query:
    """Checkpoints bound to `c` by `match` (a MATCH ... WITH c ... fragment), with their heads."""
    return Query(match + _WITH_HEAD + _ROW, params, read_only=True)


def read_heads(after: str | None = None, limit: int = 1000) -> Query:
    """Every head, ordered by key, a page at a time."""
    where = " WHERE h.key > $after" if after is not None else ""
    return Query(f"MATCH (h:{HEAD}){where} RETURN h.key, h.thread_id, h.checkpoint_ns, "
                 "h.latest_id, h.seal ORDER BY h.key LIMIT $limit",
                 {"after": after, "limit": limit} if after is not None else {"limit": limit},
                 read_only=True)


def read_store_page(*, thread_key: str | None, after: str | None, limit: int) -> Query:
    """A page of checkpoints (one thread's or all), in key order, for a whole-store check."""
    where = []
    params: dict[str, Any] = {"limit": limit}
    match = f"MATCH (c:{CHECKPOINT})"
    if thread_key is not None:
        match = f"MATCH (c:{CHECKPOINT} {{thread_key: $tk}})"
        params["tk"] = thread_key
    if after is not None:
        where.append("c.key > $after")
        params["after"] = after
    text = match + (" WHERE " + " AND ".join(where) if where else "")
    return rows_after(text + " WITH c ORDER BY c.key LIMIT $limit", params)


def orphan_heads(thread_key: str | None) -> Query:
    """Heads whose newest checkpoint is missing."""
    match = f"MATCH (h:{HEAD} {{thread_key: $tk}})" if thread_key is not None else f"MATCH (h:{HEAD})"
    return Query(match + f" OPTIONAL MATCH (c:{CHECKPOINT} {{key: h.latest_key}}) WITH h, c "
                 "WHERE c IS NULL RETURN h.thread_id, h.checkpoint_ns, h.latest_id",
                 {"tk": thread_key} if thread_key is not None else {}, read_only=True)


def headless(thread_key: str | None) -> Query:
    """(thread, namespace) pairs holding checkpoints but no head."""
    match = f"MATCH (c:{CHECKPOINT} {{thread_key: $tk}})" if thread_key is not None \
        else f"MATCH (c:{CHECKPOINT})"
    return Query(match + " WITH DISTINCT c.thread_id AS t, c.checkpoint_ns AS ns, c.head_key AS hk"
                 f" OPTIONAL MATCH (h:{HEAD} {{key: hk}}) WITH t, ns, h WHERE h IS NULL "
                 "RETURN t, ns", {"tk": thread_key} if thread_key is not None else {},
                 read_only=True)


# ----------------------------------------------------------------------------- whole store


@dataclass(frozen=True)
class CheckpointProblem:
    """One checkpoint (or head) of the store that does not verify, and why."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str | None
    problem: str


@dataclass(frozen=True)
class ChainReport:
    """What `verify_checkpoints` found: `ok` when every checkpoint verifies and none is
    unchained; `unchained` lists the checkpoints sealed by the migration (written before the
    chain: reported, never silently trusted)."""

    ok: bool
    checkpoints: int
    threads: int
    problems: list[CheckpointProblem] = field(default_factory=list)
    unchained: list[CheckpointProblem] = field(default_factory=list)
    heads_digest: str | None = None


def verify_store(policy: ChainPolicy, *, thread_id: str | None = None,
                 expected_heads_digest: str | None = None) -> Op[ChainReport]:
    """Check every checkpoint of the store (or of one thread), every head, and, if
    `expected_heads_digest` is given (the digest an anchor outside the database recorded), the
    digest of every head against it."""
    tkey = None if thread_id is None else thread_key(thread_id)
    lenient = ChainPolicy(policy.signing_key, policy.trusted_keys, True, policy.anchor)
    problems: list[CheckpointProblem] = []
    unchained: list[CheckpointProblem] = []
    threads: set[str] = set()
    count, after = 0, None
    while True:
        rows = yield read_store_page(thread_key=tkey, after=after, limit=PAGE)
        for row in rows:
            stored = StoredCheckpoint.of(row)
            count += 1
            threads.add(stored.thread_id)
            where = (stored.thread_id, stored.checkpoint_ns, stored.checkpoint_id)
            problems.extend(CheckpointProblem(*where, p) for p in verify(stored, lenient))
            if stored.digest is not None and not stored.chained:
                unchained.append(CheckpointProblem(*where, "unchained: written before the chain, "
                                                   "sealed by the migration"))
        if len(rows) < PAGE:
            break
        after = rows[-1][8]
    for t, ns, latest in (yield orphan_heads(tkey)):
        problems.append(CheckpointProblem(t, ns, latest, "the head names this checkpoint as the "
                                          "newest, and it is missing (deleted)"))
    for t, ns in (yield headless(tkey)):
        problems.append(CheckpointProblem(t, ns, None, "the thread holds checkpoints but its head "
                                          "is missing (deleted outside Rippl)"))
    digest = None
    if thread_id is None:
        heads = yield from all_heads()
        digest = heads_digest_of(heads)
        if expected_heads_digest is not None and digest != expected_heads_digest:
            problems.append(CheckpointProblem("", "", None, "the digest of every head differs from "
                                              "the one anchored outside the store: a thread was "
                                              "rolled back, added or removed"))
        for head in heads:
            problems.extend(CheckpointProblem(head.thread_id, head.checkpoint_ns,
                                              head.checkpoint_id, p)
                            for p in anchor_problems(policy, head))
    return ChainReport(ok=not problems and not unchained, checkpoints=count, threads=len(threads),
                       problems=problems, unchained=unchained, heads_digest=digest)


def all_heads() -> Op[list[Head]]:
    """Every head of the store, in key order."""
    heads: list[Head] = []
    after = None
    while True:
        rows = yield read_heads(after)
        heads.extend(Head(str(r[1]), str(r[2]), str(r[3]), seal_digest(r[4]) or "") for r in rows)
        if len(rows) < 1000:
            return heads
        after = rows[-1][0]


def heads_digest_of(heads: Iterable[Head]) -> str:
    """The digest of a store's heads: SHA-256 over the sorted list of every (thread, namespace,
    newest checkpoint id, its digest). It changes whenever any thread moves, and a store
    restored from an older copy gives an older value: the receipt log's signed tree head can
    cover it, so a rollback is caught by anyone holding an anchored tree head."""
    entries = sorted([h.thread_id, h.checkpoint_ns, h.checkpoint_id, h.digest] for h in heads)
    return _digest("heads", entries)


def heads_digest() -> Op[str]:
    """The digest of every head of the store (see `heads_digest_of`)."""
    return heads_digest_of((yield from all_heads()))


# ------------------------------------------------------------------------------ migration

UNCHAINED_PAGE: Final = 200


def backfill() -> Op[None]:
    """Seal a store written before the chain (once, when the saver first opens it): every
    checkpoint without a digest, thread by thread, parents first, marked unchained (its content
    before now is not attested), with its blobs' digests, its pending writes' seal, and its
    head's digest. Checkpoints written afterwards chain onto them."""
    while True:
        rows = yield Query(f"MATCH (c:{CHECKPOINT}) WHERE c.seal IS NULL "
                           f"RETURN DISTINCT c.thread_key LIMIT {UNCHAINED_PAGE}", read_only=True)
        if not rows:
            return
        for (tkey,) in rows:
            yield from _seal_thread(str(tkey))


def _seal_thread(tkey: str) -> Op[None]:
    nodes = yield Query(
        f"MATCH (c:{CHECKPOINT} {{thread_key: $t}}) "
        f"CALL {{ WITH c UNWIND coalesce(c.blob_keys, []) AS k MATCH (b:{BLOB} {{key: k}}) "
        "RETURN collect([b.key, b.channel, b.version, b.type, b.data]) AS blobs } "
        f"CALL {{ WITH c MATCH (w:{WRITE} {{cp_key: c.key}}) "
        "RETURN collect([w.key, w.task_id, w.idx, w.channel, w.type, w.data, w.task_path]) AS writes } "
        "RETURN c.key, c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_id, c.type, c.data, "
        "c.meta_type, c.meta, c.blob_keys, c.seal, blobs, writes",
        {"t": tkey}, read_only=True)
    by_key = {row[0]: row for row in nodes}
    sealed: dict[str, str] = {k: d for k, row in by_key.items()
                              if (d := seal_digest(row[10])) is not None}
    updates, write_sets = [], []
    for row in sorted(nodes, key=lambda r: (r[2], r[3])):  # ids are time-ordered: parents first
        (ckey, thread_id, ns, checkpoint_id, parent_id, type_, data, meta_type, meta, blob_keys,
         seal, blobs, writes) = row
        if seal is not None:
            continue
        found = {b[0]: b for b in blobs or ()}
        bd = [blob_digest(thread_id, ns, found[k][1], found[k][2], found[k][3], found[k][4])
              if k in found else NO_BLOB for k in blob_keys or ()]
        parent_key = key(thread_id, ns, parent_id) if parent_id else None
        pdigest = NO_PARENT if parent_id is None else sealed.get(parent_key or "", PARENT_NOT_STORED)
        new = checkpoint_digest(thread_id=thread_id, checkpoint_ns=ns, checkpoint_id=checkpoint_id,
                                parent_id=parent_id, pdigest=pdigest, type_=type_, data=data,
                                meta_type=meta_type, meta=meta, blob_keys=blob_keys or [],
                                blob_digests=bd, chained=False)
        sealed[ckey] = new
        updates.append({"key": ckey, "props": {
            "seal": pack_seal(new, pdigest, False, {}), "bd": bd,
            "parent_key": parent_key, "head_key": head_key_of(tkey, ns)}})
        if writes:
            manifest = [f"{w[0]}:" + write_digest(thread_id, ns, checkpoint_id, w[1], int(w[2]),
                                                  w[3], w[4], w[5], w[6]) for w in writes]
            write_sets.append({"key": ckey, "props": {
                "thread_key": tkey,
                "chain": pack_writes(manifest, writes_seal(thread_id, ns, checkpoint_id, manifest),
                                     {})}})
    if not updates:
        return
    heads = yield Query(f"MATCH (h:{HEAD} {{thread_key: $t}}) RETURN h.key, h.latest_key",
                        {"t": tkey}, read_only=True)
    head_rows = []
    for hkey, latest_key in heads:
        if latest_key in by_key and latest_key in sealed:
            head_rows.append({"key": hkey, "props": {"thread_id": by_key[latest_key][1],
                                                      "seal": pack_head(sealed[latest_key], {})}})
    queries = [Query(f"UNWIND $rows AS r MATCH (c:{CHECKPOINT} {{key: r.key}}) SET c += r.props",
                     {"rows": chunk}) for chunk in _chunks(updates)]
    queries += [Query(f"UNWIND $rows AS r MERGE (s:{WRITES} {{key: r.key}}) SET s += r.props",
                      {"rows": chunk}) for chunk in _chunks(write_sets)]
    if head_rows:
        queries.append(Query(f"UNWIND $rows AS r MATCH (h:{HEAD} {{key: r.key}}) SET h += r.props",
                             {"rows": head_rows}))
    yield Commit(queries, blind=True)


def _chunks[T](rows: Sequence[T], size: int = 200) -> list[Sequence[T]]:
    return [rows[i:i + size] for i in range(0, len(rows), size)]


SCHEMA: Final = Schema("2", indexes=tuple(Index(label, prop) for label, prop in (
    (CHECKPOINT, "key"), (CHECKPOINT, "thread_key"), (CHECKPOINT, "run_key"),
    (BLOB, "key"), (BLOB, "thread_key"),
    (WRITE, "key"), (WRITE, "cp_key"), (WRITE, "thread_key"),
    (WRITES, "key"), (WRITES, "thread_key"),
    (HEAD, "key"), (HEAD, "thread_key"),
)), backfills=(backfill,))


# ---------------------------------------------------------------------------------- cache


class DigestCache:
    """The digests of checkpoints this process wrote or verified (and of the blobs each names),
    so that a put chains onto its parent without reading it. Bounded (least recently used out),
    thread-safe. A digest is a function of a checkpoint's content, so an entry is never stale:
    a parent edited in the database after it was cached is chained to its genuine digest, and
    the edit is caught when the parent is read."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._entries: OrderedDict[str, tuple[str, dict[Any, tuple[str, str]]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, checkpoint_key: str) -> tuple[str, dict[Any, tuple[str, str]]] | None:
        """A checkpoint's digest and the (key, digest) of the blob of each (channel, version)
        it names."""
        with self._lock:
            found = self._entries.get(checkpoint_key)
            if found is not None:
                self._entries.move_to_end(checkpoint_key)
            return found

    def put(self, checkpoint_key: str, digest: str, blobs: dict[Any, tuple[str, str]]) -> None:
        with self._lock:
            self._entries[checkpoint_key] = (digest, blobs)
            self._entries.move_to_end(checkpoint_key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()



# ------------------------------------------------------------------------------------ API

COMPANION: Final = "checkpoints"


def verify_checkpoints(handle: Rippl, *, thread_id: str | None = None,
                       trusted_keys: Collection[str | Ed25519PublicKey] | None = None,
                       anchor: HeadAnchor | None = None,
                       expected_heads_digest: str | None = None) -> ChainReport:
    """Check a whole checkpoint store (or one thread) on the handle's tenant: every checkpoint,
    blob, pending write and head, the signatures against `trusted_keys` if given, the newest
    heads against `anchor`, and the digest of every head against `expected_heads_digest` (the
    value the receipt log's anchored head covers). Also `rippl checkpoints verify`."""
    policy = ChainPolicy.of(trusted_keys=trusted_keys, anchor=anchor)
    store = StateGraph(handle, SCHEMA, companion=COMPANION)
    store.setup()
    return store.run(lambda: verify_store(policy, thread_id=thread_id,
                                          expected_heads_digest=expected_heads_digest))


async def averify_checkpoints(handle: AsyncRippl, *, thread_id: str | None = None,
                              trusted_keys: Collection[str | Ed25519PublicKey] | None = None,
                              anchor: HeadAnchor | None = None,
                              expected_heads_digest: str | None = None) -> ChainReport:
    """The asyncio twin of `verify_checkpoints`."""
    policy = ChainPolicy.of(trusted_keys=trusted_keys, anchor=anchor)
    store = AsyncStateGraph(handle, SCHEMA, companion=COMPANION)
    await store.setup()
    return await store.run(lambda: verify_store(policy, thread_id=thread_id,
                                                expected_heads_digest=expected_heads_digest))


def checkpoint_heads_digest(handle: Rippl) -> str:
    """The digest of every thread head of the handle's checkpoint store (`heads_digest_of`): what
    the receipt transparency log's signed tree head covers, so that restoring an older copy of
    the store is caught by anyone holding an anchored tree head."""
    store = StateGraph(handle, SCHEMA, companion=COMPANION)
    store.setup()
    return store.run(heads_digest)


async def acheckpoint_heads_digest(handle: AsyncRippl) -> str:
    """The asyncio twin of `checkpoint_heads_digest`."""
    store = AsyncStateGraph(handle, SCHEMA, companion=COMPANION)
    await store.setup()
    return await store.run(heads_digest)
