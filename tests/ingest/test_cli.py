"""`rippl ingest`: the acceptance command, dry runs in every format, rejections and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers_ingest import DOCS, EXAMPLES, PROSE, ROOT, dump
from typer.testing import CliRunner

from rippl_core import Kind, Rippl
from rippl_core._runtime.validation import semantic_id
from rippl_core.cli import app
from rippl_core.ingest import Document, StructuredExtractor

runner = CliRunner()


@pytest.fixture
def cli(open_rippl: Callable[..., Rippl], backend: dict[str, object]
        ) -> tuple[Rippl, Callable[..., object]]:
    """A fresh graph and a function running `rippl --db/--url ... --graph G ARGS`."""
    handle = open_rippl()
    where = ["--db", str(backend["path"])] if "path" in backend else ["--url", str(backend["url"])]

    def invoke(*args: str) -> object:
        return runner.invoke(app, [*where, "--graph", handle.graph, *args])

    return handle, invoke


def test_ingest_the_examples_then_again(cli: tuple[Rippl, Callable[..., object]]) -> None:
    rippl, invoke = cli
    result = invoke("ingest", *map(str, EXAMPLES), "--extractor", "structured")
    assert result.exit_code == 0, result.output
    assert "3 documents" in result.stdout
    assert "47" in result.stdout  # added, in the totals row
    assert rippl.stats().nodes == {"Source": 12, "Claim": 17, "Decision": 8, "Action": 10}
    before = dump(rippl)
    again = invoke("ingest", *map(str, EXAMPLES))
    assert again.exit_code == 0
    assert again.stdout.count("unchanged") >= 3
    assert dump(rippl) == before


def test_dry_run_table_writes_nothing(cli: tuple[Rippl, Callable[..., object]]) -> None:
    rippl, invoke = cli
    before = dump(rippl)
    result = invoke("ingest", str(DOCS / "rfc-billing-shard-move.md"), "--dry-run")
    assert result.exit_code == 0, result.output
    assert "would be written" in result.stdout and "dry run" in result.stdout
    assert semantic_id(Kind.CLAIM, "Shard 09 is healthy") in result.stdout
    assert dump(rippl) == before


def test_dry_run_mermaid_is_clean_on_stdout(cli: tuple[Rippl, Callable[..., object]]) -> None:
    rippl, invoke = cli
    result = invoke("ingest", *map(str, EXAMPLES), "--dry-run", "--format", "mermaid")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "flowchart TD"
    assert "ingest" not in result.stdout  # the summary went to stderr
    assert "ingest with structured" in result.stderr
    healthy = semantic_id(Kind.CLAIM, "Shard 09 is healthy")
    assert sum(healthy in line and ":::added" in line for line in lines) == 1
    arrows = [line for line in lines if "-->" in line]
    assert len(arrows) == 48  # every support edge the three documents state, once
    assert rippl.stats().nodes == {}


def test_markdown_format_round_trips(cli: tuple[Rippl, Callable[..., object]], tmp_path: Path) -> None:
    _, invoke = cli
    source = DOCS / "telemetry-audit-shard-09.md"
    result = invoke("ingest", str(source), "--dry-run", "--format", "markdown")
    assert result.exit_code == 0, result.output
    written = tmp_path / "review.md"
    written.write_text(result.stdout)
    original = StructuredExtractor().extract(Document.from_path(source))
    again = StructuredExtractor().extract(Document.from_path(written))
    assert again.model_dump(exclude={"title"}) == original.model_dump(exclude={"title"})


def test_json_format(cli: tuple[Rippl, Callable[..., object]]) -> None:
    _, invoke = cli
    result = invoke("ingest", str(EXAMPLES[0]), "--format", "json")
    data = json.loads(result.stdout)
    assert data["ok"] is True
    assert data["documents"][0]["status"] == "written"
    assert len(data["documents"][0]["added"]) == 19


def test_a_rejected_document_fails_the_run_but_not_the_others(
        cli: tuple[Rippl, Callable[..., object]], tmp_path: Path) -> None:
    rippl, invoke = cli
    bad = tmp_path / "bad.md"
    bad.write_text("# Bad\n```rippl\ndecisions:\n  - ref: d\n    title: Go\n    premises: [CLM-404]\n"
                   "```\n")
    result = invoke("ingest", str(EXAMPLES[0]), str(bad))
    assert result.exit_code == 1
    assert "rejected" in result.stdout
    assert "[unknown-reference]" in result.stderr and "CLM-404" in result.stderr
    assert rippl.stats().nodes["Claim"] == 7  # the postmortem was written


def test_langchain_extractor_from_an_import_path(cli: tuple[Rippl, Callable[..., object]]) -> None:
    rippl, invoke = cli
    result = invoke("ingest", str(PROSE / "telemetry-audit-shard-09.md"), "--extractor",
                    "langchain:helpers_ingest:scripted_claims_model", "--model", "fake-7")
    assert result.exit_code == 0, result.output
    assert "langchain (fake-7)" in result.stdout
    node = rippl.get(semantic_id(Kind.CLAIM, "Shard 09 is healthy"))
    assert node.provenance["model"] == "fake-7"  # type: ignore[index]


@pytest.mark.parametrize("args, message", [
    (["--extractor", "groq"], "GROQ_API_KEY"),
    (["--extractor", "ocr"], "unknown extractor 'ocr'"),
    (["--extractor", "langchain:nowhere.to:be_found"], "cannot import nowhere.to:be_found"),
    (["--extractor", "structured", "--model", "x"], "uses no model"),
])
def test_bad_extractor_choices(args: list[str], message: str, monkeypatch: pytest.MonkeyPatch,
                               tmp_path: Path) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    result = runner.invoke(app, ["--db", str(tmp_path / "never.db"), "ingest", str(EXAMPLES[0]),
                                 *args])
    assert result.exit_code == 1
    assert message in result.stderr
    assert not (tmp_path / "never.db").exists()


def test_the_acceptance_command_offline(tmp_path: Path) -> None:
    """`rippl ingest examples/docs/*.md --extractor structured` as a user runs it."""
    env = {**os.environ, "RIPPL_DB": str(tmp_path / "rippl.db")}
    env.pop("RIPPL_FALKORDB_URL", None)
    command = [sys.executable, "-c", "from rippl_core.cli import main; main()", "ingest",
               *[str(p.relative_to(ROOT)) for p in EXAMPLES], "--extractor", "structured"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "3 documents" in done.stdout
    with Rippl.open(tmp_path / "rippl.db") as rippl:
        assert rippl.stats().nodes == {"Source": 12, "Claim": 17, "Decision": 8, "Action": 10}


def test_a_folder_means_its_markdown_files(cli: tuple[Rippl, Callable[..., object]]) -> None:
    _, invoke = cli
    result = invoke("ingest", str(DOCS), "--dry-run", "--format", "json")
    assert result.exit_code == 0, result.output
    names = [d["document"] for d in json.loads(result.stdout)["documents"]]
    assert [Path(n).name for n in names] == [p.name for p in EXAMPLES]  # not the prose subfolder
