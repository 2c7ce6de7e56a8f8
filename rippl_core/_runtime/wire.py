"""The FalkorDB wire format: query parameters out, compact result sets in.

Parameters travel in the `CYPHER name=value ...` prefix that FalkorDB parses as literals, so every
user value is data, never query text. Results are read in the compact format; queries return only
scalars, lists and maps (never whole nodes), so no schema lookup is needed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rippl_core.errors import InvalidInputError

_NULL, _STRING, _INTEGER, _BOOLEAN, _DOUBLE, _ARRAY, _EDGE, _NODE, _PATH, _MAP = range(1, 11)


@dataclass(frozen=True, slots=True)
class Query:
    """A parameterised Cypher query; `text` comes from rippl_core.queries only."""

    text: str
    params: Mapping[str, Any] = field(default_factory=dict)
    read_only: bool = False

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
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise InvalidInputError(f"cannot send a {type(value).__name__} as a query parameter")


def _value(cell: list[Any]) -> Any:
    kind, raw = cell
    if kind == _NULL:
        return None
    if kind == _STRING:
        return raw
    if kind == _INTEGER:
        return int(raw)
    if kind == _BOOLEAN:
        return raw in ("true", b"true", True, 1)
    if kind == _DOUBLE:
        return float(raw)
    if kind == _ARRAY:
        return [_value(item) for item in raw]
    if kind == _MAP:
        return {raw[i]: _value(raw[i + 1]) for i in range(0, len(raw), 2)}
    raise TypeError(f"queries must return scalars, lists or maps, not type {kind}")


def parse(reply: list[Any]) -> list[tuple[Any, ...]]:
    """Rows of a compact GRAPH.QUERY reply (an empty list for queries without RETURN)."""
    if len(reply) < 3:
        return []
    return [tuple(_value(cell) for cell in row) for row in reply[1]]
