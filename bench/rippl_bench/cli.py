"""`uv run rippl-bench`: run the benchmark lab, write the JSON results and regenerate the report."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from rippl_bench import ratios as ratio_files
from rippl_bench import report as reporting
from rippl_bench import runner
from rippl_bench.suites import Config

app = typer.Typer(name="rippl-bench", add_completion=False, pretty_exceptions_enable=False,
                  help="Rippl's benchmark lab (run from a clone of the repository).")
console = Console()
errors = Console(stderr=True)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_sizes(text: str) -> list[int]:
    """`1k,100k,1M` -> [1000, 100000, 1000000]."""
    sizes = []
    for part in text.split(","):
        match = _SIZE.match(part)
        if not match:
            raise typer.BadParameter(f"{part!r} is not a size; write e.g. 1k,100k,1M or 5000")
        value = float(match.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2).lower()]
        if value < 10:
            raise typer.BadParameter("a generated graph needs at least 10 nodes")
        sizes.append(int(value))
    return sizes


@app.command()
def bench(
    quick: Annotated[bool, typer.Option("--quick", help="Small sizes and fewer samples: a few "
                                                        "minutes.")] = False,
    sizes: Annotated[str | None, typer.Option(help="Graph sizes, e.g. 1k,100k,1M (default: "
                                                   "1k,100k,1M; with --quick 1k,20k).")] = None,
    out: Annotated[Path, typer.Option(help="Folder for the JSON results.")] = runner.RESULTS,
    report: Annotated[Path | None, typer.Option(
        help="Markdown report to regenerate (default docs/benchmarks.md; with --quick "
             "OUT/quick/benchmarks.md, so a quick run never replaces the recorded full results).")
    ] = None,
    server: Annotated[bool, typer.Option(help="Also measure over a FalkorDB server on a loopback "
                                              "TCP port.")] = True,
    external: Annotated[bool, typer.Option(
        help="Also run the other benchmarks first (bench/scripts/bench_*.py, with --quick when "
             "quick), which rewrite their own results/<name>.json. Without it their recorded "
             "results are reported as they are.")] = False,
) -> None:
    """Benchmark Rippl against the article's *1..N query, SQLite, networkx and retrieval."""
    config = Config.quick_config() if quick else Config()
    if sizes:
        config.sizes = parse_sizes(sizes)
    if not server:
        config.backends = ("embedded",)
    scripts = runner.external_scripts() if external else []
    json_path = out / (runner.QUICK_RESULTS_NAME if quick else runner.RESULTS_NAME)
    report_path = report or (out / "quick" / "benchmarks.md" if quick else runner.DOCS)
    console.print(f"Rippl bench{' --quick' if quick else ''}: sizes "
                  f"{', '.join(f'{s:,}' for s in config.sizes)} on {' and '.join(config.backends)}")

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("starting", total=runner.total_steps(config) + len(scripts) + 1)
        started = False

        def step(label: str) -> None:
            nonlocal started
            if started:
                bar.advance(task)
            started = True
            bar.update(task, description=label)

        results = runner.run(config, step=step)
        results["meta"]["external"] = runner.run_external(scripts, quick=quick, step=step)
        step("writing the results and the report")
        results["meta"]["results_file"] = json_path.as_posix()
        runner.write_json(results, json_path)
        extras = reporting.load_extras(runner.RESULTS,
                                       {runner.RESULTS_NAME, runner.QUICK_RESULTS_NAME})
        reporting.write(results, report_path, extras=extras, renderers=runner.BENCHMARKS)
        bar.advance(task)
    if quick:  # every ratio of the quick run in one file (compare two: python -m rippl_bench.ratios)
        console.print("ratios: capture and limits benchmarks (quick)")
        results["meta"]["external"] |= runner.run_ratio_scripts(out / "quick",
                                                                skip=results["meta"]["external"])
        console.print(f"ratios:  {ratio_files.write(out / 'quick')}")
    for name, status in results["meta"]["external"].items():
        if status["returncode"] != 0:
            errors.print(f"[yellow]warning:[/yellow] {name} failed ({status['stderr_tail'][-300:]}); "
                         "its recorded results, if any, are in the report as they were")
    console.print(f"results: {json_path}\nreport:  {report_path} (plots in "
                  f"{report_path.parent / 'img'})\ntook {results['meta']['duration_s']:.0f} s")


def main() -> None:
    app()
