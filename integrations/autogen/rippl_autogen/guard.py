"""The check every hook shares: an AutoGen tool call (name, arguments, call id) judged by the core's
`ToolGuard` (unguarded tools, resolver, fail-closed verdicts) against the graph behind a `Link`.

A call resolves through `unguarded` (tool names never checked, e.g. read-only lookups), the
`resolver` (a mapping of tool name to action id, or a function of the call), then the core's own
resolution by tool name and canonical arguments. What cannot be mapped is judged by the policy's
`unknown`, what cannot be checked (a graph that cannot be opened included) by its `on_error`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from pydantic import BaseModel, ConfigDict, Field

from rippl_autogen.connection import Link, RipplConnection, Target
from rippl_core import Policy, ToolCall, Verdict
from rippl_core.errors import InvalidInputError
from rippl_core.toolguard import VETO_PREFIX, Arguments, Resolver, ToolGuard, veto_text

__all__ = ["VETO_PREFIX", "Guard", "GuardConfig", "Resolver", "veto_text"]


class GuardConfig(BaseModel):
    """The serialisable part of a guard: where the graph is, the policy, the tool-to-action map
    and the tools that are never checked."""

    model_config = ConfigDict(extra="forbid")

    connection: RipplConnection = Field(default_factory=RipplConnection)
    policy: Policy | None = None
    actions: dict[str, str] = Field(default_factory=dict)
    unguarded: list[str] = Field(default_factory=list)


class Guard(ToolGuard):
    """Checks tool calls against the premise graph. Shared by the workbench, the tool wrapper and
    the intervention handler."""

    def __init__(self, rippl: Target | Link, *, resolver: Resolver | None = None,
                 policy: Policy | None = None, unguarded: Collection[str] = ()) -> None:
        super().__init__(policy=policy, resolver=resolver, unguarded=unguarded)
        self.link = rippl if isinstance(rippl, Link) else Link(rippl)

    # -- config -----------------------------------------------------------------------------
    def config(self) -> GuardConfig:
        if self.resolver is not None and not isinstance(self.resolver, Mapping):
            raise InvalidInputError(
                "a resolver function cannot be serialised; pass a mapping of tool name to action "
                "id (resolver={'migrate_tables': 'ACT-001'}) to dump this component")
        return GuardConfig(connection=self.link.connection, policy=self.policy or self.link.policy,
                           actions=dict(self.resolver or {}), unguarded=sorted(self.unguarded))

    @classmethod
    def from_config(cls, config: GuardConfig) -> Guard:
        return cls(config.connection, resolver=config.actions or None, policy=config.policy,
                   unguarded=config.unguarded)

    # -- checking ---------------------------------------------------------------------------
    async def check(self, name: str, args: Arguments, call_id: str | None = None) -> Verdict | None:
        """The verdict on a call of tool `name` (arguments: a mapping or their JSON text), or None
        when the tool is unguarded. Never raises: a call that cannot be mapped or checked gets a
        verdict saying why (denied unless the policy allows)."""
        return await self.ajudge(name, args, self._ask, call_id=call_id,
                                 default_policy=self.link.policy)

    async def _ask(self, call: ToolCall) -> Verdict:
        graph = await self.link.graph()  # raises UnavailableError if it cannot be opened
        verdict: Verdict = await graph.check(call, policy=self.policy)
        return verdict
