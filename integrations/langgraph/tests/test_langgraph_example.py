"""The example app runs offline and tells the story it promises."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from rippl_core.testing import FalkorDBServer

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "langgraph_ops_agent.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("langgraph_ops_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_offline_story_veto_fallback_and_time_travel(example: ModuleType, falkordb_server: FalkorDBServer,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    outcome = example.run_demo(url=falkordb_server.url)
    assert [name for name, _ in outcome.ran] == ["resize_volume", "migrate_tables"]
    assert outcome.ran[-1][1] == {"table": "billing", "shard": "07"}  # the fallback, never 09
    assert len(outcome.reviews) == 1 and outcome.reviews[0]["reviews"][0]["claim"] == "CLM-001"
    assert any("CLM-001 -> DEC-001 -> ACT-001" in veto for veto in outcome.vetoes)
    believed = [held for _, held in outcome.history]
    assert ["shards/09-health=CLM-001"] in believed and believed[-1] == ["shards/07-health=CLM-003"]
    first = believed.index(["shards/09-health=CLM-001"])
    assert all(held == [] for held in believed[:first])  # nothing believed before the agent noted it
    out = capsys.readouterr().out
    assert "[Proposed Retraction]" in out and "[Retracted]" in out and "chain intact" in out


def test_rejecting_the_retraction_lets_the_plan_run(example: ModuleType,
                                                    falkordb_server: FalkorDBServer) -> None:
    outcome = example.run_demo(url=falkordb_server.url, decision="reject")
    assert outcome.ran[-1] == ("migrate_tables", {"table": "billing", "shard": "09"})
    assert outcome.vetoes == [] and outcome.final.startswith("Billing migrated to shard 09")


def test_capture_story_veto_replan_and_compensation(example: ModuleType,
                                                    falkordb_server: FalkorDBServer) -> None:
    """Nothing declared: the captured health read is retracted while the migration waits for
    approval; on resume the migration is vetoed, the model re-plans, the announcement is owed."""
    outcome = example.run_capture_demo(url=falkordb_server.url)
    assert [name for name, _ in outcome.ran] == ["get_shard_health", "announce_window",
                                                 "get_shard_health", "migrate_tables"]
    assert outcome.ran[-1] == ("migrate_tables", {"table": "billing", "shard": "07"})
    assert len(outcome.approvals) == 2  # both migrations paused for the human; 09 never ran
    claim = outcome.retracted
    assert claim is not None and claim.startswith("CLM-")
    veto, retried = outcome.vetoes  # the model asked again: the veto binds the action
    assert f"{claim} -> DEC-" in veto and "-> ACT-" in veto and "stale cache" in veto
    assert "repeats the call vetoed at turn" in retried and claim in retried
    [owed] = outcome.compensations
    assert owed.tool == "announce_window" and owed.run == "inc-4472"
    assert owed.blockers[0].premise == claim and owed.blockers[0].trail[-1] == owed.action
    calls = [names for _, names, _ in outcome.steps]
    assert calls == ["get_shard_health", "announce_window", "migrate_tables", "migrate_tables",
                     "get_shard_health", "migrate_tables"]
    premises = [held for _, _, held in outcome.steps]
    assert claim not in premises[0]  # before the read
    assert premises[1][claim] == premises[2][claim] == "Retracted"  # the announcement, the 09 move
    assert claim not in premises[4] and claim not in premises[5]  # told by the veto: re-planned without
    assert outcome.final.startswith("Billing is on shard 07")


def test_capture_story_without_the_retraction_migrates_to_09(example: ModuleType,
                                                             falkordb_server: FalkorDBServer) -> None:
    outcome = example.run_capture_demo(url=falkordb_server.url, decision="reject")
    assert outcome.ran[-1] == ("migrate_tables", {"table": "billing", "shard": "09"})
    assert outcome.vetoes == [] and outcome.compensations == [] and outcome.retracted is None
    assert outcome.final == "Billing migrated to shard 09 as planned."


def test_main_runs_offline_without_a_key(example: ModuleType, falkordb_server: FalkorDBServer,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    assert example.main(["--url", falkordb_server.url]) == 0
    out = capsys.readouterr().out
    assert "Story 1, declared premises. Model: scripted (offline)" in out
    assert "Story 2, captured premises" in out and "Compensations (executed on a premise" in out


@pytest.mark.groq
def test_live_groq_path(example: ModuleType, falkordb_server: FalkorDBServer) -> None:
    import os

    key = os.environ.get("GROQ_API_KEY")
    if not key or importlib.util.find_spec("langchain_groq") is None:
        pytest.skip("needs GROQ_API_KEY and langchain-groq")
    outcome = example.run_demo(url=falkordb_server.url, live_key=key)
    assert ("migrate_tables", {"table": "billing", "shard": "09"}) not in outcome.ran


def test_handover_story_vetoes_across_runs_and_an_override_lets_one_call_run(
        example: ModuleType, falkordb_server: FalkorDBServer) -> None:
    """The supervisor acts on a research subgraph's report whose reading was retracted: vetoed,
    naming both runs; one approved override lets exactly one resize run; the next is vetoed."""
    outcome = example.run_handover_demo(url=falkordb_server.url)
    resizes = [args for name, args in outcome.ran if name == "resize_replicas"]
    assert resizes == [{"shard": "09", "replicas": 3}]  # once, under the override
    handed, again = outcome.vetoes
    assert "from run inc-4473/research" in handed and "into run inc-4473/supervisor" in handed
    assert "-> HND-" in handed
    assert "repeats the call vetoed" in again
    assert outcome.override is not None


def test_notices_story_stale_superseded_and_a_retraction_by_provenance(
        example: ModuleType, falkordb_server: FalkorDBServer) -> None:
    """Real graphs, scripted models: the migration on a 12-minute-old reading is denied as stale,
    the model reads again ("degraded"); the planner's waiting resize is denied as superseded,
    naming the newer reading; one alert-driven review retracts what fetch_url returned from
    evil.example in three runs: the waiting call is vetoed, the two that ran are listed."""
    outcome = example.run_notices_demo(url=falkordb_server.url)
    stale, superseded, vetoed = outcome.denials
    assert "denied as stale" in stale and "shard 09: healthy" in stale
    assert "12 min ago" in stale and "fresh for 5 min" in stale and "read it again" in stale.lower()
    reads = [args for name, args in outcome.ran if name == "get_shard_health"]
    assert reads == [{"shard": "09"}] * 3  # the planner's, the ops agent's, and its re-read
    assert "denied as superseded" in superseded and "shard 09: degraded" in superseded
    assert "run notices/ops-agent" in superseded
    assert not any(name in ("migrate_tables", "resize_replicas") for name, _ in outcome.ran)
    assert outcome.new_reviews_before_alert == 0  # stale is not false: nothing to review
    [item] = outcome.reviews
    assert len(item.claims) == 3
    [receipt] = outcome.receipts
    assert len(receipt.body["sources"]) == 3
    assert "Premise Retracted" in vetoed and "evil.example serves a prompt injection" in vetoed
    assert ("open_ticket", {"queue": "capacity"}) not in outcome.ran
    assert sorted((c.tool, c.run) for c in outcome.compensations) == [
        ("post_summary", "notices/researcher"), ("send_email", "notices/writer")]
