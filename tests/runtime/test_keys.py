"""The key scheme: every key of a tenant comes from its graph name by one injective function, all
of them in one Redis Cluster slot, and a tenant's SCAN pattern matches its keys and no other's.
Pure properties over arbitrary graph names (the database tests are in test_tenancy.py)."""

from __future__ import annotations

import fnmatch

from hypothesis import example, given, settings
from hypothesis import strategies as st
from redis.crc import key_slot

from rippl_core._runtime.keys import COMPANIONS, Keys, tag, tenant_of
from rippl_core._runtime.validation import check_id

# What `check_id` accepts as a graph name: 1-128 printable characters, no surrounding space.
names = st.text(min_size=1, max_size=128).filter(lambda s: s.isprintable() and s == s.strip())
TRICKY = ["acme", "acme:eu", "acme*", "acme?", "acme[eu]", "acme\\", "{acme}", "acme}", "{acme",
          "rippl:{acme}:graph", "rippl:{acme}:version", "rippl:acme:version", "acme%3Aeu", "ACME",
          "%", "{}", "rippl:{acme}:checkpoints:graph", "x}:graph", "é", "🦊"]


def every_key(name: str) -> list[str]:
    keys = [Keys(name), *(Keys(name).of(c) for c in COMPANIONS)]
    return [k.key(role) for k in keys for role in ("graph", "version", "schema", "events")]


def redis_hash_tag(key: str) -> str:
    """The part of a key Redis Cluster hashes: between the first `{` and the next `}`."""
    start = key.find("{")
    end = key.find("}", start + 1)
    return key[start + 1:end] if start >= 0 and end > start + 1 else key


@settings(max_examples=300)
@given(a=names, b=names)
@example(a="acme", b="acme:eu")
@example(a="acme", b="acme*")
@example(a="acme", b="rippl:{acme}:version")
@example(a="acme", b="{acme}")
@example(a="acme:eu", b="acme%3Aeu")
def test_two_names_never_share_a_key(a: str, b: str) -> None:
    if a != b:
        assert not set(every_key(a)) & set(every_key(b))
        assert tag(a) != tag(b)


@settings(max_examples=300)
@given(a=names, b=names)
@example(a="acme", b="acme:eu")
@example(a="acme", b="acme*")
@example(a="acme", b="acmex")
@example(a="acme}", b="acme")
def test_a_tenants_pattern_matches_its_keys_and_no_other_tenants(a: str, b: str) -> None:
    pattern = Keys(a).pattern
    assert all(fnmatch.fnmatchcase(key, pattern) for key in every_key(a))
    if a != b:
        assert not any(fnmatch.fnmatchcase(key, pattern) for key in every_key(b))


@settings(max_examples=300)
@given(name=names)
def test_all_keys_of_a_tenant_hash_to_one_slot(name: str) -> None:
    keys = every_key(name)
    assert {redis_hash_tag(key) for key in keys} == {tag(name)}
    assert len({key_slot(key.encode()) for key in keys}) == 1


@settings(max_examples=300)
@given(name=names)
def test_a_key_says_whose_it_is(name: str) -> None:
    for key in every_key(name):
        owner = tenant_of(key)
        assert owner is not None and owner[0] == name
    assert tenant_of(Keys(name).graph) == (name, "graph")


def test_the_tag_has_no_character_that_redis_treats_specially() -> None:
    for name in TRICKY:
        check_id(name, what="graph")
        assert not set(tag(name)) & set("{}*?[]\\: ")
        assert tenant_of(name) is None or name.startswith("rippl:{")


def test_other_keys_belong_to_no_tenant() -> None:
    for key in ["acme", "rippl:acme:version", "rippl:{}:graph", "rippl:{a b}:graph", "rippl:{%zz}:x",
                "rippl:{%41}:graph"]:  # %41 is 'A', which is never encoded: not a tag Rippl makes
        assert tenant_of(key) is None
