"""The compensation lifecycle: open until a reviewer resolves it (compensated / not needed, with a
note) in a receipt of the chain; attempts reported by an agent, confirmed by a person; bitemporal."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from rippl_core import AsyncRippl, InvalidInputError, NotFoundError, Rippl
from rippl_core.errors import ReviewError


def owe(incident: Rippl) -> str:
    """ACT-001 ran, then its premise CLM-001 was retracted: a compensation is owed."""
    incident.mark_executed("ACT-001")
    incident.retract("CLM-001", reason="disk errors", by="monitor")
    return "ACT-001"


def later() -> datetime:
    time.sleep(0.005)  # times are in milliseconds
    moment = datetime.now(UTC)
    time.sleep(0.005)
    return moment


def test_open_until_a_reviewer_resolves_it_in_a_receipt(incident: Rippl) -> None:
    action = owe(incident)
    [owed] = incident.compensations()
    assert owed.action == action and owed.status == "open" and owed.resolution is None
    receipt = incident.resolve_compensation(action, resolution="not needed",
                                            note="the migration never started", by="alice")
    assert receipt.kind == "compensation_resolved" and receipt.actor == "alice"
    assert receipt.body["action"] == action and receipt.body["resolution"] == "not needed"
    assert receipt.body["note"] == "the migration never started"
    assert receipt.claim == "CLM-001"
    assert incident.compensations() == []  # resolved: no longer open
    [resolved] = incident.compensations(include_resolved=True)
    assert resolved.status == "not needed" and resolved.resolution is not None
    assert resolved.resolution.by == "alice" and resolved.resolution.receipt == receipt.id
    check = incident.verify_receipts()
    assert check.ok, check.problems
    assert incident.receipts()[-1].id == receipt.id


def test_a_compensation_is_resolved_once_and_only_when_owed(incident: Rippl) -> None:
    with pytest.raises(NotFoundError, match="no compensation is owed for ACT-001"):
        incident.resolve_compensation("ACT-001", resolution="compensated", note="x", by="alice")
    action = owe(incident)
    with pytest.raises(InvalidInputError, match="compensated, not needed"):
        incident.resolve_compensation(action, resolution="done", note="x", by="alice")
    with pytest.raises(InvalidInputError):
        incident.resolve_compensation(action, resolution="compensated", note=" ", by="alice")
    with pytest.raises(InvalidInputError):
        incident.resolve_compensation(action, resolution="compensated", note="ok", by="")
    incident.resolve_compensation(action, resolution="compensated", note="rolled back", by="alice")
    with pytest.raises(ReviewError, match="already resolved as compensated by alice"):
        incident.resolve_compensation(action, resolution="not needed", note="again", by="bob")
    with pytest.raises(ReviewError, match="already resolved"):
        incident.report_compensation_attempt(action, what="rollback", by="agent")
    assert len([r for r in incident.receipts() if r.kind == "compensation_resolved"]) == 1


def test_an_agent_reports_an_attempt_a_person_confirms_it(incident: Rippl) -> None:
    action = owe(incident)
    attempt = incident.report_compensation_attempt(
        action, what="ran rollback_migration(billing)", output="rolled back 12 tables",
        by="ops-agent")
    assert attempt.id.startswith("ATT-") and attempt.by == "ops-agent"
    [owed] = incident.compensations()
    assert owed.status == "open"  # an attempt resolves nothing
    assert [(a.id, a.what, a.output) for a in owed.attempts] == [
        (attempt.id, "ran rollback_migration(billing)", "rolled back 12 tables")]
    with pytest.raises(NotFoundError, match="ATT-nope is not an attempt"):
        incident.resolve_compensation(action, resolution="compensated", note="ok", by="alice",
                                      attempt="ATT-nope")
    receipt = incident.resolve_compensation(action, resolution="compensated",
                                            note="checked the tables by hand", by="alice",
                                            attempt=attempt.id)
    assert receipt.body["attempt"] == attempt.id
    [done] = incident.compensations(include_resolved=True)
    assert done.status == "compensated" and done.resolution is not None
    assert done.resolution.attempt == attempt.id and done.attempts[0].id == attempt.id
    with pytest.raises(NotFoundError):
        incident.report_compensation_attempt("ACT-002", what="x", by="agent")


def test_bitemporal_what_was_open_then(incident: Rippl) -> None:
    action = owe(incident)
    before = later()
    incident.report_compensation_attempt(action, what="rollback", by="ops-agent")
    between = later()
    incident.resolve_compensation(action, resolution="compensated", note="done", by="alice")
    after = later()
    [then] = incident.compensations(as_of=before)
    assert then.status == "open" and then.attempts == []
    [mid] = incident.compensations(as_of=between)
    assert mid.status == "open" and len(mid.attempts) == 1
    assert incident.compensations(as_of=after) == []
    assert incident.compensations(as_of=after, known_at=between)[0].status == "open"
    [now] = incident.compensations(as_of=after, include_resolved=True)
    assert now.status == "compensated"


@pytest.mark.asyncio(loop_scope="session")
async def test_the_async_twin_shares_the_steps(arippl: AsyncRippl, incident: Rippl) -> None:
    action = owe(incident)
    attempt = await arippl.report_compensation_attempt(action, what="rollback", by="ops-agent")
    receipt = await arippl.resolve_compensation(action, resolution="compensated", note="ok",
                                                by="alice", attempt=attempt.id)
    assert receipt.kind == "compensation_resolved"
    assert await arippl.compensations() == []
    [done] = await arippl.compensations(include_resolved=True)
    assert done.resolution is not None and done.resolution.receipt == receipt.id
    assert (await arippl.verify_receipts()).ok
