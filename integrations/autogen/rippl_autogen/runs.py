"""Which run an AutoGen agent's model turns, tool calls and memory reads belong to.

A run is the scope of a captured trace. Its id is `<base>/<agent name>`, where the base is, first
found:

1. `run=` given by the application: its conversation or session id. Give it whenever a
   conversation can outlive the Python objects running it: it is the only base that survives
   `save_state()`/`load_state()` into new agents or a new team, or a restart.
2. the scope of the call running it, for an agent or a team used as a tool (`AgentTool`,
   `TeamTool`) by a guarded agent: the calling run's scope (`handing`, below).
3. the outermost team's id, for the agents of a nested team that `register_rippl` found inside it.
4. the team's id, inside a team (`MessageHandlerContext.agent_id().key`): every agent of one team
   object shares it, so re-running the same team (`team.run(...)` again after a handoff or a
   termination) continues the same runs. It is a fresh uuid per team object and is not part of
   the saved state: a team rebuilt by `load_state` starts new runs.
5. an id minted per `RunScope` (one per agent when `register_rippl` installs the hooks): a solo
   `agent.run(...)` outside any team. It lasts as long as the objects do.

**Scope.** Runs that hand messages to one another share a scope: the base (so every agent of a
team, the agents of its nested teams, and the agents a guarded call runs as a tool). A message of
one agent read by another (a team's `TextMessage`, seen by the others as a `UserMessage`; the
output of an agent used as a tool) carries into the reading run what it carried in the writing
one (a hand-over).

The model-client wrapper decides each model turn in its run and leaves the turn in a context
variable (`current_turn`); the tool hooks find the turn of the call they are about to run there
(tool calls run in tasks created after the model turn, which copy the context), so a call is
judged and recorded in the run whose turn decided it, whatever hook runs it. While a guarded call
runs, `handing` holds what the runs it starts (an agent or a team used as a tool) wrote, so that
its output is recorded as a message they handed over (see `Handing`).
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autogen_core import MessageHandlerContext

from rippl_core import AsyncRippl, InvalidInputError, Rippl, Verdict
from rippl_core.adapters import check_id

if TYPE_CHECKING:  # the adapter kit's Guard: this module sits below rippl_autogen.guard
    from rippl_core.adapters import Capture, Guard

FRAMEWORK = "autogen"
DEFAULT_AGENT = "agent"


def handler_agent() -> tuple[str, str] | None:
    """(agent name, agent key) of the AutoGen agent whose message handler is running, or None
    outside one (a solo `agent.run()`). Inside a team the key is the team's id and the agent type
    is `<name>_<team id>`."""
    try:
        agent_id = MessageHandlerContext.agent_id()
    except (RuntimeError, LookupError):
        return None
    kind, key = agent_id.type, agent_id.key
    suffix = f"_{key}"
    return (kind[: -len(suffix)] if kind.endswith(suffix) and len(kind) > len(suffix) else kind), key


@dataclass(frozen=True)
class Resolved:
    """Who runs now: the run id, the agent's name, and the scope of the run."""

    run: str
    agent: str | None
    scope: str


class RunScope:
    """Names the run of one agent (see the module docstring). `agent`: the agent's name (default:
    the name of the AutoGen agent whose handler runs, else "agent"); `run`: the application's
    conversation id (default: the calling run's scope, the outermost team's id, the team's id,
    else an id minted for this scope); `within`: the outermost team's id (`register_rippl` sets it
    for the agents of a nested team)."""

    agent: str | None
    run: str | None
    within: str | None

    def __init__(self, agent: str | None = None, run: str | None = None,
                 within: str | None = None) -> None:
        self.agent = None if agent is None else check_id(agent, what="agent")
        self.run = None if run is None else check_id(run, what="run")
        self.within = None if within is None else check_id(within, what="team id")
        self._own = uuid.uuid4().hex[:16]

    def resolve(self) -> Resolved:
        """The run, agent and scope as of now."""
        handler = handler_agent()
        calling = handing.get()
        agent = self.agent or (handler[0] if handler else DEFAULT_AGENT)
        base = self.run or (calling.scope if calling else None) or self.within or \
            (handler[1] if handler else self._own)
        return Resolved(check_id(f"{base}/{agent}", what="run id"), agent,
                        calling.scope if calling else base)

    def __repr__(self) -> str:
        return f"RunScope(agent={self.agent!r}, run={self.run!r})"


# ------------------------------------------------------------------------------------ turns


@dataclass(frozen=True)
class Turn:
    """A model turn the wrapper decided: its run, the guard it was decided through (a
    `rippl_autogen.guard.Guard`), and the verdict it got on each call (by call id; None: an
    unguarded tool)."""

    run: str
    agent: str | None
    guard: Guard
    verdicts: Mapping[str, Verdict | None] = field(default_factory=dict)
    scope: str | None = None
    id: str | None = None  # the turn's id (the ref of the model message that made its calls)

    @property
    def who(self) -> Resolved:
        return Resolved(self.run, self.agent, self.scope or self.run)


current_turn: ContextVar[Turn | None] = ContextVar("rippl_autogen_turn", default=None)


@dataclass
class Handing:
    """A guarded call while it runs, for the runs it starts (an agent or a team used as a tool):
    the scope they join, and per run the refs of the messages each wrote or read meanwhile (its
    model's inputs and replies, its tools' results) and the vetoes among them. Once the call ran,
    its output is recorded in each of those runs as a message written from them (`Guard.after`),
    so the calling run's next turn rests on what they carried (a hand-over). The other way,
    `said` maps the text of each of the call's string arguments (an `AgentTool`'s task) to the
    calling turn's id: a user message of the started runs with that text is what the calling
    model wrote, and carries what its turn rested on."""

    scope: str
    parent: Handing | None = None  # the call running the call this is for, if any
    said: dict[str, str] = field(default_factory=dict)
    runs: dict[str, tuple[Capture, dict[str, None], dict[str, None]]] = field(default_factory=dict)

    def note(self, capture: Capture, refs: Iterable[str], told: Iterable[str] = ()) -> None:
        """Messages of the run `capture` records, written or read while the call runs."""
        _, seen, vetoes = self.runs.setdefault(capture.run_id, (capture, {}, {}))
        seen.update(dict.fromkeys(refs))
        vetoes.update(dict.fromkeys(told))


handing: ContextVar[Handing | None] = ContextVar("rippl_autogen_handing", default=None)


def turn_id(run: str, call_ids: Sequence[str]) -> str:
    """A model turn's id: a content hash of its run and its calls' ids (provider call ids are
    unique, so the same turn seen again, and only it, has the same id)."""
    digest = hashlib.sha256("\x1f".join([run, *call_ids]).encode()).hexdigest()
    return f"turn-{digest[:24]}"


# ------------------------------------------------------------------------------------ memory


def memory_ref(text: str) -> str:
    """The handle of a message carrying memory into the model's context: a digest of its text."""
    return f"mem:{hashlib.sha256(text.encode('utf-8', 'replace')).hexdigest()[:32]}"


class _MemoryMessages:
    """The memory messages RipplMemory injected (handle -> the claims they carry), and which runs
    of which graph have recorded them as observations. Bounded: the oldest are forgotten (then a
    run records a message again, which adds nothing new to the graph)."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._claims: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._recorded: OrderedDict[tuple[str, str, str], None] = OrderedDict()

    def carried(self, ref: str, claims: Iterable[str]) -> None:
        self._remember(self._claims, ref, tuple(sorted(set(claims))))

    def claims(self, ref: str) -> tuple[str, ...] | None:
        return self._claims.get(ref)

    def recorded(self, graph: str, run: str, ref: str) -> bool:
        return (graph, run, ref) in self._recorded

    def record(self, graph: str, run: str, ref: str) -> None:
        self._remember(self._recorded, (graph, run, ref), None)

    def _remember[K, V](self, store: OrderedDict[K, V], key: K, value: V) -> None:
        store[key] = value
        store.move_to_end(key)
        while len(store) > self.LIMIT:
            store.popitem(last=False)


memory_messages: _MemoryMessages = _MemoryMessages()


def graph_key(handle: object) -> str:
    """Which graph a handle writes to (a key for `memory_messages`)."""
    location = getattr(handle, "location", None)
    graph = getattr(handle, "graph", None)
    if location is None or graph is None:
        raise InvalidInputError(f"expected a Rippl handle, got {type(handle).__name__}")
    return f"{location.describe()}|{graph}"


async def observe(handle: AsyncRippl | Rippl, who: Resolved, claims: Sequence[str],
                  ref: str | None) -> None:
    """Record that the run saw these claims, carried by the message `ref` (None: for the rest of
    the run). A sync handle runs in a worker thread."""
    if isinstance(handle, AsyncRippl):
        await handle.run(who.run, agent=who.agent, framework=FRAMEWORK,
                         scope=who.scope).observe(claims, ref=ref)
    else:
        target = handle.run(who.run, agent=who.agent, framework=FRAMEWORK, scope=who.scope)
        await asyncio.to_thread(target.observe, claims, ref=ref)


async def record_memory(handle: AsyncRippl | Rippl, who: Resolved, ref: str,
                        claims: Sequence[str]) -> None:
    """Record a memory message as an observation of the run, once per run and graph."""
    graph = graph_key(handle)
    if not claims or memory_messages.recorded(graph, who.run, ref):
        return
    await observe(handle, who, claims, ref)
    memory_messages.record(graph, who.run, ref)
