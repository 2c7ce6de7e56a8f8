"""The CLI as a user meets it: never a traceback (one handler maps every expected exception class),
distinct exit codes (0 ok, 1 error, 2 usage, 3 denied), reading commands that refuse a missing
database or graph instead of creating one, user text printed as it is (never read as markup),
choices that are real choices, errors in the CLI's words, and public statuses in `watch`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rippl_core import Rippl
from rippl_core._runtime.keys import Keys
from rippl_core.cli import app
from rippl_core.cli.app import EXIT_DENIED, EXIT_ERROR, EXIT_USAGE, styled

ROOT = Path(__file__).parents[2]
INCIDENT = ROOT / "examples" / "incident.yaml"
BINARY = bytes(range(256)) * 4
runner = CliRunner()


def run(db: Path, *args: str, graph: str = "rippl") -> Any:
    return runner.invoke(app, ["--db", str(db), "--graph", graph, *args])


def no_traceback(result: Any) -> None:
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "rippl.db"
    assert run(path, "load", str(INCIDENT)).exit_code == 0
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("files")
    made = {"binary": BINARY, "empty": b"", "not hex": b"not a key at all\n",
            "short hex": b"abcd\n", "odd hex": b"abc\n", "not json": b"{alice: 1",
            "json list": b'["alice"]', "json bad key": b'{"alice": "zz"}', "json number": b'{"alice": 5}'}
    out = {}
    for name, content in made.items():
        out[name] = folder / name.replace(" ", "-")
        out[name].write_bytes(content)
    out["folder"] = folder / "a-folder"
    out["folder"].mkdir()
    out["missing"] = folder / "missing"
    return out


# ------------------------------------------------------------------------ never a traceback

BAD_FILE_COMMANDS = {
    "approve --key": lambda f: ["review", "approve", "REV-x", "--by", "alice", "--key", f],
    "reject --key": lambda f: ["review", "reject", "REV-x", "--by", "alice", "--key", f],
    "export --key": lambda f: ["receipts", "export", "/dev/null", "--key", f, "--by", "alice"],
    "verify --keys": lambda f: ["receipts", "verify", "--keys", f],
    "verify --file": lambda f: ["receipts", "verify", "--file", f],
    "load": lambda f: ["load", f],
    "ingest": lambda f: ["ingest", f],
}
BAD_FILES = ["binary", "empty", "not hex", "short hex", "odd hex", "not json", "json list",
             "json bad key", "json number", "folder", "missing"]


@pytest.mark.parametrize("kind", BAD_FILES)
@pytest.mark.parametrize("command", list(BAD_FILE_COMMANDS))
def test_a_bad_file_is_a_usage_error_never_a_traceback(db: Path, files: dict[str, Path],
                                                       command: str, kind: str) -> None:
    result = run(db, *BAD_FILE_COMMANDS[command](str(files[kind])))
    no_traceback(result)
    assert result.exit_code in (EXIT_USAGE, EXIT_ERROR), result.output
    said = ("error:", "chain broken", "failed:", "rejected")  # ingest reports each document
    # (click before 8.2 / typer 0.16 spell a usage error "Error: Invalid value: ...")
    assert any(word in result.output.lower() for word in said), result.output


def test_the_installed_command_prints_no_traceback(db: Path, files: dict[str, Path]) -> None:
    """The real entry point, as a shell runs it."""
    rippl = Path(sys.executable).with_name("rippl")
    for args in (["receipts", "verify", "--file", str(files["binary"])],
                 ["review", "approve", "REV-x", "--by", "a", "--key", str(files["not hex"])],
                 ["receipts", "verify", "--keys", str(files["not json"])],
                 ["load", str(files["binary"])]):
        done = subprocess.run([str(rippl), "--db", str(db), *args], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == EXIT_USAGE, done.stderr
        assert "Traceback" not in done.stderr + done.stdout
        assert done.stderr.lstrip().startswith("error: "), done.stderr  # rich 13 may open a line


def test_an_unexpected_exception_is_one_line_not_a_traceback(db: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(Rippl, "stats", broken)
    result = run(db, "stats")
    no_traceback(result)
    assert result.exit_code == EXIT_ERROR
    assert "unexpected ZeroDivisionError: a bug" in result.output and "RIPPL_DEBUG" in result.output


def test_a_usage_error_raised_in_a_command_is_a_usage_error(db: Path, files: dict[str, Path]) -> None:
    """A usage error found while a command runs (a folder with no document) is a usage error in
    the CLI's words, not an unexpected bug."""
    result = run(db, "ingest", str(files["folder"]))
    no_traceback(result)
    assert result.exit_code == EXIT_USAGE, result.output
    assert "error:" in result.output and "holds no *.md file" in " ".join(result.output.split())
    assert "unexpected" not in result.output


def test_click_exceptions_raised_in_a_command_keep_their_meaning(db: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """typer's own exceptions (click's, vendored by newer typers) pass through the error handler
    as what they are: a typer.BadParameter is a usage error, not an unexpected bug."""
    import typer

    def bad(*args: object, **kwargs: object) -> None:
        raise typer.BadParameter("not like that")

    monkeypatch.setattr(Rippl, "stats", bad)
    result = run(db, "stats")
    no_traceback(result)
    assert result.exit_code == EXIT_USAGE, result.output
    assert "not like that" in result.output and "unexpected" not in result.output


# ---------------------------------------------------------------------------------- exit codes


def test_denied_usage_and_error_have_distinct_exit_codes(db: Path) -> None:
    assert run(db, "check", "ACT-001").exit_code == 0
    assert run(db, "retract", "CLM-001", "--reason", "disk", "--by", "ops").exit_code == 0
    try:
        assert run(db, "check", "ACT-001").exit_code == EXIT_DENIED == 3
        assert run(db, "check", "ACT-001", "--at-risk", "maybe").exit_code == EXIT_USAGE == 2
        assert run(db, "check", "ACT-001", "--as-of", "yesterday").exit_code == EXIT_USAGE
        assert run(db, "check", "ACT-001", "--nope").exit_code == EXIT_USAGE
        assert run(db, "show", "NOPE-1").exit_code == EXIT_ERROR == 1
    finally:
        assert run(db, "reinstate", "CLM-001", "--reason", "fixed", "--by", "ops").exit_code == 0
    assert {EXIT_DENIED, EXIT_USAGE, EXIT_ERROR} == {1, 2, 3}


# ------------------------------------------------------------- reading never creates a database

READING = [["show", "CLM-001"], ["blast-radius", "CLM-001"], ["check", "ACT-001"], ["stats"],
           ["review", "list"], ["review", "show", "REV-x"], ["receipts", "list"],
           ["receipts", "verify"], ["receipts", "export", "out.jsonl"], ["history", "CLM-001"],
           ["ask", "a", "t"], ["beliefs", "a"], ["timeline", "a", "t"], ["why", "a", "t",
           "2026-10-01T00:00:00Z"], ["what-if", "a", "t", "--without", "S"],
           ["watch", "--count", "1"], ["retract", "C", "--reason", "r", "--by", "b"],
           ["propose", "C", "--reason", "r", "--by", "b"]]


@pytest.mark.parametrize("args", READING, ids=lambda a: " ".join(a[:2]))
def test_a_typo_in_db_is_refused_not_created(tmp_path: Path, args: list[str]) -> None:
    typo = tmp_path / "rippl.bd"
    result = run(typo, *args)
    no_traceback(result)
    assert result.exit_code == EXIT_ERROR, result.output
    assert "no database at" in result.output and "--db" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing was created


@pytest.mark.parametrize("args", READING[:6], ids=lambda a: " ".join(a[:2]))
def test_a_typo_in_graph_is_refused_not_created(db: Path, args: list[str]) -> None:
    result = run(db, *args, graph="rippI")
    assert result.exit_code == EXIT_ERROR, result.output
    assert "no graph 'rippI'" in result.output and "--graph" in result.output
    with Rippl.open(db, graph="rippl") as rippl:
        assert not rippl.redis.exists("rippI")


# ------------------------------------------------------------------ user text is never markup

TRICKY = ["claim [/dim] closes a tag", "a list[int] and a dict[str, int]", "install 'rippl-core[mcp]'",
          "[bold]not bold[/bold]", "ends with a backslash \\", "escaped \\[red] bracket",
          ":thumbs_up: not an emoji", "[link=https://x.example]click[/link]"]


@pytest.fixture(scope="module")
def tricky(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tricky") / "rippl.db"
    with Rippl.open(path) as rippl:
        rippl.add_source("SRC-[/dim]", "source [/dim] of truth")
        for i, text in enumerate(TRICKY):
            rippl.add_claim(f"CLM-{i}", text, sources=["SRC-[/dim]"])
            rippl.believe("agent[x]", f"CLM-{i}", topic="topic[/dim]",
                          valid_from=f"2026-10-0{i + 1}T00:00:00Z")
        rippl.add_decision("DEC-[b]", "decide [/b] now", premises=[f"CLM-{i}" for i in range(3)])
        review = rippl.propose_retraction("CLM-0", reason="because [/dim] it is", by="mon[itor]")
        rippl.approve(review.id, by="alice[/x]")
    return path


def collapse(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("args", [
    *[["show", f"CLM-{i}"] for i in range(len(TRICKY))],
    ["blast-radius", "SRC-[/dim]"], ["review", "list", "--status", "all"], ["receipts", "list"],
    ["timeline", "agent[x]", "topic[/dim]"], ["ask", "agent[x]", "topic[/dim]"],
    ["beliefs", "agent[x]"], ["check", "DEC-[b]"],
], ids=lambda a: " ".join(a[:2]))
def test_user_text_is_printed_as_it_is(tricky: Path, args: list[str]) -> None:
    result = run(tricky, *args)
    no_traceback(result)
    assert result.exit_code in (0, EXIT_DENIED), result.output
    out = collapse(result.output)
    shown = [t for t in [*TRICKY, "SRC-[/dim]", "DEC-[b]", "agent[x]", "topic[/dim]", "alice[/x]",
                         "because [/dim] it is", "mon[itor]"] if collapse(t) in out]
    assert shown, f"none of the texts appears as it is in: {result.output}"
    if args[0] == "show":
        assert collapse(TRICKY[int(args[1].split("-")[1])]) in out


def test_styled_puts_values_in_after_the_markup_is_read() -> None:
    for value in [*TRICKY, "\\", "\\[", "a\\", "[", "]", "{}", "{0}"]:
        text = styled("[bold]{}[/bold] and [red]{}[/red]", value, value)
        assert text.plain == f"{value} and {value}"
        assert {span.style for span in text.spans} == {"bold", "red"}


# ------------------------------------------------------------------- choices and the CLI's words


def test_choices_are_listed_in_help_and_refused_with_the_choices(db: Path) -> None:
    help_text = run(db, "check", "--help").output
    assert "block|allow" in help_text and "table|json" in help_text
    assert "table|json|mermaid|dot" in run(db, "blast-radius", "--help").output
    assert "table|json" in run(db, "watch", "--help").output
    for args, option in ((["check", "ACT-001", "--at-risk", "maybe"], "--at-risk"),
                         (["review", "list", "--status", "open"], "--status"),
                         (["blast-radius", "CLM-001", "--format", "svg"], "--format"),
                         (["mcp", "--transport", "pigeon"], "--transport")):
        result = run(db, *args)
        assert result.exit_code == EXIT_USAGE, result.output
        assert option in result.output
        assert "pydantic" not in result.output and "http" not in result.output.split("--transport")[0]


@pytest.mark.parametrize("args", [
    ["review", "show", "REV-nope"],
    ["why", "nobody", "t", "2026-10-01T00:00:00Z"],
    ["check", "ACT-001", "--as-of", "2026-10-09T14:00:00"],
    ["check", "ACT-001", "--known-at", "noon"],
    ["load", "CONFLICT"],
], ids=lambda a: " ".join(a[:2]))
def test_errors_speak_the_cli_language(db: Path, tmp_path: Path, args: list[str]) -> None:
    if args == ["load", "CONFLICT"]:
        changed = tmp_path / "changed.yaml"
        changed.write_text(INCIDENT.read_text().replace("Shard 09 is healthy: 0", "Shard 09 is fine: 0"))
        args = ["load", str(changed)]
    result = run(db, *args)
    assert result.exit_code in (EXIT_ERROR, EXIT_USAGE), result.output
    python = re.findall(r"\b\w+\(\)|\b\w+=(?:True|False|'|\")|datetime|Policy\(", result.output)
    assert not python, (python, result.output)


# ------------------------------------------------------------------------ watch and --format


def test_watch_shows_public_statuses_and_json_lines(db: Path) -> None:
    rippl_bin = Path(sys.executable).with_name("rippl")
    watchers = {fmt: subprocess.Popen([str(rippl_bin), "--db", str(db), "watch", "--count", "2",
                                       "--format", fmt], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, cwd=ROOT)
                for fmt in ("table", "json")}
    with Rippl.open(db) as rippl:
        deadline = time.monotonic() + 120
        while True:  # both watchers are subscribed (events are sharded pub/sub)
            _, subscribers = rippl.redis.execute_command("PUBSUB", "SHARDNUMSUB",
                                                         Keys("rippl").events)
            if int(subscribers) >= 2:
                break
            assert time.monotonic() < deadline, "the watchers never subscribed"
            time.sleep(0.1)
        rippl.retract("CLM-004", reason="watch", by="test")
        rippl.reinstate("CLM-004", reason="watch", by="test")
    table, _ = watchers["table"].communicate(timeout=60)
    lines, _ = watchers["json"].communicate(timeout=60)
    assert "Verified -> Retracted" in table, table
    assert not re.search(r"\b(IN|OUT|AT_RISK)\b", table), table
    events = [json.loads(line) for line in lines.splitlines()]
    assert events and events[0]["after_status"] == "Retracted"


def test_every_printing_command_takes_the_one_format_option(db: Path) -> None:
    for args in (["show", "CLM-001"], ["check", "ACT-001"], ["stats"], ["review", "list"],
                 ["receipts", "list"], ["receipts", "verify"], ["blast-radius", "CLM-001"],
                 ["history", "CLM-001"]):
        result = run(db, *args, "--format", "json")
        assert result.exit_code == 0, (args, result.output)
        json.loads(result.stdout)
        assert run(db, *args, "--json").exit_code == EXIT_USAGE  # one convention, not two


def test_load_reports_its_progress(tmp_path: Path) -> None:
    stages: list[tuple[str, int, int]] = []
    spec = {"claims": [{"id": f"C{i}", "text": f"claim {i}"} for i in range(2500)]}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(spec))
    with Rippl.open(tmp_path / "rippl.db") as rippl:
        rippl.load(path, progress=lambda *stage: stages.append(stage))
    assert stages[0] == ("read", 0, 1) and ("read", 1, 1) in stages
    assert [s for s in stages if s[0] == "check"] == [("check", 0, 2500), ("check", 1000, 2500),
                                                      ("check", 2000, 2500), ("check", 2500, 2500)]
    assert stages[-1] == ("write", 1, 1)
    env = {**os.environ, "COLUMNS": "100"}
    done = subprocess.run([str(Path(sys.executable).with_name("rippl")), "--db",
                           str(tmp_path / "cli.db"), "load", str(path)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0 and "2500 created" in " ".join(done.stdout.split()), done.stderr


def test_install_hints_keep_their_extra(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rippl_core.cli import mcp as mcp_command
    from rippl_core.mcp import INSTALL_HINT, McpUnavailableError

    def missing(**options: object) -> None:
        raise McpUnavailableError(f"the MCP SDK is not installed. Install it with: {INSTALL_HINT}")

    monkeypatch.setattr(mcp_command, "serve", missing)
    result = run(db, "mcp")
    assert result.exit_code == EXIT_ERROR
    assert "pip install 'rippl-core[mcp]'" in collapse(result.output)
