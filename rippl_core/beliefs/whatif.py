"""Counterfactuals, computed from reads only: no fork, no copy, no write.

- `what_if(agent, topic, without=[sources])`: what the agent would believe had that evidence never
  existed. A belief is dropped when every evidence source behind it is removed, or when its claim
  would lose all support (truth maintenance over the claims' ancestry, with the removed sources
  taken out); the agent then keeps its previous adoption instead. Reads the timeline and the
  ancestry of its claims: its cost does not depend on the size of the graph.
- `what_if_retracted([claims])`: which nodes would change status, and which decisions and actions
  would be blocked, were these claims or sources retracted: the retraction wave, computed without
  writing it (a walk of the region downstream, or one scan of the graph for a large region).

Every query these operations send is read-only (GRAPH.RO_QUERY), so the live graph cannot change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rippl_core._runtime.op import Op
from rippl_core._runtime.timeutil import TimeLike, from_ms, read_times
from rippl_core._runtime.validation import SequenceNotStr, check_ids
from rippl_core.beliefs import cypher
from rippl_core.beliefs.memory import Row, belief_model, evidence_states, rows_of, subject
from rippl_core.beliefs.models import WhatIf
from rippl_core.causal import cypher as causal_cypher
from rippl_core.causal.counterfactual import require_kinds
from rippl_core.causal.history import support_of
from rippl_core.causal.tms import Premise, Region, label
from rippl_core.errors import InvalidInputError
from rippl_core.vocabulary import Kind, State


def claims_without(claims: Sequence[str], removed: Sequence[str]) -> Op[dict[str, State]]:
    """The state each of `claims` would have had `removed` (sources) never existed.

    A claim's state depends only on what is upstream of it, so this reads the claims' ancestry
    (claims and sources; usually a handful of nodes, whatever the size of the graph) and relabels
    it with the removed sources taken out. Reads only."""
    if not claims:
        return {}
    records = yield causal_cypher.region(claims)
    premises = {r[0]: Premise(bool(r[3]), int(r[4] or 0)) for r in records}
    region = Region()
    frontier = list(premises)
    while frontier:
        justs, extra = yield from support_of(frontier, causal_cypher.claim_support)
        region.justifications.update(justs)
        frontier = [a for a in extra if a not in premises]
        premises.update({a: Premise(bool(extra[a][0]), int(extra[a][1] or 0)) for a in frontier})
    gone = set(removed)
    region.nodes = {n: Premise(p.retracted or n in gone, p.pending) for n, p in premises.items()}
    labels = label(region)
    return {claim: labels[claim] for claim in claims if claim in labels}


def counterfactual_rows(rows: Sequence[Row], without: set[str],
                        lost: set[str]) -> tuple[list[Row], list[Row]]:
    """The timeline had `without` never existed: (kept rows, extended over the dropped ones that
    followed them and stripped of the removed evidence; dropped rows). A row is dropped when every
    evidence source behind it is removed, or its claim would lose all support."""
    ordered = sorted(rows, key=lambda r: r.valid_from)

    def dropped(row: Row) -> bool:
        return (bool(row.evidence) and set(row.evidence) <= without) or row.claim in lost

    by_start = {r.valid_from: r for r in ordered}
    kept, gone = [], []
    for row in ordered:
        if dropped(row):
            gone.append(row)
            continue
        end = row.valid_to
        while end in by_start and dropped(by_start[end]):  # the agent keeps its belief instead
            end = by_start[end].valid_to
        kept.append(replace(row, valid_to=end,
                            evidence=tuple(e for e in row.evidence if e not in without)))
    return kept, gone


def what_if(agent: str, topic: str, *, without: SequenceNotStr[str], as_of: TimeLike | None,
            known_at: TimeLike | None) -> Op[WhatIf]:
    """What the agent would believe about `topic` at `as_of` had the `without` sources never
    existed, next to what it does believe. Computed from reads only: the graph is not written."""
    _, _, key = subject(agent, topic)
    removed = check_ids(without, what="without")
    if not removed:
        raise InvalidInputError("without is empty; name the evidence sources to leave out")
    t, known = read_times(as_of, known_at)
    yield from require_kinds(removed, [Kind.SOURCE], "without")
    rows = rows_of((yield cypher.visible(key, known)))
    claims = sorted({r.claim for r in rows})
    labels = yield from claims_without(claims, removed)
    stored = {r.claim: r.claim_state for r in rows}
    lost = {c for c, s in labels.items() if s is State.OUT and stored[c] != State.OUT.value}
    kept, gone = counterfactual_rows(rows, set(removed), lost)
    actual = [r for r in rows if r.holds_at(t)]
    alternative = [r for r in kept if r.holds_at(t)]
    dropped = [r for r in gone if r.valid_from <= t]
    states = yield from evidence_states([*actual, *alternative, *dropped])
    counter = None
    if alternative:
        row = alternative[0]
        counter = belief_model(row, states, labels.get(row.claim))
    return WhatIf(agent=agent, topic=topic, without=removed, as_of=from_ms(t),
                  known_at=from_ms(known),
                  actual=belief_model(actual[0], states) if actual else None,
                  counterfactual=counter, dropped=[belief_model(r, states) for r in dropped],
                  lost_claims=sorted(lost))
