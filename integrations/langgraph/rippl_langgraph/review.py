"""Human review inside the graph: pause on a premise that is proposed for retraction.

When a tool call is blocked only because a premise under it is `Proposed Retraction` (AT_RISK, a
`ReviewItem` pending), the graph pauses with `interrupt()` showing the pending reviews, their blast
radius and the calls they block. `Command(resume=...)` carries the human's decision; the node
approves or rejects each review through the core, re-checks the calls and dispatches only what is
now allowed.

The interrupt happens before any tool runs, and it is the node's only interrupt, so re-running the
node on resume (LangGraph re-runs the whole node) neither repeats a tool nor mismatches resume
values; a review already decided is never decided twice, and the node never proposes anything.

Resume values (an unusable one makes the node ask again, saying what was wrong under "error"):
    "approve" | "reject" | "defer"                      one decision for every pending review
    {"decision": "approve", "by": "alice", "note": ...}  the same, naming the reviewer
    {"REV-1a2b": "approve", "REV-3c4d": {"decision": "reject", "by": "bob"}}   per review
"defer" leaves the review pending: the calls it blocks are vetoed for now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.types import interrupt

from rippl_core import AsyncRippl, InvalidInputError, ReviewItem, Rippl, State
from rippl_core.adapters import Call, Calls, acall, arun_calls, run_calls
from rippl_langgraph.guard import Outcome

type DecisionKind = Literal["approve", "reject", "defer"]
DECISIONS: tuple[DecisionKind, ...] = ("approve", "reject", "defer")
INTERRUPT_TYPE = "rippl_review"
MAX_ASKS = 8  # a node asks again after an unusable answer, this many times at most


@dataclass(frozen=True)
class Decision:
    decision: DecisionKind
    by: str
    note: str | None = None


def at_risk_claims(outcomes: Sequence[Outcome]) -> set[str]:
    """Premises proposed for retraction that block a denied call (the reviewable denials)."""
    claims: set[str] = set()
    for outcome in outcomes:
        verdict = outcome.verdict
        if verdict is None or verdict.allowed or verdict.state is not State.AT_RISK:
            continue
        claims |= {b.premise for b in verdict.blockers if b.state is State.AT_RISK}
    return claims


def reviewable(outcomes: Sequence[Outcome], pending: Sequence[ReviewItem]) -> list[ReviewItem]:
    claims = at_risk_claims(outcomes)
    return [item for item in pending if item.claim in claims]


def request(outcomes: Sequence[Outcome], items: Sequence[ReviewItem]) -> dict[str, Any]:
    """The interrupt payload: JSON-friendly, so it survives any checkpointer."""
    claims = {item.claim for item in items}
    calls = []
    for outcome in outcomes:
        verdict = outcome.verdict
        if verdict is None or verdict.allowed or verdict.state is not State.AT_RISK:
            continue
        blockers = [b.premise for b in verdict.blockers if b.premise in claims]
        if blockers:
            calls.append({"id": outcome.call.get("id"), "name": outcome.call.get("name"),
                          "args": outcome.call.get("args"), "action": verdict.target,
                          "blocked_by": blockers, "reason": verdict.explain()})
    return {
        "type": INTERRUPT_TYPE,
        "question": "A premise under these tool calls is proposed for retraction. Approve the "
                    "retraction (the calls are vetoed), reject it (the calls run), or defer.",
        "reviews": [{"id": item.id, "claim": item.claim, "reason": item.reason,
                     "evidence": item.evidence, "proposed_by": item.proposed_by,
                     "proposed_at": item.proposed_at.isoformat(), "at_risk": list(item.at_risk)}
                    for item in items],
        "tool_calls": calls,
        "options": list(DECISIONS),
    }


def ask(outcomes: Sequence[Outcome], items: Sequence[ReviewItem], reviewer: str) -> dict[str, Decision]:
    """Pause with the review request until the resume value is a usable decision.

    An unusable answer is not an error of the run: LangGraph keeps a node's resume values, so
    raising would replay the same bad answer on every resume. Instead the node asks again, with the
    problem stated under "error"; the number of `interrupt()` calls stays a function of the stored
    answers, so resume values always line up on re-runs."""
    payload = request(outcomes, items)
    for _ in range(MAX_ASKS):
        resume = interrupt(payload)
        try:
            return parse(resume, items, reviewer)
        except InvalidInputError as exc:
            payload = {**request(outcomes, items), "error": f"{exc}; answer again"}
    raise InvalidInputError(f"no usable review decision after {MAX_ASKS} answers; resume with "
                            "'approve', 'reject' or 'defer'")


def _one(value: Any, default_by: str, where: str) -> Decision:
    decision: object
    if isinstance(value, str):
        decision, by, note = value, default_by, None
    elif isinstance(value, Mapping):
        decision = value.get("decision")
        by = value.get("by") or default_by
        note = value.get("note")
    else:
        raise InvalidInputError(f"{where}: expected 'approve', 'reject', 'defer' or "
                                f"{{'decision': ..., 'by': ...}}, got {type(value).__name__}")
    if not isinstance(decision, str) or decision not in DECISIONS:
        raise InvalidInputError(f"{where}: decision {decision!r} is not one of {', '.join(DECISIONS)}")
    if not isinstance(by, str) or (note is not None and not isinstance(note, str)):
        raise InvalidInputError(f"{where}: 'by' and 'note' must be strings")
    return Decision(decision, by, note)


def parse(resume: Any, items: Sequence[ReviewItem], default_by: str) -> dict[str, Decision]:
    """The decision for each review id, from a resume value (see the module docstring)."""
    ids = [item.id for item in items]
    if isinstance(resume, Mapping) and "decision" not in resume:
        unknown = [k for k in resume if k not in ids]
        if unknown:
            raise InvalidInputError(f"resume names reviews that are not pending here: "
                                    f"{', '.join(map(str, unknown))}; pending: {', '.join(ids)}")
        return {rid: _one(resume[rid], default_by, f"resume[{rid!r}]") if rid in resume
                else Decision("defer", default_by) for rid in ids}
    one = _one(resume, default_by, "resume")
    return dict.fromkeys(ids, one)


def _apply(decisions: Mapping[str, Decision]) -> Calls[list[str]]:
    done = []
    for review_id, choice in decisions.items():
        if choice.decision == "defer" or (yield Call("review", (review_id,))).status != "pending":
            continue
        method = "approve" if choice.decision == "approve" else "reject"
        yield Call(method, (review_id,), {"by": choice.by, "note": choice.note})
        done.append(review_id)
    return done


def apply(memory: Rippl, decisions: Mapping[str, Decision]) -> list[str]:
    """Decide each still-pending review; returns the ids decided now."""
    return run_calls(memory, _apply(decisions))


async def aapply(memory: Rippl | AsyncRippl, decisions: Mapping[str, Decision]) -> list[str]:
    """The async twin of `apply` (a sync handle runs in a worker thread)."""
    return await arun_calls(memory, _apply(decisions))


def pending(memory: Rippl) -> list[ReviewItem]:
    return memory.reviews("pending")


async def apending(memory: Rippl | AsyncRippl) -> list[ReviewItem]:
    items: list[ReviewItem] = await acall(memory, "reviews", "pending")
    return items


def check_reviewer(reviewer: str) -> str:
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise InvalidInputError("reviewer must name who decides (a person or a role), e.g. 'oncall'")
    return reviewer
