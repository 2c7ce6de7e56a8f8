"""The latency and scale measurements. Each suite returns plain JSON-able dicts; nothing prints.

* `scale`: one generated graph of a given size, loaded through the core `load` in big batches
  into each backend; then pre-flight `check` (allowed, denied, and "survivors" that are allowed
  although a premise upstream was retracted, thanks to an alternative justification), `check` of
  a tool call, `blast_radius`, and a small retraction wave; beside them the article's `*1..5`
  query on the same FalkorDB graph, an SQLite recursive CTE and networkx on the same data, with
  how often each agrees with Rippl's verdict. RSS of the server before and after loading.
* `lattice`: blast radius on a diamond lattice of depth 30 (exact, any depth) against `*1..N`.
* `waves`: retract / reinstate / propose / approve / reject with 10k dependents.
* `receipts`: what a receipt costs to seal and append, and `verify_receipts` throughput.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rippl_bench import baselines
from rippl_bench.generate import Generated, batches, causal_graph, diamond_lattice, fan_out
from rippl_bench.lab import Backend
from rippl_bench.measure import clock, median, sample, summary
from rippl_core.client import Rippl
from rippl_core.models import ToolCall
from rippl_core.review import cypher as review_cypher
from rippl_core.review import log, merkle
from rippl_core.review.receipts import GENESIS, leaf_hash, seal
from rippl_core.vocabulary import State

type Step = Callable[[str], None]
BY = "bench"


@dataclass
class Config:
    """What a run measures, and how hard."""

    quick: bool = False
    sizes: list[int] = field(default_factory=lambda: [1_000, 100_000, 1_000_000])
    backends: tuple[str, ...] = ("embedded", "server")
    seed: int = 7
    batch_nodes: int = 25_000  # nodes per `load` call (each one atomic commit)
    check_samples: int = 500  # per category
    blast_samples: int = 200
    retract_fraction: float = 0.002  # of the claims, retracted before the checks
    max_retractions: int = 200
    literal_samples: int = 20  # the article query with its filter inline (a scan of every claim)
    literal_timeout_ms: int = 10_000
    lattice_depth: int = 30
    lattice_n: tuple[int, ...] = (5, 10, 15, 20, 25, 30)
    lattice_timeout_ms: int = 10_000
    lattice_runs: int = 20
    fanout: int = 10_000
    wave_repeats: int = 3
    receipts: int = 10_000
    signed_receipts: int = 2_000
    verify_runs: int = 3
    ablation_nodes: int = 2_000
    ablation_claims: int = 300  # claims with dependents evaluated on the generated graph
    ablation_ks: tuple[int, ...] = (5, 10)

    @classmethod
    def quick_config(cls) -> Config:
        return cls(quick=True, sizes=[1_000, 20_000], check_samples=200, blast_samples=100,
                   lattice_timeout_ms=2_000, lattice_runs=10, wave_repeats=2, receipts=1_000,
                   signed_receipts=300, verify_runs=2, ablation_nodes=600, ablation_claims=120)

    @classmethod
    def tiny_config(cls) -> Config:
        """For tests: everything runs, on toy sizes."""
        return cls(quick=True, sizes=[120], batch_nodes=50, check_samples=10, blast_samples=5,
                   lattice_depth=8, lattice_n=(3, 5, 8), lattice_timeout_ms=2_000,
                   lattice_runs=2, fanout=40, wave_repeats=1, receipts=6, signed_receipts=4,
                   verify_runs=1, ablation_nodes=120, ablation_claims=15)


@contextlib.contextmanager
def cpu_split(backend: Backend) -> Iterator[dict[str, float]]:
    """Where the time of the block went: wall clock, CPU of this (client) process, CPU of the
    FalkorDB server process. Filled in when the block ends."""
    split: dict[str, float] = {}
    wall, client, server = time.perf_counter(), time.process_time(), backend.cpu_s()
    yield split
    split.update(wall_s=time.perf_counter() - wall, client_cpu_s=time.process_time() - client,
                 server_cpu_s=backend.cpu_s() - server)


# ----------------------------------------------------------------------------------------- scale


@dataclass
class ScaleData:
    """A generated graph with the baselines built on it and the samples every backend measures."""

    size: int
    graph: Generated
    retract: list[str]
    sqlite: baselines.SqliteGraph | None = None
    nx: baselines.NetworkxGraph | None = None
    out: set[str] = field(default_factory=set)  # nodes Rippl put OUT (from the first backend)
    samples: dict[str, list[str]] = field(default_factory=dict)
    blast_claims: list[str] = field(default_factory=list)
    build_s: dict[str, float] = field(default_factory=dict)


def prepare_scale(size: int, config: Config) -> ScaleData:
    rng = random.Random(config.seed + size)
    seconds, graph = clock(lambda: causal_graph(size, seed=config.seed + size))
    claims = graph.ids("Claim")
    count = min(len(claims) // 10 or 1, max(10, min(config.max_retractions,
                                                    round(len(claims) * config.retract_fraction))))
    data = ScaleData(size, graph, rng.sample(claims, count))
    data.build_s["generate"] = seconds
    data.blast_claims = rng.sample(claims, min(config.blast_samples, len(claims)))
    return data


def load_graph(rippl: Rippl, graph: Generated, batch_nodes: int) -> dict[str, Any]:
    """Load through the core `load`, batch after batch; the throughput of the whole."""
    per_batch = []
    start = time.perf_counter()
    for batch in batches(graph, batch_nodes):
        seconds, report = clock(lambda batch=batch: rippl.load(batch))
        per_batch.append({"nodes": len(report.created), "edges": report.edges, "seconds": seconds})
    total = time.perf_counter() - start
    nodes = sum(b["nodes"] for b in per_batch)
    edges = sum(b["edges"] for b in per_batch)
    return {"nodes": nodes, "edges": edges, "seconds": total, "batches": len(per_batch),
            "batch_nodes": batch_nodes, "nodes_per_s": nodes / total if total else None,
            "edges_per_s": edges / total if total else None,
            "slowest_batch_s": max(b["seconds"] for b in per_batch)}


def _choose_samples(data: ScaleData, config: Config, *, scan_limit: int = 200_000) -> None:
    """Actions to check: denied (OUT), survivors (IN although a retracted claim is upstream) and
    allowed (IN, nothing retracted upstream), the same for every backend and baseline."""
    rng = random.Random(config.seed * 31 + data.size)
    assert data.nx is not None
    actions = data.graph.ids("Action")
    denied = [a for a in actions if a in data.out]
    candidates = [a for a in actions if a not in data.out]
    rng.shuffle(candidates)
    survivors: list[str] = []
    clean: list[str] = []
    for action in candidates[:scan_limit]:
        if data.nx.blocked(action):
            if len(survivors) < config.check_samples:
                survivors.append(action)
        elif len(clean) < config.check_samples:
            clean.append(action)
        if len(clean) >= config.check_samples and len(survivors) >= config.check_samples:
            break
    data.samples = {"allowed": clean,
                    "denied": rng.sample(denied, min(len(denied), config.check_samples)),
                    "survivor": survivors}


def _verdict_agreement(truth: dict[str, bool], answers: dict[str, bool]) -> dict[str, int]:
    """How a baseline's 'blocked' answers compare with Rippl's denials."""
    agree = sum(1 for a, denied in truth.items() if answers[a] == denied)
    wrongly_allowed = sum(1 for a, denied in truth.items() if denied and not answers[a])
    wrongly_denied = sum(1 for a, denied in truth.items() if not denied and answers[a])
    return {"checked": len(truth), "agree": agree, "wrongly_allowed": wrongly_allowed,
            "wrongly_denied": wrongly_denied}


def scale_backend(backend: Backend, data: ScaleData, config: Config, step: Step) -> dict[str, Any]:
    """Load the graph into one backend and measure everything Rippl does there."""
    out: dict[str, Any] = {"rss_empty_mb": backend.rss_mb()}
    rippl = backend.open(f"scale-{data.size}")
    step(f"{data.size:,} nodes: load into {backend.name}")
    with cpu_split(backend) as split:
        out["load"] = load_graph(rippl, data.graph, config.batch_nodes)
    out["load"]["cpu"] = split
    out["rss_loaded_mb"] = backend.rss_mb()
    step(f"{data.size:,} nodes: retract and check on {backend.name}")
    wave_s: list[float] = []
    sizes: list[float] = []
    changed: set[str] = set()
    for claim in data.retract:
        seconds, wave = clock(lambda claim=claim: rippl.retract(claim, reason="bench", by=BY))
        wave_s.append(seconds)
        went_out = {t.id for t in wave.transitions if t.after is State.OUT}
        sizes.append(len(went_out))
        changed |= went_out
    out["retract_small"] = summary(wave_s) | {"median_out": median(sizes),
                                              "max_out": max(sizes, default=0)}
    if not data.out:
        data.out = changed
        _choose_samples(data, config)
    out["same_wave_as_first_backend"] = changed == data.out

    # steady state: a bulk load makes the embedded server rewrite its append-only file in a
    # forked child; reads are measured once that is over (the wait and any later one recorded)
    out["settle_wait_s"] = backend.settle()
    before = backend.background_persistence()
    check: dict[str, Any] = {}
    truth: dict[str, bool] = {}
    for category, ids in data.samples.items():
        if not ids:
            check[category] = {"n": 0}
            continue
        samples, verdicts = sample(rippl.check, ids)
        check[category] = summary(samples)
        check[category]["unexpected_verdicts"] = sum(
            1 for v in verdicts if v.allowed == (category == "denied"))
        truth.update({a: not v.allowed for a, v in zip(ids, verdicts, strict=True)})
    calls = [ToolCall(name=_tool_of(data.graph, a), args={"target": _target_of(data.graph, a),
                                                          "ref": a})
             for a in data.samples["allowed"]]
    if calls:
        samples, verdicts = sample(rippl.check, calls)
        check["tool_call"] = summary(samples) | {
            "unresolved": sum(1 for v in verdicts if v.target is None)}
    out["check"] = check
    after = backend.background_persistence()
    out["background_during_checks"] = {
        "aof_rewrites": after["aof_rewrites"] - before["aof_rewrites"],
        "snapshots": after["rdb_saves"] - before["rdb_saves"]}

    article: dict[str, Any] = {}
    answers: dict[str, bool] = {}
    for category, ids in data.samples.items():
        if not ids:
            continue
        samples, rows = sample(lambda a: baselines.run_query(
            rippl.redis, rippl.keys.graph, baselines.article_upstream(a, 5)), ids)
        article[category] = summary(samples)
        answers.update({a: bool(r) for a, r in zip(ids, rows, strict=True)})
    article["agreement"] = _verdict_agreement(truth, answers)
    if backend.name == "embedded" and data.samples["allowed"]:
        literal: list[float] = []
        for action in data.samples["allowed"][:config.literal_samples]:
            try:
                seconds, _ = clock(lambda action=action: baselines.run_query(
                    rippl.redis, rippl.keys.graph, baselines.article_upstream_literal(action, 5),
                    timeout_ms=config.literal_timeout_ms))
                literal.append(seconds)
            except baselines.TimedOut:
                article["literal_timeouts"] = article.get("literal_timeouts", 0) + 1
        article["literal_allowed"] = summary(literal)
    out["article_check"] = article
    out["verdicts"] = truth

    step(f"{data.size:,} nodes: blast radius on {backend.name}")
    samples, reached = sample(rippl.blast_radius, data.blast_claims, warmup=5)
    out["blast_radius"] = summary(samples) | {
        "median_reached": median([len(r) for r in reached]),
        "max_reached": max((len(r) for r in reached), default=0)}
    exact = {c: {n.id for n in r} for c, r in zip(data.blast_claims, reached, strict=True)}
    samples, rows = sample(lambda c: baselines.run_query(
        rippl.redis, rippl.keys.graph, baselines.article_downstream(c, 5)), data.blast_claims, warmup=5)
    found = {c: set(r[0][0]) if r else set() for c, r in zip(data.blast_claims, rows, strict=True)}
    out["article_blast"] = summary(samples) | _misses(exact, found)
    out["exact_blast"] = {c: sorted(ids) for c, ids in exact.items()}
    out["rss_after_mb"] = backend.rss_mb()
    return out


def _misses(exact: dict[str, set[str]], found: dict[str, set[str]]) -> dict[str, Any]:
    missed = [len(exact[c] - found[c]) for c in exact]
    total = sum(len(e) for e in exact.values())
    return {"nodes_missed": sum(missed), "nodes_exact": total,
            "roots_with_misses": sum(1 for m in missed if m), "roots": len(missed),
            "extra": sum(len(found[c] - exact[c]) for c in exact)}


def _tool_of(graph: Generated, action: str) -> str:
    from rippl_bench.generate import TOOLS

    return TOOLS[int(action[1:]) % len(TOOLS)]


def _target_of(graph: Generated, action: str) -> str:
    index = int(action[1:]) - 1
    return str(graph.spec["actions"][index]["args"]["target"])


def scale_baselines(data: ScaleData, verdicts: dict[str, bool], exact: dict[str, list[str]],
                    step: Step) -> dict[str, Any]:
    """SQLite recursive CTE and networkx on the same graph, samples and retractions."""
    assert data.sqlite is not None and data.nx is not None
    out: dict[str, Any] = {"build_s": dict(data.build_s)}
    step(f"{data.size:,} nodes: SQLite and networkx baselines")
    data.sqlite.retract(data.retract)
    for name, impl in (("sqlite", data.sqlite), ("networkx", data.nx)):
        result: dict[str, Any] = {}
        answers: dict[str, bool] = {}
        for category, ids in data.samples.items():
            if not ids:
                continue
            samples, blocked = sample(impl.blocked, ids)
            result[category] = summary(samples)
            answers.update(dict(zip(ids, blocked, strict=True)))
        result["agreement"] = _verdict_agreement(verdicts, answers)
        samples, found = sample(impl.downstream, data.blast_claims, warmup=5)
        result["blast"] = summary(samples) | _misses(
            {c: set(exact[c]) for c in data.blast_claims},
            dict(zip(data.blast_claims, found, strict=True)))
        out[name] = result
    return out


def build_baselines(data: ScaleData) -> None:
    seconds, data.sqlite = clock(lambda: baselines.SqliteGraph(data.graph.kinds, data.graph.edges))
    data.build_s["sqlite"] = seconds
    seconds, data.nx = clock(lambda: baselines.NetworkxGraph.build(data.graph.kinds,
                                                                   data.graph.edges))
    data.build_s["networkx"] = seconds
    data.nx.retracted = set(data.retract)


# --------------------------------------------------------------------------------------- lattice


def lattice(backend: Backend, config: Config) -> dict[str, Any]:
    """Blast radius of a diamond lattice's root, exact, against the `*1..N` query."""
    graph = diamond_lattice(config.lattice_depth)
    rippl = backend.open("lattice")
    rippl.load(graph.spec)
    root = "L-root"
    samples, reached = sample(lambda _: rippl.blast_radius(root), range(config.lattice_runs),
                              warmup=3)
    below = len(graph.kinds) - 2  # everything but the source and the root
    out: dict[str, Any] = {"depth": config.lattice_depth, "nodes_below_root": below,
                           "paths_to_bottom": 2 ** config.lattice_depth,
                           "rippl": summary(samples) | {"reached": len(reached[-1]),
                                                        "deepest": max(r.depth for r in reached[-1])}}
    article = []
    for n in config.lattice_n:
        query = baselines.article_downstream(root, n)
        try:
            seconds, rows = clock(lambda query=query: baselines.run_query(
                rippl.redis, rippl.keys.graph, query, timeout_ms=config.lattice_timeout_ms))
            found = len(rows[0][0]) if rows else 0
            article.append({"n": n, "ms": seconds * 1000, "reached": found, "missed": below - found,
                            "timed_out": False})
        except baselines.TimedOut:
            article.append({"n": n, "ms": None, "reached": None, "missed": None, "timed_out": True})
    out["article"] = article
    out["timeout_ms"] = config.lattice_timeout_ms
    return out


def lattice_baselines(config: Config) -> dict[str, Any]:
    graph = diamond_lattice(config.lattice_depth)
    out = {}
    sqlite = baselines.SqliteGraph(graph.kinds, graph.edges)
    nxg = baselines.NetworkxGraph.build(graph.kinds, graph.edges)
    for name, impl in (("sqlite", sqlite), ("networkx", nxg)):
        samples, found = sample(lambda _, impl=impl: impl.downstream("L-root"),
                                range(config.lattice_runs), warmup=3)
        out[name] = summary(samples) | {"reached": len(found[-1])}
    sqlite.close()
    return out


# ----------------------------------------------------------------------------------------- waves


def waves(backend: Backend, config: Config) -> dict[str, Any]:
    """Retract, reinstate, propose, approve and reject a claim with `fanout` dependents."""
    graph = fan_out(config.fanout)
    rippl = backend.open("waves")
    load_s, _ = clock(lambda: rippl.load(graph.spec))
    root = "F-root"
    times: dict[str, list[float]] = {k: [] for k in ("retract", "reinstate", "propose", "approve",
                                                     "reject")}
    changed: dict[str, list[int]] = {k: [] for k in times}
    splits: list[dict[str, float]] = []
    for _ in range(config.wave_repeats):
        with cpu_split(backend) as split:
            seconds, wave = clock(lambda: rippl.retract(root, reason="bench", by=BY))
        splits.append(split)
        times["retract"].append(seconds)
        changed["retract"].append(sum(1 for t in wave.transitions if t.after is State.OUT))
        seconds, wave = clock(lambda: rippl.reinstate(root, reason="bench", by=BY))
        times["reinstate"].append(seconds)
        changed["reinstate"].append(sum(1 for t in wave.transitions if t.after is State.IN))
        seconds, item = clock(lambda: rippl.propose_retraction(root, reason="bench", by="monitor"))
        times["propose"].append(seconds)
        changed["propose"].append(len(item.at_risk))
        seconds, receipt = clock(lambda item=item: rippl.approve(item.id, by="reviewer"))
        times["approve"].append(seconds)
        changed["approve"].append(sum(1 for a in receipt.body.get("affected", [])
                                      if a["after"] == State.OUT.value))
        rippl.reinstate(root, reason="bench", by=BY)
        item = rippl.propose_retraction(root, reason="bench", by="monitor")
        seconds, receipt = clock(lambda item=item: rippl.reject(item.id, by="reviewer"))
        times["reject"].append(seconds)
        changed["reject"].append(sum(1 for a in receipt.body.get("affected", [])
                                     if a["after"] == State.IN.value))
    out = {"dependents": config.fanout, "load_s": load_s, "repeats": config.wave_repeats,
           **{op: {"median_s": median(ts), "runs_s": ts, "nodes_changed": changed[op]}
              for op, ts in times.items()},
           "rss_mb": backend.rss_mb()}
    out["retract"]["cpu"] = {key: median([s[key] for s in splits]) for key in splits[0]}
    return out


# -------------------------------------------------------------------------------------- receipts


def _tiny(rippl: Rippl) -> str:
    rippl.load({"sources": [{"id": "R-src", "title": "receipt source"}],
                "claims": [{"id": "R-claim", "text": "A claim that flips", "sources": ["R-src"]}],
                "decisions": [{"id": "R-dec", "title": "A decision on it", "premises": ["R-claim"]}],
                "actions": [{"id": "R-act", "title": "An action", "decisions": ["R-dec"]}]})
    return "R-claim"


def _chain(rippl: Rippl, count: int, signing_key: Ed25519PrivateKey | None = None) -> list[float]:
    """Append `count` receipts through the API (alternating retract and reinstate)."""
    claim = _tiny(rippl)
    latencies = []
    for i in range(count):
        op = rippl.retract if i % 2 == 0 else rippl.reinstate
        seconds, _ = clock(lambda op=op: op(claim, reason="flip", by=BY, signing_key=signing_key))
        latencies.append(seconds)
    return latencies


def _verify(rippl: Rippl, runs: int) -> dict[str, Any]:
    seconds = []
    result = None
    for _ in range(runs):
        s, result = clock(rippl.verify_receipts)
        seconds.append(s)
    assert result is not None
    best = median(seconds)
    return {"receipts": result.count, "ok": result.ok, "median_s": best,
            "receipts_per_s": result.count / best if best else None}


def receipts(backend: Backend, config: Config) -> dict[str, Any]:
    """Seal cost (CPU), append cost (the receipt's own query, at the head of a short and a long
    chain), small-wave latency as the chain grows, and verify_receipts throughput."""
    body = {"kind": "retraction", "seq": 1, "prev": GENESIS, "review": None, "claim": "CLM-001",
            "actor": "alice", "at": "2026-10-08T09:00:00+00:00", "reason": "disk errors",
            "affected": [{"id": f"N{i:04d}", "before": "IN", "after": "OUT"} for i in range(10)]}
    key = Ed25519PrivateKey.generate()
    unsigned, _ = sample(lambda _: seal(body, None), range(2000), warmup=50)
    signed, _ = sample(lambda _: seal(body, key), range(500), warmup=20)
    out: dict[str, Any] = {"seal_unsigned": summary(unsigned), "seal_signed": summary(signed)}

    rippl = backend.open("receipts")
    latencies = _chain(rippl, config.receipts)
    window = max(1, min(200, len(latencies) // 5))
    out["small_wave_first"] = summary(latencies[:window])
    out["small_wave_last"] = summary(latencies[-window:])
    out["chain_length"] = len(latencies)
    out["verify"] = _verify(rippl, config.verify_runs)
    out["append_query_short_chain"] = _append_cost(backend, 1)
    out["append_query_long_chain"] = _append_cost(backend, config.receipts)

    signed_graph = backend.open("receipts-signed")
    _chain(signed_graph, config.signed_receipts, key)
    out["verify_signed"] = _verify(signed_graph, config.verify_runs)
    return out


def _append_cost(backend: Backend, length: int) -> dict[str, Any]:
    """The receipt's own share of a commit: read the chain head (with the Merkle tree's frontier)
    and append one receipt (with the tree nodes it completes), as the core does inside a wave, on
    a scratch chain already `length` receipts long."""
    rippl = backend.open(f"receipts-scratch-{length}")
    prev, frontier = GENESIS, []
    for start in range(1, length + 1, 2000):
        for seq in range(start, min(start + 2000, length + 1)):
            query, prev, frontier = _append_query(seq, prev, frontier)
            rippl.redis.execute_command("GRAPH.QUERY", rippl.keys.graph, query.command(),
                                        "--compact")

    def append(i: int) -> None:
        head = baselines.run_query(rippl.redis, rippl.keys.graph, review_cypher.head(BY))
        seq, prev, _, frontier = head[0][:4]
        query, _, _ = _append_query(int(seq) + 1, str(prev),
                                    [bytes.fromhex(h) for h in frontier or []])
        rippl.redis.execute_command("GRAPH.QUERY", rippl.keys.graph, query.command(), "--compact")

    samples, _ = sample(append, range(200), warmup=10)
    with contextlib.suppress(Exception):
        rippl.drop()
    return summary(samples) | {"chain_length": length}


def _append_query(seq: int, prev: str, frontier: list[bytes]) -> tuple[Any, str, list[bytes]]:
    """The query appending receipt `seq` after `prev` to a tree with this frontier, the new head
    hash and the new frontier."""
    body = {"kind": "retraction", "seq": seq, "prev": prev, "review": None, "claim": "X",
            "actor": BY, "at": "2026-10-08T09:00:00+00:00",
            "affected": [{"id": "X", "before": "IN", "after": "OUT"}]}
    props = {"id": f"RCP-{seq:08d}", "seq": seq, "kind": "retraction", "actor": BY, **seal(body, None)}
    frontier, created = merkle.frontier_append(frontier, seq - 1, leaf_hash(props))
    tree = {"size": seq, "root": merkle.frontier_root(frontier).hex(),
            "frontier": [h.hex() for h in frontier]}
    nodes = [{"id": log.node_id(level, index), "h": h.hex()} for level, index, h in created]
    return review_cypher.append_receipt(props, tree, nodes), props["hash"], frontier


def blast_sizes(exact: dict[str, Sequence[str]]) -> list[int]:
    return sorted(len(v) for v in exact.values())
