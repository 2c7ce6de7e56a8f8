"""Query parameters on the wire: the column-at-a-time encoder writes exactly the text that encoding
each value on its own writes (a naive reference, the encoder as it was), and FalkorDB reads back
every value as it was sent."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core._runtime.wire import Query, literal, parse
from rippl_core.errors import InvalidInputError
from rippl_core.testing import FalkorDBServer


def reference(value: Any) -> str:
    """One value at a time, recursively: the encoder before columns."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError("numbers must be finite")
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, Mapping):
        items = []
        for k, v in value.items():
            key = str(k)
            if not (key.isidentifier() and key.isascii()):
                raise InvalidInputError(f"bad key {key!r}")
            items.append(f"{key}: {reference(v)}")
        return "{" + ", ".join(items) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(reference(v) for v in value) + "]"
    raise InvalidInputError(f"cannot send a {type(value).__name__}")


KEYS = st.sampled_from(["id", "kind", "text", "state", "j", "src", "_x", "a1"])
BAD_KEYS = st.sampled_from(["a b", "é", "1a", "", 'k"'])
# Texts lean on what escaping must get right: quotes, backslashes, NUL (the column separator),
# control characters, and text that looks like the encoding itself.
TEXTS = st.one_of(st.text(), st.sampled_from(['"', "\\", '\\"', "\x00", '", "', '"\x00"', "\n\t",
                                             "{id: 1}", "%s", "%(x)s", "😀"]))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXTS)


def values(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(SCALARS, lambda inner: st.one_of(
        st.lists(inner, max_size=12), st.tuples(inner, inner),
        st.dictionaries(keys, inner, max_size=4)), max_leaves=30)


# Rows of maps with the same or varying keys and columns of one or mixed types: the shapes the
# column encoder takes its fast paths on (from 8 items a list is encoded a column at a time).
ROWS = st.lists(st.fixed_dictionaries({"id": TEXTS, "n": st.integers()},
                                      optional={"props": st.dictionaries(KEYS, SCALARS, max_size=3),
                                                "flag": st.booleans(), "x": SCALARS}), max_size=24)


def both(value: Any) -> tuple[str | None, str | None]:
    def run(encode: Any) -> str | None:
        try:
            return str(encode(value))
        except InvalidInputError:
            return None
    return run(literal), run(reference)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(values(KEYS), values(st.one_of(KEYS, BAD_KEYS)), ROWS,
                 st.lists(TEXTS, min_size=8, max_size=20),
                 st.lists(st.one_of(SCALARS, st.dictionaries(KEYS, SCALARS)), min_size=8,
                          max_size=20)))
def test_the_column_encoder_writes_what_encoding_each_value_writes(value: Any) -> None:
    new, old = both(value)
    assert new == old


def test_columns_of_one_type_and_of_several() -> None:
    rows = [{"id": "a", "n": 1}, {"id": 'b"\\', "n": 2, "extra": None}, {"id": "c", "n": 3}] * 5
    assert literal(rows) == reference(rows)
    assert literal([{"a": [1, 2]}] * 9) == reference([{"a": [1, 2]}] * 9)
    assert literal(["x", None, 1, 2.5, True]) == '["x", null, 1, 2.5, true]'
    assert literal([[], {}, ()]) == "[[], {}, []]"
    with pytest.raises(InvalidInputError):
        literal([1.0] * 9 + [math.nan])
    with pytest.raises(InvalidInputError):
        literal([{"ok": 1}] * 9 + [{"not ok": 2}])


@pytest.fixture(scope="module")
def client(falkordb_server: FalkorDBServer) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=falkordb_server.port, decode_responses=True)


JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
              st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"))),
    lambda inner: st.one_of(st.lists(inner, max_size=5),
                            st.dictionaries(KEYS, inner, min_size=1, max_size=4)),
    max_leaves=20)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.lists(JSONISH, max_size=6))
def test_falkordb_reads_back_every_value_as_sent(client: redis.Redis, value: list[Any]) -> None:
    query = Query("RETURN $x", {"x": value})
    rows = parse(client.execute_command("GRAPH.QUERY", "wire-roundtrip", query.command(),
                                        "--compact"))
    assert rows == [(value,)]


PLAIN = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1),
                  st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00")))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.lists(PLAIN, min_size=1, max_size=6))
def test_a_plain_query_reads_back_strings_integers_and_nulls_as_sent(client: redis.Redis,
                                                                     values: list[Any]) -> None:
    """A `plain` query's reply comes in FalkorDB's verbose format (the driver leaves out
    --compact): `parse` returns its rows as they arrive, the same values the compact format
    gives for strings, integers and nulls."""
    query = Query("RETURN " + ", ".join(f"$x{i}" for i in range(len(values))),
                  {f"x{i}": v for i, v in enumerate(values)}, read_only=True, plain=True)
    plain = parse(client.execute_command("GRAPH.RO_QUERY", "wire-roundtrip", query.command()))
    compact = parse(client.execute_command("GRAPH.RO_QUERY", "wire-roundtrip", query.command(),
                                           "--compact"))
    assert [list(row) for row in compact] == plain == [values]
    assert parse(client.execute_command("GRAPH.RO_QUERY", "wire-roundtrip",
                                        "UNWIND [] AS x RETURN x")) == []
