"""Typed results of the public API (pydantic models)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rippl_core.vocabulary import Kind, State, public_status

type AtRiskPolicy = Literal["block", "allow"]
"""What the pre-flight check does with a target whose premise is proposed for retraction."""
type UnknownPolicy = Literal["deny", "allow", "record"]
"""What it does with a tool call no declared action matches (see `Policy`)."""
type OnErrorPolicy = Literal["deny", "allow"]
"""What it does when the graph cannot be read."""
type ReviewStatus = Literal["pending", "approved", "rejected"]
"""Where a proposed retraction stands."""
type ReviewKind = Literal["retraction", "override", "provenance"]
"""What a review decides: a retraction, a one-call override of a veto, or a retraction by
provenance (every source a provenance query matched, as one item)."""
type RepeatScope = Literal["args", "tool"]
"""What repeats a vetoed call: the same tool with the same canonical arguments ("args"), or any
later call of the tool in the run ("tool")."""
type RepeatScopes = RepeatScope | Mapping[str, RepeatScope]
"""A repeat scope for every tool, or per tool name ("args" for a tool not named)."""


class _Model(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)


class Node(_Model):
    """A causal node as stored, with its materialised status."""

    id: str
    kind: Kind
    text: str
    state: State
    retracted: bool = False
    pending_reviews: int = 0
    uri: str | None = None
    source_type: str | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    reason: str | None = None
    executed_at: datetime | None = None
    created_at: datetime | None = None
    justifications: list[list[str]] = Field(default_factory=list)
    provenance: dict[str, Any] | None = None
    key: str | None = None
    value: str | None = None

    @property
    def status(self) -> str:
        """The public status (Verified, Holding, Blocked, Premise Retracted...)."""
        return public_status(self.kind, self.state, self.executed_at is not None)

    @property
    def title(self) -> str:
        """Alias of `text` for sources, decisions and actions."""
        return self.text


class Reached(_Model):
    """A node reached by a walk (blast radius or premises), with one trail from the root."""

    id: str
    kind: Kind
    state: State
    depth: int
    trail: list[str]

    @property
    def status(self) -> str:
        return public_status(self.kind, self.state)


class ToolCall(_Model):
    """A tool call to resolve to an action: by explicit action id, else by tool name and args."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    action_id: str | None = None
    id: str | None = None


class Policy(_Model):
    """What the pre-flight check does in the grey cases. The defaults fail closed.

    `unknown` judges a call no declared action matches: "deny" (a strict allow-list), "allow"
    (unprotected), or "record" (the adapters' default: inside a captured run the call is recorded
    and judged by what the run observed; outside a run there is nothing to judge it by: denied)."""

    at_risk: AtRiskPolicy = "block"
    unknown: UnknownPolicy = "deny"
    on_error: OnErrorPolicy = "deny"


class Blocker(_Model):
    """A retracted or at-risk premise under the target, with the trail from it to the target."""

    premise: str
    kind: Kind
    state: State
    reason: str | None = None
    trail: list[str]

    @property
    def status(self) -> str:
        return public_status(self.kind, self.state)


class Expired(_Model):
    """A reading a call rests on that is no longer valid: stale (older than its freshness) or
    superseded (a newer reading of the same tool and arguments returned something else). Not a
    retraction: the agent reads again."""

    premise: str
    text: str
    status: Literal["stale", "superseded"]
    read_at: datetime | None = None
    fresh_for: float | None = None  # seconds
    valid_until: datetime | None = None
    superseded_by: str | None = None
    superseded_text: str | None = None
    superseded_run: str | None = None

    def explain(self) -> str:
        """One line a model can act on."""
        what = self.text
        if self.status == "superseded":
            by = f" ({self.superseded_text})" if self.superseded_text else ""
            run = f" in run {self.superseded_run}" if self.superseded_run else ""
            when = f" at {self.valid_until.isoformat()}" if self.valid_until else ""
            return (f"{what}: superseded by a newer reading{run}{when}{by}; act on the newer "
                    "reading, or read it again")
        age = ""
        if self.read_at is not None and self.valid_until is not None and self.fresh_for:
            age = f" read at {self.read_at.isoformat()}, fresh for {_duration(self.fresh_for)}"
        return f"{what}:{age} stale; read it again"


def _duration(seconds: float) -> str:
    if seconds >= 120 and seconds % 60 == 0:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:g} s"


class Verdict(_Model):
    """The answer of a pre-flight check."""

    allowed: bool
    target: str | None
    kind: Kind | None = None
    state: State | None = None
    reason: str
    blockers: list[Blocker] = Field(default_factory=list)
    tool_call: ToolCall | None = None
    expired: list[Expired] = Field(default_factory=list)

    @property
    def status(self) -> str | None:
        if self.kind is None or self.state is None:
            return None
        return public_status(self.kind, self.state)

    def explain(self) -> str:
        """A plain-words explanation with every blocking trail, for logs and for a model to read."""
        lines = [self.reason]
        for blocker in self.blockers:
            why = f" ({blocker.reason})" if blocker.reason else ""
            lines.append(f"  {blocker.premise} is {blocker.status}{why}: " + " -> ".join(blocker.trail))
        lines += [f"  {e.premise}: {e.explain()}" for e in self.expired]
        return "\n".join(lines)


class Transition(_Model):
    """One node's status change in a wave."""

    id: str
    kind: Kind
    before: State
    after: State


class Wave(_Model):
    """What a retraction, reinstatement or review decision changed."""

    root: str
    transitions: list[Transition]
    at: datetime

    def changed(self, after: State | None = None) -> list[str]:
        return [t.id for t in self.transitions if after is None or t.after is after]


class LoadReport(_Model):
    """What `load` wrote."""

    created: list[str]
    unchanged: list[str]
    replaced: list[str]
    edges: int


class Stats(_Model):
    """Counts of the graph's nodes by kind and by public status."""

    nodes: dict[str, int]
    statuses: dict[str, dict[str, int]]
    edges: int


class ProvenanceQuery(_Model):
    """Which sources a retraction by provenance covers: each field given must match (None: any).

    `tool` and `args` (a subset of the arguments, compared canonically) match tool readings;
    `since`/`until` bound a reading's `observed_at` (`since` <= observed_at < `until`); `run`,
    `agent` and `framework` name the run that read it; `source_kind` the source's kind
    (`tool_result` for a reading; a run's own root source, kind `run`, is matched only when asked
    for by kind); `source_prefix` matches a source whose id or uri starts with it, or a reading one
    of whose string arguments does (a URL, a domain: `https://evil.example/`)."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")

    tool: str | None = None
    args: dict[str, Any] | None = None
    since: datetime | None = None
    until: datetime | None = None
    run: str | None = None
    agent: str | None = None
    framework: str | None = None
    source_kind: str | None = None
    source_prefix: str | None = None

    def given(self) -> dict[str, Any]:
        """The fields given, as JSON values (times in ISO 8601)."""
        return {k: v for k, v in self.model_dump(mode="json").items() if v is not None}

    def describe(self) -> str:
        """The query in words, e.g. `tool=fetch_url, source_prefix=https://evil.example/`."""
        return ", ".join(f"{k}={v if isinstance(v, str) else _json(v)}"
                         for k, v in self.given().items())


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class ClaimEvidence(_Model):
    """One side of a contradiction: a claim as it stood when the proposal was made, with its
    sources (id, title, uri when it has one)."""

    id: str
    text: str
    key: str | None = None
    value: str | None = None
    sources: list[dict[str, str]] = Field(default_factory=list)


class Contradiction(_Model):
    """Why a detector proposed a retraction: the `old` claim (the one proposed for retraction) is
    contradicted by the `new` one. `detector` is "key" (same key, another value) or "model" (a
    chat model judged them contradictory; `model` names it, `reason` is what it said)."""

    detector: Literal["key", "model"]
    key: str | None = None
    old: ClaimEvidence
    new: ClaimEvidence
    model: str | None = None
    reason: str


class ReviewItem(_Model):
    """A proposal awaiting (or past) human review: a retraction (of `claims`; `claim` is the
    first), a one-call override of a veto (`kind="override"`: the call it lets run once, in its
    run, despite the retracted premises `claims`), or a retraction by provenance
    (`kind="provenance"`: `claims` are the sources its `query` matched, `matched` the claims they
    support; `at_risk` is what would go OUT, `survives` the matched claims another source keeps
    IN; `monitor` names the monitor that proposed it, if one did)."""

    id: str
    claim: str
    status: ReviewStatus
    reason: str
    evidence: str | None = None
    proposed_by: str
    proposed_at: datetime
    at_risk: list[str] = Field(default_factory=list)
    decided_by: str | None = None
    decided_at: datetime | None = None
    note: str | None = None
    kind: ReviewKind = "retraction"
    claims: list[str] = Field(default_factory=list)
    action: str | None = None
    run: str | None = None
    call: ToolCall | None = None
    query: ProvenanceQuery | None = None
    matched: list[str] = Field(default_factory=list)
    survives: list[str] = Field(default_factory=list)
    monitor: str | None = None
    contradiction: Contradiction | None = None


class Receipt(_Model):
    """One link of the tamper-evident chain and one leaf of the log's Merkle tree: a committed
    wave, rejection or reinstatement, or a reviewer key registered or revoked (no claim)."""

    id: str
    seq: int
    kind: str
    review: str | None
    claim: str | None
    actor: str
    at: datetime
    hash: str
    prev_hash: str
    body: dict[str, Any]
    signature: str | None = None
    public_key: str | None = None


class ReceiptCheck(_Model):
    """The outcome of re-walking the receipt chain (and, when given, of checking it against
    anchored tree heads: `anchored` is the size of the latest head it was checked against)."""

    ok: bool
    count: int
    problems: list[str] = Field(default_factory=list)
    root: str | None = None
    anchored: int | None = None


class TreeHead(_Model):
    """A head of the receipt log's Merkle tree (RFC 9162): how many receipts it covers, its root
    hash (hex), when it was taken, and optionally an Ed25519 signature over its canonical JSON
    body `{"at", "log", "root", "size"}` with the signer's public key and name."""

    log: str
    size: int
    root: str
    at: datetime
    by: str | None = None
    signature: str | None = None
    public_key: str | None = None


class InclusionProof(_Model):
    """That a receipt is in the log: its leaf hash at `index` (its seq - 1) and the audit path to
    the root of the tree of `tree_size` receipts (RFC 9162 2.1.3)."""

    receipt: str
    index: int
    tree_size: int
    leaf_hash: str
    root: str
    proof: list[str]


class ConsistencyProof(_Model):
    """That the tree of `new_size` receipts extends the tree of `old_size` (RFC 9162 2.1.4): the
    log only grew in between."""

    old_size: int
    new_size: int
    old_root: str
    new_root: str
    proof: list[str]


class Event(_Model):
    """A status change, review or belief event, as published on the graph's channel. A review
    event of a retraction by provenance names its `sources`, their `claims` and the `monitor`
    that proposed it (None: a person or an agent did, `by`).

    Belief events (`belief_recorded`, `belief_retracted`, `belief_revised`) name the `agent`, the
    `topic`, the `claim` and the valid interval [`valid_from`, `valid_to`) the write recorded
    (`valid_to` None: still open); `at` is when it was recorded. A `review_proposed` event of a
    proposal a contradiction detector made names it (`detector`: "key" or "model").

    `node_created` names a node a write created (`kind`, its first state in `after`, `before`
    None); a write that creates more than `CREATED_EVENTS` nodes (a load) publishes one
    `node_created` without `node`, with their `count`. A turn's decision and actions
    (`turn_recorded`) and an execution's result (`action_executed`, its result claim in `claim`)
    are announced by those events."""

    type: Literal["node_created", "node_at_risk", "node_invalidated", "node_restored", "review_proposed",
                  "review_approved", "review_rejected", "action_executed", "compensation_needed",
                  "compensation_attempted", "compensation_resolved", "belief_recorded",
                  "belief_retracted", "belief_revised",
                  # capture: a turn recorded, a call vetoed, a call denied on readings no longer
                  # valid, a reading another output of the same read superseded (`run` names it)
                  "turn_recorded", "call_vetoed", "call_stale", "call_superseded",
                  "reading_superseded"]
    graph: str | None = None
    node: str | None = None
    kind: str | None = None
    before: str | None = None
    after: str | None = None
    cause: str | None = None
    review: str | None = None
    claim: str | None = None
    by: str | None = None
    at: datetime | None = None
    agent: str | None = None
    topic: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    # a retraction by provenance (`kind` "provenance"): the sources it covers, the claims they
    # support, and the monitor that proposed it, if one did
    sources: list[str] | None = None
    claims: list[str] | None = None
    monitor: str | None = None
    detector: str | None = None
    run: str | None = None  # a capture event: the run it happened in
    state: str | None = None
    count: int | None = None  # `node_created` of a bulk write: how many (one event, no `node`)

    @property
    def before_status(self) -> str | None:
        """The public status (Verified, Blocked...) the node had before; None if not a change."""
        return self._public(self.before)

    @property
    def after_status(self) -> str | None:
        """The public status the node has after the change; None if not a status change."""
        return self._public(self.after)

    def _public(self, state: str | None) -> str | None:
        if state is None or self.kind is None:
            return state
        try:
            return public_status(Kind(self.kind), State(state))
        except ValueError:
            return state


class StatusChange(_Model):
    """One status change of a causal node. `before` is None for the node's creation."""

    node: str
    kind: Kind
    before: State | None
    after: State
    valid_from: datetime
    recorded_at: datetime
    cause: str | None = None
    review: str | None = None

    @property
    def before_status(self) -> str | None:
        return public_status(self.kind, self.before) if self.before is not None else None

    @property
    def after_status(self) -> str:
        return public_status(self.kind, self.after)


class WhatIfRetracted(_Model):
    """What would change if some claims (or sources) were retracted, computed without writing."""

    retracted: list[str]
    transitions: list[Transition] = Field(default_factory=list)
    blocked_decisions: list[str] = Field(default_factory=list)
    blocked_actions: list[str] = Field(default_factory=list)

    @property
    def blocked(self) -> list[str]:
        """Decisions and actions that would be blocked (Premise Retracted)."""
        return sorted(self.blocked_decisions + self.blocked_actions)

    def changed(self, after: State | None = None) -> list[str]:
        return [t.id for t in self.transitions if after is None or t.after is after]



class ToolSettings(_Model):
    """How Rippl treats one tool's calls, set where a framework's tools are configured: per tool in
    each adapter (`tools={"migrate": ToolSettings(repeat_scope="tool")}`), or under the key
    `"rippl"` of a tool's own metadata (`{"rippl": {"repeat_scope": "tool"}}`).

    `repeat_scope`: what repeats a call of this tool vetoed earlier in its run ("args": the same
    arguments; "tool": any arguments), so it stays vetoed.
    `fresh_for`: how long a reading of this tool stays valid (seconds, or a timedelta); a call
    resting on an older one is denied as stale until the agent reads again. None: it never expires.
    `reads`: the tool is a read (an idempotent query of live state): a reading that differs from
    an earlier one of the same arguments supersedes it. Default: a tool with a freshness is a read."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")

    repeat_scope: RepeatScope = "args"
    fresh_for: float | None = Field(default=None, gt=0)
    reads: bool | None = None

    def __init__(self, *, repeat_scope: RepeatScope = "args",
                 fresh_for: float | timedelta | None = None, reads: bool | None = None) -> None:
        # spelt out so that type checkers take a timedelta too (stored as seconds)
        BaseModel.__init__(self, repeat_scope=repeat_scope, fresh_for=fresh_for, reads=reads)

    @field_validator("fresh_for", mode="before")
    @classmethod
    def _seconds(cls, value: object) -> object:
        return value.total_seconds() if isinstance(value, timedelta) else value

    @property
    def is_read(self) -> bool:
        """Whether readings of this tool supersede one another."""
        return self.reads if self.reads is not None else self.fresh_for is not None


class Override(_Model):
    """An approved one-call override of a veto: the call it lets run once in its run despite the
    retracted premises it names, who proposed and approved it, its receipt, and the call that took
    it (None while unused)."""

    id: str
    run: str | None
    call: ToolCall | None
    action: str | None
    premises: list[str]
    reason: str
    proposed_by: str
    approved_by: str
    approved_at: datetime
    receipt: str | None = None
    used_by: str | None = None
    executed_at: datetime | None = None


class CompensationAttempt(_Model):
    """What an agent or a script reports it did to compensate an action (and its output); a
    person confirms it by resolving the compensation as compensated, naming the attempt."""

    id: str
    action: str
    what: str
    output: str | None = None
    by: str
    at: datetime


class CompensationResolution(_Model):
    """A reviewer's resolution of a compensation: `compensated` (undone, or made good) or `not
    needed`, with a note; `receipt` is its receipt in the chain."""

    id: str
    action: str
    resolution: Literal["compensated", "not needed"]
    note: str
    by: str
    at: datetime
    attempt: str | None = None
    receipt: str


class Compensation(_Model):
    """An action executed on a premise since retracted: it ran, and what it rested on is false.
    Each blocker is a retracted (or, as of a past time, then retracted) premise with its trail.
    It is `open` until a reviewer resolves it (`compensated` or `not needed`); `attempts` are
    what agents reported doing about it, as known at the time asked."""

    action: str
    title: str
    tool: str | None = None
    args: dict[str, Any] | None = None
    run: str | None = None
    call_id: str | None = None
    executed_at: datetime
    state: State
    blockers: list[Blocker] = Field(default_factory=list)
    status: Literal["open", "compensated", "not needed"] = "open"
    resolution: CompensationResolution | None = None
    attempts: list[CompensationAttempt] = Field(default_factory=list)

    def explain(self) -> str:
        """One line per blocker: what failed under this executed action."""
        call = f" ({self.tool}({self.args or {}}))" if self.tool else ""
        lines = [f"{self.action}{call} executed {self.executed_at.isoformat()} on a premise since "
                 "retracted"]
        lines += [f"  {b.premise} is {b.status}" + (f" ({b.reason})" if b.reason else "")
                  + ": " + " -> ".join(b.trail) for b in self.blockers]
        return "\n".join(lines)
