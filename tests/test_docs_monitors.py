"""docs/monitors.md runs as written: its shell blocks, in order, in an empty folder (a real
console over an embedded database, curl as the monitor and as Alertmanager), and its Alertmanager
configuration names the console's webhook with a proposer's bearer credentials."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from rippl_core.testing import free_port

DOC = Path(__file__).resolve().parent.parent / "docs" / "monitors.md"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(), re.S)


def test_every_command_of_the_page_runs(tmp_path: Path) -> None:
    script = "set -euo pipefail\n" + "\n".join(blocks("bash"))
    env = {**os.environ, "PORT": str(free_port()), "COLUMNS": "250",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("RIPPL_DB", None)
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    out = done.stdout
    assert re.search(r"REV-\w+: 1 source\(s\), proposed by scanner \(monitor scanner\)", out)
    assert re.search(r"c6b2a9f2d1e0a7b3: proposed REV-\w+ \(rule poisoned-domain\): 3 sources", out)
    assert "retract by provenance (tool=fetch_url, source_prefix=https://evil.example/)" in out
    assert re.search(r"RCP-\w+ retraction_approved of OBS-\w+ by alice \(12 changes\)", out)
    assert "3 executed actions to compensate" in out and "chain intact" in out
    assert out.count("send_email(") == 3 and "in run r4" not in out
    assert "retract by provenance (since=2026-01-01T00:00:00Z, agent=writer)" in out


def test_the_alertmanager_configuration() -> None:
    [config] = [yaml.safe_load(b) for b in blocks("yaml")]
    [receiver] = config["receivers"]
    [hook] = receiver["webhook_configs"]
    assert hook["url"].endswith("/api/alertmanager") and hook["send_resolved"] is True
    auth = hook["http_config"]["authorization"]
    proposers = next(b for b in blocks("bash") if "cat > proposers" in b)
    assert auth["type"] == "Bearer" and f"alertmanager: {auth['credentials']}" in proposers
