"""The incident graph behaves the same on embedded FalkorDB and on a TCP server."""

from __future__ import annotations

from rippl_core import Rippl, State, ToolCall


def test_retract_vetoes_and_reinstate_restores(incident: Rippl) -> None:
    assert incident.check("ACT-001").allowed
    wave = incident.retract("CLM-001", reason="disk errors on shard 09", by="telemetry")
    assert "ACT-001" in wave.changed(State.OUT)
    verdict = incident.check("ACT-001")
    assert not verdict.allowed
    assert verdict.blockers[0].premise == "CLM-001"
    assert verdict.blockers[0].trail[0] == "CLM-001" and verdict.blockers[0].trail[-1] == "ACT-001"
    assert incident.check(ToolCall(name="migrate_tables",
                                   args={"table": "billing", "shard": "07"})).allowed
    incident.reinstate("CLM-001", reason="false alarm", by="oncall")
    assert incident.check("ACT-001").allowed


def test_sources_of_a_claim_must_be_sources(incident: Rippl) -> None:
    import pytest

    from rippl_core import InvalidInputError, NotFoundError

    with pytest.raises(InvalidInputError, match="must be Source nodes"):
        incident.add_claim("CLM-X", "derived by mistake", sources=["CLM-001"])
    with pytest.raises(NotFoundError):
        incident.get("CLM-X")
    assert incident.add_claim("CLM-Y", "properly derived", derived_from=["CLM-001"]).status == "Verified"


def test_a_retracted_claim_is_its_own_blocker_even_under_other_failures(rippl: Rippl) -> None:
    rippl.add_source("S", "dashboard")
    rippl.add_claim("C", "shard 09 is healthy", sources=["S"])
    rippl.retract("S", reason="dashboard was stale", by="oncall")
    rippl.retract("C", reason="disk errors", by="oncall")
    premises = {b.premise for b in rippl.check("C").blockers}
    assert premises == {"S", "C"}


def test_approving_after_a_direct_retraction_keeps_the_original_record(incident: Rippl) -> None:
    item = incident.propose_retraction("CLM-001", reason="suspected disk errors", by="monitor")
    incident.retract("CLM-001", reason="confirmed: disk failed", by="alice")
    incident.approve(item.id, by="bob")
    claim = incident.get("CLM-001")
    assert claim.reason == "confirmed: disk failed" and claim.pending_reviews == 0
    assert claim.status == "Retracted"
