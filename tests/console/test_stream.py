"""The live stream: each commit's events arrive as one frame, in order, numbered; a client resumes
with Last-Event-ID (replaying what it missed) or is told to reset (another server run, an id older
than the ring, a lost subscription); idle streams get keep-alives. Over a real uvicorn server too.
Real FalkorDB server."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import uvicorn
from helpers_console import add_beliefs

from rippl_core import AsyncRippl
from rippl_core.console import stream as stream_module
from rippl_core.console.app import create_app
from rippl_core.console.stream import EventHub
from rippl_core.testing import free_port

pytestmark = pytest.mark.asyncio(loop_scope="session")
WAVE = 18  # CLM-001 and the 17 nodes that rest on it alone


def parse(text: str) -> dict[str, Any]:
    """One SSE message: {id, event, data} or {comment}."""
    fields: dict[str, Any] = {}
    for line in text.strip("\n").split("\n"):
        if line.startswith(":"):
            fields["comment"] = line[1:].strip()
        else:
            name, _, value = line.partition(": ")
            fields[name] = json.loads(value) if name == "data" else value
    return fields


async def until(condition: Any, timeout: float = 20) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


class Reader:
    """Reads a hub's frames for one client."""

    def __init__(self, hub: EventHub, last_event_id: str | None = None) -> None:
        self.frames = hub.frames(last_event_id)

    async def next(self, timeout: float = 20) -> dict[str, Any]:
        return parse(await asyncio.wait_for(anext(self.frames), timeout))

    async def next_event_frame(self) -> dict[str, Any]:
        while True:
            message = await self.next()
            if message.get("event") in ("events", "reset"):
                return message

    async def close(self) -> None:
        await self.frames.aclose()


async def test_a_commit_arrives_as_one_ordered_frame_and_resumes(rippl: AsyncRippl) -> None:
    hub = EventHub(rippl)
    reader = Reader(hub)
    try:
        assert (await reader.next()) == {"retry": "2000"}
        hello = await reader.next()
        assert hello["event"] == "hello" and hello["id"] == f"{hub.epoch}:0"
        item = await rippl.propose_retraction("CLM-001", reason="disk errors", by="monitor")
        first = await reader.next_event_frame()
        events = first["data"]["events"]
        assert first["id"] == f"{hub.epoch}:{WAVE + 1}" and first["data"]["seq"] == WAVE + 1
        assert [e["type"] for e in events] == ["node_at_risk"] * WAVE + ["review_proposed"]
        assert {e["node"] for e in events[:-1]} == {"CLM-001", *item.at_risk}
        assert events[-1] == {"type": "review_proposed", "review": item.id, "claim": "CLM-001",
                              "by": "monitor", "at": events[-1]["at"]}
        await rippl.approve(item.id, by="alice")
        second = await reader.next_event_frame()
        assert second["id"] == f"{hub.epoch}:{2 * (WAVE + 1)}"
        assert [e["type"] for e in second["data"]["events"]][-1] == "review_approved"
        # a client that saw only the first frame gets the second replayed, then lives on
        late = Reader(hub, first["id"])
        await late.next()
        replayed = await late.next_event_frame()
        assert replayed["data"] == second["data"] and replayed["id"] == second["id"]
        await rippl.reinstate("CLM-001", reason="fixed", by="alice")
        live = [await reader.next_event_frame(), await late.next_event_frame()]
        assert live[0] == live[1] and {e["type"] for e in live[0]["data"]["events"]} == {"node_restored"}
        await late.close()
        # an up-to-date client resumes with nothing to replay
        current = Reader(hub, live[0]["id"])
        await current.next()
        await rippl.add_claim("CLM-X", "a derived claim", derived_from=["CLM-002"])
        await rippl.retract("CLM-X", reason="x", by="alice")
        assert (await current.next_event_frame())["data"]["events"][0]["node"] == "CLM-X"
        await current.close()
    finally:
        await reader.close()
        await hub.close()


@pytest.mark.parametrize("stale", ["other-epoch:3", "garbage", ":", "EPOCH:x", "EPOCH:999999"])
async def test_an_unusable_last_event_id_resets(rippl: AsyncRippl, stale: str) -> None:
    hub = EventHub(rippl)
    try:
        await hub.start()
        reader = Reader(hub, stale.replace("EPOCH", hub.epoch))
        await reader.next()
        reset = await reader.next()
        assert reset["event"] == "reset" and reset["id"] == f"{hub.epoch}:{hub.seq}"
        await reader.close()
    finally:
        await hub.close()


async def test_a_client_older_than_the_ring_resets(rippl: AsyncRippl) -> None:
    hub = EventHub(rippl, capacity=25)
    reader = Reader(hub)
    try:
        await reader.next()
        hello = await reader.next()
        await rippl.add_claim("CLM-Y", "a claim nothing rests on", derived_from=["CLM-002"])  # 1
        item = await rippl.propose_retraction("CLM-001", reason="x", by="monitor")  # 19 events
        await rippl.reject(item.id, by="bob")  # 19 more: 39 > 25, so event 1 is gone
        await until(lambda: hub.seq == 39)
        behind = Reader(hub, hello["id"])
        await behind.next()
        assert (await behind.next())["event"] == "reset"
        assert hub.resume_point(hello["id"]) is None
        await behind.close()
        # the live reader, which had not read since, fell behind the ring too: reset, then live
        reset = await reader.next_event_frame()
        assert reset["event"] == "reset" and reset["data"]["seq"] == 39
        await rippl.retract("CLM-Y", reason="x", by="alice")
        frame = await reader.next_event_frame()
        assert frame["event"] == "events" and frame["id"] == f"{hub.epoch}:40"
        assert [e["node"] for e in frame["data"]["events"]] == ["CLM-Y"]
    finally:
        await reader.close()
        await hub.close()


async def test_a_large_wave_is_cut_into_frames(rippl: AsyncRippl, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_module, "FRAME_EVENTS", 5)
    hub = EventHub(rippl)
    reader = Reader(hub)
    try:
        await reader.next()
        hello = await reader.next()
        await rippl.propose_retraction("CLM-001", reason="x", by="monitor")
        frames = [await reader.next_event_frame() for _ in range(4)]
        assert [len(f["data"]["events"]) for f in frames] == [5, 5, 5, 4]
        assert [f["id"] for f in frames] == [f"{hub.epoch}:{n}" for n in (5, 10, 15, 19)]
        middle = Reader(hub, frames[1]["id"])  # resuming mid-wave replays the rest of it
        await middle.next()
        rest = [await middle.next_event_frame() for _ in range(2)]
        assert [f["id"] for f in rest] == [frames[2]["id"], frames[3]["id"]]
        await middle.close()
        assert hello["id"] == f"{hub.epoch}:0"
    finally:
        await reader.close()
        await hub.close()


async def test_idle_streams_get_keepalives_and_belief_events(rippl: AsyncRippl) -> None:
    hub = EventHub(rippl, keepalive=0.2)
    reader = Reader(hub)
    try:
        await reader.next()
        await reader.next()
        assert (await reader.next(timeout=5)) == {"comment": "keep-alive"}
        await add_beliefs(rippl)  # its claims are announced first (node_created), then beliefs
        event: dict[str, Any] = {}
        while event.get("type") != "belief_recorded":
            frame = await reader.next_event_frame()
            event = next((e for e in frame["data"]["events"] if e["type"] == "belief_recorded"),
                         frame["data"]["events"][0])
        assert (event["type"], event["agent"], event["topic"], event["claim"]) == \
            ("belief_recorded", "sre-agent", "outage/root-cause", "CLM-B1")
        assert event["valid_from"].startswith("2026-10-04T09:00:00")
    finally:
        await reader.close()
        await hub.close()


async def test_a_lost_subscription_resubscribes_and_resets_clients(rippl: AsyncRippl) -> None:
    hub = EventHub(rippl)
    reader = Reader(hub)
    try:
        await reader.next()
        hello = await reader.next()
        epoch = hub.epoch
        assert hub._stream is not None
        await hub._stream._pubsub.connection.disconnect()  # the subscription's connection drops
        reset = await reader.next_event_frame()
        assert reset["event"] == "reset" and hub.epoch != epoch
        assert hub.resume_point(hello["id"]) is None  # ids from before the loss are refused
        await until(lambda: hub._stream is not None)  # resubscribed: events flow again
        await rippl.retract("CLM-002", reason="x", by="alice")
        frame = await reader.next_event_frame()
        assert frame["event"] == "events" and frame["id"].startswith(hub.epoch)
    finally:
        await reader.close()
        await hub.close()


# -- over HTTP -------------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def running(app: Any) -> AsyncIterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on", timeout_graceful_shutdown=1))
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done(), "uvicorn did not start"
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


async def sse(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    buffer = ""
    async for chunk in response.aiter_text():
        buffer += chunk
        while "\n\n" in buffer:
            message, buffer = buffer.split("\n\n", 1)
            yield parse(message)


async def test_sse_over_http_resumes_with_last_event_id(rippl: AsyncRippl) -> None:
    app = create_app(rippl)
    async with running(app) as base, httpx.AsyncClient(base_url=base, timeout=20) as http:
        async with http.stream("GET", "/api/events") as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["cache-control"] == "no-cache"
            messages = sse(response)
            assert (await anext(messages)) == {"retry": "2000"}
            hello = await anext(messages)
            item = await rippl.propose_retraction("CLM-001", reason="x", by="monitor")
            proposed = await anext(messages)
            assert proposed["event"] == "events" and proposed["data"]["events"][-1]["review"] == item.id
        await rippl.reject(item.id, by="bob")  # while no one is connected
        headers = {"last-event-id": proposed["id"]}
        async with http.stream("GET", "/api/events", headers=headers) as response:
            messages = sse(response)
            await anext(messages)
            missed = await anext(messages)
            assert missed["event"] == "events"
            assert missed["data"]["events"][-1]["type"] == "review_rejected"
        assert hello["event"] == "hello"
        refused = await http.get("/api/events", headers={"host": "evil.example"})
        assert refused.status_code == 421
