"""What the MCP tools return: pydantic models, so every client gets a JSON schema of each result.

Plain pydantic: importing this module does not need the `mcp` SDK.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from rippl_core._runtime.validation import MAX_ID_LENGTH
from rippl_core.beliefs.models import Belief, BeliefChange, WhatIf
from rippl_core.models import (
    Blocker,
    Compensation,
    Expired,
    Node,
    Reached,
    ReviewItem,
    StatusChange,
    Verdict,
)

RUN_TOKEN = ("The run's token: send it as params._meta.rippl_run to act in this run from another "
             "connection, and in every request without a session (stateless HTTP). Keep it as "
             "secret as a session id: it is what proves the run is yours.")
RUN_ID = ("The run's id in the graph (as compensations and explanations name it); it names no run "
          "in _meta.")


class _Out(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)


class BlockerInfo(_Out):
    """A retracted or at-risk premise under the checked target."""

    premise: str = Field(description="The id of the retracted or at-risk premise.")
    kind: str
    status: str = Field(description="Its public status, e.g. Retracted or Proposed Retraction.")
    reason: str | None = Field(None, description="Why it was retracted, when known.")
    trail: list[str] = Field(description="Ids from the premise down to the checked target.")

    @classmethod
    def of(cls, blocker: Blocker) -> BlockerInfo:
        return cls(premise=blocker.premise, kind=blocker.kind.value, status=blocker.status,
                   reason=blocker.reason, trail=blocker.trail)


class CheckResult(_Out):
    """The pre-flight answer: may this action go ahead?"""

    safe: bool = Field(description="True when the action may run: every premise under it holds.")
    status: str = Field(description="The target's public status (Pending, Holding, Blocked, "
                                    "Premise Retracted...), or Unknown when it could not be found "
                                    "or the graph could not be read.")
    target: str | None = Field(description="The action or decision checked (the action a tool call "
                                           "resolved to), or null when nothing matched.")
    kind: str | None = None
    reason: str = Field(description="One sentence saying why, and what to do next when unsafe.")
    explanation: str = Field(description="The reason with every blocking trail, in plain text.")
    blockers: list[BlockerInfo] = Field(default_factory=list)
    expired: list[Expired] = Field(default_factory=list, description=(
        "Readings it rests on that are no longer valid: stale (older than their freshness) or "
        "superseded (a newer reading returned something else). Not false: read again, then "
        "check again."))
    call_id: str | None = Field(default=None, description="With a tool call: the id it was recorded "
                                                          "under; give it to record_execution.")
    run: str | None = Field(default=None, description=RUN_TOKEN)
    run_id: str | None = Field(default=None, description=RUN_ID)

    @classmethod
    def of(cls, verdict: Verdict, call_id: str | None = None, run: str | None = None,
           run_id: str | None = None) -> CheckResult:
        return cls(safe=verdict.allowed, status=verdict.status or "Unknown", target=verdict.target,
                   kind=verdict.kind.value if verdict.kind else None, reason=verdict.reason,
                   explanation=verdict.explain(),
                   blockers=[BlockerInfo.of(b) for b in verdict.blockers],
                   expired=list(verdict.expired), call_id=call_id, run=run, run_id=run_id)


class NodeInfo(_Out):
    """A node of the causal graph with its current status."""

    id: str
    kind: str
    status: str = Field(description="The public status, e.g. Verified, Holding, Pending, Retracted.")
    state: str = Field(description="The internal state: IN, AT_RISK or OUT.")
    text: str = Field(description="The claim text, or the title of a source, decision or action.")
    retracted: bool = False
    pending_reviews: int = 0
    uri: str | None = None
    source_type: str | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    reason: str | None = None
    created_at: datetime | None = None
    executed_at: datetime | None = None
    justifications: list[list[str]] = Field(
        default_factory=list,
        description="Each inner list is one way the node is supported; all of its ids are needed.")
    key: str | None = Field(default=None, description="A claim's subject and property, if given.")
    value: str | None = Field(default=None, description="The value the claim states for its key.")

    @classmethod
    def of(cls, node: Node) -> NodeInfo:
        return cls.model_validate({**node.model_dump(exclude={"provenance"}), "status": node.status})


class ReachedInfo(_Out):
    """A node downstream of the root."""

    id: str
    kind: str
    status: str
    depth: int = Field(description="Levels below the root (1 = rests on it directly).")
    trail: list[str] = Field(description="One shortest chain of ids from the root to this node.")

    @classmethod
    def of(cls, reached: Reached) -> ReachedInfo:
        return cls(id=reached.id, kind=reached.kind.value, status=reached.status,
                   depth=reached.depth, trail=reached.trail)


class BlastRadius(_Out):
    """Everything that rests on a node, directly or at any depth."""

    root: str
    root_status: str
    count: int = Field(description="How many nodes are downstream in all.")
    truncated: bool = Field(description="True when `nodes` lists only the first `limit` of them.")
    by_kind: dict[str, int] = Field(description="Downstream node counts per kind.")
    nodes: list[ReachedInfo] = Field(description="Downstream nodes, nearest first.")


class ReviewList(_Out):
    """Review items of the human review queue."""

    status: str
    count: int
    reviews: list[ReviewItem]


class ReviewDecision(_Out):
    """A review decided through MCP (only with --allow-review): the receipt that records it."""

    review: str
    decision: str = Field(description="approved or rejected")
    decided_by: str = Field(description="The reviewer the server was started with.")
    receipt: str = Field(description="The receipt id (RCP-...).")
    receipt_hash: str
    changes: list[dict[str, Any]] = Field(description="Each affected node: id, before, after.")


class BeliefAnswer(_Out):
    """What an agent believed about a topic at a time, as recorded at a time."""

    found: bool = Field(description="False when the agent held no belief about the topic then.")
    belief: Belief | None = None
    summary: str


class BeliefDropped(_Out):
    """The belief interval closed by retract_belief, if the agent held one."""

    dropped: bool
    belief: Belief | None = None
    summary: str


class Timeline(_Out):
    """Every interval of an agent's belief about a topic, oldest first."""

    agent: str
    topic: str
    count: int
    beliefs: list[Belief]
    summary: str


class WhyChanged(_Out):
    """The change of belief nearest a moment, and the evidence behind it."""

    change: BeliefChange
    explanation: str


class WhatIfAnswer(_Out):
    """What the agent would believe had some evidence never existed (the live graph is untouched)."""

    changed: bool = Field(description="True when the belief would differ.")
    result: WhatIf
    explanation: str


class HistoryEntry(_Out):
    """One recorded status change of a node."""

    before: str | None = Field(description="The public status before (null at creation).")
    after: str
    valid_from: datetime = Field(description="When the change took effect in the world.")
    recorded_at: datetime = Field(description="When Rippl recorded it.")
    cause: str | None = None
    review: str | None = None

    @classmethod
    def of(cls, change: StatusChange) -> HistoryEntry:
        return cls(before=change.before_status, after=change.after_status,
                   valid_from=change.valid_from, recorded_at=change.recorded_at, cause=change.cause,
                   review=change.review)


class History(_Out):
    """A node's status changes, in valid-time order."""

    node: str
    count: int
    changes: list[HistoryEntry]


class RunStarted(_Out):
    """A run begun for the calling client."""

    run: str = Field(description=RUN_TOKEN)
    run_id: str = Field(description=RUN_ID)


class ToolSchema(BaseModel):
    """A tool a client will check: its name and its MCP `inputSchema` (a JSON Schema object)."""

    name: Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)]
    inputSchema: dict[str, Any] = Field(  # MCP's own (camelCase) name for it
        description="The tool's JSON Schema of its arguments.")


class HandOver(_Out):
    """A hand-over a run wrote for a team mate of its scope."""

    ref: str = Field(description="Give it to the team mate: receive_hand_over(ref).")
    run: str = Field(description=RUN_TOKEN)
    run_id: str = Field(description=RUN_ID)


class ExecutionRecord(_Out):
    """What a capture tool recorded in the client's run."""

    run: str = Field(description=RUN_TOKEN)
    run_id: str = Field(description=RUN_ID)
    call_id: str | None = None
    result_claim: str | None = Field(default=None, description="The claim stating the call's "
                                                               "result (an observation of the run).")
    cited: list[str] = Field(default_factory=list)


class CompensationList(_Out):
    """Actions executed on a premise since retracted."""

    count: int
    compensations: list[Compensation]
