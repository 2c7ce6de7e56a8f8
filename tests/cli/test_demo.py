"""`rippl demo` tells the whole story, offline, and exits 0."""

from __future__ import annotations

import os
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
             "without SRC-CO-05", "knowing what we know now: denied"]
    positions = [out.find(line) for line in story]
    assert all(p >= 0 for p in positions), [s for s, p in zip(story, positions, strict=True) if p < 0]
    assert positions == sorted(positions), "the story is told in order"
    assert (tmp_path / ".rippl" / "rippl.db.lock").exists()  # the default embedded database
