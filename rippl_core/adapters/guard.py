"""`Guard`: a `ToolGuard` bound to a graph (a handle, or a source that opens one lazily)."""

from __future__ import annotations

from typing import Protocol

from rippl_core._runtime.validation import CollectionNotStr
from rippl_core.adapters.handles import Handle, acall, require_handle, sync_handle
from rippl_core.adapters.toolguard import Arguments, Resolver, ToolGuard, ToolSettingsMap
from rippl_core.client import AsyncRippl, Rippl
from rippl_core.errors import InvalidInputError
from rippl_core.models import Policy, ToolCall, Verdict


class HandleSource(Protocol):
    """A lazily opened handle (e.g. a component that opens its graph on first use)."""

    @property
    def policy(self) -> Policy | None: ...

    async def handle(self) -> Handle: ...


class Guard(ToolGuard):
    """A `ToolGuard` bound to a graph: `check` (sync, a Rippl handle) and `acheck` (either handle,
    or a `HandleSource` opened on first use) judge one framework call against the graph. Every
    adapter's guard is one of these."""

    sync_hint = "pass a Rippl handle, or use the framework's async path"

    def __init__(self, handle: Handle | HandleSource, *, policy: Policy | None = None,
                 resolver: Resolver | None = None, unguarded: CollectionNotStr[str] = (),
                 only: CollectionNotStr[str] | None = None,
                 tools: ToolSettingsMap | None = None) -> None:
        super().__init__(policy=policy, resolver=resolver, unguarded=unguarded, only=only,
                         tools=tools)
        if not isinstance(handle, Rippl | AsyncRippl) and not callable(getattr(handle, "handle", None)):
            require_handle(handle, who="a tool guard")
        self.source = handle

    @property
    def default_policy(self) -> Policy | None:
        """The policy of the handle (None for a source not opened yet: the core default)."""
        return self.source.policy

    def check(self, name: str, args: Arguments, call_id: str | None = None) -> Verdict | None:
        """The verdict on one call (None when the tool is unguarded); never raises."""
        if self.guards(name):
            if not isinstance(self.source, Rippl | AsyncRippl):
                raise InvalidInputError("this guard opens its graph lazily; use acheck")
            sync_handle(self.source, hint=self.sync_hint)
        return self.judge(name, args, self._ask, call_id=call_id,
                          default_policy=self.default_policy)

    async def acheck(self, name: str, args: Arguments, call_id: str | None = None) -> Verdict | None:
        """The async twin of `check`; a sync handle runs in a worker thread. A source that cannot
        be opened is judged like an unreachable graph (`on_error`)."""
        return await self.ajudge(name, args, self._aask, call_id=call_id,
                                 default_policy=self.default_policy)

    async def ahandle(self) -> Handle:
        """The handle, opening a lazy source on first use (UnavailableError if it cannot be)."""
        if isinstance(self.source, Rippl | AsyncRippl):
            return self.source
        return await self.source.handle()

    def _ask(self, call: ToolCall) -> Verdict:
        assert isinstance(self.source, Rippl)
        return self.source.check(call, policy=self.policy)

    async def _aask(self, call: ToolCall) -> Verdict:
        verdict: Verdict = await acall(await self.ahandle(), "check", call, policy=self.policy)
        return verdict
