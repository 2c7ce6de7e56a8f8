"""Tools an agent can call to tell Rippl what it learned.

`retraction_tool(memory)` lets the model flag a claim it has evidence against: it proposes the
retraction through the core review gate (the claim and what rests on it go AT_RISK until a human
decides). It is idempotent: while a review of the claim is pending, calling it again returns that
review instead of opening a second one, so a re-run node or a repeated model turn never duplicates
a proposal.
"""

from __future__ import annotations

import asyncio
import json

from langchain_core.tools import BaseTool, StructuredTool

from rippl_core import AsyncRippl, Rippl
from rippl_core.errors import RipplError
from rippl_core.models import ReviewItem
from rippl_langgraph.guard import Memory


def _describe(item: ReviewItem, *, existing: bool) -> str:
    return json.dumps({"review": item.id, "claim": item.claim, "status": item.status,
                       "already_pending": existing, "at_risk": list(item.at_risk),
                       "note": "a human will approve or reject this retraction"})


def propose_once(memory: Rippl, claim: str, reason: str, by: str,
                 evidence: str | None = None) -> tuple[ReviewItem, bool]:
    """Propose retracting `claim` unless a review of it is already pending; (item, existed)."""
    for item in memory.reviews("pending"):
        if item.claim == claim:
            return item, True
    return memory.propose_retraction(claim, reason=reason, by=by, evidence=evidence), False


async def apropose_once(memory: Memory, claim: str, reason: str, by: str,
                        evidence: str | None = None) -> tuple[ReviewItem, bool]:
    if isinstance(memory, Rippl):
        return await asyncio.to_thread(propose_once, memory, claim, reason, by, evidence)
    for item in await memory.reviews("pending"):
        if item.claim == claim:
            return item, True
    return await memory.propose_retraction(claim, reason=reason, by=by, evidence=evidence), False


def retraction_tool(memory: Memory, *, by: str = "agent", name: str = "propose_retraction") -> BaseTool:
    """A tool the model calls with (claim_id, reason, evidence) to flag a claim as false."""

    def run(claim_id: str, reason: str, evidence: str | None = None) -> str:
        if isinstance(memory, AsyncRippl):
            raise RipplError("this tool was given an AsyncRippl handle; run the graph with ainvoke")
        try:
            item, existed = propose_once(memory, claim_id, reason, by, evidence)
        except RipplError as exc:
            return f"could not propose retracting {claim_id}: {exc}"
        return _describe(item, existing=existed)

    async def arun(claim_id: str, reason: str, evidence: str | None = None) -> str:
        try:
            item, existed = await apropose_once(memory, claim_id, reason, by, evidence)
        except RipplError as exc:
            return f"could not propose retracting {claim_id}: {exc}"
        return _describe(item, existing=existed)

    return StructuredTool.from_function(
        func=run, coroutine=arun, name=name,
        description=("Flag a claim you have evidence against (claim_id, reason, evidence). Its "
                     "retraction waits for a human; what rests on it is blocked meanwhile."))
