"""Capture and the allowed check beside their floors, side by side in one run (issue 28, items 1-2).

    uv run python bench/scripts/bench_capture.py [--quick] [--out PATH] [--profile]

On one embedded FalkorDB (fsync on every write), interleaved sample by sample so machine load
hits every path alike:

- `Run.decide` of a one-call turn with one observation (the previous call's result) in context,
  against a bare MULTI/EXEC (no WATCH, no ROLE, no parsing) that creates the same decision and
  action and their two edges (the context claim SUPPORTS the decision, which DRIVES the action)
  and bumps the version key: target <= 1.3x;
- `Run.executed` of that call, against a bare MULTI/EXEC that marks the action executed, creates
  the result source and claim and the edge between them, and bumps the version key: <= 1.3x;
- an allowed `check` of an action, against one raw indexed `GRAPH.RO_QUERY` of the node: <= 1.25x
  (timed in a loop of reads only, beside the same read through the driver: MULTI/EXEC, and ROLE
  where the topology has replicas);
- a bare round trip (PING) for scale.

`--profile` also prints GRAPH.PROFILE of the decide and executed queries. Results go to
bench/results/capture.json (--quick: bench/results/quick/capture.json); every ratio is also in
`ratios`, the flat form `rippl_bench.ratios` gathers.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rippl_bench.generate import causal_graph
from rippl_bench.lab import Backend, backend
from rippl_bench.machine import describe, load_average
from rippl_bench.measure import summary_ms
from rippl_bench.summary import stamp

from rippl_core import Rippl, ToolCall
from rippl_core._runtime import driver, wire
from rippl_core._runtime.wire import Query

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "capture.json"
QUICK_RESULTS = ROOT / "bench" / "results" / "quick" / "capture.json"
TURNS_PER_RUN = 25
TARGETS = {"decide": 1.3, "executed": 1.3, "check_allowed": 1.25}

FLOOR_DECIDE = ("MATCH (c:Node {id: $ctx}) "
                "CREATE (d:Node:Decision) SET d = $decision "
                "CREATE (a:Node:Action) SET a = $action "
                "CREATE (c)-[:SUPPORTS {j: $decision.id}]->(d) "
                "CREATE (d)-[:DRIVES {j: $action.id}]->(a)")
FLOOR_EXECUTED = ("MATCH (a:Node {id: $action}) SET a.executed_at = $now "
                  "CREATE (s:Node:Source) SET s = $source "
                  "CREATE (c:Node:Claim) SET c = $claim "
                  "CREATE (s)-[:SUPPORTS {j: $source.id}]->(c)")


SERVER: dict[str, list[float]] = {}  # FalkorDB's own execution time of each call's queries (ms)
_CURRENT = [""]


def server_ms(reply: Any) -> float:
    """The "internal execution time" a GRAPH.QUERY reply reports, in ms."""
    for stat in reply[-1] if isinstance(reply, list) and reply else ():
        text = stat.decode() if isinstance(stat, bytes) else str(stat)
        if "internal execution time" in text:
            return float(text.split(":")[1].split()[0])
    return 0.0


def _recording_parse(reply: Any) -> Any:
    if _CURRENT[0]:
        SERVER.setdefault(_CURRENT[0], [0.0])[-1] += server_ms(reply)
    return wire.parse(reply)


def interleaved(fns: dict[str, Callable[[int], Any]], runs: int, warmup: int = 10
                ) -> dict[str, list[float]]:
    """Each function once per round, round after round: the seconds of each call (and, in
    SERVER, the server's own time of the queries each call sent)."""
    for n in range(warmup):
        for fn in fns.values():
            fn(n)
    out: dict[str, list[float]] = {name: [] for name in fns}
    driver.parse = _recording_parse  # type: ignore[assignment]
    try:
        for n in range(runs):
            for name, fn in fns.items():
                _CURRENT[0] = name
                SERVER.setdefault(name, []).append(0.0)
                start = time.perf_counter()
                fn(warmup + n)
                out[name].append(time.perf_counter() - start)
    finally:
        driver.parse = wire.parse  # type: ignore[assignment]
        _CURRENT[0] = ""
    return out


def bare_commit(rippl: Rippl, query: Query) -> Any:
    """One MULTI / GRAPH.QUERY / INCR version / EXEC: what a blind commit needs, nothing else."""
    with rippl.redis.pipeline(transaction=True) as pipe:
        pipe.execute_command("GRAPH.QUERY", rippl.keys.graph, query.command(), "--compact")
        pipe.incr(rippl.keys.version)
        replies = pipe.execute()
    if _CURRENT[0]:
        SERVER.setdefault(_CURRENT[0], [0.0])[-1] += server_ms(replies[0])
    return replies


def props(kind: str, node_id: str, text: str, **extra: Any) -> dict[str, Any]:
    now = int(time.time() * 1000)
    return {"id": node_id, "kind": kind, "text": text, "state": "IN", "retracted": False,
            "pending": 0, "created_at": now, "run": "floor", **extra}


def measure(db: Backend, runs: int, profile: bool) -> dict[str, Any]:
    rippl = db.open("capture-bench")
    try:
        rippl.load(causal_graph(1000, seed=11).spec)
        action_ids = [a for a in sorted(rippl._driver.query(Query(
            "MATCH (a:Action) WHERE a.state = 'IN' RETURN a.id LIMIT 200", read_only=True)))]
        allowed = [row[0] for row in action_ids if rippl.check(row[0]).allowed][:50]
        assert allowed
        rng = random.Random(5)
        state: dict[str, Any] = {"run": None, "prev": None, "call": None}
        args = {"table": "billing", "shard": 7}

        def turn(n: int) -> tuple[Any, str]:
            if n % TURNS_PER_RUN == 0 or state["run"] is None:
                state["run"] = rippl.run(f"bench-run-{n}", agent="ops", framework="bench")
                state["prev"] = None
            return state["run"], f"call-{n}"

        def decide(n: int) -> Any:
            run, call_id = turn(n)
            call = ToolCall(name="migrate_tables", args={**args, "n": n}, id=call_id)
            context = [state["prev"]] if state["prev"] else []
            verdicts = run.decide(f"turn-{n}", [call], context=context)
            assert verdicts[0].allowed, verdicts[0].reason
            state["call"] = call

        def executed(n: int) -> Any:
            run, call = state["run"], state["call"]
            run.executed(call, f"migrated billing shard {n}")
            state["prev"] = call.id

        floor_ctx = "floor-claim"
        rippl._driver.query(Query("RETURN 1", read_only=True))
        bare_commit(rippl, Query("CREATE (c:Node:Claim) SET c = $p",
                                 {"p": props("Claim", floor_ctx, "floor context")}))

        def floor_decide(n: int) -> Any:
            return bare_commit(rippl, Query(FLOOR_DECIDE, {
                "ctx": floor_ctx,
                "decision": props("Decision", f"FD-{n}", f"ops calls migrate_tables (turn {n})",
                                  turn=f"turn-{n}", key=f"floor\x1fturn-{n}"),
                "action": props("Action", f"FA-{n}", f"migrate_tables(table=billing, n={n})",
                                tool="migrate_tables", args=json.dumps({**args, "n": n}),
                                call_id=f"call-{n}", call_ref=f"floor\x1fcall-{n}")}))

        def floor_executed(n: int) -> Any:
            return bare_commit(rippl, Query(FLOOR_EXECUTED, {
                "action": f"FA-{n}", "now": int(time.time() * 1000),
                "source": props("Source", f"FS-{n}", f"the result of call call-{n}",
                                source_type="tool_result"),
                "claim": props("Claim", f"FC-{n}", f"migrate_tables returned shard {n}")}))

        def check(n: int) -> Any:
            assert rippl.check(allowed[n % len(allowed)]).allowed

        def read(n: int) -> Any:
            reply = rippl.redis.execute_command(
                "GRAPH.RO_QUERY", rippl.keys.graph,
                Query("MATCH (n:Node {id: $id}) RETURN n.state",
                      {"id": allowed[n % len(allowed)]}).command(), "--compact")
            if _CURRENT[0]:
                SERVER.setdefault(_CURRENT[0], [0.0])[-1] += server_ms(reply)
            return reply

        def ping(n: int) -> Any:
            return rippl.redis.ping()

        db.settle()
        def driver_read(n: int) -> Any:
            return rippl._driver.query(Query("MATCH (n:Node {id: $id}) RETURN n.state",
                                             {"id": allowed[n % len(allowed)]}, read_only=True))

        # the writes, then the reads, each set interleaved (a read timed right after an fsync'd
        # write waits on the server's turn; reads are held against reads)
        times = interleaved({"decide": decide, "floor_decide": floor_decide,
                             "executed": executed, "floor_executed": floor_executed}, runs)
        db.settle()
        times |= interleaved({"check_allowed": check, "indexed_read": read,
                              "indexed_read_driver": driver_read, "ping": ping}, runs * 3)
        row: dict[str, Any] = {name: summary_ms(v, mean=False) for name, v in times.items()}
        row["server_p50_ms"] = {name: round(statistics.median(SERVER[name]), 4)
                                for name in times if name in SERVER}
        p50 = {name: row[name]["p50_ms"] for name in times}
        row["ratios"] = {
            "decide": round(p50["decide"] / p50["floor_decide"], 3),
            "executed": round(p50["executed"] / p50["floor_executed"], 3),
            "check_allowed": round(p50["check_allowed"] / p50["indexed_read"], 3)}
        row["targets"] = TARGETS
        del rng
        if profile:
            row["profiles"] = profiles(rippl)
        return row
    finally:
        rippl.drop()


def profiles(rippl: Rippl) -> dict[str, list[str]]:
    """GRAPH.PROFILE of the queries one decide and one executed send (captured on the wire), each
    run on a copy of the graph as it was just before (GRAPH.COPY), so a write profiles as new."""
    from rippl_core._runtime import driver

    sent: list[Query] = []
    original = driver._args

    def spy(graph: str, query: Query) -> tuple[str, ...]:
        sent.append(query)
        return original(graph, query)

    run = rippl.run("profile-run", agent="ops", framework="bench")
    first = ToolCall(name="migrate_tables", args={"n": -1}, id="p-0")
    run.decide("p-turn-0", [first], context=[])
    run.executed(first, "first result")
    out: dict[str, list[str]] = {}
    call = ToolCall(name="migrate_tables", args={"n": -2}, id="p-1")
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("decide", lambda: run.decide("p-turn-1", [call], context=["p-0"])),
        ("executed", lambda: run.executed(call, "second result"))]
    for label, step in steps:
        copy = f"{rippl.keys.graph}-profile"
        rippl.redis.execute_command("GRAPH.COPY", rippl.keys.graph, copy)
        driver._args = spy  # type: ignore[assignment]
        try:
            step()
        finally:
            driver._args = original  # type: ignore[assignment]
        for i, q in enumerate(sent):
            plan = rippl.redis.execute_command("GRAPH.PROFILE", copy, q.command())
            out[f"{label} {i}"] = [line if isinstance(line, str) else line.decode() for line in plan]
        sent.clear()
        rippl.redis.execute_command("GRAPH.DELETE", copy)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    runs = args.runs or (150 if args.quick else 600)
    out = args.out or (QUICK_RESULTS if args.quick else RESULTS)
    started = time.perf_counter()
    with backend("embedded") as db:
        results = {"recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
                   "quick": args.quick, "machine": describe(), "load_average": load_average(),
                   "server": db.info(), "runs": runs, **measure(db, runs, args.profile)}
    results["seconds"] = round(time.perf_counter() - started, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(stamp(results), indent=1) + "\n", encoding="utf-8")
    for name in ("decide", "floor_decide", "executed", "floor_executed", "check_allowed",
                 "indexed_read", "indexed_read_driver", "ping"):
        print(f"{name:16} p50 {results[name]['p50_ms']:.3f} ms")
    print("ratios:", results["ratios"])
    print("server p50 (ms):", results["server_p50_ms"])
    if args.profile:
        for name, plan in results["profiles"].items():
            print(f"--- {name}")
            print("\n".join(plan))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
