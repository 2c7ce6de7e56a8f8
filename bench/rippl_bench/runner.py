"""Run every suite in one process, one after another, and gather the results in one JSON document."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rippl_bench import ablation, machine, suites
from rippl_bench.lab import backend
from rippl_bench.suites import Config

type Step = Callable[[str], None]

RESULTS_NAME = "rippl-bench.json"
QUICK_RESULTS_NAME = "rippl-bench-quick.json"
ROOT = Path(__file__).resolve().parents[2]
INCIDENT = ROOT / "examples" / "incident.yaml"
BENCHMARKS = ROOT / "bench"  # the lab: results/, scripts/ (the other benchmarks)
RESULTS = BENCHMARKS / "results"
DOCS = ROOT / "docs" / "benchmarks.md"
EXTERNAL_TIMEOUT_S = 1800


def total_steps(config: Config) -> int:
    """How many times `run` calls `step` (for a progress bar)."""
    backends = len(config.backends)
    per_size = 3 + 3 * backends  # generate, copies, (load, check, blast) per backend, baselines
    return len(config.sizes) * per_size + 2 * backends + 1 + 3  # lattice, waves, receipts, ablation


def run(config: Config, *, step: Step | None = None, workdir: Path | None = None,
        incident: Path = INCIDENT) -> dict[str, Any]:
    """Every measurement of the report, in one run."""
    say = step or (lambda label: None)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "meta": {"started_at": datetime.now(UTC).isoformat(timespec="seconds"),
                 "quick": config.quick, "config": _config_dict(config)},
        "machine": machine.describe(),
    }
    failures: dict[str, str] = {}
    tracebacks: dict[str, str] = {}
    results["failures"], results["tracebacks"] = failures, tracebacks
    step_now = _Counter(say)

    def guarded[T](name: str, fn: Callable[[], T], steps: int) -> T | None:
        """Run one suite; a failure is recorded (its remaining steps skipped), never fatal."""
        start = step_now.count
        try:
            return fn()
        except Exception as exc:
            failures[name] = f"{type(exc).__name__}: {exc}"
            tracebacks[name] = traceback.format_exc()[-4000:]
            for _ in range(max(0, steps - (step_now.count - start))):
                step_now(f"{name}: failed, skipped")
            return None

    backends = len(config.backends)
    scale = [guarded(f"scale {size}", lambda size=size: _scale(size, config, step_now, workdir),
                     3 + 3 * backends) for size in config.sizes]
    results["scale"] = [s for s in scale if s is not None]
    results["lattice"] = guarded("lattice", lambda: _per_backend(
        config, step_now, workdir, "lattice", suites.lattice), backends) or {}
    if results["lattice"]:
        results["lattice"]["in_process"] = suites.lattice_baselines(config)
    results["waves"] = guarded("waves", lambda: _per_backend(
        config, step_now, workdir, "waves", suites.waves), backends) or {}

    def receipts() -> dict[str, Any]:
        step_now("receipts on embedded")
        with backend("embedded", workdir) as db:
            results["machine"].update(db.info())
            return suites.receipts(db, config)

    results["receipts"] = guarded("receipts", receipts, 1) or {}
    results["ablation"] = guarded("ablation", lambda: _ablation(config, step_now, workdir,
                                                                incident), 3) or {}
    results["machine"]["load_average_end"] = machine.load_average()
    results["meta"]["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    results["meta"]["duration_s"] = time.perf_counter() - started
    return results


class _Counter:
    """Passes progress labels on and counts them."""

    def __init__(self, say: Step) -> None:
        self.say, self.count = say, 0

    def __call__(self, label: str) -> None:
        self.count += 1
        self.say(label)


def _config_dict(config: Config) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in vars(config).items()}


def _scale(size: int, config: Config, say: Step, workdir: Path | None) -> dict[str, Any]:
    say(f"{size:,} nodes: generate")
    data = suites.prepare_scale(size, config)
    say(f"{size:,} nodes: build SQLite and networkx copies")
    suites.build_baselines(data)
    entry: dict[str, Any] = {"size": size, "nodes": data.graph.nodes, "edges": len(data.graph.edges),
                             "retracted_claims": len(data.retract), "backends": {}}
    first: dict[str, Any] | None = None
    for name in config.backends:
        with backend(name, workdir) as db:
            measured = suites.scale_backend(db, data, config, say)
        if first is None:
            first = measured
        else:
            measured["same_verdicts_as_first_backend"] = measured["verdicts"] == first["verdicts"]
        entry["backends"][name] = measured
    assert first is not None
    entry["samples"] = {k: len(v) for k, v in data.samples.items()}
    entry["baselines"] = suites.scale_baselines(data, first["verdicts"], first["exact_blast"], say)
    entry["blast_sizes"] = suites.blast_sizes(first["exact_blast"])
    for measured in entry["backends"].values():
        measured.pop("verdicts", None)
        measured.pop("exact_blast", None)
    if data.sqlite is not None:
        data.sqlite.close()
    del data
    gc.collect()
    return entry


def _per_backend(config: Config, say: Step, workdir: Path | None, name: str,
                 suite: Callable[[Any, Config], dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in config.backends:
        say(f"{name} on {kind}")
        with backend(kind, workdir) as db:
            out[kind] = suite(db, config)
    return out


def _ablation(config: Config, say: Step, workdir: Path | None, incident: Path) -> dict[str, Any]:
    say("ablation: load the all-MiniLM-L6-v2 encoder")
    model, error, load_s = ablation.load_model()
    out: dict[str, Any] = {"model_load_s": load_s, "model_error": error,
                           "model_origin": getattr(model, "origin", None), "corpora": []}
    with backend("embedded", workdir) as db:
        say("ablation: demo incident graph")
        if incident.is_file():
            out["corpora"].append(ablation.evaluate(
                ablation.incident_corpus(incident), db.open("ablation-incident"),
                config.ablation_ks, model, error, None, config.seed))
        else:
            out["incident_skipped"] = f"{incident} not found (run from a checkout of the repository)"
        say(f"ablation: generated graph of {config.ablation_nodes:,} nodes")
        out["corpora"].append(ablation.evaluate(
            ablation.generated_corpus(config.ablation_nodes, config.seed + 1),
            db.open("ablation-generated"), config.ablation_ks, model, error,
            config.ablation_claims, config.seed))
    return out


def write_json(results: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, sort_keys=False, default=str) + "\n",
                    encoding="utf-8")
    return path


def external_scripts(folder: Path = BENCHMARKS / "scripts") -> list[Path]:
    """Other benchmarks' scripts (bench/scripts/bench_*.py), each writing results/<name>.json."""
    return sorted(folder.glob("bench_*.py")) if folder.is_dir() else []


def _run_script(command: list[str], cwd: Path) -> dict[str, Any]:
    """Run one benchmark script in its own process: its return code, the tail of its stderr when
    it failed (or the timeout), and how long it took."""
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                              timeout=EXTERNAL_TIMEOUT_S, check=False)
        status: dict[str, Any] = {"returncode": done.returncode,
                                  "stderr_tail": done.stderr[-2000:] if done.returncode else ""}
    except subprocess.TimeoutExpired:
        status = {"returncode": None, "stderr_tail": f"timed out after {EXTERNAL_TIMEOUT_S} s"}
    status["seconds"] = time.perf_counter() - start
    return status


def run_external(scripts: list[Path], *, quick: bool, step: Step | None = None) -> dict[str, Any]:
    """Run each script in its own process (`python bench_x.py [--quick]`); what happened to each."""
    say = step or (lambda label: None)
    outcome: dict[str, Any] = {}
    for script in scripts:
        say(f"external benchmark {script.name}")
        command = [sys.executable, str(script), *(["--quick"] if quick else [])]
        status = _run_script(command, script.parent.parent)
        outcome[script.name] = status
    return outcome


# the benchmarks whose ratios `rippl-bench --quick` gathers (rippl_bench.ratios), with the options
# of their quick run: the sizes the regression check compares
RATIO_SCRIPTS = {"bench_capture.py": ("--quick", "--out", "{folder}/capture.json"),
                 "bench_limits.py": ("--quick", "--sizes", "1000,20000", "--out",
                                     "{folder}/limits.json")}


def run_ratio_scripts(folder: Path, *, skip: dict[str, Any] | None = None,
                      scripts: Path = BENCHMARKS / "scripts") -> dict[str, Any]:
    """Run the ratio benchmarks (`RATIO_SCRIPTS`) into `folder`, each in its own process, except
    those already run (`skip`); what happened to each."""
    outcome: dict[str, Any] = {}
    for name, options in RATIO_SCRIPTS.items():
        script = scripts / name
        if name in (skip or {}) or not script.is_file():
            continue
        command = [sys.executable, str(script), *(o.format(folder=folder) for o in options)]
        status = _run_script(command, script.parent.parent)
        outcome[name] = status
    return outcome
