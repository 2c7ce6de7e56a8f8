"""How RipplStorage searches: exact cosine inside FalkorDB vs. the alternatives, measured.

    uv run python bench/scripts/crewai_search.py [--sizes 1000 5000 20000]

For each store size N (384-dimensional random unit vectors, 10 scopes) it measures:

- exact (in FalkorDB), what RipplStorage does: `vec.cosineDistance` over the versions that pass
  the filters (store, scope, categories, time, claim status), ordered, top k;
- Python over candidates: fetch the scope's records with their embeddings, rank in Python;
- FalkorDB's HNSW vector index (`db.idx.vector.queryNodes`): approximate kNN, then the filters,
  with k oversampled 10x; its recall@10 against the exact answer, and what the index costs writes.

Median of 7 runs per query, on the embedded FalkorDB that falkordblite ships.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from rippl_core import Record, Rippl
from rippl_core._runtime.wire import Query, parse

DIM, SCOPES, K = 384, 10, 10


def unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(DIM)]
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def median_ms(fn: Callable[[], object], runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def raw(rippl: Rippl, text: str, params: dict[str, object], read_only: bool = True) -> list:
    q = Query(text, params, read_only=read_only)
    return parse(rippl.redis.execute_command("GRAPH.RO_QUERY" if read_only else "GRAPH.QUERY",
                                             rippl.keys.graph, q.command(), "--compact"))


def bench(rippl: Rippl, n: int, rng: random.Random) -> dict[str, float]:
    store = rippl.records(f"bench-{n}")
    rows = [Record(id=f"r{i}", content=f"memory {n}-{i}: {uuid.uuid4().hex}", scope=f"/s{i % SCOPES}",
                   embedding=unit(rng)) for i in range(n)]
    start = time.perf_counter()
    for at in range(0, n, 500):
        store.save(rows[at:at + 500])
    write_s = time.perf_counter() - start
    query = unit(rng)

    exact_all = median_ms(lambda: store.search(query, limit=K))
    exact_scope = median_ms(lambda: store.search(query, scope_prefix="/s1", limit=K))

    def python_scope() -> list[str]:
        found = store.find(scope_prefix="/s1")
        ranked = sorted(found, key=lambda r: -sum(
            a * b for a, b in zip(r.embedding, query, strict=True)))
        return [r.id for r in ranked[:K]]

    py_scope = median_ms(python_scope)
    truth_all = [r.id for r, _ in store.search(query, limit=K)]
    truth_scope = [r.id for r, _ in store.search(query, scope_prefix="/s1", limit=K)]
    assert python_scope() == truth_scope

    raw(rippl, f"CREATE VECTOR INDEX FOR (r:Record) ON (r.vec) OPTIONS {{dimension: {DIM}, "
               "similarityFunction: 'cosine'}", {}, read_only=False)
    knn = ("CALL db.idx.vector.queryNodes('Record', 'vec', {k}, vecf32($q)) YIELD node, score "
           "WITH node, score WHERE node.store = $store {scope} AND node.valid_to IS NULL "
           "RETURN node.rid ORDER BY score LIMIT 10")
    params = {"q": query, "store": store.store, "p": "/s1"}
    start = time.perf_counter()
    while True:  # the index is built in the background; it answers once it is ready
        try:
            raw(rippl, knn.format(k=K * 10, scope=""), params)
            break
        except Exception:
            if time.perf_counter() - start > 120:
                raise
            time.sleep(0.05)
    build_s = time.perf_counter() - start
    index_all = median_ms(lambda: raw(rippl, knn.format(k=K * 10, scope=""), params))
    index_scope = median_ms(lambda: raw(rippl, knn.format(k=K * 10, scope="AND node.scope = $p"), params))
    got_all = [r[0] for r in raw(rippl, knn.format(k=K * 10, scope=""), params)]
    got_scope = [r[0] for r in raw(rippl, knn.format(k=K * 10, scope="AND node.scope = $p"), params)]
    extra = [Record(id=f"x{i}", content=f"extra {n}-{i}: {uuid.uuid4().hex}", scope="/s0",
                    embedding=unit(rng)) for i in range(500)]
    start = time.perf_counter()
    store.save(extra)
    indexed_write_ms = (time.perf_counter() - start) * 1000 / len(extra)
    raw(rippl, "DROP VECTOR INDEX FOR (r:Record) ON (r.vec)", {}, read_only=False)
    return {
        "n": n, "write_ms_per_record": write_s * 1000 / n, "index_build_s": build_s,
        "indexed_write_ms_per_record": indexed_write_ms,
        "exact_all_ms": exact_all, "exact_scope_ms": exact_scope, "python_scope_ms": py_scope,
        "index_all_ms": index_all, "index_scope_ms": index_scope,
        "index_recall_all": len(set(got_all) & set(truth_all)) / K,
        "index_recall_scope": len(set(got_scope) & set(truth_scope)) / K,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as folder:
        print("| records | exact, all | exact, 1 scope | Python, 1 scope | HNSW, all (recall@10) "
              "| HNSW, 1 scope (recall@10) | HNSW build | write/record | write/record with HNSW |")
        print("|---|---|---|---|---|---|---|---|---|")
        for n in args.sizes:
            with Rippl.open(Path(folder) / "bench.db", graph=f"bench-{n}") as rippl:
                r = bench(rippl, n, rng)  # one graph per size: the HNSW index sees only it
            print(f"| {n} | {r['exact_all_ms']:.1f} ms | {r['exact_scope_ms']:.1f} ms "
                  f"| {r['python_scope_ms']:.1f} ms "
                  f"| {r['index_all_ms']:.1f} ms ({r['index_recall_all']:.0%}) "
                  f"| {r['index_scope_ms']:.1f} ms ({r['index_recall_scope']:.0%}) "
                  f"| {r['index_build_s']:.1f} s "
                  f"| {r['write_ms_per_record']:.2f} ms | {r['indexed_write_ms_per_record']:.2f} ms |",
                  flush=True)


if __name__ == "__main__":
    main()
