"""Property: merging is order-independent. Two documents that share statements (claims, sources,
decisions, actions stated again with the same or other support) build the same causal graph in
either order, and ingesting either again changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers_ingest import causal, dump
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import Rippl
from rippl_core.ingest import Extraction

CLAIMS = [f"Claim number {i} holds" for i in range(6)]
SOURCES = [f"Dashboard {i}" for i in range(3)]
DECISIONS = [f"Decision {i}" for i in range(3)]
ACTIONS = [f"Action {i}" for i in range(3)]


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """One document over shared pools of texts. Claims only derive from lower-numbered claims, so
    no pair of documents can close a cycle; refs differ between documents on purpose."""
    tag = draw(st.sampled_from(["x", "y"]))
    claims = sorted(draw(st.sets(st.integers(0, len(CLAIMS) - 1), min_size=1)))
    sources = sorted(draw(st.sets(st.integers(0, len(SOURCES) - 1))))
    out: dict[str, Any] = {
        "sources": [{"ref": f"{tag}s{i}", "title": SOURCES[i]} for i in sources],
        "claims": [], "decisions": [], "actions": []}
    for i in claims:
        lower = [j for j in claims if j < i]
        out["claims"].append({
            "ref": f"{tag}c{i}", "text": CLAIMS[i],
            "sources": [f"{tag}s{j}" for j in draw(st.lists(st.sampled_from(sources), max_size=2))]
            if sources else [],
            "derived_from": [f"{tag}c{j}" for j in draw(st.lists(st.sampled_from(lower), max_size=2))]
            if lower else []})
    decisions = sorted(draw(st.sets(st.integers(0, len(DECISIONS) - 1), max_size=2)))
    for i in decisions:
        premises = draw(st.lists(st.sampled_from(claims), min_size=1, max_size=2))
        out["decisions"].append({"ref": f"{tag}d{i}", "title": DECISIONS[i],
                                 "premises": [f"{tag}c{j}" for j in premises]})
    if decisions:
        for i in sorted(draw(st.sets(st.integers(0, len(ACTIONS) - 1), max_size=2))):
            drivers = draw(st.lists(st.sampled_from(decisions), min_size=1, max_size=2))
            out["actions"].append({"ref": f"{tag}a{i}", "title": ACTIONS[i], "tool": f"tool_{i}",
                                   "decisions": [f"{tag}d{j}" for j in drivers]})
    return out


@given(documents(), documents())
@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_merging_is_order_independent_and_idempotent(open_rippl: Callable[..., Rippl],
                                                     first: dict[str, Any],
                                                     second: dict[str, Any]) -> None:
    a, b = Extraction.model_validate(first), Extraction.model_validate(second)
    forward, backward = open_rippl(), open_rippl()
    forward.ingest_extraction(a, document="a.md")
    forward.ingest_extraction(b, document="b.md")
    backward.ingest_extraction(b, document="b.md")
    backward.ingest_extraction(a, document="a.md")
    assert causal(forward) == causal(backward)
    before = dump(forward)
    assert forward.ingest_extraction(a, document="a.md").status == "unchanged"
    assert forward.ingest_extraction(b, document="b.md").status == "unchanged"
    assert dump(forward) == before
