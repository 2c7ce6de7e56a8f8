"""Retraction by provenance: one review covers every source a provenance query matches; its
preview shows what goes OUT and what survives through another reading; approving it is one wave
with one receipt naming every source and claim; compensations list every executed call
downstream. Both backends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rippl_core import AsyncRippl, InvalidInputError, NoMatchError, Rippl, State
from rippl_core._runtime.wire import Query
from rippl_core.testing import Clock
from tests.helpers_provenance import EVIL, START, seed


@pytest.fixture
def clock() -> Iterator[Clock]:
    with Clock(START) as frozen:
        yield frozen


def test_a_domain_proposed_approved_as_one_wave_with_one_receipt(rippl: Rippl, clock: Clock) -> None:
    incident = seed(rippl, clock)
    events = rippl.subscribe()
    item = rippl.propose_retraction_where(tool="fetch_url", source_prefix=EVIL,
                                          reason="evil.example carries a prompt injection",
                                          by="monitor-bot", monitor="alertmanager")
    assert item.kind == "provenance" and item.status == "pending"
    assert len(item.claims) == 3  # the three readings of the domain, one per run
    assert sorted(item.matched) == sorted(incident.evil_claims.values())
    assert item.survives == []
    assert set(incident.executed + incident.pending) <= set(item.at_risk)
    assert set(incident.evil_claims.values()) <= set(item.at_risk)
    assert incident.clean_action not in item.at_risk
    assert item.query is not None and item.query.tool == "fetch_url"
    assert item.monitor == "alertmanager" and rippl.reviews() == [item]
    proposed = next(e for e in events if e.type == "review_proposed")
    assert proposed.by == "monitor-bot" and proposed.monitor == "alertmanager"
    assert proposed.kind == "provenance" and proposed.sources == item.claims
    events.close()
    # AT_RISK meanwhile: the pending call is blocked
    assert rippl.get(incident.pending[0]).state is State.AT_RISK
    receipts_before = len(rippl.receipts())
    receipt = rippl.approve(item.id, by="alice")
    assert len(rippl.receipts()) == receipts_before + 1
    assert receipt.kind == "retraction_approved" and receipt.review == item.id
    assert receipt.body["sources"] == item.claims and receipt.body["claims"] == item.matched
    assert receipt.body["monitor"] == "alertmanager"
    affected = {a["id"] for a in receipt.body["affected"]}
    assert set(item.claims) | set(item.matched) | set(incident.executed) <= affected
    assert rippl.verify_receipts().ok
    assert sorted(c.action for c in rippl.compensations()) == sorted(incident.executed)
    assert rippl.get(incident.pending[0]).state is State.OUT
    assert rippl.get(incident.clean_action).state is State.IN
    assert rippl.review(item.id).status == "approved"


def test_a_claim_another_reading_supports_survives(rippl: Rippl, clock: Clock) -> None:
    incident = seed(rippl, clock)
    item = rippl.propose_retraction_where(run="r1", reason="run r1 was compromised", by="bob")
    assert incident.good_claim in item.matched and incident.good_claim in item.survives
    assert incident.evil_claims["r1"] in item.at_risk
    assert incident.good_claim not in item.at_risk
    rippl.approve(item.id, by="alice")
    assert rippl.get(incident.good_claim).state is State.IN  # r4 read it too
    assert rippl.get(incident.clean_action).state is State.IN
    assert [c.action for c in rippl.compensations()] == [incident.executed[0]]


def test_rejecting_restores_everything(rippl: Rippl, clock: Clock) -> None:
    incident = seed(rippl, clock)
    item = rippl.propose_retraction_where(agent="researcher", reason="suspect", by="bob")
    assert len(item.claims) == 5  # r1: two pages and its email call's result; r2: a page, a result
    rippl.reject(item.id, by="alice")
    assert all(rippl.get(n).state is State.IN for n in item.claims + item.matched)
    assert rippl.get(incident.pending[0]).state is State.IN
    assert rippl.compensations() == [] and rippl.verify_receipts().ok


def test_windows_args_kind_and_framework(rippl: Rippl, clock: Clock) -> None:
    incident = seed(rippl, clock)
    # readings at 10:00, 10:01, 10:02 (the good page at 10:03): [10:01, 10:02) holds r2's alone
    item = rippl.propose_retraction_where(tool="fetch_url", since="2026-12-01T10:01:00Z",
                                          until="2026-12-01T10:02:00Z", reason="bad minute", by="b")
    assert item.matched == [incident.evil_claims["r2"]]
    rippl.reject(item.id, by="alice")
    item = rippl.propose_retraction_where(args={"url": f"{EVIL}page-2"}, reason="x", by="b")
    assert item.matched == [incident.evil_claims["r3"]]
    rippl.reject(item.id, by="alice")
    item = rippl.propose_retraction_where(framework="crewai", source_kind="tool_result",
                                          reason="x", by="b")
    assert item.matched == [incident.evil_claims["r3"]]


def test_nothing_matched_raises_and_creates_nothing(rippl: Rippl, clock: Clock) -> None:
    seed(rippl, clock)
    with pytest.raises(NoMatchError, match="no source matches the provenance query tool=nope"):
        rippl.propose_retraction_where(tool="nope", reason="x", by="b")
    with pytest.raises(NoMatchError):
        rippl.propose_retraction_where(tool="fetch_url", since="2027-01-01T00:00:00Z",
                                       reason="x", by="b")
    with pytest.raises(InvalidInputError, match="at least one of"):
        rippl.propose_retraction_where(reason="x", by="b")
    with pytest.raises(InvalidInputError, match="since must be before until"):
        rippl.propose_retraction_where(since="2026-12-02T00:00:00Z", until="2026-12-01T00:00:00Z",
                                       reason="x", by="b")
    assert rippl.reviews(None) == [] and rippl.receipts() == []
    item = rippl.propose_retraction_where(source_prefix=EVIL, reason="x", by="b")
    rippl.approve(item.id, by="alice")
    with pytest.raises(NoMatchError, match="3 matching sources were already retracted"):
        rippl.propose_retraction_where(source_prefix=EVIL, reason="x", by="b")


def test_run_roots_only_by_kind(rippl: Rippl, clock: Clock) -> None:
    seed(rippl, clock)
    item = rippl.propose_retraction_where(run="r3", reason="x", by="b")
    assert len(item.claims) == 1  # r3's reading, not its run's root
    rippl.reject(item.id, by="alice")
    roots = rippl.propose_retraction_where(run="r3", source_kind="run", reason="stop r3", by="b")
    assert len(roots.claims) == 1 and roots.claims != item.claims


@pytest.mark.asyncio(loop_scope="session")
async def test_async_twin(rippl: Rippl, arippl: AsyncRippl, clock: Clock) -> None:
    incident = seed(rippl, clock)
    item = await arippl.propose_retraction_where(tool="fetch_url", source_prefix=EVIL,
                                                 reason="injection", by="monitor-bot")
    receipt = await arippl.approve(item.id, by="alice")
    assert receipt.body["sources"] == item.claims
    assert sorted(c.action for c in await arippl.compensations()) == sorted(incident.executed)
    with pytest.raises(NoMatchError):
        await arippl.propose_retraction_where(tool="nope", reason="x", by="b")


def test_a_pending_review_survives_pruning_its_runs(rippl: Rippl, clock: Clock) -> None:
    incident = seed(rippl, clock)
    item = rippl.propose_retraction_where(source_prefix=EVIL, reason="injection", by="bot")
    for run in ("r1", "r2", "r3"):
        rippl.run(run).close()
    assert sorted(rippl.prune_runs(older_than="9999-01-01T00:00:00Z")) == ["r1", "r2", "r3"]
    assert all(rippl.get(s).pending_reviews == 1 for s in item.claims)  # kept: under review
    receipt = rippl.approve(item.id, by="alice")
    assert receipt.body["sources"] == item.claims
    assert all(rippl.get(c).state is State.OUT for c in incident.evil_claims.values())
    assert rippl.verify_receipts().ok


def test_one_review_covers_a_bounded_number_of_sources(rippl: Rippl, clock: Clock,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    seed(rippl, clock)
    monkeypatch.setattr("rippl_core.review.provenance.MAX_SOURCES", 2)
    with pytest.raises(InvalidInputError, match="matches 3 sources; one review covers at most 2"):
        rippl.propose_retraction_where(source_prefix=EVIL, reason="x", by="b")
    assert rippl.reviews(None) == []


def test_readings_keep_their_url_host_and_older_graphs_get_it(rippl: Rippl, clock: Clock,
                                                               backend: dict[str, object]) -> None:
    incident = seed(rippl, clock)
    item = rippl.propose_retraction_where(source_prefix=EVIL, reason="x", by="b")
    rippl.reject(item.id, by="alice")
    hosts = rippl._driver.query(Query("MATCH (s:Source) WHERE s.host IS NOT NULL "
                                      "RETURN s.host, count(s) ORDER BY s.host", read_only=True))
    assert hosts == [("docs.example", 2), ("evil.example", 3)]
    # a graph written before readings kept their host: reopening backfills it
    rippl._driver.query(Query("MATCH (s:Source) REMOVE s.host"))
    rippl.redis.delete(rippl.keys.schema)
    with Rippl.open(graph=rippl.graph, **backend) as again:  # type: ignore[arg-type]
        found = again.propose_retraction_where(source_prefix=EVIL, reason="x", by="b")
        assert sorted(found.matched) == sorted(incident.evil_claims.values())
