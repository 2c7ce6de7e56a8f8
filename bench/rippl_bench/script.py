"""What every benchmark script under bench/scripts does around its measurements: its command line
(`options`), where its results go (`results_file`), saving them stamped with the date and commit
they were measured at (`save`), and printing them and writing its section of docs/benchmarks.md
(`publish`). The machine it ran on is `rippl_bench.machine`. `load_script` imports a script by
name, as the tests that run them on tiny sizes do."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from rippl_bench.report import replace_section
from rippl_bench.summary import DOCS, RESULTS, ROOT, stamp


def options(doc: str | None, *, quick: str,
            docs: Literal["--update-docs", "--no-docs"]) -> argparse.ArgumentParser:
    """A script's command line: `--quick` (`quick` says what it shrinks), and how a run treats the
    script's section of docs/benchmarks.md: `--update-docs` rewrites it (where full runs are long
    and rare), `--no-docs` leaves it (a full run rewrites it; a quick run never does)."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=quick)
    said = "rewrite the docs section" if docs == "--update-docs" else "do not touch docs/benchmarks.md"
    parser.add_argument(docs, action="store_true", help=said)
    return parser


def results_file(name: str, *, quick: bool = False) -> Path:
    """bench/results/<name>.json, or bench/results/quick/<name>.json for a quick run (which never
    replaces the recorded full run)."""
    return RESULTS / ("quick" if quick else "") / f"{name}.json"


def save(results: dict[str, Any], path: Path) -> Path:
    """Write `results` as JSON at `path`, stamped with when and at which commit they were measured."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(stamp(results), indent=2) + "\n")
    return path


def publish(results: dict[str, Any], path: Path, markdown: Callable[[dict[str, Any]], str], *,
            heading: str, docs: bool) -> str:
    """Save `results` at `path`, print their section (`markdown(results)`, starting with
    `heading`) and, with `docs`, write it into docs/benchmarks.md (whose summary follows).
    Returns the section."""
    save(results, path)
    section = markdown(results)
    print(section)
    if docs:
        replace_section(DOCS, heading, section)
        print(f"updated {DOCS.relative_to(ROOT)}")
    print(f"wrote {path.relative_to(ROOT)}")
    return section


def load_script(name: str) -> ModuleType:
    """bench/scripts/<name>.py as a module (registered under `name`, so its dataclasses resolve)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
