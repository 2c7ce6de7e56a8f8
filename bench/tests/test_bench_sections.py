"""Standalone benchmark scripts replace only their own section of docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path

from rippl_bench.report import replace_section


def test_replace_section_keeps_the_others(tmp_path: Path) -> None:
    docs = tmp_path / "docs" / "benchmarks.md"
    replace_section(docs, "## B", "## B\n\nfirst\n")
    assert docs.read_text() == "# Benchmarks\n\n## B\n\nfirst\n"
    docs.write_text("# Benchmarks\n\n## A\n\na\n\n## B\n\nold\n\n## C\n\nc\n")
    replace_section(docs, "## B", "## B\n\nnew\n")
    assert docs.read_text() == "# Benchmarks\n\n## A\n\na\n\n## B\n\nnew\n\n## C\n\nc\n"
    replace_section(docs, "## D", "## D\n\nd\n")
    assert docs.read_text().endswith("## C\n\nc\n\n## D\n\nd\n")

