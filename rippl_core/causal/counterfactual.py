"""Which nodes would change status, and which decisions and actions would be blocked, were some
claims or sources retracted: the retraction wave, computed from reads only (a walk of the region
downstream, or one scan of the graph for a large region), never written.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rippl_core._runtime.op import Op
from rippl_core._runtime.validation import SequenceNotStr, check_ids
from rippl_core.causal import cypher
from rippl_core.causal.history import support_of
from rippl_core.causal.tms import Premise, Region, label
from rippl_core.errors import InvalidInputError, NotFoundError
from rippl_core.models import Transition, WhatIfRetracted
from rippl_core.vocabulary import RETRACTABLE, Kind, State, is_context

NodeInfo = tuple[str, str, bool, int]  # kind, stored state, retracted, pending reviews


def _region_by_walk(removed: Sequence[str], limit: int) -> Op[dict[str, NodeInfo] | None]:
    """The nodes downstream of `removed` (and themselves), level by level; None as soon as there
    are more than `limit` of them."""
    records = yield cypher.region(removed)
    info: dict[str, NodeInfo] = {r[0]: (r[1], r[2], bool(r[3]), int(r[4] or 0)) for r in records}
    frontier = list(info)
    while frontier:
        records = yield cypher.step_down(frontier)
        frontier = []
        for _parent, node, kind, state, retracted, pending, *_ in records:
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
    top = (yield cypher.MAX_NODE_ID)[0][0]
    nodes: dict[str, NodeInfo] = {}
    edges: list[tuple[str, str, Any]] = []
    for low in range(0, (top or 0) + 1, SCAN_CHUNK):
        for r in (yield cypher.nodes_in_id_range(low, low + SCAN_CHUNK)):
            nodes[r[0]] = (r[1], r[2], bool(r[3]), int(r[4] or 0))
        edges += (yield cypher.edges_in_id_range(low, low + SCAN_CHUNK))
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
        justs, extra = yield from support_of(list(info), cypher.support)
        outside = {a: State(rest[0]) for a, rest in extra.items() if a not in info}
    else:
        info, justs, outside = yield from _region_by_scan(removed)
    gone = set(removed)
    region = Region(outside=outside)
    for node, (_kind, _state, retracted, pending) in info.items():
        region.nodes[node] = Premise(retracted or node in gone, pending)
        region.justifications[node] = justs.get(node, [])
    return label(region), {n: (k, s) for n, (k, s, _, _) in info.items()}


def require_kinds(ids: Sequence[str], kinds: Sequence[Kind], what: str) -> Op[None]:
    records = yield cypher.node_briefs(ids)
    found = {r[0]: r[1] for r in records}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFoundError(f"{what} not found: {', '.join(missing)}; check the ids")
    names = " or ".join(k.value.lower() for k in kinds)
    wrong = [i for i in ids if found[i] not in {k.value for k in kinds}]
    if wrong:
        raise InvalidInputError(f"{what} must be {names} ids; {', '.join(wrong)} "
                                f"{'is' if len(wrong) == 1 else 'are'} not")


def what_if_retracted(claim_ids: SequenceNotStr[str]) -> Op[WhatIfRetracted]:
    """Which nodes would change, and which decisions and actions would be blocked, if these claims
    (or sources) were retracted. Reads only: the graph is not written."""
    ids = check_ids(claim_ids, what="claim ids")
    if not ids:
        raise InvalidInputError("claim_ids is empty; name the claims to retract hypothetically")
    yield from require_kinds(ids, list(RETRACTABLE), "claim ids")
    labels, stored = yield from counterfactual_labels(ids)
    transitions = sorted(
        (Transition(id=n, kind=Kind(stored[n][0]), before=State(stored[n][1]), after=s)
         for n, s in labels.items() if State(stored[n][1]) is not s and not is_context(n)),
        key=lambda tr: tr.id)
    blocked = {n for n, s in labels.items() if s is not State.IN and not is_context(n)}
    return WhatIfRetracted(
        retracted=ids, transitions=transitions,
        blocked_decisions=sorted(n for n in blocked if stored[n][0] == Kind.DECISION.value),
        blocked_actions=sorted(n for n in blocked if stored[n][0] == Kind.ACTION.value))
