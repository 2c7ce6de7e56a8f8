"""Rippl's spans inside an MCP client's trace: the agent's span around its `check_premises` call is
the ancestor of the server's check span and its veto event. OpenInference's MCP instrumentation
carries the trace context in the request's `_meta` (W3C trace context), as it does over stdio or
HTTP: here the server speaks streamable HTTP on a loopback port from the test's own process, so the
spans of both sides land in one exporter."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket

import pytest
from helpers_telemetry import Telemetry, ancestors, events

from rippl_core import AsyncRippl, Rippl
from rippl_core.mcp.server import build_server
from rippl_core.testing import free_port

MIGRATE_ARGS = {"table": "billing", "shard": "09"}

pytest.importorskip("openinference.instrumentation.mcp")


@pytest.mark.asyncio(loop_scope="session")
async def test_an_mcp_veto_sits_under_the_agents_tool_call(rippl: Rippl, arippl: AsyncRippl,
                                                          otel: Telemetry) -> None:
    from mcp import ClientSession
    from openinference.instrumentation.mcp import MCPInstrumentor

    rippl.add_claim("C-09", "shard 09 has room for billing")
    rippl.add_decision("D-move", "move billing to 09", premises=["C-09"])
    rippl.add_action("A-move", "migrate billing to 09", decisions=["D-move"], tool="migrate_tables",
                     args=MIGRATE_ARGS)
    rippl.retract("C-09", reason="shard 09 is full", by="alice")
    port = free_port()
    server = build_server(arippl, port=port)
    instrumentor = MCPInstrumentor()
    instrumentor.instrument(tracer_provider=otel.provider)
    serving = asyncio.create_task(server.serve_http())
    try:
        from mcp.client.streamable_http import streamable_http_client
        for _ in range(200):  # until it listens
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.1):
                break
            await asyncio.sleep(0.05)
        agent = otel.provider.get_tracer("agent")
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, _), \
                ClientSession(read, write) as client:
            await client.initialize()
            with agent.start_as_current_span("execute_tool migrate_tables") as outer:
                result = await client.call_tool(
                    "check_premises", {"tool": "migrate_tables", "args": MIGRATE_ARGS})
            allowed = await client.call_tool("check_premises", {"target": "D-move"})
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        instrumentor.uninstrument()
    verdict = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert verdict["safe"] is False
    spans = otel.spans()
    [check] = [s for s in otel.rippl() if events(s) and "migrate_tables" in s.name]
    [veto] = events(check)
    assert veto["rippl.veto.reason"] == "retracted"
    assert veto["rippl.veto.trails"] == ("C-09 -> D-move -> A-move",)
    chain = ancestors(check, spans)
    assert outer.get_span_context().span_id in {s.context.span_id for s in chain if s.context}
    assert check.context is not None and check.context.trace_id == outer.get_span_context().trace_id
    # a call made outside the agent's span is not under it (the parent is not left over)
    denied = json.loads(allowed.content[0].text)  # type: ignore[union-attr]
    assert denied["safe"] is False
    later = [s for s in otel.rippl() if s is not check and s.start_time > check.start_time]
    assert later and all(outer.get_span_context().span_id not in
                         {a.context.span_id for a in ancestors(s, spans) if a.context}
                         for s in later)
