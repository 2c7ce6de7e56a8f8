"""The MCP server over stdio, started exactly as the README's client configuration says, on an
embedded database in a tmp folder, driven by the official MCP client."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import pytest_asyncio
from helpers_mcp import (
    REPO,
    Client,
    McpError,
    module_stdio_params,
    readme_stdio_params,
    stdio_client_for,
    wire,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import InvalidInputError, NotFoundError, Rippl, ToolCall

pytestmark = pytest.mark.asyncio(loop_scope="session")

INCIDENT = REPO / "examples" / "incident.yaml"
TOOLS = {"check_premises", "blast_radius", "explain", "propose_retraction", "list_reviews",
         "verify_receipts", "add_source", "add_claim", "add_decision", "add_action", "record_belief",
         "retract_belief", "ask_belief", "timeline", "why_changed", "what_if", "history",
         "start_run", "register_tools", "hand_over", "receive_hand_over", "record_execution",
         "cite_claims", "list_compensations", "propose_override",
         "propose_retraction_where",
         "report_compensation_attempt",
         "log_head", "prove_receipt", "log_consistency"}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-stdio") / "rippl.db"


@pytest.fixture(scope="module")
def direct(db: Path) -> Iterator[Rippl]:
    """A handle of the test itself on the graph the server serves, to set up and to inspect."""
    with Rippl.open(db) as handle:
        handle.load(INCIDENT)
        yield handle


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def client(db: Path, direct: Rippl, tmp_path_factory: pytest.TempPathFactory
                 ) -> AsyncIterator[Client]:
    log = tmp_path_factory.mktemp("mcp-stdio-log") / "server.log"
    with log.open("w") as errlog:
        async with stdio_client_for(readme_stdio_params(db), errlog) as session:
            yield session


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def chain(client: Client, tool: str | None = None) -> dict[str, str]:
    """source -> claim -> decision -> action recorded through MCP, with fresh ids."""
    ids = {k: uid(k.upper()) for k in ("src", "clm", "dec", "act")}
    tool = tool or uid("tool")
    await client.call("add_source", id=ids["src"], title="Grafana dashboard", kind="telemetry")
    await client.call("add_claim", id=ids["clm"], text=f"{ids['clm']} is healthy", sources=[ids["src"]])
    await client.call("add_decision", id=ids["dec"], title="Move onto it", premises=[ids["clm"]])
    await client.call("add_action", id=ids["act"], title="Migrate", decisions=[ids["dec"]], tool=tool,
                      args={"table": "billing"})
    return {**ids, "tool": tool}


# ------------------------------------------------------------------------------ discovery


async def test_list_tools_shows_every_tool_with_input_and_output_schemas(client: Client) -> None:
    tools = await client.tools()
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        assert tool["description"] and tool["inputSchema"]["type"] == "object"
        assert tool["outputSchema"] and tool["outputSchema"]["properties"], name
    check = tools["check_premises"]
    assert {"target", "tool", "args"} <= set(check["inputSchema"]["properties"])
    assert {"safe", "status", "reason", "blockers"} <= set(check["outputSchema"]["properties"])
    assert check["annotations"]["readOnlyHint"] is False  # it records
    assert check["annotations"]["idempotentHint"] is True
    assert tools["add_claim"]["annotations"]["readOnlyHint"] is False
    assert tools["add_claim"]["inputSchema"]["required"] == ["text"]
    assert "maxLength" in json.dumps(tools["add_claim"]["inputSchema"]["properties"]["text"])
    assert set(tools["propose_retraction"]["inputSchema"]["required"]) == {"claim_id", "reason"}
    assert "Cypher" not in json.dumps([t["inputSchema"] for t in tools.values()])


async def test_server_identifies_itself_and_tells_the_agent_to_check_first(client: Client) -> None:
    assert client.instructions and "check_premises" in client.instructions
    assert client.server_version and client.server_version[0].isdigit()


async def test_review_tools_are_absent_and_refused_without_allow_review(client: Client) -> None:
    tools = {t.name for t in (await client.session.list_tools()).tools}
    assert not tools & {"approve_review", "reject_review"}
    ids = await chain(client)
    review = await client.call("propose_retraction", claim_id=ids["clm"], reason="disk errors")
    message = await client.fail("approve_review", review_id=review["id"])
    assert "human decision" in message and "--allow-review" in message
    message = await client.fail("reject_review", review_id=review["id"])
    assert "--allow-review" in message
    listed = await client.call("list_reviews", status="pending")
    assert review["id"] in [r["id"] for r in listed["reviews"]]  # still pending, untouched


# ------------------------------------------------------------------------------ safety tools


async def test_check_premises_by_id_and_by_tool_call(client: Client) -> None:
    by_id = await client.call("check_premises", target="ACT-001")
    assert by_id["safe"] is True and by_id["status"] == "Pending" and by_id["target"] == "ACT-001"
    by_call = await client.call("check_premises", tool="migrate_tables",
                                args={"shard": "09", "table": "billing"})
    assert by_call["safe"] is True and by_call["target"] == "ACT-001"
    decision = await client.call("check_premises", target="DEC-001")
    assert decision["safe"] is True and decision["status"] == "Holding"


async def test_check_premises_of_an_unknown_target_fails_closed_and_records_calls(client: Client) -> None:
    unknown = await client.call("check_premises", target="ACT-404")
    assert unknown["safe"] is False and unknown["status"] == "Unknown"
    assert "not in the graph" in unknown["reason"]
    undeclared = await client.call("check_premises", tool="migrate_tables",
                                   args={"table": "billing", "shard": "99"})
    assert undeclared["safe"] is True and undeclared["call_id"]  # recorded in the session's run
    assert undeclared["target"].startswith("ACT-") and undeclared["target"] != "ACT-001"


async def test_check_premises_refuses_ambiguous_or_missing_arguments(client: Client) -> None:
    assert "exactly one" in await client.fail("check_premises")
    assert "exactly one" in await client.fail("check_premises", target="ACT-001", tool="migrate_tables")
    assert "args go with tool" in await client.fail("check_premises", target="ACT-001", args={"a": 1})
    assert "validation error" in await client.fail("check_premises", tool="migrate_tables",
                                                   args=["not", "an", "object"])


async def test_blast_radius_matches_the_core_and_truncates(client: Client, direct: Rippl) -> None:
    expected = direct.blast_radius("CLM-001")
    result = await client.call("blast_radius", node_id="CLM-001")
    assert result["root"] == "CLM-001" and result["root_status"] == "Verified"
    assert result["count"] == len(expected) and not result["truncated"]
    assert [n["id"] for n in result["nodes"]] == [r.id for r in expected]
    deepest = max(result["nodes"], key=lambda n: n["depth"])
    assert deepest["trail"][0] == "CLM-001" and deepest["trail"][-1] == deepest["id"]
    assert sum(result["by_kind"].values()) == result["count"]
    short = await client.call("blast_radius", node_id="CLM-001", limit=3)
    assert short["truncated"] and len(short["nodes"]) == 3 and short["count"] == len(expected)
    level = await client.call("blast_radius", node_id="CLM-001", max_depth=1)
    assert {n["depth"] for n in level["nodes"]} == {1}
    assert "NotFoundError" in await client.fail("blast_radius", node_id="CLM-404")
    assert "validation error" in await client.fail("blast_radius", node_id="CLM-001", max_depth=0)


async def test_explain_names_the_holding_justification(client: Client) -> None:
    result = await client.call("explain", node_id="DEC-012")
    assert result["status"] == "Holding" and not result["premise"]
    assert len(result["justifications"]) == 2 and result["holding"] == [0, 1]
    first = {a["id"] for a in result["justifications"][0]["antecedents"]}
    assert first == {"CLM-001", "CLM-004", "CLM-006"}
    assert all(a["status"] == "Verified" for j in result["justifications"] for a in j["antecedents"])
    source = await client.call("explain", node_id="SRC-001")
    assert source["premise"] and "premise" in source["summary"]
    assert "NotFoundError" in await client.fail("explain", node_id="nope")


async def test_verify_receipts(client: Client) -> None:
    result = await client.call("verify_receipts")
    assert result["ok"] is True and result["problems"] == []


async def test_the_log_tools(client: Client) -> None:
    from rippl_core.review import merkle

    head = await client.call("log_head")
    consistency = await client.call("log_consistency", old_size=head["size"])
    assert consistency["new_root"] == consistency["old_root"] == head["root"]
    assert consistency["proof"] == []
    assert "no receipt RCP-99999999" in await client.fail("prove_receipt", receipt="RCP-99999999")
    if head["size"]:
        proof = await client.call("prove_receipt", receipt="RCP-00000001",
                                  tree_size=head["size"])
        assert merkle.verify_inclusion(0, head["size"], bytes.fromhex(proof["leaf_hash"]),
                                       [bytes.fromhex(p) for p in proof["proof"]],
                                       bytes.fromhex(head["root"]))


# ------------------------------------------------------------------------------ the review gate


async def test_review_gate_end_to_end_propose_via_mcp_approve_via_cli(client: Client, db: Path,
                                                                      direct: Rippl) -> None:
    ids = await chain(client)
    call = {"tool": ids["tool"], "args": {"table": "billing"}}
    assert (await client.call("check_premises", **call))["safe"] is True

    review = await client.call("propose_retraction", claim_id=ids["clm"], reason="disk errors on it",
                               evidence="https://grafana.internal/d/x")
    assert review["status"] == "pending" and review["proposed_by"] == "mcp:rippl-tests"
    assert set(review["at_risk"]) == {ids["dec"], ids["act"]}
    pending = await client.call("check_premises", **call)
    assert pending["safe"] is False and pending["status"] == "Blocked"
    assert pending["blockers"][0]["premise"] == ids["clm"]
    assert pending["blockers"][0]["status"] == "Proposed Retraction"

    approve = subprocess.run(
        [str(Path(sys.executable).parent / "rippl"), "--db", str(db), "review", "approve", review["id"],
         "--by", "alice", "--note", "confirmed by the DBA"],
        capture_output=True, text=True, timeout=120, cwd=REPO)
    assert approve.returncode == 0, approve.stderr

    denied = await client.call("check_premises", **call)
    assert denied["safe"] is False and denied["status"] == "Premise Retracted"
    blocker = denied["blockers"][0]
    assert blocker["premise"] == ids["clm"] and blocker["status"] == "Retracted"
    assert blocker["trail"] == [ids["clm"], ids["dec"], ids["act"]]
    assert blocker["reason"] == "disk errors on it"
    assert " -> ".join(blocker["trail"]) in denied["explanation"]

    why = await client.call("explain", node_id=ids["act"])
    assert why["status"] == "Premise Retracted" and why["holding"] == []
    assert why["blockers"][0]["premise"] == ids["clm"] and "Root cause" in why["summary"]
    decided = await client.call("list_reviews", status="approved")
    mine = next(r for r in decided["reviews"] if r["id"] == review["id"])
    assert mine["decided_by"] == "alice" and mine["note"] == "confirmed by the DBA"
    assert direct.receipts()[-1].actor == "alice"
    assert (await client.call("verify_receipts"))["ok"] is True


async def test_a_keyed_claim_over_mcp_proposes_the_contradicted_one(client: Client,
                                                                   direct: Rippl) -> None:
    """An agent records a claim of a key another claim holds with another value: the older one is
    proposed for retraction (never applied), and list_reviews carries both sides as evidence."""
    subject = uid("shard")
    old = await client.call("add_claim", text=f"{subject} is healthy", key=f"{subject}/health",
                            value="healthy")
    new = await client.call("add_claim", text=f"{subject} is degraded", key=f"{subject}/health",
                            value="degraded")
    assert (old["key"], new["value"]) == (f"{subject}/health", "degraded")
    pending = await client.call("list_reviews", status="pending")
    [mine] = [r for r in pending["reviews"] if r["claim"] == old["id"]]
    assert mine["proposed_by"] == "rippl:key-detector"
    assert mine["contradiction"]["new"]["text"] == f"{subject} is degraded"
    assert mine["contradiction"]["old"]["value"] == "healthy"
    assert not direct.get(old["id"]).retracted
    direct.reject(mine["id"], by="alice")


async def test_the_proposer_is_always_the_mcp_client_and_non_claims_are_refused(
        client: Client, direct: Rippl) -> None:
    """`by` only names the agent under the client's identity: an agent can never propose as a
    person, or as another client."""
    ids = await chain(client)
    for by, recorded in (("agent-7", "mcp:rippl-tests/agent-7"), ("alice", "mcp:rippl-tests/alice"),
                         ("mcp:other-client", "mcp:rippl-tests/mcp:other-client"),
                         ("x" * 128, ("mcp:rippl-tests/" + "x" * 128)[:128]), (None, "mcp:rippl-tests")):
        arguments = {"by": by} if by is not None else {}
        review = await client.call("propose_retraction", claim_id=ids["clm"], reason="stale",
                                   **arguments)
        assert review["proposed_by"] == recorded
        assert direct.review(review["id"]).proposed_by == recorded
    assert "only sources and claims" in await client.fail("propose_retraction", claim_id=ids["dec"],
                                                          reason="x")
    assert "NotFoundError" in await client.fail("propose_retraction", claim_id="CLM-404", reason="x")
    assert "validation error" in await client.fail("propose_retraction", claim_id=ids["clm"], reason="")
    assert "validation error" in await client.fail("list_reviews", status="maybe")


# ------------------------------------------------------------------------------ resources, prompt


async def test_node_resource_and_pending_reviews_resource(client: Client) -> None:
    templates = wire(await client.session.list_resource_templates())["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["rippl://node/{node_id}"]
    resources = [str(r.uri) for r in (await client.session.list_resources()).resources]
    assert sorted(resources) == ["rippl://compensations", "rippl://reviews/pending"]
    node = json.loads((await client.session.read_resource("rippl://node/CLM-001")).contents[0].text)
    assert node["id"] == "CLM-001" and node["status"] == "Verified"
    assert node["justifications"] == [["SRC-001"]]
    action = json.loads((await client.session.read_resource("rippl://node/ACT-001")).contents[0].text)
    assert action["tool"] == "migrate_tables" and action["args"] == {"table": "billing", "shard": "09"}
    ids = await chain(client)
    review = await client.call("propose_retraction", claim_id=ids["clm"], reason="flaky")
    queue = json.loads((await client.session.read_resource("rippl://reviews/pending")).contents[0].text)
    assert review["id"] in [r["id"] for r in queue["reviews"]] and queue["count"] == len(queue["reviews"])
    odd = f"{uid('CLM')}/with space?"
    await client.call("add_claim", id=odd, text="An id with reserved characters")
    encoded = json.loads((await client.session.read_resource(
        f"rippl://node/{quote(odd, safe='')}")).contents[0].text)
    assert encoded["id"] == odd
    with pytest.raises(McpError, match=r"NotFoundError: .*CLM-404"):
        await client.session.read_resource("rippl://node/CLM-404")


async def test_prompt_tells_the_agent_to_check_premises_first(client: Client) -> None:
    prompts = (await client.session.list_prompts()).prompts
    assert [p.name for p in prompts] == ["check_before_acting"]
    result = await client.session.get_prompt("check_before_acting",
                                             {"high_risk_tools": "migrate_tables, drop_table"})
    text = result.messages[0].content.text  # type: ignore[union-attr]
    assert "check_premises" in text and "migrate_tables, drop_table" in text and "safe=false" in text


# ------------------------------------------------------------------------------ recording


async def test_agents_record_their_reasoning_and_readding_is_idempotent(client: Client) -> None:
    ids = await chain(client)
    node = await client.call("explain", node_id=ids["act"])
    assert node["status"] == "Pending" and node["justifications"][0]["antecedents"][0]["id"] == ids["dec"]
    again = await client.call("add_claim", id=ids["clm"], text=f"{ids['clm']} is healthy",
                              sources=[ids["src"]])
    assert again["status"] == "Verified"
    derived = await client.call("add_claim", text="A claim without an id gets a semantic one")
    assert derived["id"].startswith("CLM-") and derived["status"] == "Verified"
    same = await client.call("add_claim", text="A claim without an id gets a semantic one")
    assert same["id"] == derived["id"] and same["created_at"] == derived["created_at"]
    conflict = await client.fail("add_claim", id=ids["clm"], text="something else entirely")
    assert "ConflictError" in conflict and "already exists" in conflict


# ------------------------------------------------------------------------------ bad input


async def test_bad_input_is_a_tool_error_and_writes_nothing(client: Client, direct: Rippl) -> None:
    ids = await chain(client)
    before = direct.stats()
    fresh = uid("X")
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("add_claim", {"id": fresh, "text": "t", "sources": [ids["src"], "SRC-404"]}, "NotFoundError"),
        ("add_action", {"id": fresh, "title": "t", "decisions": [ids["dec"]], "triggers": ["ACT-404"]},
         "NotFoundError"),
        ("add_decision", {"id": fresh, "title": "t", "premises": [ids["act"]]}, "cannot support"),
        ("add_claim", {"id": fresh, "text": "x" * 10_001}, "validation error"),
        ("add_claim", {"id": "C" * 129, "text": "t"}, "validation error"),
        ("add_claim", {"id": fresh, "text": "nul \x00 inside"}, "NUL"),
        ("add_claim", {"id": "tab\tid", "text": "t"}, "non-printable"),
        ("add_claim", {"id": " padded", "text": "t"}, "white space"),
        ("add_claim", {"id": fresh, "text": "   "}, "empty"),
        ("add_claim", {"id": fresh, "text": "t", "sources": 7}, "validation error"),
        ("add_claim", {"id": fresh}, "validation error"),
        ("add_action", {"id": fresh, "title": "t", "decisions": [ids["dec"]],
                        "args": {"blob": "x" * 70_000}}, "limit"),
        ("add_action", {"id": fresh, "title": "t", "tool": ""}, "validation error"),
        ("add_source", {"id": fresh, "title": "t", "uri": ""}, "validation error"),
        ("add_decision", {"id": ids["dec"], "title": "Move onto it", "premises": [ids["dec"]]},
         "cannot support itself"),
    ]
    for tool, arguments, expected in cases:
        message = await client.fail(tool, **arguments)
        assert expected in message, (tool, arguments, message)
    assert direct.stats() == before
    with pytest.raises(Exception, match="not found"):
        direct.get(fresh)
    assert (await client.call("check_premises", target=ids["act"]))["safe"] is True


HOSTILE = [
    "x'}) MATCH (n) DETACH DELETE n //",
    "`Claim`) DETACH DELETE n RETURN 1 //",
    '"; CALL db.indexes() //',
    "$ids} UNWIND",
    "{{ malformed } ]]",
    "名前 🚀 ünïcødé",
    "<script>alert(1)</script>",
]


async def test_hostile_strings_are_data(client: Client, direct: Rippl) -> None:
    before = direct.stats()
    for i, text in enumerate(HOSTILE):
        node_id = f"{text[:100]}-{i}"
        added = await client.call("add_claim", id=node_id, text=f"{text}\nsecond line")
        assert added["id"] == node_id and added["text"] == f"{text}\nsecond line"
        read = await client.call("explain", node_id=node_id)
        assert read["text"] == f"{text}\nsecond line"
        check = await client.call("check_premises", tool=text[:100], args={"q": text})
        assert check["safe"] is True  # recorded as this session's call, resting on what it read
        assert direct.get(check["target"]).tool == text[:100]
        assert direct.get(check["target"]).args == {"q": text}
    after = direct.stats()
    assert after.nodes["Claim"] >= before.nodes["Claim"] + len(HOSTILE)
    assert after.nodes["Action"] == before.nodes["Action"] + len(HOSTILE)
    assert (await client.call("check_premises", target="ACT-002"))["safe"] is True


async def test_the_server_survives_a_burst_of_garbage(client: Client) -> None:
    garbage: list[tuple[str, dict[str, Any]]] = [
        ("no_such_tool", {}), ("explain", {}), ("explain", {"node_id": None}),
        ("explain", {"node_id": {"$ne": 1}}), ("blast_radius", {"node_id": "CLM-001", "limit": "many"}),
        ("add_action", {"title": "t", "args": "not json"}), ("list_reviews", {"status": 3}),
    ]
    results = await asyncio.gather(*(client.raw(t, a) for t, a in garbage))
    assert all(r["isError"] for r in results)
    assert (await client.call("check_premises", target="ACT-002"))["safe"] is True


# ------------------------------------------------------------------------------ concurrency


async def test_concurrent_clients_on_one_embedded_database(client: Client, db: Path,
                                                           tmp_path: Path) -> None:
    """A second server process (python -m rippl_core.mcp) on the same database file, both clients
    writing and checking at once: each sees the other's writes."""
    with (tmp_path / "second.log").open("w") as errlog:
        async with stdio_client_for(module_stdio_params(db), errlog) as other:
            chains = await asyncio.gather(*(chain(c) for c in [client, other] * 4))
            checks = await asyncio.gather(*(
                (other if i % 2 == 0 else client).call("check_premises", target=c["act"])
                for i, c in enumerate(chains)))
            assert all(c["safe"] for c in checks)
            reviews = await asyncio.gather(*(
                c.call("propose_retraction", claim_id=chains[0]["clm"], reason=f"race {i}")
                for i, c in enumerate([client, other, client, other])))
            assert len({r["id"] for r in reviews}) == 4
            node = await other.call("explain", node_id=chains[0]["clm"])
            assert node["pending_reviews"] == 4 and node["status"] == "Proposed Retraction"
            assert (await client.call("check_premises", target=chains[0]["act"]))["status"] == "Blocked"


# ------------------------------------------------------------------------------ belief memory


async def test_belief_memory_over_mcp(client: Client, direct: Rippl) -> None:
    agent, topic = uid("ops-agent"), uid("billing-home")
    src_a, src_b, c09, c07 = uid("SRC"), uid("SRC"), uid("CLM"), uid("CLM")
    await client.call("add_source", id=src_a, title="Capacity plan")
    await client.call("add_source", id=src_b, title="Disk error alert on shard 09")
    await client.call("add_claim", id=c09, text="Billing lives on shard 09", sources=[src_a])
    await client.call("add_claim", id=c07, text="Billing lives on shard 07", sources=[src_b])
    first = await client.call("record_belief", agent=agent, claim_id=c09, topic=topic,
                              valid_from="2026-10-08T09:00:00Z", evidence=[src_a], note="the plan")
    assert first["claim"] == c09 and first["valid_to"] is None and first["evidence"] == [src_a]
    await client.call("record_belief", agent=agent, claim_id=c07, topic=topic,
                      valid_from="2026-10-08T12:00:00+00:00", evidence=[src_b])

    then = await client.call("ask_belief", agent=agent, topic=topic, as_of="2026-10-08T10:00:00Z")
    assert then["found"] and then["belief"]["claim"] == c09 and c09 in then["summary"]
    now = await client.call("ask_belief", agent=agent, topic=topic)
    assert now["belief"]["claim"] == c07
    before = await client.call("ask_belief", agent=agent, topic=topic, as_of="2026-10-01T00:00:00Z")
    assert before == {"found": False, "belief": None, "summary": f"{agent} held no belief about {topic} then"}

    line = await client.call("timeline", agent=agent, topic=topic)
    assert line["count"] == 2 and [b["claim"] for b in line["beliefs"]] == [c09, c07]
    assert line["beliefs"][0]["valid_to"].startswith("2026-10-08T12:00:00")

    why = await client.call("why_changed", agent=agent, topic=topic, at="2026-10-08T12:05:00Z")
    change = why["change"]
    assert change["before"]["claim"] == c09 and change["after"]["claim"] == c07
    assert change["new_evidence"] == [src_b] and src_b in why["explanation"]

    counterfactual = await client.call("what_if", agent=agent, topic=topic, without=[src_b])
    expected = direct.what_if(agent, topic, without=[src_b])
    assert counterfactual["changed"] is expected.changed is True
    assert counterfactual["result"]["counterfactual"]["claim"] == expected.counterfactual.claim  # type: ignore[union-attr]
    assert (await client.call("ask_belief", agent=agent, topic=topic))["belief"]["claim"] == c07

    dropped = await client.call("retract_belief", agent=agent, topic=topic, reason="moved again")
    assert dropped["dropped"] and dropped["belief"]["claim"] == c07
    assert (await client.call("ask_belief", agent=agent, topic=topic))["found"] is False
    again = await client.call("retract_belief", agent=agent, topic=topic)
    assert again["dropped"] is False


async def test_belief_tools_refuse_bad_input(client: Client) -> None:
    agent, topic, claim = uid("agent"), uid("topic"), uid("CLM")
    await client.call("add_claim", id=claim, text=f"{claim} is true")
    naive = await client.fail("ask_belief", agent=agent, topic=topic, as_of="2026-10-08T10:00:00")
    assert "InvalidInputError" in naive and "time zone" in naive
    garbled = await client.fail("record_belief", agent=agent, claim_id=claim, topic=topic,
                                valid_from="next tuesday")
    assert "ISO-8601" in garbled
    assert "NotFoundError" in await client.fail("record_belief", agent=agent, claim_id="CLM-404",
                                                topic=topic)
    assert "NotFoundError" in await client.fail("why_changed", agent=agent, topic=topic,
                                                at="2026-10-08T10:00:00Z")
    assert "validation error" in await client.fail("what_if", agent=agent, topic=topic, without=[])
    assert "validation error" in await client.fail("why_changed", agent=agent, topic=topic)
    assert (await client.call("timeline", agent=agent, topic=topic))["count"] == 0


async def test_history_and_audit_checks_in_the_past(client: Client, direct: Rippl) -> None:
    ids = await chain(client)
    created = await client.call("history", node_id=ids["act"])
    assert created["count"] >= 1 and created["changes"][0]["after"] == "Pending"
    direct.retract(ids["clm"], reason="found false", by="auditor", at="2030-01-01T00:00:00Z")
    changes = (await client.call("history", node_id=ids["act"]))["changes"]
    assert changes[-1]["after"] == "Premise Retracted" and changes[-1]["cause"] == "retract"
    assert changes[-1]["valid_from"].startswith("2030-01-01")
    past = await client.call("check_premises", target=ids["act"], as_of="2029-12-31T00:00:00Z")
    later = await client.call("check_premises", target=ids["act"], as_of="2030-01-02T00:00:00Z")
    assert past["safe"] is True and later["safe"] is False
    assert "NotFoundError" in await client.fail("history", node_id="ACT-404")


async def test_unknown_arguments_are_refused_not_ignored(client: Client, direct: Rippl) -> None:
    source, claim = uid("SRC"), uid("CLM")
    await client.call("add_source", id=source, title="A dashboard")
    message = await client.fail("add_claim", id=claim, text="It holds", source=[source])
    assert "takes no argument 'source'" in message and "sources" in message
    with pytest.raises(NotFoundError):
        direct.get(claim)
    message = await client.fail("check_premises", action_id="ACT-001")
    assert "'action_id'" in message and "target" in message


# Any string at all, as an id or a text: a clean result or a clean tool error, never a crash, and a
# failed call changes nothing.
def stored_text(direct: Rippl, node_id: str) -> str | None:
    try:
        return direct.get(node_id).text
    except (NotFoundError, InvalidInputError):
        return None


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(node_id=st.text(max_size=140), text=st.text(max_size=300))
async def test_any_string_is_stored_verbatim_or_refused(client: Client, direct: Rippl, node_id: str,
                                                        text: str) -> None:
    before = stored_text(direct, node_id)
    result = await client.raw("add_claim", {"id": node_id, "text": text})
    if result["isError"]:
        assert stored_text(direct, node_id) == before
    else:
        stored = result["structuredContent"]
        assert stored is not None and stored["id"] == node_id
        assert stored["text"] == (before if before is not None else text)
        assert stored_text(direct, node_id) == stored["text"]
    assert (await client.call("check_premises", target="ACT-002"))["safe"] is True


async def test_strings_that_look_like_json_stay_strings(client: Client, direct: Rippl) -> None:
    run = uuid.uuid4().hex[:8]
    for node_id, text in [(f'["{run}", 1]', "null"), (f'{{"id": "{run}"}}', '{"a": 1}'),
                          (f"{run}", "[]")]:
        added = await client.call("add_claim", id=node_id, text=text)
        assert (added["id"], added["text"]) == (node_id, text)
    claim, source = uid("CLM"), uid("SRC")
    added = await client.call("add_source", id=source, title="s", uri="null", kind="null")
    assert (added["uri"], added["source_type"]) == ("null", "null")
    assert direct.get(source).uri == "null"
    # lists sent as JSON text (as some clients do) are still decoded where a list is expected
    await client.call("add_claim", id=claim, text="t", sources=json.dumps([source]))
    assert direct.get(claim).justifications == [[source]]


async def test_an_agent_cannot_record_what_rests_on_nothing(client: Client) -> None:
    ids = await chain(client)
    for tool, arguments in (
            ("add_action", {"title": "x", "tool": ids["tool"], "args": {"table": "billing"}}),
            ("add_action", {"title": "x", "tool": ids["tool"], "decisions": [], "triggers": []}),
            ("add_action", {"title": "x", "tool": uid("undeclared")}),
            ("add_decision", {"title": "y"}),
            ("add_decision", {"title": "y", "premises": [], "depends_on": []})):
        message = await client.fail(tool, **arguments)
        assert "rest on something" in message, message


async def test_an_agent_cannot_lift_a_veto_by_declaring_the_call_again(client: Client,
                                                                      direct: Rippl) -> None:
    ids = await chain(client)
    call = {"tool": ids["tool"], "args": {"table": "billing"}}
    direct.retract(ids["clm"], reason="disk errors", by="ops")
    assert (await client.call("check_premises", **call))["safe"] is False
    # A fresh claim -> decision -> action for the same call (exact args, then any args): the
    # retracted premise still vetoes it, through MCP and in the core.
    fresh = {k: uid(k.upper()) for k in ("clm", "dec")}
    await client.call("add_claim", id=fresh["clm"], text=f"{fresh['clm']} all is well")
    await client.call("add_decision", id=fresh["dec"], title="Go anyway", premises=[fresh["clm"]])
    for extra in ({"args": {"table": "billing"}}, {}):
        await client.call("add_action", id=uid("ACT"), title="Migrate again",
                          decisions=[fresh["dec"]], tool=ids["tool"], **extra)
        assert (await client.call("check_premises", **call))["safe"] is False
        assert not direct.check(ToolCall(name=ids["tool"], args={"table": "billing"})).allowed
