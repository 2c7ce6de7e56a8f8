"""Knowledge keeps its premises over MCP (a real server process, two real clients): a belief one
client's run writes rests on what that run carried, so once the reading under it is retracted a
second client that read the belief and acts is vetoed; a lead in a team's scope vetoed on a call
hands the task over, and the team mate's identical call (a default spelled out, a number quoted,
with the tool's schema registered) stays vetoed naming the original veto, while its different act
runs and a reinstatement lifts it. An override in the lead's run does not cover the team mate."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from helpers_mcp import Client, readme_stdio_params, served_graph, stdio_client_for

from rippl_core import Rippl, State

pytestmark = pytest.mark.asyncio(loop_scope="session")
db, direct = served_graph("mcp-team")

MIGRATE_SCHEMA = {"type": "object", "required": ["shard"], "properties": {
    "shard": {"type": "string"}, "rows": {"type": "integer", "default": 100},
    "dry_run": {"type": "boolean", "default": False}}}


@pytest_asyncio.fixture(loop_scope="session")
async def clients(db: Path, direct: Rippl, tmp_path: Path) -> AsyncIterator[tuple[Client, Client]]:
    """Two agents: two MCP clients of one server."""
    with (tmp_path / "lead.log").open("w") as lead_log, \
            (tmp_path / "helper.log").open("w") as helper_log:
        async with stdio_client_for(readme_stdio_params(db), lead_log) as lead, \
                stdio_client_for(readme_stdio_params(db), helper_log) as helper:
            yield lead, helper


async def read_health(client: Client, tag: str, meta: dict[str, Any]) -> str:
    await client.call("check_premises", tool="get_health", args={"shard": tag}, _meta=meta)
    seen = await client.call("record_execution", tool="get_health", args={"shard": tag},
                             output=f"shard {tag}: healthy", _meta=meta)
    return str(seen["result_claim"])


async def test_a_belief_written_in_one_run_goes_out_with_what_it_was_written_from(
        clients: tuple[Client, Client], direct: Rippl) -> None:
    scout, operator = clients
    tag = uuid.uuid4().hex[:6]
    reading = await read_health(scout, tag, {})
    stated = direct.add_claim(None, f"Shard {tag} has spare disk").id  # a person's, before
    memory = (await scout.call("add_claim", text=f"Shard {tag} is healthy"))["id"]
    for claim, topic in ((memory, f"shard-{tag}"), (stated, f"disk-{tag}")):
        await scout.call("record_belief", agent="ops", claim_id=claim, topic=topic)
    answer = await operator.call("ask_belief", agent="ops", topic=f"shard-{tag}")
    assert answer["found"] is True  # the operator's run read it: an observation
    review = direct.propose_retraction(reading, reason="served from a stale cache", by="monitor")
    direct.approve(review.id, by="alice")
    assert direct.get(memory).state is State.OUT
    assert direct.get(stated).state is State.IN  # a person's statement holds on its own
    check = await operator.call("check_premises", tool="migrate", args={"shard": tag})
    assert check["safe"] is False
    trail = check["blockers"][0]["trail"]
    assert trail[0] == reading and memory in trail


async def test_a_veto_binds_a_team_mate_over_mcp(clients: tuple[Client, Client],
                                                  direct: Rippl) -> None:
    lead, helper = clients
    tag = uuid.uuid4().hex[:6]
    team = f"team-{tag}"
    mine = {"rippl_run": (await lead.call("start_run", name="lead", scope=team))["run"]}
    theirs = {"rippl_run": (await helper.call("start_run", name="helper", scope=team))["run"]}
    for client, meta in ((lead, mine), (helper, theirs)):
        await client.call("register_tools", tools=[{"name": "migrate",
                                                   "inputSchema": MIGRATE_SCHEMA}], _meta=meta)
    reading = await read_health(lead, tag, mine)
    direct.retract(reading, reason="stale cache", by="monitor")
    veto = await lead.call("check_premises", tool="migrate", args={"shard": tag}, _meta=mine)
    assert veto["safe"] is False
    handed = await lead.call("hand_over", _meta=mine)
    await helper.call("receive_hand_over", ref=handed["ref"], _meta=theirs)
    for args in ({"shard": tag}, {"shard": tag, "dry_run": False}, {"shard": tag, "rows": "100"}):
        held = await helper.call("check_premises", tool="migrate", args=args, _meta=theirs)
        assert held["safe"] is False, held
        assert "handed over from run mcp-scope:" in held["reason"]
        assert veto["target"] in held["reason"]
    other = await helper.call("check_premises", tool="migrate", args={"shard": "07"}, _meta=theirs)
    assert other["safe"] is True, other["reason"]
    # an override approved for the lead's call covers the lead's next call only, never the helper's
    override = direct.override(veto["target"], reason="the DBA checked by hand", by="lead")
    direct.approve(override.id, by="alice")
    still = await helper.call("check_premises", tool="migrate", args={"shard": tag}, _meta=theirs)
    assert still["safe"] is False
    direct.reinstate(reading, reason="the cache was right", by="alice")
    lifted = await helper.call("check_premises", tool="migrate", args={"shard": tag}, _meta=theirs)
    assert lifted["safe"] is True, lifted["reason"]


async def test_the_tools_schemas_stay_with_a_run_that_left_the_servers_memory(
        clients: tuple[Client, Client], db: Path, direct: Rippl, tmp_path: Path) -> None:
    """A team mate on a server that holds one run in memory: its run leaves when it starts
    another, and comes back by its token. The schema it registered is kept with the run in the
    graph, so a default spelled out and a number quoted still repeat the act vetoed in its run."""
    lead, _ = clients
    tag = uuid.uuid4().hex[:6]
    team = f"team-{tag}"
    mine = {"rippl_run": (await lead.call("start_run", name="lead", scope=team))["run"]}
    reading = await read_health(lead, tag, mine)
    direct.retract(reading, reason="stale cache", by="monitor")
    veto = await lead.call("check_premises", tool="migrate", args={"shard": tag}, _meta=mine)
    assert veto["safe"] is False
    handed = await lead.call("hand_over", _meta=mine)
    with (tmp_path / "forgetful.log").open("w") as log:
        async with stdio_client_for(readme_stdio_params(db, "--max-runs", "1"), log) as helper:
            theirs = {"rippl_run": (await helper.call("start_run", scope=team))["run"]}
            await helper.call("register_tools", tools=[{"name": "migrate",
                                                       "inputSchema": MIGRATE_SCHEMA}],
                              _meta=theirs)
            await helper.call("receive_hand_over", ref=handed["ref"], _meta=theirs)
            await helper.call("start_run", name="another")  # the team mate's run leaves memory
            # back, it rests on all it carried (what it was told was lost with it: fail closed)
            again = await helper.call("check_premises", tool="migrate", args={"shard": tag},
                                      _meta=theirs)
            assert again["safe"] is False
            spelled = {"shard": tag, "rows": "100", "dry_run": False}
            held = await helper.call("check_premises", tool="migrate", args=spelled, _meta=theirs)
            other = await helper.call("check_premises", tool="migrate", args={"shard": "07"},
                                      _meta=theirs)
    assert held["safe"] is False, held
    assert "it repeats the call vetoed" in held["reason"]
    assert other["safe"] is True, other["reason"]  # another act: judged on what it was told
    assert direct.run(held["run_id"]).tool_schemas() == {"migrate": MIGRATE_SCHEMA}
    assert direct.run(handed["run_id"]).tool_schemas() == {}  # the lead registered none


async def test_a_team_mate_that_received_nothing_is_judged_on_its_own_run(
        clients: tuple[Client, Client], direct: Rippl) -> None:
    lead, helper = clients
    tag = uuid.uuid4().hex[:6]
    team = f"team-{tag}"
    mine = {"rippl_run": (await lead.call("start_run", scope=team))["run"]}
    theirs = {"rippl_run": (await helper.call("start_run", scope=team))["run"]}
    reading = await read_health(lead, tag, mine)
    direct.retract(reading, reason="stale cache", by="monitor")
    assert (await lead.call("check_premises", tool="migrate", args={"shard": tag},
                            _meta=mine))["safe"] is False
    fresh = await read_health(helper, f"{tag}-fresh", theirs)  # its own fresh reading
    assert fresh != reading
    allowed = await helper.call("check_premises", tool="migrate", args={"shard": tag},
                                _meta=theirs)
    assert allowed["safe"] is True, allowed["reason"]


async def test_a_bad_scope_and_a_bad_hand_over_are_refused(clients: tuple[Client, Client]) -> None:
    lead, _ = clients
    refused = await lead.fail("start_run", scope="no spaces/allowed")
    assert "a scope is a label" in refused
    run = {"rippl_run": (await lead.call("start_run"))["run"]}
    assert "the `ref` hand_over returned" in await lead.fail("receive_hand_over", ref="x", _meta=run)
