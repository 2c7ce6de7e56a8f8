"""The benchmark lab runs end to end on toy sizes and its pieces compute the right things.

Benchmarks record numbers; these tests only check behaviour (no timing assertions)."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rippl_bench import ablation, baselines, embed, generate, measure, report, runner
from rippl_bench.suites import Config
from typer.testing import CliRunner

from rippl_core import Rippl
from rippl_core.causal.spec import node_specs, read_spec

INCIDENT = Path(__file__).resolve().parents[2] / "examples" / "incident.yaml"


def _reach(edges: list[tuple[str, str]], root: str) -> set[str]:
    down: dict[str, list[str]] = {}
    for a, b in edges:
        down.setdefault(a, []).append(b)
    seen: set[str] = set()
    queue = deque(down.get(root, ()))
    while queue:
        node = queue.popleft()
        if node not in seen:
            seen.add(node)
            queue.extend(down.get(node, ()))
    return seen


# ------------------------------------------------------------------------------------ generators


@settings(max_examples=25, deadline=None)
@given(n=st.integers(min_value=10, max_value=700), seed=st.integers(0, 10_000))
def test_generated_graph_has_exactly_n_nodes_and_loadable_references(n: int, seed: int) -> None:
    graph = generate.causal_graph(n, seed=seed)
    assert graph.nodes == n
    spec = read_spec(graph.spec)  # a valid load spec
    specs = node_specs(spec)
    assert len(specs) == n
    position = {node: i for i, block in enumerate(graph.blocks) for node in block}
    order = [node for block in graph.blocks for node in block]
    assert sorted(order) == sorted(graph.kinds)
    edges = {(a, s.id) for s in specs for j in s.justifications for a in j}
    assert edges == set(graph.edges)
    for a, b in graph.edges:  # references point backwards: batches load in order
        assert position[a] <= position[b]
        assert order.index(a) < order.index(b) if position[a] == position[b] else True


def test_batches_cover_the_spec_in_order() -> None:
    graph = generate.causal_graph(450, seed=2)
    parts = list(generate.batches(graph, 100))
    assert len(parts) >= 4
    seen: set[str] = set()
    for part in parts:
        ids = [e["id"] for k in ("sources", "claims", "decisions", "actions") for e in part[k]]
        seen.update(ids)
    assert seen == set(graph.kinds)
    assert sum(len(p["justifications"]) for p in parts) == len(graph.spec["justifications"])


def test_lattice_and_fan_out_shapes() -> None:
    lattice = generate.diamond_lattice(12)
    assert len(lattice.kinds) == 2 + 2 * 12
    assert _reach(lattice.edges, "L-root") == set(lattice.kinds) - {"L-src", "L-root"}
    assert set(lattice.kinds.values()) == {"Source", "Claim", "Decision", "Action"}
    fan = generate.fan_out(500)
    assert len(_reach(fan.edges, "F-root")) == 500
    read_spec(lattice.spec)
    read_spec(fan.spec)


def test_generators_refuse_bad_sizes() -> None:
    with pytest.raises(ValueError):
        generate.causal_graph(5)
    with pytest.raises(ValueError):
        generate.diamond_lattice(0)
    with pytest.raises(ValueError):
        generate.fan_out(2)


# ------------------------------------------------------------------------------------- baselines


def test_structural_baselines_agree_with_rippl(rippl: Rippl) -> None:
    graph = generate.causal_graph(300, seed=11)
    rippl.load(graph.spec)
    sqlite = baselines.SqliteGraph(graph.kinds, graph.edges)
    nxg = baselines.NetworkxGraph.build(graph.kinds, graph.edges)
    claims = graph.ids("Claim")[:25]
    for claim in claims:
        exact = {r.id for r in rippl.blast_radius(claim)}
        assert sqlite.downstream(claim) == exact == nxg.downstream(claim) == _reach(graph.edges, claim)
        rows = baselines.run_query(rippl.redis, rippl.keys.graph, baselines.article_downstream(claim, 5))
        assert set(rows[0][0]) == {r.id for r in rippl.blast_radius(claim, max_depth=5)}
    victim = claims[0]
    rippl.retract(victim, reason="test", by="t")
    sqlite.retract([victim])
    nxg.retracted = {victim}
    for node in _reach(graph.edges, victim):
        assert sqlite.blocked(node) and nxg.blocked(node)
    sqlite.close()


def test_article_query_times_out_honestly(rippl: Rippl) -> None:
    rippl.load(generate.diamond_lattice(40).spec)
    with pytest.raises(baselines.TimedOut):
        baselines.run_query(rippl.redis, rippl.keys.graph, baselines.article_downstream("L-root", 40),
                            timeout_ms=50)


# ---------------------------------------------------------------------------------- measurements


def test_summary_percentiles() -> None:
    out = measure.summary([0.001 * i for i in range(1, 101)])
    assert out["n"] == 100
    assert out["p50_ms"] == pytest.approx(50)
    assert out["p99_ms"] == pytest.approx(99)
    assert out["max_ms"] == pytest.approx(100)
    assert measure.summary([]) == {"n": 0}
    assert measure.median([3.0, 1.0, 2.0, 10.0]) == 2.5


# -------------------------------------------------------------------------------------- ablation


def test_ablation_on_the_incident_graph(rippl: Rippl) -> None:
    corpus = ablation.incident_corpus(INCIDENT)
    result = ablation.evaluate(corpus, rippl, (5, 10), None, "not loaded in this test", None, 1)
    truth = corpus.downstream()
    assert result["claims_evaluated"] == sum(1 for deps in truth.values() if deps)
    assert "CLM-001" in corpus.claims
    # what rests on CLM-001 includes DEC-012, which survives its retraction by another justification
    assert truth["CLM-001"] == {r.id for r in rippl.blast_radius("CLM-001")}
    assert {"ACT-001", "DEC-012"} <= truth["CLM-001"]
    for name in ("rippl", "sqlite_cte"):
        assert result["structural"][name]["recall"] == 1.0
        assert result["structural"][name]["precision"] == 1.0
        assert result["structural"][name]["misses_per_claim"] == 0
    bm25 = result["retrieval"]["bm25"]["k"]
    assert 0 < bm25["5"]["recall"] <= result["ceiling"]["5"] <= 1
    assert bm25["5"]["recall"] <= bm25["10"]["recall"]
    assert result["dense"]["skipped"] == "not loaded in this test"


def test_scores_and_retriever_exclude_the_query() -> None:
    scores = ablation.Scores()
    scores.add({"a", "b", "x"}, {"a", "b", "c", "d"}, 0.001)
    rep = scores.report()
    assert rep["recall"] == 0.5 and rep["precision"] == pytest.approx(2 / 3)
    assert rep["misses_per_claim"] == 2 and rep["complete"] == 0
    others = [f"unrelated words number {i}" for i in range(6)]
    retriever = ablation.bm25_retriever(["q", "a", *[f"o{i}" for i in range(6)]],
                                        ["disk on shard nine", "disk shard nine", *others])
    assert retriever.top("q", "disk on shard nine", 1) == ["a"]
    assert "q" not in retriever.top("q", "disk on shard nine", 8)
    assert len(retriever.top("q", "disk on shard nine", 50)) == 7


@pytest.mark.skipif(not embed.available(), reason="the bench extra's model is not installed")
def test_dense_encoder_matches_the_published_model() -> None:
    model = embed.MiniLM()
    vectors = model.encode(["A man is eating food.", "A man is eating a piece of bread.",
                            "The girl is carrying a baby."])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # the similarity sentence-transformers documents for this pair with all-MiniLM-L6-v2
    assert float(vectors[0] @ vectors[1]) == pytest.approx(0.7553, abs=2e-3)
    assert float(vectors[0] @ vectors[2]) < 0.1
    batch = model.encode(["Shard 09 is healthy"] * 3 + ["x " * 40])
    assert np.allclose(batch[0], model.encode(["Shard 09 is healthy"])[0], atol=1e-5)


def test_safetensors_reader_round_trip(tmp_path: Path) -> None:
    header = {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
              "__metadata__": {"format": "pt"}}
    raw = json.dumps(header).encode()
    data = len(raw).to_bytes(8, "little") + raw + np.arange(6, dtype="<f4").tobytes()
    tensors = embed.read_safetensors(data)
    assert tensors["w"].tolist() == [[0, 1, 2], [3, 4, 5]]


# ------------------------------------------------------------------------------ the whole runner


def test_runner_and_report_on_a_toy_config(tmp_path: Path) -> None:
    config = Config.tiny_config()
    steps: list[str] = []
    results = runner.run(config, step=steps.append, workdir=tmp_path)
    assert len(steps) == runner.total_steps(config)
    scale = results["scale"][0]
    for name in ("embedded", "server"):
        measured = scale["backends"][name]
        assert measured["load"]["nodes"] == 120
        assert measured["check"]["allowed"]["unexpected_verdicts"] == 0
        assert measured["check"]["denied"]["unexpected_verdicts"] == 0
        assert measured["same_wave_as_first_backend"]
    assert scale["backends"]["server"]["same_verdicts_as_first_backend"]
    assert scale["baselines"]["sqlite"]["blast"]["nodes_missed"] == 0
    lattice = results["lattice"]["embedded"]
    assert lattice["rippl"]["reached"] == lattice["nodes_below_root"] == 16
    for run in lattice["article"]:  # *1..N reaches exactly the first N levels, two nodes each
        assert run["timed_out"] or (run["reached"], run["missed"]) == (2 * run["n"], 16 - 2 * run["n"])
    waves = results["waves"]["embedded"]
    assert waves["retract"]["nodes_changed"] == [41] and waves["reject"]["nodes_changed"] == [41]
    assert results["receipts"]["verify"]["ok"] and results["receipts"]["verify_signed"]["ok"]
    assert results["receipts"]["verify"]["receipts"] == 6
    assert {c["corpus"] for c in results["ablation"]["corpora"]} == {"incident", "generated-120"}
    assert results["machine"]["falkordb_module_version"]

    json_path = runner.write_json(results, tmp_path / "results" / runner.QUICK_RESULTS_NAME)
    reloaded = json.loads(json_path.read_text())
    doc = tmp_path / "docs" / "benchmarks.md"
    doc.parent.mkdir()
    doc.write_text("# Benchmarks\n\n## Summary\n\nold numbers\n\n## Bitemporal beliefs\n\n"
                   "kept as written\n")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "bench_langgraph.py").write_text(
        "def markdown(results):\n    return '## LangGraph adapter\\n\\nfresh ' + str(results['x'])\n")
    extras = {"langgraph": {"x": 42},
              "custom": {"put_p50_ms": 0.5, "saver": [{"name": "sqlite", "p50": 0.2}]}}
    report.write(reloaded, doc, extras=extras, renderers=scripts)
    text = doc.read_text()
    assert "old numbers" not in text
    assert "## Bitemporal beliefs\n\nkept as written" in text
    assert "## LangGraph adapter\n\nfresh 42" in text  # rendered by the script's own markdown()
    assert "## custom" in text and "saver[0].p50" in text  # no renderer: a plain table
    report.write(reloaded, doc, extras=extras, renderers=scripts)  # idempotent
    assert doc.read_text() == text
    for heading in report.OWN_SECTIONS:
        assert f"## {heading}" in text
    images = sorted(p.name for p in (doc.parent / "img").glob("*.png"))
    assert images == ["bench-ablation.png", "bench-check.png", "bench-lattice.png",
                      "bench-load-memory.png", "bench-waves.png"]
    for name in images:
        assert f"](img/{name})" in text


def test_a_failing_suite_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    config = Config.tiny_config()
    config.sizes, config.backends, config.lattice_depth = [], ("embedded",), 0  # depth 0 raises
    steps: list[str] = []
    results = runner.run(config, step=steps.append, workdir=tmp_path)
    assert len(steps) == runner.total_steps(config)
    assert "lattice" in results["failures"] and "depth" in results["failures"]["lattice"]
    assert results["lattice"] == {}
    assert results["waves"]["embedded"]["retract"]["nodes_changed"] == [41]
    text = report.render(results, tmp_path / "img", "img/")
    assert "**lattice failed**" in text
    assert "## Retraction waves and the review gate" in text


def test_foreign_sections_are_kept_verbatim() -> None:
    existing = ("# Benchmarks\nintro\n## Summary\nx\n## LangGraph adapter\n\n| a | b |\n\n"
                "### detail\nmore\n## Method\ny\n")
    kept = report.foreign_sections(existing)
    assert kept == ["## LangGraph adapter\n\n| a | b |\n\n### detail\nmore\n"]


def test_cli_bench_rejects_bad_sizes_and_parses_good_ones() -> None:
    from rippl_bench.cli import app, parse_sizes

    assert parse_sizes("1k,100k,1M") == [1_000, 100_000, 1_000_000]
    assert parse_sizes("5000") == [5000]
    result = CliRunner().invoke(app, ["--sizes", "ten"])
    assert result.exit_code != 0
    assert "not a size" in result.output
