"""Listing nodes with their justifications (`nodes()`), and exporting the receipt chain as JSON
Lines (`export_receipts()`). Both backends."""

from __future__ import annotations

import json

import pytest

from rippl_core import InvalidInputError, Rippl


def test_nodes_lists_the_whole_graph_with_its_edges(incident: Rippl) -> None:
    listed = incident.nodes()
    stats = incident.stats()
    assert len(listed) == sum(stats.nodes.values()) == 71
    assert len({n.id for n in listed}) == 71
    edges = sum(len(j) for n in listed for j in n.justifications)
    assert edges == stats.edges
    dec_012 = next(n for n in listed if n.id == "DEC-012")
    assert dec_012.justifications == incident.get("DEC-012").justifications
    assert len(dec_012.justifications) == 2


def test_nodes_by_ids_keeps_order_skips_missing_and_limits(incident: Rippl) -> None:
    listed = incident.nodes(["DEC-001", "NOPE", "CLM-001", "SRC-001"])
    assert [n.id for n in listed] == ["DEC-001", "CLM-001", "SRC-001"]
    assert listed[0].state.value == "IN" and listed[0].justifications
    assert [n.id for n in incident.nodes(["DEC-001", "CLM-001"], limit=1)] == ["DEC-001"]
    first = incident.nodes(limit=5)
    assert len(first) == 5 and [n.id for n in first] == [n.id for n in incident.nodes()[:5]]
    assert incident.nodes(limit=0) == []


def test_nodes_of_an_empty_graph_and_bad_limits(rippl: Rippl) -> None:
    assert rippl.nodes() == []
    for bad in (-1, True, 1.5):
        with pytest.raises(InvalidInputError, match="limit"):
            rippl.nodes(limit=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        rippl.nodes("CLM-001")  # a single string is not a list of ids


def test_export_receipts_is_the_verifiable_jsonl_chain(incident: Rippl, tmp_path: object) -> None:
    item = incident.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    incident.approve(item.id, by="alice")
    incident.reinstate("CLM-001", reason="fixed", by="alice")
    lines = incident.export_receipts()
    assert len(lines) == 3 and all("\n" not in line for line in lines)
    head, *records = [json.loads(line) for line in lines]
    assert head["head"]["count"] == 2 and head["head"]["hash"] == records[-1]["hash"]
    assert [r["seq"] for r in records] == [1, 2]
    assert json.loads(records[0]["body"])["actor"] == "alice"
    from rippl_core.review.receipts import verify_export

    assert verify_export([head, *records]).ok
    tampered = [dict(records[0], body=records[0]["body"].replace("alice", "mallory")), records[1]]
    assert not verify_export([head, *tampered]).ok
    assert not verify_export([head, records[0]]).ok  # a cut tail
