"""The check every hook shares: an AutoGen tool call (name, arguments, call id) judged against the
graph behind a `Link`, and by default recorded as part of the agent's run (provenance capture).

With capture (the default) each call is an action of its run, driven by the model turn that
emitted it (the model-client wrapper records the turn; without it, a call is its own turn, resting
on everything the run observed). At execution the call is judged again (its premises may have been
retracted since its turn), and once it ran, its execution and its output (a new observation of the
run) are recorded. A call is allowed only if its captured action and every declared action matching
it allow it. Without a declared action a call is judged by what its run observed (policy
`unknown="record"`, the default here); `Policy(unknown="deny")` keeps a strict allow-list (calls are
still recorded, and one no declared action matches is denied); `capture=False` checks declared
actions only, as before capture.

A call resolves through `unguarded` (tool names never vetoed, e.g. read-only lookups: still
recorded, so their results are observations), the `resolver` (a mapping of tool name to action id,
or a function of the call), then the core's own resolution by tool name and canonical arguments.
`tool_settings` gives per tool name how Rippl treats its calls (`ToolSettings`: `repeat_scope`,
`fresh_for`, `reads`); a tool object with a `metadata` mapping can carry them under "rippl"
instead (`GuardedTool`, and `RipplWorkbench` over a `StaticWorkbench`, read it), and what is given
here wins.

While an allowed call runs, the runs it starts (an agent or a team used as a tool, guarded by
hooks of their own) note what they wrote and read (`rippl_autogen.runs.Handing`); once it ran,
its output is recorded in each of them as a message written from those, before it is recorded as
the call's result: the calling run's later turns rest on what they carried (a hand-over).
What cannot be mapped is judged by the policy's `unknown`, what cannot be checked or recorded (a
graph that cannot be opened included) is denied unless `on_error="allow"` (recording failures always
deny).
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from rippl_autogen.connection import Link, RipplConnection, Target
from rippl_autogen.runs import FRAMEWORK, Handing, Resolved, RunScope, current_turn, handing
from rippl_core import CollectionNotStr, InvalidInputError, Policy, ToolSettings, Verdict
from rippl_core.adapters import (
    VETO_PREFIX,
    Capture,
    FrameworkCall,
    Resolver,
    ToolSettingsMap,
    arguments,
    capture_policy,
    schema_of,
    text_ref,
    veto_text,
)
from rippl_core.adapters import Guard as KitGuard

__all__ = ["VETO_PREFIX", "Guard", "GuardConfig", "Judged", "Resolver", "veto_text"]


class GuardConfig(BaseModel):
    """The serialisable part of a guard: where the graph is, the policy, the tool-to-action map,
    the tools that are never vetoed, and the capture settings (on or off, the agent's name, the
    application's run id)."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    connection: RipplConnection = Field(default_factory=RipplConnection)
    policy: Policy | None = None
    actions: dict[str, str] = Field(default_factory=dict)
    unguarded: list[str] = Field(default_factory=list)
    capture: bool = True
    agent: str | None = None
    run: str | None = None
    tool_settings: dict[str, ToolSettings] = Field(default_factory=dict)


@dataclass(frozen=True)
class Judged:
    """A call about to run: its verdict (None: an unguarded tool, allowed), the call as recorded
    (its id minted when the framework gave none), the run's capture that records its execution
    (None without capture), and what the runs it starts hand back (`Handing`)."""

    verdict: Verdict | None
    call: FrameworkCall
    capture: Capture | None
    handing: Handing | None = None

    @property
    def allowed(self) -> bool:
        return self.verdict is None or self.verdict.allowed


class Guard(KitGuard):
    """Checks, and by default captures, tool calls (AutoGen's path is async). Shared by the
    workbench, the tool wrapper, the model-client wrapper and the intervention handler; hooks that
    share one guard share its runs (`register_rippl` gives each agent one). The graph is reached
    through a `Link`: a borrowed handle, or connection options opened on first use.

    Args:
        rippl: an `AsyncRippl` or `Rippl` handle, `RipplConnection` options, or a `Link`.
        resolver, policy, unguarded: see the module docstring.
        capture: record the run (default) or check declared actions only.
        agent: the agent's name in run ids (default: the AutoGen agent whose handler runs).
        run: the application's conversation id (see `rippl_autogen.runs`).
        tool_settings: per tool name, how Rippl treats its calls (`ToolSettings`, or a dict of
            its fields): `repeat_scope`, `fresh_for`, `reads`.
        within: the outermost team's id, for an agent of a nested team (`register_rippl`).
    """

    capturing: bool
    link: Link
    scope: RunScope
    executes: set[str]

    CAPTURES = 1024  # runs whose capture a guard keeps (the least recently used are let go)

    def __init__(self, rippl: Target | Link, *, resolver: Resolver | None = None,
                 policy: Policy | None = None, unguarded: CollectionNotStr[str] = (),
                 capture: bool = True, agent: str | None = None, run: str | None = None,
                 tool_settings: ToolSettingsMap | None = None, within: str | None = None) -> None:
        link = rippl if isinstance(rippl, Link) else Link(rippl)
        if not isinstance(capture, bool):
            raise InvalidInputError("capture must be True or False")
        self.capturing = capture
        super().__init__(link, policy=self._recording(policy), resolver=resolver,
                         unguarded=unguarded, tools=tool_settings)
        self.link = link
        self.scope = RunScope(agent, run, within)
        self.executes = set()
        self._captures: OrderedDict[tuple[str, str], Capture] = OrderedDict()
        self._unaccounted: OrderedDict[str, None] = OrderedDict()

    def unaccounted(self, call_id: str) -> None:
        """Note a call whose result carries a hand-over that could not be recorded: in a model's
        input it is a message Rippl cannot account for (it carries everything: fail closed)."""
        self._unaccounted[call_id] = None
        while len(self._unaccounted) > self.CAPTURES:
            self._unaccounted.popitem(last=False)

    def accounted(self, call_id: str) -> bool:
        """Whether what the result of this call carries is on record (see `unaccounted`)."""
        return call_id not in self._unaccounted

    def runs_tools(self, tools: Iterable[Any]) -> None:
        """Note the tools whose calls this guard judges and records (their results in a model's
        input are held to what was recorded), take their settings from a `metadata` mapping they
        carry under "rippl" (unless `tool_settings` names them), and their argument schema
        (`args_type()`, or a tool schema's JSON Schema `parameters`): calls are compared on the
        arguments the tool receives."""
        for tool in tools:
            name = tool.get("name") if isinstance(tool, Mapping) else getattr(tool, "name", None)
            if isinstance(name, str):
                self.executes.add(name)
                metadata = getattr(tool, "metadata", None)
                schema = schema_of(tool, "args_type") if not isinstance(tool, Mapping) \
                    else tool.get("parameters") if isinstance(tool.get("parameters"), Mapping) \
                    else None
                self.learn(name, metadata if isinstance(metadata, Mapping) else None, schema)

    def _recording(self, policy: Policy | None) -> Policy | None:
        """Under capture, a policy that does not say what to do with undeclared calls judges them
        by the run (unknown="record")."""
        return capture_policy(policy) if self.capturing and policy is not None else policy

    @property
    def default_policy(self) -> Policy | None:
        """The handle's policy (under capture, with unknown="record" unless it says otherwise)."""
        base = self.source.policy
        return self._recording(base or Policy()) if self.capturing else base

    @property
    def effective_policy(self) -> Policy:
        return self.policy or self.default_policy or Policy()

    # -- runs -------------------------------------------------------------------------------
    def capture(self, who: Resolved) -> Capture:
        """The capture of one run through this guard (the same object for the same run, so an
        execution that could not be recorded blocks the run's later calls until it is)."""
        key = (who.run, who.scope)
        found = self._captures.get(key)
        if found is None:
            found = self._captures[key] = Capture(self, who.run, agent=who.agent,
                                                  framework=FRAMEWORK, scope=who.scope)
            while len(self._captures) > self.CAPTURES:
                self._captures.popitem(last=False)
        self._captures.move_to_end(key)
        return found

    async def before(self, name: str, args: Mapping[str, Any] | str | None,
                     call_id: str | None) -> Judged:
        """Judge a call just before it runs. Under capture: in the run whose model turn decided
        it (else this guard's run, as a turn of its own); a turn that could not be recorded denies
        its calls as it decided them."""
        if not self.capturing:
            return Judged(await self.acheck(name, args, call_id), (name, args, call_id), None)
        turn = current_turn.get()
        if turn is None or call_id is None or call_id not in turn.verdicts:
            return await self.before_in(self.scope.resolve(), name, args, call_id)
        decided = turn.verdicts[call_id]
        if decided is not None and not decided.allowed and decided.target is None:
            return Judged(decided, (name, args, call_id), None)  # unrecorded or unmappable
        return await self.before_in(turn.who, name, args, call_id, turn=turn.id)

    async def before_in(self, who: Resolved, name: str, args: Mapping[str, Any] | str | None,
                        call_id: str | None, *, turn: str | None = None) -> Judged:
        """Judge a call just before it runs, in the given run (a call the framework gave no id
        gets one, and is a turn of its own). `turn`: the id of the model turn that made it."""
        if not self.capturing:
            return Judged(await self.acheck(name, args, call_id), (name, args, call_id), None)
        call: FrameworkCall = (name, args, call_id or f"autogen-{uuid.uuid4().hex[:16]}")
        capture = self.capture(who)
        said = {text: turn for text in _texts(name, args)} if turn is not None else {}
        return Judged(await capture.ajudge(call), call, capture,
                      Handing(who.scope, handing.get(), said))

    @staticmethod
    @contextmanager
    def running(judged: Judged) -> Iterator[None]:
        """While an allowed call runs: the runs it starts note what they write and read, and what
        it writes to memory (a `RipplMemory.add` from the tool) rests on what the call rested on."""
        writes = judged.capture.writing(judged.call) if judged.capture is not None else nullcontext()
        with writes:
            if judged.handing is None:
                yield
                return
            token = handing.set(judged.handing)
            try:
                yield
            finally:
                with suppress(ValueError):  # a stream closed from another context ends with it
                    handing.reset(token)

    async def after(self, judged: Judged, output: str, *, ok: bool = True) -> None:
        """Record that an allowed call ran (ok=False: it ran and failed) and its output (the text
        the model reads as its result); first, in each run the call started, that text as a
        message the run handed over."""
        if judged.capture is None:
            return
        if ok and judged.handing is not None:
            ref = text_ref(output)
            for capture, refs, told in list(judged.handing.runs.values()):
                if not await capture.awrote(ref, context=list(refs), told=list(told),
                                            kind="handover") and judged.call[2] is not None:
                    self.unaccounted(judged.call[2])  # what it carries is not on record
        await judged.capture.aexecuted(judged.call, output, ok=ok)
        calling = judged.handing.parent if judged.handing is not None else handing.get()
        if calling is not None and judged.call[2] is not None:
            calling.note(judged.capture, [judged.call[2]])

    # -- config -----------------------------------------------------------------------------
    def config(self) -> GuardConfig:
        if self.resolver is not None and not isinstance(self.resolver, Mapping):
            raise InvalidInputError(
                "a resolver function cannot be serialised; pass a mapping of tool name to action "
                "id (resolver={'migrate_tables': 'ACT-001'}) to dump this component")
        policy = self.policy or (self.default_policy if self.capturing else self.link.policy)
        return GuardConfig(connection=self.link.connection, policy=policy,
                           actions=dict(self.resolver or {}), unguarded=sorted(self.unguarded),
                           capture=self.capturing, agent=self.scope.agent, run=self.scope.run,
                           tool_settings=dict(self.tools))

    @classmethod
    def from_config(cls, config: GuardConfig) -> Guard:
        return cls(config.connection, resolver=config.actions or None, policy=config.policy,
                   unguarded=config.unguarded, capture=config.capture, agent=config.agent,
                   run=config.run, tool_settings=config.tool_settings or None)


def _texts(name: str, args: Mapping[str, Any] | str | None) -> list[str]:
    """The string arguments of a call (the text its model wrote that a started run may read)."""
    try:
        values = arguments(name, args)
    except InvalidInputError:
        return []
    return [v for v in values.values() if isinstance(v, str) and v.strip()]


def shared_guard(rippl: Target | Link | Guard, **options: Any) -> Guard:
    """`rippl` if it is a guard already (then no other option may be given), else a new one."""
    if isinstance(rippl, Guard):
        given = [k for k, v in options.items() if not _default(v)]
        if given:
            raise InvalidInputError(f"pass either a Guard or guard options, not both "
                                    f"({', '.join(sorted(given))} given with a Guard)")
        return rippl
    return Guard(rippl, **options)


def _default(value: Any) -> bool:
    return value is None or value is True or (isinstance(value, Collection)
                                              and not isinstance(value, str) and not value)
