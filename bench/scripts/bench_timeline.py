"""A long timeline, before and after it was read plain (issue 28, item 4), side by side in one run.

    uv run python bench/scripts/bench_timeline.py [--changes 10,1000,10000] [--runs 15]

One topic with N changes written through `believe()` (as bench_limits.py writes it: 19,999
BELIEVES edges at 10k, with the superseded versions) on one embedded FalkorDB; each path called
in turn, round after round, so machine load hits them alike:

- `before`: the timeline as it was (its 14-column query in the compact format, each typed cell
  decoded, a `Row` per record, then `_beliefs`), kept here from the same module's building blocks;
- `after`: `Rippl.timeline` now (10 columns read plain, the claims' text and state with the
  evidence's states, the models built in one pass);
- `page`: `Rippl.timeline(limit=PAGE)`, the latest PAGE intervals (what a screen shows; page
  back with `before=`), and `page query, raw` its query alone;
- `old query, raw` and `new query, raw`: each query alone, sent raw, its reply read by
  redis-py/hiredis and not parsed (bench_limits.py's limit for the timeline is the old one).

FalkorDB's own execution time of each query is recorded beside the wall clock. The two results
are checked equal before anything is timed. Writes bench/results/timeline.json and prints the
table docs/benchmarks.md records. Benchmarks record numbers; the tests assert behaviour.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rippl_bench.machine import describe, load_average
from rippl_bench.measure import summary_ms
from rippl_bench.summary import stamp

from rippl_core import Rippl
from rippl_core._runtime.driver import _args
from rippl_core._runtime.op import Op
from rippl_core._runtime.wire import Query
from rippl_core.beliefs import cypher, memory
from rippl_core.beliefs.models import Belief

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "timeline.json"
AGENT, TOPIC = "analyst", "hot-topic"


def before(key: str) -> Op[list[Belief]]:
    """The timeline as it was read before (main at 02d3bd3): `cypher.visible`, compact, `rows_of`,
    `_beliefs`."""
    records = yield cypher.visible(key, memory.now_ms())
    return (yield from memory._beliefs(memory.rows_of(records)))


def server_ms(reply: list[Any]) -> float:
    stats = [s for s in reply[-1] if "execution time" in s]
    return float(stats[0].split(":")[1].split()[0])


PAGE = 100


def bench(changes: int, runs: int, folder: Path) -> dict[str, Any]:
    rippl = Rippl.open(folder / f"timeline-{changes}.db", graph=f"timeline-{changes}")
    try:
        for i in range(20):
            rippl.add_source(f"TS{i}", f"report {i}")
            rippl.add_claim(f"TC{i}", f"hypothesis {i}", sources=[f"TS{i}"])
        base = datetime.now(UTC) - timedelta(days=300)
        started = time.perf_counter()
        for i in range(changes):
            t = base + i * timedelta(minutes=5)
            rippl.believe(AGENT, f"TC{i % 20}", topic=TOPIC, valid_from=t, recorded_at=t,
                          evidence=[f"TS{i % 20}"])
        written = time.perf_counter() - started
        key = cypher.belief_key(AGENT, TOPIC)
        old = rippl._driver.run(lambda: before(key))
        new = rippl.timeline(AGENT, TOPIC)
        assert len(new) == changes and old == new, "before and after differ"
        assert [b.__dict__ for b in old] == [b.__dict__ for b in new]
        page = rippl.timeline(AGENT, TOPIC, limit=PAGE)
        assert [b.__dict__ for b in page] == [b.__dict__ for b in new[-PAGE:]], "the page differs"
        now = memory.now_ms()
        old_args = _args(rippl.keys.graph, cypher.visible(key, now))
        new_args = _args(rippl.keys.graph, cypher.timeline(key, None))
        page_args = _args(rippl.keys.graph, cypher.timeline(key, None, limit=PAGE))
        server: dict[str, list[float]] = {"old query": [], "new query": [], "page query": []}

        def raw(name: str, args: tuple[str, ...]) -> Callable[[int], Any]:
            def call(_: int) -> Any:
                reply = rippl.redis.execute_command(*args)
                server[name].append(server_ms(reply))
                return reply
            return call

        paths: dict[str, Callable[[int], Any]] = {
            "before": lambda _: rippl._driver.run(lambda: before(key)),
            "after": lambda _: rippl.timeline(AGENT, TOPIC),
            "old query, raw": raw("old query", old_args),
            "new query, raw": raw("new query", new_args),
            "page": lambda _: rippl.timeline(AGENT, TOPIC, limit=PAGE),
            "page query, raw": raw("page query", page_args),
        }
        times: dict[str, list[float]] = {name: [] for name in paths}
        for n in range(2 + runs):
            for name, fn in paths.items():
                gc.collect()
                start = time.perf_counter()
                fn(n)
                if n >= 2:  # two warm-up rounds
                    times[name].append(time.perf_counter() - start)
        row: dict[str, Any] = {"changes": changes, "edges": rippl._driver.query(Query(
            "MATCH ()-[r:BELIEVES]->() RETURN count(r)", read_only=True))[0][0],
            "written_s": round(written, 1), "runs": runs,
            **{name: summary_ms(samples) for name, samples in times.items()},
            "server_ms": {name: round(statistics.median(v[2:] or v), 3)
                          for name, v in server.items()}}
        p50 = {name: row[name]["p50_ms"] for name in paths}
        row["ratios"] = {
            "after / before": round(p50["after"] / p50["before"], 3),
            "after / old query, raw": round(p50["after"] / p50["old query, raw"], 3),
            "before / old query, raw": round(p50["before"] / p50["old query, raw"], 3),
            "after / new query, raw": round(p50["after"] / p50["new query, raw"], 3),
            "page / page query, raw": round(p50["page"] / p50["page query, raw"], 3),
        }
        return row
    finally:
        rippl.drop()
        rippl.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--changes", default="10,1000,10000")
    parser.add_argument("--runs", type=int, default=15, help="rounds at 10k changes; more below")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.changes.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="bench-timeline-"))
    result: dict[str, Any] = {"recorded_at": datetime.now(UTC).isoformat(), "machine": describe(),
                              "load_average": {"start": load_average()}, "rows": []}
    for size in sizes:
        runs = args.runs if size >= 5000 else args.runs * 4 if size >= 500 else args.runs * 20
        print(f"[{datetime.now(UTC):%H:%M:%S}] {size:,} changes, {runs} rounds", flush=True)
        result["rows"].append(bench(size, runs, folder))
        result["load_average"][str(size)] = load_average()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(stamp(result), indent=2) + "\n")
    print(f"| changes | before | after | page of {PAGE} | old query, raw | new query, raw | page query, "
          "raw | server: old / new / page query | after / before |\n|---|---|---|---|---|---|---|---|---|")
    for r in result["rows"]:
        cells = [f"{r[k]['p50_ms']:.3f} / {r[k]['p99_ms']:.3f}" for k in (
            "before", "after", "page", "old query, raw", "new query, raw", "page query, raw")]
        server = " / ".join(f"{r['server_ms'][k]:.3f}" for k in ("old query", "new query", "page query"))
        print(f"| {r['changes']:,} | " + " | ".join(cells) + f" | {server} "
              f"| {r['ratios']['after / before']:.2f}x |")
    print(json.dumps(result["load_average"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
