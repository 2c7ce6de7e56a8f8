"""The adapter kit: what every framework adapter (LangGraph, AutoGen, CrewAI) shares, once.

- **Guarding tool calls**: `ToolGuard` maps a framework's call to an action (`unguarded` names,
  `only`, a `resolver`, then the core's resolution by tool name and canonical arguments) and gives
  a fail-closed verdict when it cannot be mapped or checked; `Guard` binds it to a graph handle;
  `veto_text` is what a model reads instead of the tool's output. A call's arguments are a
  mapping, None, or the JSON text of an object (as AutoGen's `FunctionCall` and OpenAI-style tool
  calls carry them). A call that cannot be mapped is judged by the policy's `unknown`; a check that
  cannot be answered by its `on_error`. `judge`/`ajudge`/`check`/`acheck` never raise.
- **Either handle**: `acall` runs a method of a `Rippl` (in a worker thread) or an `AsyncRippl`
  (awaited); `ThreadedRippl` is a sync handle seen through awaitables; `run_calls`/`arun_calls`
  drive an operation written once as a generator of handle calls.
- **Belief search**: `rank` orders beliefs by the share of a query's content words they contain.
- **Framework state**: `StateGraph`/`AsyncStateGraph`, a companion graph of the tenant's graph
  (e.g. LangGraph checkpoints) with its own schema, running operations written as generators of
  `Query` and `Commit` (the same protocol as the core's).
- Input helpers the adapters validate with: `check_id`, `check_text`, `normalise_text`,
  `semantic_id`, `to_ms`, `from_ms`, `now_ms`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rippl_core._runtime import schema as _schema
from rippl_core._runtime.driver import AsyncDriver, SyncDriver, translated_errors
from rippl_core._runtime.keys import companion_graph, schema_key, version_key
from rippl_core._runtime.op import Commit, Op
from rippl_core._runtime.schema import Index, Schema
from rippl_core._runtime.timeutil import from_ms, now_ms, to_ms
from rippl_core._runtime.validation import check_id, check_text, normalise_text, semantic_id
from rippl_core._runtime.wire import Query
from rippl_core.beliefs.models import Belief
from rippl_core.client import AsyncRippl, Rippl
from rippl_core.errors import InvalidInputError
from rippl_core.models import Policy, ToolCall, Verdict

logger = logging.getLogger("rippl")
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

    def __init__(self, *, policy: Policy | None = None, resolver: Resolver | None = None,
                 unguarded: Iterable[str] = (), only: Iterable[str] | None = None) -> None:
        if policy is not None and not isinstance(policy, Policy):
            raise InvalidInputError(f"policy must be a rippl_core.Policy, got {type(policy).__name__}")
        if resolver is not None and not (isinstance(resolver, Mapping) or callable(resolver)):
            raise InvalidInputError("resolver must map tool names to action ids, or be a function "
                                    "(name, args) -> action id | ToolCall | None")
        self.policy = policy
        self.resolver = resolver
        self.unguarded = _names(unguarded, "unguarded") or frozenset()
        self.only = _names(only, "only")

    def guards(self, name: str) -> bool:
        """Whether calls to tool `name` are checked at all."""
        return name not in self.unguarded and (self.only is None or name in self.only)

    # -- mapping ----------------------------------------------------------------------------
    def to_call(self, name: str, args: Arguments, call_id: str | None = None) -> ToolCall:
        """The core tool call for a framework call (sync resolvers only)."""
        values = arguments(name, args)
        found = self._lookup(name, values)
        if inspect.isawaitable(found):
            getattr(found, "close", lambda: None)()
            raise TypeError("an async resolver needs the async path (ainvoke/arun/acheck)")
        return _mapped(name, values, call_id, found)

    async def ato_call(self, name: str, args: Arguments, call_id: str | None = None) -> ToolCall:
        """The core tool call for a framework call; the resolver may be async."""
        values = arguments(name, args)
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
            return _logged(unmappable(name, args, call_id, exc, policy), name, args)
        try:
            verdict = check(call)
        except Exception as exc:
            verdict = unanswered(call, exc, policy)
        return _logged(verdict, name, args)

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
            return _logged(unmappable(name, args, call_id, exc, policy), name, args)
        try:
            verdict = await check(call)
        except Exception as exc:
            verdict = unanswered(call, exc, policy)
        return _logged(verdict, name, args)


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
    return Verdict(allowed=allowed, target=None, tool_call=_safe_call(name, args, call_id), reason=(
        f"{_outcome(allowed, 'unknown')}: the call to {name} could not be mapped to an action of "
        f"the premise graph: {type(exc).__name__}: {exc}"))


def unanswered(call: ToolCall, exc: Exception, policy: Policy) -> Verdict:
    """The verdict when the graph could not answer (policy `on_error`; bad ids: `unknown`)."""
    if isinstance(exc, InvalidInputError):
        return unmappable(call.name, call.args, call.id, exc, policy)
    allowed = policy.on_error == "allow"
    return Verdict(allowed=allowed, target=None, tool_call=call, reason=(
        f"{_outcome(allowed, 'on_error')}: the premise graph could not be checked for {call.name}: "
        f"{type(exc).__name__}: {exc}"))


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


def _safe_call(name: str, args: Arguments, call_id: str | None) -> ToolCall | None:
    try:
        return ToolCall(name=name, args=arguments(name, args), id=call_id)
    except Exception:
        return None


def _logged(verdict: Verdict, name: str, args: Arguments) -> Verdict:
    if not verdict.allowed:
        try:
            text = args if isinstance(args, str) else json.dumps(dict(args or {}), default=str,
                                                                 sort_keys=True)
        except Exception:  # keys that do not sort, a non-mapping...: the log never breaks a verdict
            text = repr(args)
        logger.warning("vetoed tool call %s(%s): %s", name, text if len(text) <= 200 else
                       text[:200] + "...", verdict.reason)
    return verdict




# ------------------------------------------------------------------------------- either handle

type Handle = Rippl | AsyncRippl


def require_handle(handle: object, *, who: str) -> Handle:
    """`handle` if it is a Rippl or AsyncRippl handle, else an error saying how to open one."""
    if not isinstance(handle, Rippl | AsyncRippl):
        raise InvalidInputError(
            f"{who} needs a Rippl or AsyncRippl handle, got {type(handle).__name__}; open one with "
            "Rippl.open(...) or await AsyncRippl.open(...)")
    return handle


def sync_handle(handle: Handle, *, hint: str) -> Rippl:
    """The sync handle for a sync code path; an AsyncRippl there is refused with `hint`."""
    if isinstance(handle, AsyncRippl):
        raise InvalidInputError(f"this runs synchronously but was given an AsyncRippl handle; {hint}")
    return handle


async def acall(handle: Handle, method: str, /, *args: Any, **kwargs: Any) -> Any:
    """Call a handle method from asyncio: awaited on an AsyncRippl, in a worker thread on a Rippl
    (a blocking handle never stalls the event loop)."""
    if isinstance(handle, AsyncRippl):
        return await getattr(handle, method)(*args, **kwargs)
    return await asyncio.to_thread(getattr(handle, method), *args, **kwargs)


class ThreadedRippl:
    """A sync `Rippl` seen through awaitables: every method call runs in a worker thread."""

    def __init__(self, rippl: Rippl) -> None:
        self._rippl = rippl

    @property
    def policy(self) -> Policy:
        return self._rippl.policy

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self._rippl, name)
        if not callable(method):
            raise AttributeError(name)

        @functools.wraps(method)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(method, *args, **kwargs)

        return call


@dataclass(frozen=True)
class Call:
    """One call of a handle method (the only I/O of an operation written as handle calls)."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tick:
    """Wait until the clock has passed `after` (epoch ms) before the next write, so a write is
    never stamped in the same millisecond as something that happened before it started."""

    after: int


type Calls[R] = Generator[Call | Tick, Any, R]


def run_calls[R](handle: Rippl, steps: Calls[R]) -> R:
    """Drive an operation of handle calls with a sync handle."""
    reply: Any = None
    while True:
        try:
            step = steps.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        if isinstance(step, Tick):
            while now_ms() <= step.after:
                time.sleep(0.0002)
            reply = None
        else:
            reply = getattr(handle, step.method)(*step.args, **step.kwargs)


async def arun_calls[R](handle: Handle, steps: Calls[R]) -> R:
    """Drive an operation of handle calls from asyncio: awaited on an AsyncRippl; with a sync
    handle the whole operation runs in one worker thread."""
    if isinstance(handle, Rippl):
        return await asyncio.to_thread(run_calls, handle, steps)
    reply: Any = None
    while True:
        try:
            step = steps.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        if isinstance(step, Tick):
            while now_ms() <= step.after:
                await asyncio.sleep(0.0002)
            reply = None
        else:
            reply = await getattr(handle, step.method)(*step.args, **step.kwargs)


# ------------------------------------------------------------------------------ graph-bound guard


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
                 resolver: Resolver | None = None, unguarded: Iterable[str] = (),
                 only: Iterable[str] | None = None) -> None:
        super().__init__(policy=policy, resolver=resolver, unguarded=unguarded, only=only)
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


# ---------------------------------------------------------------------------------- belief search

_WORD = re.compile(r"\w+")
_STOP = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "how",
    "in", "is", "it", "its", "of", "on", "or", "so", "that", "the", "there", "this", "to", "was",
    "we", "were", "what", "when", "which", "who", "why", "will", "with", "you",
])


def content_words(text: str) -> set[str]:
    """The content words of `text` (case-folded, without the commonest English words)."""
    return {w for w in _WORD.findall(text.casefold()) if len(w) > 1 and w not in _STOP}


def score(query: str, belief: Belief) -> float:
    """The share of the query's content words found in the belief's claim text and topic (0 to 1;
    0 for a query with no content words)."""
    wanted = content_words(query)
    if not wanted:
        return 0.0
    return len(wanted & content_words(f"{belief.text} {belief.topic}")) / len(wanted)


def rank(query: str, beliefs: Sequence[Belief]) -> list[tuple[Belief, float]]:
    """Beliefs with their scores, best first (ties keep the given order). An empty query (no
    content words) keeps every belief, scored 0, in the given order."""
    scored = [(b, score(query, b)) for b in beliefs]
    return [pair for _, pair in sorted(enumerate(scored), key=lambda ip: (-ip[1][1], ip[0]))]


# ------------------------------------------------------------------------------- framework state


def _state_graph_name(handle: Handle, name: str | None, default: str) -> str:
    return check_id(name if name is not None else companion_graph(handle.graph, default),
                    what="graph name")


class StateGraph:
    """Framework state (e.g. LangGraph checkpoints) in a companion graph of the handle's tenant,
    on the same server: its writes never contend with the causal graph's. Operations are
    generators of `Query`/`Commit`, like the core's; `run` drives them."""

    def __init__(self, handle: Rippl, schema: Schema, *, suffix: str, name: str | None = None) -> None:
        self.handle, self.schema = handle, schema
        self.graph = _state_graph_name(handle, name, suffix)
        self._driver = SyncDriver(handle.redis, self.graph, handle.location.describe())

    def setup(self) -> None:
        """Create the graph's indexes (idempotent; cheap once done)."""
        self._driver.run(lambda: _schema.ensure(self.schema, self.graph))

    def run[R](self, make: Callable[[], Op[R]], *, write: bool = False) -> R:
        return self._driver.run(make, write=write)

    def drop(self) -> None:
        """Delete the graph and its keys."""
        with translated_errors(self.handle.location.describe()):
            self.handle.redis.delete(self.graph, schema_key(self.graph), version_key(self.graph))


class AsyncStateGraph:
    """The asyncio twin of `StateGraph`."""

    def __init__(self, handle: AsyncRippl, schema: Schema, *, suffix: str,
                 name: str | None = None) -> None:
        self.handle, self.schema = handle, schema
        self.graph = _state_graph_name(handle, name, suffix)
        self._driver = AsyncDriver(handle.redis, self.graph, handle.location.describe())

    async def setup(self) -> None:
        """Create the graph's indexes (idempotent; cheap once done)."""
        await self._driver.run(lambda: _schema.ensure(self.schema, self.graph))

    async def run[R](self, make: Callable[[], Op[R]], *, write: bool = False) -> R:
        return await self._driver.run(make, write=write)

    async def drop(self) -> None:
        """Delete the graph and its keys."""
        with translated_errors(self.handle.location.describe()):
            await self.handle.redis.delete(self.graph, schema_key(self.graph), version_key(self.graph))


__all__ = [
    "VETO_PREFIX", "Arguments", "AsyncStateGraph", "Call", "Calls", "Commit", "Guard", "Handle",
    "HandleSource",
    "Index", "Op", "Query", "Resolver", "ResolverResult", "Schema", "StateGraph", "ThreadedRippl",
    "Tick", "ToolGuard", "acall", "arguments", "arun_calls", "check_id", "check_text",
    "content_words", "from_ms", "normalise_text", "now_ms", "rank", "require_handle", "run_calls",
    "score", "semantic_id", "sync_handle", "to_ms", "unanswered", "unmappable", "veto_text",
]
