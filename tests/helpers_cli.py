"""The `rippl` command run in-process for tests (Typer's runner): `rippl_cli(db, *args)` is
`rippl --db DB --graph ops ARGS...`, and no traceback ever reaches its output."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from click.testing import Result
from typer.testing import CliRunner

from rippl_core.cli import app

runner = CliRunner()


def rippl_cli(db: Path, *args: str, graph: str = "ops", env: Mapping[str, str] | None = None
              ) -> Result:
    result = runner.invoke(app, ["--db", str(db), "--graph", graph, *args], env=env)
    assert "Traceback" not in result.output, result.output
    return result
