"""Precision and recall of the contradiction detectors (issue 24 part 4) on the labelled pairs of
`bench/data/contradictions.jsonl`; writes `bench/results/contradictions.json` and prints the
Markdown table recorded in docs/benchmarks.md. See `rippl_bench.contradictions` for what each
figure measures (the model detector runs a deterministic heuristic stand-in, not a hosted model).

    uv run python bench/scripts/bench_contradictions.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rippl_bench.contradictions import load_pairs, markdown, run

RESULTS = Path(__file__).resolve().parents[1] / "results" / "contradictions.json"


def main(argv: list[str] | None = None) -> int:
    out = Path(argv[0]) if argv else RESULTS
    result = run(load_pairs())
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
