"""RipplMemory over the real belief graph, alone and inside an AssistantAgent."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent
from autogen_core import Image
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import SystemMessage
from autogen_helpers import replay, seen_by_model
from rippl_autogen import RipplConnection, RipplMemory

from rippl_core import AsyncRippl, InvalidInputError, Kind, NotFoundError, Rippl
from rippl_core.adapters import semantic_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

SHARD_09 = "Shard 09 is healthy: 0 replication lag, no I/O errors, p99 write latency 3.1 ms"
POOL = "pgbouncer-checkout is saturated: 200/200 server connections, 340 clients waiting"


@pytest.fixture(autouse=True)
def _needs_beliefs(rippl: Rippl) -> None:
    if not hasattr(rippl, "believe"):
        pytest.skip("belief API not in this core yet")


def text(content: str, **metadata: object) -> MemoryContent:
    return MemoryContent(content=content, mime_type=MemoryMimeType.TEXT, metadata=metadata or None)


async def context_of(memory: RipplMemory) -> tuple[str, list[str]]:
    """The system message update_context adds (or ''), and the injected claim ids."""
    context = UnboundedChatCompletionContext()
    result = await memory.update_context(context)
    messages = await context.get_messages()
    assert all(isinstance(m, SystemMessage) for m in messages) and len(messages) <= 1
    return (messages[0].content if messages else ""), [m.metadata["claim"]
                                                      for m in result.memories.results]


async def test_context_before_and_after_a_retraction(incident: Rippl, arippl: AsyncRippl) -> None:
    memory = RipplMemory(arippl, "operator")
    await memory.add(text(SHARD_09, claim_id="CLM-001", topic="shard-09-health",
                          sources=["SRC-001"]))
    await memory.add(text(POOL, claim_id="CLM-013", topic="checkout-pool", sources=["SRC-011"]))
    derived = incident.get("CLM-007").text  # derived from CLM-001 and CLM-004
    await memory.add(text(derived, claim_id="CLM-007", topic="shard-09-capacity"))

    before, claims = await context_of(memory)
    assert sorted(claims) == ["CLM-001", "CLM-007", "CLM-013"]
    assert "[shard-09-health] " + SHARD_09 in before and "evidence: SRC-001" in before

    incident.retract("CLM-001", reason="I/O errors on shard 09", by="grafana")
    after, claims = await context_of(memory)
    assert claims == ["CLM-013"]  # the retracted claim and the claim derived from it are gone
    assert SHARD_09 not in after and "CLM-007" not in after and POOL in after

    incident.reinstate("CLM-001", reason="false alarm", by="oncall")
    assert sorted((await context_of(memory))[1]) == ["CLM-001", "CLM-007", "CLM-013"]


async def test_a_disputed_claim_is_not_injected(incident: Rippl, arippl: AsyncRippl) -> None:
    memory = RipplMemory(arippl, "operator")
    await memory.add(text(SHARD_09, claim_id="CLM-001", topic="shard-09-health"))
    incident.propose_retraction("CLM-001", reason="lag alerts", by="grafana")
    assert await context_of(memory) == ("", [])


async def test_agent_sees_its_beliefs_and_never_a_retracted_one(incident: Rippl,
                                                                arippl: AsyncRippl) -> None:
    memory = RipplMemory(arippl, "operator")
    await memory.add(text(SHARD_09, claim_id="CLM-001", topic="shard-09-health"))
    await memory.add(text(POOL, claim_id="CLM-013", topic="checkout-pool"))
    client = replay("noted", "noted again")
    agent = AssistantAgent("operator", model_client=client, memory=[memory])
    first = await agent.run(task="status?")
    [event] = [m for m in first.messages if isinstance(m, MemoryQueryEvent)]
    assert {c.content for c in event.content} == {SHARD_09, POOL}
    assert SHARD_09 in seen_by_model(client, 0)

    incident.retract("CLM-001", reason="I/O errors", by="grafana")
    await agent.on_reset(None)  # type: ignore[arg-type]
    second = await agent.run(task="status?")
    [event] = [m for m in second.messages if isinstance(m, MemoryQueryEvent)]
    assert [c.content for c in event.content] == [POOL]
    assert SHARD_09 not in seen_by_model(client, 1)


async def test_add_creates_claim_and_sources_deterministically(rippl: Rippl,
                                                               arippl: AsyncRippl) -> None:
    memory = RipplMemory(arippl, "analyst")
    statement = "Redis pricing hit rate fell to 61%"
    await memory.add(text(statement, topic="cache", sources=[
        {"title": "Grafana redis-pricing panel", "kind": "telemetry", "uri": "https://g/redis"}]))
    claim_id = semantic_id(Kind.CLAIM, statement)
    source_id = semantic_id(Kind.SOURCE, "Grafana redis-pricing panel")
    claim = rippl.get(claim_id)
    assert claim.justifications == [[source_id]] and rippl.get(source_id).uri == "https://g/redis"
    # the same statement from a second source: still one claim, now with two justifications
    rippl.add_source("SRC-X", "Datadog cache panel")
    await memory.add(text(statement.lower() + ".", topic="cache", sources=["SRC-X"]))
    assert sorted(rippl.get(claim_id).justifications) == sorted([[source_id], ["SRC-X"]])
    belief = await arippl.ask("analyst", "cache")
    assert belief is not None and belief.claim == claim_id
    assert sorted(belief.evidence) == sorted([source_id, "SRC-X"])  # re-adoption merges evidence
    # losing one source keeps the claim: it is still injected
    rippl.retract(source_id, reason="panel misconfigured", by="sre")
    assert (await context_of(memory))[1] == [claim_id]


async def test_default_topic_and_json_content(arippl: AsyncRippl) -> None:
    memory = RipplMemory(arippl, "analyst")
    await memory.add(MemoryContent(content={"shard": "07", "disk_free": 0.58},
                                   mime_type=MemoryMimeType.JSON))
    [belief] = await arippl.beliefs("analyst")
    assert belief.topic == belief.claim and json.loads(belief.text) == {"disk_free": 0.58,
                                                                       "shard": "07"}


async def test_as_of_shows_what_was_believed_then(arippl: AsyncRippl) -> None:
    memory = RipplMemory(arippl, "planner")
    monday = datetime(2026, 10, 5, 9, tzinfo=UTC)
    await memory.add(text("Billing moves to shard 09", topic="billing-home",
                          valid_from=monday.isoformat()))
    await memory.add(text("Billing moves to shard 07", topic="billing-home",
                          valid_from=(monday + timedelta(days=2)).isoformat()))
    now_text, _ = await context_of(memory)
    assert "shard 07" in now_text and "shard 09" not in now_text
    then = RipplMemory(arippl, "planner", as_of=monday + timedelta(days=1))
    then_text, _ = await context_of(then)
    assert "shard 09" in then_text and "shard 07" not in then_text
    assert "as of 2026-10-06T09:00:00+00:00" in then_text
    before_anything = RipplMemory(arippl, "planner", as_of="2026-10-01T00:00:00Z")
    assert await context_of(before_anything) == ("", [])


async def test_query_matches_words_and_topics(arippl: AsyncRippl) -> None:
    memory = RipplMemory(arippl, "operator")
    await memory.add(text(SHARD_09, topic="shard-09-health"))
    await memory.add(text(POOL, topic="checkout-pool"))
    hits = await memory.query("is the checkout pool saturated?")
    assert [h.content for h in hits.results] == [POOL]
    assert len((await memory.query("")).results) == 2
    assert [h.content for h in (await memory.query("", topic="shard-09-health")).results] == [SHARD_09]
    assert (await memory.query("kubernetes")).results == []
    query = MemoryContent(content="replication lag", mime_type=MemoryMimeType.TEXT)
    assert [h.metadata["topic"] for h in (await memory.query(query)).results] == ["shard-09-health"]
    with pytest.raises(InvalidInputError, match="unknown query options"):
        await memory.query("x", top_k=3)


async def test_clear_ends_beliefs_but_keeps_history(arippl: AsyncRippl) -> None:
    memory = RipplMemory(arippl, "operator")
    await memory.add(text(POOL, topic="checkout-pool"))
    await memory.clear()
    assert await context_of(memory) == ("", [])
    assert await arippl.ask("operator", "checkout-pool") is None
    [interval] = await arippl.timeline("operator", "checkout-pool")
    assert interval.text == POOL and interval.valid_to is not None


async def test_component_round_trip(incident: Rippl, arippl: AsyncRippl) -> None:
    memory = RipplMemory(arippl, "operator", as_of="2030-01-01T00:00:00+00:00", limit=5)
    await arippl.believe("operator", "CLM-013", topic="checkout-pool",
                         valid_from="2026-10-08T09:00:00Z")
    dumped = json.loads(memory.dump_component().model_dump_json())
    assert dumped["provider"] == "rippl_autogen.RipplMemory"
    assert dumped["config"]["agent"] == "operator" and dumped["config"]["limit"] == 5
    assert dumped["config"]["connection"]["graph"] == incident.graph
    loaded = Memory.load_component(dumped)
    assert isinstance(loaded, RipplMemory) and loaded.name == "rippl:operator"
    assert loaded.link.target == RipplConnection.of(arippl)
    assert (await context_of(loaded))[1] == ["CLM-013"]
    await loaded.close()
    assert loaded.link._owned is None


async def test_bad_input_changes_nothing(arippl: AsyncRippl) -> None:
    memory = RipplMemory(arippl, "operator")
    image = Image.from_base64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
                              "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
    with pytest.raises(InvalidInputError, match="stores claims as text"):
        await memory.add(MemoryContent(content=image, mime_type=MemoryMimeType.IMAGE))
    with pytest.raises(InvalidInputError, match="unknown metadata keys"):
        await memory.add(text(POOL, topc="typo"))
    with pytest.raises(InvalidInputError, match="list of source ids"):
        await memory.add(text(POOL, sources="SRC-011"))
    with pytest.raises(InvalidInputError, match="time zone"):
        await memory.add(text(POOL, valid_from="2026-10-08T09:00:00"))
    with pytest.raises(NotFoundError):
        await memory.add(text(POOL, sources=["SRC-NOPE"]))
    assert await arippl.beliefs("operator") == []
    with pytest.raises(InvalidInputError, match="time zone"):
        RipplMemory(arippl, "operator", as_of=datetime(2026, 10, 8))
    with pytest.raises(InvalidInputError, match="limit"):
        RipplMemory(arippl, "operator", limit=0)
    with pytest.raises(InvalidInputError):
        RipplMemory(arippl, " ")


@pytest.mark.parametrize("wording", [SHARD_09, SHARD_09.upper(), f"  {SHARD_09}.  ",
                                     SHARD_09.replace(" ", "  ")])
async def test_adding_a_known_statement_links_to_its_claim(incident: Rippl, arippl: AsyncRippl,
                                                           wording: str) -> None:
    """The memory trap: the same text under another id would stay Verified after the claim that
    states it (here CLM-001, an explicit id) is retracted, and the agent would keep it as fact."""
    memory = RipplMemory(arippl, "operator")
    claims_before = incident.stats().nodes["Claim"]
    await memory.add(text(wording, topic="shard-09-health", sources=["SRC-002"]))
    assert incident.stats().nodes["Claim"] == claims_before  # no second claim
    _, claims = await context_of(memory)
    assert claims == ["CLM-001"]
    assert incident.get("CLM-001").text == SHARD_09  # the stored wording is kept
    incident.retract("CLM-001", reason="I/O errors on shard 09", by="grafana")
    context, claims = await context_of(memory)
    assert claims == [] and "Shard 09" not in context


async def test_a_statement_two_claims_make_must_be_named(incident: Rippl, arippl: AsyncRippl) -> None:
    incident.add_claim("CLM-DUP", SHARD_09.lower(), sources=["SRC-001"])  # one more explicit id
    memory = RipplMemory(arippl, "operator")
    with pytest.raises(InvalidInputError, match="CLM-001, CLM-DUP"):
        await memory.add(text(SHARD_09, topic="shard-09-health"))
    await memory.add(text(SHARD_09, topic="shard-09-health", claim_id="CLM-DUP"))
    assert (await arippl.ask("operator", "shard-09-health")).claim == "CLM-DUP"  # type: ignore[union-attr]
