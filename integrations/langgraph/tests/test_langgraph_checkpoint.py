"""FalkorDBSaver / AsyncFalkorDBSaver: the official conformance suite, real graphs, and round trips
of awkward values through the Cypher wire format."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import empty_checkpoint, get_checkpoint_metadata
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from langgraph_helpers import MIGRATE_07, Ops, react_builder, thread
from rippl_langgraph import AsyncFalkorDBSaver, FalkorDBSaver, add_preflight
from rippl_langgraph.checkpoint.queries import SCHEMA
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import AsyncRippl, InvalidInputError, Rippl
from rippl_core._runtime.schema import LIST_INDEXES

pytestmark = pytest.mark.on_cluster  # also on a 3-shard cluster, in the `cluster` step

ASYNC = pytest.mark.asyncio(loop_scope="session")


def assert_full(report: Any) -> None:
    """Every capability of the suite, prune included, detected and passed."""
    assert {cap.value for cap in ALL_CAPABILITIES} <= set(report.results), report.to_dict()
    assert all(r.detected and r.passed for r in report.results.values()), report.to_dict()


def unique() -> str:
    return f"cp-{uuid.uuid4().hex[:10]}"


@ASYNC
async def test_conformance_async_saver(backend: dict[str, Any]) -> None:
    @checkpointer_test(name="AsyncFalkorDBSaver")
    async def factory() -> AsyncIterator[AsyncFalkorDBSaver]:
        saver = await AsyncFalkorDBSaver.open(graph=unique(), **backend)
        yield saver
        await saver.adrop()
        await saver.aclose()

    report = await validate(factory)
    assert_full(report)


@ASYNC
async def test_conformance_sync_saver_via_async(backend: dict[str, Any]) -> None:
    """The sync saver's implementation, driven through its async methods (worker threads)."""
    @checkpointer_test(name="FalkorDBSaver")
    async def factory() -> AsyncIterator[FalkorDBSaver]:
        saver = await asyncio.to_thread(FalkorDBSaver, graph=unique(), **backend)
        yield saver
        saver.drop()
        saver.close()

    report = await validate(factory)
    assert_full(report)


def test_thread_survives_a_new_saver_and_time_travels(incident: Rippl, ops: Ops,
                                                      saver: FalkorDBSaver) -> None:
    model = ScriptedChatModel(script=[calls(tool_call("migrate_tables", MIGRATE_07, "c1")), "moved"])
    builder = add_preflight(react_builder(model, ops.tools()), memory=incident)
    builder.compile(checkpointer=saver).invoke({"messages": [HumanMessage("go")]}, thread())

    fresh = FalkorDBSaver(incident)  # another saver object (as another process would have)
    app = builder.compile(checkpointer=fresh)
    state = app.get_state(thread())
    assert [m.content for m in state.values["messages"]][-1] == "moved" and state.next == ()
    history = list(app.get_state_history(thread()))
    steps = [s.metadata["step"] for s in history]
    assert steps == sorted(steps, reverse=True) and steps[-1] == -1
    assert len({s.config["configurable"]["checkpoint_id"] for s in history}) == len(history)
    # filters and limits go to the database
    loops = list(fresh.list(thread(), filter={"source": "loop"}))
    assert loops and all(t.metadata["source"] == "loop" for t in loops)
    assert [t.metadata["step"] for t in fresh.list(thread(), limit=2)] == steps[:2]
    before = list(fresh.list(thread(), before=history[1].config))
    assert [t.metadata["step"] for t in before] == steps[2:]
    # replay from an earlier checkpoint: the graph continues from there, on a new branch
    at_agent = next(s for s in history if s.next == ("agent",) and s.metadata["step"] == 0)
    assert at_agent.values["messages"][-1].content == "go"
    fresh.delete_thread("t1")
    assert fresh.get_tuple(thread()) is None and list(app.get_state_history(thread())) == []


class Counter(TypedDict):
    count: int
    approved: bool


def test_subgraph_interrupt_and_namespaces(saver: FalkorDBSaver) -> None:
    def ask(state: Counter) -> dict[str, Any]:
        return {"approved": interrupt({"count": state["count"]}) == "yes"}

    inner = StateGraph(Counter)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    outer = StateGraph(Counter)
    outer.add_node("bump", lambda s: {"count": s["count"] + 1})
    outer.add_node("child", inner.compile())
    outer.add_edge(START, "bump")
    outer.add_edge("bump", "child")
    app = outer.compile(checkpointer=saver)
    first = app.invoke({"count": 1, "approved": False}, thread(), version="v2")
    assert first.interrupts[0].value == {"count": 2}
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)
                  if t.config["configurable"]["thread_id"] == "t1"}
    assert "" in namespaces and any(ns.startswith("child:") for ns in namespaces)
    assert app.invoke(Command(resume="yes"), thread()) == {"count": 2, "approved": True}


@ASYNC
async def test_async_saver_on_a_real_graph(arippl: AsyncRippl, incident: Rippl, ops: Ops,
                                           asaver: AsyncFalkorDBSaver) -> None:
    model = ScriptedChatModel(script=[calls(tool_call("migrate_tables", MIGRATE_07, "c1")), "moved"])
    app = add_preflight(react_builder(model, ops.tools()), memory=arippl).compile(checkpointer=asaver)
    chunks = [c async for c in app.astream({"messages": [HumanMessage("go")]}, thread(),
                                           stream_mode="values")]
    assert chunks[-1]["messages"][-1].content == "moved" and ops.ran == [("migrate_tables", MIGRATE_07)]
    latest = await asaver.aget_tuple(thread())
    assert latest is not None and latest.metadata["source"] == "loop"
    assert await asaver.acheckpoint_time(thread()) is not None
    # the sync face refuses to block its own event loop, and says what to use instead
    with pytest.raises(asyncio.InvalidStateError, match="FalkorDBSaver"):
        asaver.get_tuple(thread())
    # from another thread it works while the loop runs
    found = await asyncio.to_thread(asaver.get_tuple, thread())
    assert found is not None and found.checkpoint["id"] == latest.checkpoint["id"]


def test_bad_configs_are_refused(saver: FalkorDBSaver, rippl: Rippl) -> None:
    with pytest.raises(InvalidInputError, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(InvalidInputError, match="configurable"):
        saver.put({}, empty_checkpoint(), {}, {})
    with pytest.raises(InvalidInputError, match="checkpoint_id"):
        saver.put_writes(thread(), [("messages", 1)], "task")
    with pytest.raises(InvalidInputError, match="not both"):
        FalkorDBSaver(rippl, url="falkordb://127.0.0.1:1")
    with pytest.raises(InvalidInputError, match="AsyncFalkorDBSaver"):
        FalkorDBSaver(object())  # type: ignore[arg-type]


TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**62, 2**62) | st.text(max_size=40) | st.binary(max_size=40)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(thread_id=TEXT, ns=TEXT, channel=TEXT, value=VALUES, meta_value=VALUES, write=VALUES)
def test_round_trip_of_arbitrary_values(saver: FalkorDBSaver, thread_id: str, ns: str, channel: str,
                                        value: Any, meta_value: Any, write: Any) -> None:
    """Thread ids, namespaces and channels are any text (white space, quotes, backslashes,
    emoji...); values and metadata any serialisable data: all come back as they went in."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {channel: value}
    checkpoint["channel_versions"] = {channel: saver.get_next_version(None, None)}
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
    stored = saver.put(config, checkpoint, {"source": "input", "step": -1, "custom": meta_value},
                       checkpoint["channel_versions"])
    saver.put_writes(stored, [(channel, write)], "task-1", "path")
    try:
        found = saver.get_tuple(stored)
        assert found is not None
        assert found.checkpoint["channel_values"] == {channel: value}
        # langgraph strips NUL from top-level metadata strings (get_checkpoint_metadata), as every
        # saver does
        stored_meta = get_checkpoint_metadata({}, {"custom": meta_value})["custom"]
        assert found.metadata["custom"] == stored_meta
        assert found.pending_writes == [("task-1", channel, write)]
        # the metadata filter matches the stored value exactly, in the database
        matched = list(saver.list({"configurable": {"thread_id": thread_id}}, filter={"custom": stored_meta}))
        assert [t.checkpoint["id"] for t in matched] == [checkpoint["id"]]
    finally:
        saver.delete_thread(thread_id)
    assert saver.get_tuple(stored) is None


def test_nul_in_an_id_is_refused_before_writing(saver: FalkorDBSaver) -> None:
    with pytest.raises(InvalidInputError, match="NUL"):
        saver.put({"configurable": {"thread_id": "a\x00b"}}, empty_checkpoint(), {}, {})
    assert list(saver.list(None)) == []


def test_dropping_the_tenant_drops_its_checkpoints(rippl: Rippl, saver: FalkorDBSaver) -> None:
    checkpoint = empty_checkpoint()
    stored = saver.put({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}, checkpoint,
                       {"source": "input", "step": -1}, {})
    assert saver.get_tuple(stored) is not None
    assert saver.graph == rippl.keys.of("checkpoints").graph
    rippl.drop()
    again = FalkorDBSaver(rippl)  # recreates the indexes: the schema marker went with the tenant
    assert again.get_tuple(stored) is None and list(again.list(None)) == []
    again.put({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}, checkpoint, {}, {})
    assert again.get_tuple(stored) is not None
    rows = again._store.run(lambda: (yield LIST_INDEXES))
    indexed = {(row[0], prop) for row in rows for prop in row[1]}
    assert {(index.label, index.prop) for index in SCHEMA.indexes} <= indexed


class Counted(TypedDict):
    log: Annotated[list[str], DeltaChannel(lambda state, writes: [*state, *writes],
                                           snapshot_frequency=3)]
    plain: int


def delta_app(saver: FalkorDBSaver) -> Any:
    def step(state: Counted) -> dict[str, Any]:
        return {"log": f"line {len(state['log'])}", "plain": state.get("plain", 0) + 1}

    builder = StateGraph(Counted)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    return builder.compile(checkpointer=saver)


@pytest.mark.parametrize("runs", [1, 4, 5, 7])
def test_prune_keeps_what_a_delta_channel_is_rebuilt_from(saver: FalkorDBSaver, runs: int) -> None:
    """keep_latest drops every other checkpoint, but not the ancestors (and their writes) a
    DeltaChannel of the newest one replays from: the state read back is the same."""
    app = delta_app(saver)
    config = thread()
    for _ in range(runs):
        app.invoke({"plain": 0}, config)
    before = app.get_state(config).values
    stored = list(saver.list(config))
    saver.prune([config["configurable"]["thread_id"]])
    kept = list(saver.list(config))
    assert app.get_state(config).values == before
    assert len(before["log"]) == runs
    # kept: the newest, then its parents while a channel it counts has not been written in full
    by_id = {t.checkpoint["id"]: t for t in stored}
    expected, needed, current = [], None, stored[0]
    while True:
        expected.append(current.checkpoint["id"])
        counts = set(current.metadata.get("counters_since_delta_snapshot") or ())
        needed = counts if needed is None else needed & counts
        if not needed or current.parent_config is None:
            break
        current = by_id[current.parent_config["configurable"]["checkpoint_id"]]
    assert [t.checkpoint["id"] for t in kept] == expected
    if runs > 3:  # a full snapshot was written (every third update): older steps went
        assert len(kept) < len(stored)
    saver.prune([config["configurable"]["thread_id"]], strategy="delete")
    assert list(saver.list(config)) == []
    with pytest.raises(InvalidInputError, match="strategy"):
        saver.prune(["t"], strategy="keep_some")


def test_reading_the_latest_checkpoint_scans_no_label(saver: FalkorDBSaver) -> None:
    """The newest checkpoint is found through its head by index lookups: the plan never scans
    every checkpoint (which a head-to-checkpoint join in one MATCH made FalkorDB do)."""
    from rippl_langgraph.checkpoint import queries
    from rippl_langgraph.checkpoint.ops import head_key

    saver.put({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}, empty_checkpoint(), {}, {})
    # FalkorDB builds an index in the background: until it is operational the planner scans
    for _ in range(500):
        statuses = saver.memory.redis.execute_command(
            "GRAPH.RO_QUERY", saver.graph, "CALL db.indexes() YIELD status RETURN status")[1]
        if all(row[0] == "OPERATIONAL" for row in statuses):
            break
        time.sleep(0.01)
    for query in (queries.read_latest(head_key("t1", "")),
                  queries.latest_checkpoint_time(head_key("t1", ""))):
        plan = saver.memory.redis.execute_command("GRAPH.EXPLAIN", saver.graph, query.command())
        assert not any("Label Scan" in step for step in plan), plan


def test_a_put_creates_its_nodes_whole_and_a_re_put_overwrites(saver: FalkorDBSaver) -> None:
    """A new checkpoint and its blobs are created with every property in place (not set after
    the create, which re-indexes at a cost growing with the label); putting the same checkpoint
    again overwrites it (one node), and a channel version written again with another value is
    another blob (blobs are content-addressed: a checkpoint that named the first still reads
    what it was written with)."""
    from rippl_core.adapters import Query

    def nodes(label: str) -> list[dict[str, Any]]:
        query = Query(f"MATCH (n:{label}) RETURN keys(n), n.key, n.data", read_only=True)
        rows = saver._store.run(lambda: (yield query))
        return [{"keys": set(row[0]), "key": row[1], "data": row[2]} for row in rows]

    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"log": ["first"]}
    checkpoint["channel_versions"] = {"log": saver.get_next_version(None, None)}
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    stored = saver.put(config, checkpoint, {"source": "input", "step": -1}, checkpoint["channel_versions"])
    [created] = nodes("Checkpoint")
    assert created["keys"] >= {"key", "thread_key", "thread_id", "checkpoint_ns", "checkpoint_id",
                               "type", "data", "meta_type", "meta", "meta_kv", "blob_keys",
                               "taken_at", "recorded_at"}
    assert "parent_id" not in created["keys"] and "run_id" not in created["keys"]  # None: not stored
    [blob] = nodes("CheckpointBlob")
    assert blob["keys"] == {"key", "thread_key", "thread_id", "checkpoint_ns", "channel", "version",
                            "type", "data"}

    checkpoint["channel_values"] = {"log": ["second"]}
    again = saver.put(config, checkpoint, {"source": "loop", "step": 0}, checkpoint["channel_versions"])
    assert again == stored
    [overwritten] = nodes("Checkpoint")
    assert overwritten["key"] == created["key"] and overwritten["data"] == created["data"]
    first, second = sorted(nodes("CheckpointBlob"), key=lambda b: b["key"] != blob["key"])
    assert first == blob and second["data"] != blob["data"]
    found = saver.get_tuple(stored)
    assert found is not None
    assert found.metadata["source"] == "loop" and found.metadata["step"] == 0
    assert found.checkpoint["channel_values"] == {"log": ["second"]}
