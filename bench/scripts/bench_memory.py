"""What a memory write costs when a captured run writes it (issue 37), beside the same write
outside any run.

    uv run python bench/scripts/bench_memory.py [--quick] [--update-docs]

One embedded database. In interleaved rounds (so machine load hits each alike), each of:

- a belief adopted outside any run: `add_claim` of a new statement, then `believe` (what a
  LangGraph `RipplStore.put` or an AutoGen `RipplMemory.add` does);
- the same from inside a tool call of a captured run (`capture.memory.writing`, as the adapters
  set it while a guarded call executes): the claim gets its writer node, resting on what the
  call's turn rested on, in the belief's own commit; the turn's input holds 10 readings;
- the same written by the run itself (a LangGraph node, CrewAI's own save: it rests on everything
  the run carried, the 10 readings);
- a record saved outside a run and inside one (CrewAI's `RipplStorage.save`);
- the floor: a bare write transaction (MULTI/EXEC creating a node and an edge, fsynced like every
  write of the embedded server).

Each write is counted on the wire: the requests it sends (a pipeline or a transaction is one).
Results go to bench/results/memory.json and the "Memory written in a run" section of
docs/benchmarks.md. Benchmarks record numbers; the tests assert behaviour.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from redis.connection import AbstractConnection
from rippl_bench.machine import brief
from rippl_bench.script import options, publish, results_file

from rippl_core import Record, Rippl, ToolCall
from rippl_core._runtime.wire import Query
from rippl_core.adapters import RunRef, Writing, throwaway_database, writing

HEADING = "## Memory written in a run (issue 37)"
READINGS = 10
counter = itertools.count()


@contextmanager
def counted() -> Iterator[list[int]]:
    """The requests sent to the server inside the block (a pipeline or transaction is one)."""
    sent = [0]
    send = AbstractConnection.send_packed_command

    def counting(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        sent[0] += 1
        send(self, command, check_health)

    AbstractConnection.send_packed_command = counting  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        AbstractConnection.send_packed_command = send  # type: ignore[method-assign]


def reading_run(rippl: Rippl, name: str) -> tuple[Writing, Writing]:
    """A run that read READINGS shards, then decided a `remember` call on them: (the call
    writing, the run writing)."""
    run = rippl.run(name, agent="bench")
    refs: list[str] = []
    for i in range(READINGS):
        read = ToolCall(name="get_health", args={"shard": f"{i:02d}"}, id=f"{name}-r{i}")
        run.decide(f"t{i}", [read], context=refs)
        run.executed(read, f"shard {i:02d}: healthy")
        refs.append(read.id or "")
    remember = ToolCall(name="remember", args={"fact": "x"}, id=f"{name}-w")
    run.decide("tw", [remember], context=refs)
    return Writing(RunRef(name), call=remember.id), Writing(RunRef(name))


def main() -> None:
    parser = options(__doc__, quick="10 rounds instead of 200", docs="--update-docs")
    args = parser.parse_args()
    rounds = 10 if args.quick else 200
    with throwaway_database(prefix="rippl-bench-memory-") as db, Rippl.open(db) as rippl:
        by_call, by_run = reading_run(rippl, "bench-run")
        store = rippl.records("bench")

        def believe(who: Writing | None) -> Callable[[], None]:
            def write() -> None:
                n = next(counter)
                with writing(who):
                    claim = rippl.add_claim(None, f"fact number {n}").id
                    rippl.believe("bench", claim, topic=f"topic-{n}")  # a new adoption each
            return write

        def save(who: Writing | None) -> Callable[[], None]:
            def write() -> None:
                with writing(who):
                    store.save([Record(id=f"rec-{next(counter)}", content=f"record {next(counter)}")])
            return write

        def floor() -> None:
            n = next(counter)
            rippl._driver.run(lambda: (yield _commit(n)))  # type: ignore[attr-defined]

        cases: dict[str, Callable[[], None]] = {
            "floor: a bare write transaction": floor,
            "belief, outside any run": believe(None),
            "belief, from a tool call of a run": believe(by_call),
            "belief, by the run itself": believe(by_run),
            "record, outside any run": save(None),
            "record, from a tool call of a run": save(by_call),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        trips: dict[str, list[int]] = {name: [] for name in cases}
        for write in cases.values():  # warm each path once
            write()
        for _ in range(rounds):
            for name, write in cases.items():
                with counted() as sent:
                    began = time.perf_counter()
                    write()
                    times[name].append((time.perf_counter() - began) * 1000)
                trips[name].append(sent[0])
    floor_p50 = statistics.median(times["floor: a bare write transaction"])
    results = {"rounds": rounds, "readings": READINGS, "machine": brief(), "cases": {
        name: {"p50_ms": statistics.median(found), "p90_ms": _quantile(found, 0.9),
               "round_trips": statistics.median(trips[name]),
               "vs_floor": statistics.median(found) / floor_p50}
        for name, found in times.items()}}
    publish(results, results_file("memory", quick=args.quick), markdown, heading=HEADING,
            docs=args.update_docs and not args.quick)


def _commit(n: int) -> Any:
    from rippl_core._runtime.op import Commit
    return Commit([Query("CREATE (a:BenchFloor {id: $a})-[:SUPPORTS]->(:BenchFloor {id: $b})",
                         {"a": f"f{n}a", "b": f"f{n}b"})], blind=True)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def markdown(results: dict[str, Any]) -> str:
    lines = [HEADING, "",
             f"`uv run python bench/scripts/bench_memory.py --update-docs`, {results['rounds']} "
             f"interleaved rounds, one embedded database; the run's turn rests on "
             f"{results['readings']} readings; load average "
             f"{results['machine'].get('load_average')}, measured "
             f"{results.get('provenance', {}).get('date', '?')} at "
             f"{results.get('provenance', {}).get('commit', '?')}.", "",
             "| write | p50 | p90 | round trips | vs a bare write |", "|---|---|---|---|---|"]
    for name, case in results["cases"].items():
        lines.append(f"| {name} | {case['p50_ms']:.2f} ms | {case['p90_ms']:.2f} ms | "
                     f"{case['round_trips']:g} | {case['vs_floor']:.2f}x |")
    lines += ["", "A write in a run sends as many requests as the same write outside one: what it "
                  "rests on is written by queries joined to the write's own commit "
                  "(`causal.joined`)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
