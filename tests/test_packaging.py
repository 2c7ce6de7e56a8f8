"""What a user installing the packages gets: every module of every installed Rippl package imports
(with the dependency versions of this environment, which CI varies from the lowest to the highest
allowed), each package reports its version, and the packaging metadata holds what the package index
shows (licence, POSIX-only classifier, project URLs, compatible ranges between the packages)."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rippl_core

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"rippl-core": "rippl_core", "rippl-langgraph": "rippl_langgraph",
            "rippl-autogen": "rippl_autogen", "rippl-crewai": "rippl_crewai"}
PROJECTS = {"rippl-core": ROOT, **{f"rippl-{n}": ROOT / "integrations" / n
                                   for n in ("langgraph", "autogen", "crewai")}}
INSTALLED = {dist: module for dist, module in PACKAGES.items() if importlib.util.find_spec(module)}


def modules() -> list[str]:
    """Every module of every installed Rippl package, found without importing any (but the
    `__main__`s, which run the command)."""
    found: list[str] = []
    for package in INSTALLED.values():
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None
        root = Path(spec.origin).parent
        for path in root.rglob("*.py"):
            parts = (package, *path.relative_to(root).with_suffix("").parts)
            if parts[-1] != "__main__":
                found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(found)


@pytest.mark.parametrize("module", modules())
def test_every_module_imports(module: str) -> None:
    assert importlib.import_module(module)


@pytest.mark.parametrize("dist", sorted(INSTALLED))
def test_each_package_reports_its_installed_version(dist: str) -> None:
    version = importlib.import_module(INSTALLED[dist]).__version__
    assert version == importlib.metadata.version(dist)
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", version)


def test_rippl_version() -> None:
    from rippl_core.cli import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"rippl-core {rippl_core.__version__}"


def project(dist: str) -> dict[str, object]:
    return dict(tomllib.loads((PROJECTS[dist] / "pyproject.toml").read_text())["project"])


@pytest.mark.parametrize("dist", sorted(PROJECTS))
def test_metadata_the_package_index_shows(dist: str) -> None:
    meta = project(dist)
    assert meta["license"] == "MIT" and meta["license-files"] == ["LICENSE"]
    assert (PROJECTS[dist] / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    classifiers = list(meta["classifiers"])  # type: ignore[call-overload]
    assert "Operating System :: POSIX" in classifiers  # fcntl: not on Windows
    urls = dict(meta["urls"])  # type: ignore[call-overload]
    assert {"Homepage", "Repository", "Issues", "Changelog"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())


def test_adapters_require_the_core_of_their_own_minor_version() -> None:
    version = str(project("rippl-core")["version"])
    major, minor, _ = version.split(".", 2)
    wanted = f"rippl-core>={major}.{minor},<{major}.{int(minor) + 1}"
    for dist in ("rippl-langgraph", "rippl-autogen", "rippl-crewai"):
        meta = project(dist)
        assert meta["version"] == version, dist  # released together
        assert wanted in list(meta["dependencies"]), dist  # type: ignore[call-overload]


def test_autogen_ext_is_for_tests_only() -> None:
    requires = list(project("rippl-autogen")["dependencies"])  # type: ignore[call-overload]
    assert not any(d.startswith("autogen-ext") for d in requires)


def test_readmes_link_absolutely_to_files_that_exist() -> None:
    """The READMEs are the packages' pages on the index, where a relative link leads nowhere: links
    are absolute, and those into this repository name a file it has."""
    repository = dict(project("rippl-core")["urls"])["Repository"]  # type: ignore[call-overload]
    for path in [ROOT / "README.md", *(p / "README.md" for p in PROJECTS.values())]:
        targets = re.findall(r"\]\(([^)\s]+)\)", path.read_text())
        relative = [t for t in targets if not t.startswith(("https://", "http://", "#", "mailto:"))]
        assert not relative, f"{path.relative_to(ROOT)} links relatively to {relative}"
        for target in targets:
            if target.startswith(f"{repository}/blob/main/"):
                file = target.removeprefix(f"{repository}/blob/main/").split("#")[0]
                assert (ROOT / file).is_file(), f"{path.relative_to(ROOT)} links to a missing {file}"
