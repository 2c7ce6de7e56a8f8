"""Python's cyclic garbage collector held off while a large write is planned.

Planning a load of tens of thousands of nodes allocates millions of small objects (specs,
property dicts, rows), almost all of them without reference cycles and freed by reference
counting. Each allocation burst still counts towards the collector's thresholds, and once enough
objects survive, a full collection walks every object of the process: with a million-node graph
description in memory (2 million objects) that is about a second, several times per batch
(`docs/benchmarks.md`, "Limits"). `held_off(size)` disables the collector for a stretch of
Rippl's own CPU work on a batch of `size` items, only when `size` reaches `LARGE`, and never
across a request to the database or a `yield` of an operation. The collector is the process's:
other threads (and, with AsyncRippl, the event loop while a description is parsed in a worker
thread) run without it during such a stretch; a collection is deferred by it, never skipped. An
application that disabled the collector itself keeps it disabled.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

LARGE = 2_000  # items from which a stretch of planning holds the collector off

_lock = threading.Lock()
_holders = 0  # stretches in progress that disabled the collector (threads may overlap)


@contextmanager
def held_off(size: int) -> Iterator[None]:
    """Run the block with the cyclic collector disabled when `size` >= LARGE and it was enabled
    (or is held off by another stretch); it is enabled again when the last stretch ends."""
    global _holders
    with _lock:
        holding = size >= LARGE and (_holders > 0 or gc.isenabled())
        if holding:
            _holders += 1
            gc.disable()
    try:
        yield
    finally:
        if holding:
            with _lock:
                _holders -= 1
                if _holders == 0:
                    gc.enable()
