"""Live events: every status change and review decision is published on the graph's channel, seen
live by a subscriber in another process, by the sync stream and by the async stream. Both backends."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rippl_core import AsyncRippl, Rippl, UnavailableError
from rippl_core.causal.relabel import CREATED_EVENTS
from rippl_core.models import Event
from rippl_core.review.events import EventStream
from rippl_core.testing import start_falkordb_server

pytestmark = pytest.mark.on_cluster  # also on a 3-shard cluster, in the `cluster` step

ROOT = Path(__file__).parents[2]
CLM_001_WAVE = {"ACT-001", "ACT-003", "ACT-004", "ACT-005", "ACT-006", "ACT-007", "ACT-008", "ACT-009",
                "ACT-010", "ACT-011", "ACT-021", "CLM-007", "DEC-001", "DEC-003", "DEC-005", "DEC-006",
                "DEC-007"}

SUBSCRIBER = """
import json, sys
from rippl_core import Rippl
options, graph, until = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
with Rippl.open(graph=graph, **options) as handle, handle.subscribe() as stream:
    print("ready", flush=True)
    while True:
        event = stream.get(timeout=60)
        if event is None:
            print("timeout", flush=True)
            break
        print(event.model_dump_json(), flush=True)
        if event.type == until:
            break
"""


def wait_for_subscribers(handle: Rippl, count: int = 1) -> None:
    channel = handle.keys.events
    deadline = time.monotonic() + 30
    while dict(handle.redis.pubsub_shardnumsub(channel)).get(channel, 0) < count:
        assert time.monotonic() < deadline, "the subscriber never subscribed"
        time.sleep(0.01)


def collect(stream: EventStream, until: str) -> list[Event]:
    events: list[Event] = []
    while True:
        event = stream.get(timeout=30)
        assert event is not None, f"no {until} event; got {[e.type for e in events]}"
        events.append(event)
        if event.type == until:
            return events


def test_another_process_sees_a_propose_and_approve_live(incident: Rippl, backend: dict[str, object]) -> None:
    options = {k: str(v) for k, v in backend.items()}
    process = subprocess.Popen(
        [sys.executable, "-c", SUBSCRIBER, json.dumps(options), incident.graph, "review_approved"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        wait_for_subscribers(incident)
        item = incident.propose_retraction("CLM-001", reason="disk errors on shard 09", by="monitor")
        receipt = incident.approve(item.id, by="alice")
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    events = [Event.model_validate_json(line) for line in out.splitlines() if line.startswith("{")]
    types = [e.type for e in events]
    assert "timeout" not in out
    proposed, approved = types.index("review_proposed"), types.index("review_approved")
    at_risk = [e for e in events[:proposed] if e.type == "node_at_risk"]
    invalidated = [e for e in events[proposed + 1:approved] if e.type == "node_invalidated"]
    assert len(events) == len(at_risk) + len(invalidated) + 2
    assert {e.node for e in at_risk} == {"CLM-001", *CLM_001_WAVE}
    assert all((e.before, e.after, e.review, e.cause) == ("IN", "AT_RISK", item.id, "propose")
               for e in at_risk)
    assert {e.node for e in invalidated} == {"CLM-001", *CLM_001_WAVE}
    assert all((e.before, e.after, e.review) == ("AT_RISK", "OUT", item.id) for e in invalidated)
    assert {e.node for e in invalidated} == {a["id"] for a in receipt.body["affected"]}
    review_events = [events[proposed], events[approved]]
    assert [(e.review, e.claim) for e in review_events] == [(item.id, "CLM-001")] * 2
    assert [e.by for e in review_events] == ["monitor", "alice"]
    assert all(e.graph == incident.graph and e.at is not None for e in events)
    kinds = {e.node: e.kind for e in at_risk}
    assert kinds["ACT-001"] == "Action" and kinds["DEC-001"] == "Decision" and kinds["CLM-001"] == "Claim"


def test_the_sync_stream_follows_every_kind_of_change(incident: Rippl) -> None:
    with incident.subscribe() as stream:
        wave = incident.retract("CLM-002", reason="stale", by="telemetry")
        events = [stream.get(timeout=30) for _ in wave.transitions]
        assert {(e.node, e.type) for e in events if e} == \
            {(t.id, "node_invalidated") for t in wave.transitions}
        back = incident.reinstate("CLM-002", reason="fresh", by="oncall")
        events = [stream.get(timeout=30) for _ in back.transitions]
        assert {(e.node, e.type) for e in events if e} == {(t.id, "node_restored") for t in back.transitions}
        item = incident.propose_retraction("SRC-001", reason="dashboard frozen", by="monitor")
        proposed = collect(stream, "review_proposed")
        assert {e.node for e in proposed if e.type == "node_at_risk"} == {"SRC-001", "CLM-001", *CLM_001_WAVE}
        incident.reject(item.id, by="bob")
        rejected = collect(stream, "review_rejected")
        assert {(e.node, e.before, e.after) for e in rejected if e.type == "node_restored"} == \
            {(n, "AT_RISK", "IN") for n in {"SRC-001", "CLM-001", *CLM_001_WAVE}}
        assert rejected[-1].by == "bob" and rejected[-1].review == item.id
        # A refused decision publishes nothing: the next event is the next real change.
        with pytest.raises(Exception):  # noqa: B017 - any refusal
            incident.reject(item.id, by="bob")
        incident.check("ACT-001")  # reads publish nothing either
        incident.retract("CLM-022", reason="next", by="x")
        assert stream.get(timeout=30).node == "CLM-022"  # type: ignore[union-attr]


def test_justify_and_add_publish_the_changes_they_cause(rippl: Rippl) -> None:
    rippl.add_claim("C1", "one")
    rippl.add_claim("C2", "two")
    rippl.add_decision("D", "d", premises=["C1"])
    rippl.add_action("A", "a", decisions=["D"])
    rippl.retract("C1", reason="wrong", by="x")
    with rippl.subscribe() as stream:
        rippl.add_claim("C3", "no change to anyone")  # announced as created, nothing else moves
        rippl.add_decision("D2", "d2", premises=["C1"])  # created OUT: it rests on a retraction
        rippl.justify("D", ["C2"])
        events = [stream.get(timeout=30) for _ in range(4)]
        assert [(e.node, e.type, e.kind, e.before, e.after, e.cause) for e in events[:2] if e] == [
            ("C3", "node_created", "Claim", None, "IN", "add"),
            ("D2", "node_created", "Decision", None, "OUT", "add")]
        assert {(e.node, e.type, e.cause) for e in events[2:] if e} == \
            {("D", "node_restored", "justify"), ("A", "node_restored", "justify")}


def test_a_load_announces_its_nodes_one_by_one_or_as_a_count(rippl: Rippl) -> None:
    small = {"claims": [{"id": f"C{i}", "text": f"claim {i}"} for i in range(3)]}
    big = {"claims": [{"id": f"B{i}", "text": f"bulk {i}"} for i in range(CREATED_EVENTS + 1)]}
    with rippl.subscribe() as stream:
        rippl.load(small)
        created = [stream.get(timeout=30) for _ in range(3)]
        assert [(e.node, e.type, e.cause) for e in created if e] == [
            (f"C{i}", "node_created", "load") for i in range(3)]
        rippl.load(big)
        bulk = stream.get(timeout=30)
        assert bulk is not None and (bulk.type, bulk.node, bulk.count) == (
            "node_created", None, CREATED_EVENTS + 1)
        rippl.retract("C0", reason="next", by="x")
        after = stream.get(timeout=30)  # one event for the bulk load, then the next change
        assert after is not None and (after.node, after.type) == ("C0", "node_invalidated")


def test_streams_are_per_graph_and_live_only(open_rippl: object) -> None:
    a = open_rippl()  # type: ignore[operator]
    b = open_rippl()  # type: ignore[operator]
    for handle in (a, b):
        handle.add_claim("C", "same id in both graphs")
        handle.add_decision("D", "d", premises=["C"])
    a.retract("C", reason="before anyone listened", by="x")
    with a.subscribe() as on_a, b.subscribe() as on_b:
        b.retract("C", reason="only in b", by="x")
        seen_b = [on_b.get(timeout=30), on_b.get(timeout=30)]
        assert {e.node for e in seen_b if e} == {"C", "D"} and all(e.graph == b.graph for e in seen_b if e)
        a.reinstate("C", reason="back in a", by="x")
        first = on_a.get(timeout=30)
        assert first is not None and first.type == "node_restored"  # not b's, not the old retraction
        assert first.graph == a.graph


@pytest.mark.asyncio(loop_scope="session")
async def test_async_subscribe(incident: Rippl, arippl: AsyncRippl) -> None:
    stream = await arippl.subscribe()
    try:
        item = await arippl.propose_retraction("CLM-001", reason="disk errors", by="monitor")
        seen = []
        while not seen or seen[-1].type != "review_proposed":
            event = await stream.get(timeout=30)
            assert event is not None
            seen.append(event)
        assert {e.node for e in seen if e.type == "node_at_risk"} == {"CLM-001", *CLM_001_WAVE}
        await arippl.reject(item.id, by="bob")
        iterator = stream.__aiter__()
        restored = []
        while True:
            event = await asyncio.wait_for(anext(iterator), timeout=30)
            if event.type == "review_rejected":
                break
            restored.append(event)
        assert {e.node for e in restored} == {"CLM-001", *CLM_001_WAVE}
        assert all(e.type == "node_restored" for e in restored)
    finally:
        await stream.close()
    async with await arippl.subscribe() as again:
        incident.retract("CLM-022", reason="sync write, async reader", by="x")
        event = await again.get(timeout=30)
        assert event is not None and event.node == "CLM-022" and event.type == "node_invalidated"


def test_belief_writes_publish_events(rippl: Rippl) -> None:
    rippl.add_source("S1", "dashboard")
    rippl.add_source("S2", "ticket")
    rippl.add_claim("C1", "cache misconfiguration", sources=["S1"])
    rippl.add_claim("C2", "pool exhaustion", sources=["S2"])
    with rippl.subscribe() as stream:
        rippl.believe("agent-1", "C1", topic="outage", valid_from="2026-10-04T09:00:00Z",
                      evidence=["S1"])
        recorded = stream.get(timeout=30)
        assert recorded is not None and recorded.type == "belief_recorded"
        assert (recorded.agent, recorded.topic, recorded.claim, recorded.graph) == \
            ("agent-1", "outage", "C1", rippl.graph)
        assert recorded.valid_from is not None and recorded.valid_from.isoformat() == \
            "2026-10-04T09:00:00+00:00"
        assert recorded.valid_to is None and recorded.at is not None
        # believing the same thing again writes nothing, so publishes nothing
        rippl.believe("agent-1", "C1", topic="outage", valid_from="2026-10-04T09:00:00Z",
                      evidence=["S1"])
        assert stream.get(timeout=0.3) is None
        rippl.revise("agent-1", "outage", "C2", valid_from="2026-10-05T00:00:00Z",
                     valid_to="2026-10-06T00:00:00Z", evidence=["S2"])
        revised = stream.get(timeout=30)
        assert revised is not None and revised.type == "belief_revised"
        assert (revised.claim, revised.valid_to.isoformat() if revised.valid_to else None) == \
            ("C2", "2026-10-06T00:00:00+00:00")
        rippl.retract_belief("agent-1", "outage", at="2026-10-07T00:00:00Z", reason="wrong")
        retracted = stream.get(timeout=30)
        assert retracted is not None and retracted.type == "belief_retracted"
        assert (retracted.claim, retracted.valid_to.isoformat() if retracted.valid_to else None) \
            == ("C1", "2026-10-07T00:00:00+00:00")
        # nothing believed then: no write, no event
        assert rippl.retract_belief("agent-1", "outage", at="2026-10-08T00:00:00Z") is None
        assert stream.get(timeout=0.3) is None


def test_a_stream_whose_server_goes_away_says_so() -> None:
    server = start_falkordb_server()
    try:
        with Rippl.open(url=server.url, graph="events-lost") as handle, handle.subscribe() as stream:
            server.stop()
            with pytest.raises(UnavailableError, match="Subscribe again"):
                stream.get(timeout=5)
    finally:
        server.stop()
