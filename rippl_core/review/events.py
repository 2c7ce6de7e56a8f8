"""Live events: every status change and review decision is published on the graph's channel
(Redis sharded pub/sub, `SPUBLISH`, on the primary holding the graph: on a cluster the channel is
in the tenant's slot) in the same atomic commit as the change itself. One message carries the
events of one commit, as a JSON array, in order; the streams yield them one by one. A stream
subscribes (`SSUBSCRIBE`) through its handle's client, which reaches that primary whatever the
topology."""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any, Self

import redis
import redis.asyncio

from rippl_core._runtime.keys import Keys
from rippl_core.errors import UnavailableError
from rippl_core.models import Event


@contextmanager
def _connected(graph: str) -> Iterator[None]:
    """A lost subscription is an UnavailableError: the events published while it was down are
    not replayed (pub/sub keeps nothing), so the caller must know and subscribe again."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        raise UnavailableError(
            f"the event stream of graph {graph!r} lost its connection ({exc}); events published "
            "meanwhile are not replayed. Subscribe again (a failover may be in progress).") from exc


def parse_events(graph: str, data: str | bytes) -> list[Event]:
    """The events of one published message."""
    payload = json.loads(data)
    items = payload if isinstance(payload, list) else [payload]
    return [Event.model_validate({**item, "graph": graph}) for item in items]


class EventStream:
    """A subscription, open from creation (so no event published after it is missed).
    Iterate it for events, or `get(timeout)` one; close it (or use `with`) when done."""

    def __init__(self, client: redis.Redis, graph: str) -> None:
        self.graph = graph
        self._buffer: deque[Event] = deque()
        self._pubsub = client.pubsub(ignore_subscribe_messages=True)
        with _connected(graph):
            self._pubsub.ssubscribe(Keys(graph).events)

    def get(self, timeout: float = 1.0) -> Event | None:
        """The next event, or None if none arrives within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not self._buffer and (left := deadline - time.monotonic()) > 0:
            with _connected(self.graph):
                message: Any = self._pubsub.get_message(timeout=left)
            if message and message.get("type") == "smessage":
                self._buffer.extend(parse_events(self.graph, message["data"]))
        return self._buffer.popleft() if self._buffer else None

    def __iter__(self) -> Iterator[Event]:
        yield from self._buffer
        self._buffer.clear()
        with _connected(self.graph):
            for message in self._pubsub.listen():
                if message.get("type") == "smessage":
                    yield from parse_events(self.graph, message["data"])

    def close(self) -> None:
        """Unsubscribe and release the connection."""
        self._pubsub.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncEventStream:
    """The asyncio twin of `EventStream`; `await stream.start()` first, or use `async with`."""

    def __init__(self, client: redis.asyncio.Redis, graph: str) -> None:
        self.graph = graph
        self._buffer: deque[Event] = deque()
        self._pubsub = client.pubsub(ignore_subscribe_messages=True)

    async def start(self) -> Self:
        """Subscribe (events published from now on are received); returns the stream."""
        with _connected(self.graph):
            await self._pubsub.ssubscribe(Keys(self.graph).events)
        return self

    async def get(self, timeout: float = 1.0) -> Event | None:
        """The next event, or None if none arrives within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not self._buffer and (left := deadline - time.monotonic()) > 0:
            with _connected(self.graph):
                message: Any = await self._pubsub.get_message(ignore_subscribe_messages=True,
                                                              timeout=left)
            if message and message.get("type") == "smessage":
                self._buffer.extend(parse_events(self.graph, message["data"]))
        return self._buffer.popleft() if self._buffer else None

    async def __aiter__(self) -> AsyncIterator[Event]:
        while self._buffer:
            yield self._buffer.popleft()
        with _connected(self.graph):
            async for message in self._pubsub.listen():
                if message.get("type") == "smessage":
                    for event in parse_events(self.graph, message["data"]):
                        yield event

    async def close(self) -> None:
        """Unsubscribe and release the connection."""
        await self._pubsub.aclose()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
