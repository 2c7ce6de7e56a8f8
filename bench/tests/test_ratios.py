"""The regression check of the benchmarks' ratios (issue 28, item 5): two ratio files compared,
each ratio more than 20% worse named. Nothing here is timed: it compares recorded files.

By hand, and before stopping work on performance: `uv run rippl-bench --quick` (writes
bench/results/quick/ratios.json), then `uv run pytest bench/tests/test_ratios.py`, which holds
the quick run against the reference (bench/results/ratios.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rippl_bench import ratios

RESULTS = Path(__file__).resolve().parents[1] / "results"


def test_a_ratio_worse_by_more_than_a_fifth_is_named() -> None:
    before = {"ratios": {"capture.decide": 1.3, "capture.executed": 1.2, "limits.load.20000.ratio": 2.0,
                         "gone": 1.0}}
    after = {"ratios": {"capture.decide": 1.7, "capture.executed": 1.39, "limits.load.20000.ratio": 1.5,
                        "new": 9.0}}
    worse = ratios.compare(before, after)
    assert len(worse) == 1 and worse[0].startswith("capture.decide: 1.300 -> 1.700 (+31%)")
    assert ratios.compare(after, after) == []


def test_the_ratios_are_gathered_from_the_results_of_each_benchmark(tmp_path: Path) -> None:
    (tmp_path / "capture.json").write_text(json.dumps({
        "recorded_at": "t1", "ratios": {"decide": 1.5, "executed": 1.2, "check_allowed": 1.3},
        "server_p50_ms": {"decide": 0.6, "floor_decide": 0.3, "executed": 0.4,
                          "floor_executed": 0.2, "check_allowed": 0.05, "indexed_read": 0.04}}))
    (tmp_path / "limits.json").write_text(json.dumps({
        "recorded_at": "t2", "load": [{"size": 20000, "ratio": 3.1}],
        "check": [{"size": 20000, "ratio_allowed_to_read": 1.4, "ratio_denied_to_read": 1.6,
                   "ratio_denied_to_allowed": 1.1}],
        "timeline": [{"size": 200, "ratio": 2.5}], "adapter": {"ratio": 1.2}}))
    found = ratios.gather(tmp_path)
    assert found["sources"] == {"capture.json": "t1", "limits.json": "t2"}
    assert found["ratios"]["capture.decide"] == 1.5
    assert found["ratios"]["capture.server.decide"] == 2.0
    assert found["ratios"]["limits.load.20000.ratio"] == 3.1
    assert found["ratios"]["limits.check.20000.allowed_to_read"] == 1.4
    assert found["ratios"]["limits.langgraph_guard"] == 1.2
    written = ratios.write(tmp_path)
    assert ratios.ratios_of(json.loads(written.read_text())) == found["ratios"]
    assert ratios.main([str(written), str(written)]) == 0


def test_the_last_quick_run_is_no_worse_than_the_reference() -> None:
    """The latest `rippl-bench --quick` (bench/results/quick/ratios.json) against the recorded
    reference (bench/results/ratios.json): no ratio worse by more than 20%."""
    reference, quick = RESULTS / ratios.NAME, RESULTS / "quick" / ratios.NAME
    if not (reference.is_file() and quick.is_file()):
        pytest.skip("run `uv run rippl-bench --quick` first (and keep a reference ratios.json)")
    worse = ratios.compare(json.loads(reference.read_text(encoding="utf-8")),
                           json.loads(quick.read_text(encoding="utf-8")))
    assert not worse, "worse than the reference by more than 20%:\n" + "\n".join(worse)
