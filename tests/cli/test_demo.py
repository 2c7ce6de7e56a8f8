"""`rippl demo` tells the whole story, offline, and exits 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path


def test_rippl_demo_tells_the_story(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("RIPPL_DB", None)
    env.pop("RIPPL_FALKORDB_URL", None)
    done = subprocess.run([sys.executable, "-m", "rippl_core.cli", "demo"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    story = ["-> allowed", "review REV-", "VETOED", "CLM-001 -> DEC-001 -> ACT-001",
             "shard=07) -> allowed", "chain intact", "nodes restored",
             "without SRC-CO-05", "knowing what we know now: denied",
             "get_shard_health(shard=09) -> allowed", "migrate_tables(table=billing, shard=09) -> allowed",
             "approved by alice@oncall", "shard=09) -> VETOED before it runs",
             "(served from a stale cache", "repeats the call vetoed at turn turn-2",
             "migrate_tables(table=billing, shard=07) -> allowed",
             "handed over into run dba-agent/thread-42 from run ops-agent/thread-42",
             "approved by bob@oncall", "resize_replicas(shard=09, replicas=3) -> allowed",
             "resize_replicas(shard=09, replicas=3) -> VETOED", "announce_window",
             "now Premise Retracted",
             "resize_replicas(shard=09, replicas=5) -> allowed", "-> STALE: not run",
             "read 12 min ago", "shard 09: degraded", "-> SUPERSEDED: not run",
             "New reviews: 0; new compensations: 0",
             "open_ticket(queue=capacity) -> allowed", "covers 3 sources in 3 runs",
             "3 sources, 12 changes", "open_ticket(queue=capacity) -> VETOED",
             "to compensate: post_summary in run notices/researcher",
             "to compensate: send_email in run notices/writer"]
    at, missing = 0, []
    for line in story:  # each line after the one before it: the story is told in order
        found = out.find(line, at)
        if found < 0:
            missing.append(line)
        else:
            at = found + len(line)
    assert not missing, f"not told (in this order): {missing}"
    assert (tmp_path / ".rippl" / "rippl.db.lock").exists()  # the default embedded database


def test_rippl_demo_tells_one_story_when_asked(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "rippl_core.cli", "--db", str(tmp_path / "d.db"),
                           "demo", "--story", "capture"], capture_output=True, text=True, timeout=240,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert "VETOED" in done.stdout and "CLM-001" not in done.stdout  # only the capture story
    wrong = subprocess.run([sys.executable, "-m", "rippl_core.cli", "--db", str(tmp_path / "d.db"),
                            "demo", "--story", "sequel"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "'sequel' is not one of" in wrong.stderr


def test_the_memory_story_vetoes_a_recall_and_a_hand_over(tmp_path: Path) -> None:
    """`rippl demo --story memory`: one agent saves what it read, the reading is found false,
    another run's recall is vetoed with the trail through the memory, and the team mate it hands
    the act to is vetoed too, naming the original veto."""
    env = {**os.environ, "COLUMNS": "400"}
    done = subprocess.run([sys.executable, "-m", "rippl_core.cli", "--db", str(tmp_path / "d.db"),
                           "demo", "--story", "memory"], capture_output=True, text=True,
                          timeout=240, env=env)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "CLM-001" not in out  # only the memory story
    trail = re.search(r"(CLM-\w+) -> (WRT-\w+) -> (CLM-\w+) -> DEC-\w+ -> ACT-\w+", out)
    assert trail, out  # the reading -> run scout/thread-7 wrote it -> the memory -> the call
    assert "nobody dropped the belief" in out
    assert "handed over from run operator/thread-8 (m-handover) after the veto" in out
    assert out.count("VETOED") == 2 and "shard=07) -> allowed" in out


def test_the_notices_story_keeps_its_clock_out_of_the_users_database(tmp_path: Path) -> None:
    """The notices story lets twelve minutes pass on a demo clock: it is told on a throwaway
    database, so the user's database records nothing of it (nothing stamped in the future)."""
    db = tmp_path / "d.db"
    done = subprocess.run([sys.executable, "-m", "rippl_core.cli", "--db", str(db), "demo",
                           "--story", "notices"], capture_output=True, text=True, timeout=240,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "\nThe notices story runs on a throwaway database" in done.stdout  # styled, no markup
    assert "-> STALE: not run" in done.stdout
    assert "to compensate: send_email in run notices/writer" in done.stdout
    from rippl_core import Rippl

    assert Rippl.list_graphs(db) == ["rippl-demo"]
    with Rippl.open(db, graph="rippl-demo") as rippl:
        assert rippl.runs() == [] and rippl.stats().nodes == {}
