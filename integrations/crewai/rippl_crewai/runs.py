"""Provenance capture in CrewAI: which run a tool call or a memory read belongs to, which model
turn a call is part of, and what the model had in its input when it made that turn.

- **Run**: a crew kickoff and the task being executed, `crewai/<kickoff id>/<task id>`. The
  kickoff id (`crew._kickoff_event_id`) is kept by `Crew.from_checkpoint`, so a crew resumed from
  a checkpoint continues its trace, and a human-input pause keeps both ids; every `kickoff()` (and
  `replay()`) starts new runs. Inside a hook the crew and the task are in the hook's context;
  elsewhere (a memory read, a tool's own run) CrewAI's context variables name them. An agent kicked
  off on its own (`agent.kickoff(...)`) is a run of its own (`crewai/<its kickoff id>`); a tool run
  in a flow outside any kickoff belongs to the flow (`crewai/flow/<flow id>`).
- **Turn, native function calling**: the assistant message carrying the turn's tool calls (all of
  them, with their ids) is in the executor's messages when the first call's `PRE_TOOL_CALL` runs;
  a call finds its own id there by its name and parsed arguments. The turn's context is the
  `tool_call_id` of every tool message before that assistant message (a message trimmed or
  summarised away leaves it), its told set those whose content is a Rippl veto.
- **Turn, ReAct**: one call per turn and no ids: the turn (and its call) is named by a digest of
  what the model had been shown and the call; its context is everything the run observed (None),
  its told set the vetoes of this run whose text the model has been shown.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crewai.context import get_current_task_id
from crewai.events.event_context import _event_id_stack
from crewai.flow.flow_context import current_flow_id
from crewai.utilities.string_utils import sanitize_tool_name

from rippl_core.adapters import VETO_PREFIX, Capture, Guard, check_id

FRAMEWORK = "crewai"
KICKOFFS = ("crew_kickoff_started", "lite_agent_execution_started")  # a crew's, an agent's own


# ------------------------------------------------------------------------------------ runs


def run_id(crew: object | None = None, task: object | None = None,
           agent: object | None = None) -> str | None:
    """The capture run of a crew's task: `crewai/<kickoff id>/<task id>`, from the objects a hook
    is given, else from CrewAI's context variables (the innermost kickoff on the event scope stack,
    the current task id). An agent kicked off on its own: `crewai/<its kickoff id>`. A flow outside
    any kickoff: `crewai/flow/<flow id>`. None when nothing is running (nothing to record into)."""
    kickoff, crews = getattr(crew, "_kickoff_event_id", None), True
    if not kickoff:
        kickoff, crews = _kickoff_on_stack()
    if not kickoff:
        kickoff, crews = getattr(agent, "_kickoff_event_id", None), False
    # The current task id only names a crew's task (CrewAI can leave a stale one behind, e.g.
    # after restoring a checkpoint's context), so an agent's own kickoff takes only a given task.
    task_id = getattr(task, "id", None) or (get_current_task_id() if crews else None)
    if kickoff:
        found = f"crewai/{kickoff}" + (f"/{task_id}" if task_id else "")
    elif flow := current_flow_id.get():
        found = f"crewai/flow/{flow}"
    else:
        return None
    try:
        return check_id(found, what="run id")
    except Exception:  # ids too long or unprintable for an id: their digest
        return f"crewai/{_digest(found)}"


def _kickoff_on_stack() -> tuple[str | None, bool]:
    """The innermost kickoff running (a crew's or an agent's own), and whether it is a crew's."""
    for event_id, kind in reversed(_event_id_stack.get()):
        if kind in KICKOFFS:
            return event_id, kind == KICKOFFS[0]
    return None, False


class Runs:
    """The captures of the runs one guard records into: one kit `Capture` per run (it keeps an
    execution that could not be recorded and denies the run's calls until it is), the least
    recently used let go past `limit`."""

    def __init__(self, guard: Guard, *, limit: int = 1024) -> None:
        self.guard = guard
        self.limit = limit
        self._captures: OrderedDict[str, Capture] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, run: str, agent: str | None = None) -> Capture:
        with self._lock:
            found = self._captures.get(run)
            if found is None:
                found = self._captures[run] = Capture(self.guard, run, agent=agent,
                                                      framework=FRAMEWORK)
                while len(self._captures) > self.limit:
                    self._captures.popitem(last=False)
            self._captures.move_to_end(run)
            return found


# ------------------------------------------------------------------------------------ turns

type CrewCall = tuple[str, dict[str, Any], str]
"""A call as the hooks see it: (tool name, arguments, call id); unlike the kit's `FrameworkCall`
it always has its arguments parsed and an id (made up for a ReAct call or a tool's own run)."""



@dataclass(frozen=True)
class Turn:
    """A model turn as a hook sees it: its id, its calls (name, arguments, call id), the call of
    this hook, and what was in the model's input (context None: everything the run observed)."""

    id: str
    calls: tuple[CrewCall, ...]
    call: CrewCall
    context: tuple[str, ...] | None
    told: tuple[str, ...]
    native: bool


def native_turn(messages: Sequence[Mapping[str, Any]], name: str,
                args: Mapping[str, Any]) -> Turn | None:
    """The native turn a call belongs to: the latest assistant message with tool calls (only tool
    messages after it), if one of its calls is this one (`call`: the first such; see `matching`
    for a turn that makes the same call twice)."""
    position = len(messages) - 1
    while position >= 0 and messages[position].get("role") == "tool":
        position -= 1
    if position < 0:
        return None
    message = messages[position]
    entries = message.get("tool_calls") if message.get("role") == "assistant" else None
    if not entries:
        return None
    parsed = [_native_call(entry) for entry in entries]
    ids = "\x1f".join(f"{c[2]}\x1e{c[0]}\x1e{_canonical(c[1])}" for c in parsed)
    turn = f"turn-{_digest(ids)}"
    calls = tuple((n, a, i or f"{turn}#{k}") for k, (n, a, i) in enumerate(parsed))
    mine = matching(calls, name, args)
    if not mine:
        return None
    context, told = tool_results(messages[:position])
    return Turn(turn, calls, mine[0], context, told, native=True)


def matching(calls: Iterable[CrewCall], name: str,
             args: Mapping[str, Any]) -> list[CrewCall]:
    """The calls of a turn that are this call (by name and parsed arguments)."""
    return [c for c in calls if c[0] == name and c[1] == dict(args)]


def tool_results(messages: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(context, told) of a native model input: the call ids of its tool messages, and of those
    that are Rippl vetoes."""
    context: list[str] = []
    told: list[str] = []
    for message in messages:
        call_id = message.get("tool_call_id") if message.get("role") == "tool" else None
        if not call_id:
            continue
        context.append(str(call_id))
        if VETO_PREFIX in str(message.get("content") or ""):
            told.append(str(call_id))
    return tuple(context), tuple(told)


def react_turn(messages: Sequence[Mapping[str, Any]], name: str, args: Mapping[str, Any],
               vetoes: Mapping[str, str]) -> Turn:
    """A ReAct turn (one call, no id): named by a digest of the model's input so far and the call,
    so the same step replayed (a resumed task) is the same turn. `vetoes` maps the call ids this
    run's vetoes were given to the text the model read; those it has been shown are told."""
    last = str(messages[-1].get("content") or "") if messages else ""
    turn = f"react-{_digest(str(len(messages)), _digest(last), name, _canonical(args))}"
    shown = "\n".join(str(m.get("content") or "") for m in messages) if vetoes else ""
    told = tuple(call for call, text in vetoes.items() if text and text in shown)
    call: CrewCall = (name, dict(args), turn)
    return Turn(turn, (call,), call, None, told, native=False)


def single_turn(name: str, args: Mapping[str, Any], call_id: str) -> Turn:
    """A call no turn of the model can be found for: a turn of its own, on everything observed."""
    call: CrewCall = (name, dict(args), call_id)
    return Turn(f"call-{call_id}", (call,), call, None, (), native=False)


def executor_messages(agent: object | None) -> list[dict[str, Any]] | None:
    """The messages of the agent's executor (what the model is given), or None."""
    executor = getattr(agent, "agent_executor", None)
    messages = getattr(executor, "messages", None)
    return messages if isinstance(messages, list) else None


def _native_call(entry: Mapping[str, Any]) -> CrewCall:
    function = entry.get("function") or {}
    raw = function.get("arguments")
    try:
        args = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
    except ValueError:
        args = raw
    return (sanitize_tool_name(str(function.get("name") or "")),
            args if isinstance(args, dict) else {"arguments": args}, str(entry.get("id") or ""))


def _canonical(args: Any) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "replace")).hexdigest()[:24]
