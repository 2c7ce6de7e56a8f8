"""Precision and recall of the contradiction detectors (issue 24 part 4) on the labelled pairs
of `bench/data/contradictions.jsonl`; writes `bench/results/contradictions.json` and its section
of docs/benchmarks.md (`--no-docs`: prints it only). See `rippl_bench.contradictions` for what each
figure measures (the model detector runs a deterministic heuristic stand-in, not a hosted model).

    uv run python bench/scripts/bench_contradictions.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rippl_bench.contradictions import HEADING, load_pairs, markdown, run
from rippl_bench.report import replace_section

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "contradictions.json"
DOCS = ROOT / "docs" / "benchmarks.md"

__all__ = ["markdown"]  # rippl-bench renders bench/results/contradictions.json with it


def main(argv: list[str] | None = None) -> int:
    """`[--no-docs] [OUT.json]`: run, write the results, and (unless --no-docs) the section."""
    args = list(argv or [])
    docs = "--no-docs" not in args
    args = [a for a in args if a != "--no-docs"]
    out = Path(args[0]) if args else RESULTS
    result = run(load_pairs())
    out.write_text(json.dumps(result, indent=2) + "\n")
    section = markdown(result)
    if docs:
        replace_section(DOCS, HEADING, section)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
