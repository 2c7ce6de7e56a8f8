"""RipplStore: LangGraph's BaseStore over the bitemporal belief graph, and time travel that agrees
with the checkpoints of a real graph."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableLambda
from langgraph.config import get_store
from langgraph.graph import START, StateGraph
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph_helpers import thread
from rippl_langgraph import AsyncFalkorDBSaver, FalkorDBSaver, RipplStore

from rippl_core import AsyncRippl, InvalidInputError, NotFoundError, Rippl

AGENT = "ops-agent"


def test_put_get_delete_and_history_kept(incident: Rippl) -> None:
    store = RipplStore(incident)
    store.put((AGENT, "shards"), "09-health", {"claim": "CLM-001", "evidence": ["SRC-001"]})
    item = store.get((AGENT, "shards"), "09-health")
    assert item is not None and item.namespace == (AGENT, "shards") and item.key == "09-health"
    assert item.value["claim"] == "CLM-001" and item.value["status"] == "Verified"
    assert item.value["evidence"] == ["SRC-001"]
    assert incident.ask(AGENT, "shards/09-health").claim == "CLM-001"  # the same belief, in the core

    store.put((AGENT, "shards"), "09-health", {"claim": "CLM-003"})  # adopt another claim
    assert store.get((AGENT, "shards"), "09-health").value["claim"] == "CLM-003"
    store.delete((AGENT, "shards"), "09-health")
    assert store.get((AGENT, "shards"), "09-health") is None
    timeline = incident.timeline(AGENT, "shards/09-health")
    assert [b.claim for b in timeline] == ["CLM-001", "CLM-003"]  # closed, never deleted
    assert all(b.valid_to is not None for b in timeline)


def test_put_text_creates_the_claim_once(incident: Rippl) -> None:
    store = RipplStore(incident)
    value = {"text": "Shard 07 replication lag is under 1 s", "sources": ["SRC-013"]}
    store.put((AGENT,), "07-lag", value)
    store.put((AGENT,), "07-lag", value)
    item = store.get((AGENT,), "07-lag")
    assert item is not None and item.value["claim"].startswith("CLM-")
    node = incident.get(item.value["claim"])
    assert node.text == value["text"] and node.justifications == [["SRC-013"]]
    assert len(incident.timeline(AGENT, "07-lag")) == 1  # the same belief again writes nothing


def test_retracted_claims_are_never_served_as_current(incident: Rippl) -> None:
    store = RipplStore(incident)
    store.put((AGENT, "shards"), "09-health", {"claim": "CLM-001"})
    store.put((AGENT, "shards"), "07-health", {"claim": "CLM-003"})
    before = datetime.now(UTC)
    time.sleep(0.005)  # the retraction is recorded in a later millisecond than `before`
    incident.retract("SRC-001", reason="the dashboard was stale", by="oncall")  # CLM-001 loses support
    assert store.get((AGENT, "shards"), "09-health") is None
    assert [i.key for i in store.search((AGENT,))] == ["07-health"]
    assert store.list_namespaces() == [(AGENT, "shards")]
    # a read of the past shows what was believed then, with its status then and now
    past = store.search((AGENT,), filter={"as_of": before, "known_at": before})
    assert {i.key: (i.value["status"], i.value["rests_on_retracted"], i.value["status_now"])
            for i in past} == {"07-health": ("Verified", False, "Verified"),
                               "09-health": ("Verified", False, "Retracted")}


def test_search_prefix_filter_query_and_paging(incident: Rippl) -> None:
    store = RipplStore(incident)
    store.put((AGENT, "shards"), "09-health", {"claim": "CLM-001"})
    store.put((AGENT, "shards"), "03-disk", {"claim": "CLM-002"})
    store.put((AGENT, "checkout"), "latency", {"claim": "CLM-009"})
    store.put(("finance-agent",), "close", {"claim": "CLM-006"})
    assert {i.key for i in store.search((AGENT, "shards"))} == {"09-health", "03-disk"}
    assert {i.namespace[0] for i in store.search(())} == {AGENT, "finance-agent"}
    ranked = store.search((AGENT,), query="disk usage on shard 03")
    assert ranked[0].key == "03-disk" and ranked[0].score > ranked[-1].score
    only = store.search((), filter={"claim": "CLM-009"})
    assert [(i.namespace, i.key) for i in only] == [((AGENT, "checkout"), "latency")]
    assert store.search((), filter={"claim": {"$ne": "CLM-009"}, "status": "Verified"}, limit=50)
    paged = [store.search((AGENT,), limit=1, offset=n)[0].key for n in range(3)]
    assert paged == [i.key for i in store.search((AGENT,))]
    assert store.list_namespaces(prefix=(AGENT,)) == [(AGENT, "checkout"), (AGENT, "shards")]
    assert store.list_namespaces(max_depth=1) == [("finance-agent",), (AGENT,)]
    assert store.list_namespaces(suffix=("shards",)) == [(AGENT, "shards")]
    assert incident.agents() == ["finance-agent", AGENT]
    assert incident.topics(AGENT) == ["checkout/latency", "shards/03-disk", "shards/09-health"]


def test_as_of_search_reads_the_past(incident: Rippl) -> None:
    store = RipplStore(incident)
    start = datetime.now(UTC) - timedelta(hours=2)
    store.put((AGENT,), "09-health", {"claim": "CLM-001", "valid_from": start.isoformat()})
    store.put((AGENT,), "09-health", {"claim": "CLM-003",
                                      "valid_from": (start + timedelta(hours=1)).isoformat()})
    then = store.search((AGENT,), filter={"as_of": start + timedelta(minutes=30)})
    now = store.search((AGENT,))
    assert [i.value["claim"] for i in then] == ["CLM-001"]
    assert [i.value["claim"] for i in now] == ["CLM-003"]
    assert store.search((AGENT,), filter={"as_of": start - timedelta(minutes=1)}) == []


def test_a_search_of_the_past_gives_the_status_as_known_then(incident: Rippl) -> None:
    store = RipplStore(incident)
    start = datetime.now(UTC) - timedelta(hours=3)
    store.put((AGENT, "shards"), "09-health", {"claim": "CLM-001", "evidence": ["SRC-001"],
                                               "valid_from": start.isoformat()})
    recorded = datetime.now(UTC)
    time.sleep(0.005)  # the retraction is recorded in a later millisecond than `recorded`
    # found false from an hour after the adoption on, recorded now
    incident.retract("SRC-001", reason="the dashboard was stale", by="oncall",
                     at=start + timedelta(hours=1))

    def status(**times: datetime) -> tuple[str, bool, list[str], str]:
        [item] = store.search((AGENT,), filter=dict(times))
        v = item.value
        return v["status"], v["rests_on_retracted"], v["retracted_evidence"], v["status_now"]

    held = ("Verified", False, [], "Retracted")
    out = ("Retracted", True, ["SRC-001"], "Retracted")
    before_it, after_it = start + timedelta(minutes=30), start + timedelta(hours=2)
    assert status(as_of=before_it) == held                       # valid before the retraction
    assert status(as_of=after_it) == out                         # after it, as known now
    assert status(as_of=after_it, known_at=recorded) == held     # not known yet then
    assert status(known_at=recorded) == held                     # today, as known before it
    assert status(known_at=datetime.now(UTC)) == out
    assert store.search((AGENT,)) == []  # a current read never serves it
    # the filter applies to the status then
    assert store.search((AGENT,), filter={"as_of": before_it, "status": "Retracted"}) == []
    [item] = store.search((AGENT,), filter={"as_of": after_it, "status": "Retracted"})
    assert item.key == "09-health"


def test_batch_runs_ops_in_order(incident: Rippl) -> None:
    store = RipplStore(incident)
    results = store.batch([
        PutOp((AGENT,), "a", {"claim": "CLM-002"}),
        GetOp((AGENT,), "a"),
        SearchOp((AGENT,), None, 10, 0),
        ListNamespacesOp((MatchCondition("prefix", (AGENT,)),), None, 10, 0),
        PutOp((AGENT,), "a", None),
        GetOp((AGENT,), "a"),
    ])
    assert results[0] is None and results[1].value["claim"] == "CLM-002"
    assert [i.key for i in results[2]] == ["a"] and results[3] == [(AGENT,)]
    assert results[4] is None and results[5] is None


def test_bad_input_is_refused_and_writes_nothing(incident: Rippl) -> None:
    store = RipplStore(incident)
    with pytest.raises(InvalidInputError, match="does not keep food"):
        store.put((AGENT,), "lunch", {"food": "pizza"})
    with pytest.raises(InvalidInputError, match="'claim'"):
        store.put((AGENT,), "lunch", {"note": "no claim"})
    with pytest.raises(InvalidInputError, match="without '/'"):
        store.put((AGENT,), "a/b", {"claim": "CLM-001"})
    with pytest.raises(NotFoundError):
        store.put((AGENT,), "ghost", {"claim": "CLM-404"})
    with pytest.raises(InvalidInputError, match=r"naive|time zone"):
        store.search((AGENT,), filter={"as_of": "2026-10-08T09:00:00"})
    assert incident.agents() == [] and store.search(()) == []
    with pytest.raises(InvalidInputError, match="checkpointer"):
        store.beliefs_at_checkpoint(thread())


class Step(TypedDict):
    adopted: Annotated[list[str], lambda a, b: a + b]


TOPIC_CLAIMS = [("shards/09-health", "CLM-001"), ("shards/07-health", "CLM-003"),
                ("shards/09-health", "CLM-004"), ("checkout/latency", "CLM-009")]


def belief_graph(checkpointer: Any, store: RipplStore) -> Any:
    """One node per step; each adopts a belief through the store (as a real node would)."""
    builder = StateGraph(Step)
    previous = START
    for n, (topic, claim) in enumerate(TOPIC_CLAIMS):
        namespace, key = (AGENT, *topic.split("/")[:-1]), topic.split("/")[-1]

        def adopt(state: Step, namespace=namespace, key=key, claim=claim) -> dict:  # type: ignore[no-untyped-def]
            get_store().put(namespace, key, {"claim": claim})
            return {"adopted": [f"{topic_of(namespace, key)}={claim}"]}

        async def aadopt(state: Step, namespace=namespace, key=key, claim=claim) -> dict:  # type: ignore[no-untyped-def]
            await get_store().aput(namespace, key, {"claim": claim})
            return {"adopted": [f"{topic_of(namespace, key)}={claim}"]}

        builder.add_node(f"step{n}", RunnableLambda(adopt, afunc=aadopt))
        builder.add_edge(previous, f"step{n}")
        previous = f"step{n}"
    return builder.compile(checkpointer=checkpointer, store=store)


def topic_of(namespace: tuple[str, ...], key: str) -> str:
    return "/".join((*namespace[1:], key))


def expected(adopted: list[str]) -> dict[str, str]:
    held: dict[str, str] = {}
    for entry in adopted:
        topic, claim = entry.split("=")
        held[topic] = claim
    return held


def test_beliefs_at_every_checkpoint_agree_with_the_state_history(incident: Rippl,
                                                                  saver: FalkorDBSaver) -> None:
    store = RipplStore(incident, checkpointer=saver)
    app = belief_graph(saver, store)
    app.invoke({"adopted": []}, thread())
    history = list(app.get_state_history(thread()))
    assert len(history) == len(TOPIC_CLAIMS) + 2
    for snapshot in history:
        held = {b.topic: b.claim for b in store.beliefs_at_checkpoint(snapshot.config, agent=AGENT)}
        assert held == expected(snapshot.values.get("adopted", [])), snapshot.metadata["step"]
    # the latest checkpoint is "now"
    assert {b.topic: b.claim for b in incident.beliefs(AGENT)} == expected(history[0].values["adopted"])


@pytest.mark.asyncio(loop_scope="session")
async def test_async_store_and_checkpoints_agree(arippl: AsyncRippl, incident: Rippl,
                                                 asaver: AsyncFalkorDBSaver) -> None:
    store = RipplStore(arippl, checkpointer=asaver)
    app = belief_graph(asaver, store)
    await app.ainvoke({"adopted": []}, thread())
    history = [s async for s in app.aget_state_history(thread())]
    for snapshot in history:
        held = {b.topic: b.claim for b in await store.abeliefs_at_checkpoint(snapshot.config)}
        assert held == expected(snapshot.values.get("adopted", []))
    found = await store.asearch((AGENT, "shards"))
    assert {i.key: i.value["claim"] for i in found} == {"09-health": "CLM-004", "07-health": "CLM-003"}
    with pytest.raises(InvalidInputError, match="async methods"):
        store.get((AGENT,), "x")
