"""Validation before any write: every problem reported, nothing written; merging and conflicts."""

from __future__ import annotations

import random
from itertools import pairwise
from typing import Any

import networkx as nx
import pytest
from helpers_ingest import dump
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import Kind, Rippl, State
from rippl_core._runtime.validation import semantic_id
from rippl_core.ingest import (
    Document,
    Extraction,
    ExtractionRejected,
    StructuredExtractor,
    plan,
    to_markdown,
)
from rippl_core.ingest.validate import find_cycles


def codes(p: Any) -> list[str]:
    return sorted(problem.code for problem in p.problems)


def ex(**parts: Any) -> Extraction:
    return Extraction.model_validate(parts)


# ------------------------------------------------------------------------ pure: the planner


def test_refs_become_semantic_ids_and_same_statements_merge() -> None:
    extraction = ex(
        sources=[{"ref": "s1", "title": "Pager"}, {"ref": "s2", "title": "Dashboard"}],
        claims=[{"ref": "c1", "text": "Disk is full.", "sources": ["s1"]},
                {"ref": "c2", "text": "  disk IS   full", "sources": ["s2"]}],
    )
    p = plan(extraction)
    assert not p.problems
    claim = semantic_id(Kind.CLAIM, "Disk is full")
    assert p.ids["c1"] == p.ids["c2"] == claim
    assert p.nodes[claim].refs == ["c1", "c2"]
    assert sorted(p.nodes[claim].justifications) == sorted([[p.ids["s1"]], [p.ids["s2"]]])


def test_local_problems_are_all_reported() -> None:
    extraction = ex(
        sources=[{"ref": "s1", "title": "Pager"}],
        claims=[{"ref": "c1", "text": "A", "sources": ["c2"]},           # a claim listed as source
                {"ref": "c2", "text": "B", "derived_from": ["a1"]},      # Action -> Claim
                {"ref": "s1", "text": "C"}],                             # duplicate ref
        decisions=[{"ref": "d1", "title": "D", "premises": ["s1"]}],     # Source -> Decision
        actions=[{"ref": "a1", "title": "E", "decisions": ["d1"]},
                 {"ref": "a2", "title": "F", "tool": "bad\x07", "args": {"x": float("nan")}},
                 {"ref": "a3", "title": "G", "triggers": ["a2"]}],  # a2 is broken: not reported twice
    )
    p = plan(extraction, Document("doc.md", "text"))
    assert codes(p) == ["disallowed-edge", "disallowed-edge", "duplicate-ref", "invalid-value",
                        "invalid-value", "invalid-value"]
    text = "\n".join(str(problem) for problem in p.problems)
    assert "claims[c1].sources names 'c2', a Claim; sources lists Source refs" in text
    assert "a Source cannot support a Decision" in text
    assert "an Action cannot support a Claim" in text
    assert "tool" in text and "args" in text


@pytest.mark.parametrize("claims, cycle", [
    ([{"ref": "a", "text": "A", "derived_from": ["a"]}], "a -> a"),
    ([{"ref": "a", "text": "A", "derived_from": ["b"]},
      {"ref": "b", "text": "B", "derived_from": ["a"]}], "a -> b -> a"),
    # Two refs stating the same claim are one node: b derived from a is a self-loop.
    ([{"ref": "a", "text": "Same"}, {"ref": "b", "text": "same.", "derived_from": ["a"]}], "a -> a"),
])
def test_self_support_is_refused(claims: list[dict[str, Any]], cycle: str) -> None:
    p = plan(ex(claims=claims))
    assert codes(p) == ["self-support"]
    assert cycle in p.problems[0].message


def test_a_decision_cycle_through_depends_on_and_alternatives() -> None:
    p = plan(ex(
        claims=[{"ref": "c", "text": "C"}],
        decisions=[{"ref": "d1", "title": "D1", "premises": ["c"], "depends_on": ["d2"]},
                   {"ref": "d2", "title": "D2", "premises": ["c"], "alternatives": [["d1"]]}]))
    assert codes(p) == ["self-support"]


def test_unknown_refs_are_left_for_the_graph() -> None:
    p = plan(ex(decisions=[{"ref": "d", "title": "D", "premises": ["CLM-001", "CLM-999"]}]))
    assert not p.problems
    assert sorted(p.external) == ["CLM-001", "CLM-999"]


@st.composite
def claim_graphs(draw: st.DrawFn) -> list[tuple[int, int]]:
    n = draw(st.integers(1, 8))
    return draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=14))


@given(claim_graphs())
@settings(max_examples=150, deadline=None)
def test_self_support_matches_networkx(edges: list[tuple[int, int]]) -> None:
    """A self-support problem for each strongly connected component with a cycle, no other."""
    nodes = sorted({n for e in edges for n in e} | {0})
    derived: dict[int, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        derived[b].append(f"c{a}")
    p = plan(ex(claims=[{"ref": f"c{n}", "text": f"claim {n}", "derived_from": derived[n]}
                        for n in nodes]))
    graph = nx.DiGraph(edges)
    graph.add_nodes_from(nodes)
    cyclic = [c for c in nx.strongly_connected_components(graph)
              if len(c) > 1 or any(graph.has_edge(n, n) for n in c)]
    assert codes(p) == ["self-support"] * len(cyclic)
    for problem in p.problems:  # each reported cycle is a real closed walk of the graph
        walk = [int(r[1:]) for r in problem.message.split(": ", 1)[1].split(". ")[0].split(" -> ")]
        assert walk[0] == walk[-1]
        assert all(graph.has_edge(a, b) for a, b in pairwise(walk))


def test_find_cycles_only_through_required_edges() -> None:
    edges = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}
    assert find_cycles(edges, {("c", "d")}) == [["c", "d", "c"]]
    assert len(find_cycles(edges)) == 2


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1,
                max_size=30).filter(lambda s: s.strip() == s and s.strip())
_ref = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)


@st.composite
def extractions(draw: st.DrawFn) -> Extraction:
    refs = draw(st.lists(_ref, min_size=4, max_size=4, unique=True))
    section = st.one_of(st.none(), _text)
    args = st.dictionaries(_ref, st.one_of(st.integers(-5, 5), _text, st.booleans(), st.none()),
                           max_size=3)
    return ex(
        title=draw(st.one_of(st.none(), _text)),
        sources=[{"ref": refs[0], "title": draw(_text), "kind": draw(st.one_of(st.none(), _text)),
                  "section": draw(section)}],
        claims=[{"ref": refs[1], "text": draw(_text), "sources": [refs[0]], "section": draw(section),
                 "quote": draw(st.one_of(st.none(), _text))}],
        decisions=[{"ref": refs[2], "title": draw(_text), "premises": [refs[1]],
                    "section": draw(section)}],
        actions=[{"ref": refs[3], "title": draw(_text), "decisions": [refs[2]],
                  "tool": draw(st.one_of(st.none(), _ref)),
                  "args": draw(st.one_of(st.none(), args)), "section": draw(section)}],
    )


@given(extractions())
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_structured_format_round_trips(extraction: Extraction) -> None:
    """What `to_markdown` writes, the structured reader reads back identically."""
    text = to_markdown(extraction)
    again = StructuredExtractor().extract(Document("round.md", text))
    assert again.model_dump() == extraction.model_dump()


@given(extractions(), st.randoms(use_true_random=False))
@settings(max_examples=60, deadline=None)
def test_ids_do_not_depend_on_item_order(extraction: Extraction, rnd: random.Random) -> None:
    shuffled = extraction.model_copy(deep=True)
    for key in ("sources", "claims", "decisions", "actions"):
        rnd.shuffle(getattr(shuffled, key))
    first, second = plan(extraction), plan(shuffled)
    assert first.ids == second.ids
    assert {n: sorted(map(sorted, v.justifications)) for n, v in first.nodes.items()} == \
        {n: sorted(map(sorted, v.justifications)) for n, v in second.nodes.items()}


# --------------------------------------------------------------------- against the real graph


def test_a_rejected_extraction_writes_nothing(incident: Rippl) -> None:
    before = dump(incident)
    bad = ex(
        sources=[{"ref": "s", "title": "New dashboard"}],
        claims=[{"ref": "c", "text": "Shard 11 is healthy", "sources": ["s", "SRC-404"]}],
        decisions=[{"ref": "d", "title": "Use shard 11", "premises": ["c", "ACT-001"]}],
        actions=[{"ref": "a", "title": "Migrate to 11", "decisions": ["d", "DEC-999"]}],
    )
    with pytest.raises(ExtractionRejected) as caught:
        incident.ingest_extraction(bad, document="hallucinated.md", extractor="test")
    assert sorted(p.code for p in caught.value.problems) == [
        "disallowed-edge", "unknown-reference", "unknown-reference"]
    message = str(caught.value)
    assert "'SRC-404', which is neither a ref defined in this document nor a node in the graph" \
        in message
    assert "'DEC-999'" in message and "ACT-001" in message
    assert dump(incident) == before


def test_references_to_graph_nodes_link_into_the_existing_graph(incident: Rippl) -> None:
    report = incident.ingest_extraction(ex(
        decisions=[{"ref": "d", "title": "Schedule the billing move for Sunday",
                    "premises": ["CLM-001"], "depends_on": ["DEC-001"]}],
        actions=[{"ref": "a", "title": "Announce the Sunday window", "decisions": ["d"],
                  "tool": "post_message", "args": {"channel": "#billing"}}]),
        document="plan.md")
    decision = report.ids["d"]
    assert sorted(incident.get(decision).justifications[0]) == ["CLM-001", "DEC-001"]
    wave = incident.retract("CLM-001", reason="disk errors", by="test")
    assert {decision, report.ids["a"]} <= set(wave.changed(State.OUT))
    assert not incident.check(report.ids["a"]).allowed


def test_a_stored_node_with_other_details_is_a_conflict(rippl: Rippl) -> None:
    rippl.ingest_extraction(ex(sources=[{"ref": "s", "title": "Runbook", "uri": "https://a"}]),
                            document="one.md")
    rippl.ingest_extraction(ex(actions=[{"ref": "a", "title": "Restart", "tool": "restart",
                                         "args": {"host": "db1"}}]), document="one.md")
    before = dump(rippl)
    with pytest.raises(ExtractionRejected) as caught:
        rippl.ingest_extraction(ex(
            sources=[{"ref": "s", "title": "Runbook", "uri": "https://b"}],
            actions=[{"ref": "a", "title": "Restart", "tool": "restart", "args": {"host": "db2"}}]),
            document="two.md")
    assert [p.code for p in caught.value.problems] == ["conflict", "conflict"]
    assert "uri https://a vs https://b" in str(caught.value)
    assert 'args {"host":"db1"} vs {"host":"db2"}' in str(caught.value)
    assert dump(rippl) == before


def _decision_docs() -> tuple[Extraction, Extraction]:
    first = ex(claims=[{"ref": "c1", "text": "Shard 09 is healthy"}],
               decisions=[{"ref": "d", "title": "Move billing to shard 09", "premises": ["c1"]}])
    second = ex(claims=[{"ref": "c2", "text": "Shard 09 has the most headroom"}],
                decisions=[{"ref": "d", "title": "Move billing to shard 09", "premises": ["c2"]}])
    return first, second


def test_a_decision_restated_with_other_premises_gains_an_alternative_justification(
        rippl: Rippl) -> None:
    first, second = _decision_docs()
    rippl.ingest_extraction(first, document="rfc.md")
    report = rippl.ingest_extraction(second, document="postmortem.md")
    decision = report.ids["d"]
    assert decision in report.merged
    assert report.nodes[1].new_support == [[report.ids["c2"]]]
    node = rippl.get(decision)
    assert sorted(node.justifications) == sorted([[semantic_id(Kind.CLAIM, "Shard 09 is healthy")],
                                                  [report.ids["c2"]]])
    assert [m["document"] for m in node.provenance["also"]] == ["postmortem.md"]  # type: ignore[index]
    # Either reason suffices: retracting one leaves the decision holding.
    rippl.retract(semantic_id(Kind.CLAIM, "Shard 09 is healthy"), reason="disk errors", by="t")
    assert rippl.get(decision).state is State.IN
    rippl.retract(report.ids["c2"], reason="wrong", by="t")
    assert rippl.get(decision).state is State.OUT


def test_on_conflict_reject_refuses_other_premises(rippl: Rippl) -> None:
    first, second = _decision_docs()
    rippl.ingest_extraction(first, document="rfc.md")
    before = dump(rippl)
    with pytest.raises(ExtractionRejected) as caught:
        rippl.ingest_extraction(second, document="postmortem.md", on_conflict="reject")
    assert [p.code for p in caught.value.problems] == ["conflict"]
    assert "on_conflict='justify'" in str(caught.value)
    assert dump(rippl) == before
    # A claim restated with one more source is never a conflict: any source suffices.
    report = rippl.ingest_extraction(ex(
        sources=[{"ref": "s", "title": "Grafana"}],
        claims=[{"ref": "c", "text": "Shard 09 is healthy", "sources": ["s"]}]),
        document="audit.md", on_conflict="reject")
    assert report.status == "written"


def test_a_cycle_through_stored_edges_is_refused(rippl: Rippl) -> None:
    rippl.ingest_extraction(ex(claims=[{"ref": "a", "text": "A"},
                                       {"ref": "b", "text": "B", "derived_from": ["a"]},
                                       {"ref": "c", "text": "C", "derived_from": ["b"]}]),
                            document="one.md")
    before = dump(rippl)
    with pytest.raises(ExtractionRejected) as caught:
        rippl.ingest_extraction(ex(claims=[{"ref": "x", "text": "a", "derived_from": [
            semantic_id(Kind.CLAIM, "C")]}]), document="two.md")
    assert [p.code for p in caught.value.problems] == ["self-support"]
    assert dump(rippl) == before


def test_schema_violations_in_raw_output_are_all_listed(rippl: Rippl) -> None:
    before = dump(rippl)
    with pytest.raises(ExtractionRejected) as caught:
        rippl.ingest_extraction({"claims": [{"ref": "c"}, {"text": "no ref", "bogus": 1}],
                                 "decisions": "none"}, document="raw.json")
    messages = [p.message for p in caught.value.problems]
    assert {p.code for p in caught.value.problems} == {"schema"}
    assert any(m.startswith("claims.0.text") for m in messages)
    assert any(m.startswith("claims.1.ref") for m in messages)
    assert any(m.startswith("claims.1.bogus") for m in messages)
    assert any(m.startswith("decisions") for m in messages)
    assert dump(rippl) == before


def test_dry_run_reports_without_writing(incident: Rippl) -> None:
    before = dump(incident)
    report = incident.ingest_extraction(ex(
        claims=[{"ref": "c", "text": "Shard 09 is healthy"}],  # same text as CLM-001, other id
        decisions=[{"ref": "d", "title": "Wait", "premises": ["c", "CLM-002"]}]),
        document="d.md", dry_run=True)
    assert report.status == "dry-run"
    assert sorted(n.outcome for n in report.nodes) == ["added", "added"]
    assert all(n.state is State.IN for n in report.nodes)
    assert dump(incident) == before


def test_a_restatement_may_leave_details_out_or_fill_them_in(rippl: Rippl) -> None:
    source = rippl.add_source(None, "Runbook RB-112")  # no uri, no kind, no provenance
    report = rippl.ingest_extraction(ex(
        sources=[{"ref": "s", "title": "Runbook RB-112", "uri": "https://runbooks/RB-112",
                  "kind": "runbook"}],
        claims=[{"ref": "c", "text": "pglogical can move tables online", "sources": ["s"]}]),
        document="rfc.md")
    assert report.ids["s"] == source.id and source.id in report.merged
    node = rippl.get(source.id)
    assert (node.uri, node.source_type) == ("https://runbooks/RB-112", "runbook")
    assert node.provenance == {"document": "rfc.md", "extractor": "manual",
                               "ingested_at": node.provenance["ingested_at"]}  # type: ignore[index]
    # The core sees the filled-in node as the same content: re-adding it is not a conflict.
    assert rippl.add_source(None, "Runbook RB-112", uri="https://runbooks/RB-112",
                            kind="runbook").id == source.id
    # Leaving details out, or naming the kind differently, merges; the stored details stay.
    again = rippl.ingest_extraction(ex(
        sources=[{"ref": "s", "title": "Runbook RB-112", "kind": "document"}]), document="pm.md")
    assert again.status == "written" and again.merged == [source.id]
    assert rippl.get(source.id).source_type == "runbook"


def test_dry_run_shows_the_status_a_node_would_have(incident: Rippl) -> None:
    incident.retract("CLM-001", reason="disk errors", by="audit")
    report = incident.ingest_extraction(ex(
        decisions=[{"ref": "d", "title": "Schedule the shard 09 cutover", "premises": ["CLM-001"]}],
        actions=[{"ref": "a", "title": "Announce the cutover", "decisions": ["d"]}]),
        document="plan.md", dry_run=True)
    assert [n.status for n in report.nodes] == ["Premise Retracted", "Premise Retracted"]
    assert incident.stats().nodes["Decision"] == 14  # nothing written
