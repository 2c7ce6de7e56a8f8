"""The pure labelling rule (`rippl_core.tms.label`) against the naive reference, no database.

`label` relabels a region (a downstream-closed set of nodes) given the fixed states of the
antecedents outside it; the result must equal the reference evaluation of the whole graph."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from rippl_core.causal.tms import Premise, Region, label, reference_labels
from rippl_core.vocabulary import State

IN, AT_RISK, OUT = State.IN, State.AT_RISK, State.OUT


@st.composite
def graphs(draw: st.DrawFn) -> tuple[dict[str, Premise], dict[str, list[list[str]]]]:
    """Arbitrary support graphs: any node may support any other (cycles included), several
    alternative justifications per node, retracted and pending flags."""
    n = draw(st.integers(1, 14))
    nodes = [f"n{i}" for i in range(n)]
    premises = {
        node: Premise(retracted=draw(st.integers(0, 5)) == 0,
                      pending=draw(st.sampled_from([0, 0, 0, 1, 2])))
        for node in nodes
    }
    justs: dict[str, list[list[str]]] = {}
    for node in nodes:
        count = draw(st.sampled_from([0, 0, 1, 1, 1, 2, 3]))
        justs[node] = [draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=3, unique=True))
                       for _ in range(count)]
    return premises, justs


def downstream_closure(justs: dict[str, list[list[str]]], roots: set[str]) -> set[str]:
    consumers: dict[str, set[str]] = defaultdict(set)
    for node, js in justs.items():
        for j in js:
            for a in j:
                consumers[a].add(node)
    region, stack = set(roots), list(roots)
    while stack:
        for nxt in consumers[stack.pop()]:
            if nxt not in region:
                region.add(nxt)
                stack.append(nxt)
    return region


@settings(max_examples=400, deadline=None)
@given(graphs())
def test_label_of_whole_graph_equals_reference(graph: tuple[dict[str, Premise], dict[str, list[list[str]]]]
                                               ) -> None:
    premises, justs = graph
    region = Region(nodes=dict(premises), justifications=justs)
    assert label(region) == reference_labels(premises, justs)


@settings(max_examples=400, deadline=None)
@given(graphs(), st.data())
def test_label_of_a_downstream_closed_region_equals_reference(
        graph: tuple[dict[str, Premise], dict[str, list[list[str]]]], data: st.DataObject) -> None:
    premises, justs = graph
    expected = reference_labels(premises, justs)
    roots = set(data.draw(st.lists(st.sampled_from(sorted(premises)), min_size=1, max_size=3)))
    members = downstream_closure(justs, roots)
    region = Region(nodes={n: premises[n] for n in members},
                    justifications={n: justs[n] for n in members})
    for node in members:
        for j in justs[node]:
            for a in j:
                if a not in members:
                    region.outside[a] = expected[a]
    assert label(region) == {n: expected[n] for n in members}


@settings(max_examples=300, deadline=None)
@given(graphs(), st.data())
def test_without_pending_proposals_one_pass_labels_like_the_reference(
        graph: tuple[dict[str, Premise], dict[str, list[list[str]]]], data: st.DataObject) -> None:
    """`label` skips the second fixpoint when nothing in reach is under review (no pending count
    in the region, no AT_RISK antecedent outside it): the shortcut must change nothing."""
    premises, justs = graph
    premises = {n: Premise(retracted=p.retracted) for n, p in premises.items()}
    expected = reference_labels(premises, justs)
    roots = set(data.draw(st.lists(st.sampled_from(sorted(premises)), min_size=1, max_size=3)))
    members = downstream_closure(justs, roots)
    region = Region(nodes={n: premises[n] for n in members},
                    justifications={n: justs[n] for n in members},
                    outside={a: expected[a] for n in members for j in justs[n] for a in j
                             if a not in members})
    assert AT_RISK not in expected.values()
    assert label(region) == {n: expected[n] for n in members}


def test_premise_is_in_until_retracted_and_at_risk_while_proposed() -> None:
    assert reference_labels({"p": Premise()}, {}) == {"p": IN}
    assert reference_labels({"p": Premise(retracted=True)}, {}) == {"p": OUT}
    assert reference_labels({"p": Premise(pending=1)}, {}) == {"p": AT_RISK}
    assert reference_labels({"p": Premise(retracted=True, pending=1)}, {}) == {"p": OUT}


def test_a_cycle_never_supports_itself() -> None:
    # a and b support each other; a is also grounded on the premise p.
    justs = {"a": [["p"], ["b"]], "b": [["a"]]}
    grounded = {"p": Premise(), "a": Premise(), "b": Premise()}
    assert label(Region(grounded, justs)) == {"p": IN, "a": IN, "b": IN}
    cut = {**grounded, "p": Premise(retracted=True)}
    assert label(Region(cut, justs)) == {"p": OUT, "a": OUT, "b": OUT}
    proposed = {**grounded, "p": Premise(pending=1)}
    assert label(Region(proposed, justs)) == {"p": AT_RISK, "a": AT_RISK, "b": AT_RISK}
    # A cycle with no ground at all is OUT from the start.
    assert label(Region({"x": Premise(), "y": Premise()}, {"x": [["y"]], "y": [["x"]]})) == \
        {"x": OUT, "y": OUT}


def test_alternative_justification_keeps_a_node_in() -> None:
    premises = {"c1": Premise(retracted=True), "c2": Premise(), "d": Premise()}
    assert label(Region(premises, {"d": [["c1"], ["c2"]]}))["d"] is IN
    # One justification needing both: lost.
    assert label(Region(premises, {"d": [["c1", "c2"]]}))["d"] is OUT


def test_outside_states_are_respected() -> None:
    region = Region({"d": Premise()}, {"d": [["x"]]}, outside={"x": AT_RISK})
    assert label(region) == {"d": AT_RISK}
    region.outside["x"] = OUT
    assert label(region) == {"d": OUT}
    region.outside["x"] = IN
    assert label(region) == {"d": IN}
