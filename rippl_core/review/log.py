"""The receipt log as a transparency log (RFC 9162): appending a receipt as a leaf, tree heads,
inclusion and consistency proofs from the stored tree, and the backfill of graphs written before.

Appending costs no extra round trip: the one read the chain already made for its head also returns
the tree's frontier (the hashes of the perfect subtrees of the tree so far, one per set bit of its
size) and the actor's registered key; the commit then writes the receipt, the new head and frontier,
and the perfect subtrees the new leaf completes (one on average, at most log2(n) + 1). A proof reads
the tree's head, then, in one more round trip, the at most 2 log2(n) perfect subtrees its nodes are
made of. The stored tree is a cache for proofs: verification recomputes every leaf from the
receipts, so a tampered tree can only make a proof fail, never a forged one pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rippl_core._runtime.op import Commit, Op
from rippl_core._runtime.timeutil import from_ms
from rippl_core.errors import ConflictError, InvalidInputError, NotFoundError, ReviewError
from rippl_core.models import ConsistencyProof, InclusionProof, Receipt, TreeHead
from rippl_core.review import cypher, merkle
from rippl_core.review.heads import head_model
from rippl_core.review.keys import (
    REGISTERED,
    REVOKED,
    STATEMENT,
    STATEMENT_KEY,
    STATEMENT_SIGNATURE,
    canonical_statement,
    public_hex,
    signature_valid,
)
from rippl_core.review.receipts import (
    GENESIS,
    SigningKey,
    leaf_hash,
    private_key,
    receipt_id,
    receipt_model,
    seal,
)

BACKFILL_CHUNK = 5_000


def node_id(level: int, index: int) -> str:
    return f"{level}:{index}"


def _range_id(lo: int, hi: int) -> str:
    level = (hi - lo).bit_length() - 1
    return node_id(level, lo >> level)


def append(commit: Commit, body: Mapping[str, Any], *, signing_key: SigningKey | None,
           statement: Mapping[str, Any] | None = None, signature: str | None = None,
           statement_key: SigningKey | None = None) -> Op[Receipt]:
    """Add the next receipt (whatever its kind: `body` holds at least `kind` and `actor`) to
    `commit`, as the next leaf of the tree, sealed (signed) with `signing_key` if given. A
    `statement` is signed by the actor: with `statement_key` (default: `signing_key`), or given
    as `signature` (made elsewhere, e.g. in a browser) by the actor's registered key. When the
    actor has a registered key, the receipt must be signed with it; rotating it to another key
    needs the current key's seal."""
    actor = str(body["actor"])
    rows = yield cypher.head(actor)
    seq, prev, size, frontier_hex, registered, _ = rows[0] if rows else (None,) * 6
    seq, prev = seq or 0, prev or GENESIS
    if (size or 0) != seq or (frontier_hex is None and seq):
        raise ConflictError("the receipt log's Merkle tree does not match its chain (written by an "
                            "older Rippl?); open the graph once with this version to backfill it, "
                            "and run `rippl receipts verify`")
    key = private_key(signing_key) if signing_key is not None else None
    signer_key = private_key(statement_key) if statement_key is not None else key
    full: dict[str, Any] = {**body, "seq": seq + 1, "prev": prev}
    if statement is not None:
        full |= _signed(statement, signer_key, signature, registered, actor)
    sealer = public_hex(key) if key is not None else None
    if registered is not None and body["kind"] == REGISTERED and body.get("public_key") != registered \
            and sealer != registered:
        raise ReviewError(f"{actor} already has a registered key: a rotation must be sealed with it "
                          "(current_key=), or revoke it first",
                          cli=f"{actor} already has a registered key: pass --current-key with it, "
                              "or revoke it first (`rippl keys revoke`)")
    if registered is not None and body["kind"] not in (REGISTERED, REVOKED) \
            and registered not in (full.get(STATEMENT_KEY), sealer):
        raise ReviewError(f"{actor} has a registered reviewer key: sign with it (signing_key=) to "
                          "act as them", cli=f"{actor} has a registered reviewer key: pass --key "
                          "with their key file")
    record = {"id": receipt_id(seq + 1), "seq": seq + 1, "kind": body["kind"], "actor": actor,
              **seal(full, key)}
    frontier, created = merkle.frontier_append([bytes.fromhex(h) for h in frontier_hex or []], seq,
                                               leaf_hash(record))
    tree = {"size": seq + 1, "root": merkle.frontier_root(frontier).hex(),
            "frontier": [h.hex() for h in frontier]}
    commit.queries.append(cypher.append_receipt(
        record, tree, [{"id": node_id(level, index), "h": h.hex()} for level, index, h in created]))
    if body["kind"] == REGISTERED:
        commit.queries.append(cypher.set_reviewer_key(actor, str(body["public_key"]), seq + 1))
    elif body["kind"] == REVOKED:
        commit.queries.append(cypher.drop_reviewer_key(str(body["reviewer"])))
    return receipt_model(record)


def _signed(statement: Mapping[str, Any], key: Ed25519PrivateKey | None, signature: str | None,
            registered: str | None, actor: str) -> dict[str, Any]:
    if key is not None:
        return {STATEMENT: dict(statement), STATEMENT_SIGNATURE: key.sign(
            canonical_statement(statement)).hex(), STATEMENT_KEY: public_hex(key)}
    if signature is None:
        return {}
    signer = registered if statement.get("kind") != REGISTERED else statement.get("public_key")
    if signer is None:
        raise ReviewError(f"{actor} has no registered reviewer key to check the signature with; "
                          "register one first")
    if not signature_valid(statement, signature, signer):
        raise InvalidInputError(f"the signature does not verify with {actor}'s key over the "
                                f"statement {canonical_statement(statement).decode()}")
    return {STATEMENT: dict(statement), STATEMENT_SIGNATURE: signature, STATEMENT_KEY: signer}


# ----------------------------------------------------------------------------------- reading


def tree_state() -> Op[tuple[int, str]]:
    """The tree's size and root (hex) as stored."""
    rows = yield cypher.TREE_HEAD
    seq, size, root = rows[0] if rows else (None, None, None)
    if seq and size != seq:
        raise ConflictError("the receipt log's Merkle tree does not match its chain; run "
                            "`rippl receipts verify`")
    return (size or 0), (root or merkle.EMPTY_ROOT.hex())


def tree_head(log: str, at_ms: int) -> Op[TreeHead]:
    size, root = yield from tree_state()
    return head_model({"log": log, "size": size, "root": root, "at": from_ms(at_ms).isoformat()})


def _perfect_hashes(ranges: list[tuple[int, int]]) -> Op[dict[tuple[int, int], bytes]]:
    wanted = sorted({r for lo, hi in ranges for r in merkle.perfect_ranges(lo, hi)})
    if not wanted:
        return {}
    rows = yield cypher.merkle_nodes([_range_id(lo, hi) for lo, hi in wanted])
    stored = {row[0]: row[1] for row in rows}
    found = {}
    for lo, hi in wanted:
        value = stored.get(_range_id(lo, hi))
        if value is None:
            raise ConflictError(f"the log's tree lacks the node over receipts {lo + 1}..{hi}; run "
                                "`rippl receipts verify`")
        found[(lo, hi)] = bytes.fromhex(value)
    return found


def _size(size: int | None, current: int) -> int:
    if size is None:
        return current
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= current:
        raise InvalidInputError(f"tree size must be between 0 and the log's {current} receipts, "
                                f"not {size!r}")
    return size


def inclusion(receipt: str | int, size: int | None = None) -> Op[InclusionProof]:
    """The proof that a receipt (by id `RCP-…` or seq) is in the tree of `size` receipts
    (default: the whole log)."""
    seq = _seq(receipt)
    current, _ = yield from tree_state()
    size = _size(size, current)
    if not 1 <= seq <= size:
        raise NotFoundError(f"no receipt {receipt_id(seq)} in a log of {size} receipts; list them "
                            "with receipts()", cli=f"no receipt {receipt_id(seq)} in a log of "
                            f"{size} receipts; list them with `rippl receipts list`")
    ranges = merkle.inclusion_ranges(seq - 1, size)
    found = yield from _perfect_hashes([*ranges, (seq - 1, seq), (0, size)])
    lookup = lambda lo, hi: found[(lo, hi)]  # noqa: E731
    return InclusionProof(receipt=receipt_id(seq), index=seq - 1, tree_size=size,
                          leaf_hash=found[(seq - 1, seq)].hex(),
                          root=merkle.range_hash(0, size, lookup).hex(),
                          proof=[merkle.range_hash(lo, hi, lookup).hex() for lo, hi in ranges])


def consistency(old_size: int, new_size: int | None = None) -> Op[ConsistencyProof]:
    """The proof that the tree of `new_size` receipts (default: the whole log) extends the tree
    of `old_size`."""
    current, _ = yield from tree_state()
    new_size = _size(new_size, current)
    if isinstance(old_size, bool) or not isinstance(old_size, int) or not 0 <= old_size <= new_size:
        raise InvalidInputError(f"the old tree size must be between 0 and {new_size}, not "
                                f"{old_size!r}: a log never shrinks")
    ranges = merkle.consistency_ranges(old_size, new_size)
    found = yield from _perfect_hashes([*ranges, (0, old_size), (0, new_size)])
    lookup = lambda lo, hi: found[(lo, hi)]  # noqa: E731

    def root(size: int) -> str:
        return (merkle.range_hash(0, size, lookup) if size else merkle.EMPTY_ROOT).hex()

    return ConsistencyProof(old_size=old_size, new_size=new_size, old_root=root(old_size),
                            new_root=root(new_size),
                            proof=[merkle.range_hash(lo, hi, lookup).hex() for lo, hi in ranges])


def _seq(receipt: str | int) -> int:
    if isinstance(receipt, int) and not isinstance(receipt, bool) and receipt > 0:
        return receipt
    if isinstance(receipt, str) and receipt.startswith("RCP-") and receipt[4:].isdigit():
        return int(receipt[4:])
    raise InvalidInputError(f"a receipt is named by its id (RCP-00000042) or its seq (42), not "
                            f"{receipt!r:.80}")


def check_leaves(after: int, upto: int) -> Op[None]:
    """Refuse (ConflictError) when a receipt after seq `after` up to `upto` is missing or does not
    hash to the leaf the tree keeps for it: before a head is anchored, the receipts it adds beyond
    the last anchored one must be what the tree says (older ones are covered by that head)."""
    rows = yield cypher.receipts_since(after, upto)
    seqs = [row[0].get("seq") for row in rows]
    if seqs != list(range(after + 1, upto + 1)):
        raise ConflictError(f"receipts {after + 1}..{upto} are not all in the log; nothing was "
                            "anchored. Run `rippl receipts verify`")
    for record, stored in rows:
        if stored != leaf_hash(record).hex():
            raise ConflictError(f"receipt #{record.get('seq')} does not match the log's tree (edited "
                                "in the database?); nothing was anchored. Run `rippl receipts verify`")


def reviewer_keys() -> Op[dict[str, str]]:
    """Each reviewer's registered key (hex), as the log's key receipts left them."""
    rows = yield cypher.REVIEWER_KEYS
    return {row[0]: row[1] for row in rows}


# ---------------------------------------------------------------------------------- backfill


def backfill_tree() -> Op[None]:
    """For a graph whose receipts were written before the Merkle tree: compute the tree over the
    chain as stored (one leaf per receipt, in seq order) and write its perfect subtrees and head.
    Idempotent; does nothing when the tree already covers the chain."""
    rows = yield cypher.TREE_HEAD
    seq, size, _ = rows[0] if rows else (None, None, None)
    if not seq or size == seq:
        return
    records = [row[2] for row in (yield cypher.CHAIN) if row[2] is not None]
    frontier: list[bytes] = []
    nodes: list[dict[str, str]] = []
    for count, record in enumerate(records):
        frontier, created = merkle.frontier_append(frontier, count, leaf_hash(record))
        nodes.extend({"id": node_id(level, index), "h": h.hex()} for level, index, h in created)
    tree = {"size": len(records), "root": merkle.frontier_root(frontier).hex(),
            "frontier": [h.hex() for h in frontier]}
    for start in range(0, len(nodes), BACKFILL_CHUNK):
        yield cypher.backfill_tree(tree, nodes[start:start + BACKFILL_CHUNK])
    if not nodes:
        yield cypher.backfill_tree(tree, [])
