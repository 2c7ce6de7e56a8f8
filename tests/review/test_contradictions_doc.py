"""docs/contradictions.md runs as written: its first Python example (printing what its comments
say) and its command-line session, with the two graph files it shows, against temporary embedded
databases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_readme import shown_output
from typer.testing import CliRunner

from rippl_core.cli import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "contradictions.md"


def test_the_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    code = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(DOC), "exec"), {})
    assert capsys.readouterr().out.splitlines() == shown_output(code)


def test_the_command_line_session_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = DOC.read_text()
    for name, body in re.findall(r"```yaml\n# (\S+)\n(.*?)```", text, re.S):
        (tmp_path / name).write_text(body)
    [session] = re.findall(r"```console\n(.*?)```", text, re.S)
    monkeypatch.chdir(tmp_path)
    runner, review = CliRunner(), None
    env = {"RIPPL_DB": str(tmp_path / "db" / "rippl.db"), "COLUMNS": "200"}
    for line in session.splitlines():
        args = line.removeprefix("$ ").split("#")[0].split()[1:]  # without `rippl`
        if review is not None:
            args = [review if a == "REV-..." else a for a in args]
        result = runner.invoke(app, args, env=env)
        assert result.exit_code == 0, (line, result.output)
        if args[:2] == ["review", "list"]:
            assert "key contradiction" in result.output
            review = re.search(r"REV-[0-9a-f]{12}", result.output).group(0)  # type: ignore[union-attr]
        if args[0] == "contradictions":
            assert "0 retractions proposed" in result.output
    assert review is not None
