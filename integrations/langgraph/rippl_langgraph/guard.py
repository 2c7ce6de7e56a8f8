"""The check every LangGraph hook shares: map a tool call to an action, ask the graph, fail closed.

A LangChain tool call (`{"name", "args", "id"}`) resolves, in order, through `unguarded` (tool names
that are never checked, e.g. read-only lookups), the `resolver` (a mapping of tool name to action
id, or a function of the call), then the core's own resolution by tool name and canonical
arguments. The verdict is the core's (`Rippl.check`); whatever cannot be mapped or checked is denied
unless the policy says otherwise, and the veto says why.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolMessage

from rippl_core import AsyncRippl, Policy, Rippl, ToolCall, Verdict
from rippl_core.errors import DatabaseError, InvalidInputError, RipplError
from rippl_core.preflight import error_verdict

logger = logging.getLogger("rippl_langgraph")
logger.addHandler(logging.NullHandler())  # a library: the application decides where logs go

type Memory = Rippl | AsyncRippl
type ResolverResult = str | ToolCall | None
type ResolverFunction = Callable[[str, Mapping[str, Any]], ResolverResult | Awaitable[ResolverResult]]
type Resolver = Mapping[str, str] | ResolverFunction

VETO_PREFIX = "VETOED by Rippl"


@dataclass(frozen=True)
class Outcome:
    """One tool call and the verdict on it (None when the tool is unguarded)."""

    call: dict[str, Any]
    verdict: Verdict | None

    @property
    def allowed(self) -> bool:
        return self.verdict is None or self.verdict.allowed


class Guard:
    """Checks LangChain tool calls against the premise graph; shared by the preflight node, the
    guarded ToolNode and the `create_agent` middleware."""

    def __init__(self, memory: Memory, *, policy: Policy | None = None,
                 resolver: Resolver | None = None, unguarded: Collection[str] = ()) -> None:
        if not isinstance(memory, Rippl | AsyncRippl):
            raise InvalidInputError(
                f"memory must be a Rippl or AsyncRippl handle, got {type(memory).__name__}; "
                "open one with Rippl.open(...) or await AsyncRippl.open(...)")
        if policy is not None and not isinstance(policy, Policy):
            raise InvalidInputError(f"policy must be a rippl_core.Policy, got {type(policy).__name__}")
        if resolver is not None and not (isinstance(resolver, Mapping) or callable(resolver)):
            raise InvalidInputError("resolver must map tool names to action ids, or be a function "
                                    "(name, args) -> action id | ToolCall | None")
        if isinstance(unguarded, str):
            raise InvalidInputError("unguarded must be a list of tool names, not a single string")
        self.memory = memory
        self.policy = policy
        self.resolver = resolver
        self.unguarded = frozenset(unguarded)

    @property
    def is_async(self) -> bool:
        return isinstance(self.memory, AsyncRippl)

    @property
    def effective_policy(self) -> Policy:
        return self.policy or self.memory.policy

    # -- resolving --------------------------------------------------------------------------
    def _mapped(self, name: str, args: dict[str, Any], call_id: str | None,
                found: ResolverResult) -> ToolCall:
        if found is None:
            return ToolCall(name=name, args=args, id=call_id)
        if isinstance(found, str):
            return ToolCall(name=name, args=args, action_id=found, id=call_id)
        if isinstance(found, ToolCall):
            return found
        raise TypeError(f"the resolver returned {type(found).__name__}; return an action id, a "
                        "ToolCall or None")

    def _resolve(self, name: str, args: dict[str, Any], call_id: str | None) -> ToolCall:
        found: Any = None
        if isinstance(self.resolver, Mapping):
            found = self.resolver.get(name)
        elif self.resolver is not None:
            found = self.resolver(name, args)
            if inspect.isawaitable(found):
                close = getattr(found, "close", None)
                if close is not None:
                    close()
                raise TypeError("an async resolver needs the async graph API (ainvoke/astream)")
        return self._mapped(name, args, call_id, found)

    async def _aresolve(self, name: str, args: dict[str, Any], call_id: str | None) -> ToolCall:
        found: Any = None
        if isinstance(self.resolver, Mapping):
            found = self.resolver.get(name)
        elif self.resolver is not None:
            found = self.resolver(name, args)
            if inspect.isawaitable(found):
                found = await found
        return self._mapped(name, args, call_id, found)

    # -- checking ---------------------------------------------------------------------------
    def check(self, call: Mapping[str, Any]) -> Outcome:
        """The verdict on one LangChain tool call (sync). Never raises for an unreachable graph or
        an unmappable call: it returns a denied verdict saying why."""
        name, args, call_id = _parts(call)
        if name in self.unguarded:
            return Outcome(dict(call), None)
        if isinstance(self.memory, AsyncRippl):
            raise InvalidInputError(
                "this graph runs synchronously (invoke/stream) but the guard was given an "
                "AsyncRippl handle; pass a Rippl handle, or run the graph with ainvoke/astream")
        try:
            target = self._resolve(name, args, call_id)
        except Exception as exc:
            return Outcome(dict(call), _resolver_failed(name, args, call_id, exc))
        return Outcome(dict(call), self._verdict(lambda: self.memory.check(  # type: ignore[union-attr]
            target, policy=self.policy), target, name))

    async def acheck(self, call: Mapping[str, Any]) -> Outcome:
        """The verdict on one LangChain tool call (async); a sync handle runs in a worker thread."""
        name, args, call_id = _parts(call)
        if name in self.unguarded:
            return Outcome(dict(call), None)
        try:
            target = await self._aresolve(name, args, call_id)
        except Exception as exc:
            return Outcome(dict(call), _resolver_failed(name, args, call_id, exc))
        if isinstance(self.memory, AsyncRippl):
            try:
                verdict = await self.memory.check(target, policy=self.policy)
            except Exception as exc:
                verdict = self._failed(target, name, exc)
            verdict = _logged(verdict, name, args)
        else:
            verdict = await asyncio.to_thread(
                self._verdict, lambda: self.memory.check(target, policy=self.policy),  # type: ignore[union-attr]
                target, name)
        return Outcome(dict(call), verdict)

    def _verdict(self, run: Callable[[], Verdict], target: ToolCall, name: str) -> Verdict:
        try:
            verdict = run()
        except Exception as exc:
            verdict = self._failed(target, name, exc)
        return _logged(verdict, name, target.args)

    def _failed(self, target: ToolCall, name: str, exc: Exception) -> Verdict:
        if isinstance(exc, DatabaseError):  # check() itself never raises these; be safe anyway
            return error_verdict(target, exc, self.effective_policy)
        if isinstance(exc, RipplError):  # a tool name that is no id, args that are not JSON...
            return Verdict(allowed=False, target=None, tool_call=target,
                           reason=f"denied (fail closed): tool call {name!r} cannot be checked: {exc}")
        return Verdict(allowed=False, target=None, tool_call=target,
                       reason=f"denied (fail closed): checking tool call {name!r} failed: "
                              f"{type(exc).__name__}: {exc}")


def veto_text(name: str, verdict: Verdict) -> str:
    """What the model reads when a call is vetoed: the reason and every blocking trail."""
    return f"{VETO_PREFIX}: the call to {name} did not run.\n{verdict.explain()}"


def veto_message(call: Mapping[str, Any], verdict: Verdict) -> ToolMessage:
    """The error ToolMessage answering a vetoed call; the verdict rides along as the artifact."""
    name = str(call.get("name") or "")
    return ToolMessage(content=veto_text(name, verdict), tool_call_id=str(call.get("id") or ""),
                       name=name, status="error",
                       artifact={"rippl_verdict": verdict.model_dump(mode="json")})


def _parts(call: Mapping[str, Any]) -> tuple[str, dict[str, Any], str | None]:
    args = call.get("args")
    return (str(call.get("name") or ""), dict(args) if isinstance(args, Mapping) else {},
            call.get("id"))


def _resolver_failed(name: str, args: dict[str, Any], call_id: str | None,
                     exc: Exception) -> Verdict:
    try:
        tool_call: ToolCall | None = ToolCall(name=name, args=args, id=call_id)
    except Exception:
        tool_call = None
    verdict = Verdict(allowed=False, target=None, tool_call=tool_call,
                      reason=f"denied (fail closed): could not map tool call {name!r} to an action: "
                             f"{type(exc).__name__}: {exc}")
    return _logged(verdict, name, args)


def _logged(verdict: Verdict, name: str, args: Mapping[str, Any]) -> Verdict:
    if not verdict.allowed:
        text = json.dumps(args, default=str, sort_keys=True)
        logger.warning("vetoed tool call %s(%s): %s", name, text[:200], verdict.reason)
    return verdict
