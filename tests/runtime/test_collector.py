"""The cyclic garbage collector is held off while a large write is planned, never otherwise: only
from `LARGE` items, enabled again after (an error too), left alone when the application disabled
it, and enabled only when the last of overlapping stretches (threads) ends."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator

import pytest

from rippl_core import AsyncRippl, Rippl
from rippl_core._runtime import collector
from rippl_core._runtime.collector import LARGE, held_off


@pytest.fixture(autouse=True)
def collector_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_a_large_stretch_holds_the_collector_off_and_gives_it_back() -> None:
    with held_off(LARGE):
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), held_off(LARGE):
        raise RuntimeError("planning failed")
    assert gc.isenabled()


def test_a_small_stretch_leaves_the_collector_alone() -> None:
    with held_off(LARGE - 1):
        assert gc.isenabled()


def test_a_collector_the_application_disabled_stays_disabled() -> None:
    gc.disable()
    with held_off(LARGE):
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_overlapping_stretches_enable_it_once_the_last_ends() -> None:
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with held_off(LARGE):
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(10)
    with held_off(LARGE):  # nested in time with the other thread's
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other stretch still runs
    leave.set()
    thread.join(10)
    assert gc.isenabled()
    with held_off(LARGE), held_off(LARGE):  # nested in one thread
        assert not gc.isenabled()
    assert gc.isenabled()


def graph(n: int) -> dict[str, list[dict[str, object]]]:
    return {"sources": [{"id": f"S{i}", "title": f"reading {i}"} for i in range(n)],
            "claims": [{"id": f"C{i}", "text": f"shard {i} is healthy", "sources": [f"S{i}"]}
                       for i in range(n)]}


def test_a_large_load_plans_with_the_collector_held_off_and_a_small_one_without(
        rippl: Rippl) -> None:
    seen: dict[tuple[str, int], bool] = {}

    def progress(stage: str, done: int, total: int) -> None:
        seen[(stage, total)] = gc.isenabled()

    report = rippl.load(graph(LARGE // 2), progress=progress)
    assert len(report.created) == LARGE
    assert seen[("check", LARGE)] is False  # its nodes were checked with the collector off
    assert gc.isenabled()
    rippl.load(graph(3), progress=progress)
    assert seen[("check", 6)] is True
    assert rippl.check(f"C{LARGE // 2 - 1}").allowed


@pytest.mark.asyncio(loop_scope="session")
async def test_an_async_load_gives_the_collector_back_while_it_awaits_the_database(
        arippl: AsyncRippl) -> None:
    load = asyncio.create_task(arippl.load(graph(LARGE // 2)))
    enabled_meanwhile: list[bool] = []
    while not load.done():  # the loop's other tasks run while the load awaits
        enabled_meanwhile.append(gc.isenabled())
        await asyncio.sleep(0)
    assert len((await load).created) == LARGE
    # held off only while a stretch runs (the description parsed in a worker thread is one); the
    # requests to the database are awaited with it enabled, and it is enabled once the load ends
    assert True in enabled_meanwhile
    assert gc.isenabled() and collector._holders == 0
