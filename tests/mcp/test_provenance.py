"""Retraction by provenance over MCP, with a real client and server process: an agent proposes
retracting everything one domain returned (one review, under its client's identity); it can never
approve it, even on a server started with --allow-review; a person approves it elsewhere; a query
that matches nothing is refused and proposes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_mcp import module_stdio_params, stdio_client_for

from rippl_core import Rippl
from rippl_core.testing import Clock
from tests.helpers_provenance import EVIL, START, seed

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_an_agent_proposes_by_provenance_and_never_approves(tmp_path: Path) -> None:
    db = tmp_path / "rippl.db"
    with Rippl.open(db) as rippl, Clock(START) as clock:
        incident = seed(rippl, clock)
    params = module_stdio_params(db, "--allow-review", "--reviewer", "agent-reviewer")
    with (tmp_path / "server.log").open("w") as errlog:
        async with stdio_client_for(params, errlog) as client:
            nothing = await client.fail("propose_retraction_where", tool="nope",
                                        reason="a guess", by="watcher")
            assert "NoMatchError" in nothing and "no source matches" in nothing
            item = await client.call("propose_retraction_where", tool="fetch_url",
                                     source_prefix=EVIL, since="2026-12-01T09:00:00Z",
                                     reason="the page carries a prompt injection", by="watcher")
            assert item["kind"] == "provenance" and item["status"] == "pending"
            assert item["proposed_by"] == "mcp:rippl-tests/watcher" and len(item["claims"]) == 3
            assert sorted(item["matched"]) == sorted(incident.evil_claims.values())
            listed = await client.call("list_reviews")
            assert [r["id"] for r in listed["reviews"]] == [item["id"]]
            refused = await client.fail("approve_review", review_id=item["id"])
            assert "over MCP it can only be proposed" in refused
    with Rippl.open(db) as rippl:
        assert rippl.review(item["id"]).status == "pending"  # the refusal changed nothing
        rippl.approve(item["id"], by="alice")  # a person, outside the agent's reach
        assert sorted(c.action for c in rippl.compensations()) == sorted(incident.executed)
