"""Contradictions are proposed, never applied (issue 24 part 4): the key detector on add_claim,
load and ingestion, sync and async; the model detector over a scripted LangChain chat model; the
evidence and the events; a hypothesis property of the key rule against a plain reference. Both
backends (embedded and a loopback server), real FalkorDB."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pytest
from helpers_contradictions import judgements
from helpers_core import fresh
from helpers_ingest import scripted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import AsyncRippl, ConflictError, InvalidInputError, Rippl, State
from rippl_core.review.contradictions import KEY_DETECTOR, MODEL_DETECTOR, words_of
from rippl_core.review.detectors import ChatModelDetector, DetectorError


def shard(rippl: Rippl | None = None) -> None:
    assert rippl is not None
    rippl.add_source("SRC-grafana", "Grafana: shard-09 health, 09:00 UTC", uri="https://grafana/09")
    rippl.add_source("SRC-pager", "PagerDuty: shard-09 degraded, 09:12 UTC")


def pairs(rippl: Rippl) -> set[tuple[str, str]]:
    """(claim proposed for retraction, claim contradicting it) of every review."""
    return {(item.claim, item.contradiction.new.id) for item in rippl.reviews(None)
            if item.contradiction is not None}


# ------------------------------------------------------------------------------ the key rule


def test_same_key_other_value_proposes_the_old_claim_with_both_sides_as_evidence(
        rippl: Rippl) -> None:
    shard(rippl)
    old = rippl.add_claim("CLM-healthy", "Shard 09 is healthy", sources=["SRC-grafana"],
                          key="shard-09/health", value="healthy")
    rippl.add_decision("DEC-move", "Move billing to shard 09", premises=["CLM-healthy"])
    assert rippl.reviews() == []
    new = rippl.add_claim("CLM-degraded", "Shard 09 is degraded", sources=["SRC-pager"],
                          key=" Shard-09 / Health ", value="Degraded.")
    assert (old.key, new.key, new.value) == ("shard-09/health", "shard-09/health", "degraded")
    [item] = rippl.reviews()
    assert (item.claim, item.kind, item.status, item.proposed_by) == \
        ("CLM-healthy", "retraction", "pending", KEY_DETECTOR)
    assert item.at_risk == ["DEC-move"]
    found = item.contradiction
    assert found is not None and found.detector == "key" and found.key == "shard-09/health"
    assert (found.old.id, found.old.text, found.old.value) == \
        ("CLM-healthy", "Shard 09 is healthy", "healthy")
    assert (found.new.id, found.new.text, found.new.value) == \
        ("CLM-degraded", "Shard 09 is degraded", "degraded")
    assert found.old.sources == [{"id": "SRC-grafana", "title": "Grafana: shard-09 health, "
                                  "09:00 UTC", "uri": "https://grafana/09"}]
    assert found.new.sources == [{"id": "SRC-pager",
                                  "title": "PagerDuty: shard-09 degraded, 09:12 UTC"}]
    assert "'degraded'" in item.reason and "'healthy'" in item.reason
    assert "Shard 09 is degraded" in (item.evidence or "") and "Grafana" in (item.evidence or "")
    # proposed, never applied: nothing is retracted, the old claim is at risk until a human decides
    assert not rippl.get("CLM-healthy").retracted
    assert rippl.get("CLM-healthy").state is State.AT_RISK
    assert rippl.get("CLM-degraded").state is State.IN
    assert rippl.receipts() == []
    # a human decides; the decision is the ordinary one
    rippl.approve(item.id, by="alice")
    assert rippl.get("CLM-healthy").retracted
    assert rippl.get("DEC-move").state is State.OUT


def test_each_pair_is_proposed_once_whatever_was_decided(rippl: Rippl) -> None:
    shard(rippl)
    rippl.add_claim("CLM-a", "Shard 09 is healthy", key="shard-09/health", value="healthy")
    rippl.add_claim("CLM-b", "Shard 09 is degraded", key="shard-09/health", value="degraded")
    [item] = rippl.reviews()
    rippl.add_claim("CLM-b", "Shard 09 is degraded", key="shard-09/health", value="degraded")
    assert rippl.detect_contradictions(["CLM-b"]) == []
    rippl.reject(item.id, by="alice")
    rippl.add_claim("CLM-b", "Shard 09 is degraded", sources=["SRC-pager"],
                    key="shard-09/health", value="degraded")
    assert len(rippl.reviews(None)) == 1
    # stated again later, the older value proposes the other way round (another pair)
    made = rippl.detect_contradictions(["CLM-a"])
    assert [(m.claim, m.contradiction.new.id if m.contradiction else None) for m in made] == \
        [("CLM-b", "CLM-a")]


def test_no_proposal_for_the_same_value_another_key_or_no_key(rippl: Rippl) -> None:
    rippl.add_claim("CLM-a", "Shard 09 is healthy", key="shard-09/health", value="healthy")
    rippl.add_claim("CLM-b", "Shard 09 looks fine and healthy", key="shard-09/health",
                    value="HEALTHY")
    rippl.add_claim("CLM-c", "Shard 07 is degraded", key="shard-07/health", value="degraded")
    rippl.add_claim("CLM-d", "Shard 09 is degraded")
    assert rippl.reviews(None) == []


def test_without_a_value_the_normalised_text_is_the_value(rippl: Rippl) -> None:
    rippl.add_claim("CLM-a", "The billing owner is Dana", key="billing/owner")
    rippl.add_claim("CLM-b", "the billing owner is  dana.", key="billing/owner")
    assert rippl.reviews() == []
    rippl.add_claim("CLM-c", "The billing owner is Sam", key="billing/owner")
    assert pairs(rippl) == {("CLM-a", "CLM-c"), ("CLM-b", "CLM-c")}


def test_retracted_claims_are_not_proposed_and_several_old_values_each_are(rippl: Rippl) -> None:
    rippl.add_claim("CLM-a", "Region is eu-west-1", key="db/region", value="eu-west-1")
    rippl.retract("CLM-a", reason="typo", by="alice")
    rippl.add_claim("CLM-b", "Region is eu-west-2", key="db/region", value="eu-west-2")
    rippl.add_claim("CLM-c", "Region is us-east-1", key="db/region", value="us-east-1")
    assert pairs(rippl) == {("CLM-b", "CLM-c")}


def test_a_claim_gains_a_key_once_and_another_key_needs_replace(rippl: Rippl) -> None:
    rippl.add_claim("CLM-a", "Shard 09 is healthy")
    assert rippl.add_claim("CLM-a", "Shard 09 is healthy", key="shard-09/health",
                           value="healthy").key == "shard-09/health"
    assert rippl.add_claim("CLM-a", "Shard 09 is healthy").key == "shard-09/health"
    with pytest.raises(ConflictError):
        rippl.add_claim("CLM-a", "Shard 09 is healthy", key="shard-09/status", value="healthy")
    assert rippl.add_claim("CLM-a", "Shard 09 is healthy", key="shard-09/status", value="up",
                           replace=True).value == "up"


@pytest.mark.parametrize("key", ["health", "/health", "shard-09/", "", "  "])
def test_a_key_is_a_subject_and_a_property(rippl: Rippl, key: str) -> None:
    with pytest.raises(InvalidInputError):
        rippl.add_claim(None, "Shard 09 is healthy", key=key)


def test_a_value_needs_a_key(rippl: Rippl) -> None:
    with pytest.raises(InvalidInputError, match="no key"):
        rippl.add_claim(None, "Shard 09 is healthy", value="healthy")


def test_load_runs_the_key_detector(rippl: Rippl) -> None:
    rippl.load({"claims": [{"id": "CLM-a", "text": "Shard 09 is healthy", "key": "shard-09/health",
                            "value": "healthy"}]})
    rippl.load({"claims": [{"id": "CLM-b", "text": "Shard 09 is degraded",
                            "key": "shard-09/health", "value": "degraded"}]})
    assert pairs(rippl) == {("CLM-a", "CLM-b")}


def test_ingestion_carries_keys_and_runs_the_key_detector(rippl: Rippl) -> None:
    first = {"sources": [{"ref": "s1", "title": "Grafana 09:00"}],
             "claims": [{"ref": "c1", "text": "Shard 09 is healthy", "sources": ["s1"],
                         "key": "shard-09/health", "value": "healthy"}]}
    second = {"sources": [{"ref": "s1", "title": "Pager 09:12"}],
              "claims": [{"ref": "c1", "text": "Shard 09 is degraded", "sources": ["s1"],
                          "key": "shard-09/health", "value": "degraded"}]}
    rippl.ingest_extraction(first, document="a.md")
    assert rippl.ingest_extraction(second, document="b.md", dry_run=True).status == "dry-run"
    assert rippl.reviews() == []
    report = rippl.ingest_extraction(second, document="b.md")
    [item] = rippl.reviews()
    assert item.contradiction is not None
    assert item.contradiction.new.id == report.ids["c1"]
    assert item.contradiction.new.sources[0]["title"] == "Pager 09:12"
    bad = {"claims": [{"ref": "c1", "text": "x", "key": "nokey"}]}
    with pytest.raises(InvalidInputError, match="SUBJECT/PROPERTY"):
        rippl.ingest_extraction(bad, document="c.md")


def test_a_detector_proposal_is_an_event_naming_the_detector(rippl: Rippl) -> None:
    rippl.add_claim("CLM-a", "Shard 09 is healthy", key="shard-09/health", value="healthy")
    with rippl.subscribe() as stream:
        rippl.add_claim("CLM-b", "Shard 09 is degraded", key="shard-09/health", value="degraded")
        events = []
        while (event := stream.get(timeout=2.0)) is not None:
            events.append(event)
            if event.type == "review_proposed":
                break
    proposed = [e for e in events if e.type == "review_proposed"]
    assert [(e.claim, e.by, e.detector) for e in proposed] == [("CLM-a", KEY_DETECTOR, "key")]


@pytest.mark.asyncio(loop_scope="session")
async def test_async_twin_proposes_the_same(arippl: AsyncRippl, rippl: Rippl) -> None:
    await arippl.add_claim("CLM-a", "Shard 09 is healthy", key="shard-09/health", value="healthy")
    await arippl.add_claim("CLM-b", "Shard 09 is degraded", key="shard-09/health",
                           value="degraded")
    assert [r.claim for r in await arippl.reviews()] == ["CLM-a"]
    assert await arippl.detect_contradictions(["CLM-b"]) == []
    assert pairs(rippl) == {("CLM-a", "CLM-b")}


# -------------------------------------------------------------------------- the model detector


def test_model_detector_compares_with_key_mates_and_nearest_text(rippl: Rippl) -> None:
    shard(rippl)
    rippl.add_claim("CLM-owner", "Dana owns the billing service", sources=["SRC-grafana"])
    rippl.add_claim("CLM-other", "The cafeteria opens at nine")
    model = scripted(judgements(("CLM-owner", True, "Sam, not Dana, owns billing now"),
                                ("CLM-unknown", True, "not a candidate: ignored")))
    rippl.detector = ChatModelDetector(model, nearest=3)
    rippl.add_claim("CLM-new", "Sam owns the billing service", sources=["SRC-pager"])
    [item] = rippl.reviews()
    assert (item.claim, item.proposed_by, item.reason) == \
        ("CLM-owner", MODEL_DETECTOR, "Sam, not Dana, owns billing now")
    found = item.contradiction
    assert found is not None and (found.detector, found.model) == ("model", "scripted-1")
    assert found.new.id == "CLM-new" and found.old.sources[0]["id"] == "SRC-grafana"
    asked = model.seen[0][-1].content
    assert "CLM-owner" in asked and "Sam owns the billing service" in asked
    assert "CLM-other" not in asked  # shares no significant word
    assert not rippl.get("CLM-owner").retracted


def test_model_detector_sees_the_key_mates_and_pairs_are_shared_with_the_key_rule(
        rippl: Rippl) -> None:
    rippl.add_claim("CLM-a", "Shard 09 is healthy", key="shard-09/health", value="healthy")
    model = scripted(judgements(("CLM-a", True, "degraded is not healthy")))
    rippl.detector = ChatModelDetector(model, nearest=0)
    rippl.add_claim("CLM-b", "Shard 09 is degraded", key="shard-09/health", value="degraded")
    [item] = rippl.reviews()  # the key detector proposed the pair first; the model's is the same
    assert item.proposed_by == KEY_DETECTOR
    assert "CLM-a" in model.seen[0][-1].content


def test_model_answers_no_contradiction_proposes_nothing(rippl: Rippl) -> None:
    rippl.add_claim("CLM-a", "Deploys happen on Tuesdays")
    rippl.detector = ChatModelDetector(scripted(judgements(("CLM-a", False, "compatible"))))
    rippl.add_claim("CLM-b", "Deploys happen on Tuesdays after noon")
    assert rippl.reviews() == []


def test_no_candidates_no_model_call(rippl: Rippl) -> None:
    model = scripted()
    rippl.detector = ChatModelDetector(model)
    rippl.add_claim("CLM-a", "Deploys happen on Tuesdays")
    assert model.seen == []


def test_a_failing_model_says_the_claim_was_written(rippl: Rippl) -> None:
    rippl.add_claim("CLM-a", "Deploys happen on Tuesdays")
    rippl.detector = ChatModelDetector(scripted())  # no answer scripted: the model fails
    with pytest.raises(DetectorError, match="chat model failed"):
        rippl.add_claim("CLM-b", "Deploys happen on Fridays")
    assert rippl.get("CLM-b").text == "Deploys happen on Fridays"
    model = scripted(judgements(("CLM-a", True, "Friday is not Tuesday")))
    assert [m.claim for m in rippl.detect_contradictions(
        ["CLM-b"], detector=ChatModelDetector(model))] == ["CLM-a"]


def test_a_detector_must_be_a_detector(backend: Mapping[str, Any]) -> None:
    with pytest.raises(InvalidInputError, match="detector"):
        Rippl.open(graph="never-made", detector=object(), **backend)  # type: ignore[arg-type]
    with pytest.raises(DetectorError):
        ChatModelDetector(object())


@pytest.mark.asyncio(loop_scope="session")
async def test_async_model_detector_on_ingestion(arippl: AsyncRippl, rippl: Rippl) -> None:
    await arippl.add_claim("CLM-a", "Dana owns the billing service")
    arippl.detector = ChatModelDetector(scripted(judgements(("CLM-a", True, "another owner"))))
    await arippl.ingest_extraction({"claims": [{"ref": "c1", "text": "Sam owns the billing "
                                                                   "service"}]}, document="x.md")
    [item] = await arippl.reviews()
    assert item.claim == "CLM-a" and item.reason == "another owner"


def test_words_of_keeps_significant_words() -> None:
    assert words_of("The shard 09 is NOT healthy.") == "shard|09|healthy"
    assert words_of("is the a") == ""


# ------------------------------------------------------------------- property: the key rule

SUBJECTS = ("shard-09", "shard-07")
VALUES = ("healthy", "degraded", "down")


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from(SUBJECTS), st.sampled_from(VALUES),
                                st.integers(0, 2)), min_size=1, max_size=9),
       valued=st.booleans())
def test_key_rule_matches_a_plain_reference(backend: Mapping[str, Any],
                                            steps: list[tuple[str, str, int]],
                                            valued: bool) -> None:
    """Random sequences of keyed claims (statements of a subject's health, some stated again by
    other ids): a proposal exactly for each (earlier live claim, claim written) of the same key
    with another value, once; none applied."""
    expected: set[tuple[str, str]] = set()
    claims: dict[str, tuple[str, str]] = {}  # id -> (key, value as compared)
    with fresh(backend) as rippl:
        for subject, value, variant in steps:
            claim_id = f"CLM-{subject}-{value}-{variant}"
            text = f"{subject} is {value}"
            key = f"{subject}/health"
            rippl.add_claim(claim_id, text, key=key, value=value if valued else None)
            compared = value if valued else text
            claims[claim_id] = (key, compared)
            expected |= {(other, claim_id) for other, (k, v) in claims.items()
                         if other != claim_id and k == key and v != compared}
        assert pairs(rippl) == expected
        reviews = rippl.reviews(None)
        assert len(reviews) == len(expected)
        assert all(r.status == "pending" and r.proposed_by == KEY_DETECTOR for r in reviews)
        assert not any(rippl.get(c).retracted for c in claims)
        assert rippl.receipts() == []



def test_a_graph_of_schema_nine_gains_the_indexes_when_opened(
        backend: Mapping[str, Any]) -> None:
    from rippl_core._runtime.wire import Query
    from rippl_core.client import GRAPH_SCHEMA

    with fresh(backend) as rippl:
        rippl.add_claim("CLM-a", "Shard 09 is healthy")
        # FalkorDB builds an index in the background: one dropped while still under construction
        # may be listed (and so not created again) after the drop was asked for
        status = Query("CALL db.indexes() YIELD status RETURN status", read_only=True)
        for _ in range(600):
            if all(row[0] == "OPERATIONAL" for row in rippl._driver.query(status)):
                break
            time.sleep(0.05)
        for text in ("DROP INDEX ON :Claim(key)", "DROP INDEX ON :ReviewItem(pair)",
                     "CALL db.idx.fulltext.drop('Claim')"):
            rippl._driver.run(lambda text=text: (yield Query(text)), write=True)
        listed = Query("CALL db.indexes() YIELD label, properties RETURN label, properties",
                       read_only=True)
        dropped = {("Claim", "key"), ("ReviewItem", "pair"), ("Claim", "text")}
        for _ in range(600):  # and gone before the graph is opened again
            if not dropped & {(label, prop) for label, props in rippl._driver.query(listed)
                              for prop in props}:
                break
            time.sleep(0.05)
        rippl.redis.set(rippl.keys.schema, "9")
        again = Rippl.open(graph=rippl.graph, **backend)
        try:
            rows = again._driver.query(Query("CALL db.indexes() YIELD label, properties, types "
                                             "RETURN label, properties, types", read_only=True))
            kinds = {(label, prop, kind) for label, props, types in rows for prop in props
                     for kind in types[prop]}
            assert {("Claim", "key", "RANGE"), ("ReviewItem", "pair", "RANGE"),
                    ("Claim", "text", "FULLTEXT")} <= kinds
            version = GRAPH_SCHEMA.version
            assert again.redis.get(again.keys.schema) in (version, version.encode())
            again.add_claim("CLM-b", "Shard 09 is down", key="shard-09/health")
            again.add_claim("CLM-c", "Shard 09 is up", key="shard-09/health")
            assert pairs(again) == {("CLM-b", "CLM-c")}
        finally:
            again.close()
