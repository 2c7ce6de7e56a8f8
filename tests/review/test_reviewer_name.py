"""A decision's receipt names the reviewer by their identity (`by`, e.g. an identity provider's
subject) and, when given, their display name beside it (`actor_name`), covered by the hash."""

from __future__ import annotations

import pytest

from rippl_core import InvalidInputError, Rippl


@pytest.mark.parametrize("approve", [True, False])
def test_a_receipt_keeps_the_reviewers_display_name(incident: Rippl, approve: bool) -> None:
    review = incident.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    decide = incident.approve if approve else incident.reject
    receipt = decide(review.id, by="00u1a2b3c4", by_name="Ana Lima", note="checked")
    assert receipt.actor == "00u1a2b3c4" and receipt.body["actor_name"] == "Ana Lima"
    assert incident.review(review.id).decided_by == "00u1a2b3c4"
    assert incident.verify_receipts().ok


def test_without_a_name_the_receipt_has_none(incident: Rippl) -> None:
    review = incident.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    assert "actor_name" not in incident.approve(review.id, by="alice").body


@pytest.mark.parametrize("name", ["", " Ana", "a" * 129, "Ana\nLima"])
def test_a_display_name_that_is_not_one_is_refused(incident: Rippl, name: str) -> None:
    review = incident.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    with pytest.raises(InvalidInputError, match="by_name"):
        incident.approve(review.id, by="alice", by_name=name)
    assert incident.review(review.id).status == "pending"
