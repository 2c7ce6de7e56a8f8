"""The MCP server's options that need no SDK: importable before the `mcp` package is installed."""

from __future__ import annotations

from typing import Literal

type LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

__all__ = ["LogLevel"]
