"""The one-call override from the command line: proposed with `rippl override`, shown in the review
queue, approved with `rippl review approve`, listed by `rippl overrides`; a repeat of the vetoed call
stays vetoed until then, and exactly one call runs after."""

from __future__ import annotations

import json
from pathlib import Path

from helpers_capture import vetoed_migrate
from helpers_cli import rippl_cli as run

from rippl_core import Rippl, ToolCall


def test_an_override_goes_through_the_review_queue(tmp_path: Path) -> None:
    db = tmp_path / "rippl.db"
    with Rippl.open(db, graph="ops") as rippl:
        _, claim, migrate, veto = vetoed_migrate(rippl)
    proposed = run(db, "override", str(veto.target), "--reason", "checked by hand", "--by", "bob")
    assert proposed.exit_code == 0, proposed.output
    assert "override the veto of migrate" in proposed.output and claim in proposed.output
    review = proposed.output.split()[0]
    [listed] = json.loads(run(db, "review", "list", "--format", "json").output)
    assert listed["id"] == review and listed["kind"] == "override" and listed["claims"] == [claim]
    with Rippl.open(db, graph="ops") as rippl:  # not approved yet: the repeat stays vetoed
        again = rippl.run("thread-1").decide("t3", [migrate.model_copy(update={"id": "c3"})],
                                             context=["c2"], told=["c2"])
        assert not again[0].allowed
    assert run(db, "review", "approve", review, "--by", "alice").exit_code == 0
    with Rippl.open(db, graph="ops") as rippl:
        [once] = rippl.run("thread-1").decide("t4", [migrate.model_copy(update={"id": "c4"})],
                                              context=["c2"], told=["c2"])
        [twice] = rippl.run("thread-1").decide("t5", [migrate.model_copy(update={"id": "c5"})],
                                               context=["c2"], told=["c2"])
        assert once.allowed and not twice.allowed
    shown = run(db, "overrides", "--format", "json")
    [override] = json.loads(shown.output)
    assert override["id"] == review and override["approved_by"] == "alice"
    assert override["proposed_by"] == "bob" and override["used_by"] == once.target
    assert run(db, "receipts", "verify").exit_code == 0


def test_an_override_of_a_call_that_was_not_vetoed_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "rippl.db"
    with Rippl.open(db, graph="ops") as rippl:
        [fine] = rippl.run("r").decide("t1", [ToolCall(name="migrate", args={}, id="c1")])
    result = run(db, "override", str(fine.target), "--reason", "x", "--by", "bob")
    assert result.exit_code == 1 and "no veto to override" in " ".join(result.output.split())
