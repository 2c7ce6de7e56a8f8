"""The check shared by the hooks and the guarded tools, over the core's `ToolGuard`: map a tool
call to an action of the graph (resolver, then tool name and canonical arguments), ask the graph,
and fail closed. CrewAI's hooks and tools are synchronous, so the handle is a `Rippl`.

Under capture (the default) the core's run judges a call no declared action matches by what the
run observed, unless the policy says otherwise (`unknown="record"`); `Policy(unknown="deny")` keeps
a strict allow-list (calls are still recorded, and one no declared action matches is denied).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from crewai.utilities.string_utils import sanitize_tool_name

from rippl_core import InvalidInputError, Policy, Rippl, Verdict
from rippl_core.adapters import VETO_PREFIX, Guard, Resolver, veto_text

__all__ = ["VETO_PREFIX", "Guard", "Resolver", "check_call", "check_memory", "make_guard",
           "tool_name", "tool_names", "veto_text"]


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


def check_memory(memory: object) -> Rippl:
    if not isinstance(memory, Rippl):
        raise InvalidInputError(
            f"expected a rippl_core.Rippl handle (CrewAI hooks and tools are synchronous), got "
            f"{type(memory).__name__}; open one with Rippl.open(...)")
    return memory


def make_guard(memory: object, *, policy: Policy | None = None, resolver: Resolver | None = None,
               tools: Iterable[object] | None = None, unguarded: Iterable[object] = (),
               action_id: str | None = None) -> Guard:
    """The core kit's `Guard` on `memory`, speaking CrewAI's (sanitised) tool names."""
    if action_id is not None:
        resolver = lambda _name, _args: action_id  # noqa: E731 - one pinned action
    elif isinstance(resolver, Mapping):  # keyed by the names CrewAI reports
        resolver = {tool_name(name): action for name, action in resolver.items()}
    return Guard(check_memory(memory), policy=policy, resolver=resolver,
                 unguarded=tool_names(unguarded, what="unguarded") or (),
                 only=tool_names(tools, what="tools"))


def check_call(memory: Rippl, name: str, args: Mapping[str, Any] | None, *,
               policy: Policy | None = None, resolver: Resolver | None = None,
               action_id: str | None = None) -> Verdict:
    """The verdict on calling tool `name` with `args` now. Never raises: a call that cannot be
    mapped to an action is judged by policy.unknown, a check that fails by policy.on_error."""
    verdict = make_guard(memory, policy=policy, resolver=resolver, action_id=action_id).check(name, args)
    assert verdict is not None  # a guard without exemptions always judges
    return verdict
