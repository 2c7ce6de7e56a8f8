"""Counterfactuals: what the agent would believe without some evidence, and what a retraction would
block. Computed from reads only (no fork, no copy): every node, edge and property of the live graph
stays exactly the same, even when the computation is interrupted."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from rippl_core import InvalidInputError, NotFoundError, Rippl, State
from rippl_core._runtime.wire import Query, parse
from rippl_core.beliefs import whatif
from rippl_core.causal import counterfactual

BASE = (datetime.now(UTC) - timedelta(days=60)).replace(hour=0, minute=0, second=0, microsecond=0)


def day(n: float) -> datetime:
    return BASE + timedelta(days=n)


@pytest.fixture
def story(rippl: Rippl) -> Rippl:
    """An agent's root-cause belief over two weeks (the checkout-outage shape)."""
    for source in ("GRAFANA", "POOLS", "DEPLOY", "SENTRY", "TRAFFIC"):
        rippl.add_source(source, f"{source.lower()} report")
    rippl.add_claim("CACHE", "cache misconfiguration", sources=["GRAFANA"])
    rippl.add_claim("POOL", "pool exhaustion", sources=["POOLS"])
    rippl.add_claim("DEPLOY-V24", "bad deploy v2.4", sources=["DEPLOY", "SENTRY"])
    rippl.add_claim("SPIKE", "traffic spike", sources=["TRAFFIC"])
    rippl.add_claim("SPIKE-2", "traffic spike amplified by the pool", derived_from=["SPIKE", "POOL"])
    rippl.add_decision("SCALE", "scale the pool", premises=["POOL"])
    rippl.add_action("RESIZE", "resize the pool", decisions=["SCALE"], tool="scale_pool")
    for claim, when, evidence in (("CACHE", day(4), ["GRAFANA"]), ("POOL", day(7), ["POOLS"]),
                                  ("DEPLOY-V24", day(10), ["DEPLOY", "SENTRY"]),
                                  ("SPIKE", day(14), ["TRAFFIC"])):
        rippl.believe("sre", claim, topic="root-cause", valid_from=when, recorded_at=when,
                      evidence=evidence)
    return rippl


def snapshot(rippl: Rippl) -> dict[str, Any]:
    """Everything a write would change: every node and edge (internal id, labels or type, every
    property value, endpoints), the indexes, the graph's version counter, the keyspace and the
    list of graphs. (redis DUMP of a graph key is not usable: FalkorDB's serialization differs
    between two dumps of an untouched graph.)"""
    def rows(query: str) -> list[str]:
        reply = rippl.redis.execute_command("GRAPH.RO_QUERY", rippl.keys.graph, query)
        return sorted(repr(row) for row in reply[1])

    return {"nodes": rows("MATCH (n) RETURN id(n), labels(n), properties(n)"),
            "edges": rows("MATCH (a)-[r]->(b) RETURN id(r), type(r), properties(r), id(a), id(b)"),
            "indexes": rows("CALL db.indexes() YIELD label, properties, entitytype "
                            "RETURN label, properties, entitytype"),
            "version": rippl.redis.get(rippl.keys.version),
            # FalkorDB may add a graph's query telemetry stream (`telemetry{graph}`) on its own
            "keys": sorted(k for k in rippl.redis.keys("*") if not str(k).startswith("telemetry{")),
            "graphs": sorted(rippl.redis.execute_command("GRAPH.LIST"))}


def test_without_the_traffic_report_it_falls_back_to_the_deploy(story: Rippl) -> None:
    before = snapshot(story)
    result = story.what_if("sre", "root-cause", without=["TRAFFIC"])
    assert result.actual.claim == "SPIKE" and result.counterfactual.claim == "DEPLOY-V24"
    assert result.changed
    # the fallback holds on where the dropped adoption would have started
    assert result.counterfactual.valid_from == day(10) and result.counterfactual.valid_to is None
    assert [b.claim for b in result.dropped] == ["SPIKE"]
    assert result.lost_claims == ["SPIKE"]  # of the claims in this timeline
    assert "DEPLOY-V24" in result.explain()
    assert snapshot(story) == before


def test_partial_evidence_keeps_the_belief_with_what_remains(story: Rippl) -> None:
    result = story.what_if("sre", "root-cause", without=["SENTRY"], as_of=day(12))
    assert result.counterfactual.claim == "DEPLOY-V24" and not result.changed
    assert result.counterfactual.evidence == ["DEPLOY"] and result.lost_claims == []
    both = story.what_if("sre", "root-cause", without=["SENTRY", "DEPLOY"], as_of=day(12))
    assert both.counterfactual.claim == "POOL"
    assert both.counterfactual.valid_from == day(7) and both.counterfactual.valid_to == day(14)


def test_falling_back_past_several_dropped_adoptions(story: Rippl) -> None:
    result = story.what_if("sre", "root-cause", without=["TRAFFIC", "DEPLOY", "SENTRY", "POOLS"])
    assert result.counterfactual.claim == "CACHE" and result.counterfactual.valid_to is None
    assert [b.claim for b in result.dropped] == ["POOL", "DEPLOY-V24", "SPIKE"]
    nothing = story.what_if("sre", "root-cause", without=["GRAFANA"], as_of=day(5))
    assert nothing.actual.claim == "CACHE" and nothing.counterfactual is None
    # before the first adoption, there is nothing either way
    early = story.what_if("sre", "root-cause", without=["GRAFANA"], as_of=day(1))
    assert early.actual is None and early.counterfactual is None and not early.changed


def test_a_belief_without_evidence_is_dropped_when_its_claim_loses_support(story: Rippl) -> None:
    story.believe("sre", "SPIKE-2", topic="root-cause", valid_from=day(15), recorded_at=day(15))
    result = story.what_if("sre", "root-cause", without=["POOLS"])
    assert result.actual.claim == "SPIKE-2"
    assert "SPIKE-2" in result.lost_claims and result.counterfactual.claim == "SPIKE"
    assert result.counterfactual.valid_from == day(14)


def test_what_if_respects_valid_and_transaction_time(story: Rippl) -> None:
    story.revise("sre", "root-cause", "POOL", valid_from=day(10), valid_to=day(12),
                 recorded_at=day(20))
    now = story.what_if("sre", "root-cause", without=["POOLS"], as_of=day(11))
    assert now.actual.claim == "POOL" and now.counterfactual.claim == "CACHE"
    then = story.what_if("sre", "root-cause", without=["POOLS"], as_of=day(11), known_at=day(19))
    assert then.actual.claim == "DEPLOY-V24" and then.counterfactual.claim == "DEPLOY-V24"


def test_bad_counterfactual_input(story: Rippl) -> None:
    with pytest.raises(InvalidInputError, match="empty"):
        story.what_if("sre", "root-cause", without=[])
    with pytest.raises(InvalidInputError, match="source"):
        story.what_if("sre", "root-cause", without=["CACHE"])
    with pytest.raises(NotFoundError, match="NOPE"):
        story.what_if("sre", "root-cause", without=["NOPE"])
    with pytest.raises(InvalidInputError, match="source or claim ids"):
        story.what_if_retracted(["SCALE"])
    with pytest.raises(InvalidInputError, match="empty"):
        story.what_if_retracted([])


@pytest.mark.parametrize("bulk", [False, True], ids=["walk", "scan"])
def test_what_if_retracted_predicts_the_real_wave_without_writing(
        incident: Rippl, bulk: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if bulk:  # a region past the threshold is read with one scan of the graph instead of a walk
        monkeypatch.setattr(counterfactual, "BULK_REGION", 0)
        monkeypatch.setattr(counterfactual, "SCAN_CHUNK", 7)  # in pieces of 7 internal ids
    before = snapshot(incident)
    predicted = incident.what_if_retracted(["CLM-001"])
    assert "ACT-001" in predicted.blocked_actions and "ACT-002" not in predicted.blocked
    assert "DEC-012" not in predicted.blocked  # it keeps its alternative justification
    assert len(predicted.changed(State.OUT)) == 18
    assert snapshot(incident) == before
    wave = incident.retract("CLM-001", reason="disk errors", by="telemetry")
    assert snapshot(incident) != before  # the snapshot does see a real write
    assert sorted((t.id, t.before, t.after) for t in wave.transitions) == \
        sorted((t.id, t.before, t.after) for t in predicted.transitions)


def drive_until(rippl: Rippl, make: Callable[[], Any], fail_at: int) -> int:
    """Run an operation against the real graph, throwing an error into it at its `fail_at`-th
    query (as an interrupted call would). Returns how many queries it made."""
    gen = make()
    request = next(gen)
    count = 0
    try:
        while True:
            count += 1
            if count == fail_at:
                request = gen.throw(KeyboardInterrupt("interrupted"))
                continue
            assert isinstance(request, Query) and request.read_only, request
            reply = rippl.redis.execute_command("GRAPH.RO_QUERY", rippl.keys.graph, request.command(),
                                                "--compact")
            request = gen.send(parse(reply))
    except StopIteration:
        return count
    except KeyboardInterrupt:
        return count


def test_interrupted_what_if_leaves_nothing_behind(story: Rippl) -> None:
    before = snapshot(story)
    total = drive_until(story, lambda: whatif.what_if("sre", "root-cause", without=["TRAFFIC"],
                                                   as_of=None, known_at=None), fail_at=10**6)
    assert total > 3
    for fail_at in range(1, total + 1):
        drive_until(story, lambda: whatif.what_if("sre", "root-cause", without=["TRAFFIC"],
                                               as_of=None, known_at=None), fail_at=fail_at)
        drive_until(story, lambda: counterfactual.what_if_retracted(["POOL"]), fail_at=fail_at)
        assert snapshot(story) == before


def test_what_if_retracted_agrees_between_walk_and_scan(story: Rippl,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    story.propose_retraction("DEPLOY", reason="suspect log", by="monitor")  # an AT_RISK region
    walked = [story.what_if_retracted(ids) for ids in (["POOLS"], ["SPIKE", "SENTRY"], ["CACHE"])]
    monkeypatch.setattr(counterfactual, "BULK_REGION", 0)
    monkeypatch.setattr(counterfactual, "SCAN_CHUNK", 5)
    scanned = [story.what_if_retracted(ids) for ids in (["POOLS"], ["SPIKE", "SENTRY"], ["CACHE"])]
    assert walked == scanned
    assert walked[0].blocked == ["RESIZE", "SCALE"]
    assert {t.id: t.after for t in walked[1].transitions} == {
        "SPIKE": State.OUT, "SPIKE-2": State.OUT, "SENTRY": State.OUT, "DEPLOY-V24": State.AT_RISK}
