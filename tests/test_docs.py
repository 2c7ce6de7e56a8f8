"""The docs are executed: every shell command and Python block in README.md, the integration READMEs
and docs/*.md runs here, in order, each document in a fresh working directory of its own.

Blocks are parsed with Sybil (its Markdown lexers, skip and invisible-code directives):

- ```python blocks run in one namespace per document (so a later block may use an earlier one's
  names); a `<!-- invisible-code-block: python -->` comment holds the set-up a fragment leaves out
  (the chat model, the graph builder), visible in the source beside the block it serves.
- ```bash and ```sh blocks run as one bash script each, line by line, with the workspace's
  environment first on PATH (`uv run X` runs X in it, as `uv run` in a clone would). Each command
  must exit 0, unless its comment states the code: `(exit code N)`. A comment that begins with an
  ALLOW or DENY verdict (`# DENY: ...`), or says `prints "TEXT"`, is checked against the output.
- A block that cannot run here is marked where it stands, with the reason, and reported skipped:
  `<!-- skip: next "needs a GROQ_API_KEY" -->`. Only whole blocks are skipped, never a line.

Besides the blocks, any sentence that lists the CLI's exit codes must agree with `rippl --help`.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import os
import re
import shlex
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sybil import Document, Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *ROOT.glob("integrations/*/README.md"), *ROOT.glob("docs/*.md")])
SHELLS = ("bash", "sh")
RUN_LANGUAGES = ("python", *SHELLS)
EXPECTED_EXIT = re.compile(r"\(exit code (\d+)\)")
VERDICT = re.compile(r"^(ALLOW|DENY)\b")
PRINTS = re.compile(r'prints "([^"]+)"')
SHELL_TIMEOUT = 240


def split_comment(line: str) -> tuple[str, str]:
    """A shell line's command and its trailing comment (a `#` outside quotes, after a blank)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1")


def shell_commands(source: str) -> Iterator[tuple[int, str, str]]:
    """(line offset in the block, command, comment) for every command of a shell block. A
    here-document's lines belong to the command that opens it, verbatim, up to its delimiter."""
    pending: list[str] = []
    start = 0
    lines = source.splitlines()
    n = 0
    while n < len(lines):
        command, comment = split_comment(lines[n])
        if not pending:
            start = n
        if command.endswith("\\"):
            pending.append(command[:-1])
            n += 1
            continue
        pending.append(command)
        joined = " ".join(p.strip() for p in pending).strip()
        pending = []
        heredoc = HEREDOC.search(joined)
        if heredoc:  # the body, up to the line that is the delimiter alone
            body = []
            while n + 1 < len(lines) and lines[n + 1].strip() != heredoc.group(2):
                n += 1
                body.append(lines[n])
            n += 1
            joined = "\n".join([joined, *body, heredoc.group(2)])
        n += 1
        if joined:
            yield start, joined, comment


def shell_script(source: str, workdir: Path) -> str:
    """The block as a bash script that checks each command's exit code and stated output."""
    lines = [
        "set -u",
        'uv() { if [ "$1" = run ]; then shift; "$@"; else command uv "$@"; fi; }',
        f"cd {shlex.quote(str(workdir))}",
    ]
    for n, command, comment in shell_commands(source):
        expected = EXPECTED_EXIT.search(comment)
        code = int(expected.group(1)) if expected else 0
        out = f"$__docs_out/{n}"
        where = shlex.quote(f"line {n + 1} of the block: {command}")
        lines.append(f"{{ {command}\n}} > >(tee {out}) 2>&1; __rc=$?; sleep 0.05")
        lines.append(f'if [ $__rc -ne {code} ]; then echo "docs: exit code $__rc, the text says {code}:" '
                     f'{where} >&2; exit 97; fi')
        wanted = [m.group(1) for m in PRINTS.finditer(comment)]
        verdict = VERDICT.match(comment)
        if verdict:
            wanted.append(verdict.group(1))
        for text in wanted:
            lack = shlex.quote(f"docs: the output lacks {text}:")
            lines.append(f"if ! grep -qF -- {shlex.quote(text)} {out}; then "
                         f"echo {lack} {where} >&2; exit 98; fi")
    return "\n".join(lines) + "\n"


def evaluate_shell(example: Example) -> str | None:
    workdir = Path(example.namespace["__workdir__"])
    if "__keeper__" not in example.namespace:
        # The docs' commands use the embedded database in ./.rippl/ (each `rippl` starts its server,
        # seconds each); a handle held open meanwhile keeps that server up, so they join it. What
        # they do is unchanged.
        from rippl_core import Rippl

        example.namespace["__keeper__"] = Rippl.open(workdir / ".rippl" / "rippl.db")
    script = shell_script(example.parsed, workdir)
    outdir = workdir / ".docs-out"
    outdir.mkdir(exist_ok=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "__docs_out": str(outdir), "COLUMNS": "100", "NO_COLOR": "1"}
    env.pop("GROQ_API_KEY", None)  # the blocks that run are the offline ones, as their text says
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                          timeout=SHELL_TIMEOUT, check=False)
    if done.returncode != 0:
        return (f"{example.path}:{example.line}: the shell block failed (exit {done.returncode})\n"
                f"{done.stderr[-3000:]}\n--- stdout ---\n{done.stdout[-3000:]}")
    return None


def evaluate_python(example: Example) -> None:
    """Run a Python block in the document's namespace; top-level `await` runs on the document's
    own event loop (so an AsyncRippl handle opened in one block serves the next)."""
    source = "\n" * example.line + example.parsed  # tracebacks name the document's lines
    code = compile(source, example.path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                   dont_inherit=True)
    namespace = example.namespace
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        loop = namespace.setdefault("__loop__", asyncio.new_event_loop())
        loop.run_until_complete(result)


SYBIL = Sybil(
    parsers=[
        CodeBlockParser(language="python", evaluator=evaluate_python),
        *(CodeBlockParser(language=lang, evaluator=evaluate_shell) for lang in SHELLS),
        SkipParser(),
    ],
    path=str(ROOT),
)


class BlockNotRunHere(UserWarning):
    """A block marked `<!-- skip: next "reason" -->`: reported, with its reason, on every run."""


def doc_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh directory where the docs' relative paths (examples/...) resolve as in a clone."""
    for name in ("examples", "bench", "integrations", "tools"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def close_all(namespace: dict[str, Any]) -> None:
    """Close what a document's Python blocks opened and left open (a Rippl handle, a saver)."""
    loop = namespace.get("__loop__")
    for value in list(namespace.values()):
        close = getattr(value, "close", None)
        if close is not None and type(value).__module__.startswith(("rippl_core", "rippl_")):
            with contextlib.suppress(Exception):  # a handle closed twice is fine here
                done = close()
                if inspect.iscoroutine(done):
                    if loop is None:
                        done.close()
                    else:
                        loop.run_until_complete(done)
    if loop is not None:
        loop.close()


# Documents whose shell blocks are one session (a server started in one block serves the next):
# each is run whole, as one script, by its own test (named here), not block by block.
ONE_SESSION = {"docs/monitors.md": "tests/test_docs_monitors.py"}


@pytest.mark.parametrize("path", DOCS, ids=doc_id)
def test_doc_runs(path: Path, workdir: Path) -> None:
    if doc_id(path) in ONE_SESSION:
        pytest.skip(f"its blocks are one shell session: {ONE_SESSION[doc_id(path)]} runs them")
    document: Document = SYBIL.parse(path)
    document.namespace.update({"__name__": "__docs__", "__workdir__": str(workdir)})
    skipped: list[str] = []
    try:
        for example in document.examples():
            try:
                example.evaluate()
            except Exception as exc:  # unittest's SkipTest: a block marked as not run here
                if type(exc).__name__ == "SkipTest":
                    skipped.append(f"line {example.line}: {exc}")
                    continue
                raise
    finally:
        close_all(document.namespace)
    for reason in skipped:  # visible in the run's warnings summary, not silent
        warnings.warn(BlockNotRunHere(f"{doc_id(path)}, {reason}"), stacklevel=1)


def blocks(text: str) -> Iterator[tuple[int, str]]:
    for m in re.finditer(r"^```(\w*)", text, re.M):
        yield text[:m.start()].count("\n") + 1, m.group(1)


@pytest.mark.parametrize("path", DOCS, ids=doc_id)
def test_every_runnable_block_is_collected(path: Path) -> None:
    """A ```python, ```bash or ```sh block the parsers missed (an odd fence) would go untested."""
    document = SYBIL.parse(path)
    seen = {document.line_column(start).split(",")[0] for start, _ in document.regions}
    text = path.read_text()
    fences = [line for line, lang in blocks(text) if lang in RUN_LANGUAGES]
    missed = [line for line in fences if f"line {line}" not in seen]
    assert not missed, f"{doc_id(path)}: runnable blocks not collected at lines {missed}"


def cli_exit_codes() -> dict[str, int]:
    """The exit codes `rippl --help` states, e.g. {'ok': 0, 'denied': 3}."""
    done = subprocess.run([sys.executable, "-m", "rippl_core.cli", "--help"], capture_output=True,
                          text=True, check=True, env={**os.environ, "COLUMNS": "200"})
    said = " ".join(done.stdout.split())
    m = re.search(r"Exit codes: ([^.]*)\.", said)
    assert m is not None, said
    return {name.strip(): int(code) for code, name in re.findall(r"(\d+) ([a-z ]+?)(?:,|$)", m.group(1))}


def test_exit_codes_in_prose_match_the_cli() -> None:
    """Every sentence in the docs that lists the CLI's exit codes says what `rippl --help` says."""
    codes = cli_exit_codes()
    assert codes.get("denied") == 3, codes
    wrong: list[str] = []
    for path in DOCS:
        text = " ".join(path.read_text().split())
        for m in re.finditer(r"exit codes?:? ((?:\d+ [a-z ]+?(?:, |\)|;|\.))+)", text, re.I):
            for code, name in re.findall(r"(\d+) ([a-z ]+?)(?:,|\)|;|\.)", m.group(1)):
                if codes.get(name.strip()) not in (None, int(code)):
                    wrong.append(f"{doc_id(path)}: '{m.group(0)}' ({name.strip()} is "
                                 f"{codes[name.strip()]})")
    assert not wrong, "\n".join(wrong)


def test_shell_runner_reads_the_stated_exit_code() -> None:
    script = shell_script(textwrap.dedent("""\
        rippl check ACT-1   # DENY: it rests on CLM-1 (exit code 3)
        echo 'a # b' \\
          done  # prints "a # b done"
        """), Path("/tmp"))
    assert "-ne 3 ]" in script and "grep -qF -- DENY" in script
    assert "echo 'a # b' done" in script and "grep -qF -- 'a # b done'" in script


def test_a_here_document_is_part_of_its_command(tmp_path: Path) -> None:
    """The lines of a here-document (a `#` among them) go to the command that opens it, and the
    command after it is a command of its own."""
    script = shell_script(textwrap.dedent("""\
        cat > notes <<'EOF'
        # not a comment
        two words
        EOF
        cat notes   # prints "two words"
        """), tmp_path)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False,
                          env={**os.environ, "__docs_out": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "notes").read_text() == "# not a comment\ntwo words\n"


@pytest.mark.parametrize("path", DOCS, ids=doc_id)
def test_a_block_not_run_says_why(path: Path) -> None:
    """Only whole blocks are skipped, each with a reason, right before the block it marks."""
    text = path.read_text()
    for m in re.finditer(r"<!-- skip: ([^\n]*?)-->\n(.*)", text):
        directive, following = m.group(1).strip(), m.group(2)
        assert re.fullmatch(r'next "[^"]{10,}"', directive), f"{doc_id(path)}: {m.group(0)!r}"
        assert following.startswith("```"), f"{doc_id(path)}: a skip must precede its block"


def test_a_document_run_as_one_session_has_its_test() -> None:
    for doc, test in ONE_SESSION.items():
        assert (ROOT / doc).exists() and (ROOT / test).exists(), (doc, test)
        assert doc.split("/")[-1] in (ROOT / test).read_text()
