"""examples/autogen_ops_team.py runs offline: both stories hold on both backends."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).parents[3] / "examples" / "autogen_ops_team.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("autogen_ops_team", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.mark.asyncio(loop_scope="session")
async def test_story_on_each_backend(backend: dict[str, object]) -> None:
    example = load_example()
    lines: list[str] = []
    where = {"url": backend["url"]} if "url" in backend else {"db": str(backend["path"])}
    outcome = await example.run_demo(**where, say=lines.append)
    assert outcome.as_expected(), "\n".join(lines)
    assert outcome.ran[outcome.ran_before_retraction:] == [
        ("migrate_tables", {"table": "billing", "shard": "07"})]
    # the operator's memory held both shard beliefs before the retraction, only shard 07 after
    assert any("Shard 09 is healthy" in m for m in outcome.memories[0])
    assert not any("Shard 09 is healthy" in m for m in outcome.memories[-1])
    assert any("Shard 07 is healthy" in m for m in outcome.memories[-1])


@pytest.mark.asyncio(loop_scope="session")
async def test_captured_story_on_each_backend(backend: dict[str, object]) -> None:
    example = load_example()
    lines: list[str] = []
    where = {"url": backend["url"]} if "url" in backend else {"db": str(backend["path"])}
    outcome = await example.run_capture_demo(**where, say=lines.append)
    log = "\n".join(lines)
    assert outcome.as_expected(), log
    # the pause was a handoff; the rebuilt team continued the same run
    assert outcome.paused and "ops hands off to user" in log
    # the veto names the trail observation -> decision -> action, and the model read it
    veto = outcome.vetoed[0]
    trail = next(line for line in veto.splitlines() if "->" in line).split(": ")[-1].split(" -> ")
    assert trail[0] == outcome.observation and trail[1].startswith("DEC-") \
        and trail[2].startswith("ACT-")
    # the model retried the vetoed call: vetoed again, naming the original veto
    assert "repeats the call vetoed at turn" in outcome.vetoed[1]
    # the re-plan: the fallback checked and migrated, never shard 09
    assert ("migrate_tables", {"table": "billing", "shard": "09"}) not in outcome.ran
    assert outcome.ran[-2:] == [("get_shard_health", {"shard": "07"}),
                                ("migrate_tables", {"table": "billing", "shard": "07"})]
    # the compensation: the announcement, executed on the retracted reading
    [owed] = outcome.compensations
    assert owed.tool == "announce_window" and owed.run == "INC-4471/ops"
    assert owed.args == {"shard": "09", "start": "22:00Z", "minutes": 30}
    assert "served from a stale cache" in owed.explain()


@pytest.mark.asyncio(loop_scope="session")
async def test_handover_story_on_each_backend(backend: dict[str, object]) -> None:
    example = load_example()
    lines: list[str] = []
    where = {"url": backend["url"]} if "url" in backend else {"db": str(backend["path"])}
    outcome = await example.run_handover_demo(**where, say=lines.append)
    log = "\n".join(lines)
    assert outcome.as_expected(), log
    # the veto's trail runs across the two runs: the researcher's reading, its hand-over, the
    # ops agent's decision and call
    [veto] = outcome.vetoed
    trail = next(line for line in veto.splitlines() if "->" in line).split(": ")[-1].split(" -> ")
    assert trail[0] == outcome.reading and trail[1].startswith("HND-") \
        and trail[2].startswith("DEC-") and trail[3].startswith("ACT-")
    assert "into run INC-4472/ops from run INC-4472/researcher" in veto
    # exactly the overridden call ran, once, and is owed nothing
    assert outcome.ran.count(("migrate_tables", {"table": "ledger", "shard": "11"})) == 1
    assert outcome.override.proposed_by == "agent:ops" and outcome.override.used_by is not None
    assert outcome.compensations == []


@pytest.mark.asyncio(loop_scope="session")
async def test_notices_story_on_each_backend(backend: dict[str, object]) -> None:
    """Real agents, scripted models: a migration on a 12-minute-old reading is denied as stale and
    the model reads again ("degraded"); the planner's pending resize is denied as superseded,
    naming the newer reading; one alert-driven review retracts what fetch_url returned from
    evil.example in three runs: the waiting call is vetoed, the two that ran are listed."""
    example = load_example()
    lines: list[str] = []
    where = {"url": backend["url"]} if "url" in backend else {"db": str(backend["path"])}
    outcome = await example.run_notices_demo(**where, say=lines.append)
    log = "\n".join(lines)
    assert outcome.as_expected(), log
    stale, superseded, vetoed = outcome.denials
    assert "denied as stale" in stale and "shard 09: healthy" in stale
    assert "12 min ago" in stale and "fresh for 5 min" in stale and "read it again" in stale.lower()
    assert [a for n, a in outcome.ran if n == "get_shard_health"] == [{"shard": "09"}] * 3
    assert "denied as superseded" in superseded and "shard 09: degraded" in superseded
    assert "run notices/ops" in superseded
    assert outcome.reviews_before_alert == 0  # stale is not false: nothing to review
    assert len(outcome.review.claims) == 3 and len(outcome.receipt.body["sources"]) == 3
    assert "Premise Retracted" in vetoed and "evil.example serves a prompt injection" in vetoed
    assert sorted((c.tool, c.run) for c in outcome.compensations) == [
        ("post_summary", "notices/researcher"), ("send_email", "notices/writer")]


def test_runs_offline_as_a_script() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("GROQ_API_KEY", "RIPPL_FALKORDB_URL",
                                                            "RIPPL_DB")}
    done = subprocess.run([sys.executable, str(EXAMPLE), "--offline"], capture_output=True, text=True,
                          env=env, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    captured, declared = done.stdout.split("######## The declared story")
    captured, handover = captured.split("######## The hand-over story")
    assert "VETOED by Rippl: the call to migrate_tables did not run." in captured
    assert "repeats the call vetoed at turn" in captured
    assert "handed over into run INC-4472/ops from run INC-4472/researcher" in handover
    assert "approved by priya.raman" in handover and "compensations owed: 0" in handover
    assert "OK: the migration resting on the researcher's report was vetoed" in handover
    assert "OK: stale, then superseded, without a review" in handover  # the notices story
    assert "executed" in captured and "on a premise since retracted" in captured
    assert "OK: the migration resting on the stale reading was vetoed" in captured
    assert "VETOED by Rippl: the call to migrate_tables did not run." in declared
    assert "CLM-001 -> DEC-001 -> ACT-001" in declared
    assert done.stdout.rstrip().endswith("billing went to shard 07.")
    assert done.stderr == ""


@pytest.mark.groq
@pytest.mark.skipif(not os.environ.get("GROQ_API_KEY"), reason="needs a live GROQ_API_KEY")
@pytest.mark.asyncio(loop_scope="session")
async def test_live_groq_model_never_migrates_to_the_retracted_shard(tmp_path: Path) -> None:
    pytest.importorskip("autogen_ext.models.openai", reason='needs "autogen-ext[openai]"')
    example = load_example()
    lines: list[str] = []
    outcome = await example.run_demo(db=str(tmp_path / "rippl.db"),
                                     live_key=os.environ["GROQ_API_KEY"], say=lines.append)
    # whatever the live model chose, the call resting on the retracted claim never ran
    after = outcome.ran[outcome.ran_before_retraction:]
    assert ("migrate_tables", {"table": "billing", "shard": "09"}) not in after, lines
    assert outcome.receipt_ok
