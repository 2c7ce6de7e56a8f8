"""Driving a generator of steps whose I/O is done by the caller, synchronously or with asyncio.

The generator yields a step; the driver does it (`do`, a function of the step) and sends the
result back in, or raises the step's exception inside the generator at that `yield`, so the
generator decides what a failure means. Used where an operation's I/O is not only the graph's:
ingestion (an extractor's model call, then the write) and the adapter kit (calls on a handle).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any


def drive[S, R](steps: Generator[S, Any, R], do: Callable[[S], Any]) -> R:
    """Run the steps, each done by `do`."""
    reply: Any = None
    failure: Exception | None = None
    while True:
        try:
            step = steps.throw(failure) if failure is not None else steps.send(reply)
        except StopIteration as stop:
            result: R = stop.value
            return result
        reply, failure = None, None
        try:
            reply = do(step)
        except Exception as exc:
            failure = exc


async def adrive[S, R](steps: Generator[S, Any, R], do: Callable[[S], Awaitable[Any]]) -> R:
    """Run the steps from asyncio, each awaited from `do`."""
    reply: Any = None
    failure: Exception | None = None
    while True:
        try:
            step = steps.throw(failure) if failure is not None else steps.send(reply)
        except StopIteration as stop:
            result: R = stop.value
            return result
        reply, failure = None, None
        try:
            reply = await do(step)
        except Exception as exc:
            failure = exc
