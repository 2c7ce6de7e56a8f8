"""The agmi (agent-memory-integrity 0.6.3) at-rest scorecard: LangGraph's SqliteSaver (agmi's own
adapter) beside FalkorDBSaver without and with an anchor outside the database (the adapters of
the test suite, integrations/langgraph/tests/agmi_falkordb.py).

    uv run python bench/scripts/bench_agmi.py

Verdict words are agmi's (`agmi.check.verdict`): REJECTED (refused on read), REPORTED (found by an
audit), ACCEPTED (served silently), NOT EVALUABLE, ERROR. Writes bench/results/agmi.json and
prints the table docs/benchmarks.md records. The test suite asserts the same verdicts
(test_langgraph_tamper.py); this script only records them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integrations" / "langgraph" / "tests"))

from agmi.adapters.langgraph_sqlite import LangGraphSqliteAdapter
from agmi.attacks.at_rest import AT_REST_ATTACKS_WITH_SNAPSHOT
from agmi.check import LABELS, verdict
from agmi_falkordb import FalkorDBAdapter, FalkorDBAnchoredAdapter
from rippl_bench.summary import stamp

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    from importlib.metadata import version

    rows: dict[str, dict[str, dict[str, str]]] = {}
    for adapter in (LangGraphSqliteAdapter(), FalkorDBAdapter(), FalkorDBAnchoredAdapter()):
        rows[adapter.name] = {}
        for attack in AT_REST_ATTACKS_WITH_SNAPSHOT:
            result = attack().run(adapter)
            rows[adapter.name][attack.name] = {
                "verdict": verdict(result, adapter),
                "detail": (result.guard or result.error or result.detail or "")[:300]}
            print(f"{adapter.name:24} {attack.name:18} {rows[adapter.name][attack.name]['verdict']}",
                  file=sys.stderr)
    out = ROOT / "bench" / "results" / "agmi.json"
    out.write_text(json.dumps(stamp({"agmi": version("agent-memory-integrity"), "rows": rows}),
                              indent=2) + "\n")
    names = [a.name for a in AT_REST_ATTACKS_WITH_SNAPSHOT]
    print("| attack (agmi) | " + " | ".join(rows) + " |")
    print("|---" * (len(rows) + 1) + "|")
    for name in names:
        print(f"| {LABELS.get(name, name)} | " + " | ".join(rows[t][name]["verdict"] for t in rows)
              + " |")


if __name__ == "__main__":
    main()
