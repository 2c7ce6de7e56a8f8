"""A graph stored under the layout before tagged keys (graph key = the graph name, `rippl:<name>:*`
beside it, LangGraph checkpoints in graph `rippl:<name>:checkpoints`) is moved to its tagged keys
when it is first opened: nothing is lost, a client of the old layout fails instead of writing to
an empty graph, and nothing that is not Rippl's (or that could be another tenant's) is touched.
Both backends."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from helpers_core import snapshot

from rippl_core import Rippl, State
from rippl_core.adapters import Commit, Op, Query, Schema, StateGraph
from rippl_core.testing import drop_graph

CHECKPOINTS = Schema("1", unique_ids=("Checkpoint",))


def _checkpoint() -> Op[None]:
    yield Commit([Query("CREATE (:Checkpoint {id: 'cp-1'})")])


def _checkpoints() -> Op[list[str]]:
    rows = yield Query("MATCH (c:Checkpoint) RETURN c.id", read_only=True)
    return [row[0] for row in rows]


def make_legacy(backend: dict[str, object], name: str) -> tuple[object, ...]:
    """Write a tenant with today's code, then rename its keys to the legacy layout (the names
    Rippl used before tagged keys); returns what a reader should find after the migration."""
    with Rippl.open(graph=name, **backend) as handle:
        handle.load({"sources": [{"id": "S", "title": "s"}],
                     "claims": [{"id": "C", "text": "c", "sources": ["S"]}],
                     "decisions": [{"id": "D", "title": "d", "premises": ["C"]}],
                     "actions": [{"id": "A", "title": "a", "decisions": ["D"]}]})
        review = handle.propose_retraction("C", reason="false", by="monitor")
        handle.approve(review.id, by="alice")
        store = StateGraph(handle, CHECKPOINTS, companion="checkpoints")
        store.setup()
        store.run(_checkpoint, write=True)
        expected = (snapshot(handle).nodes, [r.hash for r in handle.receipts()])
        keys, cp = handle.keys, handle.keys.of("checkpoints")
        legacy = {keys.graph: name, keys.schema: f"rippl:{name}:schema",
                  keys.version: f"rippl:{name}:version", cp.graph: f"rippl:{name}:checkpoints",
                  cp.schema: f"rippl:{name}:checkpoints:schema",
                  cp.version: f"rippl:rippl:{name}:checkpoints:version"}
        for new, old in legacy.items():
            if handle.redis.exists(old):  # a legacy key that is also a tagged tenant's key now
                handle.redis.delete(new)
            else:
                handle.redis.rename(new, old)
    return expected


@pytest.fixture
def name(backend: dict[str, object]) -> Iterator[str]:
    graph = f"legacy-{uuid.uuid4().hex[:8]}"
    yield graph
    with Rippl.open(graph=graph, **backend) as handle:
        drop_graph(handle)
        handle.redis.delete(graph, f"rippl:{graph}:checkpoints")


def test_a_legacy_graph_is_moved_on_first_open_and_nothing_is_lost(
        backend: dict[str, object], name: str) -> None:
    nodes, receipts = make_legacy(backend, name)
    with Rippl.open(graph=name, **backend) as handle:
        assert snapshot(handle).nodes == nodes
        assert [r.hash for r in handle.receipts()] == receipts and handle.verify_receipts().ok
        assert not handle.check("A").allowed and handle.get("C").state is State.OUT
        cps = StateGraph(handle, CHECKPOINTS, companion="checkpoints")
        cps.setup()
        assert cps.run(_checkpoints) == ["cp-1"]
        handle.add_claim("NEW", "written after the move")  # the version counter works
        raw = handle.redis
        assert raw.type(name) == "string" and "upgrade this client" in raw.get(name)
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):  # a client of the old layout
            raw.execute_command("GRAPH.QUERY", name, "MATCH (n) RETURN n")
        assert raw.type(f"rippl:{name}:checkpoints") == "string"
        gone = [f"rippl:{name}:schema", f"rippl:{name}:version",
                f"rippl:{name}:checkpoints:schema", f"rippl:rippl:{name}:checkpoints:version"]
        assert raw.exists(*gone) == 0
    with Rippl.open(graph=name, **backend) as again:  # a second open finds it where it moved
        assert snapshot(again).nodes.keys() == {*nodes, "NEW"}


def test_a_graph_rippl_did_not_create_is_left_alone(backend: dict[str, object], name: str) -> None:
    with Rippl.open(graph="scratch", **backend) as any_handle:
        raw = any_handle.redis
        raw.execute_command("GRAPH.QUERY", name, "CREATE (:Foreign {x: 1})")  # no Rippl marker
    with Rippl.open(graph=name, **backend) as handle:
        assert snapshot(handle).nodes == {}
        rows = raw.execute_command("GRAPH.RO_QUERY", name, "MATCH (n:Foreign) RETURN n.x")
        assert rows[1] == [[1]]


def test_a_legacy_name_shaped_like_a_tagged_key_never_takes_another_tenants_keys(
        backend: dict[str, object], name: str) -> None:
    """Legacy graph `{x}` kept its counter at `rippl:{x}:version`: the key tenant `x` uses now."""
    with Rippl.open(graph=name, **backend) as tenant:
        tenant.add_claim("C", "tenant x's claim")
        tenant.retract("C", reason="r", by="x")
        before = (snapshot(tenant), tenant.redis.get(tenant.keys.version), tenant.receipts())
    odd = "{" + name + "}"
    make_legacy(backend, odd)
    with Rippl.open(graph=odd, **backend) as moved, Rippl.open(graph=name, **backend) as tenant:
        assert "C" in snapshot(moved).nodes and not moved.check("A").allowed
        assert (snapshot(tenant), tenant.redis.get(tenant.keys.version), tenant.receipts()) == before
        drop_graph(moved)
        moved.redis.delete(odd)
