"""The package's shape holds: imports point down (faces -> client -> features -> runtime), there
are no import cycles, and the framework adapters use only the public surface and the adapter kit.

Imports are read from the source (statically): every `import`/`from ... import` of a rippl_core
module, at any depth of the file, except those under `if TYPE_CHECKING:` (annotations only)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import rippl_core
import rippl_core.adapters

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rippl_core"

# The layer of each top-level part of rippl_core: a module may import only from lower layers, or
# from its own part. Faces are top: the CLI registers the other faces' commands.
LAYERS: dict[str, int] = {
    "vocabulary": 0, "errors": 0,
    "models": 1,
    "_runtime": 2,
    "causal": 3, "testing": 3,
    "beliefs": 4, "review": 4, "records": 4, "ingest": 4, "capture": 4, "identity": 4,
    "client": 5,
    "adapters": 6, "mcp": 6, "console": 6,
    "cli": 7,
    "__init__": 8,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_modules(path: Path) -> set[str]:
    """The rippl_core modules a file imports (a `from pkg import name` of a submodule counts as
    that submodule)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _type_checking(node)
               for child in node.body for n in ast.walk(child)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "rippl_core")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "rippl_core":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                is_module = (ROOT / Path(*sub.split("."))).with_suffix(".py").exists() or \
                    (ROOT / Path(*sub.split(".")) / "__init__.py").exists()
                found.add(sub if is_module else node.module)
    return found


def core_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {part(module_name(p)) for p in core_files()}
    assert parts <= set(LAYERS), f"give these a layer: {sorted(parts - set(LAYERS))}"


@pytest.mark.parametrize("path", core_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path: Path) -> None:
    if path.name == "__main__.py":
        return  # `python -m` entry points sit above every layer; nothing imports them
    me = module_name(path)
    upward = [m for m in imported_modules(path)
              if part(m) != part(me) and LAYERS[part(m)] >= LAYERS[part(me)]]
    assert not upward, f"{me} (layer {LAYERS[part(me)]}) imports upward or sideways: {upward}"


def test_no_import_cycles() -> None:
    graph = {module_name(p): {m for m in imported_modules(p) if m != module_name(p)}
             for p in core_files() if p.name != "__main__.py"}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt] if nxt in stack else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, f"import cycles: {cycles}"


def test_the_checks_see_a_violation() -> None:
    """The walker must notice an upward import and a cycle (or the tests above prove nothing)."""
    source = ("from __future__ import annotations\nfrom typing import TYPE_CHECKING\n"
              "from rippl_core.client import Rippl\nfrom rippl_core.causal import cypher\n"
              "if TYPE_CHECKING:\n    from rippl_core.cli import app\n")
    probe = PACKAGE / "_runtime" / "_probe_for_architecture_test.py"
    probe.write_text(source)
    try:
        assert imported_modules(probe) == {"rippl_core.client", "rippl_core.causal.cypher"}
    finally:
        probe.unlink()


ADAPTER_FILES = sorted(p for p in (ROOT / "integrations").glob("*/rippl_*/**/*.py")
                       if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", ADAPTER_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_adapters_import_only_the_public_surface_and_the_kit(path: Path) -> None:
    public = {"rippl_core": set(rippl_core.__all__),
              "rippl_core.adapters": set(rippl_core.adapters.__all__)}
    problems = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            problems += [a.name for a in node.names if a.name.startswith("rippl_core")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rippl_core"):
            if node.module not in public:
                problems.append(node.module)
            else:
                problems += [f"{node.module}.{a.name}" for a in node.names
                             if a.name not in public[node.module]]
    assert not problems, f"{path.name} reaches into rippl_core internals: {problems}"
