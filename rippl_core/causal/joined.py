"""What another feature joins to a write's own commit, and what follows once it is committed.

A write of one feature (a belief adopted, a record saved) sometimes records, in the same commit,
what another feature knows about it: a memory written during a captured run rests on what the
writing call rested on (`capture.memory`). The writing operation takes a `Joined`, adds its
queries (about the claims it writes) to its commit, and hands it the replies; what the queries
could not do without relabelling (a claim whose state the new justification changes) `after`
does as a write of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from rippl_core._runtime.op import Op
from rippl_core._runtime.wire import Query


class Joined(Protocol):
    """Queries joined to a write's commit about the claims it writes, and their follow-up."""

    def queries(self, claims: Sequence[str], now: int) -> list[Query]:
        """The queries to add to the commit that writes `claims` (at `now`)."""
        ...

    def after(self, replies: Sequence[Sequence[Sequence[Any]]]) -> Op[None]:
        """What follows the commit, given the replies of `queries` (in order)."""
        ...
