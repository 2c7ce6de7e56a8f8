"""Each MCP client session is a captured run: what it read through Rippl is an observation, each
`check_premises` of a tool call records and judges that call, and `record_execution` marks it run.

The run id is the client's own `_meta.rippl_run` when it sends one (stable across reconnects), else
the streamable-HTTP session id, else an id minted for the connection (stdio: one per process).
A session also remembers the calls whose `safe=false` answer it received: the model read those
vetoes, so what they named leaves the context of its later calls.
"""

# No `from __future__ import annotations` here: the MCP server reads the signatures of tools
# that take what this module defines.

import uuid
import weakref
from dataclasses import dataclass, field
from typing import Any

from rippl_core._runtime.validation import canonical_args, check_id
from rippl_core.capture.handle import AsyncRun
from rippl_core.client import AsyncRippl
from rippl_core.mcp.common import client_identity
from rippl_core.mcp.sdk import Context, connection_of

RUN_META = "rippl_run"


@dataclass
class SessionRun:
    """A session's run and what the session has been told."""

    run: AsyncRun
    told: list[str] = field(default_factory=list)  # call ids whose veto the client received
    calls: dict[tuple[str, str], str] = field(default_factory=dict)  # (tool, args) -> last call id
    counter: int = 0

    def next_call_id(self) -> str:
        self.counter += 1
        return f"{self.run.id}/call-{self.counter}"

    def remember(self, tool: str, args: dict[str, Any] | None, call_id: str) -> None:
        self.calls[(tool, canonical_args(args or {}) or "{}")] = call_id

    def last_call(self, tool: str, args: dict[str, Any] | None) -> str | None:
        return self.calls.get((tool, canonical_args(args or {}) or "{}"))


class Sessions:
    """The runs of the sessions of one server."""

    def __init__(self, rippl: AsyncRippl) -> None:
        self.rippl = rippl
        self._by_session: weakref.WeakKeyDictionary[Any, SessionRun] = weakref.WeakKeyDictionary()
        self._by_id: dict[str, SessionRun] = {}

    def of(self, ctx: Context) -> SessionRun:
        """The run of the session making this request."""
        chosen = _meta_run(ctx) or _http_session(ctx)
        if chosen is not None:
            run_id = check_id(chosen, what="run id")
            if run_id not in self._by_id:
                self._by_id[run_id] = self._new(run_id, ctx)
            return self._by_id[run_id]
        connection = connection_of(ctx)
        if connection not in self._by_session:
            self._by_session[connection] = self._new(f"mcp:{uuid.uuid4().hex[:16]}", ctx)
        return self._by_session[connection]

    def _new(self, run_id: str, ctx: Context) -> SessionRun:
        return SessionRun(self.rippl.run(run_id, agent=client_identity(ctx), framework="mcp"))


def _meta_run(ctx: Context) -> str | None:
    try:
        meta = ctx.request_context.meta
    except (AttributeError, ValueError, LookupError):
        return None
    value = getattr(meta, RUN_META, None) if meta is not None else None
    if value is None and meta is not None:
        value = (getattr(meta, "model_extra", None) or {}).get(RUN_META)
    return value if isinstance(value, str) and value else None


def _http_session(ctx: Context) -> str | None:
    try:
        request = ctx.request_context.request
    except (AttributeError, ValueError, LookupError):
        return None
    headers = getattr(request, "headers", None)
    value = headers.get("mcp-session-id") if headers is not None else None
    return f"mcp-http:{value}" if value else None
