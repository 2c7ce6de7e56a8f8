"""bench/scripts/bench_scale.py runs end to end on tiny sizes and records what it says it does.

Benchmarks record numbers; these tests only check behaviour (no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from rippl_bench.script import load_script


@pytest.fixture(scope="module")
def scale() -> ModuleType:
    return load_script("bench_scale")


def test_quick_run_on_tiny_sizes(scale: ModuleType, tmp_path: Path) -> None:
    docs = scale.ROOT / "docs" / "benchmarks.md"
    docs_before = docs.read_text()
    out = tmp_path / "scale.json"
    assert (
        scale.main(
            ["--quick", "--turns", "8,4", "--runs", "3,1", "--total", "6", "--window", "2", "--out", str(out)]
        )
        == 0
    )
    results = json.loads(out.read_text())
    assert docs.read_text() == docs_before  # a run elsewhere never writes the docs
    assert results["provenance"]["commit"]

    rows = results["conversation"]["rows"]
    assert [row["turns"] for row in rows] == [4, 8]
    for row in rows:
        assert row["decide"]["n"] == row["executed"]["n"] == 2  # the window's turns
        assert row["floor"]["n"] == 4  # two bare writes a timed turn
        assert row["check"]["n"] == row["indexed_read"]["n"] > 0
        assert row["memory"]["used"] >= row["memory"]["used_before"]
        for step in ("decide", "executed"):  # the turn after the count, profiled
            queries = row["profile"][step]
            assert queries and all(q["top"] and q["ops_ms"] >= 0 for q in queries)
        assert row["profile"]["decide"][0]["query"].startswith("capture.cypher.decide")
    assert 0 < rows[0]["nodes"] < rows[1]["nodes"]
    assert 0 < rows[0]["edges"] < rows[1]["edges"]
    # the run's own nodes: the graph's less what it held before (the declared action's three)
    graph_nodes = sum(rows[1]["composition"]["nodes"].values())
    assert graph_nodes == rows[1]["nodes"] + results["conversation"]["base"]["nodes"]

    for mode in ("threads", "asyncio"):
        crowd = results["crowd"][mode]
        assert [row["runs"] for row in crowd] == [1, 3]
        for row in crowd:
            assert row["turns"] == row["runs"] * row["turns_per_run"] == row["decide"]["n"]
            assert row["turns_per_run"] == scale.MIN_PER_RUN  # 6 turns is fewer than the least a run
            assert row["bare_writes"] == row["turns"]
            assert row["turns_per_s"] > 0 and row["bare_writes_per_s"] > 0
    profile = results["crowd_profile"]
    assert profile["runs"] == 3 and profile["decide"] and profile["executed"]
    # issue 28's other paths, each beside its limit: every node and edge the load wrote, the
    # checkpointer's four paths sampled
    load, points = results["earlier"]["load"], results["earlier"]["checkpointer"]
    assert load["nodes"] == load["bare_nodes"] == 2_000 and load["edges"] == load["bare_edges"] > 0
    assert all(points[path]["n"] > 0 for path in ("put", "write", "get_tuple", "read"))
    section = scale.markdown(results)
    assert section.startswith(scale.HEADING + "\n")
    assert "| 3 (asyncio) |" in section and "| 8 |" in section
    assert "| `load` / a bare UNWIND CREATE (time per node + edge) | 2,000 nodes |" in section


def test_profile_lines_are_read_with_their_depth_and_children(scale: ModuleType) -> None:
    plan = [
        "Results | Records produced: 1, Execution time: 0.001 ms",
        "    Project | Records produced: 1, Execution time: 2.5 ms",
        "        Aggregate | Records produced: 1, Execution time: 0.5 ms",
        "            Optional Conditional Traverse | (o)->(c:Claim) | Records produced: 40, "
        "Execution time: 0.25 ms",
        "        Argument | Records produced: 1, Execution time: 0.0 ms",
    ]
    ops = scale._operations(plan)
    assert [op["depth"] for op in ops] == [0, 1, 2, 3, 2]
    assert ops[1]["over"] == "Aggregate < Optional Conditional Traverse | (o)->(c:Claim)"
    assert ops[3]["op"] == "Optional Conditional Traverse | (o)->(c:Claim)" and ops[3]["rows"] == 40
    assert ops[4]["over"] is None
    assert scale._cell("a | b") == "a \\| b"
