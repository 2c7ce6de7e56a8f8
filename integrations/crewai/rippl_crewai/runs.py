"""Provenance capture in CrewAI: which run a tool call or a memory read belongs to, which model
turn a call is part of, and what the model had in its input when it made that turn.

- **Run**: a crew kickoff and the task being executed, `crewai/<kickoff id>/<task id>`. The
  kickoff id (`crew._kickoff_event_id`) is kept by `Crew.from_checkpoint`, so a crew resumed from
  a checkpoint continues its trace, and a human-input pause keeps both ids; every `kickoff()` (and
  `replay()`) starts new runs. Inside a hook the crew and the task are in the hook's context;
  elsewhere (a memory read, a tool's own run) CrewAI's context variables name them. An agent kicked
  off on its own (`agent.kickoff(...)`) is a run of its own (`crewai/<its kickoff id>`); a tool run
  in a flow outside any kickoff belongs to the flow (`crewai/flow/<flow id>`).
- **Scope**: the kickoff (`crewai/<kickoff id>`): the tasks of one kickoff hand their outputs to
  one another, so a task's output quoted in a later task's prompt (its `context`) carries into
  the later task's run what it carried in its own (a hand-over).
- **Turn, native function calling**: the assistant message carrying the turn's tool calls (all of
  them, with their ids) is in the executor's messages when the first call's `PRE_TOOL_CALL` runs
  (an agent's own kickoff keeps its executor off the agent: the list its model was last given);
  a call finds its own id there by its name and parsed arguments.
- **Turn, ReAct**: one call per turn and no ids: the turn (and its call) is named by a digest of
  what the model had been shown and the call.
- **Context** (`visible`): every message before the turn, by its ref. Premises flow with the text
  that carries them: a tool result carries its result; the model's own messages (a native turn,
  a ReAct step with its observation, a reply) what they were written from; CrewAI's
  context-window summary (`respect_context_window`) everything it replaced; another task's output
  what it carried in its run; the task's instructions and the user's input nothing. A message
  trimmed away takes its observations out only once every message carrying them is gone; one
  Rippl cannot account for carries everything the run carried (fail closed). **Told**: the
  messages that are Rippl vetoes (a native tool message, or a ReAct step whose observation is a
  veto this run gave): what the veto named leaves the model's later turns (a call that repeats
  the vetoed one stays vetoed).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crewai.context import get_current_task_id
from crewai.events.event_context import _event_id_stack
from crewai.flow.flow_context import current_flow_id
from crewai.utilities.i18n import I18N_DEFAULT
from crewai.utilities.string_utils import sanitize_tool_name

from rippl_core.adapters import VETO_PREFIX, Capture, Guard, check_id, output_digest, text_ref

FRAMEWORK = "crewai"
CHECK_TOOL_NAME = "check_premises"  # Rippl's own read-only tool: its answers carry nothing
KICKOFFS = ("crew_kickoff_started", "lite_agent_execution_started")  # a crew's, an agent's own


# ------------------------------------------------------------------------------------ runs


def run_id(crew: object | None = None, task: object | None = None,
           agent: object | None = None, *, flows: bool = True) -> str | None:
    """The capture run of a crew's task: `crewai/<kickoff id>/<task id>`, from the objects a hook
    is given, else from CrewAI's context variables (the innermost kickoff on the event scope stack,
    the current task id). An agent kicked off on its own: `crewai/<its kickoff id>`. A flow outside
    any kickoff: `crewai/flow/<flow id>` (unless `flows` is False: a memory's own encoding flow is
    no agent's run). None when nothing is running (nothing to record into)."""
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
    elif flows and (flow := current_flow_id.get()):
        found = f"crewai/flow/{flow}"
    else:
        return None
    try:
        return check_id(found, what="run id")
    except Exception:  # ids too long or unprintable for an id: their digest
        return f"crewai/{_digest(found)}"


def scope_of(run: str) -> str:
    """The scope of a run: its kickoff for a crew's task (`crewai/<kickoff id>`), else the run."""
    parts = run.split("/")
    return "/".join(parts[:2]) if len(parts) == 3 and parts[1] != "flow" else run


def task_outputs(crew: object | None, task: object | None) -> dict[str, tuple[str, str]]:
    """The outputs of the crew's other tasks, by ref: (their text, the run that wrote them)."""
    found: dict[str, tuple[str, str]] = {}
    for other in getattr(crew, "tasks", None) or ():
        output = getattr(getattr(other, "output", None), "raw", None)
        if other is task or not isinstance(output, str) or not output.strip():
            continue
        run = run_id(crew, other)
        if run is not None:
            found[text_ref(output)] = (output, run)
    return found


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
                                                      framework=FRAMEWORK, scope=scope_of(run))
                while len(self._captures) > self.limit:
                    self._captures.popitem(last=False)
            self._captures.move_to_end(run)
            return found


# ------------------------------------------------------------------------------------ turns

type CrewCall = tuple[str, dict[str, Any], str]
"""A call as the hooks see it: (tool name, arguments, call id); unlike the kit's `FrameworkCall`
it always has its arguments parsed and an id (made up for a ReAct call or a tool's own run)."""



@dataclass(frozen=True)
class Seen:
    """What a model input holds, for capture: the ref of each message in order, those that are
    Rippl vetoes, those that may be the user's (system and user messages, not a summary), the tool
    results to verify against what Rippl recorded (call id -> digest of the content, None: only
    that it was recorded), the context-window summaries among them, and the refs of other tasks'
    outputs the input quotes (hand-overs)."""

    context: tuple[str, ...] | None  # None: the input cannot be seen (everything the run carried)
    told: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    results: Mapping[str, str | None] = field(default_factory=dict)
    summaries: tuple[str, ...] = ()
    handed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Known:
    """What the hooks know of a run's messages in this process: the ReAct turn whose assistant
    message has a given text (the model's reply and the tool's observation), or comes at a
    position after a message with a given digest, the vetoes given (call id ->
    text), and how each call's result was shown (call id -> (digest Rippl recorded, digest of the
    text the agent was shown); None: no execution recorded, nothing to verify); and the outputs
    of the crew's other tasks (ref -> text)."""

    react: Mapping[tuple[int, str], str] = field(default_factory=dict)
    steps: Mapping[str, str] = field(default_factory=dict)  # a ReAct step's text ref -> its turn
    vetoes: Mapping[str, str] = field(default_factory=dict)
    shown: Mapping[str, tuple[str, str] | None] = field(default_factory=dict)
    outputs: Mapping[str, str] = field(default_factory=dict)


SUMMARY_HEAD, _, SUMMARY_TAIL = I18N_DEFAULT.slice("summary").partition("{merged_summary}")


def is_summary(message: Mapping[str, Any]) -> bool:
    """Whether a message is a summary CrewAI wrote to fit the context window
    (`respect_context_window`): a user message in the form of its "summary" slice."""
    content = str(message.get("content") or "")
    return message.get("role") == "user" and content.startswith(SUMMARY_HEAD.strip()) and \
        content.rstrip().endswith(SUMMARY_TAIL.strip())


def visible(messages: Sequence[Mapping[str, Any]], known: Known | None = None) -> Seen:
    """What a model input holds. Premises flow with the text that carries them: each message is
    named by its ref, and Rippl looks up what it carries.

    - a tool message: its `tool_call_id` (a veto is told; a result is verified);
    - an assistant message with tool calls: its turn (it carries what the turn rested on); a ReAct
      assistant message (the model's text and the tool's observation): the turn of its call, found
      by its text or by where it comes; any other: the digest of its text;
    - a system or user message: the digest of its text, possibly the user's input; a
      context-window summary is not (recorded when seen, as written from what it replaced);
    - the output of another task the input quotes (a task's `context`): its ref, first, so
      that it carries what it carried in the run that wrote it (a hand-over).
    """
    known = known or Known()
    context: list[str] = []
    told: list[str] = []
    inputs: list[str] = []
    results: dict[str, str | None] = {}
    summaries: list[str] = []
    handed: list[str] = []
    for position, message in enumerate(messages):
        role = message.get("role")
        content = str(message.get("content") or "")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not call_id or message.get("name") == CHECK_TOOL_NAME:  # Rippl's own answer
                continue
            ref = str(call_id)
            if VETO_PREFIX in content:
                told.append(ref)
            else:
                verified = _verified(known.shown, ref, content)
                if not isinstance(verified, bool):
                    results[ref] = verified
        elif role == "assistant" and message.get("tool_calls"):
            ref = turn_ref([_native_call(e) for e in message["tool_calls"]])
        elif role == "assistant":
            vetoed = [call for call, text in known.vetoes.items() if text and text in content]
            before = str(messages[position - 1].get("content") or "") if position else ""
            ref = vetoed[0] if vetoed else known.steps.get(text_ref(content)) or \
                known.react.get((position, _digest(before))) or text_ref(content)
            if vetoed:
                told.append(ref)
        elif is_summary(message):
            ref = text_ref(content)
            summaries.append(ref)
        else:
            ref = text_ref(content)
            if role in ("system", "user"):
                inputs.append(ref)
                handed += [out for out, text in known.outputs.items() if text in content]
        context.append(ref)
    return Seen(tuple(dict.fromkeys([*handed, *context])), tuple(dict.fromkeys(told)),
                tuple(inputs), results, tuple(summaries), tuple(dict.fromkeys(handed)))


def _verified(shown: Mapping[str, tuple[str, str] | None], call_id: str,
              content: str) -> str | bool | None:
    """What to verify of a tool result in the input: the digest of its content; None (only that it
    was recorded) when the agent was shown another text than the output Rippl recorded and this
    is it; False (nothing) when these hooks know the tool did not run (a cached replay, a usage
    limit). A result these hooks never saw is verified: a message Rippl never recorded is denied."""
    digest = output_digest(content)
    if call_id not in shown:
        return digest
    found = shown[call_id]
    if found is None:
        return False
    recorded, seen = found
    return None if recorded != seen and digest == seen else digest


@dataclass(frozen=True)
class Turn:
    """A model turn as a hook sees it: its id, its calls (name, arguments, call id), the call of
    this hook, and what was in the model's input (context None: everything the run observed)."""

    id: str
    calls: tuple[CrewCall, ...]
    call: CrewCall
    seen: Seen
    native: bool


def native_turn(messages: Sequence[Mapping[str, Any]], name: str,
                args: Mapping[str, Any], known: Known | None = None) -> Turn | None:
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
    turn = turn_ref(parsed)
    calls = tuple((n, a, i or f"{turn}#{k}") for k, (n, a, i) in enumerate(parsed))
    mine = matching(calls, name, args)
    if not mine:
        return None
    return Turn(turn, calls, mine[0], visible(messages[:position], known), native=True)


def turn_ref(calls: Sequence[CrewCall]) -> str:
    """The id of a native turn (and the ref of its assistant message): a digest of its calls."""
    joined = "\x1f".join(f"{c[2]}\x1e{c[0]}\x1e{_canonical(c[1])}" for c in calls)
    return f"turn-{_digest(joined)}"


def matching(calls: Iterable[CrewCall], name: str,
             args: Mapping[str, Any]) -> list[CrewCall]:
    """The calls of a turn that are this call (by name and parsed arguments)."""
    return [c for c in calls if c[0] == name and c[1] == dict(args)]


def react_key(messages: Sequence[Mapping[str, Any]]) -> tuple[int, str]:
    """Where the assistant message of a ReAct call made on `messages` will be found: its position
    and the digest of the message before it."""
    last = str(messages[-1].get("content") or "") if messages else ""
    return len(messages), _digest(last)


def react_turn(messages: Sequence[Mapping[str, Any]], name: str, args: Mapping[str, Any],
               known: Known | None = None) -> Turn:
    """A ReAct turn (one call, no id): named by a digest of the model's input so far and the call,
    so the same step replayed (a resumed task) is the same turn."""
    position, last = react_key(messages)
    turn = f"react-{_digest(str(position), last, name, _canonical(args))}"
    call: CrewCall = (name, dict(args), turn)
    return Turn(turn, (call,), call, visible(messages, known), native=False)


def single_turn(name: str, args: Mapping[str, Any], call_id: str) -> Turn:
    """A call no turn of the model can be found for: a turn of its own, on everything observed."""
    call: CrewCall = (name, dict(args), call_id)
    return Turn(f"call-{call_id}", (call,), call, Seen(None), native=False)


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
