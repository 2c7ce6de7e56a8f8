"""The console's runs API, in process, on both backends: the runs list with its counts and
filters, a run's trace, a 404 for an unknown run, anonymous reads on loopback and closed reads
that need a reviewer."""

from __future__ import annotations

import pytest
from helpers_console import ALICE, client

from rippl_core import AsyncRippl, ToolCall

pytestmark = pytest.mark.asyncio(loop_scope="session")

HEALTH = ToolCall(name="get_shard_health", args={"shard": "09"}, id="c1")
ANNOUNCE = ToolCall(name="announce_window", args={"shard": "09"}, id="c2")
MIGRATE = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "09"}, id="c3")


async def scripted(rippl: AsyncRippl) -> str:
    run = rippl.run("ops-1", agent="ops", framework="langgraph")
    await run.decide("t1", [HEALTH])
    claim = await run.executed(HEALTH, "healthy", fresh_for=600)
    await run.decide("t2", [ANNOUNCE], context=["c1"])
    await run.executed(ANNOUNCE, "announced")
    await rippl.retract(claim, reason="stale cache", by="monitor")
    [vetoed] = await run.decide("t3", [MIGRATE], context=["c1"])
    assert not vetoed.allowed
    await rippl.run("idle-1", agent="bot", framework="crewai").decide("t1", [HEALTH])
    return claim


async def test_runs_and_a_run_trace(arippl: AsyncRippl) -> None:
    claim = await scripted(arippl)
    async with client(arippl) as http:  # anonymous: reads are open on loopback
        listed = (await http.get("/api/runs")).json()
        ops = next(r for r in listed if r["id"] == "ops-1")
        assert {k: ops[k] for k in ("agent", "framework", "turns", "calls", "vetoes",
                                     "open_compensations")} == {
            "agent": "ops", "framework": "langgraph", "turns": 3, "calls": 3, "vetoes": 1,
            "open_compensations": 1}
        assert ops["started"] and ops["last_active"]
        async def ids(**params: str) -> list[str]:
            return [r["id"] for r in (await http.get("/api/runs", params=params)).json()]

        assert await ids(agent="bot") == ["idle-1"]
        assert await ids(framework="langgraph") == ["ops-1"]
        assert await ids(open_compensations="true") == ["ops-1"]
        assert (await http.get("/api/runs", params={"since": "2999-01-01T00:00:00Z"})).json() == []
        assert (await http.get("/api/runs", params={"since": "yesterday"})).status_code == 422
        trace = (await http.get("/api/runs/ops-1")).json()
        assert [t["turn"] for t in trace["turns"]] == ["t1", "t2", "t3"]
        rested = {r["id"]: r for r in trace["turns"][1]["rested_on"]}
        assert rested[claim]["retracted"] and rested[claim]["observed_at"] and rested[claim]["fresh_until"]
        [announce] = trace["turns"][1]["calls"]
        assert announce["executed_at"] and announce["owed"] and "announced" in announce["result"]["text"]
        [migrate] = trace["turns"][2]["calls"]
        assert migrate["verdict"] == "vetoed" and claim in migrate["reason"]
        assert (await http.get("/api/runs/nope")).status_code == 404
    async with client(arippl, read_open=False, allowed_hosts=frozenset({"127.0.0.1"})) as http:
        assert (await http.get("/api/runs")).status_code == 401
        assert (await http.get("/api/runs/ops-1")).status_code == 401
        ok = await http.get("/api/runs", headers={"authorization": f"Bearer {ALICE}"})
        assert ok.status_code == 200 and len(ok.json()) == 2
