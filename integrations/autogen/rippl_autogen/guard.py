"""The check every hook shares: map a tool call to an action of the graph, ask the graph, fail closed.

A tool call resolves, in order, through `unguarded` (tool names that are never checked, e.g.
read-only lookups), the `resolver` (a mapping of tool name to action id, or a function of the call),
then the core's own resolution by tool name and canonical arguments. Whatever cannot be mapped or
checked is denied unless the policy says otherwise, and the verdict says why.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rippl_autogen.connection import Link, RipplConnection, Target
from rippl_core import Policy, ToolCall, Verdict
from rippl_core.errors import DatabaseError, InvalidInputError
from rippl_core.preflight import error_verdict

logger = logging.getLogger("rippl_autogen")

type ResolverResult = str | ToolCall | None
type ResolverFunction = Callable[[str, Mapping[str, Any]],
                                 ResolverResult | Awaitable[ResolverResult]]
type Resolver = Mapping[str, str] | ResolverFunction

VETO_PREFIX = "VETOED by Rippl"


class GuardConfig(BaseModel):
    """The serialisable part of a guard: where the graph is, the policy, the tool-to-action map
    and the tools that are never checked."""

    model_config = ConfigDict(extra="forbid")

    connection: RipplConnection = Field(default_factory=RipplConnection)
    policy: Policy | None = None
    actions: dict[str, str] = Field(default_factory=dict)
    unguarded: list[str] = Field(default_factory=list)


class Guard:
    """Checks tool calls against the premise graph. Shared by the workbench, the tool wrapper and
    the intervention handler."""

    def __init__(self, rippl: Target | Link, *, resolver: Resolver | None = None,
                 policy: Policy | None = None, unguarded: Collection[str] = ()) -> None:
        if isinstance(unguarded, str):
            raise InvalidInputError("unguarded must be a list of tool names, not a single string")
        if policy is not None and not isinstance(policy, Policy):
            raise InvalidInputError(f"policy must be a rippl_core.Policy, got {type(policy).__name__}")
        if resolver is not None and not (isinstance(resolver, Mapping) or callable(resolver)):
            raise InvalidInputError("resolver must map tool names to action ids, or be a function "
                                    "(name, args) -> action id | ToolCall | None")
        self.link = rippl if isinstance(rippl, Link) else Link(rippl)
        self.resolver = resolver
        self.policy = policy
        self.unguarded = frozenset(unguarded)

    # -- config -----------------------------------------------------------------------------
    def config(self) -> GuardConfig:
        if self.resolver is not None and not isinstance(self.resolver, Mapping):
            raise InvalidInputError(
                "a resolver function cannot be serialised; pass a mapping of tool name to action "
                "id (resolver={'migrate_tables': 'ACT-001'}) to dump this component"
            )
        return GuardConfig(connection=self.link.connection, policy=self.policy or self.link.policy,
                           actions=dict(self.resolver or {}), unguarded=sorted(self.unguarded))

    @classmethod
    def from_config(cls, config: GuardConfig) -> Guard:
        return cls(config.connection, resolver=config.actions or None, policy=config.policy,
                   unguarded=config.unguarded)

    # -- checking ---------------------------------------------------------------------------
    def guards(self, name: str) -> bool:
        """Whether calls to tool `name` are checked at all."""
        return name not in self.unguarded

    async def check(self, name: str, args: Mapping[str, Any] | None,
                    call_id: str | None = None) -> Verdict | None:
        """The verdict on a call of tool `name`, or None when the tool is unguarded. Never raises
        for an unreachable graph or an unmappable call: it returns a denied verdict saying why."""
        if not self.guards(name):
            return None
        args = dict(args or {})
        try:
            call = await self._resolve(name, args, call_id)
        except Exception as exc:  # a user resolver failed: the call cannot be mapped
            return Verdict(allowed=False, target=None, tool_call=_safe_call(name, args, call_id),
                           reason=f"denied (fail closed): the resolver failed to map tool call "
                                  f"{name!r} to an action: {type(exc).__name__}: {exc}")
        try:
            graph = await self.link.graph()
            verdict: Verdict = await graph.check(call, policy=self.policy)
        except DatabaseError as exc:  # the graph could not be opened (check() itself never raises)
            verdict = error_verdict(call, exc, self.policy or self.link.policy or Policy())
        except InvalidInputError as exc:  # args not JSON, a tool name that is no id...
            verdict = Verdict(allowed=False, target=None, tool_call=call,
                              reason=f"denied (fail closed): tool call {name!r} cannot be "
                                     f"checked: {exc}")
        if not verdict.allowed:
            logger.warning("vetoed tool call %s(%s): %s", name, _short(args), verdict.reason)
        return verdict

    async def _resolve(self, name: str, args: dict[str, Any], call_id: str | None) -> ToolCall:
        found: ResolverResult = None
        if isinstance(self.resolver, Mapping):
            found = self.resolver.get(name)
        elif self.resolver is not None:
            found = self.resolver(name, args)
            if inspect.isawaitable(found):
                found = await found
        if found is None:
            return ToolCall(name=name, args=args, id=call_id)
        if isinstance(found, str):
            return ToolCall(name=name, args=args, action_id=found, id=call_id)
        if isinstance(found, ToolCall):
            return found
        raise TypeError(f"the resolver returned {type(found).__name__}; return an action id, a "
                        "ToolCall or None")


def veto_text(name: str, verdict: Verdict) -> str:
    """What the model reads when a call is vetoed: the reason and every blocking trail."""
    return f"{VETO_PREFIX}: the call to {name} did not run.\n{verdict.explain()}"


def _safe_call(name: str, args: dict[str, Any], call_id: str | None) -> ToolCall | None:
    try:
        return ToolCall(name=name, args=args, id=call_id)
    except Exception:
        return None


def _short(args: Mapping[str, Any], limit: int = 200) -> str:
    text = json.dumps(args, default=str, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."
