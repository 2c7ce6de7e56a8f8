"""Contradictions from the command line: keyed claims loaded from YAML, the proposal in `rippl
review list` and `rippl review show` with both sides as evidence, `rippl contradictions` (with a
scripted model as `--detector`), and the ordinary approval."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import Result
from helpers_cli import rippl_cli

from rippl_core import Rippl


def run(db: Path, *args: str) -> Result:
    return rippl_cli(db, *args, env={"COLUMNS": "160"})


HEALTHY = """
sources:
  - {id: SRC-grafana, title: "Grafana: shard-09 health, 09:00 UTC", kind: telemetry}
claims:
  - {id: CLM-healthy, text: Shard 09 is healthy, sources: [SRC-grafana],
     key: shard-09/health, value: healthy}
decisions:
  - {id: DEC-move, title: Move billing to shard 09, premises: [CLM-healthy]}
"""

DEGRADED = """
sources:
  - {id: SRC-pager, title: "PagerDuty: shard-09 degraded, 09:12 UTC", kind: telemetry}
claims:
  - {id: CLM-degraded, text: Shard 09 is degraded, sources: [SRC-pager],
     key: shard-09/health, value: degraded}
"""


def test_a_loaded_contradiction_is_reviewed_with_its_evidence(tmp_path: Path) -> None:
    db = tmp_path / "rippl.db"
    (tmp_path / "healthy.yaml").write_text(HEALTHY)
    (tmp_path / "degraded.yaml").write_text(DEGRADED)
    assert run(db, "load", str(tmp_path / "healthy.yaml")).exit_code == 0
    assert run(db, "load", str(tmp_path / "degraded.yaml")).exit_code == 0
    [item] = json.loads(run(db, "review", "list", "--format", "json").output)
    assert item["claim"] == "CLM-healthy" and item["contradiction"]["detector"] == "key"
    assert item["contradiction"]["new"]["sources"][0]["id"] == "SRC-pager"
    table = " ".join(run(db, "review", "list").output.split())
    assert "key contradiction" in table and "Shard 09 is degraded" in table
    assert "PagerDuty" in table and "Grafana" in table
    shown = run(db, "review", "show", item["id"]).output
    assert "contradiction found by the key detector on key shard-09/health" in shown
    assert "SRC-grafana" in shown and "SRC-pager" in shown and "DEC-move" in shown
    assert "0 retractions proposed" in run(db, "contradictions", "CLM-degraded").output
    assert run(db, "review", "approve", item["id"], "--by", "alice").exit_code == 0
    with Rippl.open(db, graph="ops") as rippl:
        assert rippl.get("CLM-healthy").retracted
    assert "key: shard-09/health" in run(db, "show", "CLM-degraded").output


def test_contradictions_with_a_model_detector(tmp_path: Path) -> None:
    db = tmp_path / "rippl.db"
    with Rippl.open(db, graph="ops") as rippl:
        rippl.add_claim("CLM-owner", "Dana owns the billing service")
        rippl.add_claim("CLM-sam", "Sam owns the billing service")
    result = run(db, "contradictions", "CLM-sam", "--detector",
                 "langchain:helpers_contradictions:scripted_judge", "--model", "judge-7")
    assert result.exit_code == 0, result.output
    assert "1 retraction proposed" in result.output
    out = " ".join(result.output.split())
    assert "contradiction found by the model judge-7" in out
    assert "Sam, not Dana, owns billing now" in out
    bad = run(db, "contradictions", "CLM-sam", "--detector", "groq")
    assert bad.exit_code != 0 and "langchain:" in bad.output


def test_watch_names_the_detector_of_a_proposal(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys
    import time

    from rippl_core._runtime.keys import Keys

    db = tmp_path / "rippl.db"
    with Rippl.open(db, graph="ops") as rippl:
        rippl.add_claim("CLM-a", "Shard 09 is healthy", key="shard-09/health", value="healthy")
    rippl_bin = Path(sys.executable).with_name("rippl")
    watcher = subprocess.Popen([str(rippl_bin), "--db", str(db), "--graph", "ops", "watch",
                                "--count", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, "COLUMNS": "200"})
    with Rippl.open(db, graph="ops") as rippl:
        deadline = time.monotonic() + 120
        while int(rippl.redis.execute_command("PUBSUB", "SHARDNUMSUB", Keys("ops").events)[1]) < 1:
            assert time.monotonic() < deadline, "the watcher never subscribed"
            time.sleep(0.1)
        rippl.add_claim("CLM-b", "Shard 09 is degraded", key="shard-09/health", value="degraded")
    out, err = watcher.communicate(timeout=60)
    assert "review_proposed" in out and "(found by the key detector)" in out, (out, err)
    assert "node_created        CLM-b created Verified" in out, out  # announced first


def test_ingest_with_a_model_detector(tmp_path: Path) -> None:
    db = tmp_path / "rippl.db"
    with Rippl.open(db, graph="ops") as rippl:
        rippl.add_claim("CLM-owner", "Dana owns the billing service")
    doc = tmp_path / "handover.md"
    doc.write_text("# Handover\n\n```rippl\nclaims:\n  - ref: c1\n    text: Sam owns the billing "
                   "service\n```\n")
    result = run(db, "ingest", str(doc), "--detector",
                 "langchain:helpers_contradictions:scripted_judge")
    assert result.exit_code == 0, result.output
    with Rippl.open(db, graph="ops") as rippl:
        [item] = rippl.reviews()
    assert item.claim == "CLM-owner" and item.contradiction is not None
    assert item.contradiction.new.text == "Sam owns the billing service"
    assert item.reason == "Sam, not Dana, owns billing now"
