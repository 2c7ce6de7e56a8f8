"""CrewAI tool-call hooks that record what every call rests on (provenance capture) and veto a call
when a premise under it was retracted.

`register_rippl_hooks(memory)` installs, process-wide, a `PRE_TOOL_CALL` guard and a
`POST_TOOL_CALL` hook, and under capture a `PRE_MODEL_CALL` and a `POST_MODEL_CALL` hook that only
watch (never block); `with rippl_guard(memory): crew.kickoff()` installs the same hooks for one
block only (CrewAI's contextvar-scoped hooks, so other threads and runs are untouched).

**Capture (the default).** Each task of a crew kickoff is a run (`rippl_crewai.runs`). The first
call of a model turn to reach `PRE_TOOL_CALL` records the turn as a decision resting on what the
model had in its input, and each of its calls as an action; every other call of the turn is
judged again just before it runs (a retraction may land while an earlier call of the turn runs).
A call is allowed only if its captured action and every declared action matching it allow it; a
vetoed call never runs, and the model reads why. `POST_TOOL_CALL` records the execution, and the
output becomes an observation later turns rest on; a result replayed from CrewAI's tool cache is
recorded as an observation instead (and is replayed only while it holds: `rippl_crewai.cache`).
An execution is recorded unless the hook knows the tool did not run (blocked, served from the
cache, a usage limit, a repeated ReAct call): over-recording can only list too much for
compensation, never miss a call. `capture=False` checks declared actions only.

What a turn rests on is what the messages of the model's input carry (`runs.visible`): the
hooks keep, per run, what they need to name those messages (a ReAct step's text, the vetoes
given, how each result was shown, the model's latest input) and record, before a turn, the
messages Rippl has not seen written: the task's instructions (carrying nothing), CrewAI's
context-window summary (written from the model's previous input), and another task's output the
prompt quotes (in the run that wrote it, from that run's last model input: a hand-over); and,
when the model answers in text, that answer (a ReAct reply's final answer), as written from its
input (a coworker's answer to an agent that delegated to it is handed over so).
Per-tool settings (`tool_settings=`, or a tool's `metadata["rippl"]`) go to the kit's guard.

Two traps of CrewAI 1.15 are handled here:

- Hooks fail OPEN: any exception other than `HookAborted` is swallowed and the tool runs. The
  guard therefore never lets an exception out: a graph that cannot be reached, a turn that cannot
  be recorded or a call that cannot be mapped becomes a denying verdict and a `HookAborted`.
- A blocked call shows the agent only "Tool execution blocked by hook. Tool: <name>". The
  post-call hook replaces that text with the verdict: the veto, the reason and every trail from a
  retracted premise to the action, so the model can choose another way (and, under capture, the
  next turn no longer rests on what the veto named).

Both the ReAct text path and the native function-calling path run these hooks. Paths that bypass
hooks (direct `tool.run()`, a flow's declarative tool action) are covered by `GuardedTool`.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field, replace
from typing import Any

from crewai.hooks import HookAborted, InterceptionPoint, ToolCallHookContext
from crewai.hooks.dispatch import (
    get_scoped_hooks,
    register,
    register_scoped,
    scoped_hooks,
    unregister,
)
from crewai.tools.tool_failure import ToolFailure
from crewai.utilities.string_utils import sanitize_tool_name

from rippl_core import InvalidInputError, Policy, Rippl, Verdict
from rippl_core.adapters import Capture, Guard, ToolSettingsMap, output_digest, text_ref
from rippl_crewai._guard import (
    Resolver,
    check_memory,
    learn_tools,
    make_guard,
    tool_names,
    veto_text,
)
from rippl_crewai.cache import REPLAYS, cache_of, vet_replay
from rippl_crewai.runs import (
    CHECK_TOOL_NAME,
    CrewCall,
    Known,
    Runs,
    Seen,
    Turn,
    executor_messages,
    is_summary,
    matching,
    native_turn,
    react_key,
    react_turn,
    run_id,
    scope_of,
    single_turn,
    task_outputs,
    visible,
)
from rippl_crewai.tools import Admission, CheckPremisesTool, GuardedTool

BLOCKED_PREFIX = "Tool execution blocked by hook"
ERROR_PREFIX = "Error executing tool"
FINAL_ANSWER = "Final Answer:"
_PENDING_LIMIT = 1024
_TURN_LIMIT = 4096
# CrewAI's tools that hand a task (and its context) to a coworker, whose task then runs in the same
# kickoff; and how long a text they hand over must be to be looked for in the coworker's input.
DELEGATIONS = frozenset({"delegate_work_to_coworker", "ask_question_to_coworker"})
_HANDED_TEXT = 12

type HookFn = Callable[[ToolCallHookContext], Any]


@dataclass(frozen=True)
class Execution:
    """A call whose execution the hooks recorded: its run and call id, and the claim stating its
    output (what a monitor proposes to retract when the output proves false)."""

    run: str
    call_id: str
    tool: str
    args: dict[str, Any]
    claim: str


@dataclass
class Judged:
    """A call judged in PRE_TOOL_CALL, kept for its POST_TOOL_CALL."""

    verdict: Verdict | None
    capture: Capture | None = None
    call: CrewCall | None = None
    runs: bool = True  # the tool runs unless something else blocks it
    replayed: str | None = None  # the claim CrewAI's cache replays (not an execution)
    react: bool = False  # a ReAct step: its text and observation become an assistant message
    admission: Admission | None = None  # the hooks' verdict handed to a GuardedTool
    writing: AbstractContextManager[None] | None = None  # while it runs: its memory writes

    @property
    def allowed(self) -> bool:
        return self.verdict is None or self.verdict.allowed


@dataclass
class _RunState:
    """What the hooks know of one run's messages in this process (see `runs.Known`), the model's
    latest input, and the refs already recorded as written (instructions, summaries, outputs)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    react: dict[tuple[int, str], str] = field(default_factory=dict)
    steps: dict[str, str] = field(default_factory=dict)
    vetoes: dict[str, str] = field(default_factory=dict)
    shown: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    last: Seen | None = None
    reply: str | None = None  # the model's latest reply (a ReAct step's text, before its result)
    written: set[str] = field(default_factory=set)
    # the message list the model was last given (the executor's own, live): an agent's own
    # kickoff (`Agent.kickoff`) keeps its executor off the agent, where tool hooks look for it
    messages: list[dict[str, Any]] | None = None

    def known(self, outputs: Mapping[str, tuple[str, str]]) -> Known:
        with self.lock:
            return Known(dict(self.react), dict(self.steps), dict(self.vetoes), dict(self.shown),
                         {ref: text for ref, (text, _) in outputs.items()})


@dataclass
class _TurnState:
    lock: threading.Lock = field(default_factory=threading.Lock)
    decided: bool = False
    taken: set[str] = field(default_factory=set)


class RipplHooks:
    """A registered pair of hooks (guard + reason). `unregister()` removes them; usable as a
    context manager. `verdicts` keeps the most recent verdicts, newest last; `executions` the
    most recent executions recorded (with the claim each output became)."""

    memory: Rippl
    capturing: bool
    guard: Guard
    policy: Policy | None
    resolver: Resolver | None
    agents: frozenset[str] | None
    runs: Runs

    def __init__(self, memory: Rippl, *, tools: Iterable[object] | None = None,
                 unguarded: Iterable[object] = (), agents: Iterable[str] | None = None,
                 policy: Policy | None = None, resolver: Resolver | None = None,
                 capture: bool = True, history: int = 100,
                 tool_settings: ToolSettingsMap | None = None) -> None:
        self.memory = check_memory(memory)
        if not isinstance(capture, bool):
            raise InvalidInputError("capture must be True or False")
        self.capturing = capture
        self.guard = make_guard(self.memory, policy=policy, resolver=resolver, tools=tools,
                                unguarded=[*(tool_names(unguarded, what="unguarded") or ()),
                                           CHECK_TOOL_NAME],
                                tool_settings=tool_settings)
        self.policy, self.resolver = self.guard.policy, self.guard.resolver
        if isinstance(agents, str):
            raise InvalidInputError("agents must be a list of agent roles, not one string")
        self.agents = frozenset(agents) if agents is not None else None
        self.runs = Runs(self.guard)
        self.verdicts: deque[Verdict] = deque(maxlen=history)
        self.executions: deque[Execution] = deque(maxlen=history)
        self._pending: OrderedDict[int, tuple[dict[str, Any], Judged]] = OrderedDict()
        self._turns: OrderedDict[tuple[str, str], _TurnState] = OrderedDict()
        self._runs: OrderedDict[str, _RunState] = OrderedDict()
        self._delegated: dict[str, OrderedDict[str, tuple[str, str]]] = {}  # scope -> ref -> ...
        self._lock = threading.Lock()
        self._remove: Callable[[], None] | None = None

    # -- the hooks ------------------------------------------------------------------------------
    def before(self, ctx: ToolCallHookContext) -> None:
        """PRE_TOOL_CALL: allow (return None) or veto (raise HookAborted). Never anything else:
        whatever goes wrong in here vetoes the call (CrewAI would swallow it and run the tool)."""
        name = str(getattr(ctx, "tool_name", ""))
        try:
            judged = self._judge(ctx, name)
            if judged is None:
                return None
            if judged.verdict is not None:
                self.verdicts.append(judged.verdict)
            if judged.allowed and judged.capture is None:
                return None
            self._remember(ctx.tool_input, judged)
            if judged.allowed:
                self._writes(judged)
                return None
            assert judged.verdict is not None
            message = veto_text(name, judged.verdict)
        except Exception as exc:
            verdict = Verdict(allowed=False, target=None, reason=(
                f"denied (fail closed): the Rippl guard failed: {type(exc).__name__}: {exc}"))
            self.verdicts.append(verdict)
            self._remember(getattr(ctx, "tool_input", None), Judged(verdict))
            message = veto_text(name, verdict)
        raise HookAborted(reason=message, source="rippl")

    def after(self, ctx: ToolCallHookContext) -> str | None:
        """POST_TOOL_CALL: on a call this guard vetoed, the verdict replaces the blocked text; on a
        call it allowed under capture, the execution and its output are recorded."""
        try:
            judged = self._take(ctx.tool_input)
            if judged is None:
                return None
            if judged.writing is not None:
                with suppress(ValueError):  # (entered in this context: left in it too)
                    judged.writing.__exit__(None, None, None)
            blocked = str(ctx.tool_result or "").startswith(BLOCKED_PREFIX)
            if judged.react and judged.allowed:
                self._step(judged, str(ctx.tool_result or ""))
            if not judged.allowed:
                assert judged.verdict is not None
                return veto_text(str(ctx.tool_name), judged.verdict) if blocked else None
            if judged.admission is not None:
                judged.admission.release()
            if not blocked and judged.runs and judged.replayed is None:
                self._executed(ctx, judged)
            elif judged.capture is not None and judged.call is not None:  # did not run
                self._shown(judged.capture.run_id, judged.call[2], None)
            return None
        except Exception:  # never break the run for the sake of a message or a record
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

    # -- judging --------------------------------------------------------------------------------
    def _judge(self, ctx: ToolCallHookContext, name: str) -> Judged | None:
        if not self._applies(ctx):
            return None
        args = ctx.tool_input
        learn_tools(self.guard, [getattr(ctx.tool, "_original_tool", None),
                                 *(getattr(ctx.agent, "tools", None) or ())])
        run = run_id(ctx.crew, ctx.task, ctx.agent) if self.capturing else None
        if run is None:  # capture off, or no kickoff to record into: declared actions only
            return Judged(self.guard.check(name, args))
        capture = self._capture(run, ctx.agent)
        turn = self._turn(run, ctx, name, args)
        verdict = self._decide(capture, run, turn, ctx)
        judged = Judged(verdict, capture, turn.call, react=not turn.native and turn.seen.context
                        is not None)
        if not judged.allowed:
            assert verdict is not None
            self._vetoed(run, turn.call[2], veto_text(name, verdict))
            return judged
        if name in DELEGATIONS:
            self._delegate(capture, run, turn, args)
        judged.runs = _will_run(ctx, name, args, native=turn.native)
        cache = cache_of(ctx.agent)
        if cache is not None and judged.runs:
            judged.replayed = vet_replay(cache, self.memory, run, (name, args, turn.call[2]),
                                         capture.agent, capture.scope)
        original = getattr(getattr(ctx, "tool", None), "_original_tool", None)
        if isinstance(original, GuardedTool) and judged.replayed is None:
            judged.admission = original.admit(args, run, verdict)
        return judged

    def _delegate(self, capture: Capture, run: str, turn: Turn, args: Mapping[str, Any]) -> None:
        """A delegation the run's model wrote (the task and context it hands a coworker, whose
        task runs in the same kickoff): each text is recorded as a message of this run written from
        the turn's input, so it carries what the turn carried (the bindings of the vetoes it read
        too), and the coworker's input quoting it is handed over (`_outputs`)."""
        texts = [str(args.get(key) or "").strip() for key in ("task", "context")]
        for text in (t for t in texts if len(t) >= _HANDED_TEXT):
            ref = text_ref(f"{text}\n{turn.call[2]}")  # each delegation its own message
            seen = turn.seen
            if capture.wrote(ref, context=seen.context, told=seen.told, inputs=seen.inputs,
                             kind="delegation"):
                with self._lock:
                    handed = self._delegated.setdefault(scope_of(run), OrderedDict())
                    handed[ref] = (text, run)
                    while len(handed) > _PENDING_LIMIT:
                        handed.popitem(last=False)
                state = self._run(run)
                with state.lock:
                    state.written.add(ref)

    def _outputs(self, run: str, crew: object | None, task: object | None
                 ) -> dict[str, tuple[str, str]]:
        """What an input of `run` may quote from other runs of its kickoff: the other tasks'
        outputs, and the delegations written to a coworker (`_delegate`)."""
        with self._lock:
            delegated = dict(self._delegated.get(scope_of(run), {}))
        return {**delegated, **task_outputs(crew, task)}

    def _messages(self, run: str, agent: object | None) -> list[dict[str, Any]] | None:
        """The messages the model of the run is given: its agent's executor's, or else (an
        agent's own kickoff) the list the model was last given in the run."""
        found = executor_messages(agent)
        if found is not None:
            return found
        state = self._run(run)
        with state.lock:
            return state.messages

    def _capture(self, run: str, agent: object | None) -> Capture:
        role = getattr(agent, "role", None)
        return self.runs.get(run, role if isinstance(role, str) else None)

    def _turn(self, run: str, ctx: ToolCallHookContext, name: str, args: Mapping[str, Any]) -> Turn:
        """The model turn this call is part of (see `rippl_crewai.runs`)."""
        messages = self._messages(run, ctx.agent)
        if messages is None:  # no executor to read the turn from: a turn of its own
            return single_turn(name, args, f"crewai-{uuid.uuid4().hex[:16]}")
        run_state = self._run(run)
        known = run_state.known(self._outputs(run, ctx.crew, ctx.task))
        turn = native_turn(messages, name, args, known)
        if turn is None:
            turn = react_turn(messages, name, args, known)
            with run_state.lock:  # its assistant message, later, is found by where it comes
                run_state.react[react_key(messages)] = turn.id
            return turn
        with self._lock:  # the same call made twice in one turn: each takes its own id
            state = self._state(run, turn.id)
            free = [c for c in matching(turn.calls, name, args) if c[2] not in state.taken]
            call = free[0] if free else turn.call
            state.taken.add(call[2])
        return replace(turn, call=call)

    def _decide(self, capture: Capture, run: str, turn: Turn,
                ctx: ToolCallHookContext) -> Verdict | None:
        """The first call of a turn records the turn and gets its verdict from it; every other
        call of the turn (and a turn seen again) is judged just before it runs."""
        with self._lock:
            state = self._state(run, turn.id)
        with state.lock:
            if not state.decided:
                state.decided = True
                seen = turn.seen
                if seen.context is not None:
                    self._written(capture, self._messages(run, ctx.agent) or [], seen,
                                  self._outputs(run, ctx.crew, ctx.task))
                verdicts = capture.decide(turn.id, turn.calls, context=seen.context,
                                          told=seen.told, inputs=seen.inputs,
                                          results=seen.results if seen.context is not None
                                          else None)
                return verdicts[turn.calls.index(turn.call)]
        return capture.judge(turn.call)

    def _written(self, capture: Capture, messages: list[dict[str, Any]], seen: Seen,
                 outputs: Mapping[str, tuple[str, str]]) -> None:
        """Record what the messages of an input carry where Rippl has not seen them written: the
        task's instructions (its first message, before the run carried anything: they carry
        nothing), a context-window summary (what the model's previous input carried: the messages
        it replaced), and another task's output it quotes (in the run that wrote it, what that
        run's last model input carried). Each once; one that cannot be recorded is left to the
        core's rule (a message it cannot account for carries everything)."""
        run_state = self._run(capture.run_id)
        with run_state.lock:
            written, last = set(run_state.written), run_state.last
        done: list[str] = []
        first = messages[0] if messages else None
        if first is not None and first.get("role") in ("system", "user") and \
                not is_summary(first):
            ref = text_ref(str(first.get("content") or ""))
            if ref not in written and capture.wrote(ref, context=[], kind="instructions"):
                done.append(ref)
        for ref in seen.summaries:
            if ref not in written and capture.wrote(
                    ref, context=last.context if last else None, told=last.told if last else (),
                    inputs=last.inputs if last else (), kind="summary"):
                done.append(ref)
        for ref in seen.handed:
            run = outputs[ref][1]
            producer = self._run(run)
            with producer.lock:
                if ref in producer.written:
                    continue
                before = producer.last
            if self.runs.get(run).wrote(ref, context=before.context if before else None,
                                        told=before.told if before else (),
                                        inputs=before.inputs if before else (), kind="output"):
                with producer.lock:
                    producer.written.add(ref)
        with run_state.lock:
            run_state.written.update(done)

    def _state(self, run: str, turn: str) -> _TurnState:
        key = (run, turn)
        state = self._turns.get(key)
        if state is None:
            state = self._turns[key] = _TurnState()
            while len(self._turns) > _TURN_LIMIT:
                self._turns.popitem(last=False)
        return state

    def _run(self, run: str) -> _RunState:
        """What these hooks know of a run (the least recently used let go past a limit)."""
        with self._lock:
            state = self._runs.get(run)
            if state is None:
                state = self._runs[run] = _RunState()
                while len(self._runs) > _PENDING_LIMIT:
                    self._runs.popitem(last=False)
            self._runs.move_to_end(run)
            return state

    def _vetoed(self, run: str, call_id: str, text: str) -> None:
        """Remember the veto text a ReAct model will read (its told set, later)."""
        state = self._run(run)
        with state.lock:
            state.vetoes[call_id] = text

    def _step(self, judged: Judged, observation: str) -> None:
        """Remember the text of the assistant message a ReAct step becomes: the model's reply and
        the tool's observation (found by it later, wherever it comes in the history)."""
        assert judged.capture is not None and judged.call is not None
        state = self._run(judged.capture.run_id)
        with state.lock:
            if state.reply is not None:
                state.steps[text_ref(f"{state.reply}\nObservation: {observation}")] = \
                    judged.call[2]

    def _shown(self, run: str, call_id: str, shown: tuple[str, str] | None) -> None:
        """Remember how a call's result was shown (None: no execution recorded for it)."""
        state = self._run(run)
        with state.lock:
            state.shown[call_id] = shown

    def _executed(self, ctx: ToolCallHookContext, judged: Judged) -> None:
        assert judged.capture is not None and judged.call is not None
        raw = ctx.raw_tool_result if ctx.raw_tool_result is not None else ctx.tool_result
        name, args, call_id = judged.call
        self._shown(judged.capture.run_id, call_id,
                    (output_digest(raw), output_digest(str(ctx.tool_result or ""))))
        claim = judged.capture.executed(judged.call, raw, ok=_succeeded(raw))
        if claim is None:  # kept by the capture, recorded before the run's next call
            return
        self.executions.append(Execution(judged.capture.run_id, call_id, name, dict(args), claim))
        cache = cache_of(ctx.agent)
        if cache is not None:
            REPLAYS.remember(cache, str(ctx.tool_name), ctx.tool_input, raw, claim)

    # -- the model's input and reply ------------------------------------------------------------------------
    def model_input(self, ctx: Any) -> None:
        """PRE_MODEL_CALL: remember what the model is given (a summary written at this call, or
        this task's output, is written from it), and record the summaries and hand-overs it
        holds. Never raises (nothing here decides a call)."""
        try:
            if not self.capturing or (self.agents is not None and
                                      getattr(ctx.agent, "role", None) not in self.agents):
                return
            run = run_id(ctx.crew, ctx.task, ctx.agent)
            messages = ctx.messages
            if run is None or not isinstance(messages, list):
                return
            outputs = self._outputs(run, ctx.crew, ctx.task)
            state = self._run(run)
            seen = visible(messages, state.known(outputs))
            self._written(self._capture(run, ctx.agent), messages, seen, outputs)
            with state.lock:
                state.last = seen
                if executor_messages(ctx.agent) is None:
                    state.messages = messages
        except Exception:
            return

    def model_output(self, ctx: Any) -> None:
        """POST_MODEL_CALL: remember the model's reply (a ReAct step's text); a text answer (no
        tool call) is recorded as written from the model's input (it stays in the history when
        the task goes on, e.g. after a human's feedback). Never raises."""
        try:
            if not self.capturing or (self.agents is not None and
                                      getattr(ctx.agent, "role", None) not in self.agents):
                return
            run = run_id(ctx.crew, ctx.task, ctx.agent)
            reply = ctx.response
            if run is None or not isinstance(reply, str):
                return
            state = self._run(run)
            with state.lock:
                state.reply, last = reply, state.last
            if last is None or last.context is None or _calls_a_tool(reply):
                return
            capture = self._capture(run, ctx.agent)
            # the reply, or a ReAct reply's final answer (the task's output, what an agent
            # called as a tool returns to the agent that delegated to it)
            for text in _final_answer(reply) or [reply]:
                capture.wrote(text_ref(text), context=last.context, told=last.told,
                              inputs=last.inputs)
        except Exception:
            return

    # The call's arguments are the same dict object in the pre- and post-call contexts (both the
    # ReAct and the native paths pass it on), so it keys the judged call between the two.
    @staticmethod
    def _writes(judged: Judged) -> None:
        """While an allowed call runs (from PRE_TOOL_CALL to POST_TOOL_CALL), what its tool writes
        to memory (a save from the tool, CrewAI's own memory tool) rests on what the call rested
        on (`Capture.writing`)."""
        if judged.capture is not None and judged.call is not None:
            judged.writing = judged.capture.writing(judged.call)
            judged.writing.__enter__()

    def _remember(self, tool_input: Any, judged: Judged) -> None:
        with self._lock:
            self._pending[id(tool_input)] = (tool_input, judged)
            while len(self._pending) > _PENDING_LIMIT:
                self._pending.popitem(last=False)

    def _take(self, tool_input: Any) -> Judged | None:
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
        functions = self._hook_functions()
        for point, fn in functions:
            register(point, fn)

        def remove() -> None:
            for point, fn in functions:
                unregister(point, fn)

        self._remove = remove

    def _hook_functions(self) -> list[tuple[InterceptionPoint, HookFn]]:
        def rippl_premise_guard(ctx: ToolCallHookContext) -> None:
            return self.before(ctx)

        def rippl_veto_reason(ctx: ToolCallHookContext) -> str | None:
            return self.after(ctx)

        def rippl_model_input(ctx: Any) -> None:
            self.model_input(ctx)

        def rippl_model_reply(ctx: Any) -> None:
            self.model_output(ctx)

        return [(InterceptionPoint.PRE_TOOL_CALL, rippl_premise_guard),
                (InterceptionPoint.POST_TOOL_CALL, rippl_veto_reason),
                (InterceptionPoint.PRE_MODEL_CALL, rippl_model_input),
                (InterceptionPoint.POST_MODEL_CALL, rippl_model_reply)]


def register_rippl_hooks(memory: Rippl, *, tools: Iterable[object] | None = None,
                         unguarded: Iterable[object] = (), agents: Iterable[str] | None = None,
                         policy: Policy | None = None,
                         resolver: Resolver | Mapping[str, str] | None = None,
                         capture: bool = True,
                         tool_settings: ToolSettingsMap | None = None) -> RipplHooks:
    """Guard every tool call of every crew in this process (until `unregister()`).

    tools: only these tools (or tool names) are checked; None checks every tool.
    unguarded: tools never vetoed (read-only lookups; under capture their calls and results are
        still recorded: a result is an observation); `check_premises` is neither.
    agents: only calls made by agents with these roles are checked; None checks all.
    policy: the pre-flight policy (default: the handle's, which fails closed; under capture, a
        policy that leaves `unknown` unset judges undeclared calls by their run).
    resolver: tool name -> action id, or a function (name, args) -> action id | ToolCall | None;
        unresolved calls are matched by tool name and arguments against the graph's actions.
    capture: record each task's turns, calls and executions (default), or check declared
        actions only.
    tool_settings: per tool name, how Rippl treats its calls (`ToolSettings`, or a dict of its
        fields: `repeat_scope`, `fresh_for`, `reads`); a tool with a `metadata` mapping may carry
        its own under the key "rippl" (these win over it).
    """
    hooks = RipplHooks(memory, tools=tools, unguarded=unguarded, agents=agents, policy=policy,
                       resolver=resolver, capture=capture, tool_settings=tool_settings)
    hooks._register_global()
    return hooks


@contextmanager
def rippl_guard(memory: Rippl, *, tools: Iterable[object] | None = None,
                unguarded: Iterable[object] = (), agents: Iterable[str] | None = None,
                policy: Policy | None = None,
                resolver: Resolver | Mapping[str, str] | None = None,
                capture: bool = True,
                tool_settings: ToolSettingsMap | None = None) -> Iterator[RipplHooks]:
    """Guard the tool calls made inside the block only: `with rippl_guard(memory): crew.kickoff()`.

    The hooks live in CrewAI's execution-scoped registry (a contextvar), so they apply to this
    thread and to the work CrewAI starts from it, and are gone when the block exits; the global
    hook lists are never touched. Hooks already scoped by an enclosing block keep running.
    """
    hooks = RipplHooks(memory, tools=tools, unguarded=unguarded, agents=agents, policy=policy,
                       resolver=resolver, capture=capture, tool_settings=tool_settings)
    functions = hooks._hook_functions()
    inherited = {point: get_scoped_hooks(point) for point in InterceptionPoint}
    with scoped_hooks({point: list(fns) for point, fns in inherited.items() if fns}) as scope:
        for point, fn in functions:
            register_scoped(point, fn)

        def remove() -> None:
            for point, fn in functions:
                if fn in scope.get(point, []):
                    scope[point].remove(fn)

        hooks._remove = remove
        try:
            yield hooks
        finally:
            hooks.unregister()


def _will_run(ctx: ToolCallHookContext, name: str, args: Mapping[str, Any], *,
              native: bool) -> bool:
    """Whether CrewAI will run the tool once the hooks allow it: not when it has no such tool,
    the tool reached its usage limit, or (ReAct) the call repeats the agent's previous call."""
    tool = getattr(ctx, "tool", None)
    if tool is None:
        return False
    original = getattr(tool, "_original_tool", None) or tool
    limit = getattr(original, "max_usage_count", None)
    if isinstance(limit, int) and getattr(original, "current_usage_count", 0) >= limit:
        return False
    last = getattr(getattr(getattr(ctx, "agent", None), "tools_handler", None), "last_used_tool",
                   None)
    return native or last is None or not (
        sanitize_tool_name(str(getattr(last, "tool_name", ""))) == name
        and getattr(last, "arguments", None) == args)


def _calls_a_tool(reply: str) -> bool:
    """Whether a model's text reply is a ReAct tool call (its message, later, is the step)."""
    return "\nAction:" in f"\n{reply}" and FINAL_ANSWER not in reply


def _final_answer(reply: str) -> list[str]:
    """The final answer of a ReAct reply (the text after its last "Final Answer:"), if any."""
    _, found, answer = reply.rpartition(FINAL_ANSWER)
    return [answer.strip()] if found and answer.strip() else []


def _succeeded(output: Any) -> bool:
    return not isinstance(output, ToolFailure) and not (
        isinstance(output, str) and output.startswith(ERROR_PREFIX))
