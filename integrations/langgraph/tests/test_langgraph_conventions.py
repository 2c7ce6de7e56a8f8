"""What LangGraph users expect from a checkpointer and a store, as with langgraph-checkpoint-sqlite
and -postgres: `from_conn_string(...)` context managers that open and close their own connection,
and an explicit, idempotent `setup()`."""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

import psutil
import pytest
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph_helpers import thread
from rippl_langgraph import AsyncFalkorDBSaver, FalkorDBSaver, RipplStore

from rippl_core import InvalidInputError, Rippl


class Count(TypedDict):
    count: int


def counter(checkpointer: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(Count)
    builder.add_node("bump", lambda state: {"count": state["count"] + 1})
    builder.add_edge(START, "bump")
    return builder.compile(checkpointer=checkpointer)


def conn_string(backend: dict[str, object]) -> str:
    return str(backend["url"]) if "url" in backend else str(backend["path"])


def unique() -> str:
    return f"cs-{uuid.uuid4().hex[:10]}"


def test_saver_from_conn_string_persists_across_connections(backend: dict[str, object]) -> None:
    graph = unique()
    with FalkorDBSaver.from_conn_string(conn_string(backend), graph=graph) as saver:
        saver.setup()
        saver.setup()  # idempotent
        assert counter(saver).invoke({"count": 1}, thread()) == {"count": 2}
    with FalkorDBSaver.from_conn_string(conn_string(backend), graph=graph) as again:
        assert counter(again).get_state(thread()).values == {"count": 2}
        again.drop()
        again.memory.drop()


@pytest.mark.asyncio(loop_scope="session")
async def test_async_saver_from_conn_string_persists_across_connections(
        backend: dict[str, object]) -> None:
    graph = unique()
    async with AsyncFalkorDBSaver.from_conn_string(conn_string(backend), graph=graph) as saver:
        await saver.setup()
        await saver.setup()
        assert await counter(saver).ainvoke({"count": 40}, thread()) == {"count": 41}
    async with AsyncFalkorDBSaver.from_conn_string(conn_string(backend), graph=graph) as again:
        assert (await counter(again).aget_state(thread())).values == {"count": 41}
        await again.adrop()
        await again.memory.drop()


def test_memory_conn_string_is_a_throwaway_embedded_database() -> None:
    with FalkorDBSaver.from_conn_string(":memory:") as saver:
        assert counter(saver).invoke({"count": 0}, thread()) == {"count": 1}
        assert saver.memory._server is not None
        server, folder = psutil.Process(saver.memory._server.pid), saver.memory.location.path
        assert folder is not None and folder.parent.is_dir()
    server.wait(timeout=60)  # the embedded server stopped, then its folder was deleted
    assert not folder.parent.exists()
    with FalkorDBSaver.from_conn_string(":memory:") as fresh:  # and nothing carried over
        assert counter(fresh).get_state(thread()).values == {}


def test_store_from_conn_string_owns_its_handle(backend: dict[str, object]) -> None:
    graph = unique()
    with RipplStore.from_conn_string(conn_string(backend), graph=graph) as store:
        store.setup()
        store.put(("agent-1", "shards"), "09-health", {"text": "Shard 09 is healthy"})
        assert isinstance(store.memory, Rippl)
    with RipplStore.from_conn_string(conn_string(backend), graph=graph) as again:
        item = again.get(("agent-1", "shards"), "09-health")
        assert item is not None and item.value["text"] == "Shard 09 is healthy"
        assert isinstance(again.memory, Rippl)
        again.memory.drop()


@pytest.mark.parametrize("bad", ["", 7, None])
def test_a_bad_conn_string_is_refused(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match=":memory:"), FalkorDBSaver.from_conn_string(bad):
        pass
