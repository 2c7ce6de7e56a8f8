"""The receipt log as a transparency log: proof sizes and verification times, and what the tree
costs a write.

    uv run python bench/scripts/bench_log.py [--quick] [--no-docs]

1. Proofs at 1k, 100k and 1M receipts (the tree math: leaves are SHA-256 leaf hashes of
   synthetic receipts, the tree the log keeps is built over them). For 500 random receipts: the
   inclusion proof's size (hashes, bytes) and the time to verify it; for 500 random earlier tree
   sizes: the consistency proof to the whole log, its size and verification time. Also the time
   to recompute the root of the whole log, which `verify --anchor` does.
2. Through the database (embedded): the requests a receipted retraction sends (counted on the
   wire: the tree adds none, its frontier rides on the head read the chain already made), the
   append's p50 with the tree, `prove()` and `consistency()` latency on logs of 1k and 5k real
   receipts, and the backfill of a log of that size written before the tree.

Results go to bench/results/log.json (--quick: bench/results/quick/log.json, docs untouched); a
full run also rewrites the `## Receipt log: Merkle proofs` section of docs/benchmarks.md.
Benchmarks record numbers; the tests assert behaviour.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rippl_bench.report import replace_section
from rippl_bench.script import options, publish, results_file
from rippl_bench.summary import DOCS

from rippl_core import Rippl
from rippl_core.review import merkle

SECTION = "## Receipt log: Merkle proofs"
SAMPLES = 500


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def timed_result(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1000, result


def proofs(size: int, rng: random.Random) -> dict[str, Any]:
    leaves = [merkle.leaf_hash(f"receipt {i}".encode()) for i in range(size)]
    build = time.perf_counter()
    tree = merkle.Tree(leaves)
    root = tree.root()
    build_s = time.perf_counter() - build
    recompute = time.perf_counter()
    assert merkle.root(leaves) == root
    recompute_s = time.perf_counter() - recompute
    inclusion_len, inclusion_ms = [], []
    for index in (rng.randrange(size) for _ in range(SAMPLES)):
        proof = tree.inclusion_proof(index)
        inclusion_len.append(len(proof))
        ms, ok = timed_result(lambda p=proof, i=index: merkle.verify_inclusion(  # type: ignore[misc]
            i, size, leaves[i], p, root))
        inclusion_ms.append(ms)
        assert ok is True
    consistency_len, consistency_ms = [], []
    for old in (rng.randrange(1, size + 1) for _ in range(SAMPLES)):
        proof = tree.consistency_proof(old)
        old_root = tree.root(old)
        consistency_len.append(len(proof))
        ms, ok = timed_result(lambda p=proof, o=old, r=old_root: merkle.verify_consistency(  # type: ignore[misc]
            o, size, r, root, p))
        consistency_ms.append(ms)
        assert ok is True
    return {"size": size, "tree_build_s": build_s, "root_recompute_s": recompute_s,
            "inclusion_hashes_max": max(inclusion_len),
            "inclusion_hashes_mean": statistics.mean(inclusion_len),
            "inclusion_bytes_max": 32 * max(inclusion_len),
            "inclusion_verify_ms_p50": pct(inclusion_ms, 0.5),
            "inclusion_verify_ms_p99": pct(inclusion_ms, 0.99),
            "consistency_hashes_max": max(consistency_len),
            "consistency_hashes_mean": statistics.mean(consistency_len),
            "consistency_bytes_max": 32 * max(consistency_len),
            "consistency_verify_ms_p50": pct(consistency_ms, 0.5),
            "consistency_verify_ms_p99": pct(consistency_ms, 0.99)}


def requests_of(fn: Callable[[], Any]) -> list[str]:
    """The first word of every request `fn` sends (a MULTI transaction counts once)."""
    from redis.connection import AbstractConnection

    sent: list[bytes] = []
    send = AbstractConnection.send_packed_command

    def recording(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        sent.append(b"".join(bytes(p) for p in command) if isinstance(command, list) else bytes(command))
        send(self, command, check_health)

    AbstractConnection.send_packed_command = recording  # type: ignore[method-assign]
    try:
        fn()
    finally:
        AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
    return [r.split(b"\r\n")[2].decode() if r.startswith(b"*") else "?" for r in sent]


def database(sizes: list[int], rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {"logs": []}
    with tempfile.TemporaryDirectory() as folder, Rippl.open(Path(folder) / "bench.db",
                                                             graph="bench-log") as rippl:
        rippl.add_source("SRC", "a source")
        rippl.add_claim("C", "a claim", sources=["SRC"])
        rippl.add_decision("D", "a decision", premises=["C"])
        rippl.retract("C", reason="warm", by="bench")
        rippl.reinstate("C", reason="warm", by="bench")
        out["retraction_requests"] = requests_of(
            lambda: rippl.retract("C", reason="counted", by="bench"))
        rippl.reinstate("C", reason="counted", by="bench")
        written = rippl.tree_head().size
        for size in sizes:
            append_ms: list[float] = []
            while written < size:
                retracted = written % 2 == 1
                append_ms.append(timed(lambda r=retracted: (rippl.reinstate if r else rippl.retract)(
                    "C", reason="bench", by="bench")))
                written += 1
            head = rippl.tree_head()
            picks = [rng.randint(1, head.size) for _ in range(200)]
            prove_ms = [timed(lambda s=s: rippl.prove(s)) for s in picks]  # type: ignore[misc]
            consistency_ms = [timed(lambda s=s: rippl.consistency(s))  # type: ignore[misc]
                              for s in picks]
            verify_s = timed(rippl.verify_receipts) / 1000
            from rippl_core._runtime.wire import Query

            graph = rippl.keys.graph
            rippl.redis.execute_command("GRAPH.QUERY", graph, Query(
                "MATCH (m:MerkleNode) DELETE m").command())
            rippl.redis.execute_command("GRAPH.QUERY", graph, Query(
                "MATCH (h:ReceiptHead) REMOVE h.size, h.root, h.frontier").command())
            rippl.redis.set(rippl.keys.schema, "6")
            start = time.perf_counter()
            with Rippl.open(Path(folder) / "bench.db", graph="bench-log"):
                pass
            backfill_s = time.perf_counter() - start
            assert rippl.tree_head().root == head.root
            out["logs"].append({
                "receipts": head.size, "append_wave_ms_p50": pct(append_ms, 0.5) if append_ms else None,
                "prove_ms_p50": pct(prove_ms, 0.5), "prove_ms_p99": pct(prove_ms, 0.99),
                "consistency_ms_p50": pct(consistency_ms, 0.5),
                "consistency_ms_p99": pct(consistency_ms, 0.99),
                "verify_receipts_s": verify_s, "backfill_open_s": backfill_s})
    return out


def markdown(results: dict[str, Any]) -> str:
    lines = [SECTION, "",
             "The receipt log is an RFC 9162 Merkle tree (`rippl_core/review/merkle.py`, "
             "`review/log.py`). Proof sizes grow with log2 of the log; verification is a few "
             f"dozen SHA-256 computations. {SAMPLES} random receipts and {SAMPLES} random earlier "
             "sizes per log; pure Python, one core.", "",
             "| receipts | inclusion proof (max hashes / bytes) | verify p50 / p99 | consistency "
             "proof (max hashes / bytes) | verify p50 / p99 | root of the whole log |",
             "|---|---|---|---|---|---|"]
    for row in results["proofs"]:
        lines.append(
            f"| {row['size']:,} | {row['inclusion_hashes_max']} / {row['inclusion_bytes_max']} B "
            f"| {row['inclusion_verify_ms_p50']:.4f} / {row['inclusion_verify_ms_p99']:.4f} ms "
            f"| {row['consistency_hashes_max']} / {row['consistency_bytes_max']} B "
            f"| {row['consistency_verify_ms_p50']:.4f} / {row['consistency_verify_ms_p99']:.4f} ms "
            f"| {row['root_recompute_s']:.3f} s |")
    rows = results["proofs"]
    growth = rows[-1]["size"] // rows[0]["size"]
    lines += ["", f"From {rows[0]['size']:,} to {rows[-1]['size']:,} receipts ({growth:,}x) "
              f"an inclusion proof grows from {rows[0]['inclusion_hashes_max']} to "
              f"{rows[-1]['inclusion_hashes_max']} hashes and its verification p50 from "
              f"{rows[0]['inclusion_verify_ms_p50']:.4f} to {rows[-1]['inclusion_verify_ms_p50']:.4f} ms: "
              "logarithmic. The p99s are pauses of the shared machine (and the collector), not "
              "work: every verification does the same log2(n) hashes. Recomputing the root of the "
              "whole log (what `verify --anchor` adds to a verification) is linear: one pass over "
              "the leaves."]
    db = results["database"]
    requests = db["retraction_requests"]
    lines += ["", "Through the database (embedded; a log of real receipts: alternating retract and "
              "reinstate of one claim):", "",
              f"- A receipted retraction sends {len(requests)} requests ({', '.join(requests)}), "
              "the same as before the tree: the tree's frontier and the actor's registered key come "
              "back with the chain-head read the append already made, and the new leaf, head and "
              "completed subtrees go into the same MULTI/EXEC. **Extra round trips per append: 0** "
              "(pinned by `tests/causal/test_round_trips.py::test_a_retraction_reads_the_claim_once`).",
              "", "| receipts | receipted wave p50 | prove() p50 / p99 | consistency() p50 / p99 "
              "| verify_receipts() | backfill on open |", "|---|---|---|---|---|---|"]
    for row in db["logs"]:
        wave = f"{row['append_wave_ms_p50']:.2f} ms" if row["append_wave_ms_p50"] else "-"
        lines.append(f"| {row['receipts']:,} | {wave} | {row['prove_ms_p50']:.2f} / "
                     f"{row['prove_ms_p99']:.2f} ms | {row['consistency_ms_p50']:.2f} / "
                     f"{row['consistency_ms_p99']:.2f} ms | {row['verify_receipts_s']:.2f} s | "
                     f"{row['backfill_open_s']:.2f} s |")
    lines += ["", "A proof is two reads: the tree's head, then the at most 2·log2(n) stored "
              "subtrees its nodes are built from, so its latency does not grow with the log beyond "
              "the index lookups. `verify_receipts()` reads and re-hashes the whole log (every leaf "
              "is recomputed from its receipt; the stored tree is never trusted). The backfill "
              "reads every receipt once and writes about 2n tree nodes.",
              f"Machine: {results['machine']}; load average at the start and end of the run: "
              f"{results['load'][0]} and {results['load'][1]} on 2 cores (a machine shared with "
              "other work: the database figures are upper bounds, compare them as ratios; the "
              "`## Receipts` section's waves were measured idle).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = options(__doc__, quick="small sizes; docs untouched", docs="--no-docs")
    parser.add_argument("--render", action="store_true",
                        help="only rewrite the docs section from bench/results/log.json")
    args = parser.parse_args(argv)
    if args.render:
        replace_section(DOCS, SECTION, markdown(json.loads(results_file("log").read_text())))
        return 0
    rng = random.Random(27)
    sizes = [1_000, 10_000] if args.quick else [1_000, 100_000, 1_000_000]
    import platform

    results: dict[str, Any] = {"machine": f"{platform.processor() or platform.machine()}, Python "
                                          f"{platform.python_version()}"}
    results["proofs"] = []
    start_load = [round(x, 2) for x in os.getloadavg()]
    for size in sizes:
        print(f"proofs at {size:,} receipts…", file=sys.stderr, flush=True)
        results["proofs"].append(proofs(size, rng))
    print("through the database…", file=sys.stderr, flush=True)
    results["database"] = database([200, 1_000] if args.quick else [1_000, 5_000], rng)
    results["load"] = [start_load, [round(x, 2) for x in os.getloadavg()]]
    publish(results, results_file("log", quick=args.quick), markdown, heading=SECTION,
            docs=not (args.quick or args.no_docs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
