"""What blocks a node that is not IN: every retracted or at-risk premise upstream of it through
nodes that are not IN, each with its trail (the premise first, the node last).

A trail is a shortest path through nodes that are not IN; among several, the one that, read from
the node upwards, takes the smallest id at each step. That rule composes: a node's trail to a
premise is its chosen antecedent's trail plus the node, so trails can be computed for a whole
region at once from the trails stored on the nodes around it, and a walk of one node's ancestry
gives the same answer. A turn's context (`vocabulary.CONTEXT`) counts no step and is left out of
every trail, stored or shown (as in `walk`): a trail through a conversation's chain of contexts
stays as short as the claim, the decision and the action it names.

Every wave materialises the result on each node that is not IN (`blockers`, JSON), so a denied
check reads it with the node's state, in one round trip. A node is left without it (and a check
walks its ancestry instead) when it has more than `CAP` blockers, or when something upstream of
it carries none (written before materialisation, or created by a blind commit).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rippl_core.models import Blocker
from rippl_core.vocabulary import Kind, State, is_context

CAP = 64  # blockers materialised on one node; beyond, a check walks the ancestry


@dataclass(frozen=True, slots=True)
class Premise:
    """A blocking premise: what a verdict says of it."""

    kind: str
    state: str
    reason: str | None


type Trails = dict[str, list[str]]  # premise -> trail, for one node


def trails(nodes: Iterable[str], preds: Mapping[str, Iterable[str]], blocking: Iterable[str],
           known: Mapping[str, Trails | None], *, cap: int | None = None
           ) -> dict[str, Trails | None]:
    """The trail to each blocker of every node of `nodes` (all of them not IN).

    `preds[n]`: the antecedents of `n` that are not IN (in `nodes`, or outside it with their own
    trails in `known`, None when unknown); `blocking`: the nodes of `nodes` that are retracted or
    under review (each its own blocker, trail [itself]). A node with more than `cap` blockers, or
    downstream of one that has or of an unknown one, gets None. Time linear in the edges among
    `nodes` times the blockers reaching them."""
    members = set(nodes)
    succ: dict[str, list[str]] = defaultdict(list)
    for node in members:
        for p in preds.get(node, ()):
            succ[p].append(node)
    lost: set[str] = set()  # None: downstream of an unknown node or of one over the cap

    def lose(start: Iterable[str]) -> None:
        stack = [n for n in start if n in members and n not in lost]
        lost.update(stack)
        while stack:
            for nxt in succ.get(stack.pop(), ()):
                if nxt not in lost:
                    lost.add(nxt)
                    stack.append(nxt)

    lose(s for p, entries in known.items() if entries is None for s in succ.get(p, ()))
    # Settle (node, premise) pairs in order of distance; a pair's parent is the smallest-id
    # antecedent among those at the distance just below (all of them queued before it settles).
    best: dict[str, dict[str, str | None]] = defaultdict(dict)  # node -> premise -> parent
    queued: dict[int, dict[tuple[str, str], str | None]] = defaultdict(dict)
    for node in blocking:
        if node in members:
            queued[0][node, node] = None
    for p, entries in known.items():
        for premise, trail in (entries or {}).items():
            for s in succ.get(p, ()):
                _offer(queued[len(trail)], s, premise, p)
    while queued:
        distance = min(queued)
        for (node, premise), parent in queued.pop(distance).items():
            if node in lost or premise in best[node]:
                continue
            best[node][premise] = parent
            if cap is not None and len(best[node]) > cap:
                lose([node])
                continue
            step = 0 if is_context(node) else 1  # a turn's context counts no step (`walk`)
            for nxt in succ.get(node, ()):
                if premise not in best[nxt] and nxt not in lost:
                    _offer(queued[distance + step], nxt, premise, node)
    out: dict[str, Trails | None] = {}
    for node in members:
        if node in lost:
            out[node] = None
            continue
        out[node] = {premise: [n for n in _trail(node, premise, best, known) if not is_context(n)]
                     for premise in best.get(node, {})}
    return out


def _offer(level: dict[tuple[str, str], str | None], node: str, premise: str, parent: str) -> None:
    current = level.get((node, premise), parent)
    level[node, premise] = parent if current is None or parent <= current else current


def _trail(node: str, premise: str, best: Mapping[str, Mapping[str, str | None]],
           known: Mapping[str, Trails | None]) -> list[str]:
    up = [node]
    current = node
    while (parent := best[current][premise]) is not None:
        if parent not in best or premise not in best[parent]:  # outside: its stored trail
            outside = known[parent]
            assert outside is not None
            return outside[premise] + up[::-1]
        up.append(parent)
        current = parent
    return up[::-1]


def blocker_list(found: Trails, premises: Mapping[str, Premise]) -> list[Blocker]:
    """Blockers as a verdict lists them: nearest first, then by id."""
    return sorted((Blocker(premise=p, kind=Kind(premises[p].kind), state=State(premises[p].state),
                           reason=premises[p].reason, trail=trail)
                   for p, trail in found.items()), key=lambda b: (len(b.trail), b.premise))


def encode(found: Trails, premises: Mapping[str, Premise]) -> str:
    """The stored form: [[premise, kind, state, reason, trail], ...], nearest first."""
    items = list(found.items())
    if len(items) > 1:
        items.sort(key=lambda item: (len(item[1]), item[0]))
    rows = [[p, premises[p].kind, premises[p].state, premises[p].reason, trail] for p, trail in items]
    return _JSON.encode(rows)


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def decode(stored: str) -> tuple[Trails, dict[str, Premise]]:
    found: Trails = {}
    premises: dict[str, Premise] = {}
    for premise, kind, state, reason, trail in json.loads(stored):
        found[premise] = trail
        premises[premise] = Premise(kind, state, reason)
    return found, premises


def stored_blockers(stored: str) -> list[Blocker]:
    """The blockers a node carries (see `encode`), as a verdict lists them."""
    return blocker_list(*decode(stored))
