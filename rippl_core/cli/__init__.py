"""The `rippl` command: a thin face over the same API. Exit codes: 0 ok, 1 error, 2 usage error,
3 denied (see `rippl_core.cli.app`)."""

from __future__ import annotations

from rippl_core.cli import (  # noqa: F401  (they register their commands)
    beliefs,
    capture,
    checkpoints,
    demo,
    graph,
    ingest,
    keys,
    mcp,
    review,
    serve,
)
from rippl_core.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
