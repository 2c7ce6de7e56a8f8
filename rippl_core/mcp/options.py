"""The MCP server's options that need no SDK: importable before the `mcp` package is installed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from rippl_core.identity.roles import RoleMap

type LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

DEFAULT_MAX_RUNS = 1024  # clients' runs held in memory by one server (the graph keeps them all)


@dataclass(frozen=True)
class OAuthOptions:
    """The MCP server over HTTP as an OAuth resource server: tokens from `issuer`, for the
    audience `resource` (this server's URL, RFC 8707; None: `http://HOST:PORT/mcp`), each request
    also carrying `required_scopes`; `roles` says which group makes a person a reviewer."""

    issuer: str
    resource: str | None = None
    required_scopes: tuple[str, ...] = ()
    roles: RoleMap = field(default_factory=RoleMap)

    def resource_for(self, host: str, port: int) -> str:
        """This server's resource URL (the audience its tokens must name)."""
        shown = f"[{host}]" if ":" in host else host
        return self.resource or f"http://{shown}:{port}/mcp"


__all__ = ["DEFAULT_MAX_RUNS", "LogLevel", "OAuthOptions"]
