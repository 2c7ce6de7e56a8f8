"""Canonical tool arguments: the same call, however it is spelt, has one canonical form (key order,
JSON spacing, Unicode normalisation, the int/float spelling of a number), and different calls never
share one. A declared action stored before this rule matches every spelling once the graph is
opened (a one-time backfill). Both backends for the backfill."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rippl_core import InvalidInputError, Rippl, ToolCall
from rippl_core._runtime.validation import call_key, canonical_args

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=False, allow_infinity=False, width=32),
                    st.text(max_size=6))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=8)
argss = st.dictionaries(st.text(max_size=4), values, max_size=4)


def respelt(value: Any, draw: st.DrawFn) -> Any:
    """The same value spelt another way: NFD strings and keys, integral numbers as floats, keys in
    another order."""
    if isinstance(value, str):
        return unicodedata.normalize("NFD", value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int) and abs(value) < 2 ** 52:
        return float(value) if draw(st.booleans()) else value
    if isinstance(value, float) and value.is_integer() and draw(st.booleans()):
        return int(value)
    if isinstance(value, dict):
        items = list(value.items())
        order = draw(st.permutations(items)) if items else items
        return {unicodedata.normalize("NFD", k): respelt(v, draw) for k, v in order}
    if isinstance(value, list):
        return [respelt(v, draw) for v in value]
    return value


def nfc_distinct(args: dict[str, Any]) -> bool:
    """Whether the keys stay distinct once normalised, at every depth."""
    def ok(value: Any) -> bool:
        if isinstance(value, dict):
            keys = [unicodedata.normalize("NFC", k) for k in value]
            return len(set(keys)) == len(keys) and all(ok(v) for v in value.values())
        if isinstance(value, list):
            return all(ok(v) for v in value)
        return True
    return ok(args)


@given(args=argss, data=st.data())
def test_every_spelling_of_a_call_has_one_canonical_form(args: dict[str, Any], data: st.DataObject) -> None:
    if not nfc_distinct(args):
        with pytest.raises(InvalidInputError, match="once Unicode-normalised"):
            canonical_args(args)
        return
    again = respelt(args, data.draw)
    assert canonical_args(again) == canonical_args(args)
    assert canonical_args(json.loads(json.dumps(again, indent=2))) == canonical_args(args)


@pytest.mark.parametrize(("one", "other"), [
    ({"shard": "09"}, {"shard": 9}),          # a string is not a number
    ({"shard": 9}, {"shard": 9.5}),
    ({"ok": True}, {"ok": 1}),                # true is not 1
    ({"ok": False}, {"ok": 0}),
    ({"ok": None}, {"ok": 0}),
    ({"x": [1, 2]}, {"x": [2, 1]}),           # list order is meaning
    ({"name": "é"}, {"name": "e"}),
])
def test_different_calls_keep_different_forms(one: dict[str, Any], other: dict[str, Any]) -> None:
    assert canonical_args(one) != canonical_args(other)


def test_the_forms_are_the_ones_documented() -> None:
    assert canonical_args({"b": 9.0, "a": "e\u0301"}) == '{"a":"é","b":9}'
    assert canonical_args({"n": -0.0, "big": 1e20, "f": 2.5}) == '{"big":100000000000000000000,"f":2.5,"n":0}'


def test_a_declared_action_stored_before_the_rule_matches_every_spelling(
        open_rippl: Callable[..., Rippl]) -> None:
    rippl = open_rippl()
    rippl.add_claim("CLM-1", "shard 09 is healthy")
    rippl.add_decision("DEC-1", "move billing", premises=["CLM-1"])
    rippl.add_action("ACT-1", "migrate", decisions=["DEC-1"], tool="migrate",
                     args={"shard": 9, "zone": "éu"})
    # as an earlier Rippl stored it: the float spelling and an NFD string, under the old marker
    old_args = '{"shard":9.0,"zone":"e\u0301u"}'
    rippl.redis.execute_command(
        "GRAPH.QUERY", rippl.keys.graph,
        f"CYPHER a={json.dumps(old_args)} k={json.dumps(call_key('migrate', old_args))} "
        "MATCH (a:Action {id: 'ACT-1'}) SET a.args = $a, a.call_key = $k, a.digest = 'old'")
    rippl.redis.set(rippl.keys.schema, "6")
    rippl.retract("CLM-1", reason="disk errors", by="monitor")
    reopened = open_rippl(rippl.graph)
    for spelt in ({"shard": 9, "zone": "éu"}, {"zone": "e\u0301u", "shard": 9.0}):
        verdict = reopened.check(ToolCall(name="migrate", args=spelt))
        assert not verdict.allowed and verdict.target == "ACT-1", verdict.reason
    assert reopened.get("ACT-1").args == {"shard": 9, "zone": "éu"}
    # its digest is today's: declaring the same action again changes nothing
    report = reopened.load({"actions": [{"id": "ACT-1", "title": "migrate", "decisions": ["DEC-1"],
                                         "tool": "migrate", "args": {"zone": "éu", "shard": 9}}]})
    assert report.unchanged == ["ACT-1"]
