"""Mutation testing of Rippl's safety-critical modules: does the suite notice when the code is wrong?

    uv run python tools/mutate.py                  # every listed module, every mutant
    uv run python tools/mutate.py --sample 8       # CI: 8 mutants per module (seeded, reproducible)
    uv run python tools/mutate.py --module causal/preflight.py --list   # the mutants, not run

Each module is mutated against its own tests (the map below). A mutant is one small change to the
module's syntax tree: a comparison flipped (== !=, < >=, in / not in, is / is not), `and`/`or`
swapped, a `not` dropped, a condition negated, a boolean or number constant changed, a `return`
returning None, a `raise` removed. A mutant is killed when a test fails; it survives when they all
pass. Survivors are either killed by a new test or listed in tools/mutation-equivalents.toml with
the reason they cannot be told apart from the original (an equivalent mutant). The gate: every
module scores at least 95%, counting listed equivalents as not applicable; the exit status is 1
when a module misses it (with --sample: when a sampled mutant survives that is not listed).

How a module is run: a scratch copy of rippl_core goes first on sys.path. The module's tests run
once unmutated (they must pass) under a line tracer (sys.monitoring), which records the tests that
execute each line. Each mutant then runs, stopping at the first failure, the tests that execute
its lines first; if they all pass, the rest of the module's tests (so a survivor has passed every
test of its module, as in a plain run). The embedded backend only (`-k "not server"`, no cluster).
Each run is a fresh process forked from this one after it imported the third-party libraries the
tests use (never rippl_core): the per-mutant cost is the tests, not the imports.

Why a small runner rather than mutmut or cosmic-ray: the tests run against real FalkorDB servers
started by session fixtures, which forking runners re-enter per mutant in ways that leave servers
behind; and the gate needs each module judged by its own tests only. Here every mutant's run is
its own pytest session in its own process (its servers stop with it; their watchdogs see to a
killed one), nothing shared, nothing left running. Results go to docs/mutation.md.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import hashlib
import importlib
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import tomllib
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENTS = ROOT / "tools" / "mutation-equivalents.toml"
REPORT = ROOT / "docs" / "mutation.md"
GATE = 0.95

# module (under rippl_core/) -> the tests that specify it
MODULES: dict[str, list[str]] = {
    "causal/preflight.py": ["tests/causal/test_preflight.py", "tests/causal/test_preflight_gaps.py",
                            "tests/causal/test_blockers.py"],
    "adapters/toolguard.py": ["tests/test_adapters.py", "tests/test_toolguard.py"],
    "review/receipts.py": ["tests/review/test_receipts.py", "tests/review/test_canonical_json.py",
                           "tests/review/test_receipt_verification.py", "tests/review/test_keys.py"],
    "review/merkle.py": ["tests/review/test_merkle.py"],
    "review/keys.py": ["tests/review/test_keys.py"],
    "review/heads.py": ["tests/review/test_keys.py"],
    "causal/tms.py": ["tests/causal/test_tms.py", "tests/causal/test_tms_graph.py"],
    "capture/context.py": ["tests/capture/test_context_property.py"],
    "capture/arguments.py": ["tests/capture/test_arguments.py"],
    "capture/chains.py": ["tests/capture/test_chains.py", "tests/capture/test_contexts_migration.py"],
    "capture/memory.py": ["tests/capture/test_memory.py", "tests/capture/test_memory_property.py"],
    "beliefs/memory.py": ["tests/beliefs/test_memory.py", "tests/beliefs/test_property.py",
                          "tests/beliefs/test_changes.py", "tests/beliefs/test_models_fast.py",
                          "tests/capture/test_memory.py"],
    "capture/run.py": ["tests/capture/test_run.py", "tests/capture/test_veto_holds.py",
                       "tests/capture/test_flow.py", "tests/causal/test_round_trips.py",
                       "tests/capture/test_decide_own.py", "tests/capture/test_freshness.py",
                       "tests/capture/test_tool_schemas.py"],
    "console/auth.py": ["tests/console/test_auth.py", "tests/console/test_auth_limits.py",
                        "tests/console/test_monitors.py", "tests/console/test_auth_provider.py"],
    "console/signin.py": ["tests/console/test_signin.py"],
    "adapters/checkpoints.py": ["integrations/langgraph/tests/test_langgraph_tamper.py"],
    "identity/keys.py": ["tests/identity/test_issuer.py", "tests/identity/test_tokens.py"],
    "identity/issuer.py": ["tests/identity/test_issuer.py", "tests/identity/test_tokens.py"],
    "identity/tokens.py": ["tests/identity/test_tokens.py"],
    "identity/roles.py": ["tests/identity/test_roles.py"],
    "mcp/scopes.py": ["tests/mcp/test_scopes.py"],
    "mcp/gate.py": ["tests/mcp/test_gate.py"],
    "mcp/auth.py": ["tests/mcp/test_gate.py"],
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
    end_line: int = 0  # the last line of the mutated code (an if's: of its test)
    in_function: bool = False  # inside a function's body (not its signature, not module level)

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
        last = node.test if isinstance(node, ast.If | ast.While) else node
        line = getattr(node, "lineno", 0)
        inside = any(isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                     and f.body[0].lineno <= line <= (f.end_lineno or 0) for f in ast.walk(tree))
        found.append(Mutant(module, line, getattr(node, "col_offset", 0),
                            op, detail, source + (f" #{same + 1}" if same else ""), index,
                            getattr(last, "end_lineno", None) or line, inside))
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


PYTEST = ["-x", "-q", "-p", "no:cacheprovider", "-p", "no:langsmith_plugin", "-k", "not server",
          "-m", "not cluster and not install", "--no-header", "-o", "addopts=", "--rootdir", str(ROOT),
          "-c", str(ROOT / "pyproject.toml"), "--import-mode=importlib"]
IMPORT = "<import>"  # lines run outside any test (module level, collection): every test covers them


class Tracer:
    """A pytest plugin recording, per line of one file, the tests that run it (sys.monitoring; each
    line reported once per test), and the modules the session imported."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.current = IMPORT
        self.lines: dict[int, list[str]] = {}
        self.order: list[str] = []
        self.seconds: dict[str, float] = {}
        self.modules: list[str] = []
        monitoring = sys.monitoring
        monitoring.use_tool_id(monitoring.COVERAGE_ID, "rippl-mutate")
        monitoring.register_callback(monitoring.COVERAGE_ID, monitoring.events.LINE, self._line)
        monitoring.set_events(monitoring.COVERAGE_ID, monitoring.events.LINE)

    def _line(self, code: object, line: int) -> object:
        if getattr(code, "co_filename", None) == self.filename:
            tests = self.lines.setdefault(line, [])
            if not tests or tests[-1] != self.current:
                tests.append(self.current)
        return sys.monitoring.DISABLE

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        self.current = item.nodeid
        self.order.append(item.nodeid)
        sys.monitoring.restart_events()
        try:
            return (yield)
        finally:
            self.current = "<between>"  # teardown of shared fixtures: not one test's

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self) -> None:
        self.modules = list(sys.modules)  # in import order (`_asyncio` before `asyncio` breaks it)


class Runner:
    """Runs pytest sessions on the scratch copy, each in a child forked from this process.

    After the first baseline this process has imported what the tests import, rippl_core (the
    unmutated scratch copy) included. A mutant inside a function body runs in a child that swaps
    the mutated functions' code in place (every reference to them sees the mutant, and nothing is
    imported again); any other mutant (module level, or a line run at import) runs in a child that
    drops rippl_core and imports the mutated file afresh."""

    def __init__(self, scratch: Path, timeout: float) -> None:
        self.scratch = scratch
        self.timeout = timeout
        self.preloaded = False
        self.log = scratch / "pytest.log"  # the last session's output
        sys.path.insert(0, str(scratch))  # here, in every child, and in their subprocesses
        os.environ["PYTHONPATH"] = str(scratch)
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        sys.dont_write_bytecode = True

    def _fork(self, args: list[str], prepare: Callable[[], object] = lambda: None,
              trace: str | None = None, result: Path | None = None) -> str:
        """passed, failed, timeout or error (the session could not run). `prepare` runs in the
        child first; with `trace` (a file name), `result` gets what the tracer found (JSON)."""
        pid = os.fork()
        if pid == 0:  # the child: one pytest session, then exit without returning here
            code = 3
            try:
                os.setpgid(0, 0)
                log = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(log, 1)
                os.dup2(log, 2)
                os.chdir(self.scratch)
                prepare()
                tracer = Tracer(trace) if trace else None
                code = int(pytest.main([*PYTEST, "--timeout", str(int(self.timeout)), *args],
                                       plugins=[tracer] if tracer else []))
                if tracer is not None and result is not None and code == 0:
                    result.write_text(json.dumps({"lines": tracer.lines, "order": sorted(
                        tracer.order, key=lambda t: tracer.seconds.get(t, 0.0)),
                                                  "modules": tracer.modules}))
                # no atexit handlers: those registered before the fork are the parent's
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        deadline = time.monotonic() + self.timeout + 60
        try:
            while time.monotonic() < deadline:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:  # pytest: 0 passed, 1 a test failed, 2 a collection error; else broken
                    code = os.waitstatus_to_exitcode(status)
                    return {0: "passed", 1: "failed", 2: "failed"}.get(code, f"error {code}")
                time.sleep(0.05)
            return "timeout"
        finally:  # a timeout, or this run interrupted: the child and its processes go too
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)

    @staticmethod
    def _fresh() -> None:
        """In a child: forget rippl_core, so that the tests import the (mutated) files."""
        for name in [n for n in sys.modules if n.startswith("rippl")]:
            del sys.modules[name]

    def baseline(self, module: str) -> tuple[dict[int, list[str]], list[str]]:
        """Run the module's tests unmutated under the tracer: which tests run each line, and every
        test, quickest first. Then import (here, once) what they imported, bar the tests."""
        filename = str(self.scratch / "rippl_core" / module)
        with tempfile.TemporaryDirectory() as folder:
            result = Path(folder) / "trace.json"
            for _ in range(2):  # once more if it fails: a flaky test under load
                outcome = self._fork(tests(module), self._fresh, filename, result)
                if outcome == "passed" and result.exists():
                    break
            else:
                raise SystemExit(f"{self.log.read_text()}\n{module}: its tests fail unmutated "
                                 f"({outcome}); fix them first")
            found = json.loads(result.read_text())
        if not self.preloaded:
            self.preloaded = True
            own = ("tests", "conftest", "helpers_", "test_", "__main__", "__mp_main__")
            for name in found["modules"]:
                if not name.startswith(own):
                    with contextlib.suppress(Exception):
                        importlib.import_module(name)
            loaded = sys.modules.get("rippl_core")
            if loaded is None or not str(loaded.__file__).startswith(str(self.scratch)):
                raise SystemExit(f"rippl_core was imported from {loaded and loaded.__file__}, not "
                                 f"from the scratch copy {self.scratch}")
        return {int(line): t for line, t in found["lines"].items()}, found["order"]

    def _patch(self, mutant: Mutant) -> list[tuple[types.FunctionType, types.CodeType]] | None:
        """The functions of the loaded module whose code the mutant changes, with their mutated
        code; None when the mutant cannot be applied that way."""
        name = "rippl_core." + mutant.module.removesuffix(".py").replace("/", ".")
        loaded = sys.modules.get(name)
        if not mutant.in_function or loaded is None:
            return None
        path = str(self.scratch / "rippl_core" / mutant.module)
        before = _codes(compile(ast.unparse(ast.parse(Path(path).read_text())), path, "exec"))
        after = _codes(compile(mutated_source(mutant), path, "exec"))
        if before.keys() != after.keys():
            return None
        changed = {q for q in before if before[q] != after[q]}
        outermost = {q for q in changed if not any(q.startswith(f"{o}.") for o in changed)}
        live = {f.__code__.co_qualname: f for f in _functions(loaded, name)
                if f.__code__.co_filename == path}
        if not outermost or not outermost <= live.keys():
            return None
        plan = [(live[q], after[q]) for q in sorted(outermost)]
        for function, code in plan:  # the swap must take (the same free variables): try it
            old = function.__code__
            try:
                function.__code__ = code
            except ValueError:
                return None
            function.__code__ = old
        return plan

    def mutant(self, mutant: Mutant, covered: dict[int, list[str]], order: list[str]) -> str:
        """killed or survived: the tests running its lines first (quickest first), then (if they
        pass) the rest."""
        target = self.scratch / "rippl_core" / mutant.module
        original = target.read_text()
        target.write_text(mutated_source(mutant))
        try:
            hits = {t for line in range(mutant.line, mutant.end_line + 1) for t in covered.get(line, ())}
            plan = None if IMPORT in hits else self._patch(mutant)

            def prepare() -> None:
                if plan is None:
                    self._fresh()
                for function, code in plan or ():
                    function.__code__ = code

            every = tests(mutant.module)
            if IMPORT in hits:
                runs = [every]
            else:
                first = [t for t in order if t in hits]
                rest = [*every, *(a for t in first for a in ("--deselect", t))]
                runs = [[f"{ROOT}/{t}" for t in first], rest] if first else [rest]
            for args in runs:
                outcome = self._fork(args, prepare)
                if outcome.startswith("error"):  # never counted as killed: say what broke
                    print(self.log.read_text()[-3000:], file=sys.stderr)
                    return outcome
                if outcome != "passed":
                    return "killed"  # a failure, or a timeout (an infinite loop)
            return "survived"
        finally:
            target.write_text(original)


def _codes(code: types.CodeType) -> dict[str, types.CodeType]:
    """Every code object nested in `code`, by qualified name (a name used twice: its last one)."""
    found: dict[str, types.CodeType] = {}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found[const.co_qualname] = const
            found.update(_codes(const))
    return found


def _functions(owner: object, module: str, seen: set[int] | None = None) -> Iterator[types.FunctionType]:
    """The functions defined in `module`: at its top level and in its classes (methods, static
    and class methods, properties)."""
    seen = set() if seen is None else seen
    for value in list(vars(owner).values()):
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        parts = [value.fget, value.fset, value.fdel] if isinstance(value, property) else [value]
        for part in parts:
            if isinstance(part, types.FunctionType) and part.__module__ == module:
                yield part
        if isinstance(value, type) and value.__module__ == module and id(value) not in seen:
            seen.add(id(value))
            yield from _functions(value, module, seen)


def tests(module: str) -> list[str]:
    return [str(ROOT / t) for t in MODULES[module] if (ROOT / t).exists()]


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
        survived = [m for m, r in found if r != "killed" and not (r == "survived" and m.id in known)]
        applicable = len(found) - equal
        score = killed / applicable if applicable else 1.0
        lines.append(f"| rippl_core/{module} | {len(found)} | {killed} | {equal} | {len(survived)} | "
                     f"{score:.1%} |")
    lines += ["", "Survivors not listed as equivalent (each needs a test):", ""]
    for found in results.values():
        lines += [f"- `{m.id}` {m.describe()}" + ("" if r == "survived" else f" ({r}: the run broke)")
                  for m, r in found if r != "killed" and not (r == "survived" and m.id in known)]
    return "\n".join(lines) + "\n"


def _chosen(module: str, sample: int | None, seed: int) -> list[Mutant]:
    """The module's mutants, or a seeded random sample of them (in the module's order)."""
    found = mutants(module)
    if sample is not None and len(found) > sample:
        found = sorted(random.Random(f"{seed}:{module}").sample(found, sample),
                       key=lambda m: m.index)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--module", action="append", help="rippl_core-relative path (repeatable)")
    parser.add_argument("--sample", type=int, help="mutants per module, a seeded random sample")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--timeout", type=float, default=60,
                        help="seconds per test (a mutant looping forever is killed by it)")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--no-report", action="store_true", help="do not rewrite docs/mutation.md")
    parser.add_argument("--only", type=Path, help="a file of mutant ids (one a line): run only those "
                        "(e.g. the survivors of an earlier run, after tests were added)")
    parser.add_argument("--part", help="K/N: every Nth of the chosen mutants from the Kth (runs "
                        "split between processes; each reports its own part)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up (the finally blocks) on TERM
    chosen = args.module or list(MODULES)
    known = equivalents()
    results: dict[str, list[tuple[Mutant, str]]] = {}
    if args.list:
        for module in chosen:
            for m in _chosen(module, args.sample, args.seed):
                print(f"{m.id} {m.describe()}")
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="rippl-mutate-"))
    try:
        shutil.copytree(ROOT / "rippl_core", scratch / "rippl_core",
                        ignore=shutil.ignore_patterns("__pycache__"))
        runner = Runner(scratch, args.timeout)
        only = set(args.only.read_text().split()) if args.only else None
        part, parts = (int(x) for x in args.part.split("/")) if args.part else (1, 1)
        for module in chosen:
            found = [m for m in _chosen(module, args.sample, args.seed)
                     if only is None or m.id in only][part - 1::parts]
            results[module] = []
            started = time.monotonic()
            covered, order = runner.baseline(module)
            for n, mutant in enumerate(found, 1):
                began = time.monotonic()
                outcome = runner.mutant(mutant, covered, order)
                results[module].append((mutant, outcome))
                mark = "equivalent" if outcome == "survived" and mutant.id in known else outcome
                print(f"[{module} {n}/{len(found)}] {mark:10} {time.monotonic() - began:4.0f} s "
                      f"{mutant.id} {mutant.describe()}", flush=True)
            print(f"{module}: {time.monotonic() - started:.0f} s", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    text = report(results, known, args.sample is not None)
    if not args.no_report:
        REPORT.write_text(text)
    print(text)
    failing = []
    for module, found in results.items():
        equal = sum(1 for m, r in found if r == "survived" and m.id in known)
        killed = sum(1 for _, r in found if r == "killed")
        applicable = len(found) - equal
        # a sample fails on any survivor not listed; a full run below the gate
        least = applicable if args.sample is not None else GATE * applicable
        if killed < least:
            failing.append(module)
    if failing:
        rule = "a sampled mutant survived" if args.sample is not None else f"score < {GATE:.0%}"
        print(f"mutation gate FAILED ({rule}): {', '.join(failing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
