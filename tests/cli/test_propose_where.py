"""`rippl propose` with a provenance query: one review of every matching source, shown in the
queue, approved as one wave; nothing matched is an error (exit 1) that creates nothing; a bad
query is a usage error (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers_cli import rippl_cli as run

from rippl_core import Rippl
from rippl_core.testing import Clock
from tests.helpers_provenance import EVIL, START, seed


def test_propose_by_provenance_then_approve(tmp_path: Path) -> None:
    db = tmp_path / "rippl.db"
    with Rippl.open(db, graph="ops") as rippl, Clock(START) as clock:
        incident = seed(rippl, clock)
    proposed = run(db, "propose", "--tool", "fetch_url", "--source-prefix", EVIL,
                   "--since", "2026-12-01T09:00:00Z", "--until", "2026-12-01T11:00:00Z",
                   "--reason", "prompt injection on evil.example", "--by", "monitor-bot",
                   "--monitor", "alertmanager")
    assert proposed.exit_code == 0, proposed.output
    assert "retract by provenance (tool=fetch_url" in proposed.output
    assert "3 sources" in proposed.output and "(monitor alertmanager)" in proposed.output
    review = proposed.stdout.split()[0]
    assert "matching sources" in proposed.stderr
    [listed] = json.loads(run(db, "review", "list", "--format", "json").output)
    assert listed["id"] == review and listed["kind"] == "provenance"
    assert sorted(listed["matched"]) == sorted(incident.evil_claims.values())
    table = run(db, "review", "list", env={"COLUMNS": "250"}).output
    assert "provenance" in table and "3 sources" in table
    approved = run(db, "review", "approve", review, "--by", "alice")
    assert approved.exit_code == 0, approved.output
    with Rippl.open(db, graph="ops") as rippl:
        assert sorted(c.action for c in rippl.compensations()) == sorted(incident.executed)
        [receipt] = [r for r in rippl.receipts() if r.review == review]
        assert receipt.body["sources"] == listed["claims"]
    assert run(db, "receipts", "verify").exit_code == 0


def test_args_json_and_errors(tmp_path: Path) -> None:
    db = tmp_path / "rippl.db"
    with Rippl.open(db, graph="ops") as rippl, Clock(START) as clock:
        incident = seed(rippl, clock)
    found = run(db, "propose", "--args-json", json.dumps({"url": f"{EVIL}page-1"}),
                "--reason", "x", "--by", "b", "--format", "json")
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["matched"] == [incident.evil_claims["r2"]]
    nothing = run(db, "propose", "--tool", "nope", "--reason", "x", "--by", "b")
    assert nothing.exit_code == 1 and "no source matches the provenance query tool=nope" in nothing.output
    assert run(db, "propose", "--reason", "x", "--by", "b").exit_code == 2
    both = run(db, "propose", "CLM-1", "--tool", "t", "--reason", "x", "--by", "b")
    assert both.exit_code == 2 and "not both" in both.output
    bad = run(db, "propose", "--args-json", "[1]", "--reason", "x", "--by", "b")
    assert bad.exit_code == 2 and "JSON object" in bad.output
    assert run(db, "propose", "--since", "yesterday", "--reason", "x", "--by", "b").exit_code == 2
    assert len(json.loads(run(db, "review", "list", "--format", "json").output)) == 1
