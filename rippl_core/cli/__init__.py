"""The `rippl` command: a thin face over the same API. Exit codes: 0 ok, 2 denied, 1 error."""

from __future__ import annotations

from rippl_core.cli import beliefs, capture, demo, graph, ingest, mcp, review, serve  # noqa: F401  (they register their commands)
from rippl_core.cli.app import app


def main() -> None:
    app()
