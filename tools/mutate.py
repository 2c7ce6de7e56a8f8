"""Mutation testing of Rippl's safety-critical modules: does the suite notice when the code is wrong?

    uv run python tools/mutate.py                  # every listed module, every mutant
    uv run python tools/mutate.py --sample 8       # CI: 8 mutants per module (seeded, reproducible)
    uv run python tools/mutate.py --module causal/preflight.py --list   # the mutants, not run

Each module is mutated against its own tests (the map below). A mutant is one small change to the
module's syntax tree: a comparison flipped (== !=, < >=, in / not in, is / is not), `and`/`or`
swapped, a `not` dropped, a condition negated, a boolean or number constant changed, a `return`
returning None, a `raise` removed. For each mutant the module's file is replaced in a scratch copy
of the repository, which goes first on PYTHONPATH, and the module's tests run (embedded backend,
stopping at the first failure). A mutant is killed when a test fails; it survives when they all
pass. Survivors are either killed by a new test or listed in tools/mutation-equivalents.toml with
the reason they cannot be told apart from the original (an equivalent mutant). The gate: every
module scores at least 95%, counting listed equivalents as not applicable.

Why a small runner rather than mutmut or cosmic-ray: the tests run against real FalkorDB servers
started by session fixtures, which forking runners re-enter per mutant in ways that leave servers
behind; and the gate needs each module judged by its own tests only. This runner is a process per
mutant, nothing shared, nothing left running. Results go to docs/mutation.md.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENTS = ROOT / "tools" / "mutation-equivalents.toml"
REPORT = ROOT / "docs" / "mutation.md"
GATE = 0.95

# module (under rippl_core/) -> the tests that specify it
MODULES: dict[str, list[str]] = {
    "causal/preflight.py": ["tests/causal/test_preflight.py", "tests/causal/test_preflight_gaps.py"],
    "adapters/toolguard.py": ["tests/test_adapters.py"],
    "review/receipts.py": ["tests/review/test_receipts.py", "tests/review/test_canonical_json.py"],
    "causal/tms.py": ["tests/causal/test_tms.py", "tests/causal/test_tms_graph.py"],
    "capture/context.py": ["tests/capture/test_context_property.py"],
    "console/auth.py": ["tests/console/test_auth.py"],
}

_SWAP = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE,
         ast.LtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


@dataclass(frozen=True)
class Mutant:
    module: str
    line: int
    column: int
    operator: str
    detail: str
    source: str  # the mutated expression's text, so the id survives edits elsewhere in the file
    index: int  # which node of the module, in walk order

    @property
    def id(self) -> str:
        """Stable across unrelated edits: the module, the function, the code mutated, the change."""
        return hashlib.sha256(f"{self.module}:{self.source}:{self.operator}:{self.detail}"
                              .encode()).hexdigest()[:10]

    def describe(self) -> str:
        return f"{self.module}:{self.line}:{self.column} {self.operator} {self.detail} `{self.source[:60]}`"


def _candidates(tree: ast.AST) -> Iterator[tuple[int, ast.AST, str, str]]:
    """(index, node, operator, detail) for every mutation of the tree, in a stable order."""
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                  and n.body and isinstance(n.body[0], ast.Expr)
                  and isinstance(n.body[0].value, ast.Constant)}
    # decorators configure (dataclass flags), they are not the module's logic
    docstrings |= {id(c) for n in ast.walk(tree)
                   if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                   for d in n.decorator_list for c in ast.walk(d)}
    for index, node in enumerate(ast.walk(tree)):
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _SWAP:
                    yield index, node, "compare", f"{i}:{type(op).__name__}"
        elif isinstance(node, ast.BoolOp):
            yield index, node, "boolop", type(node.op).__name__
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield index, node, "drop-not", ""
        elif isinstance(node, ast.If | ast.While | ast.IfExp):
            yield index, node, "negate-if", ""
        elif isinstance(node, ast.Constant) and id(node) not in docstrings:
            if isinstance(node.value, bool):
                yield index, node, "flip-bool", str(node.value)
            elif isinstance(node.value, int) and not isinstance(node.value, bool):
                yield index, node, "shift-int", str(node.value)
        elif isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            yield index, node, "return-none", ""
        elif isinstance(node, ast.Raise):
            yield index, node, "drop-raise", ""


def _apply(node: ast.AST, operator: str, detail: str) -> ast.AST:
    if operator == "compare":
        assert isinstance(node, ast.Compare)
        i = int(detail.split(":")[0])
        node.ops[i] = _SWAP[type(node.ops[i])]()
        return node
    if operator == "boolop":
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        return node
    if operator == "drop-not":
        assert isinstance(node, ast.UnaryOp)
        return node.operand
    if operator == "negate-if":
        assert isinstance(node, ast.If | ast.While | ast.IfExp)
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
        return node
    if operator == "flip-bool":
        assert isinstance(node, ast.Constant)
        node.value = not node.value
        return node
    if operator == "shift-int":
        assert isinstance(node, ast.Constant)
        node.value = node.value + 1
        return node
    if operator == "return-none":
        assert isinstance(node, ast.Return)
        node.value = ast.Constant(value=None)
        return node
    if operator == "drop-raise":
        return ast.Pass()
    raise ValueError(operator)


def mutants(module: str) -> list[Mutant]:
    tree = ast.parse((ROOT / "rippl_core" / module).read_text())
    found = []
    for index, node, op, detail in _candidates(tree):
        scope = next((f.name for f in ast.walk(tree)
                      if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                      and f.lineno <= getattr(node, "lineno", 0) <= (f.end_lineno or 0)), "")
        text = ast.unparse(node) if not isinstance(node, ast.If | ast.While) else \
            f"if {ast.unparse(node.test)}"
        source = f"{scope}: {' '.join(text.split())}"
        same = sum(1 for m in found if (m.source.split(" #")[0], m.operator, m.detail)
                   == (source, op, detail))
        found.append(Mutant(module, getattr(node, "lineno", 0), getattr(node, "col_offset", 0),
                            op, detail, source + (f" #{same + 1}" if same else ""), index))
    return found


def mutated_source(mutant: Mutant) -> str:
    tree = ast.parse((ROOT / "rippl_core" / mutant.module).read_text())
    target = next(n for i, n in enumerate(ast.walk(tree)) if i == mutant.index)

    class Replace(ast.NodeTransformer):
        def generic_visit(self, node: ast.AST) -> ast.AST:
            if node is target:
                return _apply(node, mutant.operator, mutant.detail)
            return super().generic_visit(node)

    changed = Replace().visit(copy.copy(tree))
    ast.fix_missing_locations(changed)
    return ast.unparse(changed)


def equivalents() -> dict[str, str]:
    if not EQUIVALENTS.exists():
        return {}
    data = tomllib.loads(EQUIVALENTS.read_text())
    return {entry["id"]: entry["why"] for entry in data.get("equivalent", [])}


def run_mutant(mutant: Mutant, scratch: Path, timeout: float) -> str:
    """killed, survived or timeout."""
    target = scratch / "rippl_core" / mutant.module
    original = target.read_text()
    target.write_text(mutated_source(mutant))
    try:
        env = {**os.environ, "PYTHONPATH": str(scratch), "PYTHONDONTWRITEBYTECODE": "1"}
        tests = [str(ROOT / t) for t in MODULES[mutant.module] if (ROOT / t).exists()]
        command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                   "-k", "not server", "--no-header", "-o", "addopts=", "--rootdir", str(ROOT),
                   "-c", str(ROOT / "pyproject.toml"), "--import-mode=importlib",
                   "--timeout", str(int(timeout)), *tests]
        # run from the scratch copy: `python -m` puts the working directory first on sys.path
        done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True,
                              timeout=timeout + 30)
        return "survived" if done.returncode == 0 else "killed"
    except subprocess.TimeoutExpired:
        return "killed"  # an infinite loop is caught by the tests' timeout
    finally:
        target.write_text(original)


def report(results: dict[str, list[tuple[Mutant, str]]], known: dict[str, str], sampled: bool) -> str:
    lines = ["# Mutation testing of the safety-critical modules", "",
             "Generated by `uv run python tools/mutate.py`" + (" --sample (a CI sample)" if sampled else
                                                              " (every mutant)")
             + f" on {time.strftime('%Y-%m-%d')}. A mutant is killed when its module's own tests fail;",
             "equivalent mutants (tools/mutation-equivalents.toml, each with its reason) count as not",
             f"applicable. The gate is {GATE:.0%} per module.", "",
             "| module | mutants | killed | equivalent | survived | score |", "|---|---|---|---|---|---|"]
    for module, found in results.items():
        killed = sum(1 for _, r in found if r == "killed")
        equal = sum(1 for m, r in found if r == "survived" and m.id in known)
        survived = [m for m, r in found if r == "survived" and m.id not in known]
        applicable = len(found) - equal
        score = killed / applicable if applicable else 1.0
        lines.append(f"| rippl_core/{module} | {len(found)} | {killed} | {equal} | {len(survived)} | "
                     f"{score:.1%} |")
    lines += ["", "Survivors not listed as equivalent (each needs a test):", ""]
    for found in results.values():
        lines += [f"- `{m.id}` {m.describe()}" for m, r in found if r == "survived" and m.id not in known]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--module", action="append", help="rippl_core-relative path (repeatable)")
    parser.add_argument("--sample", type=int, help="mutants per module, a seeded random sample")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--timeout", type=float, default=240)
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--no-report", action="store_true", help="do not rewrite docs/mutation.md")
    args = parser.parse_args()
    chosen = args.module or list(MODULES)
    known = equivalents()
    results: dict[str, list[tuple[Mutant, str]]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="rippl-mutate-"))
    try:
        shutil.copytree(ROOT / "rippl_core", scratch / "rippl_core",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for module in chosen:
            found = mutants(module)
            if args.sample is not None and len(found) > args.sample:
                found = sorted(random.Random(f"{args.seed}:{module}").sample(found, args.sample),
                               key=lambda m: m.index)
            if args.list:
                for m in found:
                    print(f"{m.id} {m.describe()}")
                continue
            results[module] = []
            started = time.monotonic()
            for n, mutant in enumerate(found, 1):
                outcome = run_mutant(mutant, scratch, args.timeout)
                results[module].append((mutant, outcome))
                mark = "equivalent" if outcome == "survived" and mutant.id in known else outcome
                print(f"[{module} {n}/{len(found)}] {mark:10} {mutant.id} {mutant.describe()}",
                      flush=True)
            print(f"{module}: {time.monotonic() - started:.0f} s", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.list:
        return 0
    text = report(results, known, args.sample is not None)
    if not args.no_report:
        REPORT.write_text(text)
    print(text)
    failing = []
    for module, found in results.items():
        equal = sum(1 for m, r in found if r == "survived" and m.id in known)
        killed = sum(1 for _, r in found if r == "killed")
        applicable = len(found) - equal
        if applicable and killed / applicable < GATE:
            failing.append(module)
    if failing:
        print(f"mutation gate FAILED (< {GATE:.0%}): {', '.join(failing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
