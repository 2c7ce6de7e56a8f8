"""A run keeps the input schemas of its tools in the graph (`Run.register_tools`): whoever
continues the run (another handle, a server that restarted) reads them back; a tool registered
again is replaced; bad input is refused with a typed error and writes nothing; pruning the run
removes them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rippl_core import InvalidInputError, Rippl, ToolCall

SCHEMA = {"type": "object", "properties": {"shard": {"type": "string"},
                                           "rows": {"type": "integer", "default": 100}}}


def test_schemas_are_kept_with_the_run_and_replaced_by_name(
        open_rippl: Callable[..., Rippl]) -> None:
    with open_rippl() as first:
        run = first.run("schemas-1")
        run.register_tools({"migrate": SCHEMA, "get_health": {"type": "object"}})
        run.register_tools({"get_health": {"type": "object", "required": ["shard"]}})
        with open_rippl(graph=first.graph) as second:  # another handle continues the run
            assert second.run("schemas-1").tool_schemas() == {
                "migrate": SCHEMA, "get_health": {"type": "object", "required": ["shard"]}}
            assert second.run("schemas-2").tool_schemas() == {}  # per run


@pytest.mark.parametrize(("schemas", "says"), [
    ({}, "at least one"),
    ([("migrate", SCHEMA)], "must map each tool's name"),
    ({"migrate": "not a schema"}, "must be a JSON Schema object"),
    ({"migrate": {"default": float("nan")}}, "is not JSON"),
    ({"migrate": {"default": object()}}, "is not JSON"),
    ({"": SCHEMA}, "tool name"),
    ({"migrate": {"description": "x" * 70_000}}, "more than 64,000"),
])
def test_bad_schemas_are_refused_and_write_nothing(rippl: Rippl, schemas: Any, says: str) -> None:
    run = rippl.run("schemas-bad")
    run.register_tools({"kept": SCHEMA})
    with pytest.raises(InvalidInputError, match=says):
        run.register_tools(schemas)
    assert run.tool_schemas() == {"kept": SCHEMA}


def test_pruning_a_run_removes_its_schemas(rippl: Rippl) -> None:
    run = rippl.run("schemas-pruned")
    [verdict] = run.decide("t1", [ToolCall(name="migrate", args={"shard": "09"}, id="c1")])
    assert verdict.allowed
    run.register_tools({"migrate": SCHEMA})
    run.close()
    assert "schemas-pruned" in rippl.prune_runs(older_than="2999-01-01T00:00:00Z")
    assert run.tool_schemas() == {}
