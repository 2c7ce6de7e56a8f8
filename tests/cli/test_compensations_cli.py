"""`rippl compensations`: the open list, an agent's attempt, a reviewer's resolution (receipted,
verified by `rippl receipts verify`), the resolved list with --all, and what was open then."""

from __future__ import annotations

import json
from pathlib import Path

from helpers_cli import rippl_cli as run

from rippl_core import Rippl

INCIDENT = Path(__file__).resolve().parents[2] / "examples" / "incident.yaml"


def test_resolve_from_the_command_line(tmp_path: Path) -> None:
    db = tmp_path / "rippl.db"
    with Rippl.open(db, graph="ops") as rippl:
        rippl.load(INCIDENT)
        rippl.mark_executed("ACT-001")
        rippl.retract("CLM-001", reason="disk errors", by="monitor")
        before = rippl.receipts()[-1].at
    listed = run(db, "compensations")
    assert listed.exit_code == 0 and "ACT-001" in listed.output and "open" in listed.output
    tried = run(db, "compensations", "attempt", "ACT-001", "--what", "rolled back billing",
                "--by", "ops-agent", "--output", "12 tables")
    assert tried.exit_code == 0, tried.output
    attempt = tried.output.split()[0]
    assert attempt.startswith("ATT-")
    bad = run(db, "compensations", "resolve", "ACT-001", "--as", "done", "--note", "x")
    assert bad.exit_code == 2  # a usage error: compensated or not needed
    done = run(db, "compensations", "resolve", "ACT-001", "--as", "compensated", "--note",
               "checked by hand", "--by", "alice", "--attempt", attempt)
    assert done.exit_code == 0, done.output
    assert "compensation_resolved" in done.output and "alice" in done.output
    again = run(db, "compensations", "resolve", "ACT-001", "--as", "not needed", "--note", "x",
                "--by", "bob")
    assert again.exit_code == 1 and "already resolved" in again.output
    assert "0 executed actions to compensate" in run(db, "compensations").output
    [resolved] = json.loads(run(db, "compensations", "--all", "--format", "json").output)
    assert resolved["status"] == "compensated" and resolved["resolution"]["by"] == "alice"
    assert resolved["attempts"][0]["id"] == attempt
    [then] = json.loads(run(db, "compensations", "--as-of", before.isoformat(), "--format",
                            "json").output)
    assert then["status"] == "open"
    verified = run(db, "receipts", "verify")
    assert verified.exit_code == 0 and "chain intact" in verified.output, verified.output
