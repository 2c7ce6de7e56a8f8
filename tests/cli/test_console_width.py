"""The CLI's consoles take their width from the command's environment when they print, not from
the environment that imported them (Rich reads COLUMNS once, when a console is made)."""

from __future__ import annotations

import pytest

from rippl_core.cli.app import _console


def test_a_console_made_under_one_width_prints_at_the_width_of_its_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    made = _console()
    assert made.width == 40
    monkeypatch.setenv("COLUMNS", "217")
    assert made.width == 217
    monkeypatch.setenv("LINES", "33")
    assert made.height == 33
