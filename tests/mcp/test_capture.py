"""Capture over MCP, with a real client and a real server process: the session is a run; its
checks record and judge calls, record_execution makes their output an observation, and a
retraction approved while the agent paused vetoes the call it had checked, tells it why, lets
it re-plan, and lists what already ran for compensation. Nothing is declared in advance."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from helpers_mcp import Client, readme_stdio_params, served_graph, stdio_client_for

from rippl_core import Rippl

pytestmark = pytest.mark.asyncio(loop_scope="session")
db, direct = served_graph("mcp-capture")


@pytest_asyncio.fixture(loop_scope="session")
async def client(db: Path, direct: Rippl, tmp_path: Path) -> AsyncIterator[Client]:
    with (tmp_path / "server.log").open("w") as errlog:
        async with stdio_client_for(readme_stdio_params(db), errlog) as session:
            yield session


def shard(n: str, suffix: str) -> dict[str, str]:
    return {"table": f"billing-{suffix}", "shard": n}


async def test_the_story_over_mcp(client: Client, direct: Rippl) -> None:
    tag = uuid.uuid4().hex[:6]
    health = await client.call("check_premises", tool="get_shard_health", args={"shard": tag})
    assert health["safe"] is True
    seen = await client.call("record_execution", tool="get_shard_health", args={"shard": tag},
                             output=f"shard {tag}: healthy (served from replica r3)")
    observation = seen["result_claim"]
    assert direct.get(observation).text.startswith("get_shard_health")
    announce = await client.call("check_premises", tool="announce_window", args={"shard": tag})
    assert announce["safe"] is True
    await client.call("record_execution", tool="announce_window", args={"shard": tag},
                      call_id=announce["call_id"], output="maintenance window announced")
    migrate = await client.call("check_premises", tool="migrate_tables", args=shard(tag, "a"))
    assert migrate["safe"] is True
    # the agent pauses for a human; meanwhile the monitor flags the observation, a human approves
    review = direct.propose_retraction(observation, reason="served from a stale cache", by="monitor")
    direct.approve(review.id, by="alice")
    resumed = await client.call("check_premises", tool="migrate_tables", args=shard(tag, "a"),
                                call_id=migrate["call_id"])
    assert resumed["safe"] is False and resumed["status"] == "Premise Retracted"
    [blocker] = resumed["blockers"]
    assert blocker["premise"] == observation and blocker["trail"][-1] == migrate["target"]
    assert "served from a stale cache" in resumed["explanation"]
    # told why, the agent re-plans: the new call no longer rests on the retracted observation
    replanned = await client.call("check_premises", tool="migrate_tables", args=shard("07", tag))
    assert replanned["safe"] is True
    owed = await client.call("list_compensations")
    assert announce["target"] in [c["action"] for c in owed["compensations"]]
    assert migrate["target"] not in [c["action"] for c in owed["compensations"]]  # it never ran


async def test_reads_through_rippl_are_observations_of_the_session(client: Client,
                                                                   direct: Rippl) -> None:
    tag = uuid.uuid4().hex[:6]
    direct.add_source(f"SRC-{tag}", "capacity sheet")
    direct.add_claim(f"CLM-{tag}", f"billing-{tag} fits in 16k IOPS", sources=[f"SRC-{tag}"])
    await client.call("explain", node_id=f"CLM-{tag}")
    check = await client.call("check_premises", tool="resize", args={"t": tag})
    decision = direct.get(check["target"]).justifications[0][0]
    assert f"CLM-{tag}" in direct.get(decision).justifications[0]
    direct.retract(f"CLM-{tag}", reason="the sheet was wrong", by="dba")
    again = await client.call("check_premises", tool="resize", args={"t": tag},
                              call_id=check["call_id"])
    assert again["safe"] is False


async def test_record_execution_needs_a_checked_call(client: Client) -> None:
    message = await client.fail("record_execution", tool="never_checked", output="done")
    assert "check_premises first" in message


async def test_sessions_are_separate_runs(db: Path, direct: Rippl, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:6]
    with (tmp_path / "a.log").open("w") as log_a, (tmp_path / "b.log").open("w") as log_b:
        async with stdio_client_for(readme_stdio_params(db), log_a) as first, \
                stdio_client_for(readme_stdio_params(db), log_b) as second:
            await first.call("check_premises", tool="probe", args={"t": tag})
            seen = await first.call("record_execution", tool="probe", args={"t": tag},
                                    output=f"first saw {tag}")
            direct.retract(seen["result_claim"], reason="wrong", by="monitor")
            other = await second.call("check_premises", tool="act", args={"t": tag})
            assert other["safe"] is True  # the second session never read it
            own = await first.call("check_premises", tool="act", args={"t": tag})
            assert own["safe"] is False  # the first one did


# ------------------------------------------------------------------------------ a veto holds

async def vetoed_migration(client: Client, direct: Rippl, tag: str) -> tuple[dict[str, Any], str]:
    """The agent read get_health(tag), the reading was retracted, and migrate was vetoed: the
    original veto, and the retracted observation."""
    await client.call("check_premises", tool="get_health", args={"shard": tag})
    seen = await client.call("record_execution", tool="get_health", args={"shard": tag},
                             output=f"shard {tag}: healthy")
    direct.retract(seen["result_claim"], reason="served from a stale cache", by="monitor")
    original = await client.call("check_premises", tool="migrate", args={"table": tag, "shard": 9})
    assert original["safe"] is False and original["blockers"][0]["premise"] == seen["result_claim"]
    return original, seen["result_claim"]


def repeats(verdict: dict[str, Any], original: dict[str, Any], premise: str) -> bool:
    """Whether a verdict is a veto that names the original veto and its retracted premise."""
    return (verdict["safe"] is False and original["call_id"] in verdict["explanation"]
            and premise in {b["premise"] for b in verdict["blockers"]})


async def test_a_repeated_call_stays_vetoed(client: Client, direct: Rippl) -> None:
    tag = uuid.uuid4().hex[:6]
    original, premise = await vetoed_migration(client, direct, tag)
    for args in ({"table": tag, "shard": 9},  # identical, under a new call id
                 {"shard": 9, "table": tag},  # keys reordered
                 {"table": tag, "shard": 9.0}):  # a float for the int
        again = await client.call("check_premises", tool="migrate", args=args)
        assert again["call_id"] != original["call_id"] and repeats(again, original, premise), args
    same_id = await client.call("check_premises", tool="migrate", args={"table": tag, "shard": 9},
                                call_id=original["call_id"])
    assert same_id["safe"] is False
    other = await client.call("check_premises", tool="migrate", args={"table": tag, "shard": 7})
    assert other["safe"] is True  # another shard: a new plan, without the premise it was told of
    direct.reinstate(premise, reason="the cache was fine", by="dba")
    assert (await client.call("check_premises", tool="migrate",
                              args={"table": tag, "shard": 9}))["safe"] is True


async def test_repeat_scope_tool_holds_every_call_of_the_vetoed_tool(client: Client,
                                                                     direct: Rippl) -> None:
    tag = uuid.uuid4().hex[:6]
    original, premise = await vetoed_migration(client, direct, tag)
    wider = await client.call("check_premises", tool="migrate", args={"table": tag, "shard": 7},
                              repeat_scope="tool")
    assert repeats(wider, original, premise)
    assert (await client.call("check_premises", tool="announce", args={"table": tag},
                              repeat_scope="tool"))["safe"] is True  # another tool


async def test_repeat_scope_is_checked(client: Client) -> None:
    message = await client.fail("check_premises", tool="migrate", args={}, repeat_scope="call")
    assert "validation error" in message and "repeat_scope" in message
    message = await client.fail("check_premises", target="ACT-001", repeat_scope="tool")
    assert "InvalidInputError" in message and "go with a tool call" in message


async def test_an_approved_override_lets_exactly_that_call_run_once(client: Client,
                                                                   direct: Rippl) -> None:
    tag = uuid.uuid4().hex[:6]
    original, premise = await vetoed_migration(client, direct, tag)
    proposal = await client.call("propose_override", tool="migrate", args={"shard": 9, "table": tag},
                                 reason="the migration is needed tonight", by="planner")
    assert proposal["kind"] == "override" and proposal["status"] == "pending"
    assert proposal["proposed_by"] == "mcp:rippl-tests/planner" and premise in proposal["claims"]
    assert proposal["run"] == original["run_id"]  # the call of the proposing client's own run
    assert (await client.call("check_premises", tool="migrate",
                              args={"table": tag, "shard": 9}))["safe"] is False  # not yet approved
    direct.approve(proposal["id"], by="alice")  # a person, outside the agent's reach
    once = await client.call("check_premises", tool="migrate", args={"shard": 9.0, "table": tag})
    assert once["safe"] is True  # the overridden call, in any spelling of its arguments
    again = await client.call("check_premises", tool="migrate", args={"table": tag, "shard": 9})
    assert again["safe"] is False  # once only
    [override] = [o for o in direct.overrides() if o.id == proposal["id"]]
    assert override.approved_by == "alice" and override.proposed_by == "mcp:rippl-tests/planner"
    assert override.run == once["run_id"] and override.used_by == once["target"]


async def test_an_override_is_proposed_only_for_a_vetoed_call_of_the_clients_run(
        client: Client, direct: Rippl) -> None:
    tag = uuid.uuid4().hex[:6]
    message = await client.fail("propose_override", tool="migrate", args={"table": tag},
                                reason="please")
    assert "ReviewError" in message and "no veto to override" in message


async def test_readings_age_and_a_differing_re_read_supersedes(client: Client) -> None:
    """Stale is not false, over MCP: a reading given a freshness expires, a newer reading of the
    same tool and args with another output supersedes it; the denial says so and asks for a new
    reading (no review, nothing to compensate)."""
    tag = uuid.uuid4().hex[:6]
    check = await client.call("check_premises", tool="get_health", args={"shard": tag})
    await client.call("record_execution", tool="get_health", args={"shard": tag},
                      call_id=check["call_id"], output="healthy", reads=True)
    first = await client.call("check_premises", tool="migrate", args={"shard": tag})
    assert first["safe"] is True
    again = await client.call("check_premises", tool="get_health", args={"shard": tag})
    await client.call("record_execution", tool="get_health", args={"shard": tag},
                      call_id=again["call_id"], output="degraded", fresh_for=1)
    judged = await client.call("check_premises", tool="migrate", args={"shard": tag},
                               call_id=first["call_id"])
    assert judged["safe"] is False and judged["blockers"] == []
    [expired] = judged["expired"]
    assert expired["status"] == "superseded" and "degraded" in expired["superseded_text"]
    time.sleep(1.2)  # the degraded reading was fresh for one second
    later = await client.call("check_premises", tool="drain", args={"shard": tag})
    assert later["safe"] is False and "stale" in later["reason"]
    assert any(e["status"] == "stale" for e in later["expired"])


async def test_an_agent_reports_a_compensation_attempt_a_person_confirms_it(
        client: Client, direct: Rippl) -> None:
    tag = uuid.uuid4().hex[:6]
    health = await client.call("check_premises", tool="get_shard_health", args={"shard": tag + "x"})
    read = await client.call("record_execution", tool="get_shard_health", args={"shard": tag + "x"},
                             call_id=health["call_id"], output="healthy")
    announce = await client.call("check_premises", tool="announce_window", args={"shard": tag})
    await client.call("record_execution", tool="announce_window", args={"shard": tag},
                      call_id=announce["call_id"], output="announced")
    direct.retract(read["result_claim"], reason="stale replica", by="monitor")
    reported = await client.call("report_compensation_attempt", action=announce["target"],
                                 what="posted a retraction of the maintenance window",
                                 output="message 1234 sent", by="ops-agent")
    assert reported["id"].startswith("ATT-") and reported["by"].endswith("/ops-agent")
    [owed] = [c for c in direct.compensations() if c.action == announce["target"]]
    assert owed.status == "open" and owed.attempts[0].id == reported["id"]  # not resolved by it
    direct.resolve_compensation(announce["target"], resolution="compensated", note="seen it posted",
                                by="alice", attempt=reported["id"])
    assert announce["target"] not in [c["action"] for c in
                                      (await client.call("list_compensations"))["compensations"]]
