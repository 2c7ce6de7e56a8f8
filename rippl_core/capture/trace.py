"""Reading captured runs back (sans I/O, run by either driver): the list of runs with their
counts, and one run's trace (its turns in order, what each rested on, its calls with their
verdicts and executions). One query each (`cypher.runs`, `cypher.run_trace`)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from rippl_core._runtime.op import Op
from rippl_core._runtime.timeutil import TimeLike, from_ms, now_ms, to_ms
from rippl_core._runtime.validation import check_id
from rippl_core.capture import cypher
from rippl_core.errors import NotFoundError
from rippl_core.vocabulary import Kind, State, public_status


class _Model(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)


class RunSummary(_Model):
    """A captured run: who ran it, when, and what it did (turns, calls, calls vetoed, calls
    executed on a premise since retracted: open compensations)."""

    id: str
    agent: str | None = None
    framework: str | None = None
    scope: str | None = None
    started: datetime | None = None
    last_active: datetime | None = None
    closed: datetime | None = None
    turns: int = 0
    calls: int = 0
    vetoes: int = 0
    open_compensations: int = 0


class Rested(_Model):
    """A claim a turn rested on (in the model's context), with its status and, for a reading of
    a read tool, its age: when it was read, until when it is fresh, and what superseded it."""

    id: str
    text: str
    state: State
    status: str
    retracted: bool = False
    pending: bool = False
    observed_at: datetime | None = None
    fresh_until: datetime | None = None
    superseded_by: str | None = None
    superseded_at: datetime | None = None
    freshness: Literal["fresh", "stale", "superseded"] | None = None  # readings only


class CallTrace(_Model):
    """A captured call: its action, its verdict as it stands (allowed; vetoed; blocked: its
    premises no longer hold, though no veto was issued yet; stale: not executed, and a reading it
    rests on is stale or superseded; overridden) with the reason, and its execution
    (status, time, the result claim)."""

    action: str
    title: str
    tool: str | None = None
    args: dict[str, Any] | None = None
    call_id: str | None = None
    turn: str | None = None  # the decision that drove it
    state: State
    status: str
    verdict: Literal["allowed", "vetoed", "blocked", "stale", "overridden"]
    reason: str
    named: list[str] = Field(default_factory=list)  # what the veto named (the model read it)
    override: str | None = None
    executed_at: datetime | None = None
    exec_status: str | None = None
    result: Rested | None = None
    owed: bool = False  # executed on a premise since retracted: an open compensation


class TurnTrace(_Model):
    """A model turn: its decision, what it rested on, and its calls."""

    decision: str
    turn: str | None = None
    title: str
    at: datetime | None = None
    state: State
    status: str
    rested_on: list[Rested] = Field(default_factory=list)
    calls: list[CallTrace] = Field(default_factory=list)


class RunTrace(_Model):
    """A captured run with its turns in the order they were recorded."""

    run: RunSummary
    turns: list[TurnTrace] = Field(default_factory=list)
    calls: list[CallTrace] = Field(default_factory=list)  # every call, in order (turns' included)


def _summary(props: dict[str, Any], turns: int, calls: int, vetoes: int, owed: int) -> RunSummary:
    return RunSummary(id=props["id"], agent=props.get("agent"), framework=props.get("framework"),
                      scope=props.get("scope"), started=from_ms(props.get("started_at")),
                      last_active=from_ms(props.get("last_active")),
                      closed=from_ms(props.get("closed_at")), turns=turns, calls=calls,
                      vetoes=vetoes or 0, open_compensations=owed or 0)


def runs(*, agent: str | None = None, framework: str | None = None,
         since: TimeLike | None = None, until: TimeLike | None = None,
         open_compensations: bool = False) -> Op[list[RunSummary]]:
    """Every captured run (filtered: by agent, framework, active since / started until, with
    open compensations), most recently active first."""
    if agent is not None:
        check_id(agent, what="agent")
    if framework is not None:
        check_id(framework, what="framework")
    start = None if since is None else to_ms(since, name="since")
    end = None if until is None else to_ms(until, name="until")
    rows = yield cypher.runs(agent, framework, start, end, open_compensations)
    return [_summary(*row) for row in rows]


def _rested(props: dict[str, Any], now: int) -> Rested:
    state = State(props.get("state", "IN"))
    kind = Kind(props.get("kind", Kind.CLAIM.value))
    fresh_until = props.get("fresh_until")
    freshness: Literal["fresh", "stale", "superseded"] | None = None
    if props.get("read_key") is not None:
        freshness = ("superseded" if props.get("superseded_by") else
                     "stale" if fresh_until is not None and fresh_until <= now else "fresh")
    return Rested(id=props["id"], text=props.get("text", ""), state=state,
                  status=public_status(kind, state), retracted=bool(props.get("retracted")),
                  pending=bool(props.get("pending")), observed_at=from_ms(props.get("read_at")),
                  fresh_until=from_ms(fresh_until), superseded_by=props.get("superseded_by"),
                  superseded_at=from_ms(props.get("superseded_at")), freshness=freshness)


def _call(props: dict[str, Any], decision: str | None, results: list[dict[str, Any]],
          reads: list[str], now: int, readings: dict[str, Rested],
          resolved: frozenset[str]) -> CallTrace:
    state = State(props.get("state", "IN"))
    executed = props.get("executed_at") is not None
    named = [n for n in props.get("told") or () if n != props["id"]]  # its trail, less itself
    binds = list(props.get("binds") or [])
    override = props.get("override")
    verdict: Literal["allowed", "vetoed", "blocked", "stale", "overridden"]
    expired = [] if executed else [r for rid in reads
                                   if (r := readings.get(rid)) is not None
                                   and r.freshness in ("stale", "superseded")]
    if override is not None:
        verdict, reason = "overridden", f"allowed by override {override}, approved by a reviewer"
    elif props.get("told") is not None:
        what = ", ".join(named or binds) or "premises that no longer hold"
        verdict, reason = "vetoed", f"denied: it rests on {what}"
    elif state is not State.IN:
        verdict = "blocked"
        reason = ("a premise it rested on is retracted" if state is State.OUT
                  else "a premise it rested on is under review")
    elif expired:
        verdict = "stale"
        reason = "denied until the agent reads again: it rests on " + ", ".join(
            f"{r.id} ({r.freshness})" for r in expired)
    else:
        verdict, reason = "allowed", "its premises hold"
    args = props.get("args")
    return CallTrace(
        action=props["id"], title=props.get("text", ""), tool=props.get("tool"),
        args=json.loads(args) if isinstance(args, str) and args else None,
        call_id=props.get("call_id"), turn=decision, state=state,
        status=public_status(Kind.ACTION, state, executed), verdict=verdict, reason=reason,
        named=named, override=override, executed_at=from_ms(props.get("executed_at")),
        exec_status=props.get("exec_status"),
        result=_rested(results[0], now) if results else None,
        owed=executed and state is State.OUT and override is None
        and props["id"] not in resolved)  # a reviewer resolved it: no longer open


def run_trace(run_id: str) -> Op[RunTrace]:
    """A captured run's turns in order, what each rested on, its calls with their verdicts and
    executions."""
    run_id = check_id(run_id, what="run id")
    rows = yield cypher.run_trace(run_id)
    if not rows:
        raise NotFoundError(f"no captured run {run_id}; list them with runs()")
    props, turn_rows, call_rows, resolved = rows[0]
    now = now_ms()
    readings = {r.id: r for t in turn_rows if t is not None for c in t[1] if c is not None
                for r in [_rested(c, now)] if r.freshness is not None}
    ordered = sorted((r for r in call_rows if r is not None and r[0] is not None),
                     key=lambda r: _order(r[0]))
    calls = [_call(a, d, res, reads, now, readings, frozenset(resolved))
             for a, d, res, reads in ordered]
    by_turn: dict[str | None, list[CallTrace]] = {}
    for call in calls:
        by_turn.setdefault(call.turn, []).append(call)
    turns = []
    for decision, rested in sorted((t for t in turn_rows if t is not None),
                                   key=lambda t: _order(t[0])):
        state = State(decision.get("state", "IN"))
        turns.append(TurnTrace(
            decision=decision["id"], turn=decision.get("turn"), title=decision.get("text", ""),
            at=from_ms(decision.get("created_at")), state=state,
            status=public_status(Kind.DECISION, state),
            rested_on=sorted((_rested(c, now) for c in rested if c is not None),
                             key=lambda r: r.id),
            calls=by_turn.get(decision["id"], [])))
    return RunTrace(run=_summary(props, len(turns), len(calls),
                                 sum(c.verdict == "vetoed" for c in calls),
                                 sum(c.owed for c in calls)),
                    turns=turns, calls=calls)


def _order(props: dict[str, Any]) -> tuple[int, int, str]:
    """When a turn or call was recorded: Rippl's time (a test's clock may hold it still), then
    the wall clock's nanoseconds (recorded since this view existed), then the id."""
    return (int(props.get("created_at") or 0), int(props.get("recorded_ns") or 0), props["id"])
