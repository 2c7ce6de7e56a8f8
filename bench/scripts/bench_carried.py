"""What a captured turn costs with many messages in the model's input (issue 31), and what the
repeat rule adds to a call that repeats nothing (issue 30).

    uv run python bench/scripts/bench_carried.py [--rounds R] [--turns N]

One embedded database. For each size S in 10, 100 and 1,000, a run holds S carried messages: S/2
tool results (read, then executed) and S/2 text replies the model wrote, each from the input
before it (`Run.wrote`), so every message carries readings. A timed turn is `Run.decide` of one
call whose input holds every one of those messages (`context=` all S refs). Beside it, in the same
rounds (interleaved, so machine load hits each alike):

- the floors: a bare round trip (`GRAPH.RO_QUERY` of `RETURN 1`), a bare write transaction
  (MULTI/EXEC creating a decision, an action and two edges: what a turn must write, fsynced like
  every write of the embedded server) and a turn of one message;
- a call that repeats nothing in a run with no veto, and in a run with 10 vetoed calls of another
  tool (the repeat lookup's share of a turn);
- the allowed `check` of a declared action, and one indexed read (the check's floor).

Every decide is counted on the wire (one GRAPH.QUERY each, asserted). Results go to
bench/results/carried.json; docs/benchmarks.md quotes them. Benchmarks record numbers; the tests
assert behaviour.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rippl_core import Rippl, ToolCall

ROOT = Path(__file__).resolve().parents[2]
SIZES = (10, 100, 1000)
counter = itertools.count()


def _carrying(rippl: Rippl, run_id: str, size: int) -> list[str]:
    """A run whose input holds `size` messages that carry readings: (the refs)."""
    run = rippl.run(run_id, agent="bench")
    refs: list[str] = []
    for i in range(size // 2):
        read = ToolCall(name="get_health", args={"shard": f"{i:04d}"}, id=f"r{i}")
        run.decide(f"t{i}", [read], context=refs)
        run.executed(read, f"shard {i:04d}: healthy")
        refs.append(read.id or "")
        run.wrote(f"m{i}", context=refs)
        refs.append(f"m{i}")
    return refs


def _vetoed(rippl: Rippl, run_id: str, vetoes: int) -> Rippl:
    """A run with `vetoes` vetoed calls of `migrate` (their premise retracted and read)."""
    run = rippl.run(run_id, agent="bench")
    read = ToolCall(name="get_health", args={"shard": "x"}, id="rx")
    run.decide("t0", [read], context=[])
    claim = run.executed(read, "shard x: healthy")
    rippl.retract(claim, reason="bench", by="bench")
    for i in range(vetoes):
        [verdict] = run.decide(f"v{i}", [ToolCall(name="migrate", args={"shard": i}, id=f"v{i}")],
                               context=["rx"])
        assert not verdict.allowed
    return rippl


def _turn(rippl: Rippl, run_id: str, context: list[str]) -> Callable[[], object]:
    run = rippl.run(run_id)

    def once() -> object:
        n = next(counter)
        return run.decide(f"b{n}", [ToolCall(name="announce", args={"n": n}, id=f"b{n}")],
                          context=context)
    return once


def _commands(rippl: Rippl, fn: Callable[[], object]) -> int:
    """How many GRAPH.QUERY commands one call of fn sends (the server's command statistics)."""
    client = rippl.redis
    before = int(client.info("commandstats").get("cmdstat_graph.QUERY", {}).get("calls", 0))
    fn()
    after = int(client.info("commandstats").get("cmdstat_graph.QUERY", {}).get("calls", 0))
    return after - before


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--turns", type=int, default=60, help="timed calls per variant a round")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp, Rippl.open(Path(tmp) / "carried.db",
                                                          graph="bench-carried") as rippl:
        variants: dict[str, Callable[[], object]] = {}
        client = rippl.redis
        graph_key = rippl.keys.graph
        variants["bare round trip"] = lambda: client.execute_command(
            "GRAPH.RO_QUERY", graph_key, "RETURN 1")
        bare = itertools.count()

        def bare_write() -> object:  # the floor of a turn: its nodes and edges created, fsynced
            n = next(bare)
            with client.pipeline(transaction=True) as pipe:
                pipe.execute_command(
                    "GRAPH.QUERY", graph_key,
                    f"CREATE (:Bare {{id: 'd{n}'}})-[:DRIVES]->"
                    f"(:Bare {{id: 'a{n}'}}) WITH 1 AS one MATCH (r:Node {{id: 'C1'}}) "
                    f"CREATE (r)-[:SUPPORTS]->(:Bare {{id: 'e{n}'}})")
                return pipe.execute()
        variants["bare write transaction"] = bare_write
        rippl.add_claim("C1", "A1 is in stock")
        rippl.add_decision("D1", "reorder", premises=["C1"])
        rippl.add_action("A1", "order", decisions=["D1"], tool="place_order", args={"sku": "A1"})
        variants["one indexed read"] = lambda: client.execute_command(
            "GRAPH.RO_QUERY", graph_key, "MATCH (n:Node {id: 'A1'}) RETURN n.state")
        order = ToolCall(name="place_order", args={"sku": "A1"})
        variants["allowed check"] = lambda: rippl.check(order)
        for size in (1, *SIZES):
            refs = _carrying(rippl, f"carry-{size}", max(size, 2))[:size]
            variants[f"decide, {size} carried"] = _turn(rippl, f"carry-{size}", refs)
        _vetoed(rippl, "vetoes-10", 10)
        variants["decide, no veto in the run"] = _turn(rippl, "carry-10", [])
        variants["decide, 10 vetoes in the run"] = _turn(rippl, "vetoes-10", [])
        for name, fn in variants.items():
            if name.startswith("decide"):
                assert _commands(rippl, fn) == 1, name  # one round trip, whatever the size
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(options.rounds):
            for name, fn in variants.items():
                for _ in range(5):
                    fn()
                for _ in range(options.turns):
                    start = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - start)
    from rippl_bench.measure import summary_ms
    from rippl_bench.script import results_file, save

    results = {name: summary_ms(found, (50, 90), mean=False) for name, found in times.items()}
    floor, write = (results[name]["p50_ms"] for name in ("bare round trip", "bare write transaction"))
    for found in results.values():
        found.update(x_round_trip=round(found["p50_ms"] / floor, 2),
                     x_write=round(found["p50_ms"] / write, 2))
    print("\n".join(f"{name:32} p50 {r['p50_ms']:7.3f} ms  {r['x_round_trip']:7.2f}x a bare round "
                    f"trip  {r['x_write']:6.2f}x a bare write transaction" for name, r in results.items()))
    save({"rounds": options.rounds, "turns": options.turns, "results": results},
         results_file("carried"))


if __name__ == "__main__":
    main()
