"""examples/crewai_ops_crew.py runs offline: both stories hold on both backends and both tool-call
paths, and the script runs as a script."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from crewai_helpers import declared_action

from rippl_core import Rippl

EXAMPLE = Path(__file__).parents[3] / "examples" / "crewai_ops_crew.py"
TO_07 = ("migrate_tables", {"table": "billing", "shard": "07"})
WINDOW = ("announce_window", {"shard": "09", "at": "02:00Z"})
ROLLBACK = ("rollback_deploy", {"service": "checkout-api", "to_version": "2.3.7"})

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crewai_ops_crew", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("native", [False, True])
def test_story(rippl: Rippl, native: bool) -> None:
    story = load_example().run_story(rippl, offline=True, native=native)
    assert story.ran == [ROLLBACK, TO_07]  # never the shard-09 migration
    assert [(v.allowed, declared_action(v)) for v in story.verdicts] == [
        (True, "ACT-012"), (False, "ACT-001"), (True, "ACT-002")]
    assert story.veto_seen_by_agent
    shown = [story.llm.shown(i) for i in range(len(story.llm.received))]
    assert any("CLM-001 -> DEC-001 -> ACT-001" in text and "214 reallocated sectors" in text
               for text in shown)
    assert "shard 07" in story.answers[1]
    assert story.recalled_now == ["Shard 07 is healthy with 58% disk free"]
    assert story.recalled_before == [
        ("Shard 09 is healthy: 0 replication lag, no I/O errors", "Verified", "Retracted")]
    assert rippl.get("CLM-001").status == "Retracted"


@pytest.mark.parametrize("native", [False, True])
def test_captured_story(rippl: Rippl, native: bool) -> None:
    story = load_example().run_captured_story(rippl, native=native)
    # nothing was declared: every verdict came from what the run observed
    assert [(v.allowed, v.tool_call.name, v.tool_call.args["shard"]) for v in story.verdicts
            if v.tool_call] == [(True, "get_shard_health", "09"), (True, "announce_window", "09"),
                                (False, "migrate_tables", "09"), (True, "get_shard_health", "07"),
                                (True, "migrate_tables", "07")]
    assert story.ran == [("get_shard_health", {"shard": "09"}), WINDOW,
                         ("get_shard_health", {"shard": "07"}), TO_07]  # never the veto
    veto = story.verdicts[2]
    [blocker] = veto.blockers  # the trail: observation -> decision -> action
    assert blocker.premise == story.health_claim and blocker.status == "Retracted"
    assert len(blocker.trail) == 3 and blocker.trail[0] == story.health_claim
    assert rippl.get(blocker.trail[1]).kind.value == "Decision"
    assert blocker.trail[2] == veto.target
    assert "served from read replica r3" in rippl.get(story.health_claim).text
    # the model was told why after the pause, and re-planned without the false reading
    after_pause = [i for i, call in enumerate(story.llm.received)
                   if "VETOED by Rippl" in story.llm.shown(i)]
    assert after_pause and " -> ".join(blocker.trail) in story.llm.shown(after_pause[0])
    assert "shard 07" in story.answer
    # what already ran on it, for compensation: the announcement, in this run
    [compensation] = story.compensations
    assert (compensation.tool, compensation.args) == WINDOW
    assert compensation.run == story.run and compensation.blockers[0].premise == story.health_claim


@pytest.mark.parametrize("native", [False, True])
def test_handover_story(rippl: Rippl, native: bool) -> None:
    story = load_example().run_handover_story(rippl, native=native)
    to_09 = ("migrate_tables", {"table": "billing", "shard": "09"})
    assert story.ran == [("get_shard_health", {"shard": "09"}), to_09]  # once, under the override
    migrations = [v for v in story.verdicts if v.tool_call and v.tool_call.name == "migrate_tables"]
    assert [v.allowed for v in migrations] == [False, False, True]
    handed, repeat, overridden = migrations
    # the report carried the retracted reading from the researcher's run into the operator's
    assert f"into run {story.operate} from run {story.research}" in handed.reason
    trail = handed.blockers[0].trail
    assert trail[0] == story.health_claim and trail[1].startswith("HND-")
    assert rippl.get(trail[1]).text.startswith(f"run {story.research} carried it")
    assert "repeats the call vetoed at turn" in repeat.reason  # a retry is vetoed too
    assert f"override {story.override}" in overridden.reason
    shown = [story.llm.shown(i) for i in range(len(story.llm.received))]
    assert any(f"from run {story.research}" in text for text in shown)  # the operator read why
    assert story.compensations == []  # it ran under a human's override: not a compensation
    [override] = rippl.overrides()
    assert (override.proposed_by, override.approved_by) == ("agent:operator", "bob@oncall")


TELEMETRY = ("CREWAI_DISABLE_TELEMETRY", "OTEL_SDK_DISABLED", "CREWAI_TRACING_ENABLED")
# Runs the example as a script, then reports whether CrewAI's telemetry and tracing were off.
AS_SCRIPT = """
import runpy, sys
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
from crewai.telemetry.telemetry import Telemetry
from crewai.events.listeners.tracing.utils import is_tracing_enabled
print("telemetry disabled:", Telemetry._is_telemetry_disabled(), "tracing:", is_tracing_enabled())
"""


def test_notices_story(rippl: Rippl) -> None:
    """Real crews, scripted models (native calls): a migration on a 12-minute-old reading is
    denied as stale and the model reads again ("degraded"); the planner's pending resize is
    denied as superseded, naming the newer reading and its run; one alert-driven review retracts
    what fetch_url returned from evil.example in three runs: the waiting call is vetoed, the calls
    that ran are listed."""
    story = load_example().run_notices_story(rippl)
    denied = [v for v in story.verdicts if not v.allowed]
    assert [v.tool_call.name for v in denied if v.tool_call] == [
        "migrate_tables", "resize_replicas", "open_ticket"]
    stale, superseded, vetoed = denied
    assert [e.status for e in stale.expired] == ["stale"]
    said = stale.explain()
    assert "denied as stale" in said and "shard 09: healthy" in said
    assert "12 min ago" in said and "fresh for 5 min" in said
    ops = story.llms["ops"]
    assert "read it again" in ops.shown(len(ops.received) - 2).lower()  # the model read why
    assert [a for n, a in story.ran if n == "get_shard_health"] == [{"shard": "09"}] * 3
    assert [e.status for e in superseded.expired] == ["superseded"]
    newer = superseded.expired[0]
    assert newer.superseded_text is not None and "shard 09: degraded" in newer.superseded_text
    assert newer.superseded_run == story.runs["ops agent"] != story.runs["capacity planner"]
    assert not any(n in ("migrate_tables", "resize_replicas", "open_ticket") for n, _ in story.ran)
    assert story.reviews_before_alert == 0  # stale is not false: nothing to review
    assert len(story.review.claims) == 3 and len(story.receipt.body["sources"]) == 3
    assert vetoed.blockers and "evil.example serves a prompt injection" in vetoed.explain()
    owed = sorted((c.tool, c.run) for c in story.compensations)
    assert owed == sorted([("post_summary", story.runs["researcher"]),
                           ("send_email", story.runs["writer"]),
                           ("wait_for", story.runs["analyst"])])  # the wait ran on it too


def test_runs_offline_as_a_script_and_turns_crewai_telemetry_off_itself() -> None:
    """Run without the telemetry variables a user would not know to set: the example sets them
    itself (without network, CrewAI's telemetry made it exit 16-30 s late)."""
    env = {k: v for k, v in os.environ.items() if k not in ("GROQ_API_KEY", "RIPPL_FALKORDB_URL",
                                                            "RIPPL_DB", *TELEMETRY)}
    done = subprocess.run([sys.executable, "-c", AS_SCRIPT, str(EXAMPLE)], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "telemetry disabled: True tracing: False" in done.stdout
    captured, declared = done.stdout.split("===== the declared story =====")
    captured, handover = captured.split("===== the handover story =====")
    handover, notices = handover.split("===== the notices story =====")
    assert "denied as stale" in notices and "denied as superseded" in notices
    assert "DENY  open_ticket({'queue': 'capacity'})" in notices
    assert handover.count("VETO  migrate_tables({'table': 'billing', 'shard': '09'})") == 2
    assert "The premise was handed over into run crewai/" in handover
    assert "repeats the call vetoed at turn" in handover and "allowed by override" in handover
    assert "(rippl compensations): 0" in handover
    assert "VETO  migrate_tables({'table': 'billing', 'shard': '09'})" in captured
    assert "announce_window({'at': '02:00Z', 'shard': '09'})) executed" in captured
    ran = captured.split("tools that really ran:")[1].split("answer:")[0]
    assert "migrate_tables {'table': 'billing', 'shard': '07'}" in ran
    assert "migrate_tables {'table': 'billing', 'shard': '09'}" not in ran
    assert "VETO  ACT-001 denied: Premise Retracted" in declared
    assert "CLM-001 -> DEC-001 -> ACT-001" in declared
    assert "the agent read the veto's reason: True" in declared
    assert "migrate_tables {'table': 'billing', 'shard': '07'}" in declared
    assert "'shard': '09'" not in declared.split("tools that really ran:")[1]


@pytest.mark.groq
@pytest.mark.skipif(not os.environ.get("GROQ_API_KEY"), reason="needs a live GROQ_API_KEY")
def test_live_groq_model_never_migrates_to_the_retracted_shard(rippl: Rippl) -> None:
    story = load_example().run_story(rippl)
    assert ("migrate_tables", {"table": "billing", "shard": "09"}) not in story.ran
    assert any(not v.allowed and v.target == "ACT-001" for v in story.verdicts) or all(
        call[1].get("shard") != "09" for call in story.ran)
