"""How a run's turns share their contexts (DESIGN §11): the chain rule, and the regrouping of
runs captured before it (schema 15).

A turn's decision rests on one context node (`vocabulary.CONTEXT`), which holds exactly the
claims the turn rested on. The run keeps its latest context (`Run.context`); a turn whose claims
include every claim under it extends it, resting on it and on the claims it lacks (`CARRIES`), in
the same chain (`chain`, `seq`); any other turn starts a chain of its own, resting on every claim.
A claim is under a context when it was added at or before it in its chain, once, so `size` counts
them, and a turn tells whether the run's latest context is inside its claims by counting
(`capture.cypher._turn_context`). A conversation whose every input holds the one before it then
stores what each turn adds: O(turns + claims) nodes and edges, not the square of its length.

Truth maintenance labels a context like the decision it supports (same antecedents, one
justification), so a wave, a blast radius, freshness and as-of answers need no rule of their
own; the public reads go through contexts to the claims (`causal.nodes`, `causal.walk`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rippl_core._runtime.op import Commit, Op
from rippl_core.capture import cypher
from rippl_core.causal import blockers
from rippl_core.vocabulary import CONTEXT_PREFIX

RUNS_PER_PASS = 50  # runs regrouped per read of the runs still to do


def context_id(decision: str) -> str:
    """The id of the context a turn's decision rests on."""
    return CONTEXT_PREFIX + decision


@dataclass(frozen=True, slots=True)
class Turn:
    """A captured decision as recorded before contexts: its claims (antecedents), in the order
    the run recorded it."""

    decision: str
    state: str
    created_at: int | None
    claims: frozenset[str]
    blockers: str | None = None


@dataclass(frozen=True, slots=True)
class Link:
    """The context of one turn: what it rests on (`carries`: the claims it adds, and the context
    it extends, if any), its chain, place in it, and the count of claims under it."""

    turn: Turn
    context: str
    carries: tuple[str, ...]
    chain: str
    seq: int
    size: int


def chain(turns: Sequence[Turn]) -> list[Link]:
    """The contexts of a run's turns, in order, by the chain rule: each extends the one before it
    when it holds all its claims, and starts a chain otherwise."""
    links: list[Link] = []
    under: frozenset[str] = frozenset()
    for turn in turns:
        context = context_id(turn.decision)
        if links and under <= turn.claims:
            base = links[-1]
            added = tuple(sorted(turn.claims - under))
            links.append(Link(turn, context, (*added, base.context), base.chain, base.seq + 1,
                              base.size + len(added)))
        else:
            links.append(Link(turn, context, tuple(sorted(turn.claims)), context, 1,
                              len(turn.claims)))
        under = turn.claims
    return links


def _context_blockers(stored: str | None) -> str | None:
    """A decision's stored blockers as its context's: each trail (which ends at the decision,
    `causal.blockers.trails`) without its last node, in `causal.blockers`' stored form."""
    if stored is None:
        return None
    found, premises = blockers.decode(stored)
    return blockers.encode({p: t[:-1] for p, t in found.items()}, premises)


def regroup(run: str, links: Sequence[Link]) -> Commit:
    """The commit moving a run's turns onto their contexts: each context created with the
    decision's state, stored blockers and status history (a context is labelled as its decision
    is, at every time), its edges, the decision's edges from its claims replaced by one from its
    context, and the run's latest context kept."""
    rows = [{"d": link.turn.decision, "k": link.context, "carries": list(link.carries),
             "state": link.turn.state, "at": link.turn.created_at, "chain": link.chain,
             "seq": link.seq, "size": link.size,
             "blockers": _context_blockers(link.turn.blockers)}
            for link in links]
    return Commit(queries=cypher.regroup_turns(run, rows, links[-1].context if links else None),
                  blind=True)


def backfill_contexts() -> Op[None]:
    """Regroup every run captured before contexts (a schema upgrade): its turns' decisions rest
    on their contexts, sharing what consecutive turns had in common. Idempotent: a turn already
    on a context is not read again."""
    while True:
        runs = [row[0] for row in (yield cypher.runs_without_contexts(RUNS_PER_PASS))]
        if not runs:
            return
        for run in runs:
            rows = yield cypher.turns_without_contexts(run)
            turns = [Turn(d, state, at, frozenset(a for a in claims if a is not None), blockers)
                     for d, state, at, claims, blockers in rows]
            yield regroup(run, chain(turns))
