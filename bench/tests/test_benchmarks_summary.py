"""docs/benchmarks.md's summary is generated from the latest results of every benchmark script,
each figure with the date and the commit it was measured on: stale, unstamped or missing results
fail here."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rippl_bench import summary

ROOT = Path(__file__).resolve().parents[2]


def test_every_results_file_is_summarised() -> None:
    files = {p.name for p in (ROOT / "bench" / "results").glob("*.json")}
    assert files == {b.results for b in summary.BENCHES}


def test_every_benchmark_script_has_its_results_summarised() -> None:
    named = " ".join(b.script for b in summary.BENCHES)
    for script in sorted((ROOT / "bench" / "scripts").glob("bench_*.py")):
        assert script.name in named, f"{script.name} writes results the summary does not show"


def test_every_result_says_when_and_on_which_commit() -> None:
    for path in sorted((ROOT / "bench" / "results").glob("*.json")):
        found = json.loads(path.read_text()).get("provenance")
        assert found, f"{path.name}: no provenance (python -m rippl_bench.summary --stamp {path})"
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", found["date"]), (path.name, found)
        assert re.fullmatch(r"[0-9a-f]{7,40}(-dirty)?", found["commit"]), (path.name, found)


def test_the_docs_summary_is_what_the_results_say() -> None:
    generated = summary.render()
    assert "(not in the results" not in generated
    assert "?" not in "".join(line.rsplit("|", 2)[-2] for line in generated.splitlines()
                              if line.startswith("| ["))
    assert summary.current_block() == generated, (
        "docs/benchmarks.md's summary is stale: run `uv run python -m rippl_bench.summary`")
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    for bench in summary.BENCHES:  # each figure links to a section that exists
        assert f"\n## {bench.section}\n" in text, bench.section


def test_update_replaces_or_inserts_the_block(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Bitemporal beliefs\n\nkept\n")
    doc.write_text(summary.update(doc))
    once = doc.read_text()
    assert once.startswith("# Benchmarks\n\n" + summary.START) and "## Bitemporal beliefs\n\nkept" in once
    doc.write_text(summary.update(doc))
    assert doc.read_text() == once


def test_stamp_records_the_commit_checked_out() -> None:
    stamped = summary.stamp({"x": 1})["provenance"]
    assert re.fullmatch(r"[0-9a-f]{7,40}(-dirty)?", stamped["commit"])
    assert stamped["source"] == "stamped when measured"
