"""Breadth-first walks over the causal edges, one round trip per level.

Each node is expanded once and each edge read once, so a walk costs time linear in the reachable
subgraph, at any depth and on any shape (diamonds, cycles). Variable-length path patterns are never
used: they enumerate paths, which grows exponentially on diamond-shaped graphs.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import Any

from rippl_core._runtime.wire import Query
from rippl_core.causal import cypher
from rippl_core.vocabulary import Kind, is_context

type Op[T] = Generator[Any, Any, T]


@dataclass(slots=True)
class Visit:
    """A node reached by a walk: its parent on one shortest trail, and what the step read."""

    id: str
    parent: str | None
    depth: int
    kind: str
    state: str
    retracted: bool
    pending: int
    reason: str | None = None  # upstream walks: why a premise was retracted
    executed: bool = False  # downstream walks: an action that already ran


def trail(visits: dict[str, Visit], node: str) -> list[str]:
    """Ids from the walk's root to `node` (the turns' contexts on the way left out: they are
    internal, and a trail reads through them)."""
    return trails(visits)[node] if node in visits else [node]


def trails(visits: dict[str, Visit]) -> dict[str, list[str]]:
    """`trail` of every node reached, each from its parent's (a walk down a conversation's chain
    of contexts reaches each turn through all the contexts before it: one trail at a time would
    cost the square of its length)."""
    done: dict[str, list[str]] = {}
    for node in visits:
        path: list[str] = []
        current: str | None = node
        while current is not None and current not in done:
            path.append(current)
            current = visits[current].parent if current in visits else None
        known = done[current] if current is not None else []
        for n in reversed(path):
            known = known if is_context(n) else [*known, n]
            done[n] = known
    return {node: done[node] for node in visits}


def walk(roots: Iterable[str], *, down: bool, max_depth: int | None = None,
         blocking_only: bool = False, edges: list[tuple[str, str]] | None = None
         ) -> Op[dict[str, Visit]]:
    """Every node reachable from `roots` (excluded) along causal edges, downstream or upstream.
    `edges` collects every edge a step read, as (node expanded, node reached)."""
    seen: set[str] = set(roots)
    visits: dict[str, Visit] = {}
    frontier = list(seen)
    depth = 0
    while frontier and (max_depth is None or depth < max_depth):
        depth += 1
        step: Query = (cypher.step_down(frontier) if down
                       else cypher.step_up(frontier, blocking_only=blocking_only))
        rows = yield step
        frontier = []
        entered: list[str] = []  # contexts reached by this step
        for row in rows:
            _visit(row, depth, down, seen, visits, edges, entered if is_context(row[1]) else frontier)
        if entered:  # a turn's context counts no level: read through its chain in one round trip
            rows = yield (cypher.through_down(entered) if down
                          else cypher.through_up(entered, blocking_only=blocking_only))
            nxt: dict[str, list[Any]] = defaultdict(list)
            for row in rows:
                nxt[row[0]].append(row)
            queue = deque(sorted(entered))  # breadth first through the contexts, as a step would
            while queue:
                for row in sorted(nxt[queue.popleft()], key=lambda r: str(r[1])):
                    if row[1] not in seen and is_context(row[1]):
                        queue.append(row[1])
                    _visit(row, depth, down, seen, visits, edges,
                           [] if is_context(row[1]) else frontier)
    return visits


def _visit(row: Any, depth: int, down: bool, seen: set[str], visits: dict[str, Visit],
           edges: list[tuple[str, str]] | None, frontier: list[str]) -> None:
    """Record what one row of a step read: a node reached (once) and the edge to it."""
    parent, node, kind, state, retracted, pending, extra = row
    if edges is not None:
        edges.append((parent, node))
    if node in seen:
        return
    seen.add(node)
    visits[node] = Visit(node, parent, depth, kind, state, bool(retracted), int(pending or 0),
                         None if down else extra, bool(extra) if down else False)
    if down or kind != Kind.SOURCE.value:  # nothing rests under a source: no step up
        frontier.append(node)
