"""Replication: a write Rippl acknowledges is on the replicas it waits for (WAIT on the writing
connection), a write they do not confirm in time is reported as not acknowledged, and a read is
never answered by a replica. Real processes: a FalkorDB primary and a replica on loopback."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from rippl_core import AsyncRippl, ReplicationError, Rippl, State, UnavailableError
from rippl_core.testing import FalkorDBServer, start_falkordb_replica, start_falkordb_server

pytestmark = pytest.mark.cluster

INCIDENT = {"sources": [{"id": "S", "title": "telemetry"}],
            "claims": [{"id": "C1", "text": "one", "sources": ["S"]},
                       {"id": "C2", "text": "two", "sources": ["S"]}],
            "decisions": [{"id": "D1", "title": "d1", "premises": ["C1"]}],
            "actions": [{"id": "A1", "title": "a1", "decisions": ["D1"]}]}


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[FalkorDBServer, FalkorDBServer]]:
    primary = start_falkordb_server(appendonly=True)
    replica = start_falkordb_replica(primary)
    yield primary, replica
    replica.stop()
    primary.stop()


@contextmanager
def frozen(server: FalkorDBServer) -> Iterator[None]:
    """SIGSTOP the process (it keeps its connections but answers nothing), then SIGCONT it."""
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server.process.pid, signal.SIGCONT)


def test_an_acknowledged_write_is_already_on_the_replica(pair: tuple[FalkorDBServer, ...]) -> None:
    primary, replica = pair
    with Rippl.open(url=primary.url, graph=f"r-{uuid.uuid4().hex[:8]}") as rippl:
        assert rippl.location.replicas == 1  # the default, since the primary has a replica
        rippl.load(INCIDENT)
        for _ in range(20):
            rippl.retract("C1", reason="false", by="x")
            on_replica = replica.client().execute_command(
                "GRAPH.RO_QUERY", rippl.keys.graph, "MATCH (c:Claim {id: 'C1'}) RETURN c.state")
            assert on_replica[1] == [["OUT"]]
            rippl.reinstate("C1", reason="true after all", by="x")


def test_a_write_no_replica_confirms_in_time_is_not_acknowledged(
        pair: tuple[FalkorDBServer, ...]) -> None:
    primary, replica = pair
    graph = f"r-{uuid.uuid4().hex[:8]}"
    with Rippl.open(url=f"{primary.url}?replica_timeout_ms=300", graph=graph) as rippl, \
            Rippl.open(url=f"{primary.url}?replicas=0", graph=graph) as unreplicated:
        rippl.load(INCIDENT)
        with frozen(replica):
            with pytest.raises(ReplicationError, match="0 of 1 replica") as refused:
                rippl.retract("C1", reason="false", by="x")
            assert "applied on the primary" in str(refused.value)
            assert isinstance(refused.value, UnavailableError)
            assert not rippl.check("A1").allowed  # applied (not acknowledged); reads still work
            unreplicated.retract("C2", reason="no wait asked for", by="x")
            with pytest.raises(ReplicationError):
                asyncio.run(_async_retract(primary, graph))
        rippl.reinstate("C1", reason="true after all", by="x")  # acknowledged again
        assert rippl.get("C1").state is State.IN and len(rippl.receipts()) == 4  # all applied
        assert rippl.verify_receipts().ok


async def _async_retract(primary: FalkorDBServer, graph: str) -> None:
    async with await AsyncRippl.open(url=f"{primary.url}?replica_timeout_ms=300", graph=graph) as handle:
        await handle.reinstate("C2", reason="async", by="x")


def test_a_check_answered_by_a_replica_is_denied(pair: tuple[FalkorDBServer, ...]) -> None:
    primary, replica = pair
    graph = f"r-{uuid.uuid4().hex[:8]}"
    with Rippl.open(url=primary.url, graph=graph) as rippl:
        rippl.load(INCIDENT)
        rippl.retract("C1", reason="false", by="x")
    with Rippl.open(url=replica.url, graph=graph) as stale:  # a replica named by mistake
        verdict = stale.check("A1")
        assert not verdict.allowed and "not the primary" in verdict.reason
        assert not stale.check("A1", unknown="allow").allowed
        with pytest.raises(UnavailableError, match=r"READONLY|replica"):
            stale.add_claim("X", "never written")
