"""The README's Python example runs as written (against a temporary embedded database)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    monkeypatch.chdir(tmp_path)  # Rippl.open() with no arguments uses ./.rippl/
    exec(compile(block.group(1), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.splitlines() == shown_output(block.group(1))  # the README shows what it prints
    assert "CLM-1 is Retracted (disk errors): CLM-1 -> DEC-1 -> ACT-1" in out
    assert (tmp_path / ".rippl" / "rippl.db").parent.is_dir()


def test_readme_capture_example_runs(tmp_path: Path) -> None:
    """The capture snippet (the pause shown: a monitor proposes, a human approves)."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    [snippet] = [b for b in blocks if "rippl.run(" in b]
    code = snippet
    assert "rippl.approve(review.id" in code
    code = code.replace("run.judge(migrate).allowed", "verdict = run.judge(migrate)")
    code = code.replace("rippl.compensations()", "owed = rippl.compensations()")
    from rippl_core import Rippl, ToolCall

    with Rippl.open(tmp_path / "r.db") as rippl:
        scope = {"rippl": rippl, "ToolCall": ToolCall}
        exec(compile(code, "README.md", "exec"), scope)
        assert not scope["verdict"].allowed
        assert scope["verdict"].blockers[0].trail[0] == scope["seen"]
        assert scope["owed"] == []  # nothing in the snippet ran on the stale read


def shown_output(code: str) -> list[str]:
    """The output the README claims: the comment lines right after each print(...) line."""
    shown: list[str] = []
    lines = code.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("print("):
            for comment in lines[i + 1:]:
                if not comment.strip().startswith("#"):
                    break
                shown.append(comment.strip()[2:])
    return shown
