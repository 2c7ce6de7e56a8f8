"""Replication, failover and cluster benchmarks, with real processes on loopback.

    uv run python bench/scripts/bench_topologies.py [--quick] [--no-docs]

1. Failover (Sentinel): a FalkorDB primary, two replicas and three Sentinels (down-after 1000 ms,
   failover-timeout 3000 ms), all on this machine. Each round: a writer retracts claims one by
   one through `falkordb+sentinel://` (a retraction that returns is acknowledged: it waited for
   one replica, WAIT 1), a guard checks an allowed tool call every 5 ms; the primary is SIGKILLed
   mid-stream; Sentinel promotes a replica; the writer and the guard carry on by themselves; the
   killed server then restarts as a replica for the next round. Recorded per round: acknowledged
   retractions missing afterwards (must be 0), the time from the kill to the first allowed check
   and to the first acknowledged write, and the checks denied in between. 20 rounds (--quick: 3).
2. Durability cost: a wave (the retraction and the reinstatement of CLM-001 of the demo incident,
   17 dependents) and a belief write (`believe`), through a server with one replica: acknowledged
   after WAIT 1 (the default with a replica) vs not waiting (`?replicas=0`), side by side.
3. Scale-out: 30 tenants (the demo incident each) on one FalkorDB server, a 1-node and a 3-node
   Redis Cluster; 4 client processes run `check` round robin over the tenants for 10 s; the
   aggregate checks per second, 3 runs of each deployment in turns (the median reported). On a
   2-core machine the servers and the clients share 2 cores.
The writes of (2) with and without waiting are interleaved sample by sample for the same reason:
the machine may be shared, and its load must weigh on both sides alike.

Results go to bench/results/topologies.json (--quick: bench/results/quick/topologies.json, docs
untouched); a full run also rewrites the `## Replication, failover and cluster` section of
docs/benchmarks.md. Benchmarks record numbers; the tests (pytest -m cluster) assert behaviour.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rippl_bench.machine import describe
from rippl_bench.measure import summary
from rippl_bench.script import options, publish, results_file

from rippl_core import Rippl, RipplError, State, ToolCall
from rippl_core.testing import (
    start_falkordb_cluster,
    start_falkordb_replica,
    start_falkordb_server,
    start_replica_set,
)

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Replication, failover and cluster"
INCIDENT = ROOT / "examples" / "incident.yaml"
STABLE = ToolCall(name="deploy", args={"service": "stable"})
CLAIMS_PER_ROUND = 600


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- 1. failover ------------------------------------------------------------------------------

def _failover_graph(ids: list[str], *, stable: bool = False) -> dict[str, Any]:
    """Claims C-<id> under one source, each with a decision; with `stable`, the guarded action."""
    spec: dict[str, Any] = {
        "sources": [{"id": "S", "title": "telemetry"}],
        "claims": [{"id": f"C-{i}", "text": f"claim {i}", "sources": ["S"]} for i in ids],
        "decisions": [{"id": f"D-{i}", "title": f"d {i}", "premises": [f"C-{i}"]} for i in ids]}
    if stable:
        spec["actions"] = [{"id": "A-stable", "title": "deploy", "decisions": ["D-stable"],
                            "tool": STABLE.name, "args": STABLE.args}]
    return spec


def failover_round(url: str, graph: str, rs: Any, round_no: int) -> dict[str, Any]:
    stop = threading.Event()
    acked: list[tuple[float, str]] = []
    failed: list[str] = []
    verdicts: list[tuple[float, bool]] = []

    def write() -> None:
        with Rippl.open(url=url, graph=graph) as rippl:
            for i in range(CLAIMS_PER_ROUND):
                if stop.is_set():
                    return
                claim = f"C-{round_no}-{i}"
                try:
                    rippl.retract(claim, reason="found false", by="monitor")
                    acked.append((time.monotonic(), claim))
                except RipplError as exc:
                    failed.append(type(exc).__name__)
                    time.sleep(0.01)

    def check() -> None:
        with Rippl.open(url=url, graph=graph) as rippl:
            while not stop.is_set():
                verdicts.append((time.monotonic(), rippl.check(STABLE).allowed))
                time.sleep(0.005)

    threads = [threading.Thread(target=write), threading.Thread(target=check)]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + 60
        while len(acked) < 50 and time.monotonic() < deadline:
            time.sleep(0.01)
        victim = rs.primary()
        killed_at = time.monotonic()
        victim.kill()
        rs.wait_for_failover(victim)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                any(at > killed_at for at, _ in acked) and any(ok and at > killed_at for at, ok in verdicts)):
            time.sleep(0.01)
        time.sleep(0.2)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    with Rippl.open(url=url, graph=graph) as rippl:
        lost = [claim for _, claim in acked if rippl.get(claim).state is not State.OUT]
        chain_ok = rippl.verify_receipts().ok
    rs.rejoin(victim)
    first_check = min((at for at, ok in verdicts if ok and at > killed_at), default=None)
    first_write = min((at for at, _ in acked if at > killed_at), default=None)
    return {"acked": len(acked), "lost": len(lost), "chain_ok": chain_ok,
            "kill_to_allowed_check_s": None if first_check is None else first_check - killed_at,
            "kill_to_acked_write_s": None if first_write is None else first_write - killed_at,
            "denied_checks": sum(1 for at, ok in verdicts if at > killed_at and not ok),
            "failed_writes": len(failed), "failure_kinds": sorted(set(failed))}


def bench_failover(rounds: int) -> dict[str, Any]:
    rs = start_replica_set(replicas=2, sentinels=3)
    try:
        url, graph = f"{rs.url}?replica_timeout_ms=2000", f"failover-{uuid.uuid4().hex[:6]}"
        # In slices: one command that blocks the primary longer than down-after-milliseconds
        # makes Sentinel fail it over (measured: a 24k-node load in one commit did).
        with Rippl.open(url=url, graph=graph) as rippl:
            for r in range(rounds):
                rippl.load(_failover_graph([f"{r}-{i}" for i in range(CLAIMS_PER_ROUND)]))
            rippl.load(_failover_graph(["stable"], stable=True))
        runs = []
        for r in range(rounds):
            runs.append(failover_round(url, graph, rs, r))
            progress(f"  failover round {r + 1}/{rounds}: {runs[-1]}")
    finally:
        rs.stop()
    checks = [r["kill_to_allowed_check_s"] for r in runs if r["kill_to_allowed_check_s"] is not None]
    writes = [r["kill_to_acked_write_s"] for r in runs if r["kill_to_acked_write_s"] is not None]
    return {"rounds": rounds, "replicas": 2, "sentinels": 3, "down_after_ms": 1000,
            "failover_timeout_ms": 3000, "acked": sum(r["acked"] for r in runs),
            "lost": sum(r["lost"] for r in runs), "chains_ok": all(r["chain_ok"] for r in runs),
            "kill_to_allowed_check_s": _stats(checks), "kill_to_acked_write_s": _stats(writes),
            "denied_checks": sum(r["denied_checks"] for r in runs), "runs": runs}


def _stats(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": round(statistics.median(values), 3),
            "max": round(max(values), 3), "min": round(min(values), 3)}


# -- 2. the cost of waiting for a replica --------------------------------------------------------

def bench_durability(samples: int) -> dict[str, Any]:
    """The same writes with and without waiting, interleaved sample by sample, so that the load
    of a shared machine weighs on both alike."""
    primary = start_falkordb_server(appendonly=True)
    replica = start_falkordb_replica(primary)
    graph = f"wait-{uuid.uuid4().hex[:6]}"
    urls = {"wait_1": primary.url, "no_wait": f"{primary.url}?replicas=0"}
    handles = {label: Rippl.open(url=url, graph=f"{graph}-{label}") for label, url in urls.items()}
    try:
        times: dict[str, dict[str, list[float]]] = {k: {"wave": [], "belief_write": []} for k in urls}
        for rippl in handles.values():
            rippl.load(INCIDENT)
            for claim in ("CLM-002", "CLM-003"):
                rippl.add_claim(f"{claim}-B", f"belief claim {claim}")
        for i in range(samples):
            for label, rippl in handles.items():
                for wave in (lambda r: r.retract("CLM-001", reason="disk errors", by="monitor"),
                             lambda r: r.reinstate("CLM-001", reason="disk replaced", by="alice")):
                    start = time.perf_counter()
                    wave(rippl)
                    times[label]["wave"].append(time.perf_counter() - start)
                start = time.perf_counter()
                rippl.believe("agent", "CLM-002-B" if i % 2 else "CLM-003-B", topic="root cause")
                times[label]["belief_write"].append(time.perf_counter() - start)
        results = {label: {"replicas_waited_for": handles[label].location.replicas,
                           **{kind: summary(values) for kind, values in times[label].items()}}
                   for label in urls}
        for label, row in results.items():
            progress(f"  {label}: wave p50 {row['wave']['p50_ms']:.3f} ms, "
                     f"belief p50 {row['belief_write']['p50_ms']:.3f} ms")
        return results
    finally:
        for rippl in handles.values():
            rippl.close()
        replica.stop()
        primary.stop()


# -- 3. scale-out over shards ------------------------------------------------------------------

CLIENT = """
import json, sys, time
from rippl_core import Rippl
url, names, seconds = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])
handles = [Rippl.open(url=url, graph=name) for name in names]
for h in handles:
    assert h.check("ACT-001").allowed
print("ready", flush=True)
sys.stdin.readline()
count, end = 0, time.monotonic() + seconds
while time.monotonic() < end:
    for h in handles:
        h.check("ACT-001")
    count += len(handles)
print(count, flush=True)
"""


def throughput(url: str, tenants: int, clients: int, seconds: float) -> dict[str, Any]:
    names = [f"scale-{uuid.uuid4().hex[:6]}-{i}" for i in range(tenants)]
    for name in names:
        with Rippl.open(url=url, graph=name) as rippl:
            rippl.load(INCIDENT)
    share = [names[i::clients] for i in range(clients)]
    procs = [subprocess.Popen([sys.executable, "-c", CLIENT, url, json.dumps(part), str(seconds)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for part in share]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:  # start together
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    counts = [int(proc.communicate(timeout=seconds + 120)[0].strip()) for proc in procs]
    return {"tenants": tenants, "clients": clients, "seconds": seconds, "checks": sum(counts),
            "checks_per_s": round(sum(counts) / seconds, 1)}


def bench_scale(tenants: int, clients: int, seconds: float, repeats: int) -> dict[str, Any]:
    """Each deployment `repeats` times, in turns (server, 1 shard, 3 shards, server...), so that
    the load of a shared machine weighs on all alike; the median run of each is reported."""
    starts = {"server": start_falkordb_server, "cluster_1": lambda: start_falkordb_cluster(shards=1),
              "cluster_3": lambda: start_falkordb_cluster(shards=3)}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in starts}
    for _ in range(repeats):
        for name, start in starts.items():
            deployment = start()
            try:
                runs[name].append(throughput(deployment.url, tenants, clients, seconds))
            finally:
                deployment.stop()
            progress(f"  {name}: {runs[name][-1]['checks_per_s']} checks/s")
    results: dict[str, Any] = {}
    for name, rows in runs.items():
        ordered = sorted(rows, key=lambda row: row["checks_per_s"])
        results[name] = {**ordered[len(ordered) // 2],
                         "all_runs_checks_per_s": [row["checks_per_s"] for row in rows]}
    results["ratio_3_to_1"] = round(results["cluster_3"]["checks_per_s"]
                                    / results["cluster_1"]["checks_per_s"], 2)
    return results


# -- report ------------------------------------------------------------------------------------

def markdown(results: dict[str, Any]) -> str:
    m, f, d, s = results["machine"], results["failover"], results["durability"], results["scale"]
    cores = m.get("logical_cores")
    check, write = f["kill_to_allowed_check_s"], f["kill_to_acked_write_s"]
    wait, none = d["wait_1"], d["no_wait"]

    def row(label: str, key: str) -> str:
        a, b = none[key], wait[key]
        return (f"| {label} | {a['p50_ms']:.3f} / {a['p99_ms']:.3f} | {b['p50_ms']:.3f} / "
                f"{b['p99_ms']:.3f} | +{b['p50_ms'] - a['p50_ms']:.3f} |")

    lines = [
        SECTION, "",
        f"Recorded {results['recorded_at'][:10]} by `uv run python bench/scripts/bench_topologies.py` "
        f"on {m.get('cpu')} ({cores} cores, {m.get('memory_gb')} GB); every process (FalkorDB "
        "servers, Sentinels, clients) on this one machine, over loopback; raw numbers in "
        f"`bench/results/{'quick/' if results['quick'] else ''}topologies.json`.", "",
        f"**Failover** ({f['rounds']} SIGKILLs of the primary; {f['replicas']} replicas, "
        f"{f['sentinels']} Sentinels, `down-after-milliseconds {f['down_after_ms']}`, "
        f"`failover-timeout {f['failover_timeout_ms']}`; a writer retracting claims and a guard "
        "checking every 5 ms through `falkordb+sentinel://`):", "",
        "| measure | result |", "|---|---|",
        f"| acknowledged retractions | {f['acked']:,} |",
        f"| acknowledged retractions lost | **{f['lost']}** |",
        f"| receipt chains verified after each failover | {'all' if f['chains_ok'] else 'NOT all'} |",
        f"| kill -> first allowed check, p50 / max | {check['p50']} s / {check['max']} s |",
        f"| kill -> first acknowledged write, p50 / max | {write['p50']} s / {write['max']} s |",
        f"| checks denied in the gap (fail closed), all rounds | {f['denied_checks']:,} |", "",
        "The gap is Sentinel's: `down-after-milliseconds` (1 s here) before the primary is "
        "subjectively down, the vote, the promotion, and the next connection asking Sentinel "
        "again. Below 1000 ms, Sentinel (which pings every second) failed over healthy new "
        "primaries on this machine, so 1 s is the floor; with Redis's default (30 s) the "
        "window is about 29 s longer. During the gap every check is denied with a reason "
        "saying a failover may be in progress; nothing on the client side is restarted.", "",
        "**Cost of durability** (a server with one replica; p50 / p99 in ms; the wave is the "
        "retraction or the reinstatement of CLM-001 of the demo incident, 17 dependents; the two "
        "columns interleaved write by write):", "",
        "| write | not waiting (`?replicas=0`) | acknowledged after `WAIT 1` (default) | p50 cost |",
        "|---|---|---|---|",
        row("wave", "wave"), row("belief write (`believe`)", "belief_write"), "",
        "`WAIT 1` adds to every acknowledged write the time the replica takes to receive and "
        "apply it (FalkorDB replicates a write as its effects, the changed nodes and edges), so "
        "the cost grows with the size of the write; reads (checks) do not wait.", "",
        f"**Scale-out** ({s['cluster_3']['tenants']} tenants with the demo incident each, "
        f"{s['cluster_3']['clients']} client processes checking round robin for "
        f"{s['cluster_3']['seconds']:.0f} s; aggregate checks per second; each deployment run "
        f"{len(s['cluster_3']['all_runs_checks_per_s'])} times, in turns):", "",
        "| deployment | checks/s (median run) | every run, in turns |", "|---|---|---|",
        *(f"| {label} | {s[key]['checks_per_s']:,.0f} | "
          f"{', '.join(f'{x:,.0f}' for x in s[key]['all_runs_checks_per_s'])} |"
          for label, key in (("one FalkorDB server", "server"), ("Redis Cluster, 1 shard", "cluster_1"),
                             ("Redis Cluster, 3 shards", "cluster_3"))), "",
        f"3 shards / 1 shard: **{s['ratio_3_to_1']}x**. Caveat: every shard and all "
        f"{s['cluster_3']['clients']} client processes share this machine's {cores} cores, so this "
        "measures tenants spread over server processes on one machine, not over machines: it "
        "cannot show the gain of adding machines, and the spread between runs is the shared "
        "machine's (other work ran on it; load average at the start: "
        f"{m.get('load_average_start')}). With one machine per shard, each shard brings its "
        "own cores and memory, and a tenant's checks and writes touch only its own shard (its "
        "one slot).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = options(__doc__, quick="3 failover rounds, fewer samples", docs="--no-docs").parse_args(argv)
    machine = describe()
    progress("durability cost (WAIT 1 vs none)")
    durability = bench_durability(50 if args.quick else 300)
    progress("scale-out (1 vs 3 shards)")
    scale = bench_scale(6 if args.quick else 30, 2 if args.quick else 4, 3.0 if args.quick else 10.0,
                        1 if args.quick else 3)
    progress("failover")
    failover = bench_failover(3 if args.quick else 20)
    results = {"recorded_at": datetime.now(UTC).isoformat(), "quick": args.quick,
               "machine": machine, "failover": failover, "durability": durability, "scale": scale}
    publish(results, results_file("topologies", quick=args.quick), markdown, heading=SECTION,
            docs=not (args.quick or args.no_docs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
