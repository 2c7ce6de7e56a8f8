"""The cost of checkpoints that notice tampering (issue 32), and get_tuple against one indexed read
(issue 28), side by side in one run on one embedded FalkorDB (fsync on every write).

    uv run python bench/scripts/bench_checkpoints.py [--runs 400] [--prefill 200] [--baseline REV]

Variants, each on its own tenant of the same server, each a thread of `--prefill` checkpoints of
the bench_langgraph ReAct graph (4 messages, every channel rewritten on each put), measured
interleaved call by call so that machine load hits them alike:

- `before`: FalkorDBSaver as it was before the chain, loaded from git (`--baseline`, the last
  commit without it) into a private module, so the figures of today's and the chained saver come
  from one run;
- `chained`: FalkorDBSaver now (digests, verified reads);
- `signed`: with an Ed25519 signing key and the matching trusted key;
- `anchored`: with a FileAnchor (a local file outside the database).

Floors, on the same connection: one raw indexed read (`GRAPH.RO_QUERY` of a checkpoint's data by
key on the checkpoint graph, no transaction), the same read through the driver (MULTI, ROLE,
EXEC: what every Rippl read pays for failover safety), and a raw single-node write of the
checkpoint's size. `decode` is the serde's decoding of the same checkpoint alone (client only).

Writes bench/results/checkpoints.json; prints the table docs/benchmarks.md records.
Benchmarks record numbers; the tests assert behaviour.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
import types
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_langgraph import sample_checkpoint
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from langgraph.checkpoint.base.id import uuid6
from rippl_bench.machine import describe, load_average
from rippl_bench.measure import summary_ms
from rippl_bench.summary import stamp
from rippl_langgraph import FalkorDBSaver
from rippl_langgraph.checkpoint.ops import key as cp_key

from rippl_core import Rippl
from rippl_core.adapters import FileAnchor, Query
from rippl_core.review.receipts import public_hex

ROOT = Path(__file__).resolve().parents[2]
BASELINE = "9fe96950957f21c683ef7c1bc344388631b0af65"  # main before the chain
FILES = ("queries", "ops", "saver")


def load_baseline(rev: str) -> type[Any]:
    """FalkorDBSaver as it was at `rev`, from git, as the module `baseline_checkpoint`."""
    package = types.ModuleType("baseline_checkpoint")
    package.__path__ = []
    sys.modules["baseline_checkpoint"] = package
    for name in FILES:
        source = subprocess.run(
            ["git", "show", f"{rev}:integrations/langgraph/rippl_langgraph/checkpoint/{name}.py"],
            cwd=ROOT, check=True, capture_output=True, text=True).stdout
        source = source.replace("rippl_langgraph.checkpoint", "baseline_checkpoint")
        module = types.ModuleType(f"baseline_checkpoint.{name}")
        sys.modules[module.__name__] = module
        exec(compile(source, f"<{rev}:{name}.py>", "exec"), module.__dict__)
        setattr(package, name, module)
    saver: type[Any] = sys.modules["baseline_checkpoint.saver"].FalkorDBSaver
    return saver


class Thread:
    """One thread of a saver, grown one put at a time."""

    def __init__(self, saver: Any, sample: tuple[Any, dict[str, Any], dict[str, Any]]) -> None:
        self.saver, (self.checkpoint, self.metadata, versions) = saver, sample
        self.name = f"bench-{uuid.uuid4().hex[:8]}"
        self.config: Any = {"configurable": {"thread_id": self.name, "checkpoint_ns": ""}}
        self.current = dict(versions)
        self.count = 0

    def put(self, _: int = 0) -> None:
        self.current = {ch: self.saver.get_next_version(v, None) for ch, v in self.current.items()}
        fresh = {**self.checkpoint, "id": str(uuid6()), "channel_versions": dict(self.current)}
        self.config = self.saver.put(self.config, fresh, {**self.metadata, "step": self.count},
                                     dict(self.current))
        self.count += 1

    def get(self, _: int = 0) -> Any:
        return self.saver.get_tuple({"configurable": {"thread_id": self.name, "checkpoint_ns": ""}})

    def put_writes(self, n: int) -> None:
        self.saver.put_writes(self.config, [("messages", f"write {n}")], f"task-{n}")


def interleaved(fns: dict[str, Callable[[int], Any]], runs: int, warmup: int = 20
                ) -> dict[str, list[float]]:
    """Each function once per round, round after round; the seconds of each call. The garbage
    collector runs between calls, never inside one (as `timeit` does): otherwise the call after
    an allocating one (a get_tuple decodes messages) pays for its garbage."""
    for n in range(warmup):
        for fn in fns.values():
            fn(n)
    out: dict[str, list[float]] = {name: [] for name in fns}
    gc.disable()
    try:
        for n in range(runs):
            for name, fn in fns.items():
                gc.collect(0)
                start = time.perf_counter()
                fn(warmup + n)
                out[name].append(time.perf_counter() - start)
    finally:
        gc.enable()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--prefill", type=int, default=200)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "checkpoints.json")
    args = parser.parse_args()

    Before = load_baseline(args.baseline)
    sample = sample_checkpoint()
    folder = Path(tempfile.mkdtemp(prefix="bench-checkpoints-"))
    signing = Ed25519PrivateKey.generate()
    handles = {name: Rippl.open(folder / "rippl.db", graph=f"bench-{name}")
               for name in ("before", "chained", "signed", "anchored")}
    savers: dict[str, Any] = {
        "before": Before(handles["before"]),
        "chained": FalkorDBSaver(handles["chained"]),
        "signed": FalkorDBSaver(handles["signed"], signing_key=signing,
                                trusted_keys=[public_hex(signing.public_key())]),
        "anchored": FalkorDBSaver(handles["anchored"],
                                  anchor=FileAnchor(folder / "anchor" / "heads.jsonl")),
    }
    threads = {name: Thread(saver, sample) for name, saver in savers.items()}
    try:
        for _ in range(args.prefill):
            for thread in threads.values():
                thread.put()
        raw = handles["chained"]
        graph = savers["chained"].graph
        payload = json.dumps(sample[0], default=str)

        def write(_: int) -> Any:
            text = Query("CREATE (n:BenchWrite) SET n = $p",
                         {"p": {"key": uuid.uuid4().hex, "data": "x" * len(payload)}}).command()
            return raw.redis.execute_command("GRAPH.QUERY", graph, text, "--compact")

        times = interleaved({**{f"put {n}": t.put for n, t in threads.items()}, "one write": write},
                            args.runs)
        newest = cp_key(threads["chained"].name, "", threads["chained"].config["configurable"]
                        ["checkpoint_id"])
        read = Query("MATCH (c:Checkpoint {key: $key}) RETURN c.data", {"key": newest},
                     read_only=True)

        def one_read(_: int) -> Any:
            return raw.redis.execute_command("GRAPH.RO_QUERY", graph, read.command(), "--compact")

        def driver_read(_: int) -> Any:
            return savers["chained"]._store.run(lambda: (yield read))

        found = threads["chained"].get()
        serde = savers["chained"].serde
        blobs = [serde.dumps_typed(v) for v in found.checkpoint["channel_values"].values()]
        stored = serde.dumps_typed({k: v for k, v in found.checkpoint.items()
                                    if k != "channel_values"})
        meta = serde.dumps_typed(found.metadata)

        def decode(_: int) -> Any:
            return ([serde.loads_typed(b) for b in blobs], serde.loads_typed(stored),
                    serde.loads_typed(meta))

        times |= interleaved({"get_tuple before": threads["before"].get,
                              "get_tuple chained": threads["chained"].get,
                              "one read": one_read, "driver read": driver_read, "decode": decode},
                             args.runs)
        times |= interleaved({"get_tuple before (2)": threads["before"].get,
                              **{f"get_tuple {n}": threads[n].get for n in ("signed", "anchored")}},
                             args.runs)
        times |= interleaved({"put_writes before": threads["before"].put_writes,
                              "put_writes chained": threads["chained"].put_writes}, args.runs // 2)
    finally:
        for saver in savers.values():
            saver.drop()
        for handle in handles.values():
            handle.close()
    summary = {name: summary_ms(samples) for name, samples in times.items()}
    p50 = {name: s["p50_ms"] for name, s in summary.items()}
    ratios = {
        "put chained / before": p50["put chained"] / p50["put before"],
        "get_tuple chained / before": p50["get_tuple chained"] / p50["get_tuple before"],
        "get_tuple chained / one read": p50["get_tuple chained"] / p50["one read"],
        "get_tuple before / one read": p50["get_tuple before"] / p50["one read"],
        "get_tuple chained / (driver read + decode)":
            p50["get_tuple chained"] / (p50["driver read"] + p50["decode"]),
        "put signed / before": p50["put signed"] / p50["put before"],
        "get_tuple signed / before": p50["get_tuple signed"] / p50["get_tuple before (2)"],
        "put anchored / before": p50["put anchored"] / p50["put before"],
        "get_tuple anchored / before": p50["get_tuple anchored"] / p50["get_tuple before (2)"],
        "put_writes chained / before": p50["put_writes chained"] / p50["put_writes before"],
        "put before / one write": p50["put before"] / p50["one write"],
        "put chained / one write": p50["put chained"] / p50["one write"],
    }
    result = {"machine": describe(), "load_average": load_average(), "runs": args.runs,
              "prefill": args.prefill, "baseline": args.baseline, "times": summary,
              "ratios": {k: round(v, 3) for k, v in ratios.items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(stamp(result), indent=2) + "\n")
    print("| path | p50 / p99 (ms) |\n|---|---|")
    for name, s in summary.items():
        print(f"| {name} | {s['p50_ms']:.3f} / {s['p99_ms']:.3f} |")
    print("\n| ratio | value |\n|---|---|")
    for name, value in ratios.items():
        print(f"| {name} | {value:.2f}x |")


if __name__ == "__main__":
    main()
