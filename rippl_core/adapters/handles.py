"""Either handle from asyncio: `acall` a method of a `Rippl` (in a worker thread) or an `AsyncRippl`
(awaited); `ThreadedRippl`; operations written once as a generator of handle calls (`Calls`), driven
by `run_calls` (sync) or `arun_calls` (asyncio)."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from rippl_core._runtime.steps import adrive, drive
from rippl_core._runtime.timeutil import now_ms
from rippl_core.capture.handle import AsyncRun
from rippl_core.client import AsyncRippl, Rippl
from rippl_core.errors import InvalidInputError
from rippl_core.models import Policy

type Handle = Rippl | AsyncRippl


def require_handle(handle: object, *, who: str) -> Handle:
    """`handle` if it is a Rippl or AsyncRippl handle, else an error saying how to open one."""
    if not isinstance(handle, Rippl | AsyncRippl):
        raise InvalidInputError(
            f"{who} needs a Rippl or AsyncRippl handle, got {type(handle).__name__}; open one with "
            "Rippl.open(...) or await AsyncRippl.open(...)")
    return handle


def sync_handle(handle: Handle, *, hint: str) -> Rippl:
    """The sync handle for a sync code path; an AsyncRippl there is refused with `hint`."""
    if isinstance(handle, AsyncRippl):
        raise InvalidInputError(f"this runs synchronously but was given an AsyncRippl handle; {hint}")
    return handle


async def acall(handle: Handle, method: str, /, *args: Any, **kwargs: Any) -> Any:
    """Call a handle method from asyncio: awaited on an AsyncRippl, in a worker thread on a Rippl
    (a blocking handle never stalls the event loop)."""
    if isinstance(handle, AsyncRippl):
        return await getattr(handle, method)(*args, **kwargs)
    return await asyncio.to_thread(getattr(handle, method), *args, **kwargs)


class ThreadedRippl:
    """A sync `Rippl` seen through awaitables: every method call runs in a worker thread."""

    def __init__(self, rippl: Rippl) -> None:
        self._rippl = rippl

    @property
    def policy(self) -> Policy:
        return self._rippl.policy

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self._rippl, name)
        if not callable(method):
            raise AttributeError(name)

        @functools.wraps(method)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(method, *args, **kwargs)

        return call


@dataclass(frozen=True)
class Call:
    """One call of a handle method (the only I/O of an operation written as handle calls)."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tick:
    """Wait until the clock has passed `after` (epoch ms) before the next write, so a write is
    never stamped in the same millisecond as something that happened before it started."""

    after: int


type Calls[R] = Generator[Call | Tick, Any, R]


def run_calls[R](target: Any, steps: Calls[R]) -> R:
    """Drive an operation of calls with a sync target (a `Rippl`, or a `Run` of one). An exception
    of a call is raised inside the operation, at the step that made it."""

    def do(step: Call | Tick) -> Any:
        if isinstance(step, Tick):
            while now_ms() <= step.after:
                time.sleep(0.0002)
            return None
        return getattr(target, step.method)(*step.args, **step.kwargs)

    return drive(steps, do)


async def arun_calls[R](target: Any, steps: Calls[R]) -> R:
    """Drive an operation of calls from asyncio: awaited on an asyncio target (an `AsyncRippl`,
    or an `AsyncRun` of one); with a sync target the whole operation runs in one worker thread."""
    if not _awaits(target):
        return await asyncio.to_thread(run_calls, target, steps)

    async def do(step: Call | Tick) -> Any:
        if isinstance(step, Tick):
            while now_ms() <= step.after:
                await asyncio.sleep(0.0002)
            return None
        return await getattr(target, step.method)(*step.args, **step.kwargs)

    return await adrive(steps, do)


def _awaits(target: Any) -> bool:
    return isinstance(target, AsyncRippl | AsyncRun)
