"""The MCP server's options that need no SDK: importable before the `mcp` package is installed."""

from __future__ import annotations

from typing import Literal

type LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

DEFAULT_MAX_RUNS = 1024  # clients' runs held in memory by one server (the graph keeps them all)

__all__ = ["DEFAULT_MAX_RUNS", "LogLevel"]
