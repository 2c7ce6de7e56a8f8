"""Capture over MCP, with a real client and a real server process: the session is a run; its
checks record and judge calls, record_execution makes their output an observation, and a
retraction approved while the agent paused vetoes the call it had checked, tells it why, lets
it re-plan, and lists what already ran for compensation. Nothing is declared in advance."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from helpers_mcp import Client, readme_stdio_params, stdio_client_for

from rippl_core import Rippl

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-capture") / "rippl.db"


@pytest.fixture(scope="module")
def direct(db: Path) -> Iterator[Rippl]:
    """The test's own handle on the served graph: the monitor and the human reviewer."""
    with Rippl.open(db) as handle:
        yield handle


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
