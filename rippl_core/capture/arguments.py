"""Arguments as the tool receives them: two calls are the same act when the tool would receive the
same arguments (docs/design.md, "Arguments as the tool receives them"). The adapter kit applies it
to every call it maps (`rippl_core.adapters.ToolGuard`), the MCP server to the tools a client
registered with its run.

A model spells a call as it likes: a default spelled out (strict function calling sends every
field), a number quoted ("100" for 100), an injected argument it should not send. What runs is
what the tool's own validation makes of it. So every comparison of calls (a declared action's
match, a repeat of a vetoed call, a binding handed over, an override) is made on the arguments
after that validation, by `received`, with the tool's schema as its framework gives it:

- a pydantic model (LangChain's `tool_call_schema`, which leaves injected arguments out; AutoGen's
  `FunctionTool.args_type()`; CrewAI's `args_schema`): validated in its own (lax) mode, then dumped
  as JSON values, defaults filled, unknown fields left out as the model leaves them;
- a JSON Schema object (an MCP tool's `inputSchema`): defaults of missing properties filled, and
  text that spells a number or a boolean where the schema wants one read as that value, at every
  depth of `properties`;
- a function of the arguments, for anything else.

Arguments the schema refuses are taken as sent: the tool will not run them either, and a veto of
them binds only that spelling.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, cast

from pydantic import BaseModel

type ArgumentSchema = type[BaseModel] | Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]]

_INTEGER = re.compile(r"[+-]?\d+")


def received(values: Mapping[str, Any], schema: ArgumentSchema | None) -> dict[str, Any]:
    """The arguments a tool receives for `values` under `schema` (None: as sent)."""
    sent = dict(values)
    if schema is None:
        return sent
    try:
        if isinstance(schema, Mapping):
            return _object(sent, schema)
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            received_: dict[str, Any] = schema.model_validate(sent).model_dump(mode="json")
            return received_
        return dict(cast(Callable[[dict[str, Any]], Mapping[str, Any]], schema)(sent))
    except Exception:  # refused by the tool's validation: as sent (the tool will not run it)
        return sent


def schema_of(tool: object, *names: str) -> ArgumentSchema | None:
    """The first of a tool's attributes `names` that is an argument schema (a pydantic model or
    a JSON Schema object), called first if it is a method; None when it has none."""
    for name in names:
        found = getattr(tool, name, None)
        if callable(found) and not isinstance(found, type):
            try:
                found = found()
            except Exception:
                continue
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
        if isinstance(found, Mapping) and isinstance(found.get("properties"), Mapping):
            return found
    return None


def _object(values: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return values
    found = dict(values)
    for name, sub in properties.items():
        if not isinstance(sub, Mapping):
            continue
        if name in found:
            found[name] = _value(found[name], sub)
        elif "default" in sub:
            found[name] = sub["default"]
    return found


def _value(value: Any, schema: Mapping[str, Any]) -> Any:
    kinds = schema.get("type")
    wanted = {kinds} if isinstance(kinds, str) else set(kinds) if isinstance(kinds, list) else set()
    if isinstance(value, Mapping) and "object" in wanted | ({"object"} if "properties" in schema
                                                             else set()):
        return _object(dict(value), schema)
    if not isinstance(value, str) or "string" in wanted:
        return value
    text = value.strip()
    if "integer" in wanted and _INTEGER.fullmatch(text):
        return int(text)
    if "number" in wanted:
        try:
            number = float(text)
        except ValueError:
            pass
        else:
            return int(text) if _INTEGER.fullmatch(text) else number
    if "boolean" in wanted and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return value
