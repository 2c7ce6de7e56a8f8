"""Property: whatever a model asks for, the guard never raises, the inner tool runs exactly when the
core's pre-flight check allows the call, and every denial tells the model why."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from autogen_core import CancellationToken
from autogen_core.tools import TextResultContent, ToolResult, ToolSchema, Workbench
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rippl_autogen import RipplWorkbench

from rippl_core import InvalidInputError, Rippl, ToolCall

KNOWN_CALLS = [
    ("migrate_tables", {"table": "billing", "shard": "09"}),
    ("migrate_tables", {"table": "billing", "shard": "07"}),
    ("resize_volume", {"shard": "09", "iops": 16000, "max_wal_size_gb": 64}),
    ("rollback_deploy", {"service": "checkout-api", "to_version": "2.3.7"}),
    ("set_cache_ttl", {"cache": "redis-pricing", "ttl_seconds": 300}),
]
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                           lambda inner: st.lists(inner, max_size=2)
                           | st.dictionaries(st.text(max_size=4), inner, max_size=2), max_leaves=4)
tool_calls = st.one_of(
    st.sampled_from(KNOWN_CALLS),
    st.tuples(st.sampled_from([name for name, _ in KNOWN_CALLS]),
              st.dictionaries(st.sampled_from(["table", "shard", "iops", "x"]), json_values,
                              max_size=3)),
    st.tuples(st.text(max_size=12), st.dictionaries(st.text(max_size=6), json_values, max_size=2)),
)


class Recording(Workbench):
    """An inner workbench that records every call it receives."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def list_tools(self) -> list[ToolSchema]:
        return []

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None,
                        cancellation_token: CancellationToken | None = None,
                        call_id: str | None = None) -> ToolResult:
        self.calls.append((name, dict(arguments or {})))
        return ToolResult(name=name, result=[TextResultContent(content="ran")])

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def reset(self) -> None: ...

    async def save_state(self) -> Mapping[str, Any]:
        return {}

    async def load_state(self, state: Mapping[str, Any]) -> None: ...


def core_allows(rippl: Rippl, name: str, args: dict[str, Any], *, capture: bool) -> bool:
    """What the core says of the call: every declared action it matches must allow it; with
    capture a call no declared action matches is judged by its run (here: nothing the run saw
    was retracted, so allowed), without capture it is denied."""
    try:
        return rippl.check(ToolCall(name=name, args=args),
                           unknown="allow" if capture else "deny").allowed
    except (InvalidInputError, ValueError):
        return False


@pytest.mark.parametrize("capture", [True, False])
def test_guard_runs_the_tool_exactly_when_the_core_allows(incident: Rippl, capture: bool) -> None:
    incident.retract("CLM-001", reason="I/O errors on shard 09", by="grafana")
    inner = Recording()
    wb = RipplWorkbench(inner, incident, capture=capture)  # a sync handle: a worker thread

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(tool_calls)
    def check(case: tuple[str, dict[str, Any]]) -> None:
        name, args = case
        inner.calls.clear()
        result = asyncio.run(wb.call_tool(name, args))
        allowed = core_allows(incident, name, args, capture=capture)
        assert (inner.calls == [(name, args)]) is allowed
        assert result.is_error is not allowed
        if not allowed:
            assert result.to_text().startswith(f"VETOED by Rippl: the call to {name} did not run.\n")
            assert "denied" in result.to_text()

    check()
