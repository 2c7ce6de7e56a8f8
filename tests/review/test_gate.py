"""The human review gate: propose -> approve | reject, every transition and refusal, exact rollback,
composed proposals, separation of duties, and a race of deciders. Both backends."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from helpers_core import (
    AT_RISK,
    IN,
    OUT,
    GraphPlan,
    assert_consistent,
    fresh,
    graph_plans,
    pending_counts_match_reviews,
    snapshot,
    states_of,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import AsyncRippl, InvalidInputError, NotFoundError, ReviewError, Rippl, State

pytestmark = pytest.mark.on_cluster  # also on a 3-shard cluster, in the `cluster` step

CLM_001_WAVE = ["ACT-001", "ACT-003", "ACT-004", "ACT-005", "ACT-006", "ACT-007", "ACT-008", "ACT-009",
                "ACT-010", "ACT-011", "ACT-021", "CLM-007", "DEC-001", "DEC-003", "DEC-005", "DEC-006",
                "DEC-007"]


# ------------------------------------------------------------------------------- transitions


def test_propose_puts_the_claim_and_what_would_lose_support_at_risk(incident: Rippl) -> None:
    before = snapshot(incident)
    item = incident.propose_retraction("CLM-001", reason="disk errors on shard 09", by="monitor",
                                       evidence="smartctl: 112 reallocated sectors")
    assert item.id.startswith("REV-") and item.claim == "CLM-001" and item.status == "pending"
    assert (item.reason, item.evidence, item.proposed_by) == \
        ("disk errors on shard 09", "smartctl: 112 reallocated sectors", "monitor")
    assert abs(item.proposed_at - datetime.now(UTC)) < timedelta(minutes=5)
    assert item.decided_by is None and item.decided_at is None and item.note is None
    assert item.at_risk == CLM_001_WAVE
    after = snapshot(incident)
    changed = {n for n in after.nodes if after.nodes[n]["state"] != before.nodes[n]["state"]}
    assert changed == {"CLM-001", *CLM_001_WAVE}
    assert all(after.nodes[n]["state"] == AT_RISK for n in changed)
    assert incident.get("CLM-001").status == "Proposed Retraction"
    assert incident.get("CLM-001").pending_reviews == 1 and not incident.get("CLM-001").retracted
    assert incident.get("DEC-001").status == "Premise At Risk"
    assert incident.get("ACT-001").status == "Blocked"
    assert incident.get("DEC-012").state is State.IN  # holds on its alternative justification
    statuses = incident.stats().statuses
    assert statuses["Claim"]["Proposed Retraction"] == 2  # CLM-001 and CLM-007 derived from it
    assert statuses["Action"]["Blocked"] == 11 and statuses["Decision"]["Premise At Risk"] == 5
    assert incident.reviews() == [item] and incident.review(item.id) == item
    reviews = after.labelled("ReviewItem")
    assert len(reviews) == 1 and reviews[0]["id"] == item.id
    assert (item.id, "TARGETS", "CLM-001") in after.other_edges
    assert_consistent(after)
    pending_counts_match_reviews(after)


def test_approve_commits_the_wave(incident: Rippl) -> None:
    item = incident.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    receipt = incident.approve(item.id, by="alice", note="confirmed on the host")
    assert (receipt.kind, receipt.review, receipt.claim, receipt.actor) == \
        ("retraction_approved", item.id, "CLM-001", "alice")
    snap = snapshot(incident)
    assert states_of(snap, CLM_001_WAVE) == dict.fromkeys(CLM_001_WAVE, OUT)
    assert snap.nodes["CLM-001"]["state"] == OUT and snap.nodes["CLM-001"]["retracted"]
    assert incident.get("CLM-001").reason == "disk errors"
    assert {n for n, s in snap.states().items() if s != IN} == {"CLM-001", *CLM_001_WAVE}
    decided = incident.review(item.id)
    assert (decided.status, decided.decided_by, decided.note) == \
        ("approved", "alice", "confirmed on the host")
    assert decided.decided_at is not None and decided.decided_at >= decided.proposed_at
    assert incident.reviews() == [] and incident.reviews("approved") == [decided]
    assert incident.reviews(None) == [decided] and incident.reviews("rejected") == []
    assert {a["id"] for a in receipt.body["affected"]} == {"CLM-001", *CLM_001_WAVE}
    assert all(a["before"] == AT_RISK and a["after"] == OUT for a in receipt.body["affected"])
    assert_consistent(snap)


def test_reject_rolls_back_exactly(incident: Rippl) -> None:
    before = snapshot(incident)
    item = incident.propose_retraction("CLM-001", reason="disk errors?", by="monitor")
    receipt = incident.reject(item.id, by="bob", note="the disk is fine")
    assert receipt.kind == "retraction_rejected" and receipt.review == item.id
    after = snapshot(incident)
    assert after.causal() == before.causal()
    decided = incident.review(item.id)
    assert (decided.status, decided.decided_by, decided.note) == ("rejected", "bob", "the disk is fine")
    assert incident.reviews() == [] and incident.reviews("rejected") == [decided]
    assert incident.check("ACT-001").allowed


def test_reinstate_after_approval_restores_and_is_receipted(incident: Rippl) -> None:
    before = snapshot(incident)
    item = incident.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    incident.approve(item.id, by="alice")
    wave = incident.reinstate("CLM-001", reason="false alarm", by="carol")
    assert set(wave.changed(State.IN)) == {"CLM-001", *CLM_001_WAVE}
    assert snapshot(incident).causal() == before.causal()
    kinds = [(r.kind, r.actor) for r in incident.receipts()]
    assert kinds == [("retraction_approved", "alice"), ("reinstatement", "carol")]
    assert incident.verify_receipts().ok


def test_reviews_survive_reopening(incident: Rippl, open_rippl: Callable[..., Rippl]) -> None:
    item = incident.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    other = open_rippl(graph=incident.graph)
    assert other.reviews() == [item]
    other.approve(item.id, by="alice")
    assert incident.review(item.id).status == "approved"


# ----------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("first, second", [("approve", "approve"), ("approve", "reject"),
                                           ("reject", "approve"), ("reject", "reject")])
def test_a_review_is_decided_once(incident: Rippl, first: str, second: str) -> None:
    item = incident.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    getattr(incident, first)(item.id, by="alice")
    before, receipts = snapshot(incident), incident.receipts()
    with pytest.raises(ReviewError) as raised:
        getattr(incident, second)(item.id, by="bob")
    assert "already" in str(raised.value) and "alice" in str(raised.value)
    assert snapshot(incident) == before and incident.receipts() == receipts


@pytest.mark.parametrize("call, error", [
    (lambda r, i: r.approve("REV-000000000000", by="alice"), NotFoundError),
    (lambda r, i: r.reject("REV-000000000000", by="alice"), NotFoundError),
    (lambda r, i: r.review("REV-000000000000"), NotFoundError),
    (lambda r, i: r.approve(i, by=""), InvalidInputError),
    (lambda r, i: r.approve(i, by="   "), InvalidInputError),
    (lambda r, i: r.reject(i, by=""), InvalidInputError),
    (lambda r, i: r.approve(i, by="alice", note=""), InvalidInputError),
    (lambda r, i: r.propose_retraction("CLM-001", reason="", by="x"), InvalidInputError),
    (lambda r, i: r.propose_retraction("DEC-001", reason="r", by="x"), InvalidInputError),
    (lambda r, i: r.propose_retraction("ACT-001", reason="r", by="x"), InvalidInputError),
    (lambda r, i: r.propose_retraction("CLM-999", reason="r", by="x"), NotFoundError),
])
def test_refusals_change_nothing(incident: Rippl, call: Callable[[Rippl, str], Any],
                                 error: type[Exception]) -> None:
    item = incident.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    before = snapshot(incident)
    with pytest.raises(error):
        call(incident, item.id)
    assert snapshot(incident) == before
    assert incident.review(item.id).status == "pending"


def test_a_retracted_claim_cannot_be_proposed(incident: Rippl) -> None:
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    before = snapshot(incident)
    with pytest.raises(ReviewError):
        incident.propose_retraction("CLM-001", reason="again", by="monitor")
    assert snapshot(incident) == before


def test_separation_of_duties(incident: Rippl, open_rippl: Callable[..., Rippl]) -> None:
    strict = open_rippl(graph=incident.graph, distinct_approver=True)
    item = strict.propose_retraction("CLM-001", reason="disk errors", by="alice")
    before = snapshot(strict)
    with pytest.raises(ReviewError) as raised:
        strict.approve(item.id, by="alice")
    assert "separation of duties" in str(raised.value)
    assert snapshot(strict) == before
    assert strict.approve(item.id, by="bob").actor == "bob"
    # Withdrawing one's own proposal is allowed; the default policy allows self-approval.
    second = strict.propose_retraction("CLM-004", reason="maybe", by="alice")
    assert strict.reject(second.id, by="alice").kind == "retraction_rejected"
    third = incident.propose_retraction("CLM-002", reason="maybe", by="alice")
    assert incident.approve(third.id, by="alice").actor == "alice"


# --------------------------------------------------------------------------- composed proposals


def test_a_node_stays_at_risk_until_every_proposal_covering_it_is_decided(rippl: Rippl) -> None:
    rippl.add_claim("C1", "one")
    rippl.add_claim("C2", "two")
    rippl.add_decision("D", "needs both", premises=["C1", "C2"])
    rippl.add_action("A", "act", decisions=["D"])
    before = snapshot(rippl)
    p1 = rippl.propose_retraction("C1", reason="doubt", by="m")
    p2 = rippl.propose_retraction("C2", reason="doubt", by="m")
    assert set(states_of(snapshot(rippl), ["C1", "C2", "D", "A"]).values()) == {AT_RISK}
    rippl.reject(p1.id, by="h")
    assert states_of(snapshot(rippl), ["C1", "C2", "D", "A"]) == \
        {"C1": IN, "C2": AT_RISK, "D": AT_RISK, "A": AT_RISK}
    rippl.reject(p2.id, by="h")
    assert snapshot(rippl).causal() == before.causal()


def test_approving_one_and_rejecting_the_other(rippl: Rippl) -> None:
    rippl.add_claim("C1", "one")
    rippl.add_claim("C2", "two")
    rippl.add_decision("D", "needs both", premises=["C1", "C2"])
    p1 = rippl.propose_retraction("C1", reason="doubt", by="m")
    p2 = rippl.propose_retraction("C2", reason="doubt", by="m")
    rippl.approve(p1.id, by="h")
    assert states_of(snapshot(rippl), ["C1", "C2", "D"]) == {"C1": OUT, "C2": AT_RISK, "D": OUT}
    receipt = rippl.reject(p2.id, by="h")
    assert states_of(snapshot(rippl), ["C1", "C2", "D"]) == {"C1": OUT, "C2": IN, "D": OUT}
    assert [(a["id"], a["after"]) for a in receipt.body["affected"]] == [("C2", IN)]
    assert_consistent(snapshot(rippl))


def test_alternative_justifications_compose(rippl: Rippl) -> None:
    rippl.add_claim("C1", "one")
    rippl.add_claim("C2", "two")
    rippl.add_decision("D", "either", premises=["C1"])
    rippl.justify("D", ["C2"])
    p1 = rippl.propose_retraction("C1", reason="doubt", by="m")
    assert p1.at_risk == [] and rippl.get("D").state is State.IN
    p2 = rippl.propose_retraction("C2", reason="doubt", by="m")
    assert p2.at_risk == [] and rippl.get("D").state is State.AT_RISK  # would fall if both went
    rippl.reject(p2.id, by="h")
    assert rippl.get("D").state is State.IN
    rippl.approve(p1.id, by="h")
    assert states_of(snapshot(rippl), ["C1", "C2", "D"]) == {"C1": OUT, "C2": IN, "D": IN}


def test_the_same_claim_proposed_twice(incident: Rippl) -> None:
    p1 = incident.propose_retraction("CLM-001", reason="disk errors", by="monitor-a")
    p2 = incident.propose_retraction("CLM-001", reason="latency", by="monitor-b")
    assert incident.get("CLM-001").pending_reviews == 2
    incident.reject(p1.id, by="h")
    assert incident.get("CLM-001").state is State.AT_RISK and incident.get("ACT-001").state is State.AT_RISK
    incident.approve(p2.id, by="h")
    assert incident.get("ACT-001").state is State.OUT and incident.get("CLM-001").reason == "latency"
    assert incident.get("CLM-001").pending_reviews == 0
    pending_counts_match_reviews(snapshot(incident))


def test_a_direct_retraction_while_a_review_is_pending(incident: Rippl) -> None:
    item = incident.propose_retraction("CLM-001", reason="disk errors?", by="monitor")
    incident.retract("CLM-001", reason="confirmed by the vendor", by="sre")
    assert incident.get("ACT-001").state is State.OUT
    incident.reject(item.id, by="h")  # withdrawing the proposal does not undo the retraction
    node = incident.get("CLM-001")
    assert node.retracted and node.state is State.OUT and node.pending_reviews == 0
    assert incident.get("ACT-001").state is State.OUT
    assert_consistent(snapshot(incident))


# ------------------------------------------------------------------------- rollback property


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=graph_plans(cycles=True), data=st.data())
def test_propose_then_reject_is_the_identity(backend: dict[str, object], plan: GraphPlan,
                                             data: st.DataObject) -> None:
    retractable = plan.ids("Source") + plan.ids("Claim")
    with fresh(backend) as handle:
        plan.build(handle, one_by_one=data.draw(st.booleans()))
        # Some history first: retractions, open proposals, decided proposals.
        for node in data.draw(st.lists(st.sampled_from(retractable), max_size=3, unique=True)):
            handle.retract(node, reason="history", by="x")
        for node in data.draw(st.lists(st.sampled_from(retractable), max_size=3)):
            if not handle.get(node).retracted:
                item = handle.propose_retraction(node, reason="history", by="x")
                decision = data.draw(st.sampled_from(["keep", "approve", "reject"]))
                if decision != "keep":
                    getattr(handle, decision)(item.id, by="y")
        candidates = [n for n in retractable if not handle.get(n).retracted]
        if not candidates:
            return
        target = data.draw(st.sampled_from(candidates))
        before = snapshot(handle)
        item = handle.propose_retraction(target, reason="under test", by="monitor")
        middle = snapshot(handle)
        assert_consistent(middle)
        assert middle.nodes[target]["state"] in (AT_RISK, OUT)
        if data.draw(st.booleans()):
            handle.reject(item.id, by="human")
        else:  # approving then reinstating must restore everything as well
            handle.approve(item.id, by="human")
            handle.reinstate(target, reason="false alarm", by="human")
        after = snapshot(handle)
        assert after.causal() == before.causal()
        pending_counts_match_reviews(after)
        assert handle.verify_receipts().ok


# ----------------------------------------------------------------------------------- the race


def race(handles: list[Rippl], review_id: str, kinds: list[str]) -> list[tuple[str, str]]:
    """Run approve/reject of `review_id` and proposals (of the claim ids in `kinds`) from one thread
    each, released together; returns (kind, "ok" or the error's name) per thread."""
    outcomes: list[tuple[str, str]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(kinds))

    def act(kind: str, index: int) -> None:
        handle = handles[index % len(handles)]
        barrier.wait()
        try:
            if kind == "approve":
                handle.approve(review_id, by=f"approver-{index}")
            elif kind == "reject":
                handle.reject(review_id, by=f"rejecter-{index}")
            else:
                handle.propose_retraction(kind, reason="overlapping", by=f"proposer-{index}")
            result = "ok"
        except ReviewError as exc:
            result = type(exc).__name__
        with lock:
            outcomes.append((kind, result))

    threads = [threading.Thread(target=act, args=(k, i)) for i, k in enumerate(kinds)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def test_racing_deciders_end_consistent_with_one_receipt_per_decision(
        incident: Rippl, open_rippl: Callable[..., Rippl]) -> None:
    handles = [incident] + [open_rippl(graph=incident.graph) for _ in range(3)]
    decided: Counter[str] = Counter()
    for round_ in range(3):
        target = incident.propose_retraction("CLM-001", reason=f"round {round_}", by="monitor")
        kinds = ["approve"] * 3 + ["reject"] * 3 + ["CLM-004", "CLM-001", "CLM-016"]
        outcomes = race(handles, target.id, kinds)
        assert len(outcomes) == len(kinds)
        wins = [k for k, r in outcomes if k in ("approve", "reject") and r == "ok"]
        assert len(wins) == 1, outcomes
        assert all(r == "ReviewError" for k, r in outcomes if k in ("approve", "reject") and r != "ok")
        decided[target.id] += 1
        # Settle every proposal still open so the next round starts clean.
        for item in incident.reviews():
            incident.reject(item.id, by="cleanup")
            decided[item.id] += 1
        if incident.get("CLM-001").retracted:
            incident.reinstate("CLM-001", reason="next round", by="cleanup")
        snap = snapshot(incident)
        assert_consistent(snap)
        pending_counts_match_reviews(snap)
    receipts = incident.receipts()
    per_review = Counter(r.review for r in receipts if r.review is not None)
    assert per_review == decided and all(n == 1 for n in per_review.values())
    assert [r.seq for r in receipts] == list(range(1, len(receipts) + 1))
    assert incident.verify_receipts().ok


# ---------------------------------------------------------------------------------- async twin


@pytest.mark.asyncio(loop_scope="session")
async def test_async_review_gate(incident: Rippl, arippl: AsyncRippl) -> None:
    before = snapshot(incident)
    item = await arippl.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    assert await arippl.reviews() == [item] and await arippl.review(item.id) == item
    assert (await arippl.check("ACT-001")).status == "Blocked"
    await arippl.reject(item.id, by="h")
    assert snapshot(incident).causal() == before.causal()
    again = await arippl.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    receipt = await arippl.approve(again.id, by="h")
    assert receipt.kind == "retraction_approved" and (await arippl.get("ACT-001")).state is State.OUT
    with pytest.raises(ReviewError):
        await arippl.reject(again.id, by="h")
    assert [r.kind for r in await arippl.receipts()] == ["retraction_rejected", "retraction_approved"]
    assert (await arippl.verify_receipts()).ok
