"""Truth maintenance: the pure labelling rule, no I/O.

A node is IN when it is not retracted itself and either has no justification (a premise) or has a
justification whose antecedents are all IN. Labels are the least fixpoint of that rule, so a cycle
never supports itself (well-founded support). A node is AT_RISK when it is IN now but would be OUT
if every pending retraction proposal were approved.

`label` recomputes a region of the graph given the fixed states of the antecedents outside it, in
time linear in the region's nodes and edges.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rippl_core.vocabulary import State


@dataclass(frozen=True, slots=True)
class Premise:
    """What the rule needs to know of a node itself."""

    retracted: bool = False
    pending: int = 0  # pending retraction proposals on this node


@dataclass
class Region:
    """Nodes to relabel, their justifications, and the fixed states of outside antecedents."""

    nodes: dict[str, Premise] = field(default_factory=dict)
    justifications: dict[str, list[list[str]]] = field(default_factory=dict)
    outside: dict[str, State] = field(default_factory=dict)


def _fixpoint(region: Region, *, hoped: bool) -> set[str]:
    """The set of region nodes that are IN under the rule (least fixpoint, linear time): as things
    are (`hoped` False: a retracted node is blocked, an outside antecedent counts unless OUT), or
    as they would be if every pending proposal were approved (`hoped` True: a node under review
    is blocked too, and only an IN outside antecedent counts)."""
    nodes, outside, all_justs = region.nodes, region.outside, region.justifications
    counts = (State.IN,) if hoped else (State.IN, State.AT_RISK)
    missing: dict[tuple[str, int], int] = {}
    waiting: dict[str, list[tuple[str, int]]] = defaultdict(list)
    ready: list[str] = []
    for node, premise in nodes.items():
        if premise.retracted or (hoped and premise.pending > 0):
            continue
        justs = all_justs.get(node)
        if not justs:
            ready.append(node)
            continue
        for j, antecedents in enumerate(justs):
            inside: list[str] = []
            for a in antecedents:
                if a in nodes:
                    inside.append(a)
                elif outside.get(a, State.OUT) not in counts:
                    break  # an antecedent outside the region holds this justification down
            else:
                if not inside:
                    ready.append(node)
                    continue
                distinct = set(inside) if len(inside) > 1 else inside
                key = (node, j)
                missing[key] = len(distinct)
                for a in distinct:
                    waiting[a].append(key)
    labelled: set[str] = set()
    while ready:
        node = ready.pop()
        if node in labelled:
            continue
        labelled.add(node)
        for key in waiting.get(node, ()):
            missing[key] -= 1
            if missing[key] == 0:
                ready.append(key[0])
    return labelled


def label(region: Region) -> dict[str, State]:
    """The state of every node of the region."""
    actual = _fixpoint(region, hoped=False)
    if not any(p.pending for p in region.nodes.values()) and State.AT_RISK not in set(
            region.outside.values()):
        # no proposal pending anywhere in reach: what would hold if every proposal were approved
        # is what holds now, so no node is AT_RISK (the second fixpoint would be this one)
        return {node: State.IN if node in actual else State.OUT for node in region.nodes}
    hoped = _fixpoint(region, hoped=True)
    return {
        node: State.OUT if node not in actual else State.IN if node in hoped else State.AT_RISK
        for node in region.nodes
    }


def reference_labels(premises: Mapping[str, Premise],
                     justifications: Mapping[str, Sequence[Sequence[str]]]) -> dict[str, State]:
    """A deliberately naive evaluation of a whole graph, for tests: iterate to the fixpoint."""

    def evaluate(blocked: Callable[[Premise], bool]) -> set[str]:
        inn: set[str] = set()
        changed = True
        while changed:
            changed = False
            for node, premise in premises.items():
                if node in inn or blocked(premise):
                    continue
                justs = justifications.get(node) or []
                if not justs or any(all(a in inn for a in j) for j in justs):
                    inn.add(node)
                    changed = True
        return inn

    actual = evaluate(lambda p: p.retracted)
    hoped = evaluate(lambda p: p.retracted or p.pending > 0)
    return {n: State.OUT if n not in actual else State.IN if n in hoped else State.AT_RISK
            for n in premises}
