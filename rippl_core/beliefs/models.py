"""Typed results of the bitemporal API: beliefs, their changes, status history, counterfactuals.

Valid time (`valid_from`, `valid_to`) is when something held in the world; transaction time
(`recorded_at`, `superseded_at`) is when Rippl learned it and when that record was corrected. Both
intervals are closed-open, and `None` as an end means "still open".
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from rippl_core.vocabulary import State


class _Model(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)


def constructed[M: BaseModel](cls: type[M], values: dict[str, Any]) -> M:
    """`cls.model_construct(**values)` for trusted values that give every field, in the order the
    model declares them: the same instance (fields, fields set, no extra, no private state), built
    without pydantic's per-field loop, which dominates reading a long timeline."""
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", values)
    object.__setattr__(model, "__pydantic_fields_set__", set(values))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value is not None else "now"


class Belief(_Model):
    """One interval of an agent's belief about a topic, as recorded.

    `claim_state`, `claim_status`, `rests_on_retracted` and `retracted_evidence` (the evidence
    sources that were retracted) describe the claim's status at the time the read asked about:
    for `ask` and `beliefs` with `as_of` and/or `known_at`, its status at valid time `as_of` as
    Rippl knew it at `known_at` (computed as `check(as_of=, known_at=)` computes it, from the
    retractions recorded by then); for every other read, and for what a write returns, its
    status now. `claim_state_now` and `claim_status_now` are always its status now, so a belief
    held last week in a claim retracted since (by a retraction valid from after then) reads as
    Verified then (`claim_state` IN) and Retracted now (`claim_state_now` OUT). A claim or
    source Rippl learned of only after `known_at` (history imported with past transaction times)
    is given its status now.

    `cause` says which operation wrote this version of the interval: `believe` (an adoption, or
    an interval closed by the next adoption), `retract_belief` (an interval closed when the agent
    dropped the belief) or `revise` (a correction, and the parts of older rows it kept); `reason`
    is the reason given when the agent dropped the belief. `recorded_at` is when this version of
    the interval was recorded (closing an interval records a new version); `first_recorded_at` is
    when Rippl first learned of the adoption. `claim_retracted` says the claim itself was
    retracted (now); a claim OUT without it went OUT because a premise under it was (a memory
    written from a reading since retracted): nobody dropped the belief.
    """

    agent: str
    topic: str
    claim: str
    text: str
    valid_from: datetime
    valid_to: datetime | None = None
    recorded_at: datetime
    superseded_at: datetime | None = None
    evidence: list[str] = Field(default_factory=list)
    note: str | None = None
    claim_state: State
    claim_status: str
    claim_state_now: State | None = None
    claim_status_now: str | None = None
    rests_on_retracted: bool = False
    retracted_evidence: list[str] = Field(default_factory=list)
    cause: str = "believe"
    reason: str | None = None
    first_recorded_at: datetime | None = None
    claim_retracted: bool = False

    def holds_at(self, t: datetime) -> bool:
        """Whether `t` falls in the valid interval [valid_from, valid_to)."""
        return self.valid_from <= t and (self.valid_to is None or t < self.valid_to)

    def describe(self) -> str:
        """One line in plain words, for logs and for a model to read."""
        until = f" until {_when(self.valid_to)}" if self.valid_to is not None else ""
        line = f"{self.agent} believes {self.claim} ({self.text!r}) about {self.topic} " \
               f"since {_when(self.valid_from)}{until}"
        if self.evidence:
            line += f"; evidence: {', '.join(self.evidence)}"
        if self.rests_on_retracted:
            line += f"; WARNING: {self.claim} is {self.claim_status}"
            if not self.claim_retracted:
                line += (": not itself, a premise it rests on was retracted (nobody dropped the "
                         "belief; explain shows the trail)")
        elif self.claim_state is not State.IN:
            line += f"; {self.claim} is {self.claim_status}"
        if self.retracted_evidence:
            line += f"; retracted evidence: {', '.join(self.retracted_evidence)}"
        if self.claim_state_now not in (None, self.claim_state):
            line += f"; {self.claim} is {self.claim_status_now} now"
        return line


class BeliefChange(_Model):
    """The change of belief nearest a moment: what was believed just before and from then on."""

    agent: str
    topic: str
    at: datetime
    changed_at: datetime
    known_at: datetime | None = None
    before: Belief | None = None
    after: Belief | None = None
    new_evidence: list[str] = Field(default_factory=list)
    dropped_evidence: list[str] = Field(default_factory=list)
    retracted_evidence: list[str] = Field(default_factory=list)

    def explain(self) -> str:
        """The change in plain words, with the evidence that arrived and any retracted source."""
        def name(b: Belief | None) -> str:
            return f"{b.claim} ({b.text!r})" if b is not None else "nothing"

        lines = [f"On {_when(self.changed_at)} {self.agent} changed its belief about {self.topic}: "
                 f"{name(self.before)} -> {name(self.after)}"]
        if self.new_evidence:
            lines.append(f"  evidence that arrived then: {', '.join(self.new_evidence)}")
        if self.dropped_evidence:
            lines.append(f"  evidence no longer relied on: {', '.join(self.dropped_evidence)}")
        if self.retracted_evidence:
            lines.append(f"  retracted evidence involved: {', '.join(self.retracted_evidence)}")
        for belief in (self.before, self.after):
            if belief is not None and belief.rests_on_retracted:
                lines.append(f"  {belief.claim} is {belief.claim_status} now")
        return "\n".join(lines)


class WhatIf(_Model):
    """What an agent would believe about a topic had some evidence never existed, next to what it
    does believe. `dropped` are the adoptions that would not have happened; `lost_claims` the claims
    that would lose all support without that evidence."""

    agent: str
    topic: str
    without: list[str]
    as_of: datetime
    known_at: datetime
    actual: Belief | None = None
    counterfactual: Belief | None = None
    dropped: list[Belief] = Field(default_factory=list)
    lost_claims: list[str] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the belief would differ (another claim, or none at all)."""
        def claim(b: Belief | None) -> str | None:
            return b.claim if b is not None else None
        return claim(self.actual) != claim(self.counterfactual)

    def explain(self) -> str:
        def name(b: Belief | None) -> str:
            return f"{b.claim} ({b.text!r})" if b is not None else "nothing"

        lines = [f"As of {_when(self.as_of)}, {self.agent} believes {name(self.actual)} about "
                 f"{self.topic}.",
                 f"Without {', '.join(self.without)} it would believe {name(self.counterfactual)}."]
        if self.dropped:
            lines.append("  adoptions that would not have happened: "
                         + ", ".join(f"{b.claim} (from {_when(b.valid_from)})" for b in self.dropped))
        if self.lost_claims:
            lines.append(f"  claims that would lose all support: {', '.join(self.lost_claims)}")
        return "\n".join(lines)
