"""Tools an agent can call to tell Rippl what it learned.

`retraction_tool(memory)` lets the model flag a claim it has evidence against: it proposes the
retraction through the core review gate (the claim and what rests on it go AT_RISK until a human
decides). It is idempotent: while a review of the claim is pending, calling it again returns that
review instead of opening a second one, so a re-run node or a repeated model turn never duplicates
a proposal.
"""

from __future__ import annotations

import json

from langchain_core.tools import BaseTool, StructuredTool

from rippl_core import ReviewItem, Rippl, RipplError
from rippl_core.adapters import Call, Calls, arun_calls, run_calls, sync_handle
from rippl_langgraph.guard import Memory


def _describe(item: ReviewItem, *, existing: bool) -> str:
    return json.dumps({"review": item.id, "claim": item.claim, "status": item.status,
                       "already_pending": existing, "at_risk": list(item.at_risk),
                       "note": "a human will approve or reject this retraction"})


def _propose_once(claim: str, reason: str, by: str,
                  evidence: str | None) -> Calls[tuple[ReviewItem, bool]]:
    """Propose retracting `claim` unless a review of it is already pending; (item, existed)."""
    for item in (yield Call("reviews", ("pending",))):
        if item.claim == claim:
            return item, True
    proposed = yield Call("propose_retraction", (claim,),
                          {"reason": reason, "by": by, "evidence": evidence})
    return proposed, False


def propose_once(memory: Rippl, claim: str, reason: str, by: str,
                 evidence: str | None = None) -> tuple[ReviewItem, bool]:
    """Propose retracting `claim` unless a review of it is already pending; (item, existed)."""
    return run_calls(memory, _propose_once(claim, reason, by, evidence))


async def apropose_once(memory: Memory, claim: str, reason: str, by: str,
                        evidence: str | None = None) -> tuple[ReviewItem, bool]:
    """The async twin of `propose_once` (a sync handle runs in a worker thread)."""
    return await arun_calls(memory, _propose_once(claim, reason, by, evidence))


def retraction_tool(memory: Memory, *, by: str = "agent", name: str = "propose_retraction") -> BaseTool:
    """A tool the model calls with (claim_id, reason, evidence) to flag a claim as false."""

    def run(claim_id: str, reason: str, evidence: str | None = None) -> str:
        try:
            rippl = sync_handle(memory, hint="run the graph with ainvoke")
            item, existed = propose_once(rippl, claim_id, reason, by, evidence)
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
