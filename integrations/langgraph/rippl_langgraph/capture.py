"""Provenance capture in a LangGraph graph: what the run read, each model turn with tool calls,
each call and its execution, recorded as it happens (the core kit's `Capture`), so that a
retraction of anything the run read vetoes every later call resting on it, even after a pause.

- **Run**: the thread and the graph within it: `thread_id`, then the path of the graph's
  checkpoint namespace with the task ids stripped (`T1` for the top graph, `T1/ops_team` for the
  subgraph node `ops_team`). Deterministic, so a resumed or forked thread continues its trace. A
  graph run without a `thread_id` has no run to record into: its calls are denied, saying so.
- **Turn**: an `AIMessage` with tool calls; its id is the turn id (checkpointed, so a node that
  re-runs on resume sees the same turn, and recording it again records nothing new).
- **Scope**: the thread. A subgraph's messages returned to its parent carry into the parent's run
  what they carried in the subgraph's (a hand-over).
- **Context**: every message before that AIMessage (at the model call,
  `RipplMiddleware.wrap_model_call`, the exact `request.messages`), each by its ref: a ToolMessage
  by its `tool_call_id` (less the results `ContextEditingMiddleware` cleared), an AIMessage by its
  id (a turn with tool calls carries what it rested on; a text reply what its input carried, as
  the middleware records it), a human or system message by its id. Premises flow with the text
  that carries them: a tool result trimmed away (`RemoveMessage`, summarization) leaves only once
  every message that read it is gone too. A human or system message Rippl has not seen is the
  user's input when it is the new tail of the conversation (it carries nothing); anywhere else it
  is a rewrite (LangChain's `SummarizationMiddleware` marks its summary; an unmarked one is caught
  by position) and carries everything the run had carried. **Told**: the ToolMessages that are
  Rippl vetoes (their artifact carries `rippl_verdict`), in this run or another agent's of the
  thread: the model read why, so what the veto named leaves the context of its later turns, and
  the act it vetoed stays bound (a call that repeats it stays vetoed, in any agent of the thread).
  A hand-off a multi-agent framework writes (langgraph-supervisor, langgraph-swarm: "Successfully
  transferred to <agent>") carries nothing.
- **Execution**: each call is judged again just before it runs (an `interrupt_before=["tools"]`
  pause, a human-in-the-loop approval or edit may lie between the turn and the call), and once it
  ran (an error ToolMessage too: it may have had effects), its output is recorded as an
  observation of the run.

`GraphCapture` holds this logic once, for the preflight node, the ToolNode wrappers and the
middleware; each operation is a generator of steps run by a sync or an async driver.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.types import Command

from rippl_core import InvalidInputError, Policy, ToolCall, Verdict
from rippl_core.adapters import (
    Call,
    Capture,
    FrameworkCall,
    check_id,
    output_digest,
    parent_source,
    run_calls,
    sync_handle,
    text_ref,
)
from rippl_langgraph.guard import Guard

NS_SEP, NS_END = "|", ":"  # LangGraph's checkpoint namespace separators
MAX_TRACKED = 4096  # runs and decided turns kept in memory (least recently used dropped first)

type Steps[R] = Generator[Call, Any, R]


# ------------------------------------------------------------------------------------ run ids


def run_id(config: RunnableConfig | Mapping[str, Any], *, node: bool = True) -> str:
    """The capture run of a graph: `thread_id`, then the graph's checkpoint namespace without
    task ids (`T1`, `T1/ops_team`). `config` is a node's (its namespace ends with the node's own
    segment, which is dropped; `node=True`) or a checkpoint's (`node=False`). Raises
    InvalidInputError without a thread_id."""
    conf = config.get("configurable") or {}
    thread = conf.get("thread_id")
    if thread is None or str(thread) == "":
        raise InvalidInputError(
            "capture records a run per thread, and this graph runs without one: invoke it with "
            "config={'configurable': {'thread_id': ...}}, or pass capture=False")
    segments = [s for s in str(conf.get("checkpoint_ns") or "").split(NS_SEP) if s]
    if node:
        segments = segments[:-1]
    found = "/".join([str(thread), *(s.split(NS_END, 1)[0] for s in segments)])
    try:
        return check_id(found, what="run id")
    except InvalidInputError:  # a thread id too long or unprintable for an id: its digest
        return f"lg-{hashlib.sha256(found.encode('utf-8', 'replace')).hexdigest()[:32]}"


def thread_of(config: RunnableConfig | Mapping[str, Any]) -> str:
    """The scope of a graph's runs: its thread (a subgraph hands its messages to its parent)."""
    thread = str((config.get("configurable") or {}).get("thread_id"))
    try:
        return check_id(thread, what="thread id")
    except InvalidInputError:
        return f"lg-{hashlib.sha256(thread.encode('utf-8', 'replace')).hexdigest()[:32]}"


def current_config() -> RunnableConfig | None:
    """The config of the graph step running now, or None outside a graph."""
    try:
        return get_config()
    except RuntimeError:
        return None


def openinference_span() -> object | None:
    """The span of the LangChain run in progress, when OpenInference's LangChain instrumentation
    traces it (it keeps its spans by run rather than making them current): Rippl's spans nest
    under it. Imports nothing; None without that instrumentation."""
    module = sys.modules.get("openinference.instrumentation.langchain")
    if module is None or not module.LangChainInstrumentor().is_instrumented_by_opentelemetry:
        return None
    span: object | None = module.get_current_span()
    return span


parent_source(openinference_span)


# ------------------------------------------------------------------------------------ turns


@dataclass(frozen=True)
class Seen:
    """What a model input holds, for capture: the ref of each of its messages in order (see the
    module docstring), those that are Rippl vetoes, those that may be the user's, and the tool
    results to verify (call id -> digest of the content) against what Rippl recorded."""

    context: tuple[str, ...]
    told: tuple[str, ...]
    inputs: tuple[str, ...]
    results: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Turn:
    """A model turn with tool calls, and what was in the model's input when it was made."""

    id: str
    calls: tuple[dict[str, Any], ...]
    seen: Seen

    @classmethod
    def of(cls, message: AIMessage, before: Sequence[BaseMessage]) -> Turn:
        return cls(turn_id(message), tuple(dict(c) for c in message.tool_calls), visible(before))


def turn_id(message: AIMessage) -> str:
    """An AI message's id (a digest of its call ids when it has none)."""
    if message.id:
        return message.id
    joined = "\x1f".join(str(c.get("id")) for c in message.tool_calls)
    return f"calls-{hashlib.sha256(joined.encode()).hexdigest()[:24]}"


def visible(messages: Iterable[BaseMessage]) -> Seen:
    """What a model input holds: the ref of every message, in order, the vetoes among them, and
    the human and system messages that may be the user's (a marked summary is not). A result whose
    content was cleared from the input (`ContextEditingMiddleware`) is not in it."""
    context: list[str] = []
    told: list[str] = []
    inputs: list[str] = []
    results: dict[str, str | None] = {}
    for message in messages:
        if handoff(message):
            continue  # the framework's own text, fixed: it carries nothing
        if isinstance(message, ToolMessage):
            if message.tool_call_id and not cleared(message):
                context.append(message.tool_call_id)
                if is_veto(message):
                    told.append(message.tool_call_id)
                elif message.status != "error":  # a result: it must be one Rippl recorded
                    results[message.tool_call_id] = output_digest(message.content)
        elif isinstance(message, AIMessage):
            context.append(turn_id(message) if message.tool_calls else message_ref(message))
        else:
            ref = message_ref(message)
            context.append(ref)
            if isinstance(message, HumanMessage | SystemMessage) and not summary(message):
                inputs.append(ref)
    return Seen(tuple(dict.fromkeys(context)), tuple(told), tuple(inputs), results)


def message_ref(message: BaseMessage) -> str:
    """A message's ref: its id, or a digest of its text when it has none."""
    return check_id(message.id, what="message id") if _usable(message.id) else \
        text_ref(str(message.content))


def _usable(value: object) -> bool:
    try:
        check_id(value)
    except InvalidInputError:
        return False
    return True


def summary(message: BaseMessage) -> bool:
    """Whether a message is a summary LangChain's `SummarizationMiddleware` wrote."""
    return message.additional_kwargs.get("lc_source") == "summarization"


# What a multi-agent framework writes when one agent hands control to another (langgraph-supervisor
# and langgraph-swarm: the tool result of a transfer, and the "transfer back" turn it adds).
HANDOFF_TO, HANDOFF_BACK = "__handoff_destination", "__is_handoff_back"


def handoff(message: BaseMessage) -> bool:
    """Whether a message is a hand-off the framework wrote, with its fixed text ("Successfully
    transferred to <agent>", "... back to <supervisor>", or the transfer-back turn): it carries
    nothing into a turn, and is no tool result to verify. A message that only claims to be one
    (any other text) is judged as any other."""
    meta = message.response_metadata
    if isinstance(message, ToolMessage):
        if meta.get(HANDOFF_TO):
            return message.content == f"Successfully transferred to {meta[HANDOFF_TO]}"
        return bool(meta.get(HANDOFF_BACK)) and isinstance(message.content, str) \
            and message.content.startswith("Successfully transferred back to ")
    return isinstance(message, AIMessage) and bool(meta.get(HANDOFF_BACK)) and all(
        str(c.get("name", "")).startswith("transfer_back_to_") for c in message.tool_calls)


def cleared(message: ToolMessage) -> bool:
    editing = message.response_metadata.get("context_editing")
    return isinstance(editing, Mapping) and bool(editing.get("cleared"))


def is_veto(message: ToolMessage) -> bool:
    artifact = message.artifact
    verdict = artifact.get("rippl_verdict") if isinstance(artifact, Mapping) else None
    return isinstance(verdict, Mapping) and verdict.get("allowed") is False


def latest_turn(messages: Sequence[BaseMessage]) -> Turn | None:
    """The turn of the latest AI message, if it has tool calls."""
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if isinstance(message, AIMessage):
            return Turn.of(message, messages[:position]) if message.tool_calls else None
    return None


def turn_with(messages: Sequence[BaseMessage], call_id: str | None) -> Turn | None:
    """The turn of the AI message that made the call `call_id`."""
    if call_id is None:
        return None
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if isinstance(message, AIMessage) and any(c.get("id") == call_id for c in message.tool_calls):
            return Turn.of(message, messages[:position])
    return None


def state_messages(state: Any, key: str = "messages") -> Any:
    """What a graph state (a dict, a list of messages, or an object) holds under `key`: None when
    nothing."""
    if isinstance(state, Mapping):
        return state.get(key)
    if isinstance(state, list):
        return state
    return getattr(state, key, None)


def messages_in(state: Any, key: str = "messages") -> Sequence[BaseMessage]:
    """The messages of a graph state (a dict, a list of messages, or an object), or none."""
    found = state_messages(state, key)
    return found if isinstance(found, list) else []


def framework_call(call: Mapping[str, Any]) -> FrameworkCall:
    return str(call.get("name") or ""), call.get("args"), call.get("id")


def output_of(result: Any, call_id: str | None) -> tuple[Any, bool]:
    """(output, ok) of what a tool call returned: a ToolMessage, or a Command carrying one."""
    if isinstance(result, Command):
        update = result.update
        found = update.get("messages", []) if isinstance(update, Mapping) else []
        for message in found if isinstance(found, list) else []:
            if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
                return message.content, message.status != "error"
        return repr(update), True
    if isinstance(result, ToolMessage):
        return result.content, result.status != "error"
    return result, True


# ------------------------------------------------------------------------------------ capture


class GraphCapture:
    """Capture for the guard of one graph: its runs (one `Capture` each) and the turns already
    decided in this process. Shared by a preflight node and the ToolNode it feeds."""

    agent: str | None

    def __init__(self, guard: Guard, *, agent: str | None = None) -> None:
        if guard.policy is None:  # capture's default: undeclared calls are judged by their premises
            guard.policy = guard.memory.policy.model_copy(update={"unknown": "record"})
        self.guard = guard
        self.agent = check_id(agent, what="agent") if agent is not None else None
        self._runs: OrderedDict[str, Capture] = OrderedDict()
        self._decided: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def policy(self) -> Policy:
        assert self.guard.policy is not None
        return self.guard.policy

    def run(self, config: RunnableConfig | Mapping[str, Any]) -> Capture:
        """The capture of the run `config` belongs to (raises InvalidInputError without a thread)."""
        rid = run_id(config)
        with self._lock:
            found = self._runs.get(rid)
            if found is None:
                found = self._runs[rid] = Capture(self.guard, rid, agent=self.agent,
                                                  framework="langgraph", scope=thread_of(config))
            self._runs.move_to_end(rid)
            while len(self._runs) > MAX_TRACKED:
                self._runs.popitem(last=False)
            return found

    def decided(self, run: str, turn: str) -> bool:
        with self._lock:
            return (run, turn) in self._decided

    def _remember(self, run: str, turn: str) -> None:
        with self._lock:
            self._decided[(run, turn)] = None
            while len(self._decided) > MAX_TRACKED:
                self._decided.popitem(last=False)

    # -- the logic, once ----------------------------------------------------------------------
    def decide_steps(self, run: str, turn: Turn) -> Steps[dict[str | None, Verdict | None]]:
        """Record a turn and judge its calls: {call id: verdict}."""
        calls = [framework_call(c) for c in turn.calls]
        verdicts = yield Call("decide", (turn.id, calls), {
            "context": list(turn.seen.context), "told": list(turn.seen.told),
            "inputs": list(turn.seen.inputs), "results": dict(turn.seen.results)})
        if not any(v is not None and not v.allowed and v.target is None for v in verdicts):
            self._remember(run, turn.id)  # recorded: the calls are judged from now on
        judged: dict[str | None, Verdict | None] = {}
        for call, verdict in zip(turn.calls, verdicts, strict=True):
            judged[call.get("id")] = verdict
        return judged

    def execution_steps(self, run: str, call: Mapping[str, Any],
                        messages: Sequence[BaseMessage]) -> Steps[Verdict | None]:
        """The verdict on a call about to run: its turn is recorded first if this process has not
        yet, and the call is judged as it is now (its premises may have been retracted since the
        turn, or a human may have edited its arguments)."""
        turn = turn_with(messages, call.get("id"))
        if turn is not None and not self.decided(run, turn.id):
            verdicts = yield from self.decide_steps(run, turn)
            made = next(c for c in turn.calls if c.get("id") == call.get("id"))
            if made.get("name") == call.get("name") and made.get("args") == call.get("args"):
                return verdicts[call.get("id")]
        verdict: Verdict | None = yield Call("judge", (framework_call(call),))
        return verdict

    # -- sync ---------------------------------------------------------------------------------
    def decide(self, config: RunnableConfig | None, turn: Turn) -> dict[str | None, Verdict | None]:
        """Record a turn and judge its calls (sync); denied, saying why, when there is no run."""
        self._require_sync()
        return self._sync(config, lambda run: self.decide_steps(run, turn),
                          lambda why: {c.get("id"): self._no_run(c, why) for c in turn.calls})

    def at_execution(self, config: RunnableConfig | None, call: Mapping[str, Any],
                     messages: Sequence[BaseMessage]) -> Verdict | None:
        """The verdict on a call about to run (sync)."""
        self._require_sync()
        return self._sync(config, lambda run: self.execution_steps(run, call, messages),
                          lambda why: self._no_run(call, why))

    def wrote(self, config: RunnableConfig | None, message: AIMessage,
              before: Sequence[BaseMessage]) -> None:
        """Record a text reply the model wrote from `before` (sync; never raises: a reply that
        cannot be recorded is later taken to carry everything the run carried)."""
        try:
            capture = self.run(config or {})
        except InvalidInputError:
            return
        seen = visible(before)
        capture.wrote(message_ref(message), context=seen.context, told=seen.told, inputs=seen.inputs)

    async def awrote(self, config: RunnableConfig | None, message: AIMessage,
                     before: Sequence[BaseMessage]) -> None:
        """The asyncio twin of `wrote`."""
        try:
            capture = self.run(config or {})
        except InvalidInputError:
            return
        seen = visible(before)
        await capture.awrote(message_ref(message), context=seen.context, told=seen.told,
                             inputs=seen.inputs)

    def writing(self, config: RunnableConfig | None,
                call: Mapping[str, Any] | None = None) -> AbstractContextManager[None]:
        """A block in which a memory written (a `RipplStore` put from the tool) is the call's:
        it rests on what the call's turn rested on (`Capture.writing`); nothing without a run."""
        try:
            capture = self.run(config or {})
        except InvalidInputError:
            return nullcontext()
        return capture.writing(None if call is None else framework_call(call))

    def executed(self, config: RunnableConfig | None, call: Mapping[str, Any], output: Any, *,
                 ok: bool) -> None:
        """Record that the call ran and what it returned (sync; never raises)."""
        try:
            capture = self.run(config or {})
        except InvalidInputError:
            return  # no run: the call was denied before it could run
        capture.executed(framework_call(call), output, ok=ok)

    # -- asyncio ------------------------------------------------------------------------------
    async def adecide(self, config: RunnableConfig | None, turn: Turn) -> dict[str | None, Verdict | None]:
        return await self._async(config, lambda run: self.decide_steps(run, turn),
                                 lambda why: {c.get("id"): self._no_run(c, why) for c in turn.calls})

    async def aat_execution(self, config: RunnableConfig | None, call: Mapping[str, Any],
                            messages: Sequence[BaseMessage]) -> Verdict | None:
        return await self._async(config, lambda run: self.execution_steps(run, call, messages),
                                 lambda why: self._no_run(call, why))

    async def aexecuted(self, config: RunnableConfig | None, call: Mapping[str, Any], output: Any,
                        *, ok: bool) -> None:
        try:
            capture = self.run(config or {})
        except InvalidInputError:
            return
        await capture.aexecuted(framework_call(call), output, ok=ok)

    # -- driving ------------------------------------------------------------------------------
    def _sync[R](self, config: RunnableConfig | None, steps: Callable[[str], Steps[R]],
                 no_run: Callable[[str], R]) -> R:
        try:
            capture = self.run(config or {})
        except InvalidInputError as exc:
            return no_run(str(exc))
        return run_calls(_SyncTarget(capture), steps(capture.run_id))

    async def _async[R](self, config: RunnableConfig | None, steps: Callable[[str], Steps[R]],
                        no_run: Callable[[str], R]) -> R:
        try:
            capture = self.run(config or {})
        except InvalidInputError as exc:
            return no_run(str(exc))
        target = _AsyncTarget(capture)
        plan = steps(capture.run_id)
        reply: Any = None
        while True:
            try:
                step = plan.send(reply)
            except StopIteration as stop:
                result: R = stop.value
                return result
            reply = await getattr(target, step.method)(*step.args, **step.kwargs)

    def _require_sync(self) -> None:
        sync_handle(self.guard.memory, hint=self.guard.sync_hint)

    def _no_run(self, call: Mapping[str, Any], why: str) -> Verdict:
        name, args, call_id = framework_call(call)
        try:
            tool_call: ToolCall | None = ToolCall.model_validate(
                {"name": name, "args": args or {}, "id": call_id})
        except Exception:
            tool_call = None
        return Verdict(allowed=False, target=None, tool_call=tool_call,
                       reason=f"denied (fail closed): the call to {name} cannot be recorded: {why}")


class _SyncTarget:
    """What the steps call, synchronously: the run's capture."""

    def __init__(self, capture: Capture) -> None:
        self.capture = capture

    def decide(self, turn: str, calls: list[FrameworkCall], **kw: Any) -> list[Verdict | None]:
        return self.capture.decide(turn, calls, **kw)

    def judge(self, call: FrameworkCall) -> Verdict | None:
        return self.capture.judge(call)


class _AsyncTarget:
    """The asyncio twin of `_SyncTarget`."""

    def __init__(self, capture: Capture) -> None:
        self.capture = capture

    def decide(self, turn: str, calls: list[FrameworkCall], **kw: Any) -> Awaitable[list[Verdict | None]]:
        return self.capture.adecide(turn, calls, **kw)

    def judge(self, call: FrameworkCall) -> Awaitable[Verdict | None]:
        return self.capture.ajudge(call)


def fresh_id(message: AIMessage) -> AIMessage:
    """The message with an id (a model reply may have none until the graph state gives it one;
    the turn must be recorded under the id the state will keep)."""
    return message if message.id else message.model_copy(update={"id": f"lc_run--{uuid.uuid4()}"})
