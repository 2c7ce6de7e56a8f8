"""RFC 9162 Merkle hashing: the RFC 6962 / RFC 9162 test vectors (the reference trees of
Certificate Transparency's test suites, read and re-typed here), and properties over random trees:
every inclusion and consistency proof verifies, and any single-bit change of a leaf, a proof
element or a root is rejected."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rippl_core.review.merkle import (
    EMPTY_ROOT,
    Tree,
    consistency_ranges,
    frontier_append,
    frontier_root,
    inclusion_ranges,
    leaf_hash,
    node_hash,
    perfect_ranges,
    root,
    split,
    verify_consistency,
    verify_inclusion,
)


def h(text: str) -> bytes:
    return bytes.fromhex(text)


LEAVES = [h(x) for x in ("", "00", "10", "2021", "3031", "40414243", "5051525354555657",
                         "606162636465666768696a6b6c6d6e6f")]
ROOTS = [h(x) for x in (
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
)]
LEAF_HASHES = [h(x) for x in (
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
    "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
    "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
    "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
    "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
)]
# (leaf index, tree size, proof): the vectors number leaves from 1; these from 0.
INCLUSION = [
    (0, 1, []),
    (0, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (5, 8, ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (1, 5, ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]
CONSISTENCY = [
    (1, 1, []),
    (1, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (6, 8, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 5, ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
    (6, 7, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
]
SOME_HASH = h("abacaba000000000000000000000000000000000000000000060061e00123456")
TREE = Tree([leaf_hash(x) for x in LEAVES])


def test_leaf_and_node_hashes_follow_the_rfc() -> None:
    assert leaf_hash(b"L123456").hex() == \
        "395aa064aa4c29f7010acfe3f25db9485bbd4b91897b6ad7ad547639252b4d56"
    assert node_hash(b"N123", b"N456").hex() == \
        "aa217fe888e47007fa15edab33c2b492a722cb106c64667fc2b044444de66bbb"
    assert [leaf_hash(x) for x in LEAVES] == LEAF_HASHES
    assert EMPTY_ROOT == ROOTS[0] == hashlib.sha256(b"").digest()


@pytest.mark.parametrize("size", range(9))
def test_roots_of_the_reference_trees(size: int) -> None:
    assert TREE.root(size) == ROOTS[size]
    assert root(LEAF_HASHES[:size]) == ROOTS[size]
    assert Tree(LEAF_HASHES[:size]).root() == ROOTS[size]


@pytest.mark.parametrize(("index", "size", "proof"), INCLUSION)
def test_inclusion_vectors(index: int, size: int, proof: list[str]) -> None:
    expected = [h(p) for p in proof]
    assert TREE.inclusion_proof(index, size) == expected
    assert verify_inclusion(index, size, LEAF_HASHES[index], expected, ROOTS[size])
    bad = [  # the reference suite's corruptions: each must fail
        (index - 1, size, LEAF_HASHES[index], expected, ROOTS[size]),
        (index + 1, size, LEAF_HASHES[index], expected, ROOTS[size]),
        (index ^ 2, size, LEAF_HASHES[index], expected, ROOTS[size]),
        (index, size * 2, LEAF_HASHES[index], expected, ROOTS[size]),
        (index, size // 2, LEAF_HASHES[index], expected, ROOTS[size]),
        (index, size, b"WrongLeaf", expected, ROOTS[size]),
        (index, size, leaf_hash(b"WrongLeaf"), expected, ROOTS[size]),
        (index, size, LEAF_HASHES[index], expected, EMPTY_ROOT),
        (index, size, LEAF_HASHES[index], expected, SOME_HASH),
        (index, size, LEAF_HASHES[index], [*expected, b""], ROOTS[size]),
        (index, size, LEAF_HASHES[index], [*expected, ROOTS[size]], ROOTS[size]),
        (index, size, LEAF_HASHES[index], [b"", *expected], ROOTS[size]),
        (index, size, LEAF_HASHES[index], [ROOTS[size], *expected], ROOTS[size]),
    ]
    if expected:
        bad.append((index, size, LEAF_HASHES[index], expected[:-1], ROOTS[size]))
    if len(expected) > 1:
        bad.append((index, size, LEAF_HASHES[index], [expected[0], SOME_HASH, *expected[1:]],
                    ROOTS[size]))
    for i in range(len(expected)):
        flipped = [*expected]
        flipped[i] = bytes([flipped[i][0] ^ 8]) + flipped[i][1:]
        bad.append((index, size, LEAF_HASHES[index], flipped, ROOTS[size]))
    for args in bad:
        assert False is verify_inclusion(*args), args


def test_inclusion_edge_cases() -> None:
    single = leaf_hash(b"data")
    assert verify_inclusion(0, 1, single, [], single)
    assert False is verify_inclusion(0, 1, b"", [], single)
    assert False is verify_inclusion(0, 1, single, [], b"")
    for index, size in ((0, 0), (1, 0), (2, 1), (1, 1)):
        assert False is verify_inclusion(index, size, SOME_HASH, [], EMPTY_ROOT)
        assert False is verify_inclusion(index, size, EMPTY_ROOT, [], EMPTY_ROOT)
        with pytest.raises(ValueError, match="not in a tree"):
            inclusion_ranges(index, size)
    assert False is verify_inclusion(-1, 4, SOME_HASH, [], SOME_HASH)
    text = "a" * 32  # 32 long but not bytes: refused, not compared
    assert False is verify_inclusion(0, 1, text, [], text)  # type: ignore[arg-type]


@pytest.mark.parametrize(("old", "new", "proof"), CONSISTENCY)
def test_consistency_vectors(old: int, new: int, proof: list[str]) -> None:
    expected = [h(p) for p in proof]
    assert TREE.consistency_proof(old, new) == expected
    r1, r2 = ROOTS[old], ROOTS[new]
    assert verify_consistency(old, new, r1, r2, expected)
    if not expected:
        return
    bad = [
        (old - 1, new, r1, r2, expected), (old + 1, new, r1, r2, expected),
        (old ^ 2, new, r1, r2, expected), (old, new * 2, r1, r2, expected),
        (old, new // 2, r1, r2, expected),
        (old, new, b"WrongRoot", r2, expected), (old, new, r1, b"WrongRoot", expected),
        (old, new, SOME_HASH, r2, expected), (old, new, r1, SOME_HASH, expected),
        (old, new, r2, r1, expected), (old, new, r1, r2, []),
        (old, new, r1, r2, [*expected, b""]), (old, new, r1, r2, [*expected, r1]),
        (old, new, r1, r2, [*expected, r2]), (old, new, r1, r2, [b"", *expected]),
        (old, new, r1, r2, [r1, *expected]), (old, new, r1, r2, [r2, *expected]),
        (old, new, r1, r2, [expected[0], *expected]), (old, new, r1, r2, expected[:-1]),
    ]
    for i in range(len(expected)):
        flipped = [*expected]
        flipped[i] = bytes([flipped[i][0] ^ 16]) + flipped[i][1:]
        bad.append((old, new, r1, r2, flipped))
    for args in bad:
        assert False is verify_consistency(*args), args


def test_consistency_edge_cases() -> None:
    r1, r2 = b"1" * 32, b"2" * 32
    assert False is verify_consistency(0, 0, r1, r2, [])
    assert False is verify_consistency(1, 1, r1, r2, [])
    assert verify_consistency(0, 0, r1, r1, [])
    assert verify_consistency(1, 1, r2, r2, [])
    assert False is verify_consistency(0, 1, r1, r2, [])
    assert False is verify_consistency(1, 0, r1, r2, [])
    assert False is verify_consistency(2, 1, r1, r2, [])
    assert False is verify_consistency(1, 2, r1, r2, [])
    assert False is verify_consistency(0, 0, EMPTY_ROOT, r2, [])
    assert False is verify_consistency(-1, -1, r1, r1, [])  # sizes checked before anything else
    text = "b" * 32
    assert False is verify_consistency(1, 1, text, text, [])  # type: ignore[arg-type]
    assert False is verify_consistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT])
    assert False is verify_consistency(1, 1, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT])
    assert False is verify_consistency(0, 1, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT])
    assert False is verify_consistency(0, 4, EMPTY_ROOT, ROOTS[4], TREE.consistency_proof(1, 4))
    assert consistency_ranges(0, 5) == [] and consistency_ranges(5, 5) == []
    with pytest.raises(ValueError, match="no consistency proof"):
        consistency_ranges(6, 5)
    with pytest.raises(ValueError, match="no consistency proof"):
        consistency_ranges(-1, 5)


def test_ranges_and_split() -> None:
    assert [split(n) for n in (2, 3, 4, 5, 8, 9)] == [1, 2, 2, 4, 4, 8]
    assert perfect_ranges(0, 7) == [(0, 4), (4, 6), (6, 7)]
    assert perfect_ranges(8, 12) == [(8, 12)] and perfect_ranges(3, 3) == []
    assert inclusion_ranges(5, 8) == [(4, 5), (6, 8), (0, 4)]
    assert consistency_ranges(6, 8) == [(4, 6), (6, 8), (0, 4)]
    with pytest.raises(ValueError, match="the tree has 8 leaves"):
        TREE.root(9)
    with pytest.raises(ValueError, match="the tree has 8 leaves"):
        TREE.root(-1)


def test_the_frontier_follows_the_reference_compact_trees() -> None:
    # The perfect subtrees of [0, n), largest first, and the nodes each leaf completes.
    frontier: list[bytes] = []
    completed: list[tuple[int, int, bytes]] = []
    for size, leaf in enumerate(LEAF_HASHES):
        frontier, created = frontier_append(frontier, size, leaf)
        assert frontier == [TREE.perfect(a, b) for a, b in perfect_ranges(0, size + 1)]
        assert frontier_root(frontier) == ROOTS[size + 1]
        assert created[0] == (0, size, leaf)
        completed.extend(created)
    assert [(level, index) for level, index, _ in completed] == [
        (0, 0), (0, 1), (1, 0), (0, 2), (0, 3), (1, 1), (2, 0), (0, 4), (0, 5), (1, 2), (0, 6),
        (0, 7), (1, 3), (2, 1), (3, 0)]
    for level, index, digest in completed:
        assert TREE.perfect(index << level, (index + 1) << level) == digest
    assert frontier_root([]) == EMPTY_ROOT
    with pytest.raises(ValueError, match="has 2 hashes, not 1"):
        frontier_append([LEAF_HASHES[0]], 3, LEAF_HASHES[1])


# --------------------------------------------------------------------------- properties

sizes = st.integers(min_value=1, max_value=300)


def leaves_of(n: int, salt: int = 0) -> list[bytes]:
    return [leaf_hash(f"{salt}:{i}".encode()) for i in range(n)]


def flip(data: bytes, bit: int) -> bytes:
    bit %= len(data) * 8
    return data[:bit // 8] + bytes([data[bit // 8] ^ (1 << (bit % 8))]) + data[bit // 8 + 1:]


@settings(max_examples=150, deadline=None)
@given(size=sizes, data=st.data())
def test_every_inclusion_proof_verifies_and_any_bit_flip_is_rejected(size: int,
                                                                     data: st.DataObject) -> None:
    tree = Tree(leaves_of(size))
    index = data.draw(st.integers(0, size - 1))
    at = data.draw(st.integers(index + 1, size))  # a proof against an earlier tree size too
    proof, top = tree.inclusion_proof(index, at), tree.root(at)
    assert len(proof) <= max(at - 1, 0).bit_length()
    assert verify_inclusion(index, at, tree.leaves[index], proof, top)
    bit = data.draw(st.integers(0, 255))
    assert False is verify_inclusion(index, at, flip(tree.leaves[index], bit), proof, top)
    assert False is verify_inclusion(index, at, tree.leaves[index], proof, flip(top, bit))
    if proof:
        which = data.draw(st.integers(0, len(proof) - 1))
        broken = [*proof]
        broken[which] = flip(broken[which], bit)
        assert False is verify_inclusion(index, at, tree.leaves[index], broken, top)
        assert False is verify_inclusion(index, at, tree.leaves[index], proof[:-1], top)
    other = data.draw(st.integers(0, at - 1))
    if other != index:
        assert False is verify_inclusion(other, at, tree.leaves[index], proof, top)


@settings(max_examples=150, deadline=None)
@given(size=sizes, data=st.data())
def test_every_consistency_proof_verifies_and_any_bit_flip_is_rejected(size: int,
                                                                       data: st.DataObject) -> None:
    tree = Tree(leaves_of(size))
    old = data.draw(st.integers(1, size))
    new = data.draw(st.integers(old, size))
    proof = tree.consistency_proof(old, new)
    r1, r2 = tree.root(old), tree.root(new)
    assert len(proof) <= new.bit_length() + 1
    assert verify_consistency(old, new, r1, r2, proof)
    bit = data.draw(st.integers(0, 255))
    assert False is verify_consistency(old, new, flip(r1, bit), r2, proof)
    assert False is verify_consistency(old, new, r1, flip(r2, bit), proof)
    if proof:
        which = data.draw(st.integers(0, len(proof) - 1))
        broken = [*proof]
        broken[which] = flip(broken[which], bit)
        assert False is verify_consistency(old, new, r1, r2, broken)
    # a history rewritten below the old size is not consistent with the old head
    if old < new:
        rewritten = Tree([*tree.leaves[:old - 1], leaf_hash(b"forged"), *tree.leaves[old:new]])
        assert False is verify_consistency(old, new, r1, rewritten.root(),
                                      rewritten.consistency_proof(old, new))


@settings(max_examples=60, deadline=None)
@given(size=sizes)
def test_the_frontier_root_is_the_tree_root(size: int) -> None:
    leaves = leaves_of(size, salt=7)
    assert root(leaves) == Tree(leaves).root()
