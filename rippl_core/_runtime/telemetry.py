"""OpenTelemetry for Rippl's operations: spans, a veto event, metrics (the `otel` extra).

Written once for both drivers, as an operation combinator: `traced(spec)` decorates an operation
(a generator of requests, see `rippl_core._runtime.op`), and the decorated operation opens a span
when it starts, as a child of the caller's current span (the framework's tool-call span), makes it
current while its own code runs (so an operation it runs nests under it), opens a `rippl.wave`
child around a commit that changes statuses, and ends the span with the outcome: attributes, a
`rippl.veto` event per denied verdict (its reason and every trail), the error status and the
exception when it raised. The sync and the async driver run the decorated operation unchanged.

Only the OpenTelemetry API is used: the application installs and configures the SDK and its
exporter (or a framework's instrumentation does). Without the API installed, `traced` returns the
operation itself (nothing is added); with it but no provider configured, a span is the API's
non-recording span and the metrics are the API's proxies (a check pays about a microsecond).

Attribute names follow the OpenTelemetry GenAI semantic conventions where one applies
(`gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.agent.name`), `error.type`, `db.system.name`
and `db.namespace`; the rest are `rippl.*` (docs/telemetry.md lists them). No argument value of a
tool call, no signing key and no reviewer credential is ever an attribute: what goes in is chosen
name by name here.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from rippl_core._runtime.op import Commit, GraphName, Op
from rippl_core.errors import DatabaseError
from rippl_core.models import Policy, Receipt, ReviewItem, ToolCall, Verdict, Wave
from rippl_core.vocabulary import State

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

try:
    from opentelemetry import context as otel_context
    from opentelemetry import metrics, trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:  # the otel extra is not installed: `traced` adds nothing
    ENABLED = False
else:
    ENABLED = True

type Attributes = dict[str, str | bool | int | float | Sequence[str]]

SCOPE: Final = "rippl"
VERSION: Final = "0.1.0"

# -- attribute names (docs/telemetry.md) ---------------------------------------------------------
OPERATION: Final = "rippl.operation"
GRAPH: Final = "rippl.graph"
DB_SYSTEM: Final = "db.system.name"
DB_NAMESPACE: Final = "db.namespace"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
AGENT_NAME: Final = "gen_ai.agent.name"
ERROR_TYPE: Final = "error.type"
RUN_ID: Final = "rippl.run.id"
FRAMEWORK: Final = "rippl.run.framework"
TURN: Final = "rippl.turn.id"
CALLS: Final = "rippl.calls.count"
TARGET: Final = "rippl.target"
POLICY_AT_RISK: Final = "rippl.policy.at_risk"
POLICY_UNKNOWN: Final = "rippl.policy.unknown"
POLICY_ON_ERROR: Final = "rippl.policy.on_error"
VERDICT: Final = "rippl.verdict"
VERDICT_TARGET: Final = "rippl.verdict.target"
VERDICT_STATUS: Final = "rippl.verdict.status"
BLOCKERS: Final = "rippl.verdict.blockers.count"
DENIED: Final = "rippl.verdicts.denied"
VETO_REASON: Final = "rippl.veto.reason"
VETO_EXPLANATION: Final = "rippl.veto.explanation"
VETO_PREMISES: Final = "rippl.veto.premises"
VETO_TRAILS: Final = "rippl.veto.trails"
EXECUTION_OK: Final = "rippl.execution.ok"
RESULT_CLAIM: Final = "rippl.execution.claim.id"
CLAIM: Final = "rippl.claim.id"
ACTOR: Final = "rippl.actor"
REVIEW: Final = "rippl.review.id"
AT_RISK: Final = "rippl.review.at_risk.count"
RECEIPT: Final = "rippl.receipt.id"
RECEIPT_SEQ: Final = "rippl.receipt.seq"
RECEIPT_SIGNED: Final = "rippl.receipt.signed"
WAVE_CAUSE: Final = "rippl.wave.cause"
WAVE_SIZE: Final = "rippl.wave.size"
WAVE_OUT: Final = "rippl.wave.out"
WAVE_AT_RISK: Final = "rippl.wave.at_risk"
WAVE_IN: Final = "rippl.wave.in"
WAVE_COMPENSATIONS: Final = "rippl.wave.compensations"
ABANDONED: Final = "rippl.abandoned"

VETO_EVENT: Final = "rippl.veto"
WAVE_SPAN: Final = "rippl.wave"

# The operations that judge a call: their duration is the check latency.
JUDGING: Final = frozenset({"rippl.check", "rippl.capture.decide", "rippl.capture.judge"})

_STATE_EVENTS: Final = {"node_at_risk": WAVE_AT_RISK, "node_invalidated": WAVE_OUT,
                        "node_restored": WAVE_IN}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an operation's result says: span attributes, and the verdicts it gave."""

    attributes: Attributes = field(default_factory=dict)
    verdicts: Sequence[Verdict] = ()


@dataclass(frozen=True, slots=True)
class Spec[**P, T]:
    """How to trace one operation: `start` names its span and gives the attributes known from its
    arguments (called with them); `finish` reads its result; `on_error` reads an error it raised
    (e.g. the fail-closed verdict a check gives when the graph cannot answer)."""

    start: Callable[P, tuple[str, Attributes]]
    finish: Callable[[T], Outcome]
    on_error: Callable[..., Outcome] | None = None  # (the error, then the operation's arguments)


def traced[**P, T](spec: Spec[P, T]) -> Callable[[Callable[P, Op[T]]], Callable[P, Op[T]]]:
    """Decorate an operation with its span and metrics (the operation itself without the API)."""

    def decorate(op: Callable[P, Op[T]]) -> Callable[P, Op[T]]:
        if not ENABLED:
            return op

        @functools.wraps(op)
        def operation(*args: P.args, **kwargs: P.kwargs) -> Op[T]:
            return _traced(spec, op(*args, **kwargs), args, kwargs)

        return operation

    return decorate


# -- instruments (the API's proxies until the application sets a meter provider) -------------------

class _Instruments:
    def __init__(self) -> None:
        meter = metrics.get_meter(SCOPE, VERSION)
        name, what = "rippl.check.duration", ("How long a check of a call took (check, capture "
                                              "decide and judge)")
        try:
            self.latency = meter.create_histogram(
                name, unit="s", description=what, explicit_bucket_boundaries_advisory=[
                    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                    0.5, 1.0, 2.5])
        except TypeError:  # an API before bucket advice (the proxy meter of 1.27 takes none)
            self.latency = meter.create_histogram(name, unit="s", description=what)
        self.verdicts = meter.create_counter(
            "rippl.verdicts", unit="{verdict}", description="Verdicts given, by outcome")
        self.vetoes = meter.create_counter(
            "rippl.vetoes", unit="{veto}", description="Calls denied, by reason")
        try:
            self.wave_size = meter.create_histogram(
                "rippl.wave.size", unit="{node}", description="Status changes of each wave",
                explicit_bucket_boundaries_advisory=[1, 2, 5, 10, 20, 50, 100, 200, 500, 1000,
                                                     5000])
        except TypeError:  # an API before bucket advice (as above)
            self.wave_size = meter.create_histogram(
                "rippl.wave.size", unit="{node}", description="Status changes of each wave")
        self.compensations = meter.create_counter(
            "rippl.compensations", unit="{action}",
            description="Compensations opened: executed actions a wave took out (premise retracted)")


_instruments: _Instruments | None = None
_parents: list[Callable[[], object | None]] = []


def parent_source(find: Callable[[], object | None]) -> None:
    """Register where a framework keeps its current span when its tracing does not make it the
    OpenTelemetry context's current span (OpenInference's LangChain tracer keeps it by LangChain
    run, on purpose). `find` returns that span or None; it is asked only when no span is current."""
    if find not in _parents:
        _parents.append(find)


def _parent() -> Context | None:
    """The context to start a span in: the current one, else a registered framework's span."""
    if not _parents or trace.get_current_span().get_span_context().is_valid:
        return None
    for find in _parents:
        try:
            span = find()
        except Exception:  # a framework's lookup never breaks a verdict
            continue
        if isinstance(span, trace.Span) and span.get_span_context().is_valid:
            return trace.set_span_in_context(span)
    return None
_tracer: Tracer | None = None  # the API's proxy tracer: it follows the provider the application sets


def _spans() -> Tracer:
    global _tracer
    if _tracer is None:
        _tracer = trace.get_tracer(SCOPE, VERSION)
    return _tracer


def _meters() -> _Instruments:
    global _instruments
    if _instruments is None:
        _instruments = _Instruments()
    return _instruments


# -- the combinator ------------------------------------------------------------------------------

def _traced[T](spec: Spec[..., T], gen: Op[T], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Op[T]:
    began = time.perf_counter()
    try:
        name, attributes = spec.start(*args, **kwargs)
    except Exception:  # arguments the operation itself refuses (with the error that says why)
        name, attributes = "rippl", {}
    operation = name
    span = _spans().start_span(
        f"{name} {attributes[TOOL_NAME]}" if TOOL_NAME in attributes else name,
        context=_parent(), kind=SpanKind.INTERNAL)
    recording = span.is_recording()
    if recording:
        where = yield GraphName()
        attributes = {**attributes, GRAPH: where, DB_NAMESPACE: where}
        span.set_attributes({OPERATION: operation, DB_SYSTEM: "falkordb", **attributes})
    try:
        context = trace.set_span_in_context(span) if recording else None
        result = yield from _inside(gen, context, attributes)
    except GeneratorExit:  # the driver dropped this attempt (a concurrent writer: it runs again)
        span.set_attribute(ABANDONED, True)
        span.end()
        raise
    except Exception as exc:
        outcome = spec.on_error(exc, *args, **kwargs) if spec.on_error is not None else Outcome()
        _close(span, recording, operation, outcome, began)
        if recording:
            span.record_exception(exc)
            span.set_attribute(ERROR_TYPE, type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        span.end()
        raise
    _close(span, recording, operation, spec.finish(result), began)
    span.end()
    return result


def _inside[T](gen: Op[T], ctx: Context | None, attributes: Attributes) -> Op[T]:
    """Run the operation. With a recording span (`ctx`), the span is current while the
    operation's own code runs (attached and detached around each step, never across a yield: the
    driver may resume it from another task), and a `rippl.wave` child span covers each commit
    that changes statuses; either way the waves' sizes are metrics."""
    reply: Any = None
    error: BaseException | None = None
    while True:
        token = otel_context.attach(ctx) if ctx is not None else None
        try:
            request = gen.send(reply) if error is None else gen.throw(error)
        except StopIteration as stop:
            result: T = stop.value
            return result
        finally:
            if token is not None:
                otel_context.detach(token)
        waved = _wave(request.events, ctx, attributes) if isinstance(request, Commit) else None
        try:
            reply, error = (yield request), None
        except GeneratorExit:
            if waved is not None:
                waved.end()
            gen.close()
            raise
        except BaseException as exc:  # raised into the operation at this request
            reply, error = None, exc
            if waved is not None:
                waved.record_exception(exc)
                waved.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        if waved is not None:
            waved.end()


def _transitions(events: Iterable[Mapping[str, Any]]) -> tuple[dict[str, int], int, str | None]:
    counts = {key: 0 for key in _STATE_EVENTS.values()}
    compensations, cause = 0, None
    for event in events:
        kind = event.get("type")
        if kind in _STATE_EVENTS:
            counts[_STATE_EVENTS[kind]] += 1
            cause = cause or event.get("cause")
        elif kind == "compensation_needed":
            compensations += 1
    return counts, compensations, cause


def _wave(events: Sequence[Mapping[str, Any]], ctx: Context | None,
          attributes: Attributes) -> Span | None:
    """The metrics of a commit's wave (if it changes statuses), and with `ctx` its span."""
    counts, compensations, cause = _transitions(events)
    size = sum(counts.values())
    if not size:
        return None
    meters, cause = _meters(), cause or "unknown"
    meters.wave_size.record(size, {WAVE_CAUSE: cause})
    if compensations:
        meters.compensations.add(compensations, {WAVE_CAUSE: cause})
    if ctx is None:
        return None
    review = next((e.get("review") for e in events if e.get("review")), None)
    wave: Attributes = {OPERATION: WAVE_SPAN, WAVE_SIZE: size, **counts,
                        WAVE_COMPENSATIONS: compensations, WAVE_CAUSE: cause}
    for key in (CLAIM, REVIEW, GRAPH, DB_NAMESPACE):
        if key in attributes:
            wave[key] = attributes[key]
    if review is not None:
        wave[REVIEW] = str(review)
    return _spans().start_span(WAVE_SPAN, context=ctx, kind=SpanKind.INTERNAL,
                                                       attributes=wave)


def _close(span: Span, recording: bool, operation: str, outcome: Outcome, began: float) -> None:
    """Record an outcome: its attributes and veto events on the span, and the metrics."""
    meters = _meters()
    verdicts = outcome.verdicts
    denied = [v for v in verdicts if not v.allowed]
    if operation in JUDGING and verdicts:
        meters.latency.record(time.perf_counter() - began,
                              {OPERATION: operation, VERDICT: "deny" if denied else "allow"})
    for verdict in verdicts:
        meters.verdicts.add(1, {OPERATION: operation, VERDICT: outcome_of(verdict)})
        if not verdict.allowed:
            meters.vetoes.add(1, {OPERATION: operation, VETO_REASON: reason_of(verdict)})
    if not recording:
        return
    span.set_attributes(outcome.attributes)
    if len(verdicts) == 1:
        span.set_attributes(verdict_attributes(verdicts[0]))
    elif verdicts:
        span.set_attributes({VERDICT: "deny" if denied else "allow", DENIED: len(denied)})
    for verdict in denied:
        span.add_event(VETO_EVENT, veto_attributes(verdict))


# -- verdicts ------------------------------------------------------------------------------------

def outcome_of(verdict: Verdict) -> str:
    return "allow" if verdict.allowed else "deny"


def reason_of(verdict: Verdict, default: str | None = None) -> str:
    """Why a call was denied, as a low-cardinality word: `retracted` (a premise under it is
    retracted), `at_risk` (one is under review), `stale` or `superseded` (a reading it rests on is
    no longer valid: not false), `unknown` (nothing in the graph answers for it), or `default`
    (the caller knows better: `error`, `unmappable`, `unrecorded`)."""
    if default is not None:
        return default
    if verdict.expired and not verdict.blockers:
        return ("superseded" if all(e.status == "superseded" for e in verdict.expired)
                else "stale")
    if any(b.state is State.OUT for b in verdict.blockers) or verdict.state is State.OUT:
        return "retracted"
    if verdict.blockers or verdict.state is State.AT_RISK:
        return "at_risk"
    if "could not be checked" in verdict.reason:
        return "error"
    return "unknown"


def verdict_attributes(verdict: Verdict) -> Attributes:
    found: Attributes = {VERDICT: outcome_of(verdict), BLOCKERS: len(verdict.blockers)}
    if verdict.target is not None:
        found[VERDICT_TARGET] = verdict.target
    if verdict.status is not None:
        found[VERDICT_STATUS] = verdict.status
    if not verdict.allowed:
        found[VETO_REASON] = reason_of(verdict)
    return found


def veto_attributes(verdict: Verdict, reason: str | None = None) -> Attributes:
    """The `rippl.veto` event: the reason, every blocking premise and its trail, the call."""
    found: Attributes = {
        VETO_REASON: reason_of(verdict, reason), VETO_EXPLANATION: verdict.reason,
        VETO_PREMISES: [b.premise for b in verdict.blockers],
        VETO_TRAILS: [" -> ".join(b.trail) for b in verdict.blockers],
    }
    if verdict.target is not None:
        found[VERDICT_TARGET] = verdict.target
    if verdict.status is not None:
        found[VERDICT_STATUS] = verdict.status
    if verdict.tool_call is not None:
        found |= call_attributes(verdict.tool_call)
    return found


def call_attributes(call: ToolCall | None) -> Attributes:
    """A tool call's name, id and explicit action (never its arguments)."""
    if call is None:
        return {}
    found: Attributes = {TOOL_NAME: call.name}
    if call.id is not None:
        found[TOOL_CALL_ID] = call.id
    if call.action_id is not None:
        found[TARGET] = call.action_id
    return found


def policy_attributes(policy: Policy) -> Attributes:
    return {POLICY_AT_RISK: policy.at_risk, POLICY_UNKNOWN: policy.unknown,
            POLICY_ON_ERROR: policy.on_error}


def guard_verdict(verdict: Verdict, reason: str, exc: BaseException | None = None, *,
                  tool: str | None = None, call_id: str | None = None) -> None:
    """A verdict an adapter gave without the graph's answer (a call it could not map, a graph it
    could not reach, a run it could not record): a `rippl.guard` span under the current one, with
    the veto event and the error, and the metrics. `tool` and `call_id` name the call when the
    verdict cannot (arguments that are not even a mapping)."""
    if not ENABLED:
        return
    meters = _meters()
    meters.verdicts.add(1, {OPERATION: "rippl.guard", VERDICT: outcome_of(verdict)})
    if not verdict.allowed:
        meters.vetoes.add(1, {OPERATION: "rippl.guard", VETO_REASON: reason})
    call = verdict.tool_call
    if call is None and tool is not None:
        call = ToolCall.model_construct(name=tool, args={}, action_id=None, id=call_id)
    span = _spans().start_span(
        f"rippl.guard {call.name}" if call is not None else "rippl.guard", context=_parent(),
        kind=SpanKind.INTERNAL)
    if span.is_recording():
        span.set_attributes({OPERATION: "rippl.guard", **call_attributes(call),
                             **verdict_attributes(verdict), VETO_REASON: reason})
        if not verdict.allowed:
            span.add_event(VETO_EVENT, {**veto_attributes(verdict, reason), **call_attributes(call)})
        if exc is not None:
            span.record_exception(exc)
            span.set_attribute(ERROR_TYPE, type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
    span.end()


# -- the span of each operation ------------------------------------------------------------------

def _run_attributes(run: Any) -> Attributes:
    """A captured run's id, agent and framework (a `RunRef`)."""
    found: Attributes = {RUN_ID: str(run.id)}
    if getattr(run, "agent", None):
        found[AGENT_NAME] = str(run.agent)
    if getattr(run, "framework", None):
        found[FRAMEWORK] = str(run.framework)
    return found


def _policy_of(kwargs: Mapping[str, Any]) -> Attributes:
    policy = kwargs.get("policy")
    return policy_attributes(policy) if isinstance(policy, Policy) else {}


def _one(result: Verdict) -> Outcome:
    return Outcome(verdicts=(result,))


def _check_start(target: str | ToolCall, policy: Policy, **_: Any) -> tuple[str, Attributes]:
    found = call_attributes(target) if isinstance(target, ToolCall) else {TARGET: str(target)}
    return "rippl.check", {**found, **policy_attributes(policy)}


def check_spec(fail_closed: Callable[[str | ToolCall, Exception, Policy], Verdict]
               ) -> Spec[..., Verdict]:
    """The span of a check; `fail_closed` is the verdict a check gives when the graph cannot
    answer (the handle returns it), recorded on the span with the error."""

    def on_error(exc: Exception, target: str | ToolCall, policy: Policy, **_: Any) -> Outcome:
        if isinstance(exc, DatabaseError):
            return Outcome(verdicts=(fail_closed(target, exc, policy),))
        return Outcome()

    return Spec(_check_start, _one, on_error)


def _decide_start(run: Any, turn: str, calls: Sequence[ToolCall], *args: Any,
                  **kwargs: Any) -> tuple[str, Attributes]:
    found = {**_run_attributes(run), TURN: str(turn), CALLS: len(calls), **_policy_of(kwargs)}
    if len(calls) == 1 and isinstance(calls[0], ToolCall):
        found |= call_attributes(calls[0])
    return "rippl.capture.decide", found


def _judge_start(run: Any, call: ToolCall, *args: Any, **kwargs: Any) -> tuple[str, Attributes]:
    return "rippl.capture.judge", {**_run_attributes(run), **call_attributes(call),
                                   **_policy_of(kwargs)}


def _executed_start(run: Any, call: ToolCall, *args: Any, **kwargs: Any) -> tuple[str, Attributes]:
    found = {**_run_attributes(run), **call_attributes(call)}
    if isinstance(kwargs.get("ok"), bool):
        found[EXECUTION_OK] = kwargs["ok"]
    return "rippl.capture.executed", found


def _propose_start(claim_id: str, *args: Any, **kwargs: Any) -> tuple[str, Attributes]:
    return "rippl.review.propose", {CLAIM: str(claim_id), ACTOR: str(kwargs.get("by"))}


def _propose_where_start(query: object, *args: Any, **kwargs: Any) -> tuple[str, Attributes]:
    return "rippl.review.propose_where", {ACTOR: str(kwargs.get("by"))}


def _decide_review_start(review_id: str, *args: Any, **kwargs: Any) -> tuple[str, Attributes]:
    name = "rippl.review.approve" if kwargs.get("approve") else "rippl.review.reject"
    return name, {REVIEW: str(review_id), ACTOR: str(kwargs.get("by"))}


def _retraction_start(node_id: str, *args: Any, **kwargs: Any) -> tuple[str, Attributes]:
    name = "rippl.retract" if kwargs.get("retracted") else "rippl.reinstate"
    return name, {CLAIM: str(node_id), ACTOR: str(kwargs.get("by"))}


def _review_item(item: ReviewItem) -> Outcome:
    return Outcome({REVIEW: str(item.id), AT_RISK: len(item.at_risk)})


def _receipt(receipt: Receipt) -> Outcome:
    return Outcome({RECEIPT: str(receipt.id), RECEIPT_SEQ: int(receipt.seq), CLAIM: str(receipt.claim),
                    RECEIPT_SIGNED: receipt.signature is not None})


def _wave_result(wave: Wave) -> Outcome:
    return Outcome({WAVE_SIZE: len({t.id for t in wave.transitions})})  # nodes that changed


def _claim(recorded: Any) -> Outcome:
    """The result claim of an execution (capture's `Recorded`, or a claim id)."""
    return Outcome({RESULT_CLAIM: str(getattr(recorded, "claim", recorded))})


def _verdicts(verdicts: Sequence[Verdict]) -> Outcome:
    return Outcome(verdicts=tuple(verdicts))


DECIDE: Final[Spec[..., list[Verdict]]] = Spec(_decide_start, _verdicts)
JUDGE: Final[Spec[..., Verdict]] = Spec(_judge_start, _one)
EXECUTED: Final[Spec[..., Any]] = Spec(_executed_start, _claim)
PROPOSE: Final[Spec[..., ReviewItem]] = Spec(_propose_start, _review_item)
PROPOSE_WHERE: Final[Spec[..., ReviewItem]] = Spec(_propose_where_start, _review_item)
DECIDE_REVIEW: Final[Spec[..., Receipt]] = Spec(_decide_review_start, _receipt)
RETRACTION: Final[Spec[..., Wave]] = Spec(_retraction_start, _wave_result)
