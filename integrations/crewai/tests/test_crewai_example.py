"""examples/crewai_ops_crew.py runs offline: the story holds on both backends and both tool-call
paths, and the script runs as a script."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from rippl_core import Rippl

EXAMPLE = Path(__file__).parents[3] / "examples" / "crewai_ops_crew.py"
TO_07 = ("migrate_tables", {"table": "billing", "shard": "07"})
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
    assert [(v.allowed, v.target) for v in story.verdicts] == [
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


def test_runs_offline_as_a_script_and_turns_crewai_telemetry_off_itself() -> None:
    """Run without the telemetry variables a user would not know to set: the example sets them
    itself (without network, CrewAI's telemetry made it exit 16-30 s late)."""
    env = {k: v for k, v in os.environ.items() if k not in ("GROQ_API_KEY", "RIPPL_FALKORDB_URL",
                                                            "RIPPL_DB", *TELEMETRY)}
    done = subprocess.run([sys.executable, "-c", AS_SCRIPT, str(EXAMPLE)], capture_output=True,
                          text=True, env=env, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "telemetry disabled: True tracing: False" in done.stdout
    assert "VETO  ACT-001 denied: Premise Retracted" in done.stdout
    assert "CLM-001 -> DEC-001 -> ACT-001" in done.stdout
    assert "the agent read the veto's reason: True" in done.stdout
    assert "migrate_tables {'table': 'billing', 'shard': '07'}" in done.stdout
    assert "'shard': '09'" not in done.stdout.split("tools that really ran:")[1]


@pytest.mark.groq
@pytest.mark.skipif(not os.environ.get("GROQ_API_KEY"), reason="needs a live GROQ_API_KEY")
def test_live_groq_model_never_migrates_to_the_retracted_shard(rippl: Rippl) -> None:
    story = load_example().run_story(rippl)
    assert ("migrate_tables", {"table": "billing", "shard": "09"}) not in story.ran
    assert any(not v.allowed and v.target == "ACT-001" for v in story.verdicts) or all(
        call[1].get("shard") != "09" for call in story.ran)
