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

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rippl_core import queries
from rippl_core import temporal_queries as tq
from rippl_core.engine import Op
from rippl_core.errors import InvalidInputError, NotFoundError
from rippl_core.models import Transition
from rippl_core.temporal import (
    Row,
    belief_model,
    evidence_states,
    read_times,
    rows_of,
    subject,
    support_of,
)
from rippl_core.temporal_models import WhatIf, WhatIfRetracted
from rippl_core.timeutil import TimeLike, from_ms
from rippl_core.tms import Premise, Region, label
from rippl_core.validation import check_ids
from rippl_core.vocabulary import RETRACTABLE, Kind, State


def claims_without(claims: Sequence[str], removed: Sequence[str]) -> Op[dict[str, State]]:
    """The state each of `claims` would have had `removed` (sources) never existed.

    A claim's state depends only on what is upstream of it, so this reads the claims' ancestry
    (claims and sources; usually a handful of nodes, whatever the size of the graph) and relabels
    it with the removed sources taken out. Reads only."""
    if not claims:
        return {}
    records = yield tq.region(claims)
    premises = {r[0]: Premise(bool(r[3]), int(r[4] or 0)) for r in records}
    region = Region()
    frontier = list(premises)
    while frontier:
        justs, extra = yield from support_of(frontier, tq.claim_support)
        region.justifications.update(justs)
        frontier = [a for a in extra if a not in premises]
        premises.update({a: Premise(bool(extra[a][0]), int(extra[a][1] or 0)) for a in frontier})
    gone = set(removed)
    region.nodes = {n: Premise(p.retracted or n in gone, p.pending) for n, p in premises.items()}
    labels = label(region)
    return {claim: labels[claim] for claim in claims if claim in labels}


NodeInfo = tuple[str, str, bool, int]  # kind, stored state, retracted, pending reviews


def _region_by_walk(removed: Sequence[str], limit: int) -> Op[dict[str, NodeInfo] | None]:
    """The nodes downstream of `removed` (and themselves), level by level; None as soon as there
    are more than `limit` of them."""
    records = yield tq.region(removed)
    info: dict[str, NodeInfo] = {r[0]: (r[1], r[2], bool(r[3]), int(r[4] or 0)) for r in records}
    frontier = list(info)
    while frontier:
        records = yield queries.step_down(frontier)
        frontier = []
        for _parent, node, kind, state, retracted, pending in records:
            if node not in info:
                info[node] = (kind, state, bool(retracted), int(pending or 0))
                frontier.append(node)
        if len(info) > limit:
            return None
    return info


def _region_by_scan(removed: Sequence[str]) -> Op[tuple[dict[str, NodeInfo],
                                                        dict[str, list[list[str]]],
                                                        dict[str, State]]]:
    """The same region from one read of every causal node and edge: for a region that is a large
    part of the graph this beats one indexed lookup per node."""
    top = (yield tq.MAX_NODE_ID)[0][0]
    nodes: dict[str, NodeInfo] = {}
    edges: list[tuple[str, str, Any]] = []
    for low in range(0, (top or 0) + 1, SCAN_CHUNK):
        for r in (yield tq.nodes_in_id_range(low, low + SCAN_CHUNK)):
            nodes[r[0]] = (r[1], r[2], bool(r[3]), int(r[4] or 0))
        edges += (yield tq.edges_in_id_range(low, low + SCAN_CHUNK))
    children: dict[str, list[str]] = defaultdict(list)
    for antecedent, node, _j in edges:
        children[antecedent].append(node)
    seen = {n for n in removed if n in nodes}
    frontier = list(seen)
    while frontier:
        reached = []
        for node in frontier:
            for child in children.get(node, ()):
                if child not in seen:
                    seen.add(child)
                    reached.append(child)
        frontier = reached
    grouped: dict[str, dict[Any, list[str]]] = defaultdict(lambda: defaultdict(list))
    outside: dict[str, State] = {}
    for antecedent, node, j in edges:
        if node in seen:
            grouped[node][j].append(antecedent)
            if antecedent not in seen:
                outside[antecedent] = State(nodes[antecedent][1])
    justs = {n: [a for _, a in sorted(g.items(), key=lambda kv: str(kv[0]))]
             for n, g in grouped.items()}
    return {n: nodes[n] for n in seen}, justs, outside


BULK_REGION = 5_000  # a region larger than this is read with one scan of the causal graph
SCAN_CHUNK = 25_000  # internal node ids per query of that scan


def counterfactual_labels(removed: Sequence[str]) -> Op[
        tuple[dict[str, State], dict[str, tuple[str, str]]]]:
    """States of everything downstream of `removed` had those nodes been retracted, and the
    (kind, stored state) of each. Linear in the region (a walk down and a read of its support),
    or, once the region passes `BULK_REGION` nodes, in the graph (one scan of its nodes and
    edges). Reads only; writes nothing."""
    info = yield from _region_by_walk(removed, BULK_REGION)
    if info is not None:
        justs, extra = yield from support_of(list(info), tq.support)
        outside = {a: State(rest[0]) for a, rest in extra.items() if a not in info}
    else:
        info, justs, outside = yield from _region_by_scan(removed)
    gone = set(removed)
    region = Region(outside=outside)
    for node, (_kind, _state, retracted, pending) in info.items():
        region.nodes[node] = Premise(retracted or node in gone, pending)
        region.justifications[node] = justs.get(node, [])
    return label(region), {n: (k, s) for n, (k, s, _, _) in info.items()}


def _require_kinds(ids: Sequence[str], kinds: Sequence[Kind], what: str) -> Op[None]:
    records = yield tq.node_briefs(ids)
    found = {r[0]: r[1] for r in records}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFoundError(f"{what} not found: {', '.join(missing)}; check the ids")
    names = " or ".join(k.value.lower() for k in kinds)
    wrong = [i for i in ids if found[i] not in {k.value for k in kinds}]
    if wrong:
        raise InvalidInputError(f"{what} must be {names} ids; {', '.join(wrong)} "
                                f"{'is' if len(wrong) == 1 else 'are'} not")


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


def what_if(agent: str, topic: str, *, without: Sequence[str], as_of: TimeLike | None,
            known_at: TimeLike | None) -> Op[WhatIf]:
    """What the agent would believe about `topic` at `as_of` had the `without` sources never
    existed, next to what it does believe. Computed from reads only: the graph is not written."""
    _, _, key = subject(agent, topic)
    removed = check_ids(without, what="without")
    if not removed:
        raise InvalidInputError("without is empty; name the evidence sources to leave out")
    t, known = read_times(as_of, known_at)
    yield from _require_kinds(removed, [Kind.SOURCE], "without")
    rows = rows_of((yield tq.visible(key, known)))
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
    return WhatIf(agent=agent, topic=topic, without=removed, as_of=from_ms(t),  # type: ignore[arg-type]
                  known_at=from_ms(known),  # type: ignore[arg-type]
                  actual=belief_model(actual[0], states) if actual else None,
                  counterfactual=counter, dropped=[belief_model(r, states) for r in dropped],
                  lost_claims=sorted(lost))


def what_if_retracted(claim_ids: Sequence[str]) -> Op[WhatIfRetracted]:
    """Which nodes would change, and which decisions and actions would be blocked, if these claims
    (or sources) were retracted. Reads only: the graph is not written."""
    ids = check_ids(claim_ids, what="claim ids")
    if not ids:
        raise InvalidInputError("claim_ids is empty; name the claims to retract hypothetically")
    yield from _require_kinds(ids, list(RETRACTABLE), "claim ids")
    labels, stored = yield from counterfactual_labels(ids)
    transitions = sorted(
        (Transition(id=n, kind=Kind(stored[n][0]), before=State(stored[n][1]), after=s)
         for n, s in labels.items() if State(stored[n][1]) is not s),
        key=lambda tr: tr.id)
    blocked = {n for n, s in labels.items() if s is not State.IN}
    return WhatIfRetracted(
        retracted=ids, transitions=transitions,
        blocked_decisions=sorted(n for n in blocked if stored[n][0] == Kind.DECISION.value),
        blocked_actions=sorted(n for n in blocked if stored[n][0] == Kind.ACTION.value))
