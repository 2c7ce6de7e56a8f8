"""Arguments as the tool receives them (`capture.arguments.received`): after the tool's own
validation, defaults filled, values coerced, injected arguments left out; what the schema refuses
is taken as sent. Framework-free: pydantic models, JSON Schema objects and functions, with the
schemas LangChain, AutoGen and CrewAI give (their own tests drive the real frameworks)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from rippl_core.capture.arguments import received, schema_of


class Migrate(BaseModel):
    shard: str
    rows: int = 100
    dry_run: bool = False


SCHEMA: dict[str, Any] = {"type": "object", "required": ["shard"], "properties": {
    "shard": {"type": "string"}, "rows": {"type": "integer", "default": 100},
    "ratio": {"type": "number"}, "dry_run": {"type": "boolean", "default": False},
    "target": {"type": "object", "properties": {"zone": {"type": "string", "default": "eu-1"},
                                                "weight": {"type": ["integer", "null"]}}},
    "tags": {"type": "array"}}}


@pytest.mark.parametrize("sent", [{"shard": "09"}, {"shard": "09", "dry_run": False},
                                  {"shard": "09", "rows": 100, "dry_run": False},
                                  {"shard": "09", "rows": "100"}, {"rows": 100.0, "shard": "09"}])
def test_a_model_fills_defaults_and_coerces(sent: dict[str, Any]) -> None:
    assert received(sent, Migrate) == {"shard": "09", "rows": 100, "dry_run": False}


def test_a_model_leaves_out_what_the_tool_does_not_take() -> None:
    assert received({"shard": "09", "state": {"messages": []}}, Migrate) == {
        "shard": "09", "rows": 100, "dry_run": False}


def test_a_model_dumps_json_values() -> None:
    class Window(BaseModel):
        at: Any = Field(default=None)
        zones: tuple[str, ...] = ()

    assert received({"zones": ["a", "b"]}, Window) == {"at": None, "zones": ["a", "b"]}


@pytest.mark.parametrize("sent", [{}, {"shard": 9}, {"shard": "09", "rows": "many"},
                                  {"shard": "09", "rows": 1.5}])
def test_what_the_model_refuses_is_taken_as_sent(sent: dict[str, Any]) -> None:
    assert received(sent, Migrate) == sent


def test_no_schema_takes_the_arguments_as_sent() -> None:
    sent = {"shard": "09"}
    got = received(sent, None)
    assert got == sent and got is not sent  # a copy: the caller's mapping is never changed


@pytest.mark.parametrize(("sent", "want"), [
    ({"shard": "09"}, {"shard": "09", "rows": 100, "dry_run": False}),
    ({"shard": "09", "rows": "100"}, {"shard": "09", "rows": 100, "dry_run": False}),
    ({"shard": "09", "rows": " -7 "}, {"shard": "09", "rows": -7, "dry_run": False}),
    ({"shard": "09", "rows": "1e2"}, {"shard": "09", "rows": "1e2", "dry_run": False}),
    ({"shard": "09", "ratio": "0.5"}, {"shard": "09", "ratio": 0.5, "rows": 100,
                                       "dry_run": False}),
    ({"shard": "09", "ratio": "2"}, {"shard": "09", "ratio": 2, "rows": 100, "dry_run": False}),
    ({"shard": "09", "ratio": "2.0"}, {"shard": "09", "ratio": 2.0, "rows": 100,
                                       "dry_run": False}),
    ({"shard": "09", "ratio": "fast"}, {"shard": "09", "ratio": "fast", "rows": 100,
                                        "dry_run": False}),
    ({"shard": "09", "dry_run": "TRUE"}, {"shard": "09", "rows": 100, "dry_run": True}),
    ({"shard": "09", "dry_run": "false"}, {"shard": "09", "rows": 100, "dry_run": False}),
    ({"shard": "09", "dry_run": "yes"}, {"shard": "09", "rows": 100, "dry_run": "yes"}),
    ({"shard": 9}, {"shard": 9, "rows": 100, "dry_run": False}),
    ({"shard": "09", "target": {}}, {"shard": "09", "rows": 100, "dry_run": False,
                                     "target": {"zone": "eu-1"}}),
    ({"shard": "09", "target": {"weight": "3"}}, {"shard": "09", "rows": 100, "dry_run": False,
                                                  "target": {"zone": "eu-1", "weight": 3}}),
    ({"shard": "09", "tags": ["1"]}, {"shard": "09", "rows": 100, "dry_run": False,
                                      "tags": ["1"]}),
    ({"shard": "09", "target": "eu-2"}, {"shard": "09", "rows": 100, "dry_run": False,
                                         "target": "eu-2"}),  # not an object: left as sent
    ({"shard": "09", "extra": "1"}, {"shard": "09", "rows": 100, "dry_run": False,
                                     "extra": "1"}),
])
def test_a_json_schema_fills_defaults_and_reads_numbers_and_booleans(
        sent: dict[str, Any], want: dict[str, Any]) -> None:
    assert received(sent, SCHEMA) == want


def test_a_json_schema_without_properties_or_with_odd_ones_takes_what_it_can() -> None:
    assert received({"a": "1"}, {"type": "object"}) == {"a": "1"}
    assert received({"a": "1"}, {"properties": {"a": True, "b": {"default": 2}}}) == \
        {"a": "1", "b": 2}
    untyped = {"properties": {"a": {"properties": {"b": {"type": "integer"}}}}}
    assert received({"a": {"b": "4"}}, untyped) == {"a": {"b": 4}}  # an object by its properties


def test_a_function_schema_and_a_failing_one() -> None:
    assert received({"shard": "9"}, lambda args: {**args, "shard": args["shard"].zfill(2)}) == \
        {"shard": "09"}

    def refuses(args: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("no")

    assert received({"shard": "9"}, refuses) == {"shard": "9"}


@given(st.integers(min_value=-10**12, max_value=10**12))
def test_any_integer_spelt_as_text_is_read_as_the_same_call(n: int) -> None:
    assert received({"shard": "09", "rows": str(n)}, SCHEMA)["rows"] == n
    assert received({"shard": "09", "rows": str(n)}, Migrate)["rows"] == n


def test_schema_of_finds_a_tools_schema() -> None:
    class Tool:
        args_schema = Migrate

        def args_type(self) -> type[BaseModel]:
            return Migrate

        def broken(self) -> type[BaseModel]:
            raise RuntimeError("no")

        parameters: ClassVar[dict[str, Any]] = SCHEMA
        nothing: ClassVar[dict[str, Any]] = {"type": "object"}

    tool = Tool()
    assert schema_of(tool, "missing", "args_schema") is Migrate
    assert schema_of(tool, "args_type") is Migrate
    assert schema_of(tool, "broken", "parameters") is SCHEMA
    assert schema_of(tool, "nothing") is None and schema_of(tool, "missing") is None
