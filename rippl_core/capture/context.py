"""What a captured decision rests on: the context set of a run at a model turn (pure, no I/O).

A run's observations each carry a reference: the id of the tool call whose result it is, a handle
of the message that carried a memory read into the model's context, or none (a read whose message
the adapter cannot see: it stays in context for the rest of the run). At a turn, the adapter says
which references are still in the model's input (`refs`; None when it cannot tell: every
observation of the run), and which vetoes the model has read (`told`: the call ids of veto
messages in its input). The turn rests on the claims of the observations still present, minus
every node a veto it read named (the retracted premise and the trail from it): the model now
knows those are false, and re-plans without them.

This module is the rule's executable specification. The decide query (`capture.cypher.decide`)
computes the same set inside the one round trip that records the turn; the property test
(tests/capture/test_context_property.py) holds the decisions it writes to a reference of this
rule on random runs of observations, vetoes and trims.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Observed:
    """One observation of a run: the claims it brought into context, under a reference."""

    ref: str | None
    claims: tuple[str, ...]


def present(observation: Observed, refs: Collection[str] | None) -> bool:
    """Whether an observation is still in the model's input."""
    return refs is None or observation.ref is None or observation.ref in refs


def context_set(observations: Iterable[Observed], refs: Collection[str] | None,
                told: Collection[str], vetoes: Mapping[str, Collection[str]]) -> list[str]:
    """The claims a turn rests on, sorted: those of the observations present (see `present`),
    less the nodes named by the vetoes the model read (`vetoes` maps a vetoed call's id to the
    premises and trail nodes its veto named; `told` lists the call ids whose veto is present)."""
    known_false = {node for call in told for node in vetoes.get(call, ())}
    claims = {claim for o in observations if present(o, refs) for claim in o.claims}
    return sorted(claims - known_false)
