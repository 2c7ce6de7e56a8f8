"""The live stream: one subscription to the graph's events, numbered and kept in a ring, served
to every browser as Server-Sent Events.

Each event gets a sequence number; a frame carries the events of one commit (a large wave is cut
into frames of `FRAME_EVENTS`) and its `id:` is `<epoch>:<last sequence number>`. A browser that
reconnects sends that id back (`Last-Event-ID`) and receives what it missed. When the id is from
another run of the server (another epoch) or older than the ring, it receives `reset` instead: its
state may be stale, so it reloads. Comment lines keep idle connections alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
import uuid
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from rippl_core.client import AsyncRippl
from rippl_core.models import Event
from rippl_core.review.events import AsyncEventStream

log: logging.Logger = logging.getLogger("rippl.console")

CAPACITY = 50_000  # events kept for resuming clients
FRAME_EVENTS = 500  # events per SSE frame: a 10k-node wave arrives in 21 frames, each parsed and
# applied by the browser in a few ms (a frame of 2,000 was one parse of tens of ms on a busy machine)
KEEPALIVE = 15.0  # seconds between comment lines on an idle stream
RETRY_MS = 2_000  # how long a browser waits before reconnecting


def frame(kind: str, data: Any, event_id: str | None = None) -> str:
    """One SSE message (JSON data on one line)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def event_json(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json", exclude_none=True, exclude={"graph"})


class EventHub:
    """Fans the graph's events out to every connected browser."""

    rippl: AsyncRippl
    keepalive: float
    epoch: str
    seq: int

    def __init__(self, rippl: AsyncRippl, *, capacity: int = CAPACITY,
                 keepalive: float = KEEPALIVE) -> None:
        self.rippl, self.keepalive = rippl, keepalive
        self.epoch = uuid.uuid4().hex[:12]
        self.seq = 0
        self._ring: deque[tuple[int, dict[str, Any]]] = deque(maxlen=capacity)
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stream: AsyncEventStream | None = None

    # -- the subscription -----------------------------------------------------------------
    async def start(self) -> None:
        """Subscribe (once); returns when events published from now on will be received."""
        if self._task is None:
            self._task = asyncio.create_task(self._pump(), name="rippl-console-events")
        await self._ready.wait()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._drop_stream()

    async def _drop_stream(self) -> None:
        if self._stream is not None:
            with contextlib.suppress(Exception):
                await self._stream.close()
            self._stream = None

    async def _pump(self) -> None:
        delay = 0.5
        while True:
            try:
                self._stream = await self.rippl.subscribe()
                self._ready.set()
                delay = 0.5
                while True:
                    event = await self._stream.get(timeout=self.keepalive)
                    if event is None:
                        continue
                    batch = [event]  # the rest of its commit is already buffered: get(0) drains it
                    while (more := await self._stream.get(timeout=0)) is not None:
                        batch.append(more)
                    await self._append(batch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the connection broke: events may be lost, so clients reset
                log.warning("event subscription lost (%s); resubscribing in %.1fs", exc, delay)
                await self._drop_stream()
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
                async with self._changed:
                    self.epoch = uuid.uuid4().hex[:12]
                    self._changed.notify_all()

    async def _append(self, batch: list[Event]) -> None:
        async with self._changed:
            for event in batch:
                self.seq += 1
                self._ring.append((self.seq, event_json(event)))
            self._changed.notify_all()

    # -- one client -------------------------------------------------------------------------
    def resume_point(self, last_event_id: str | None) -> int | None:
        """The sequence number to resume after, or None when the client must reset (an id from
        another epoch, an unreadable one, or one older than the ring)."""
        if not last_event_id:
            return self.seq
        epoch, _, seq_text = last_event_id.partition(":")
        if epoch != self.epoch or not seq_text.isdigit() or int(seq_text) > self.seq:
            return None
        seq = int(seq_text)
        oldest = self._ring[0][0] if self._ring else self.seq + 1
        return seq if seq >= oldest - 1 else None

    def _moved(self, cursor: int, epoch: str) -> bool:
        return self.seq > cursor or self.epoch != epoch

    def _after(self, cursor: int) -> list[dict[str, Any]] | None:
        if not self._ring:
            return []
        oldest = self._ring[0][0]
        if cursor < oldest - 1:
            return None
        return [e for _, e in itertools.islice(self._ring, max(cursor - oldest + 1, 0), None)]

    async def next_events(self, cursor: int, epoch: str) -> tuple[list[dict[str, Any]] | None, int, str]:
        """Wait for events after `cursor` of `epoch` (at most the keep-alive interval): the events
        (None when they cannot be had: another epoch, or older than the ring), the head and the
        current epoch. For readers at their own pace (webhook deliveries)."""
        await self.start()
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait_for(
                    functools.partial(self._moved, cursor, epoch)), self.keepalive)
            if self.epoch != epoch:
                return None, self.seq, self.epoch
            events = self._after(cursor)
            return events, self.seq, self.epoch

    async def frames(self, last_event_id: str | None) -> AsyncIterator[str]:
        """The SSE text of one client's stream, forever (the server cancels it on disconnect)."""
        await self.start()
        yield f"retry: {RETRY_MS}\n\n"
        cursor = self.resume_point(last_event_id)
        epoch = self.epoch
        if cursor is None or not last_event_id:
            cursor = self.seq
            yield frame("reset" if last_event_id else "hello",
                        {"epoch": epoch, "seq": cursor}, f"{epoch}:{cursor}")
        while True:
            async with self._changed:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait_for(
                        functools.partial(self._moved, cursor, epoch)), self.keepalive)
                events = self._after(cursor) if self.epoch == epoch else None
                head = self.seq
            if events is None:  # a lost subscription or a client too far behind: start over
                epoch, cursor = self.epoch, head
                yield frame("reset", {"epoch": epoch, "seq": cursor}, f"{epoch}:{cursor}")
                continue
            if not events:
                yield ": keep-alive\n\n"
                continue
            for start in range(0, len(events), FRAME_EVENTS):
                chunk = events[start:start + FRAME_EVENTS]
                last = cursor + start + len(chunk)
                yield frame("events", {"events": chunk, "seq": last}, f"{epoch}:{last}")
            cursor = head
