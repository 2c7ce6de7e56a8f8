"""Truth maintenance on a real FalkorDB: the labels materialised in the database must equal the
reference evaluation (`rippl_core.tms.reference_labels`) of the same graph, after any sequence of
writes, retractions, reinstatements and review decisions. Every test runs on both backends."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from helpers_core import (
    IN,
    OUT,
    SUPPORTERS,
    GraphPlan,
    assert_consistent,
    fresh,
    graph_plans,
    snapshot,
    states_of,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import InvalidInputError, ReviewError, Rippl, State
from rippl_core.causal.tms import Premise, reference_labels

SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


class Model:
    """What the graph should be, kept in Python from the plan and the operations applied."""

    def __init__(self, plan: GraphPlan) -> None:
        self.plan = plan
        self.justs = plan.justifications()
        self.retracted = dict.fromkeys(plan.kinds, False)
        self.pending = dict.fromkeys(plan.kinds, 0)
        self.reviews: list[list[str]] = []  # [review id, claim, status]

    def labels(self, **override: Any) -> dict[str, str]:
        retracted = {**self.retracted, **override.get("retracted", {})}
        premises = {n: Premise(retracted[n], self.pending[n]) for n in self.plan.kinds}
        return {n: s.value for n, s in reference_labels(premises, self.justs).items()}


def operations(plan: GraphPlan) -> st.SearchStrategy[list[tuple[str, Any]]]:
    retractable = plan.ids("Source") + plan.ids("Claim")
    justifiable = [n for n in plan.kinds if plan.kinds[n] != "Source"]
    choices: list[st.SearchStrategy[tuple[str, Any]]] = [
        st.tuples(st.sampled_from(["retract", "reinstate", "propose"]), st.sampled_from(retractable)),
        st.tuples(st.sampled_from(["approve", "reject"]), st.integers(0, 5)),
    ]
    if justifiable:
        choices.append(st.tuples(st.just("justify"), st.tuples(
            st.sampled_from(justifiable), st.lists(st.integers(0, 50), min_size=1, max_size=2))))
    return st.lists(st.one_of(*choices), max_size=9)


def apply(handle: Rippl, model: Model, op: str, arg: Any) -> None:
    """Apply one operation to the database and to the model, checking refusals change nothing."""
    before = snapshot(handle)
    expected_error: type[Exception] | None = None
    if op == "retract":
        expected_error = InvalidInputError if model.retracted[arg] else None
    elif op == "reinstate":
        expected_error = None if model.retracted[arg] else InvalidInputError
    elif op == "propose":
        expected_error = ReviewError if model.retracted[arg] else None
    elif op in ("approve", "reject"):
        if not model.reviews:
            return
        review = model.reviews[arg % len(model.reviews)]
        expected_error = None if review[2] == "pending" else ReviewError
    if expected_error is not None:
        with pytest.raises(expected_error):
            run(handle, model, op, arg)
        assert snapshot(handle).causal() == before.causal(), f"refused {op} changed the graph"
        return
    run(handle, model, op, arg, before.states())


def run(handle: Rippl, model: Model, op: str, arg: Any, before: dict[str, str] | None = None) -> None:
    if op in ("retract", "reinstate"):
        method = handle.retract if op == "retract" else handle.reinstate
        wave = method(arg, reason=f"{op} in a property test", by="prop")
        model.retracted[arg] = op == "retract"
        expected = model.labels()
        assert before is not None
        assert {(t.id, t.before.value, t.after.value) for t in wave.transitions} == \
            {(n, before[n], expected[n]) for n in expected if before[n] != expected[n]}
    elif op == "propose":
        current = model.labels()
        hypothetical = model.labels(retracted={arg: True})
        item = handle.propose_retraction(arg, reason="suspected false", by="monitor")
        model.pending[arg] += 1
        model.reviews.append([item.id, arg, "pending"])
        assert item.claim == arg and item.status == "pending"
        assert sorted(item.at_risk) == sorted(
            n for n in current if n != arg and current[n] != OUT and hypothetical[n] == OUT)
    elif op in ("approve", "reject"):
        review = model.reviews[arg % len(model.reviews)]
        decide = handle.approve if op == "approve" else handle.reject
        receipt = decide(review[0], by="human")
        review[2] = "approved" if op == "approve" else "rejected"
        model.pending[review[1]] -= 1
        if op == "approve":
            model.retracted[review[1]] = True
        expected = model.labels()
        assert before is not None
        assert {(a["id"], a["before"], a["after"]) for a in receipt.body["affected"]} == \
            {(n, before[n], expected[n]) for n in expected if before[n] != expected[n]}
    elif op == "justify":
        node, picks = arg
        pool = [n for n in model.plan.kinds if model.plan.kinds[n] in SUPPORTERS[model.plan.kinds[node]]
                and n != node]
        if not pool:
            return
        ants = sorted({pool[i % len(pool)] for i in picks})
        added = handle.justify(node, ants)
        known = [sorted(set(j)) for j in model.justs[node]]
        assert added == (ants not in known)
        if added:
            model.justs[node].append(ants)


def check_against_model(handle: Rippl, model: Model) -> None:
    snap = snapshot(handle)
    assert snap.states() == model.labels()
    assert {n: bool(p.get("retracted")) for n, p in snap.nodes.items()} == model.retracted
    assert {n: int(p.get("pending") or 0) for n, p in snap.nodes.items()} == model.pending
    assert_consistent(snap)


@SETTINGS
@given(plan=st.one_of(graph_plans(cycles=False), graph_plans(cycles=True)),
       one_by_one=st.booleans(), data=st.data())
def test_random_graphs_and_operations_match_the_reference(
        backend: dict[str, object], plan: GraphPlan, one_by_one: bool, data: st.DataObject) -> None:
    with fresh(backend) as handle:
        plan.build(handle, one_by_one=one_by_one)
        model = Model(plan)
        check_against_model(handle, model)
        for op, arg in data.draw(operations(plan)):
            apply(handle, model, op, arg)
            check_against_model(handle, model)


# ------------------------------------------------------------------------------ targeted cases


def test_claim_asserted_by_two_sources_survives_one_retraction(rippl: Rippl) -> None:
    rippl.add_source("S1", "dashboard")
    rippl.add_source("S2", "pager alert")
    rippl.add_claim("C", "shard 03 disk at 91%", sources=["S1", "S2"])
    rippl.add_decision("D", "move billing off shard 03", premises=["C"])
    rippl.retract("S1", reason="dashboard was stale", by="sre")
    assert states_of(snapshot(rippl), ["S1", "C", "D"]) == {"S1": OUT, "C": IN, "D": IN}
    rippl.retract("S2", reason="alert misfired", by="sre")
    assert states_of(snapshot(rippl), ["C", "D"]) == {"C": OUT, "D": OUT}
    rippl.reinstate("S2", reason="alert was right", by="sre")
    assert states_of(snapshot(rippl), ["S1", "S2", "C", "D"]) == {"S1": OUT, "S2": IN, "C": IN, "D": IN}


def test_re_adding_a_claim_with_another_source_adds_an_alternative(rippl: Rippl) -> None:
    rippl.add_source("S1", "one")
    rippl.add_source("S2", "two")
    rippl.add_claim("C", "the claim", sources=["S1"])
    node = rippl.add_claim("C", "the claim", sources=["S2"])
    assert sorted(node.justifications) == [["S1"], ["S2"]]
    rippl.retract("S1", reason="wrong", by="x")
    assert rippl.get("C").state is State.IN


def test_alternative_justification_keeps_a_decision_holding(incident: Rippl) -> None:
    # DEC-012 rests on [CLM-001, CLM-004, CLM-006] or on [CLM-016, CLM-006].
    assert sorted(map(sorted, incident.get("DEC-012").justifications)) == \
        [["CLM-001", "CLM-004", "CLM-006"], ["CLM-006", "CLM-016"]]
    incident.retract("CLM-001", reason="disk errors on shard 09", by="telemetry")
    assert incident.get("DEC-012").state is State.IN
    assert incident.get("ACT-016").state is State.IN
    incident.retract("CLM-016", reason="also wrong", by="telemetry")
    assert incident.get("DEC-012").state is State.OUT
    assert incident.get("ACT-016").state is State.OUT
    assert_consistent(snapshot(incident))


def test_retracting_clm_001_takes_exactly_the_documented_nodes_out(incident: Rippl) -> None:
    before = snapshot(incident).states()
    assert set(before.values()) == {IN}
    wave = incident.retract("CLM-001", reason="disk errors on shard 09", by="telemetry")
    documented = {"CLM-001", "CLM-007", "DEC-001", "DEC-003", "DEC-005", "DEC-006", "DEC-007",
                  "ACT-001", "ACT-003", "ACT-004", "ACT-005", "ACT-006", "ACT-007", "ACT-008",
                  "ACT-009", "ACT-010", "ACT-011", "ACT-021"}
    after = snapshot(incident)
    assert {n for n, s in after.states().items() if s == OUT} == documented
    assert set(wave.changed(State.OUT)) == documented and len(wave.transitions) == 18
    assert_consistent(after)


def test_reinstate_restores_everything(incident: Rippl) -> None:
    before = snapshot(incident)
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    incident.retract("SRC-007", reason="stale", by="telemetry")
    wave = incident.reinstate("CLM-001", reason="false alarm", by="oncall")
    assert "ACT-001" in wave.changed(State.IN)
    incident.reinstate("SRC-007", reason="fine after all", by="oncall")
    after = snapshot(incident)
    assert after.causal() == before.causal()


def test_cycles_never_support_themselves(rippl: Rippl) -> None:
    rippl.add_source("S", "source")
    rippl.add_claim("P", "ground", sources=["S"])
    rippl.add_claim("A", "a", derived_from=["P"])
    rippl.add_claim("B", "b", derived_from=["A"])
    rippl.add_decision("D", "d", premises=["B"])
    assert rippl.justify("A", ["B"])  # A <-> B now support each other
    assert not rippl.justify("A", ["B"])  # the same justification twice is a no-op
    assert states_of(snapshot(rippl), ["A", "B", "D"]) == {"A": IN, "B": IN, "D": IN}
    rippl.retract("P", reason="wrong", by="x")
    snap = snapshot(rippl)
    assert states_of(snap, ["A", "B", "D"]) == {"A": OUT, "B": OUT, "D": OUT}
    assert_consistent(snap)
    item = rippl.propose_retraction("S", reason="check", by="x")
    assert rippl.get("A").state is State.OUT  # already out: a proposal cannot make it IN
    rippl.reject(item.id, by="y")
    rippl.reinstate("P", reason="right after all", by="x")
    assert states_of(snapshot(rippl), ["A", "B", "D"]) == {"A": IN, "B": IN, "D": IN}


def test_justification_cycle_of_decisions_goes_out_when_its_ground_goes(rippl: Rippl) -> None:
    rippl.add_claim("C", "ground")
    rippl.add_decision("D1", "one", premises=["C"])
    rippl.add_decision("D2", "two", depends_on=["D1"])
    rippl.add_decision("D3", "three", depends_on=["D2"])
    rippl.justify("D1", ["D3"])  # D1 <- D3 <- D2 <- D1, and D1 <- C
    rippl.add_action("A", "act", decisions=["D3"])
    rippl.retract("C", reason="wrong", by="x")
    assert states_of(snapshot(rippl), ["D1", "D2", "D3", "A"]) == dict.fromkeys(["D1", "D2", "D3", "A"], OUT)


def test_new_nodes_take_the_state_their_support_gives_them(rippl: Rippl) -> None:
    rippl.add_claim("C1", "retracted ground")
    rippl.add_claim("C2", "proposed ground")
    rippl.retract("C1", reason="wrong", by="x")
    rippl.propose_retraction("C2", reason="doubtful", by="x")
    assert rippl.add_decision("D1", "on the retracted", premises=["C1"]).state is State.OUT
    assert rippl.add_decision("D2", "on the proposed", premises=["C2"]).state is State.AT_RISK
    assert rippl.add_action("A", "on both", decisions=["D1", "D2"]).state is State.OUT
    assert_consistent(snapshot(rippl))


def test_justify_brings_an_out_node_back_with_its_dependents(rippl: Rippl) -> None:
    rippl.add_claim("C1", "first")
    rippl.add_claim("C2", "second")
    rippl.add_decision("D", "decision", premises=["C1"])
    rippl.add_action("A", "action", decisions=["D"])
    rippl.retract("C1", reason="wrong", by="x")
    assert rippl.get("A").state is State.OUT
    assert rippl.justify("D", ["C2"])
    assert states_of(snapshot(rippl), ["D", "A"]) == {"D": IN, "A": IN}


def test_replace_changes_support_and_relabels_downstream(rippl: Rippl) -> None:
    rippl.add_claim("C1", "first")
    rippl.add_claim("C2", "second")
    rippl.add_decision("D", "decision", premises=["C1"])
    rippl.add_action("A", "action", decisions=["D"])
    rippl.retract("C1", reason="wrong", by="x")
    node = rippl.add_decision("D", "decision, now on C2", premises=["C2"], replace=True)
    assert node.justifications == [["C2"]] and node.state is State.IN
    assert rippl.get("A").state is State.IN
    snap = snapshot(rippl)
    assert ("C1", "SUPPORTS", "D") not in {e[:3] for e in snap.edges}
    assert_consistent(snap)


def test_every_status_change_is_recorded_in_history(incident: Rippl) -> None:
    wave = incident.retract("CLM-001", reason="disk errors", by="telemetry")
    changes = [c for c in snapshot(incident).labelled("Change") if c.get("cause") == "retract"]
    assert sorted((c["node"], c["before"], c["after"]) for c in changes) == \
        sorted((t.id, t.before.value, t.after.value) for t in wave.transitions)


@pytest.mark.parametrize("shape", ["chain", "fan"])
def test_depth_and_fan_out_are_relabelled_completely(rippl: Rippl, shape: str) -> None:
    """A 40-deep chain of derived claims and a 300-wide fan both relabel exactly."""
    rippl.add_claim("root", "the root")
    spec: dict[str, list[dict[str, Any]]] = {"claims": []}
    if shape == "chain":
        spec["claims"] = [{"id": f"c{i}", "text": f"c{i}", "derived_from": [f"c{i - 1}" if i else "root"]}
                          for i in range(40)]
    else:
        spec["claims"] = [{"id": f"c{i}", "text": f"c{i}", "derived_from": ["root"]} for i in range(300)]
    rippl.load(spec)
    wave = rippl.retract("root", reason="wrong", by="x")
    assert len(wave.changed(State.OUT)) == len(spec["claims"]) + 1
    assert_consistent(snapshot(rippl))
    rippl.reinstate("root", reason="right", by="x")
    assert set(snapshot(rippl).states().values()) == {IN}


def test_retraction_time_is_recorded_as_valid_time(incident: Rippl) -> None:
    at = datetime(2026, 10, 8, 9, 30, tzinfo=UTC)
    wave = incident.retract("CLM-001", reason="disk errors", by="telemetry", at="2026-10-08T09:30:00Z")
    changes = [c for c in snapshot(incident).labelled("Change") if c.get("cause") == "retract"]
    assert {c["valid_from"] for c in changes} == {int(at.timestamp() * 1000)}
    assert all(c["recorded_at"] >= c["valid_from"] for c in changes)
    assert wave.at == at
    node = snapshot(incident).nodes["CLM-001"]
    assert node["retracted_at"] == int(at.timestamp() * 1000) and node["retracted_by"] == "telemetry"
