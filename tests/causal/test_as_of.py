"""`check(..., as_of=T, known_at=K)` against a reference: retractions and reinstatements recorded
out of valid-time order (a later record with an earlier `at`), with ties, asked at every valid
time around them and known at before and after each record. The reference takes each source's and
claim's own retraction at T as recorded by K (the latest record whose `at` <= T wins) and runs a
naive truth-maintenance fixpoint; the verdict must agree, and name as blockers only premises that
were retracted themselves then. Both backends."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
from helpers_core import fresh
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import Rippl
from rippl_core._runtime.timeutil import now_ms

BASE = 1_767_225_600_000  # 2026-01-01T00:00:00Z
HOUR = 3_600_000
SOURCES = ["S0", "S1", "S2"]
CLAIMS = ["C0", "C1", "C2"]
RETRACTABLE = SOURCES + CLAIMS


@dataclass
class Plan:
    claim_sources: list[list[str]]
    derived: list[str | None]  # C1, C2 may also rest on an earlier claim (one more justification)
    decisions: list[list[str]]
    actions: list[list[str]]
    ops: list[tuple[str, int]]  # (node, valid-time slot); retract, or reinstate if retracted


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    subset = lambda items: st.lists(st.sampled_from(items), min_size=1, max_size=len(items),  # noqa: E731
                                    unique=True)
    claim_sources = [draw(subset(SOURCES)) for _ in CLAIMS]
    derived = [None, draw(st.sampled_from([None, "C0"])), draw(st.sampled_from([None, "C0", "C1"]))]
    decisions = [draw(subset(CLAIMS)) for _ in range(2)]
    actions = [draw(subset(["D0", "D1"])) for _ in range(2)]
    ops = draw(st.lists(st.tuples(st.sampled_from(RETRACTABLE), st.integers(0, 4)), min_size=1,
                        max_size=7))
    return Plan(claim_sources, derived, decisions, actions, ops)


def build(rippl: Rippl, plan: Plan) -> None:
    for source in SOURCES:
        rippl.add_source(source, f"source {source}")
    for claim, sources, derived in zip(CLAIMS, plan.claim_sources, plan.derived, strict=True):
        rippl.add_claim(claim, f"claim {claim}", sources=sources,
                        derived_from=[derived] if derived else [])
    for i, premises in enumerate(plan.decisions):
        rippl.add_decision(f"D{i}", f"decision {i}", premises=premises)
    for i, decisions in enumerate(plan.actions):
        rippl.add_action(f"A{i}", f"action {i}", decisions=decisions)


def justifications(plan: Plan) -> dict[str, list[list[str]]]:
    justs: dict[str, list[list[str]]] = {s: [] for s in SOURCES}
    for claim, sources, derived in zip(CLAIMS, plan.claim_sources, plan.derived, strict=True):
        justs[claim] = [[s] for s in sources] + ([[derived]] if derived else [])
    justs |= {f"D{i}": [premises] for i, premises in enumerate(plan.decisions)}
    justs |= {f"A{i}": [decisions] for i, decisions in enumerate(plan.actions)}
    return justs


def reference_in(justs: dict[str, list[list[str]]], retracted: set[str]) -> set[str]:
    """Naive least fixpoint: IN when not retracted and a premise, or some justification all IN."""
    inn: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node, js in justs.items():
            if node not in inn and node not in retracted and (
                    not js or any(all(a in inn for a in j) for j in js)):
                inn.add(node)
                changed = True
    return inn


def retracted_at(records: list[tuple[str, bool, int, int]], t: int, known: int) -> set[str]:
    """Own retraction at valid time t as recorded by `known`: per node, the last record (in
    recording order) whose valid time is at or before t decides."""
    state: dict[str, bool] = {}
    for node, retract, at, recorded in records:  # in recording order
        if recorded <= known and at <= t:
            state[node] = retract
    return {node for node, retract in state.items() if retract}


@pytest.mark.parametrize("backend_name", ["embedded", "server"])
def test_check_as_of_matches_the_reference(backend_name: str,
                                           request: pytest.FixtureRequest) -> None:
    backend: dict[str, Any] = (
        {"path": request.getfixturevalue("embedded_db")} if backend_name == "embedded"
        else {"url": request.getfixturevalue("falkordb_server").url})

    @settings(max_examples=25, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(plans())
    def run(plan: Plan) -> None:
        with fresh(backend) as rippl:
            build(rippl, plan)
            records: list[tuple[str, bool, int, int]] = []
            knowns = [now_ms()]
            retracted: set[str] = set()
            for node, slot in plan.ops:
                time.sleep(0.003)  # distinct transaction times
                at = BASE + slot * HOUR
                if node in retracted:
                    rippl.reinstate(node, reason="back", by="test", at=at)
                    retracted.discard(node)
                else:
                    rippl.retract(node, reason="false", by="test", at=at)
                    retracted.add(node)
                recorded = now_ms()
                records.append((node, node in retracted, at, recorded))
                knowns.append(recorded)
                time.sleep(0.003)
            justs = justifications(plan)
            valid_times = [BASE - HOUR, *(BASE + s * HOUR + d for s in range(5) for d in (0, 1))]
            for known in knowns:
                for t in valid_times:
                    own = retracted_at(records, t, known)
                    expected = reference_in(justs, own)
                    for action in ("A0", "A1"):
                        verdict = rippl.check(action, as_of=t, known_at=known)
                        assert verdict.allowed == (action in expected), (plan, t, known, verdict)
                        assert {b.premise for b in verdict.blockers} <= own, verdict
                        if not verdict.allowed:
                            assert verdict.blockers, verdict

    run()


def test_proposals_are_at_risk_only_while_undecided(rippl: Rippl) -> None:
    rippl.add_source("S", "s")
    rippl.add_claim("C", "c", sources=["S"])
    rippl.add_claim("C2", "derived", derived_from=["C"])
    rippl.add_decision("D", "d", premises=["C2"])
    rippl.add_action("A", "a", decisions=["D"])
    before = now_ms()
    time.sleep(0.003)
    review = rippl.propose_retraction("C", reason="maybe", by="monitor")
    time.sleep(0.003)
    pending = now_ms()
    time.sleep(0.003)
    rippl.reject(review.id, by="alice")
    time.sleep(0.003)
    after = now_ms()
    assert rippl.check("A", as_of=before, known_at=after).allowed
    during = rippl.check("A", as_of=pending, known_at=after)
    assert not during.allowed and [b.premise for b in during.blockers] == ["C"]
    assert during.blockers[0].trail == ["C", "C2", "D", "A"]
    assert rippl.check("A", as_of=pending, known_at=after, at_risk="allow").allowed
    assert rippl.check("A", as_of=after, known_at=after).allowed
    assert rippl.check("A", as_of=pending, known_at=before).allowed  # not known yet then


def test_a_graph_written_before_own_records_gets_them_on_open(backend: dict[str, object]) -> None:
    with fresh(backend) as rippl:
        rippl.add_claim("C", "c")
        rippl.add_decision("D", "d", premises=["C"])
        rippl.retract("C", reason="false", by="test", at=BASE)
        graph = rippl.graph
        rippl.redis.execute_command("GRAPH.QUERY", rippl.keys.graph, "MATCH (r:Retraction) DELETE r")
        rippl.redis.delete(rippl.keys.schema)
        with Rippl.open(graph=graph, **backend) as reopened:  # type: ignore[arg-type]
            assert not reopened.check("D", as_of=BASE + HOUR).allowed
            assert reopened.check("D", as_of=BASE - HOUR).allowed
