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
from rippl_core import InvalidInputError, Policy
from rippl_core.adapters import VETO_PREFIX, Resolver, veto_text
from rippl_core.adapters import Guard as KitGuard

__all__ = ["VETO_PREFIX", "Guard", "GuardConfig", "Resolver", "veto_text"]


class GuardConfig(BaseModel):
    """The serialisable part of a guard: where the graph is, the policy, the tool-to-action map
    and the tools that are never checked."""

    model_config = ConfigDict(extra="forbid")

    connection: RipplConnection = Field(default_factory=RipplConnection)
    policy: Policy | None = None
    actions: dict[str, str] = Field(default_factory=dict)
    unguarded: list[str] = Field(default_factory=list)


class Guard(KitGuard):
    """Checks tool calls against the premise graph (AutoGen's path is async: `acheck`). Shared by
    the workbench, the tool wrapper and the intervention handler. The graph is reached through a
    `Link`: a borrowed handle, or connection options opened on first use."""

    def __init__(self, rippl: Target | Link, *, resolver: Resolver | None = None,
                 policy: Policy | None = None, unguarded: Collection[str] = ()) -> None:
        link = rippl if isinstance(rippl, Link) else Link(rippl)
        super().__init__(link, policy=policy, resolver=resolver, unguarded=unguarded)
        self.link = link

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
