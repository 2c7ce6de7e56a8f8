"""Guarding a framework's tool call: map the call to an action, ask the graph, fail closed, and say
why in words a model can act on (`ToolGuard`, adapter-independent and I/O-free)."""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from rippl_core._runtime import telemetry
from rippl_core._runtime.validation import CollectionNotStr, plain_errors
from rippl_core.capture.arguments import ArgumentSchema, received
from rippl_core.errors import InvalidInputError
from rippl_core.models import Policy, RepeatScope, ToolCall, ToolSettings, Verdict

logger: logging.Logger = logging.getLogger("rippl")
logger.addHandler(logging.NullHandler())  # a library: the application decides where logs go

type ResolverResult = str | ToolCall | None
type Arguments = Mapping[str, Any] | str | None
type Resolver = Mapping[str, str] | Callable[[str, Mapping[str, Any]],
                                             ResolverResult | Awaitable[ResolverResult]]

VETO_PREFIX = "VETOED by Rippl"


def veto_text(name: str, verdict: Verdict) -> str:
    """What the model reads instead of the tool's output: the veto and every blocking trail."""
    return f"{VETO_PREFIX}: the call to {name} did not run.\n{verdict.explain()}"


class ToolGuard:
    """The adapter-independent part of a tool-call guard: which calls are checked, how they map to
    actions, and the fail-closed verdict when they cannot be mapped or checked."""

    policy: Policy | None
    resolver: Resolver | None

    unguarded: frozenset[str]
    only: frozenset[str] | None
    tools: dict[str, ToolSettings]

    def __init__(self, *, policy: Policy | None = None, resolver: Resolver | None = None,
                 unguarded: CollectionNotStr[str] = (),
                 only: CollectionNotStr[str] | None = None,
                 tools: ToolSettingsMap | None = None) -> None:
        if policy is not None and not isinstance(policy, Policy):
            raise InvalidInputError(f"policy must be a rippl_core.Policy, got {type(policy).__name__}")
        if resolver is not None and not (isinstance(resolver, Mapping) or callable(resolver)):
            raise InvalidInputError("resolver must map tool names to action ids, or be a function "
                                    "(name, args) -> action id | ToolCall | None")
        self.policy = policy
        self.resolver = resolver
        self.unguarded = _names(unguarded, "unguarded") or frozenset()
        self.only = _names(only, "only")
        self.tools = tool_settings(tools)
        self._learnt: dict[str, ToolSettings] = {}
        self._schemas: dict[str, ArgumentSchema] = {}

    def settings(self, name: str) -> ToolSettings:
        """How this guard treats tool `name`: what the adapter was given for it, else what the
        tool's own metadata says (`learn`), else the defaults."""
        return self.tools.get(name) or self._learnt.get(name) or _DEFAULT_SETTINGS

    def learn(self, name: str, metadata: Mapping[str, Any] | None,
              schema: ArgumentSchema | None = None) -> None:
        """Take a tool's settings from its metadata (the key "rippl"), unless the adapter was given
        settings for it, and its argument schema (what its own validation makes of a call's
        arguments: `capture.arguments`). Refuses metadata that does not describe ToolSettings."""
        found = (metadata or {}).get(METADATA_KEY) if isinstance(metadata, Mapping) else None
        if found is not None and name not in self.tools:
            self._learnt[name] = _settings(name, found)
        if schema is not None:
            self._schemas[name] = schema

    def received(self, name: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments tool `name` receives for `values` (as sent when its schema is unknown)."""
        return received(values, self._schemas.get(name))

    def repeat_scopes(self, names: Iterable[str]) -> dict[str, RepeatScope]:
        """The repeat scope of each of these tools."""
        return {name: self.settings(name).repeat_scope for name in names}

    def guards(self, name: str) -> bool:
        """Whether calls to tool `name` are checked at all."""
        return name not in self.unguarded and (self.only is None or name in self.only)

    # -- mapping ----------------------------------------------------------------------------
    def to_call(self, name: str, args: Arguments, call_id: str | None = None) -> ToolCall:
        """The core tool call for a framework call (sync resolvers only), its arguments as the
        tool receives them."""
        values = self.received(name, arguments(name, args))
        found = self._lookup(name, values)
        if inspect.isawaitable(found):
            getattr(found, "close", lambda: None)()
            raise TypeError("an async resolver needs the async path (ainvoke/arun/acheck)")
        return _mapped(name, values, call_id, found)

    async def ato_call(self, name: str, args: Arguments, call_id: str | None = None) -> ToolCall:
        """The core tool call for a framework call; the resolver may be async."""
        values = self.received(name, arguments(name, args))
        found = self._lookup(name, values)
        if inspect.isawaitable(found):
            found = await found
        return _mapped(name, values, call_id, found)

    def _lookup(self, name: str, values: dict[str, Any]) -> Any:
        if isinstance(self.resolver, Mapping):
            return self.resolver.get(name)
        if self.resolver is not None:
            return self.resolver(name, dict(values))
        return None

    # -- judging ----------------------------------------------------------------------------
    def judge(self, name: str, args: Arguments, check: Callable[[ToolCall], Verdict],
              *, call_id: str | None = None, default_policy: Policy | None = None) -> Verdict | None:
        """The verdict on one call (None when the tool is unguarded). `check` asks the graph,
        e.g. `lambda call: rippl.check(call, policy=guard.policy)`. Never raises."""
        if not self.guards(name):
            return None
        policy = self.policy or default_policy or Policy()
        try:
            call = self.to_call(name, args, call_id)
        except Exception as exc:
            return logged(unmappable(name, args, call_id, exc, policy), name, args)
        try:
            verdict = check(call)
        except Exception as exc:
            verdict = unanswered(call, exc, policy)
        return logged(verdict, name, args)

    async def ajudge(self, name: str, args: Arguments,
                     check: Callable[[ToolCall], Awaitable[Verdict]], *, call_id: str | None = None,
                     default_policy: Policy | None = None) -> Verdict | None:
        """The async twin of `judge`: `check` is awaited, the resolver may be async."""
        if not self.guards(name):
            return None
        policy = self.policy or default_policy or Policy()
        try:
            call = await self.ato_call(name, args, call_id)
        except Exception as exc:
            return logged(unmappable(name, args, call_id, exc, policy), name, args)
        try:
            verdict = await check(call)
        except Exception as exc:
            verdict = unanswered(call, exc, policy)
        return logged(verdict, name, args)


type ToolSettingsMap = Mapping[str, ToolSettings | Mapping[str, Any]]
METADATA_KEY = "rippl"  # where a framework tool's own metadata carries its ToolSettings
_DEFAULT_SETTINGS = ToolSettings()


def tool_settings(tools: ToolSettingsMap | None) -> dict[str, ToolSettings]:
    """Per-tool settings as given to an adapter (ToolSettings or plain dicts), checked."""
    if tools is None:
        return {}
    if not isinstance(tools, Mapping):
        raise InvalidInputError("tools must map tool names to ToolSettings (or dicts of them), e.g. "
                                "{'migrate': {'repeat_scope': 'tool'}}")
    return {str(name): _settings(str(name), value) for name, value in tools.items()}


def _settings(name: str, value: object) -> ToolSettings:
    if isinstance(value, ToolSettings):
        return value
    try:
        return ToolSettings.model_validate(value)
    except ValidationError as exc:
        raise InvalidInputError(f"the settings of tool {name!r} are not valid:\n"
                                f"{plain_errors(exc.errors())}") from None


def arguments(name: str, args: Arguments) -> dict[str, Any]:
    """A call's arguments as a dict: from a mapping, None (no arguments) or the JSON text of an
    object (blank text: no arguments). Raises InvalidInputError for anything else."""
    if args is None:
        return {}
    if isinstance(args, str):
        if not args.strip():
            return {}
        try:
            args = json.loads(args)
        except ValueError as exc:
            raise InvalidInputError(f"the arguments of {name} are not JSON ({exc})") from None
        if not isinstance(args, dict):
            raise InvalidInputError(f"the arguments of {name} are not a JSON object")
        return args
    if not isinstance(args, Mapping):
        raise InvalidInputError(f"the arguments of {name} must be a mapping or JSON text, got "
                                f"{type(args).__name__}")
    return dict(args)


def unmappable(name: str, args: Arguments, call_id: str | None, exc: Exception,
               policy: Policy) -> Verdict:
    """The verdict on a call that cannot be mapped to an action (policy `unknown`)."""
    allowed = policy.unknown == "allow"
    verdict = Verdict(allowed=allowed, target=None, tool_call=safe_call(name, args, call_id), reason=(
        f"{_outcome(allowed, 'unknown')}: the call to {name} could not be mapped to an action of "
        f"the premise graph: {type(exc).__name__}: {exc}"))
    telemetry.guard_verdict(verdict, "unmappable", exc, tool=name, call_id=call_id)
    return verdict


def unanswered(call: ToolCall, exc: Exception, policy: Policy) -> Verdict:
    """The verdict when the graph could not answer (policy `on_error`; bad ids: `unknown`)."""
    if isinstance(exc, InvalidInputError):
        return unmappable(call.name, call.args, call.id, exc, policy)
    allowed = policy.on_error == "allow"
    verdict = Verdict(allowed=allowed, target=None, tool_call=call, reason=(
        f"{_outcome(allowed, 'on_error')}: the premise graph could not be checked for {call.name}: "
        f"{type(exc).__name__}: {exc}"))
    telemetry.guard_verdict(verdict, "error", exc)
    return verdict


def _mapped(name: str, values: dict[str, Any], call_id: str | None, found: object) -> ToolCall:
    if isinstance(found, ToolCall):
        return found
    if found is not None and not isinstance(found, str):
        raise TypeError(f"the resolver returned {type(found).__name__}; return an action id, a "
                        "ToolCall or None")
    return ToolCall(name=name, args=values, action_id=found, id=call_id)


def _names(names: Iterable[str] | None, what: str) -> frozenset[str] | None:
    if names is None:
        return None
    if isinstance(names, str):
        raise InvalidInputError(f"{what} must be a list of tool names, not a single string")
    return frozenset(names)


def _outcome(allowed: bool, knob: str) -> str:
    return f"allowed (policy {knob}='allow')" if allowed else "denied (fail closed)"


def safe_call(name: str, args: Arguments, call_id: str | None) -> ToolCall | None:
    try:
        return ToolCall(name=name, args=arguments(name, args), id=call_id)
    except Exception:
        return None


def logged(verdict: Verdict, name: str, args: Arguments) -> Verdict:
    if not verdict.allowed:
        try:
            text = args if isinstance(args, str) else json.dumps(dict(args or {}), default=str,
                                                                 sort_keys=True)
        except Exception:  # keys that do not sort, a non-mapping...: the log never breaks a verdict
            text = repr(args)
        logger.warning("vetoed tool call %s(%s): %s", name, text if len(text) <= 200 else
                       text[:200] + "...", verdict.reason)
    return verdict
