"""The protocol between operations and drivers (sans I/O).

An operation is a generator. It yields a `Query` to read (and receives its rows), a `Batch` of
queries to read in one round trip (and receives the rows of each), a `Commit` to write (and
receives the rows of each of its queries), or a `Command` for a plain key (and receives the
reply), or `GraphName()` (the graph it runs on, answered without I/O: telemetry names it), or
`Pause(seconds)` (the driver sleeps, blocking or awaiting: waiting for a lock).
The sync and async drivers run the same generators; a write operation is re-run from the
start if another writer committed in between (optimistic concurrency), and its `Commit` is
applied atomically (MULTI/EXEC). A database error is raised inside the operation at the `yield`
that caused it, so an operation may handle it (e.g. an index that another process just created).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from rippl_core._runtime.wire import Query

type Op[T] = Generator[Any, Any, T]


@dataclass
class Commit:
    """Queries applied atomically, and the events published with them.

    A commit normally runs inside a write operation, after reads made under WATCH of the graph's
    version key, and is refused if another writer committed in between. A `blind` commit needs no
    such reads: its queries compute what they write from the graph as it is when they run, and
    touch no existing node's state (e.g. new nodes labelled from their antecedents' stored states).
    It may be sent by a read operation, in one round trip; it still bumps the version key, so a
    wave planned before it is re-planned and sees what it created."""

    queries: list[Query] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    blind: bool = False


@dataclass(frozen=True)
class Batch:
    """Several reads sent in one round trip, answered from one consistent graph."""

    queries: tuple[Query, ...]

    def __init__(self, *queries: Query) -> None:
        object.__setattr__(self, "queries", queries)


@dataclass(frozen=True)
class Command:
    """A plain Redis command on a key of the graph's tenant (a marker, a counter), not a query."""

    args: tuple[Any, ...]

    def __init__(self, *args: Any) -> None:
        object.__setattr__(self, "args", args)


@dataclass(frozen=True)
class GraphName:
    """Which graph the operation runs on (the driver answers without I/O; telemetry asks)."""


@dataclass(frozen=True)
class Pause:
    """Wait this long before the operation goes on (the driver sleeps: `time.sleep` or
    `asyncio.sleep`), e.g. between two attempts to take a lock."""

    seconds: float
