"""Belief memory tools (bitemporal): record, drop, ask, timeline, why it changed, what if, and a
node's status history."""

# No `from __future__ import annotations` here: the MCP server reads the tool signatures at registration.

from typing import Annotated

from pydantic import Field

from rippl_core.beliefs.models import Belief
from rippl_core.capture.memory import writing
from rippl_core.client import AsyncRippl
from rippl_core.mcp.common import MAX_IDS, Id, Ids, Registrar, Text, Time
from rippl_core.mcp.models import (
    BeliefAnswer,
    BeliefDropped,
    History,
    HistoryEntry,
    Timeline,
    WhatIfAnswer,
    WhyChanged,
)
from rippl_core.mcp.sdk import Context
from rippl_core.mcp.session import Sessions


def register(rippl: AsyncRippl, tool: Registrar, sessions: Sessions) -> None:
    """Register this family's tools on the server `tool` belongs to."""

    def describe(belief: Belief | None, none: str) -> str:
        return belief.describe() if belief is not None else none

    @tool(read_only=False, title="Record a belief")
    async def record_belief(
        ctx: Context,
        agent: Annotated[Id, Field(description="The agent that holds the belief.")],
        claim_id: Annotated[Id, Field(description="The claim it believes (record it with add_claim).")],
        topic: Annotated[Id, Field(description="What the belief is about, e.g. billing-home-shard. "
                                               "One belief per agent and topic at a time.")],
        valid_from: Annotated[Time | None, Field(description="Since when it holds; default now.")] = None,
        evidence: Annotated[Ids | None, Field(description="Source ids that made the agent adopt it.")] = None,
        note: Annotated[Text | None, Field(description="Why, in plain words.")] = None,
    ) -> Belief:
        """Record that an agent believes a claim about a topic from a time on. Adopting a new claim
        on the topic closes the previous belief's interval; history is kept, never deleted.
        Written in your run, it rests on what your run has carried (less what the vetoes you
        received named): retract what it was written from and it no longer holds."""
        with writing(sessions.writer(ctx)):
            return await rippl.believe(agent, claim_id, topic=topic, valid_from=valid_from,
                                       evidence=evidence or (), note=note)

    @tool(read_only=False, title="Drop a belief")
    async def retract_belief(
        agent: Annotated[Id, Field(description="The agent.")],
        topic: Annotated[Id, Field(description="The topic it no longer holds a belief about.")],
        at: Annotated[Time | None, Field(description="When it stopped holding; default now.")] = None,
        reason: Annotated[Text | None, Field(description="Why it was dropped.")] = None,
    ) -> BeliefDropped:
        """Close the agent's current belief about a topic (it then believes nothing about it)."""
        belief = await rippl.retract_belief(agent, topic, at=at, reason=reason)
        return BeliefDropped(dropped=belief is not None, belief=belief,
                             summary=describe(belief, f"{agent} held no belief about {topic}"))

    @tool(read_only=True, idempotent=True, title="Ask what an agent believed")
    async def ask_belief(
        ctx: Context,
        agent: Annotated[Id, Field(description="The agent.")],
        topic: Annotated[Id, Field(description="The topic.")],
        as_of: Annotated[Time | None, Field(description="Valid time: believed at this moment; "
                                                        "default now.")] = None,
        known_at: Annotated[Time | None, Field(description="Transaction time: as Rippl knew it "
                                                           "then; default now.")] = None,
    ) -> BeliefAnswer:
        """What the agent believed about a topic at a time (as_of), as recorded at a time
        (known_at), with whether that claim has since been retracted."""
        belief = await rippl.ask(agent, topic, as_of=as_of, known_at=known_at)
        if belief is not None:  # the session read it: an observation of its run
            await sessions.of(ctx).run.observe([belief.claim])
        return BeliefAnswer(found=belief is not None, belief=belief,
                            summary=describe(belief, f"{agent} held no belief about {topic} then"))

    @tool(read_only=True, idempotent=True, title="Timeline of a belief")
    async def timeline(
        agent: Annotated[Id, Field(description="The agent.")],
        topic: Annotated[Id, Field(description="The topic.")],
        known_at: Annotated[Time | None, Field(description="As Rippl knew it then; default now.")] = None,
        limit: Annotated[int | None, Field(ge=1, description=(
            "Only the latest this many intervals; default all."))] = None,
        before: Annotated[Time | None, Field(description=(
            "With limit: the latest intervals starting before this time (page back with the "
            "first interval's valid_from)."))] = None,
    ) -> Timeline:
        """Every interval of the agent's belief about a topic, oldest first (or the latest `limit`)."""
        beliefs = await rippl.timeline(agent, topic, known_at=known_at, limit=limit, before=before)
        return Timeline(agent=agent, topic=topic, count=len(beliefs), beliefs=beliefs,
                        summary="\n".join(b.describe() for b in beliefs)
                        or f"{agent} never held a belief about {topic}")

    @tool(read_only=True, idempotent=True, title="Why did a belief change")
    async def why_changed(
        agent: Annotated[Id, Field(description="The agent.")],
        topic: Annotated[Id, Field(description="The topic.")],
        at: Annotated[Time, Field(description="Around when it changed.")],
        known_at: Annotated[Time | None, Field(description="As Rippl knew it then; default now.")] = None,
    ) -> WhyChanged:
        """The change of belief nearest a moment: what was believed just before and after, the
        evidence that arrived, and any evidence retracted since."""
        change = await rippl.why_changed(agent, topic, at, known_at=known_at)
        return WhyChanged(change=change, explanation=change.explain())

    @tool(read_only=True, idempotent=True, title="What if some evidence never existed")
    async def what_if(
        agent: Annotated[Id, Field(description="The agent.")],
        topic: Annotated[Id, Field(description="The topic.")],
        without: Annotated[list[Id], Field(min_length=1, max_length=MAX_IDS,
                                           description="Evidence source ids to leave out.")],
        as_of: Annotated[Time | None, Field(description="Valid time; default now.")] = None,
        known_at: Annotated[Time | None, Field(description="Transaction time; default now.")] = None,
    ) -> WhatIfAnswer:
        """What the agent would believe about a topic had these sources never existed. Computed
        without touching the graph."""
        result = await rippl.what_if(agent, topic, without=without, as_of=as_of, known_at=known_at)
        return WhatIfAnswer(changed=result.changed, result=result, explanation=result.explain())

    @tool(read_only=True, idempotent=True, title="Status history of a node")
    async def history(
        node_id: Annotated[Id, Field(description="Any node id.")],
        known_at: Annotated[Time | None, Field(description="As Rippl knew it then; default now.")] = None,
    ) -> History:
        """Every recorded status change of a node (creation, retraction, review, reinstatement),
        with when it took effect and when it was recorded."""
        changes = await rippl.history(node_id, known_at=known_at)
        return History(node=node_id, count=len(changes), changes=[HistoryEntry.of(c) for c in changes])
