"""Invalidation recall: when a claim is retracted, which memories must be revisited?

Ground truth for a claim is every node downstream of it along the graph's declared edges (what
rests on it, at any depth). Each method is asked the same question:

* Rippl's `blast_radius` (a walk of the causal edges: complete by construction);
* an SQLite recursive CTE over the same edges (also structural, also complete);
* the Rippl-article `*1..5` Cypher query (structural but depth-bounded);
* BM25 over the node texts, the claim's text as the query, top k;
* dense retrieval: cosine similarity of all-MiniLM-L6-v2 sentence embeddings, top k.

The candidates a retriever ranks are every claim, decision and action except the claim itself
(sources can never be downstream, so they are left out in the retrievers' favour); a second,
more generous variant ranks decisions and actions only, so near-duplicate claims cannot crowd the
top k (it can then never return a derived claim, which is also a dependent). For each claim
we compute recall, precision and misses (dependents not returned), then macro-average over the
claims that have at least one dependent. A top-k retriever cannot return more than k nodes, so we
also report the ceiling (the best recall any top-k list could reach) and R-precision (recall when
the retriever is told how many dependents there are and returns exactly that many).
"""

from __future__ import annotations

import random
import re
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rippl_bench import baselines
from rippl_bench.generate import causal_graph
from rippl_core.causal.spec import node_specs, read_spec
from rippl_core.client import Rippl

STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "is",
    "it", "its", "of", "on", "or", "that", "the", "their", "this", "to", "was", "were", "will",
    "with", "after", "before", "than", "then", "into", "over", "under", "not", "no", "all", "any",
    "per",
))


def tokenize(text: str) -> list[str]:
    return [t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in STOPWORDS]


@dataclass
class Corpus:
    """A graph as the ablation sees it: texts, kinds and declared edges."""

    name: str
    texts: dict[str, str]
    kinds: dict[str, str]
    edges: list[tuple[str, str]]
    spec: dict[str, Any] | str | Path
    claims: list[str] = field(default_factory=list)  # the claims evaluated

    def downstream(self) -> dict[str, set[str]]:
        """Every claim's dependents: everything reachable along the edges."""
        down: dict[str, list[str]] = {}
        for a, b in self.edges:
            down.setdefault(a, []).append(b)
        truth = {}
        for claim in (n for n, k in self.kinds.items() if k == "Claim"):
            seen: set[str] = set()
            queue = deque(down.get(claim, ()))
            while queue:
                node = queue.popleft()
                if node in seen or node == claim:
                    continue
                seen.add(node)
                queue.extend(down.get(node, ()))
            truth[claim] = seen
        return truth


def incident_corpus(path: Path) -> Corpus:
    """The demo incident graph (examples/incident.yaml)."""
    spec = read_spec(path)
    texts, kinds, edges = {}, {}, []
    for node in node_specs(spec):
        assert node.id is not None
        texts[node.id], kinds[node.id] = node.text, node.kind.value
        edges.extend((a, node.id) for j in node.justifications for a in j)
    return Corpus("incident", texts, kinds, edges, path)


def generated_corpus(nodes: int, seed: int) -> Corpus:
    graph = causal_graph(nodes, seed=seed)
    return Corpus(f"generated-{nodes}", graph.texts, graph.kinds, graph.edges, graph.spec)


@dataclass
class Scores:
    recall: list[float] = field(default_factory=list)
    precision: list[float] = field(default_factory=list)
    misses: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def add(self, found: set[str], truth: set[str], seconds: float) -> None:
        hit = len(found & truth)
        self.recall.append(hit / len(truth))
        self.precision.append(hit / len(found) if found else 0.0)
        self.misses.append(len(truth - found))
        self.seconds.append(seconds)

    def report(self) -> dict[str, Any]:
        n = len(self.recall)
        return {"claims": n, "recall": float(np.mean(self.recall)),
                "precision": float(np.mean(self.precision)),
                "misses_per_claim": float(np.mean(self.misses)),
                "complete": sum(1 for m in self.misses if m == 0) / n if n else None,
                "median_ms": float(np.median(self.seconds) * 1000)}


class Retriever:
    """Ranks candidate nodes by similarity to a query text."""

    def __init__(self, name: str, ids: Sequence[str],
                 scorer: Callable[[str], np.ndarray]) -> None:
        self.name, self.ids, self.scorer = name, list(ids), scorer
        self.position = {node: i for i, node in enumerate(self.ids)}

    def top(self, query_id: str, query: str, k: int) -> list[str]:
        scores = np.asarray(self.scorer(query), dtype=np.float64).copy()
        if query_id in self.position:
            scores[self.position[query_id]] = -np.inf
        k = min(k, len(self.ids) - (1 if query_id in self.position else 0))
        best = np.argsort(-scores, kind="stable")[:k]
        return [self.ids[i] for i in best]


def bm25_retriever(ids: Sequence[str], texts: Sequence[str]) -> Retriever:
    from rank_bm25 import BM25Okapi

    index = BM25Okapi([tokenize(t) or ["_"] for t in texts])
    return Retriever("bm25", ids, lambda query: index.get_scores(tokenize(query)))


def dense_retriever(ids: Sequence[str], texts: Sequence[str], model: Any,
                    known: dict[str, np.ndarray] | None = None) -> Retriever:
    """Cosine top-k over sentence embeddings (unit vectors: a dot product). `known` caches the
    embedding of every text already encoded."""
    known = {} if known is None else known
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    if missing:
        known.update(zip(missing, model.encode(missing), strict=True))
    vectors = np.stack([known[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)

    def scores(query: str) -> np.ndarray:
        vector = known.get(query)
        if vector is None:
            vector = known[query] = model.encode([query])[0]
        return vectors @ vector

    return Retriever("dense", ids, scores)


def overlap(corpus: Corpus, truth: dict[str, set[str]], claims: Sequence[str], seed: int
            ) -> dict[str, float]:
    """How often a claim and a dependent share a content word, against a random other node."""
    rng = random.Random(seed)
    candidates = [n for n, k in corpus.kinds.items() if k != "Source"]
    shared_dep, pairs_dep, shared_other, pairs_other = 0, 0, 0, 0
    for claim in claims:
        words = set(tokenize(corpus.texts[claim]))
        for node in truth[claim]:
            pairs_dep += 1
            shared_dep += bool(words & set(tokenize(corpus.texts[node])))
        for node in rng.sample(candidates, min(len(candidates), max(1, len(truth[claim])))):
            if node == claim or node in truth[claim]:
                continue
            pairs_other += 1
            shared_other += bool(words & set(tokenize(corpus.texts[node])))
    return {"dependents_sharing_a_word": shared_dep / pairs_dep if pairs_dep else 0.0,
            "non_dependents_sharing_a_word": shared_other / pairs_other if pairs_other else 0.0}


def evaluate(corpus: Corpus, rippl: Rippl, ks: Sequence[int], model: Any | None,
             model_error: str | None, max_claims: int | None, seed: int) -> dict[str, Any]:
    """Every method's recall/precision/misses on one corpus, with Rippl's graph loaded."""
    truth = corpus.downstream()
    claims = sorted(c for c, deps in truth.items() if deps)
    if max_claims is not None and len(claims) > max_claims:
        claims = sorted(random.Random(seed).sample(claims, max_claims))
    corpus.claims = claims
    rippl.load(corpus.spec)

    structural: dict[str, Scores] = {"rippl": Scores(), "sqlite_cte": Scores(),
                                     "cypher_1_5": Scores()}
    sqlite = baselines.SqliteGraph(corpus.kinds, corpus.edges)
    for claim in claims:
        start = time.perf_counter()
        found = {r.id for r in rippl.blast_radius(claim)}
        structural["rippl"].add(found, truth[claim], time.perf_counter() - start)
        start = time.perf_counter()
        found = sqlite.downstream(claim)
        structural["sqlite_cte"].add(found, truth[claim], time.perf_counter() - start)
        start = time.perf_counter()
        rows = baselines.run_query(rippl.redis, rippl.keys.graph, baselines.article_downstream(claim, 5))
        found = set(rows[0][0]) if rows else set()
        structural["cypher_1_5"].add(found, truth[claim], time.perf_counter() - start)
    sqlite.close()

    pools = {"": [n for n, k in corpus.kinds.items() if k != "Source"],
             "_acting": [n for n, k in corpus.kinds.items() if k in ("Decision", "Action")]}
    ids = pools[""]
    retrievers = []
    dense_info: dict[str, Any] = {"model": "all-MiniLM-L6-v2", "dimensions": 384}
    known: dict[str, np.ndarray] = {}
    for suffix, pool in pools.items():
        texts = [corpus.texts[n] for n in pool]
        bm25 = bm25_retriever(pool, texts)
        bm25.name += suffix
        retrievers.append(bm25)
        if model is not None:
            seconds, dense = _timed(lambda pool=pool, texts=texts: dense_retriever(
                pool, texts, model, known))
            dense_info.setdefault("embed_corpus_s", seconds)
            dense.name += suffix
            retrievers.append(dense)
    if model is None:
        dense_info["skipped"] = model_error
    retrieval: dict[str, dict[str, Any]] = {}
    for retriever in retrievers:
        per_k = {}
        for k in ks:
            scores = Scores()
            for claim in claims:
                start = time.perf_counter()
                found = set(retriever.top(claim, corpus.texts[claim], k))
                scores.add(found, truth[claim], time.perf_counter() - start)
            per_k[str(k)] = scores.report()
        r_prec = Scores()
        for claim in claims:
            start = time.perf_counter()
            found = set(retriever.top(claim, corpus.texts[claim], len(truth[claim])))
            r_prec.add(found, truth[claim], time.perf_counter() - start)
        retrieval[retriever.name] = {"k": per_k, "r_precision": r_prec.report()}

    sizes = [len(truth[c]) for c in claims]
    return {
        "corpus": corpus.name, "nodes": len(corpus.kinds), "edges": len(corpus.edges),
        "candidates": len(ids), "acting_candidates": len(pools["_acting"]),
        "claims_evaluated": len(claims),
        "dependents_per_claim": {"mean": float(np.mean(sizes)), "median": float(np.median(sizes)),
                                 "max": int(max(sizes))},
        "ceiling": {str(k): float(np.mean([min(k, s) / s for s in sizes])) for k in ks},
        "structural": {name: s.report() for name, s in structural.items()},
        "retrieval": retrieval, "dense": dense_info,
        "word_overlap": overlap(corpus, truth, claims, seed),
    }


def _timed[T](fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def load_model() -> tuple[Any | None, str | None, float]:
    """The dense encoder, or why it is unavailable; and how long loading took."""
    from rippl_bench.embed import MiniLM, ModelUnavailableError

    start = time.perf_counter()
    try:
        model = MiniLM()
    except (ModelUnavailableError, ImportError) as exc:
        return None, str(exc), 0.0
    return model, None, time.perf_counter() - start
