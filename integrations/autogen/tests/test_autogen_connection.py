"""How components reach their graph: borrowed handles, lazily opened ones, and sync handles."""

from __future__ import annotations

import asyncio

import pytest
from autogen_core.tools import StaticWorkbench
from autogen_helpers import TO_07, Ops
from rippl_autogen import RipplConnection, RipplWorkbench
from rippl_autogen.connection import Link

from rippl_core import InvalidInputError, Policy, Rippl
from rippl_core.adapters import ThreadedRippl


def test_connection_of_a_handle_reopens_the_same_graph(incident: Rippl) -> None:
    options = RipplConnection.of(incident)
    assert options.graph == incident.graph and options.policy == incident.policy
    assert (options.path is None) != (options.url is None)

    async def node_text() -> str:
        handle = await options.open()
        try:
            return (await handle.get("CLM-001")).text
        finally:
            await handle.close()

    assert asyncio.run(node_text()) == incident.get("CLM-001").text


def test_a_loaded_component_survives_a_new_event_loop(incident: Rippl, ops: Ops) -> None:
    wb = RipplWorkbench(StaticWorkbench(ops.tools()), RipplConnection.of(incident))
    assert not asyncio.run(wb.call_tool("migrate_tables", TO_07)).is_error
    incident.retract("CLM-003", reason="shard 07 lag", by="grafana")  # ACT-002 rests on it
    second = asyncio.run(wb.call_tool("migrate_tables", TO_07))  # another loop: reopened, still right
    assert second.is_error and "CLM-003" in second.to_text()
    asyncio.run(wb.stop())
    assert wb.guard.link._owned is None and len(ops.ran) == 1


def test_sync_handle_methods_become_awaitables(incident: Rippl) -> None:
    threaded = ThreadedRippl(incident)
    assert threaded.policy == incident.policy
    verdict = asyncio.run(threaded.check("ACT-002", policy=Policy()))
    assert verdict.allowed
    with pytest.raises(AttributeError):
        threaded.graph  # noqa: B018  (a non-callable attribute is not exposed)


def test_a_link_refuses_what_is_not_a_graph() -> None:
    with pytest.raises(InvalidInputError, match="AsyncRippl or Rippl"):
        Link({"url": "falkordb://localhost"})  # type: ignore[arg-type]
    assert Link(Link(RipplConnection(graph="g"))).connection.graph == "g"
