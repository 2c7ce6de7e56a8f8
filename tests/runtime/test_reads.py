"""Reads go out as one MULTI/EXEC: an error inside the transaction is raised (typed) and leaves the
connection in step for the next read, and a connection the server dropped is replaced, so a check
survives it. Both backends, sync and async."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from rippl_core import AsyncRippl, DatabaseError, Rippl
from rippl_core._runtime.op import Batch
from rippl_core._runtime.wire import Query

GOOD = Query("RETURN 1", read_only=True)
WRITES = Query("CREATE (:Scratch)", read_only=True)  # refused by GRAPH.RO_QUERY at EXEC
BROKEN = Query("RETURN (", read_only=True)


def small(rippl: Rippl) -> None:
    rippl.add_source("S1", "dashboard")
    rippl.add_claim("C1", "shard 09 is healthy", sources=["S1"])




def test_an_error_inside_a_read_is_raised_and_the_next_read_works(
        open_rippl: Callable[..., Rippl]) -> None:
    rippl = open_rippl()
    small(rippl)
    for bad in (WRITES, BROKEN, Batch(GOOD, BROKEN)):
        with pytest.raises(DatabaseError):
            rippl._driver.query(bad)
        assert rippl._driver.query(GOOD) == [(1,)]
        assert rippl.check("C1").allowed


def test_a_dropped_connection_is_replaced_once(open_rippl: Callable[..., Rippl]) -> None:
    rippl = open_rippl()
    small(rippl)
    assert rippl.check("C1").allowed
    pooled = rippl.redis.client_id()  # the connection the handle's reads go out on
    killer = open_rippl(graph=rippl.graph)
    killer.redis.execute_command("CLIENT", "KILL", "ID", pooled)
    assert rippl.check("C1").allowed
    assert rippl._driver.query(Batch(GOOD, GOOD)) == [[(1,)], [(1,)]]


def test_async_reads_behave_the_same(backend: dict[str, Any]) -> None:
    async def scenario() -> None:
        async with await AsyncRippl.open(graph=f"t-{uuid.uuid4().hex[:12]}", **backend) as rippl:
            await rippl.add_source("S1", "dashboard")
            await rippl.add_claim("C1", "shard 09 is healthy", sources=["S1"])
            for bad in (WRITES, BROKEN, Batch(GOOD, BROKEN)):
                with pytest.raises(DatabaseError):
                    await rippl._driver.query(bad)
                assert await rippl._driver.query(GOOD) == [(1,)]
            pooled = await rippl.redis.client_id()
            await rippl.redis.execute_command("CLIENT", "KILL", "ID", pooled)  # itself
            assert (await rippl.check("C1")).allowed
            await rippl.drop()

    asyncio.run(scenario())
