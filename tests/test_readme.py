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
    assert "CLM-1 is Retracted (disk errors): CLM-1 -> DEC-1 -> ACT-1" in out
    assert (tmp_path / ".rippl" / "rippl.db").parent.is_dir()
