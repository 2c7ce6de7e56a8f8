"""The check shared by the hooks and the guarded tools: map a tool call to an action of the graph,
ask the graph, and fail closed.

A call resolves through the `resolver` (a mapping of tool name to action id, or a function of the
call), then through the core's own resolution by tool name and canonical arguments. Whatever cannot
be mapped or checked is denied unless the policy says otherwise, and the verdict says why.
`check_call` never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from crewai.utilities.string_utils import sanitize_tool_name

from rippl_core import Policy, Rippl, ToolCall, Verdict
from rippl_core.errors import InvalidInputError

logger = logging.getLogger("rippl_crewai")

type ResolverResult = str | ToolCall | None
type Resolver = Mapping[str, str] | Callable[[str, Mapping[str, Any]], ResolverResult]

VETO_PREFIX = "VETOED by Rippl"


def tool_name(tool: object) -> str:
    """The name CrewAI uses for a tool in hooks and tool calls (sanitised)."""
    name = tool if isinstance(tool, str) else getattr(tool, "name", None)
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(f"expected a tool or a tool name, got {tool!r}")
    return sanitize_tool_name(name)


def tool_names(tools: Iterable[object] | None, *, what: str) -> frozenset[str] | None:
    if tools is None:
        return None
    if isinstance(tools, str):
        raise InvalidInputError(f"{what} must be a list of tools or tool names, not one string")
    return frozenset(tool_name(t) for t in tools)


def check_policy(policy: object) -> Policy | None:
    if policy is not None and not isinstance(policy, Policy):
        raise InvalidInputError(f"policy must be a rippl_core.Policy, got {type(policy).__name__}")
    return policy


def check_resolver(resolver: object) -> Resolver | None:
    if resolver is not None and not (isinstance(resolver, Mapping) or callable(resolver)):
        raise InvalidInputError("resolver must map tool names to action ids, or be a function "
                                "(name, args) -> action id | ToolCall | None")
    return resolver  # type: ignore[return-value]


def check_memory(memory: object) -> Rippl:
    if not isinstance(memory, Rippl):
        raise InvalidInputError(
            f"expected a rippl_core.Rippl handle (CrewAI hooks and tools are synchronous), got "
            f"{type(memory).__name__}; open one with Rippl.open(...)")
    return memory


def _outcome(allowed: bool, knob: str) -> str:
    return f"allowed (policy {knob}='allow')" if allowed else "denied (fail closed)"


def check_call(memory: Rippl, name: str, args: Mapping[str, Any] | None, *,
               policy: Policy | None = None, resolver: Resolver | None = None,
               action_id: str | None = None) -> Verdict:
    """The verdict on calling tool `name` with `args`. Never raises: a call that cannot be mapped
    to an action is judged by policy.unknown, a check that fails by policy.on_error."""
    chosen = policy or memory.policy
    try:
        call = _resolve(name, dict(args or {}), resolver, action_id)
    except Exception as exc:  # a resolver that fails, arguments that are not a mapping...
        allowed = chosen.unknown == "allow"
        return Verdict(allowed=allowed, target=None, reason=(
            f"{_outcome(allowed, 'unknown')}: the call to {name} could not be mapped to an action "
            f"of the premise graph: {type(exc).__name__}: {exc}"))
    try:
        return memory.check(call, policy=chosen)
    except InvalidInputError as exc:  # an id or arguments the graph cannot hold
        allowed = chosen.unknown == "allow"
        return Verdict(allowed=allowed, target=None, tool_call=call, reason=(
            f"{_outcome(allowed, 'unknown')}: the call to {name} could not be mapped to an action "
            f"of the premise graph: {exc}"))
    except Exception as exc:  # anything else: the graph could not answer
        allowed = chosen.on_error == "allow"
        logger.warning("premise check failed for %s: %s", name, exc)
        return Verdict(allowed=allowed, target=None, tool_call=call, reason=(
            f"{_outcome(allowed, 'on_error')}: the premise graph could not be checked for {name}: "
            f"{type(exc).__name__}: {exc}"))


def _resolve(name: str, args: dict[str, Any], resolver: Resolver | None,
             action_id: str | None) -> ToolCall:
    if action_id is not None:
        return ToolCall(name=name, args=args, action_id=action_id)
    found: ResolverResult = None
    if isinstance(resolver, Mapping):
        found = resolver.get(name)
    elif resolver is not None:
        found = resolver(name, args)
    if isinstance(found, ToolCall):
        return found
    if found is not None and not isinstance(found, str):
        raise InvalidInputError(f"the resolver returned {type(found).__name__}; it must return an "
                                "action id, a ToolCall or None")
    return ToolCall(name=name, args=args, action_id=found)


def veto_message(verdict: Verdict, name: str) -> str:
    """What the agent reads instead of the tool's output: the veto and every blocking trail."""
    return f"{VETO_PREFIX}: the call to {name} did not run.\n{verdict.explain()}"


def guarded(name: str, *, only: Collection[str] | None, unguarded: Collection[str]) -> bool:
    return name not in unguarded and (only is None or name in only)
