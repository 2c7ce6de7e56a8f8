"""Where the graph is, for components that AutoGen serialises.

Every hook takes a live handle (`AsyncRippl`, or a sync `Rippl` whose calls then run in a worker
thread) or `RipplConnection` options. A component's config stores the options, never a live handle:
a component loaded from a config opens its own handle on first use and closes it in `close()`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field

from rippl_core import AsyncRippl, InvalidInputError, Policy, Rippl
from rippl_core.adapters import ThreadedRippl


class RipplConnection(BaseModel):
    """Connection options of a Rippl graph: an embedded database file (`path`), a FalkorDB server
    (`url`, e.g. falkordb://host:6379), or neither (RIPPL_FALKORDB_URL, RIPPL_DB, then ./.rippl/).

    A url with a password ends up in dumped configs: prefer RIPPL_FALKORDB_URL for secrets.
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")

    path: str | None = None
    url: str | None = None
    graph: str = "rippl"
    policy: Policy | None = Field(default=None, description="the handle's default policy")

    @classmethod
    def of(cls, handle: AsyncRippl | Rippl) -> RipplConnection:
        """The options that reopen the graph `handle` is bound to."""
        location = handle.location
        return cls(path=str(location.path) if location.path else None, url=location.url,
                   graph=handle.graph, policy=handle.policy)

    async def open(self) -> AsyncRippl:
        return await AsyncRippl.open(self.path, url=self.url, graph=self.graph, policy=self.policy)


class Graph(Protocol):
    """The awaitable surface of a Rippl handle that the adapter uses (AsyncRippl has it)."""

    policy: Policy

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]: ...



type Target = AsyncRippl | Rippl | RipplConnection


class Link:
    """A component's way to its graph: a borrowed handle (never closed here) or options of a handle
    it opens lazily, once, on first use, and owns."""

    target: Target

    def __init__(self, target: Target) -> None:
        if isinstance(target, Link):
            target = target.target
        if not isinstance(target, (AsyncRippl, Rippl, RipplConnection)):
            raise InvalidInputError(
                f"expected an AsyncRippl or Rippl handle or RipplConnection options, got "
                f"{type(target).__name__}; open one with `await AsyncRippl.open(...)`"
            )
        self.target = target
        self._owned: AsyncRippl | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None

    @property
    def connection(self) -> RipplConnection:
        """Serialisable options reopening the same graph."""
        if isinstance(self.target, RipplConnection):
            return self.target
        return RipplConnection.of(self.target)

    @property
    def policy(self) -> Policy | None:
        """The default policy of the handle (None until a lazily opened handle is open)."""
        if isinstance(self.target, RipplConnection):
            return self.target.policy
        return self.target.policy

    async def graph(self) -> Graph:
        """The handle as awaitables (a sync `Rippl` runs in worker threads), opening it on first
        use. Raises UnavailableError if it cannot be reached."""
        handle = await self.handle()
        return cast(Graph, ThreadedRippl(handle) if isinstance(handle, Rippl) else handle)

    async def handle(self) -> AsyncRippl | Rippl:
        """The handle itself, opening it on first use (the kit's `HandleSource`)."""
        if isinstance(self.target, AsyncRippl | Rippl):
            return self.target
        loop = asyncio.get_running_loop()
        if self._owned is not None and self._loop is not loop:
            await self._forget()  # opened in another event loop (asyncio.run twice): bound there
        if self._owned is None:
            if self._lock is None or self._loop is not loop:
                self._lock, self._loop = asyncio.Lock(), loop
            async with self._lock:
                if self._owned is None:
                    self._owned = await self.target.open()
        return self._owned

    async def _forget(self) -> None:
        owned, self._owned = self._owned, None
        if owned is not None:
            with contextlib.suppress(Exception):  # its connections belong to a closed loop
                await owned.close()

    async def close(self) -> None:
        """Close the handle this link opened itself; a borrowed handle stays open."""
        if self._owned is not None and self._loop is not asyncio.get_running_loop():
            await self._forget()
            return
        owned, self._owned = self._owned, None
        if owned is not None:
            await owned.close()
