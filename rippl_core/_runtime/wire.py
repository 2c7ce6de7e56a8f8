"""The FalkorDB wire format: query parameters out, compact result sets in.

Parameters travel in the `CYPHER name=value ...` prefix that FalkorDB parses as literals, so every
user value is data, never query text. Results are read in the compact format; queries return only
scalars, lists and maps (never whole nodes), so no schema lookup is needed. A query marked `plain`
(it returns only strings, integers and nulls) is read in FalkorDB's verbose format instead, whose
cells are the values themselves: one object a cell instead of a typed pair to decode, which is
what reading a reply of many rows costs (`parse` tells the two formats apart by their header).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import Any

from rippl_core._runtime.collector import held_off
from rippl_core.errors import InvalidInputError

_NULL, _STRING, _INTEGER, _BOOLEAN, _DOUBLE, _ARRAY, _EDGE, _NODE, _PATH, _MAP = range(1, 11)


@dataclass(frozen=True, slots=True)
class Query:
    """A parameterised Cypher query; `text` comes from rippl_core.queries only."""

    text: str
    params: Mapping[str, Any] = field(default_factory=dict)
    read_only: bool = False
    # Every column is a string, an integer or null: the reply is read in the verbose format, its
    # rows as they arrive (booleans, doubles, lists and maps would arrive as text there, so a
    # plain query never returns one; join a list of ids with `string.join` instead).
    plain: bool = False

    def command(self) -> str:
        """The query string with its parameters prefixed."""
        if not self.params:
            return self.text
        prefix = " ".join(f"{name}={literal(value)}" for name, value in self.params.items())
        return f"CYPHER {prefix} {self.text}"


def _quote_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _quote_key(key: str) -> str:
    # Map keys in parameters are always Rippl's own field names; FalkorDB does not parse quoted keys.
    if not (key.isidentifier() and key.isascii()):
        raise InvalidInputError(f"parameter map key {key!r} is not a plain identifier")
    return key


def literal(value: Any) -> str:
    """A Cypher literal for a parameter value (None, bool, int, float, str, list, map)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError("numbers must be finite (no NaN or infinity)")
        return repr(value)
    if isinstance(value, str):
        return _quote_string(value)
    if isinstance(value, Mapping):
        items = ", ".join(f"{_quote_key(str(k))}: {literal(v)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_column(value)) + "]"
    raise InvalidInputError(f"cannot send a {type(value).__name__} as a query parameter")


# A list is encoded a column at a time: when every item has the same plain type, the whole column
# is escaped or formatted by a few C-level string operations instead of one call per value, and a
# list of maps is encoded key by key (each key's values are a column). The text is exactly what
# encoding each item on its own gives (`literal`); only the work is batched.
_BOOL = {True: "true", False: "false"}
_COLUMN = 8  # items from which a list is encoded a column at a time


def _column(values: Sequence[Any]) -> list[str]:
    """The literal of each item of `values`."""
    items = values if isinstance(values, list) else list(values)
    if len(items) < _COLUMN:  # a short list: the column machinery would cost more
        return [literal(item) for item in items]
    with held_off(len(items)):  # a load's rows: see rippl_core._runtime.collector
        return _encoded(items)


def _encoded(items: list[Any]) -> list[str]:
    types = set(map(type, items))
    if len(types) == 1:
        kind = types.pop()
        if kind is str:
            return _strings(items)
        if kind is dict:
            return _maps(items)
        if kind is int:
            return list(map(str, items))
        if kind is bool:
            return list(map(_BOOL.__getitem__, items))
        if kind is type(None):
            return ["null"] * len(items)
        if kind is float and all(map(math.isfinite, items)):
            return list(map(repr, items))
    return [literal(item) for item in items]


def _strings(items: list[str]) -> list[str]:
    """Quote many strings at once: join them on NUL, escape the whole text, split it again."""
    joined = "\x00".join(items)
    if joined.count("\x00") != len(items) - 1:  # a string holds a NUL itself: one at a time
        return [_quote_string(item) for item in items]
    escaped = joined.replace("\\", "\\\\").replace('"', '\\"')
    return ('"' + escaped.replace("\x00", '"\x00"') + '"').split("\x00")


def _maps(items: list[dict[Any, Any]]) -> list[str]:
    """Encode dicts with the same keys together: each key's values as one column, then every
    map formatted from its row of the columns."""
    shapes = list(map(tuple, items))
    groups: dict[tuple[Any, ...], list[int]] = {}
    if len(set(shapes)) == 1:
        groups[shapes[0]] = list(range(len(items)))
    else:
        for index, shape in enumerate(shapes):
            groups.setdefault(shape, []).append(index)
    out: list[str] = [""] * len(items)
    for shape, indexes in groups.items():
        rows = items if len(groups) == 1 else [items[i] for i in indexes]
        if not shape:
            encoded = ["{}"] * len(rows)
        else:
            parts: list[Iterable[str]] = []
            for position, key in enumerate(shape):  # "{k1: " v1 ", k2: " v2 ... "}" per row
                parts.append(repeat(("{" if position == 0 else ", ") + _quote_key(str(key)) + ": "))
                parts.append(_column(list(map(itemgetter(key), rows))))
            parts.append(repeat("}"))
            encoded = list(map("".join, zip(*parts, strict=False)))  # repeat() is endless
        if len(groups) == 1:
            return encoded
        for index, text in zip(indexes, encoded, strict=True):
            out[index] = text
    return out


def _value(cell: list[Any]) -> Any:
    kind, raw = cell
    if kind == _STRING:
        return raw
    if kind == _INTEGER:
        return int(raw)
    if kind == _NULL:
        return None
    if kind == _BOOLEAN:
        return raw in ("true", b"true", True, 1)
    if kind == _DOUBLE:
        return float(raw)
    if kind == _ARRAY:
        return list(map(_value, raw))
    if kind == _MAP:
        return {raw[i]: _value(raw[i + 1]) for i in range(0, len(raw), 2)}
    raise TypeError(f"queries must return scalars, lists or maps, not type {kind}")


def parse(reply: list[Any]) -> list[Any]:
    """Rows of a GRAPH.QUERY reply (an empty list for queries without RETURN): of the compact
    format, each a tuple of decoded values; of the verbose format (a `plain` query: its header
    names the columns without their types), each the list of values as it arrived."""
    if len(reply) < 3:
        return []
    header = reply[0]
    if header and type(header[0]) is not list:  # verbose: the cells are the values
        return reply[1]  # type: ignore[no-any-return]
    return [tuple(map(_value, row)) for row in reply[1]]
