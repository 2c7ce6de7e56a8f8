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
