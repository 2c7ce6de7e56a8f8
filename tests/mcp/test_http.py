"""The MCP server over streamable HTTP (`rippl --url ... mcp --transport http`), on a real FalkorDB
server on a loopback TCP port, started with the human review tools enabled for a named reviewer."""

from __future__ import annotations

import asyncio
import http.client
import json
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest
import pytest_asyncio
from helpers_core import loopback_graph
from helpers_mcp import (
    REPO,
    Client,
    all_of,
    http_client_for,
    http_server,
    rippl_script,
    stdio_client_for,
)
from helpers_mcp import StdioServerParameters as Params

from rippl_core import Rippl
from rippl_core.testing import FalkorDBServer, free_port, start_falkordb_server

pytestmark = pytest.mark.asyncio(loop_scope="session")

REVIEWER = "alice@example.com"


@pytest.fixture(scope="module")
def graph(falkordb_server: FalkorDBServer) -> Iterator[Rippl]:
    """The graph the server serves, opened by the test to set up and inspect it."""
    with loopback_graph(falkordb_server.url, "mcp") as handle:
        handle.load(REPO / "examples" / "incident.yaml")
        yield handle


@pytest.fixture(scope="module")
def server(falkordb_server: FalkorDBServer, graph: Rippl,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[bytes]]:
    """`rippl --url URL --graph G mcp --transport http --port N --allow-review --reviewer R`."""
    port = free_port()
    log = tmp_path_factory.mktemp("mcp-http") / "server.log"
    args = ["--url", falkordb_server.url, "--graph", graph.graph, "mcp", "--transport", "http",
            "--port", str(port), "--allow-review", "--reviewer", REVIEWER]
    with http_server(args, log) as process:
        process.port = port  # type: ignore[attr-defined]
        yield process


@pytest.fixture(scope="module")
def endpoint(server: subprocess.Popen[bytes]) -> str:
    return f"http://127.0.0.1:{server.port}/mcp"  # type: ignore[attr-defined]


async def test_http_binds_to_loopback_only(server: subprocess.Popen[bytes]) -> None:
    listening = [c.laddr for c in psutil.Process(server.pid).net_connections(kind="inet")
                 if c.status == psutil.CONN_LISTEN]
    assert listening and {a.ip for a in listening} == {"127.0.0.1"}
    assert {a.port for a in listening} == {server.port}  # type: ignore[attr-defined]


INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})


def post_initialize(port: int, headers: dict[str, str]) -> int:
    """The HTTP status of an initialize request sent with `headers` (a browser on another site
    sends its own Host, after DNS rebinding, or Origin)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", "/mcp", INITIALIZE, {"Content-Type": "application/json",
                                                  "Accept": "application/json, text/event-stream",
                                                  **headers})
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.parametrize(("headers", "status"), [
    ({}, 200), ({"Origin": "http://localhost:3000"}, 200),
    ({"Host": "attacker.example"}, 421), ({"Host": "attacker.example:8000"}, 421),
    ({"Origin": "http://attacker.example"}, 403), ({"Origin": "null"}, 403),
])
async def test_http_refuses_requests_for_another_host_or_from_another_origin(
        server: subprocess.Popen[bytes], headers: dict[str, str], status: int) -> None:
    port = server.port  # type: ignore[attr-defined]
    assert await asyncio.to_thread(post_initialize, port, {"Host": f"127.0.0.1:{port}", **headers}) == status


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def client(endpoint: str) -> AsyncIterator[Client]:
    async with http_client_for(endpoint) as session:
        yield session


async def chain(client: Client) -> dict[str, str]:
    ids = {k: f"{k.upper()}-{uuid.uuid4().hex[:8]}" for k in ("clm", "dec", "act", "tool")}
    await client.call("add_claim", id=ids["clm"], text=f"{ids['clm']} holds")
    await client.call("add_decision", id=ids["dec"], title="Decide on it", premises=[ids["clm"]])
    await client.call("add_action", id=ids["act"], title="Act on it", decisions=[ids["dec"]],
                      tool=ids["tool"])
    return ids


async def test_review_tools_are_listed_when_allowed(client: Client) -> None:
    tools = await client.tools()
    assert {"approve_review", "reject_review", "check_premises", "explain"} <= set(tools)
    approve = tools["approve_review"]
    assert approve["inputSchema"]["required"] == ["review_id"]
    assert "by" not in approve["inputSchema"]["properties"]  # the identity is the server's, not the agent's
    assert approve["annotations"]["destructiveHint"] is True
    assert {"decided_by", "receipt", "changes"} <= set(approve["outputSchema"]["properties"])


async def test_incident_veto_over_http(client: Client, graph: Rippl) -> None:
    call = {"tool": "migrate_tables", "args": {"table": "billing", "shard": "09"}}
    assert (await client.call("check_premises", **call))["safe"] is True
    graph.retract("CLM-001", reason="disk errors on shard 09", by="telemetry")
    try:
        denied = await client.call("check_premises", **call)
        assert denied["safe"] is False and denied["target"] == "ACT-001"
        assert denied["blockers"][0]["trail"] == ["CLM-001", "DEC-001", "ACT-001"]
        assert "disk errors on shard 09" in denied["explanation"]
        fallback = await client.call("check_premises", tool="migrate_tables",
                                     args={"table": "billing", "shard": "07"})
        assert fallback["safe"] is True and fallback["target"] == "ACT-002"
        freeze = await client.call("explain", node_id="DEC-012")
        assert freeze["status"] == "Holding" and freeze["holding"] == [1]
        assert freeze["justifications"][0]["standing"] == "broken"
    finally:
        graph.reinstate("CLM-001", reason="false alarm", by="oncall")


async def test_approval_through_mcp_names_the_reviewer(client: Client, graph: Rippl) -> None:
    ids = await chain(client)
    review = await client.call("propose_retraction", claim_id=ids["clm"], reason="wrong", by="agent-7")
    decision = await client.call("approve_review", review_id=review["id"], note="checked")
    assert decision["decision"] == "approved" and decision["decided_by"] == REVIEWER
    assert {c["id"] for c in decision["changes"]} == {ids["clm"], ids["dec"], ids["act"]}
    receipt = next(r for r in graph.receipts() if r.id == decision["receipt"])
    assert receipt.actor == REVIEWER and receipt.review == review["id"]
    assert receipt.hash == decision["receipt_hash"] and receipt.body["note"] == "checked"
    assert graph.review(review["id"]).decided_by == REVIEWER
    denied = await client.call("check_premises", target=ids["act"])
    assert denied["safe"] is False and denied["status"] == "Premise Retracted"
    again = await client.fail("approve_review", review_id=review["id"])
    assert "ReviewError" in again and "already approved" in again
    assert "NotFoundError" in await client.fail("approve_review", review_id="REV-000000000000")
    assert (await client.call("verify_receipts"))["ok"] is True


async def test_rejection_through_mcp_restores_the_action(client: Client, graph: Rippl) -> None:
    ids = await chain(client)
    review = await client.call("propose_retraction", claim_id=ids["clm"], reason="maybe wrong")
    assert (await client.call("check_premises", target=ids["act"]))["status"] == "Blocked"
    decision = await client.call("reject_review", review_id=review["id"])
    assert decision["decision"] == "rejected" and decision["decided_by"] == REVIEWER
    assert (await client.call("check_premises", target=ids["act"]))["safe"] is True
    assert graph.review(review["id"]).status == "rejected"


async def test_concurrent_clients(endpoint: str, client: Client) -> None:
    """Six sessions at once: each records and checks its own chain, all propose retracting one
    shared claim, and after one approval every session sees the veto."""
    shared = await chain(client)
    async with all_of([http_client_for(endpoint, name=f"agent-{i}") for i in range(6)]) as agents:
        chains = await asyncio.gather(*(chain(a) for a in agents))
        checks = await asyncio.gather(*(a.call("check_premises", target=c["act"])
                                        for a, c in zip(agents, reversed(chains), strict=True)))
        assert all(c["safe"] for c in checks)
        reviews = await asyncio.gather(*(a.call("propose_retraction", claim_id=shared["clm"],
                                                reason="seen failing") for a in agents))
        assert sorted(r["proposed_by"] for r in reviews) == [f"mcp:agent-{i}" for i in range(6)]
        node = await agents[0].call("explain", node_id=shared["clm"])
        assert node["pending_reviews"] == 6
        await agents[1].call("approve_review", review_id=reviews[0]["id"])
        verdicts = await asyncio.gather(*(a.call("check_premises", target=shared["act"]) for a in agents))
        assert {v["status"] for v in verdicts} == {"Premise Retracted"}


async def test_check_fails_closed_when_the_database_goes_away(tmp_path: Path) -> None:
    """A server whose FalkorDB dies: check_premises answers unsafe and says why; other tools give a
    tool error; the MCP server itself keeps answering."""
    database = start_falkordb_server()
    params = Params(command=rippl_script(), args=["--url", database.url, "mcp"], cwd=str(REPO))
    try:
        with (tmp_path / "server.log").open("w") as errlog:
            async with stdio_client_for(params, errlog) as session:
                await session.call("add_claim", id="CLM-1", text="It holds")
                assert (await session.call("explain", node_id="CLM-1"))["status"] == "Verified"
                database.stop()
                verdict = await session.call("check_premises", target="ACT-1")
                assert verdict["safe"] is False and verdict["status"] == "Unknown"
                assert "could not be checked" in verdict["reason"]
                message = await session.fail("explain", node_id="CLM-1")
                assert "UnavailableError" in message and "cannot reach" in message
                again = await session.call("check_premises", tool="migrate_tables", args={"x": 1})
                assert again["safe"] is False
    finally:
        database.stop()


async def test_an_override_is_only_proposed_over_mcp(client: Client, graph: Rippl) -> None:
    """Even on a server with the review tools, approving an override of a veto is a person's act
    outside MCP; rejecting it (the veto stays) is not refused."""
    tag = uuid.uuid4().hex[:6]
    await client.call("check_premises", tool="get_health", args={"shard": tag})
    seen = await client.call("record_execution", tool="get_health", args={"shard": tag},
                             output=f"shard {tag}: healthy")
    graph.retract(seen["result_claim"], reason="stale", by="monitor")
    assert (await client.call("check_premises", tool="migrate", args={"shard": tag}))["safe"] is False
    proposals = [await client.call("propose_override", tool="migrate", args={"shard": tag},
                                   reason="needed now") for _ in range(2)]
    message = await client.fail("approve_review", review_id=proposals[0]["id"])
    assert "InvalidInputError" in message and "can only be proposed" in message
    assert f"rippl review approve {proposals[0]['id']}" in message
    assert graph.review(proposals[0]["id"]).status == "pending"
    assert (await client.call("check_premises", tool="migrate", args={"shard": tag}))["safe"] is False
    rejected = await client.call("reject_review", review_id=proposals[1]["id"])
    assert rejected["decision"] == "rejected" and graph.review(proposals[1]["id"]).status == "rejected"


async def test_a_compensation_resolved_through_mcp_names_the_reviewer(client: Client,
                                                                      graph: Rippl) -> None:
    ids = await chain(client)
    graph.mark_executed(ids["act"])
    graph.retract(ids["clm"], reason="it was false", by="monitor")
    attempt = await client.call("report_compensation_attempt", action=ids["act"],
                                what="undid it", output="ok", by="agent-7")
    assert attempt["by"].endswith("/agent-7")
    receipt = await client.call("resolve_compensation", action=ids["act"],
                                resolution="compensated", note="checked", attempt=attempt["id"])
    assert receipt["kind"] == "compensation_resolved" and receipt["actor"] == REVIEWER
    assert ids["act"] not in [c["action"] for c in
                              (await client.call("list_compensations"))["compensations"]]
    again = await client.fail("resolve_compensation", action=ids["act"], resolution="not needed",
                              note="again")
    assert "already resolved" in again
    assert (await client.call("verify_receipts"))["ok"] is True
