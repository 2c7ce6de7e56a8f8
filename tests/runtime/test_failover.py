"""Failover with Sentinel, with real processes on loopback: a FalkorDB primary, a replica and three
Sentinels. Writers and guards run through `falkordb+sentinel://`; the primary is SIGKILLed in the
middle of the stream. Every acknowledged write survives, the receipt chain stays one linear chain,
guards deny during the gap (saying a failover may be in progress) and allow again by themselves
once Sentinel has promoted the replica; nothing is restarted on the client side."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from rippl_core import AsyncRippl, Rippl, RipplError, State, ToolCall, UnavailableError
from rippl_core.testing import ReplicaSet, start_replica_set

pytestmark = pytest.mark.cluster

CLAIMS = 400
STABLE = ToolCall(name="deploy", args={"service": "stable"})


@pytest.fixture(scope="module")
def replica_set() -> Iterator[ReplicaSet]:
    deployment = start_replica_set(replicas=1, sentinels=3)
    yield deployment
    deployment.stop()


@dataclass
class Run:
    """What the clients saw: acknowledged retractions, failed writes, and guard verdicts."""

    acked: list[int] = field(default_factory=list)
    failed: list[Exception] = field(default_factory=list)
    verdicts: list[tuple[float, bool, str]] = field(default_factory=list)
    async_verdicts: list[tuple[float, bool, str]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


def build(url: str, graph: str) -> None:
    spec = {"sources": [{"id": "S", "title": "telemetry"}],
            "claims": [{"id": f"C-{i}", "text": f"claim {i}", "sources": ["S"]}
                       for i in [*range(CLAIMS), "stable"]],
            "decisions": [{"id": f"D-{i}", "title": f"d {i}", "premises": [f"C-{i}"]}
                          for i in [*range(CLAIMS), "stable"]],
            "actions": [{"id": f"A-{i}", "title": f"a {i}", "decisions": [f"D-{i}"]}
                        for i in range(CLAIMS)]
                       + [{"id": "A-stable", "title": "deploy", "decisions": ["D-stable"],
                           "tool": STABLE.name, "args": STABLE.args}]}
    with Rippl.open(url=url, graph=graph) as rippl:
        rippl.load(spec)


def writer(url: str, graph: str, run: Run) -> None:
    """Retract C-0, C-1, ... one by one; a retraction that returned is acknowledged."""
    with Rippl.open(url=url, graph=graph) as rippl:
        for i in range(CLAIMS):
            if run.stop.is_set():
                return
            try:
                rippl.retract(f"C-{i}", reason="found false", by="monitor")
                run.acked.append(i)
            except RipplError as exc:
                run.failed.append(exc)
                time.sleep(0.02)


def guard(url: str, graph: str, run: Run) -> None:
    with Rippl.open(url=url, graph=graph) as rippl:
        while not run.stop.is_set():
            verdict = rippl.check(STABLE)
            run.verdicts.append((time.monotonic(), verdict.allowed, verdict.reason))
            time.sleep(0.005)


def async_guard(url: str, graph: str, run: Run) -> None:
    async def loop() -> None:
        async with await AsyncRippl.open(url=url, graph=graph) as rippl:
            while not run.stop.is_set():
                verdict = await rippl.check(STABLE)
                run.async_verdicts.append((time.monotonic(), verdict.allowed, verdict.reason))
                await asyncio.sleep(0.005)

    asyncio.run(loop())


def wait_until(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_killing_the_primary_loses_no_acknowledged_write(replica_set: ReplicaSet) -> None:
    url, graph = f"{replica_set.url}?replica_timeout_ms=2000", f"failover-{uuid.uuid4().hex[:8]}"
    build(url, graph)
    run = Run()
    threads = [threading.Thread(target=target, args=(url, graph, run))
               for target in (writer, guard, async_guard)]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: len(run.acked) >= 40 and len(run.async_verdicts) >= 5, 60, "writes")
        old = replica_set.primary()
        killed_at, acked_before = time.monotonic(), len(run.acked)
        old.kill()
        replica_set.wait_for_failover(old)
        replica_set.rejoin(old)  # the old primary comes back as a replica: writes acknowledge again
        wait_until(lambda: len(run.acked) >= acked_before + 40, 60, "writes after the failover")
        wait_until(lambda: run.async_verdicts[-1][1] and run.verdicts[-1][1], 30, "allowed checks")
    finally:
        run.stop.set()
        for thread in threads:
            thread.join(timeout=60)

    with Rippl.open(url=url, graph=graph) as rippl:
        for i in run.acked:  # every acknowledged retraction survived, and still vetoes
            assert rippl.get(f"C-{i}").state is State.OUT, i
            assert not rippl.check(f"A-{i}").allowed, i
        receipts = rippl.receipts()
        assert rippl.verify_receipts().ok  # one linear chain: no fork of the head
        assert [r.seq for r in receipts] == list(range(1, len(receipts) + 1))
        assert {r.claim for r in receipts} >= {f"C-{i}" for i in run.acked}
        assert rippl.check(STABLE).allowed

    assert run.failed and all(isinstance(exc, UnavailableError) for exc in run.failed)
    for verdicts in (run.verdicts, run.async_verdicts):
        during = [(allowed, reason) for at, allowed, reason in verdicts if at > killed_at]
        denied = [reason for allowed, reason in during if not allowed]
        assert denied, "no check was denied during the failover"
        assert all("failing over" in reason for reason in denied), denied[:3]
        assert during[-1][0], "checks did not recover by themselves"
        before = [reason for at, allowed, reason in verdicts if at < killed_at and not allowed]
        assert not before, before[:3]
