"""RipplStorage behind CrewAI's unified Memory: remember, recall (shallow and deep), forget, update,
scopes and categories; retracted claims never recalled; recall as of a past time."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from crewai import Memory
from crewai.memory.storage.backend import StorageBackend
from crewai.memory.types import MemoryRecord
from rippl_crewai import RipplStorage
from rippl_crewai.testing import HashEmbedder, ScriptedLLM

from rippl_core import InvalidInputError, Kind, NotFoundError, Rippl
from rippl_core.adapters import semantic_id

SHARD_09 = "Shard 09 is healthy: no I/O errors and 0 replication lag"
SHARD_07 = "Shard 07 is healthy with 58% disk free"
TTL = "The redis-pricing cache TTL was lowered to 30 seconds"
EMBED = HashEmbedder()


def memory_on(storage: RipplStorage, **kwargs: Any) -> Memory:
    """A CrewAI Memory that needs no LLM: explicit fields on remember, shallow recall."""
    return Memory(storage=storage, llm=ScriptedLLM(["{}"]), embedder=EMBED, **kwargs)


def remember(memory: Memory, content: str, **fields: Any) -> MemoryRecord:
    fields = {"scope": "/ops/db", "categories": ["database"], "importance": 0.7, **fields}
    record = memory.remember(content, **fields)
    assert record is not None
    return record


def recalled(memory: Memory, query: str, **kwargs: Any) -> list[str]:
    return [m.record.content for m in memory.recall(query, depth="shallow", **kwargs)]


def later() -> datetime:
    """A moment strictly after everything written so far (timestamps are in milliseconds)."""
    time.sleep(0.005)
    moment = datetime.now(UTC)
    time.sleep(0.005)
    return moment


def test_it_is_a_storage_backend(rippl: Rippl) -> None:
    assert isinstance(RipplStorage(rippl), StorageBackend)


def test_remember_and_recall_through_memory(rippl: Rippl) -> None:
    storage = RipplStorage(rippl)
    memory = memory_on(storage)
    record = remember(memory, SHARD_09, metadata={"ticket": "INC-4471"}, source="grafana")
    remember(memory, TTL, scope="/ops/cache", categories=["cache"], importance=0.4)
    matches = memory.recall("is shard 09 healthy", depth="shallow", limit=1)
    assert [m.record.content for m in matches] == [SHARD_09]
    found = matches[0].record
    assert found.id == record.id and found.scope == "/ops/db" and found.source == "grafana"
    assert found.categories == ["database"] and found.importance == 0.7
    assert found.metadata["ticket"] == "INC-4471" and found.metadata["rippl_status"] == "Verified"
    assert found.metadata["rippl_claim"] == semantic_id(Kind.CLAIM, SHARD_09)
    assert found.embedding == pytest.approx(EMBED.embed(SHARD_09))
    assert found.created_at.tzinfo is None  # CrewAI's convention: naive UTC
    assert abs(found.created_at - record.created_at) < timedelta(milliseconds=2)
    assert "rippl_status: Verified" in matches[0].format()  # what an agent is shown


def test_the_claim_graph_holds_the_memory(rippl: Rippl) -> None:
    storage = RipplStorage(rippl)
    record = remember(memory_on(storage), SHARD_09, source="grafana")
    claim = rippl.get(storage.claim_of(record.id))
    assert claim.kind is Kind.CLAIM and claim.text == SHARD_09
    assert claim.justifications == [[semantic_id(Kind.SOURCE, "grafana")]]
    assert rippl.get(semantic_id(Kind.SOURCE, "grafana")).text == "grafana"


def test_a_retracted_claim_is_never_recalled(rippl: Rippl) -> None:
    storage = RipplStorage(rippl)
    memory = memory_on(storage)
    bad = remember(memory, SHARD_09, source="grafana")
    remember(memory, SHARD_07, source="grafana")
    storage.retract(bad.id, reason="disk errors found on shard 09", by="sre")
    assert recalled(memory, "shard 09 healthy") == [SHARD_07]
    assert storage.search(EMBED.embed(SHARD_09), limit=5)[0][0].content == SHARD_07
    listed = {r.content: r.metadata["rippl_status"] for r in memory.list_records()}
    assert listed == {SHARD_09: "Retracted", SHARD_07: "Verified"}  # listed, flagged
    assert storage.get_record(bad.id).metadata["rippl_status"] == "Retracted"  # type: ignore[union-attr]


def test_retracting_a_source_forgets_what_it_said(rippl: Rippl) -> None:
    storage = RipplStorage(rippl)
    memory = memory_on(storage)
    remember(memory, SHARD_09, source="grafana")
    remember(memory, SHARD_07, source="grafana")
    remember(memory, TTL, source="datadog")
    rippl.retract(semantic_id(Kind.SOURCE, "grafana"), reason="dashboard was stale", by="sre")
    assert recalled(memory, "shard healthy cache TTL") == [TTL]
    remember(memory, SHARD_07, source="priya")  # a second source supports the claim again:
    assert sorted(recalled(memory, "shard healthy cache TTL")) == sorted([TTL, SHARD_07, SHARD_07])
    # both records stating it (grafana's and priya's) are recalled again; shard 09's is not


def test_a_memory_can_state_a_claim_of_the_incident_graph(incident: Rippl) -> None:
    storage = RipplStorage(incident)
    memory = memory_on(storage)
    record = remember(memory, "Shard 09 looked healthy on the 09:00 dashboard",
                      metadata={"rippl_claim": "CLM-001"})
    assert storage.claim_of(record.id) == "CLM-001"
    before = later()
    incident.retract("CLM-001", reason="disk errors on shard 09", by="sre")
    assert recalled(memory, "shard 09 healthy") == []
    past = memory_on(storage.as_of(before), read_only=True).recall("shard 09 healthy",
                                                                    depth="shallow")
    assert [m.record.id for m in past] == [record.id]
    assert past[0].record.metadata["rippl_status"] == "Verified"  # then
    assert past[0].record.metadata["rippl_status_now"] == "Retracted"  # and now
    with pytest.raises(NotFoundError, match="CLM-404 not found"):
        remember(memory, "x", metadata={"rippl_claim": "CLM-404"})


def test_recall_as_of_a_past_time(rippl: Rippl) -> None:
    storage = RipplStorage(rippl)
    memory = memory_on(storage)
    plan = remember(memory, "Billing moves to shard 09 on Tuesday")
    gone = remember(memory, TTL, scope="/ops/cache")
    t1 = later()
    memory.update(plan.id, content="Billing moves to shard 07 on Tuesday")
    memory.forget(record_ids=[gone.id])
    t2 = later()

    assert recalled(memory, "billing moves shard tuesday") == ["Billing moves to shard 07 on Tuesday"]
    then = memory_on(storage.as_of(t1), read_only=True)
    assert recalled(then, "billing moves shard tuesday TTL") == [
        "Billing moves to shard 09 on Tuesday", TTL]
    assert then.list_scopes("/ops") == ["/ops/cache", "/ops/db"]
    assert then.info("/").record_count == 2
    assert memory.info("/").record_count == 1
    assert storage.as_of(t2).get_record(gone.id) is None
    assert storage.as_of(t1).get_record(gone.id).content == TTL  # type: ignore[union-attr]
    # known_at: what we knew at t1 about t2 (nothing of the update yet)
    assert storage.as_of(t2, known_at=t1).get_record(plan.id).content == plan.content  # type: ignore[union-attr]
    before_all = storage.as_of(datetime(2000, 1, 1, tzinfo=UTC))
    assert before_all.count() == 0 and before_all.list_records() == []


def test_a_past_view_refuses_writes(rippl: Rippl) -> None:
    view = RipplStorage(rippl).as_of(datetime.now(UTC))
    record = MemoryRecord(content="x", embedding=EMBED.embed("x"))
    for write in (lambda: view.save([record]), lambda: view.update(record),
                  lambda: view.delete(), lambda: view.reset()):
        with pytest.raises(InvalidInputError, match="read-only"):
            write()
    view.touch_records([record.id])  # CrewAI touches after recall: a no-op on a view
    with pytest.raises(InvalidInputError, match="time zone"):
        RipplStorage(rippl).as_of(datetime(2026, 1, 1))  # naive: refused


def test_a_pending_retraction_is_recalled_flagged_or_hidden(rippl: Rippl) -> None:
    storage = RipplStorage(rippl)
    memory = memory_on(storage)
    record = remember(memory, SHARD_09)
    rippl.propose_retraction(storage.claim_of(record.id), reason="disk errors?", by="grafana")
    [match] = memory.recall("shard 09 healthy", depth="shallow")
    assert match.record.metadata["rippl_status"] == "Proposed Retraction"
    strict = memory_on(RipplStorage(rippl, include_at_risk=False))
    assert recalled(strict, "shard 09 healthy") == []


def test_scopes_categories_forget_and_reset(rippl: Rippl) -> None:
    memory = memory_on(RipplStorage(rippl, store="scoped"))
    remember(memory, SHARD_09, scope="/ops/db/shards", categories=["database", "health"])
    remember(memory, SHARD_07, scope="/ops/db/shards", categories=["database"])
    remember(memory, TTL, scope="/ops/cache", categories=["cache"], metadata={"team": "pricing"})
    remember(memory, "Standup is at 09:30", scope="/team", categories=["people"], importance=0.1)

    assert memory.list_scopes("/") == ["/ops", "/team"]
    assert memory.list_scopes("/ops") == ["/ops/cache", "/ops/db"]
    assert memory.list_categories() == {"database": 2, "health": 1, "cache": 1, "people": 1}
    assert memory.list_categories("/ops/db") == {"database": 2, "health": 1}
    info = memory.info("/ops")
    assert (info.record_count, info.categories, info.child_scopes) == (
        3, ["cache", "database", "health"], ["/ops/cache", "/ops/db"])
    assert "/ops/db (2 records)" in memory.tree()
    assert recalled(memory, "healthy shard", scope="/ops/cache") == [TTL]  # only that scope
    assert recalled(memory, "healthy shard", categories=["people"]) == ["Standup is at 09:30"]
    assert recalled(memory, "shard 09 healthy", scope="/ops/db", limit=1) == [SHARD_09]
    assert [r.content for r in memory.list_records(limit=1, offset=3)] == [SHARD_09]  # oldest

    assert memory.forget(metadata_filter={"team": "pricing"}) == 1
    assert memory.forget(scope="/ops/db", categories=["health"]) == 1
    assert [r.content for r in memory.list_records()] == ["Standup is at 09:30", SHARD_07]
    memory.reset("/ops")
    assert [r.content for r in memory.list_records()] == ["Standup is at 09:30"]
    memory.reset()
    assert memory.list_records() == [] and memory.list_scopes() == []


def test_update_keeps_id_and_creation_and_makes_a_version(rippl: Rippl) -> None:
    storage = RipplStorage(rippl)
    memory = memory_on(storage)
    record = remember(memory, "Pool size is 200")
    updated = memory.update(record.id, content="Pool size is 300", importance=0.9,
                            categories=["database", "pool"])
    stored = storage.get_record(record.id)
    assert stored is not None and stored.content == "Pool size is 300"
    assert stored.importance == 0.9 and stored.categories == ["database", "pool"]
    assert abs(stored.created_at - record.created_at) < timedelta(milliseconds=2)
    assert updated.id == record.id
    assert storage.claim_of(record.id) == semantic_id(Kind.CLAIM, "Pool size is 300")  # re-derived
    assert rippl.records("crewai").get(record.id).version == 2  # type: ignore[union-attr]
    assert storage.count() == 1
    with pytest.raises(ValueError, match="Record not found"):
        memory.update("no-such-record", content="x")


def test_erasing_instead_of_ending(rippl: Rippl) -> None:
    storage = RipplStorage(rippl, keep_history=False)
    memory = memory_on(storage)
    record = remember(memory, SHARD_09)
    t = later()
    memory.forget(record_ids=[record.id])
    assert storage.as_of(t).get_record(record.id) is None  # gone, history included


def test_recall_touches_last_accessed(rippl: Rippl) -> None:
    storage = RipplStorage(rippl)
    memory = memory_on(storage)
    record = remember(memory, SHARD_09)
    time.sleep(0.005)
    memory.recall("shard 09", depth="shallow")
    touched = storage.get_record(record.id)
    assert touched is not None and touched.last_accessed > record.last_accessed
    assert rippl.records("crewai").get(record.id).version == 1  # type: ignore[union-attr]


def test_deep_recall_runs_the_recall_flow(rippl: Rippl) -> None:
    storage = RipplStorage(rippl)
    memory = memory_on(storage)
    record = remember(memory, SHARD_09)
    remember(memory, TTL, scope="/ops/cache")
    matches = memory.recall("shard 09", depth="deep", limit=5)  # scopes listed, then searched
    assert sorted(m.record.content for m in matches) == sorted([SHARD_09, TTL])
    storage.retract(record.id, reason="disk errors", by="sre")
    assert [m.record.content for m in memory.recall("shard 09", depth="deep")] == [TTL]


def test_save_is_all_or_nothing_and_checks_dimensions(rippl: Rippl) -> None:
    storage = RipplStorage(rippl)
    storage.save([MemoryRecord(content=SHARD_09, embedding=EMBED.embed(SHARD_09))])
    with pytest.raises(InvalidInputError, match="different sizes"):
        storage.save([MemoryRecord(content=SHARD_07, embedding=EMBED.embed(SHARD_07)),
                      MemoryRecord(content=TTL, embedding=[1.0, 0.0])])
    with pytest.raises(InvalidInputError, match="64-dimensional"):
        storage.save([MemoryRecord(content=TTL, embedding=[1.0, 0.0])])
    assert storage.count() == 1
    with pytest.raises(InvalidInputError, match="64-dimensional"):
        storage.search([1.0, 0.0])
    with pytest.raises(InvalidInputError):
        storage.save([MemoryRecord(content=TTL, embedding=EMBED.embed(TTL), metadata={"x": {1}})])
    assert storage.count() == 1


async def test_async_variants(rippl: Rippl) -> None:
    storage = RipplStorage(rippl)
    first = MemoryRecord(content=SHARD_09, embedding=EMBED.embed(SHARD_09), scope="/a")
    second = MemoryRecord(content=SHARD_07, embedding=EMBED.embed(SHARD_07), scope="/b")
    await storage.asave([first, second])
    found = await storage.asearch(EMBED.embed(SHARD_07), scope_prefix="/b", limit=3)
    assert [(r.id, round(s, 6)) for r, s in found] == [(second.id, 1.0)]
    assert await storage.adelete(scope_prefix="/a") == 1
    assert [r.id for r in storage.list_records()] == [second.id]


def test_two_stores_share_claims_not_records(rippl: Rippl) -> None:
    alpha, beta = RipplStorage(rippl, store="alpha"), RipplStorage(rippl, store="beta")
    a = remember(memory_on(alpha), SHARD_09)
    b = remember(memory_on(beta), SHARD_09)
    assert alpha.count() == 1 and beta.count() == 1
    assert alpha.claim_of(a.id) == beta.claim_of(b.id)
    alpha.retract(a.id, reason="disk errors", by="sre")
    assert recalled(memory_on(beta), "shard 09") == []


def test_process_wide_factory(rippl: Rippl) -> None:
    from crewai.memory.storage.factory import set_memory_storage_factory

    set_memory_storage_factory(lambda spec: RipplStorage(rippl) if spec == "rippl" else None)
    try:
        memory = Memory(storage="rippl", llm=ScriptedLLM(["{}"]), embedder=EMBED)
        remember(memory, SHARD_09)
    finally:
        set_memory_storage_factory(None)
    assert [r.content for r in RipplStorage(rippl).list_records()] == [SHARD_09]
