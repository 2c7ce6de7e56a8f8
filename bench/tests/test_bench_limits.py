"""bench/scripts/bench_limits.py runs end to end on tiny sizes, and its limits do the path's work.

Benchmarks record numbers; these tests only check behaviour (no timing assertions)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rippl_bench.generate import batches, causal_graph
from rippl_bench.script import load_script


@pytest.fixture(scope="module")
def limits() -> ModuleType:
    return load_script("bench_limits")


@settings(max_examples=20, deadline=None)
@given(n=st.integers(min_value=10, max_value=600), seed=st.integers(0, 1000),
       batch=st.integers(min_value=20, max_value=400))
def test_the_bare_load_writes_the_same_nodes_and_edges(limits: ModuleType, n: int, seed: int,
                                                       batch: int) -> None:
    graph = causal_graph(n, seed=seed)
    nodes: dict[str, str] = {}
    edges: set[tuple[str, str]] = set()
    for part in batches(graph, batch):
        labelled, typed = limits.bare_batch(part, graph.kinds)
        for label, rows in labelled.items():
            for row in rows:
                assert row["kind"] == label and row["state"] == "IN"
                assert all(isinstance(v, str | int | float) for v in row.values())
                nodes[row["id"]] = label
        for rel, rows in typed.items():
            for row in rows:
                assert rel == limits.edge_type(limits.Kind(graph.kinds[row["src"]]),
                                               limits.Kind(graph.kinds[row["dst"]]))
                edges.add((row["src"], row["dst"]))
    assert nodes == graph.kinds
    assert edges == set(graph.edges)


def test_quick_run_on_tiny_sizes(limits: ModuleType, tmp_path: Path) -> None:
    docs_before = limits.DOCS.read_text() if limits.DOCS.exists() else None
    out = tmp_path / "limits.json"
    assert limits.main(["--quick", "--sizes", "400,200", "--runs", "8", "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["sizes"] == [200, 400]
    for path in ("load", "check", "ask", "timeline", "checkpointer"):
        assert [row["size"] for row in results[path]][-1] >= 10, path
        assert len(results[path]) == 2, path
    for row in results["load"]:  # the bare limit wrote exactly what load wrote
        assert row["nodes"] == row["bare_nodes"] == row["size"]
        assert row["edges"] == row["bare_edges"] > 0
    for row in results["check"]:
        assert row["denied_samples"] > 0 and row["allowed_samples"] > 0
    assert [row["size"] for row in results["timeline"]] == [10, 10]
    assert results["ask"][0]["intervals"] < results["ask"][1]["intervals"]
    paths = {row["path"] for row in results["summary"]}
    assert {"load (nodes+edges/s)", "check, denied vs allowed", "checkpointer get_tuple",
            "checkpointer put", "timeline", "ask, known now", "ask, known at a past time",
            "cold start: import rippl_core", "cold start: rippl --help",
            "LangGraph guard overhead per call"} <= paths
    for row in results["summary"]:
        assert math.isfinite(row["ratio"])
        # a ratio of two times is positive; the guard's overhead is a difference of two medians,
        # which noise can make negative on a busy machine (no wall-clock assertion here)
        assert row["ratio"] > 0 or row["path"] == "LangGraph guard overhead per call"
        assert row["met"] in (True, False, None)
    profiles = results["profiles"]
    explained = {  # where each path's profile goes when it misses
        "load (nodes+edges/s)": profiles.get("load"),
        "check, denied vs allowed": profiles.get("check"),
        "checkpointer get_tuple": profiles.get("checkpointer get_tuple"),
        "checkpointer put": profiles.get("checkpointer put"),
        "timeline": profiles.get("timeline"),
        "ask, known now": profiles.get("ask"), "ask, known at a past time": profiles.get("ask"),
        "cold start: import rippl_core": results["cold_start"].get("profile"),
        "cold start: rippl --help": results["cold_start"].get("profile"),
        "LangGraph guard overhead per call": results["adapter"].get("profile")}
    for row in results["summary"]:
        if row["met"] is False:
            assert explained[row["path"]], row
    assert out.with_suffix(".png").stat().st_size > 0
    section = limits.markdown(results)
    assert section.startswith(limits.SECTION)
    assert section.count("| load (nodes+edges/s) |") == 2
    missed = [row for row in results["summary"] if row["met"] is False]
    if missed:
        assert "**missed**" in section and "Every target was met." not in section
    # a run with --out leaves docs/benchmarks.md alone
    assert (limits.DOCS.read_text() if limits.DOCS.exists() else None) == docs_before
