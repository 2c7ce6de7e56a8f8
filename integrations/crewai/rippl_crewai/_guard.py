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
from rippl_core.adapters import (
    METADATA_KEY,
    VETO_PREFIX,
    Guard,
    Resolver,
    ToolSettingsMap,
    schema_of,
    veto_text,
)

__all__ = ["VETO_PREFIX", "Guard", "Resolver", "check_call", "check_memory", "learn_tools",
           "make_guard", "tool_name", "tool_names", "veto_text"]


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
               action_id: str | None = None,
               tool_settings: ToolSettingsMap | None = None) -> Guard:
    """The core kit's `Guard` on `memory`, speaking CrewAI's (sanitised) tool names;
    `tool_settings` gives per tool name how Rippl treats its calls (`ToolSettings`)."""
    if action_id is not None:
        resolver = lambda _name, _args: action_id  # noqa: E731 - one pinned action
    elif isinstance(resolver, Mapping):  # keyed by the names CrewAI reports
        resolver = {tool_name(name): action for name, action in resolver.items()}
    if tool_settings is not None and not isinstance(tool_settings, Mapping):
        raise InvalidInputError("tool_settings must map tool names to ToolSettings (or dicts of "
                                "them), e.g. {'migrate_tables': {'repeat_scope': 'tool'}}")
    return Guard(check_memory(memory), policy=policy, resolver=resolver,
                 unguarded=tool_names(unguarded, what="unguarded") or (),
                 only=tool_names(tools, what="tools"),
                 tools={tool_name(name): value for name, value in (tool_settings or {}).items()})


def learn_tools(guard: Guard, tools: Iterable[object]) -> None:
    """Take each tool's own settings from its `metadata` mapping (key "rippl"), where a tool
    carries one (a CrewAI tool class that declares a `metadata` field), and its `args_schema`
    (calls are compared on the arguments the tool receives); settings given to the guard win.
    Raises InvalidInputError for metadata that does not describe ToolSettings."""
    for tool in tools:
        if tool is None:
            continue
        metadata = getattr(tool, "metadata", None)
        guard.learn(tool_name(tool), metadata if isinstance(metadata, Mapping)
                    and metadata.get(METADATA_KEY) is not None else None,
                    schema_of(tool, "args_schema"))


def check_call(memory: Rippl, name: str, args: Mapping[str, Any] | None, *,
               policy: Policy | None = None, resolver: Resolver | None = None,
               action_id: str | None = None) -> Verdict:
    """The verdict on calling tool `name` with `args` now. Never raises: a call that cannot be
    mapped to an action is judged by policy.unknown, a check that fails by policy.on_error."""
    verdict = make_guard(memory, policy=policy, resolver=resolver, action_id=action_id).check(name, args)
    assert verdict is not None  # a guard without exemptions always judges
    return verdict
