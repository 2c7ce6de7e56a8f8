"""Opening graphs at once never crashes the server: FalkorDB (4.22) segfaults when two
`GRAPH.CONSTRAINT CREATE` run at the same time, even on two different graphs (two threads each
opening fresh graphs crashed it within a few dozen opens), so Rippl creates constraints under one
lock per database (`SCHEMA_LOCK`), which it waits for, releases, and never takes from another."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from redis.crc import key_slot

from rippl_core import AsyncRippl, Rippl
from rippl_core._runtime import schema
from rippl_core.client import GRAPH_SCHEMA
from rippl_core.errors import UnavailableError
from rippl_core.testing import FalkorDBServer, start_falkordb_cluster, start_falkordb_server


@pytest.fixture
def server() -> Iterator[FalkorDBServer]:
    """A server of this test's own: a crash must not take the session's server with it."""
    started = start_falkordb_server()
    yield started
    started.stop()


def open_at_once(url: str, *, threads: int, each: int) -> list[BaseException]:
    """`threads` threads each opening `each` fresh graphs (and writing a claim) at once; what
    they raised."""
    failures: list[BaseException] = []

    def open_many() -> None:
        try:
            for _ in range(each):
                with Rippl.open(graph=f"t-{uuid.uuid4().hex[:12]}", url=url) as rippl:
                    rippl.add_claim(None, "shard 09 is healthy")
        except BaseException as exc:  # the caller reports it, with the servers' logs
            failures.append(exc)

    started = [threading.Thread(target=open_many) for _ in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return failures


def test_threads_opening_fresh_graphs_at_once_leave_the_server_up(server: FalkorDBServer) -> None:
    failures = open_at_once(server.url, threads=3, each=60)
    assert server.alive, server.log_tail()
    assert not failures
    with server.client() as client:
        assert client.exists(schema.SCHEMA_LOCK) == 0  # every holder released it
        graphs = [key for key in client.scan_iter("rippl:*:graph") if client.type(key) == "graphdata"]
    assert len(graphs) == 180


def test_a_held_lock_is_waited_for_and_the_open_completes_after_release(
        server: FalkorDBServer) -> None:
    with server.client() as client:
        client.set(schema.SCHEMA_LOCK, "someone-else", px=schema.LOCK_MS)
        threading.Timer(0.3, client.delete, [schema.SCHEMA_LOCK]).start()
        started = time.monotonic()
        with Rippl.open(graph="waits", url=server.url) as rippl:
            waited = time.monotonic() - started
            assert rippl.add_claim("C1", "created after the lock was released").id == "C1"
        assert waited >= 0.3  # it did wait: ordering, not speed
        rows = client.execute_command("GRAPH.RO_QUERY", "rippl:{waits}:graph",
                                      "CALL db.constraints() YIELD label RETURN label ORDER BY label")
    assert [row[0] for row in rows[1]] == sorted(GRAPH_SCHEMA.unique_ids)  # every constraint


async def test_the_async_handle_waits_for_the_lock_too(server: FalkorDBServer) -> None:
    with server.client() as client:
        client.set(schema.SCHEMA_LOCK, "someone-else", px=schema.LOCK_MS)
        opening = asyncio.ensure_future(AsyncRippl.open(graph="waits-async", url=server.url))
        await asyncio.sleep(0.3)
        assert not opening.done()  # waiting, without blocking the event loop
        client.delete(schema.SCHEMA_LOCK)
        handle = await opening
        await handle.close()
        assert client.get("rippl:{waits-async}:schema") is not None


def test_a_lock_never_released_fails_the_open_with_a_clear_error_and_is_not_taken(
        server: FalkorDBServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema, "LOCK_MS", 200)
    with server.client() as client:
        client.set(schema.SCHEMA_LOCK, "stuck", px=60_000)
        with pytest.raises(UnavailableError, match="schema lock"):
            Rippl.open(graph="never", url=server.url)
        assert client.get(schema.SCHEMA_LOCK) == "stuck"  # another's lock is never deleted
        assert client.get("rippl:{never}:schema") is None  # and the schema is not marked done


def test_a_failing_constraint_releases_the_lock(server: FalkorDBServer) -> None:
    with server.client() as client:
        client.set("rippl:{broken}:graph", "not a graph")  # WRONGTYPE for every graph command
        with pytest.raises(Exception):  # noqa: B017 - whichever typed error: the lock is the point
            Rippl.open(graph="broken", url=server.url)
        assert client.exists(schema.SCHEMA_LOCK) == 0


@pytest.mark.cluster
def test_in_a_cluster_each_shard_serialises_its_own_constraints() -> None:
    cluster = start_falkordb_cluster(shards=3)
    try:
        with Rippl.open(graph="probe", url=cluster.url) as rippl:
            key = rippl._driver.run(schema.lock_key)
        assert key.startswith(f"{schema.SCHEMA_LOCK}:{{")
        # the lock is in a slot of the shard that serves the tenant's slot (no MOVED reply)
        tenant_node = {node.port for node in cluster.nodes
                       if _owns(node, key_slot(b"rippl:{probe}:graph"))}
        lock_node = {node.port for node in cluster.nodes if _owns(node, key_slot(key.encode()))}
        assert tenant_node == lock_node

        failures = open_at_once(cluster.url, threads=3, each=30)
        assert all(node.alive for node in cluster.nodes), [n.log_tail() for n in cluster.nodes]
        assert not failures
    finally:
        cluster.stop()


def _owns(node: FalkorDBServer, slot: int) -> bool:
    with node.client() as client:
        me = next(line.split() for line in client.execute_command("CLUSTER", "NODES").splitlines()
                  if "myself" in line)
    return any(int(part.split("-")[0]) <= slot <= int(part.split("-")[-1])
               for part in me[8:] if not part.startswith("["))
