"""`explain(node_id)` (the core op behind the MCP explain tool), on both backends."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import AsyncRippl, InvalidInputError, NotFoundError, Rippl, State


def test_alternative_justification_keeps_a_decision_holding(incident: Rippl) -> None:
    before = incident.explain("DEC-012")
    assert before.state is State.IN and before.holding == [0, 1]
    incident.retract("CLM-001", reason="disk errors on shard 09", by="telemetry")
    after = incident.explain("DEC-012")
    assert after.status == "Holding" and after.holding == [1]
    broken, kept = after.justifications
    assert broken.standing == "broken" and kept.standing == "holds"
    assert {a.id for a in broken.antecedents} == {"CLM-001", "CLM-004", "CLM-006"}
    assert next(a for a in broken.antecedents if a.id == "CLM-001").status == "Retracted"
    assert "It holds because justification 2 holds." in after.summary
    assert after.blockers == []


def test_an_invalidated_action_names_its_root_cause(incident: Rippl) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="telemetry")
    why = incident.explain("ACT-001")
    assert why.status == "Premise Retracted" and why.holding == []
    assert [j.standing for j in why.justifications] == ["broken"]
    assert why.blockers[0].premise == "CLM-001"
    assert why.blockers[0].trail == ["CLM-001", "DEC-001", "ACT-001"]
    assert "Root cause: CLM-001 is Retracted (disk errors on shard 09)" in why.summary
    claim = incident.explain("CLM-001")
    assert claim.retracted and claim.retracted_by == "telemetry"
    assert claim.retracted_reason == "disk errors on shard 09" and claim.retracted_at is not None
    assert "retracted by telemetry" in claim.summary


def test_a_pending_review_puts_dependents_at_risk(incident: Rippl) -> None:
    incident.propose_retraction("CLM-003", reason="replica lag", by="monitor")
    claim = incident.explain("CLM-003")
    assert claim.status == "Proposed Retraction" and claim.pending_reviews == 1
    assert "awaits human review" in claim.summary
    decision = incident.explain("DEC-013")
    assert decision.status == "Premise At Risk" and decision.justifications[0].standing == "at_risk"
    assert decision.blockers[0].premise == "CLM-003"


def test_a_premise_and_bad_ids(incident: Rippl) -> None:
    source = incident.explain("SRC-001")
    assert source.premise and source.justifications == [] and source.status == "Active"
    with pytest.raises(NotFoundError):
        incident.explain("NOPE-1")
    with pytest.raises(InvalidInputError):
        incident.explain("")


@pytest.mark.asyncio(loop_scope="session")
async def test_async_twin_gives_the_same_answer(incident: Rippl, arippl: AsyncRippl) -> None:
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    assert await arippl.explain("DEC-005") == incident.explain("DEC-005")


# A random DAG of claims and decisions, with alternative justifications, then random retractions
# and proposals: explain's account must agree with the materialised state of every node.
graphs = st.integers(min_value=2, max_value=5).flatmap(lambda claims: st.tuples(
    st.just(claims),
    st.lists(st.lists(st.lists(st.integers(0, 20), min_size=1, max_size=3), min_size=1, max_size=2),
             min_size=1, max_size=5),
    st.lists(st.tuples(st.integers(0, claims - 1), st.sampled_from(["retract", "propose"])),
             max_size=3),
))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=graphs)
def test_explanation_agrees_with_the_state(rippl: Rippl, shape: tuple) -> None:  # type: ignore[type-arg]
    claims, decisions, events = shape
    run = uuid.uuid4().hex[:6]
    ids = [rippl.add_claim(f"C{i}-{run}", f"claim {i} {run}").id for i in range(claims)]
    for d, justifications in enumerate(decisions):
        first, *alternatives = [sorted({ids[k % len(ids)] for k in j}) for j in justifications]
        ids.append(rippl.add_decision(f"D{d}-{run}", f"decision {d}", premises=first).id)
        for alternative in alternatives:
            rippl.justify(ids[-1], alternative)
    for index, event in events:
        node = rippl.get(ids[index])
        if event == "retract" and not node.retracted:
            rippl.retract(ids[index], reason="wrong", by="test")
        elif event == "propose" and not node.retracted:
            rippl.propose_retraction(ids[index], reason="maybe", by="test")
    for node_id in ids:
        e = rippl.explain(node_id)
        assert e.state is rippl.get(node_id).state
        standings = {j.standing for j in e.justifications}
        if e.retracted:
            assert e.state is State.OUT
        elif e.premise:
            assert e.state is (State.AT_RISK if e.pending_reviews else State.IN)
        elif e.pending_reviews == 0:
            expected = (State.IN if "holds" in standings else
                        State.AT_RISK if "at_risk" in standings else State.OUT)
            assert e.state is expected, e.summary
        assert bool(e.holding) == ("holds" in standings)
        assert (e.blockers == []) == (e.state is State.IN)
