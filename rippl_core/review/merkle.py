"""RFC 9162 (Certificate Transparency v2) Merkle tree hashing, proofs and their verification.

Standard library only, so an auditor's verifier needs nothing else. Hashes are SHA-256 digests
(32 bytes). The tree over leaves d(0)..d(n-1) is the RFC's left-filled tree:

    MTH({})       = SHA-256()
    MTH({d(0)})   = SHA-256(0x00 || d(0))                          (a leaf)
    MTH(D[0:n])   = SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n]))    k: largest power of 2 < n

Every node of such a tree covers a range [lo, hi) whose start is aligned on the largest power of two
not above its length; a full node (hi - lo a power of two) is a *perfect subtree*, which never
changes once its leaves exist. The log keeps those (`frontier_append` says which a new leaf
completes) and builds any node, so any proof, from at most 2 log2(n) of them (`perfect_ranges`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

type Range = tuple[int, int]
type Lookup = Callable[[int, int], bytes]


def leaf_hash(data: bytes) -> bytes:
    """The hash of a leaf: SHA-256(0x00 || data)."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The hash of an interior node: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(n: int) -> int:
    """The largest power of two strictly below n (n >= 2): where the RFC splits D[0:n]."""
    return 1 << ((n - 1).bit_length() - 1)


# ---------------------------------------------------------------------------------- ranges


def perfect_ranges(lo: int, hi: int) -> list[Range]:
    """The perfect subtrees that make up the node [lo, hi), left to right (largest first)."""
    ranges: list[Range] = []
    while lo < hi:
        size = 1 << ((hi - lo).bit_length() - 1)
        ranges.append((lo, lo + size))
        lo += size
    return ranges


def inclusion_ranges(index: int, size: int) -> list[Range]:
    """The nodes whose hashes form the inclusion proof of leaf `index` in the tree of `size`
    leaves (RFC 9162 2.1.3.1, PATH), from the leaf's sibling up."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size} leaves")
    path: list[Range] = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = lo + split(hi - lo)
        if index < k:
            path.append((k, hi))
            hi = k
        else:
            path.append((lo, k))
            lo = k
    path.reverse()
    return path


def consistency_ranges(old: int, new: int) -> list[Range]:
    """The nodes whose hashes form the consistency proof from the tree of `old` leaves to the tree
    of `new` leaves (RFC 9162 2.1.4.1, SUBPROOF), in proof order. Empty when old is 0 or equal."""
    if not 0 <= old <= new:
        raise ValueError(f"no consistency proof from {old} leaves to {new}")
    if old in (0, new):
        return []
    path: list[Range] = []
    lo, hi, complete = 0, new, True
    while True:
        if old - lo == hi - lo:
            if not complete:
                path.append((lo, hi))
            break
        k = lo + split(hi - lo)
        if old <= k:
            path.append((k, hi))
            hi = k
        else:
            path.append((lo, k))
            lo, complete = k, False
    path.reverse()
    return path


def range_hash(lo: int, hi: int, perfect: Lookup) -> bytes:
    """MTH(D[lo:hi]) of a node of the tree, from the hashes of its perfect subtrees."""
    hashes = [perfect(a, b) for a, b in perfect_ranges(lo, hi)]
    result = hashes[-1]
    for left in reversed(hashes[:-1]):
        result = node_hash(left, result)
    return result


# ------------------------------------------------------------------------ in-memory trees


class Tree:
    """An in-memory tree over leaf hashes, for computing roots and proofs of a whole list (an
    export, a test). Perfect subtrees are computed once and kept."""

    leaves: list[bytes]

    def __init__(self, leaves: Sequence[bytes]) -> None:
        self.leaves = list(leaves)
        self._perfect: dict[Range, bytes] = {}

    def perfect(self, lo: int, hi: int) -> bytes:
        if hi - lo == 1:
            return self.leaves[lo]
        known = self._perfect.get((lo, hi))
        if known is None:
            mid = (lo + hi) // 2
            known = node_hash(self.perfect(lo, mid), self.perfect(mid, hi))
            self._perfect[(lo, hi)] = known
        return known

    def root(self, size: int | None = None) -> bytes:
        size = len(self.leaves) if size is None else size
        if not 0 <= size <= len(self.leaves):
            raise ValueError(f"the tree has {len(self.leaves)} leaves, not {size}")
        return range_hash(0, size, self.perfect) if size else EMPTY_ROOT

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        size = len(self.leaves) if size is None else size
        return [range_hash(a, b, self.perfect) for a, b in inclusion_ranges(index, size)]

    def consistency_proof(self, old: int, new: int | None = None) -> list[bytes]:
        new = len(self.leaves) if new is None else new
        return [range_hash(a, b, self.perfect) for a, b in consistency_ranges(old, new)]


def root(leaves: Sequence[bytes]) -> bytes:
    """MTH of a list of leaf hashes, in one pass with a frontier (no tree kept)."""
    frontier: list[bytes] = []
    for size, leaf in enumerate(leaves):
        frontier, _ = frontier_append(frontier, size, leaf)
    return frontier_root(frontier)


# ------------------------------------------------------------------------------- frontier


def frontier_append(frontier: Sequence[bytes], size: int,
                    leaf: bytes) -> tuple[list[bytes], list[tuple[int, int, bytes]]]:
    """Append a leaf to a tree of `size` leaves given by its frontier (the hashes of the perfect
    subtrees of [0, size), largest first: one per set bit of `size`). Returns the new frontier and
    the perfect subtrees the leaf completes, as (level, index, hash): the leaf itself at level 0,
    then each node it closes (index: the node's first leaf divided by 2**level)."""
    if len(frontier) != size.bit_count():
        raise ValueError(f"a frontier of a tree of {size} leaves has {size.bit_count()} hashes, "
                         f"not {len(frontier)}")
    stack = list(frontier)
    created = [(0, size, leaf)]
    carry, level, position = leaf, 0, size
    while position & 1:
        carry = node_hash(stack.pop(), carry)
        level, position = level + 1, position >> 1
        created.append((level, position, carry))
    stack.append(carry)
    return stack, created


def frontier_root(frontier: Sequence[bytes]) -> bytes:
    """The root of the tree whose frontier this is."""
    if not frontier:
        return EMPTY_ROOT
    result = frontier[-1]
    for left in reversed(frontier[:-1]):
        result = node_hash(left, result)
    return result


# ---------------------------------------------------------------------------- verification


def _sized(*hashes: bytes) -> bool:
    return all(isinstance(h, bytes) and len(h) == HASH_SIZE for h in hashes)


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes],
                     root_hash: bytes) -> bool:
    """Whether `proof` shows the leaf hash `leaf` at `index` in the tree of `size` leaves whose
    root is `root_hash` (RFC 9162 2.1.3.2)."""
    if not 0 <= index < size or not _sized(leaf, root_hash, *proof):
        return False
    fn, sn, result = index, size - 1, leaf
    for sibling in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            result = node_hash(sibling, result)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            result = node_hash(result, sibling)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and result == root_hash


def verify_consistency(old: int, new: int, old_root: bytes, new_root: bytes,
                       proof: Sequence[bytes]) -> bool:
    """Whether `proof` shows the tree of `new` leaves with root `new_root` extends the tree of
    `old` leaves with root `old_root` (RFC 9162 2.1.4.2). Equal sizes need equal roots and an
    empty proof; an empty old tree is consistent only with itself here (the log checks that its
    root is the empty root and needs no proof)."""
    if not 0 <= old <= new or not _sized(old_root, new_root, *proof):
        return False
    if old == new:
        return not proof and old_root == new_root
    if old == 0 or not proof:
        return False
    path = list(proof)
    if old & (old - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    first = second = path[0]
    for sibling in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            first, second = node_hash(sibling, first), node_hash(sibling, second)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            second = node_hash(second, sibling)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and first == old_root and second == new_root
