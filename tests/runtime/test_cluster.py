"""Tenants over a 3-shard Redis Cluster of FalkorDB nodes (real processes on loopback): each tenant's
keys live on one slot, tenants spread over the shards, listing graphs asks every shard, events reach
a subscriber whichever node its url names first, and a handle follows its tenant's slot when the
slot moves to another shard. (The tenancy, review and checkpointer suites also run here: their
modules are marked `on_cluster`.)"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator

import pytest
from redis.crc import key_slot

from rippl_core import AsyncRippl, Rippl, State
from rippl_core.testing import FalkorDBCluster, FalkorDBServer, drop_graph

pytestmark = pytest.mark.cluster

TENANTS = 24


def owner(cluster: FalkorDBCluster, key: str) -> FalkorDBServer:
    """The node whose slot ranges hold `key`."""
    slot = key_slot(key.encode())
    with cluster.nodes[0].client() as client:
        for start, end, primary, *_ in client.execute_command("CLUSTER", "SLOTS"):
            if start <= slot <= end:
                return next(n for n in cluster.nodes if n.port == int(primary[1]))
    raise AssertionError(f"no node serves slot {slot}")


def url_from(cluster: FalkorDBCluster, first: FalkorDBServer) -> str:
    """The cluster url with `first` as the first seed node."""
    ordered = [first, *(n for n in cluster.nodes if n is not first)]
    return "falkordb+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in ordered)


@pytest.fixture
def tenants(falkordb_cluster: FalkorDBCluster) -> Iterator[list[Rippl]]:
    prefix = uuid.uuid4().hex[:6]
    handles = [Rippl.open(url=falkordb_cluster.url, graph=f"{prefix}-tenant-{i}") for i in range(TENANTS)]
    yield handles
    for handle in handles:
        drop_graph(handle)
        handle.close()


def test_each_tenant_lives_on_one_shard_and_tenants_spread_over_all(
        falkordb_cluster: FalkorDBCluster, tenants: list[Rippl]) -> None:
    for handle in tenants:
        handle.add_claim("C", f"claim of {handle.graph}")
        handle.retract("C", reason="r", by="x")
        assert handle.location.replicas == 0  # no replica in this cluster: nothing to wait for
    shards: dict[int, set[str]] = {}
    for node in falkordb_cluster.nodes:
        with node.client() as client:
            for handle in tenants:
                keys = set(client.scan_iter(match=handle.keys.pattern, count=1000))
                if keys:
                    assert keys == {handle.keys.graph, handle.keys.version, handle.keys.schema}
                    shards.setdefault(node.port, set()).add(handle.graph)
    assert sum(len(names) for names in shards.values()) == TENANTS  # each on exactly one node
    assert len(shards) == 3, "the tenants did not spread over the three shards"


def test_listing_graphs_asks_every_shard(falkordb_cluster: FalkorDBCluster,
                                         tenants: list[Rippl]) -> None:
    names = {handle.graph for handle in tenants}
    assert names <= set(Rippl.list_graphs(url=falkordb_cluster.url))
    assert names <= set(asyncio.run(AsyncRippl.list_graphs(url=falkordb_cluster.url)))
    tenants[0].drop()
    assert tenants[0].graph in Rippl.list_graphs(url=falkordb_cluster.url)  # dropped, still empty


def test_events_reach_a_subscriber_whatever_node_its_url_names(
        falkordb_cluster: FalkorDBCluster) -> None:
    graph = f"events-{uuid.uuid4().hex[:6]}"
    with Rippl.open(url=falkordb_cluster.url, graph=graph) as probe:
        home = owner(falkordb_cluster, probe.keys.graph)
    elsewhere = [n for n in falkordb_cluster.nodes if n is not home]
    with Rippl.open(url=url_from(falkordb_cluster, elsewhere[0]), graph=graph) as listener, \
            Rippl.open(url=url_from(falkordb_cluster, elsewhere[1]), graph=graph) as writer, \
            listener.subscribe() as stream:
        try:
            writer.add_claim("C", "observed")
            item = writer.propose_retraction("C", reason="false", by="monitor")
            writer.approve(item.id, by="alice")
            seen = []
            while (event := stream.get(timeout=10)) is not None:
                seen.append(event.type)
                if event.type == "review_approved":
                    break
            assert "review_proposed" in seen and seen[-1] == "review_approved"
        finally:
            drop_graph(writer)


def test_a_handle_follows_its_tenants_slot_to_another_shard(falkordb_cluster: FalkorDBCluster) -> None:
    with Rippl.open(url=falkordb_cluster.url, graph=f"moving-{uuid.uuid4().hex[:6]}") as rippl:
        rippl.load({"sources": [{"id": "S", "title": "s"}],
                    "claims": [{"id": "C", "text": "c", "sources": ["S"]}],
                    "decisions": [{"id": "D", "title": "d", "premises": ["C"]}],
                    "actions": [{"id": "A", "title": "a", "decisions": ["D"]}]})
        assert rippl.check("A").allowed
        source = owner(falkordb_cluster, rippl.keys.graph)
        target = next(n for n in falkordb_cluster.nodes if n is not source)
        move_slot(falkordb_cluster, key_slot(rippl.keys.graph.encode()), source, target)
        assert owner(falkordb_cluster, rippl.keys.graph) is target
        first = rippl.check("A")  # the pooled connection still points at the old shard
        assert first.allowed or "slot" in first.reason
        assert rippl.check("A").allowed  # ... and the next connection asks the cluster again
        rippl.retract("C", reason="false", by="x")
        assert rippl.get("C").state is State.OUT and not rippl.check("A").allowed
        assert rippl.verify_receipts().ok
        drop_graph(rippl)


def move_slot(cluster: FalkorDBCluster, slot: int, source: FalkorDBServer,
              target: FalkorDBServer) -> None:
    """Move a slot and its keys (DUMP/RESTORE through MIGRATE), as redis-cli --cluster reshard."""
    with source.client() as src, target.client() as dst:
        src_id, dst_id = src.execute_command("CLUSTER", "MYID"), dst.execute_command("CLUSTER", "MYID")
        dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
        src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
        while keys := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
            src.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 10000, "KEYS", *keys)
        for node in cluster.nodes:
            with node.client() as client:
                client.execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)


def test_many_tenants_write_concurrently_across_shards(falkordb_cluster: FalkorDBCluster,
                                                       tenants: list[Rippl]) -> None:
    errors: list[BaseException] = []

    def work(handle: Rippl) -> None:
        try:
            for i in range(5):
                handle.add_claim(f"C-{i}", f"{handle.graph} claim {i}")
                handle.retract(f"C-{i}", reason="r", by="x")
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(h,)) for h in tenants]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for handle in tenants:
        assert [r.claim for r in handle.receipts()] == [f"C-{i}" for i in range(5)]
        assert handle.verify_receipts().ok and handle.stats().nodes["Claim"] == 5
