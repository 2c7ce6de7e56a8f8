"""CrewAI tool-call hooks that veto a call when a premise under its action was retracted.

`register_rippl_hooks(memory)` installs, process-wide, a `PRE_TOOL_CALL` guard and a
`POST_TOOL_CALL` hook; `with rippl_guard(memory): crew.kickoff()` installs the same pair for one
block only (CrewAI's contextvar-scoped hooks, so other threads and runs are untouched).

Two traps of CrewAI 1.15 are handled here:

- Hooks fail OPEN: any exception other than `HookAborted` is swallowed and the tool runs. The
  guard therefore never lets an exception out: a graph that cannot be reached, or a call that
  cannot be mapped to an action, becomes a verdict (denied by default) and a `HookAborted`.
- A blocked call shows the agent only "Tool execution blocked by hook. Tool: <name>". The
  post-call hook replaces that text with the verdict: the veto, the reason and every trail from a
  retracted premise to the action, so the model can choose another way.

Both the ReAct text path and the native function-calling path run these hooks. Paths that bypass
hooks (direct `tool.run()`, a flow's declarative tool action) are covered by `GuardedTool`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from crewai.hooks import HookAborted, InterceptionPoint, ToolCallHookContext
from crewai.hooks.dispatch import (
    get_scoped_hooks,
    register,
    register_scoped,
    scoped_hooks,
    unregister,
)

from rippl_core import InvalidInputError, Policy, Rippl, Verdict
from rippl_crewai._guard import (
    VETO_PREFIX,
    Resolver,
    check_memory,
    make_guard,
    tool_names,
    veto_text,
)
from rippl_crewai.tools import CHECK_TOOL_NAME, CheckPremisesTool

BLOCKED_PREFIX = "Tool execution blocked by hook"
_PENDING_LIMIT = 1024

type HookFn = Callable[[ToolCallHookContext], Any]


class RipplHooks:
    """A registered pair of hooks (guard + reason). `unregister()` removes them; usable as a
    context manager. `verdicts` keeps the most recent verdicts, newest last."""

    def __init__(self, memory: Rippl, *, tools: Iterable[object] | None = None,
                 unguarded: Iterable[object] = (), agents: Iterable[str] | None = None,
                 policy: Policy | None = None, resolver: Resolver | None = None,
                 history: int = 100) -> None:
        self.memory = check_memory(memory)
        self.guard = make_guard(self.memory, policy=policy, resolver=resolver, tools=tools,
                                unguarded=[*(tool_names(unguarded, what="unguarded") or ()),
                                           CHECK_TOOL_NAME])
        self.policy, self.resolver = self.guard.policy, self.guard.resolver
        if isinstance(agents, str):
            raise InvalidInputError("agents must be a list of agent roles, not one string")
        self.agents = frozenset(agents) if agents is not None else None
        self.verdicts: deque[Verdict] = deque(maxlen=history)
        self._pending: OrderedDict[int, tuple[dict[str, Any], Verdict]] = OrderedDict()
        self._lock = threading.Lock()
        self._remove: Callable[[], None] | None = None

    # -- the hooks ------------------------------------------------------------------------------
    def before(self, ctx: ToolCallHookContext) -> None:
        """PRE_TOOL_CALL: allow (return None) or veto (raise HookAborted). Never anything else:
        whatever goes wrong in here vetoes the call (CrewAI would swallow it and run the tool)."""
        try:
            name = str(ctx.tool_name)
            verdict = self.guard.check(name, ctx.tool_input) if self._applies(
                ctx) else None
            if verdict is None:
                return None
            self.verdicts.append(verdict)
            if verdict.allowed:
                return None
            self._remember(ctx.tool_input, verdict)
            message = veto_text(name, verdict)
        except Exception as exc:
            message = (f"{VETO_PREFIX}: the call did not run. denied (fail closed): the Rippl "
                       f"guard failed: {type(exc).__name__}: {exc}")
        raise HookAborted(reason=message, source="rippl")

    def after(self, ctx: ToolCallHookContext) -> str | None:
        """POST_TOOL_CALL: on a call this guard vetoed, the verdict replaces the blocked text."""
        try:
            verdict = self._take(ctx.tool_input)
            if verdict is None or not str(ctx.tool_result or "").startswith(BLOCKED_PREFIX):
                return None
            return veto_text(str(ctx.tool_name), verdict)
        except Exception:  # never break the run for the sake of a message
            return None

    @property
    def last_verdict(self) -> Verdict | None:
        return self.verdicts[-1] if self.verdicts else None

    def _applies(self, ctx: ToolCallHookContext) -> bool:
        original = getattr(getattr(ctx, "tool", None), "_original_tool", None)
        if isinstance(original, CheckPremisesTool):  # read-only: never vetoed
            return False
        if self.agents is not None:
            role = getattr(getattr(ctx, "agent", None), "role", None)
            return role is None or role in self.agents
        return True

    # The blocked call's arguments are the same dict object in the pre- and post-call contexts
    # (both the ReAct and the native paths pass it on), so it keys the verdict between the two.
    def _remember(self, tool_input: Any, verdict: Verdict) -> None:
        with self._lock:
            self._pending[id(tool_input)] = (tool_input, verdict)
            while len(self._pending) > _PENDING_LIMIT:
                self._pending.popitem(last=False)

    def _take(self, tool_input: Any) -> Verdict | None:
        with self._lock:
            entry = self._pending.get(id(tool_input))
            if entry is None or entry[0] is not tool_input:
                return None
            del self._pending[id(tool_input)]
            return entry[1]

    # -- registration -----------------------------------------------------------------------------
    def unregister(self) -> None:
        """Remove both hooks (idempotent)."""
        remove, self._remove = self._remove, None
        if remove is not None:
            remove()

    @property
    def registered(self) -> bool:
        return self._remove is not None

    def __enter__(self) -> RipplHooks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unregister()

    def _register_global(self) -> None:
        guard, explain = self._hook_functions()
        register(InterceptionPoint.PRE_TOOL_CALL, guard)
        register(InterceptionPoint.POST_TOOL_CALL, explain)

        def remove() -> None:
            unregister(InterceptionPoint.PRE_TOOL_CALL, guard)
            unregister(InterceptionPoint.POST_TOOL_CALL, explain)

        self._remove = remove

    def _hook_functions(self) -> tuple[HookFn, HookFn]:
        def rippl_premise_guard(ctx: ToolCallHookContext) -> None:
            return self.before(ctx)

        def rippl_veto_reason(ctx: ToolCallHookContext) -> str | None:
            return self.after(ctx)

        return rippl_premise_guard, rippl_veto_reason


def register_rippl_hooks(memory: Rippl, *, tools: Iterable[object] | None = None,
                         unguarded: Iterable[object] = (), agents: Iterable[str] | None = None,
                         policy: Policy | None = None,
                         resolver: Resolver | Mapping[str, str] | None = None) -> RipplHooks:
    """Guard every tool call of every crew in this process (until `unregister()`).

    tools: only these tools (or tool names) are checked; None checks every tool.
    unguarded: tools never checked (read-only lookups); `check_premises` never is.
    agents: only calls made by agents with these roles are checked; None checks all.
    policy: the pre-flight policy (default: the handle's, which fails closed).
    resolver: tool name -> action id, or a function (name, args) -> action id | ToolCall | None;
        unresolved calls are matched by tool name and arguments against the graph's actions.
    """
    hooks = RipplHooks(memory, tools=tools, unguarded=unguarded, agents=agents, policy=policy,
                       resolver=resolver)
    hooks._register_global()
    return hooks


@contextmanager
def rippl_guard(memory: Rippl, *, tools: Iterable[object] | None = None,
                unguarded: Iterable[object] = (), agents: Iterable[str] | None = None,
                policy: Policy | None = None,
                resolver: Resolver | Mapping[str, str] | None = None) -> Iterator[RipplHooks]:
    """Guard the tool calls made inside the block only: `with rippl_guard(memory): crew.kickoff()`.

    The hooks live in CrewAI's execution-scoped registry (a contextvar), so they apply to this
    thread and to the work CrewAI starts from it, and are gone when the block exits; the global
    hook lists are never touched. Hooks already scoped by an enclosing block keep running.
    """
    hooks = RipplHooks(memory, tools=tools, unguarded=unguarded, agents=agents, policy=policy,
                       resolver=resolver)
    guard, explain = hooks._hook_functions()
    inherited = {point: get_scoped_hooks(point) for point in InterceptionPoint}
    with scoped_hooks({point: list(fns) for point, fns in inherited.items() if fns}) as scope:
        register_scoped(InterceptionPoint.PRE_TOOL_CALL, guard)
        register_scoped(InterceptionPoint.POST_TOOL_CALL, explain)

        def remove() -> None:
            for point, fn in ((InterceptionPoint.PRE_TOOL_CALL, guard),
                              (InterceptionPoint.POST_TOOL_CALL, explain)):
                if fn in scope.get(point, []):
                    scope[point].remove(fn)

        hooks._remove = remove
        try:
            yield hooks
        finally:
            hooks.unregister()
