"""What OpenTelemetry costs a check: off (the API not installed), on but unconfigured (no provider:
the API's no-op), and recording (the SDK with an in-memory exporter and a metric reader).

    uv run python bench/scripts/bench_otel.py [--checks N] [--rounds R]

Each variant runs in its own interpreter (a tracer provider is process-global), on the same
embedded database and graph, and the variants are interleaved round by round (A, B, C, A, B...)
so machine load hits each alike. "Off" hides the `opentelemetry` package from the interpreter
(an import hook), which is what an install without the `otel` extra is: the operations are then
the undecorated functions. A round is N back-to-back `check(ToolCall)` of an allowed declared
action, each one indexed read; the figure is the p50 (and p90) per check over all rounds.
Results go to bench/results/otel.json. Benchmarks record numbers; the tests assert behaviour.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent("""
    import json, os, sys, time
    variant, db, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if variant == "off":
        class Hide:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ImportError("hidden: the otel extra is not installed")
        sys.meta_path.insert(0, Hide())
    elif variant == "recording":
        os.environ.pop("OTEL_SDK_DISABLED", None)
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        provider, exporter = TracerProvider(), InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    from rippl_core import Rippl, ToolCall
    from rippl_core._runtime import telemetry
    call = ToolCall(name="place_order", args={"sku": "A1"}, id="c1")
    with Rippl.open(db, graph="bench-otel") as rippl:
        for _ in range(200):
            assert rippl.check(call).allowed
        times = []
        for _ in range(n):
            t = time.perf_counter_ns()
            rippl.check(call)
            times.append(time.perf_counter_ns() - t)
        if variant == "recording":
            exporter.clear()
    print(json.dumps({"enabled": telemetry.ENABLED, "times": times}))
""")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    variants = ("off", "no provider", "recording")
    times: dict[str, list[int]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "otel.db")
        setup = ("from rippl_core import Rippl\n"
                 f"with Rippl.open({db!r}, graph='bench-otel') as r:\n"
                 "    r.add_claim('C1', 'A1 is in stock')\n"
                 "    r.add_decision('D1', 'reorder', premises=['C1'])\n"
                 "    r.add_action('A1', 'order', decisions=['D1'], tool='place_order',\n"
                 "                 args={'sku': 'A1'})\n")
        subprocess.run([sys.executable, "-c", setup], check=True, cwd=ROOT)
        env = {**os.environ, "OTEL_SDK_DISABLED": "true"}
        for _ in range(options.rounds):
            for variant in variants:
                out = subprocess.run([sys.executable, "-c", CHILD, variant.split()[0], db,
                                      str(options.checks)], check=True, capture_output=True,
                                     text=True, cwd=ROOT, env=env)
                found = json.loads(out.stdout)
                assert found["enabled"] is (variant != "off"), variant
                times[variant] += found["times"]
    results = {}
    for variant, found in times.items():
        ordered = sorted(found)
        results[variant] = {"p50_us": round(statistics.median(ordered) / 1000, 1),
                            "p90_us": round(ordered[int(len(ordered) * 0.9)] / 1000, 1),
                            "checks": len(ordered)}
    base = results["off"]["p50_us"]
    for variant in variants:
        r = results[variant]
        print(f"{variant:12} p50 {r['p50_us']:7.1f} µs  p90 {r['p90_us']:7.1f} µs  "
              f"(p50 {r['p50_us'] - base:+.1f} µs against off; {r['checks']} checks)")
    from rippl_bench.script import results_file, save

    save({"checks": options.checks, "rounds": options.rounds, "results": results},
         results_file("otel"))


if __name__ == "__main__":
    main()
