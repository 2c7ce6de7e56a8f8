"""The review gate: propose a retraction, a retraction by provenance or a one-call override of a veto
(as the calling client), the queue, the receipt chain, and (only when the server is started with a
reviewer) approve and reject retractions of one claim. An override and a retraction by provenance
are only proposed over MCP: a person approves them elsewhere."""

# No `from __future__ import annotations` here: the MCP server reads the tool signatures at registration.

from typing import Annotated, Any, Literal

from pydantic import Field

from rippl_core.client import AsyncRippl
from rippl_core.errors import InvalidInputError
from rippl_core.mcp.common import Id, Registrar, Text, caller, client_identity
from rippl_core.mcp.models import ReviewDecision, ReviewList
from rippl_core.mcp.sdk import Context
from rippl_core.mcp.session import Sessions
from rippl_core.models import (
    ConsistencyProof,
    InclusionProof,
    Receipt,
    ReceiptCheck,
    ReviewItem,
    ToolCall,
    TreeHead,
)


def register(rippl: AsyncRippl, tool: Registrar, sessions: Sessions, *, allow_review: bool,
             reviewer: str | None, reviewer_key: bytes | None = None) -> None:
    """Register the review tools; approve/reject only with `allow_review`, and a `reviewer` (whose
    decisions are signed with `reviewer_key` when given) or OAuth (the token names the reviewer)."""

    @tool(read_only=False, title="Propose retracting a claim")
    async def propose_retraction(
        claim_id: Annotated[Id, Field(description="The claim (or source) you believe is false.")],
        reason: Annotated[Text, Field(description="Why it is false, in plain words.")],
        ctx: Context,
        evidence: Annotated[Text | None, Field(description="A pointer to the evidence (URL, "
                                                           "ticket, log line).")] = None,
        by: Annotated[Id | None, Field(description="Your agent's name, recorded under this MCP "
                                                   "client's identity: mcp:<client>/<by>.")] = None,
    ) -> ReviewItem:
        """Flag a claim as false. It and everything that would lose support become at risk (actions
        on it are blocked) until a human approves or rejects the retraction. The proposer recorded
        is always this MCP client (mcp:<client>, or mcp:<client>/<by>)."""
        return await rippl.propose_retraction(claim_id, reason=reason, evidence=evidence,
                                              by=client_identity(ctx, agent=by))

    @tool(read_only=False, title="Propose retracting everything from one provenance")
    async def propose_retraction_where(
        reason: Annotated[Text, Field(description="Why what the query matches is false (a tool "
                                                  "bug, a poisoned page, a compromised agent).")],
        ctx: Context,
        tool: Annotated[Id | None, Field(description="Readings of this tool.")] = None,
        args: Annotated[dict[str, Any] | None, Field(description="Readings whose arguments "
                                                                 "include these.")] = None,
        since: Annotated[str | None, Field(description="Read at or after this time (ISO 8601 "
                                                       "with an offset).")] = None,
        until: Annotated[str | None, Field(description="Read before this time.")] = None,
        run: Annotated[Id | None, Field(description="Read by this run.")] = None,
        agent: Annotated[Id | None, Field(description="Read by a run of this agent.")] = None,
        framework: Annotated[Id | None, Field(description="Read by a run of this framework.")] = None,
        source_kind: Annotated[Id | None, Field(description="Sources of this kind (tool_result "
                                                            "for readings).")] = None,
        source_prefix: Annotated[Id | None, Field(description="Sources whose id or uri, or "
                                                              "readings one of whose arguments, "
                                                              "start with this (a URL prefix such "
                                                              "as https://evil.example/).")] = None,
        evidence: Annotated[Text | None, Field(description="A pointer to the evidence.")] = None,
        by: Annotated[Id | None, Field(description="Your agent's name, recorded under this MCP "
                                                   "client's identity: mcp:<client>/<by>.")] = None,
    ) -> ReviewItem:
        """Flag every source a provenance query matches as false, in one review: a tool that
        returned garbage over an interval, every page of a domain found to carry a prompt
        injection, what a compromised agent read. They and what rests on them become at risk
        until a person approves or rejects it (never over MCP). The item lists the sources, the
        claims they support, what would go out and what another source keeps. A query matching
        nothing is refused and proposes nothing. The proposer is this MCP client."""
        return await rippl.propose_retraction_where(
            reason=reason, by=client_identity(ctx, agent=by), evidence=evidence, tool=tool,
            args=args, since=since, until=until, run=run, agent=agent, framework=framework,
            source_kind=source_kind, source_prefix=source_prefix)

    @tool(read_only=False, title="Propose overriding a veto for one call")
    async def propose_override(
        ctx: Context,
        tool: Annotated[Id, Field(description="The vetoed tool, as given to check_premises.")],
        reason: Annotated[Text, Field(description="Why this one call should run although premises "
                                                  "it rests on were retracted.")],
        args: Annotated[dict[str, Any] | None, Field(description="Its arguments, as checked.")] = None,
        by: Annotated[Id | None, Field(description="Your agent's name, recorded under this MCP "
                                                   "client's identity: mcp:<client>/<by>.")] = None,
    ) -> ReviewItem:
        """Ask a person to let one vetoed call of your run run once, despite the retracted
        premises that vetoed it. Only a person approves it, outside the agent's reach (no MCP
        tool approves an override); once approved, your next check_premises of that tool and
        those args in this run is allowed, once. The proposer recorded is this MCP client."""
        client = sessions.of(ctx)
        return await rippl.override(ToolCall(name=tool, args=args or {}), run=client.run.id,
                                    reason=reason, by=client_identity(ctx, agent=by))

    @tool(read_only=True, idempotent=True, title="List review items")
    async def list_reviews(
        status: Annotated[Literal["pending", "approved", "rejected", "all"],
                          Field(description="Which reviews to list.")] = "pending",
    ) -> ReviewList:
        """The human review queue of proposed retractions (pending by default), each with the ids it
        would invalidate."""
        items = await rippl.reviews(None if status == "all" else status)
        return ReviewList(status=status, count=len(items), reviews=items)

    @tool(read_only=True, idempotent=True, title="Verify the receipt chain")
    async def verify_receipts() -> ReceiptCheck:
        """Re-walk the tamper-evident chain of receipts (every approved, rejected or direct
        retraction and reinstatement); reports any edited, deleted, inserted or reordered one."""
        return await rippl.verify_receipts()

    @tool(read_only=True, idempotent=True, title="The receipt log's tree head")
    async def log_head() -> TreeHead:
        """The receipt log's current tree head (RFC 9162 Merkle tree): how many receipts it
        holds and its root hash. Keep it to check later that the log only grew."""
        return await rippl.tree_head()

    @tool(read_only=True, idempotent=True, title="Prove a receipt is in the log")
    async def prove_receipt(
        receipt: Annotated[Id, Field(description="The receipt id (RCP-...).")],
        tree_size: Annotated[int | None, Field(ge=1, description="Prove against the log of this "
                                                                 "many receipts (default: all).")] = None,
    ) -> InclusionProof:
        """The inclusion proof of a receipt: its leaf hash and the audit path to the root of the
        log's Merkle tree (RFC 9162), checkable by anyone holding that root."""
        return await rippl.prove(receipt, tree_size=tree_size)

    @tool(read_only=True, idempotent=True, title="Prove the log only grew")
    async def log_consistency(
        old_size: Annotated[int, Field(ge=0, description="The size of an earlier tree head.")],
        new_size: Annotated[int | None, Field(ge=0, description="A later size (default: now).")] = None,
    ) -> ConsistencyProof:
        """The consistency proof between two sizes of the receipt log: that the later log extends
        the earlier one, nothing changed or removed (RFC 9162)."""
        return await rippl.consistency(old_size, new_size=new_size)

    # human decisions (opt-in)

    if allow_review:

        def decider(ctx: Context) -> tuple[str, str | None]:
            """Who decides: the person the request's token names (with OAuth; the HTTP gate let
            only a reviewer's token through), else the reviewer the server was started with."""
            principal = caller(ctx)
            if principal is not None:
                return principal.subject, principal.name
            assert reviewer is not None
            return reviewer, None

        def decided(receipt: Receipt, decision: str) -> ReviewDecision:
            return ReviewDecision(review=receipt.review or "", decision=decision, decided_by=receipt.actor,
                                  receipt=receipt.id, receipt_hash=receipt.hash,
                                  changes=list(receipt.body.get("affected", [])))

        @tool(read_only=False, destructive=True, title="Approve a retraction")
        async def approve_review(
            review_id: Annotated[Id, Field(description="The review id (REV-...).")],
            ctx: Context,
            note: Annotated[Text | None, Field(description="A note kept in the receipt.")] = None,
        ) -> ReviewDecision:
            """Approve a proposed retraction: what rests only on the claim is invalidated. The
            receipt names the reviewer this server was started with (with OAuth: the reviewer
            the token names). An override of a veto is not approved here: a person approves it
            (rippl review approve, or the console)."""
            kind = (await rippl.review(review_id)).kind
            if kind != "retraction":
                what = ("overriding a veto" if kind == "override"
                        else "retracting everything from one provenance")
                raise InvalidInputError(
                    f"{review_id} proposes {what}; over MCP it can only be proposed. A person "
                    f"approves it outside the agent's reach: `rippl review approve {review_id} "
                    "--by NAME`, or the review console. Nothing was done.")
            who, name = decider(ctx)
            return decided(await rippl.approve(review_id, by=who, note=note,
                                               signing_key=reviewer_key, by_name=name), "approved")

        @tool(read_only=False, title="Reject a retraction")
        async def reject_review(
            review_id: Annotated[Id, Field(description="The review id (REV-...).")],
            ctx: Context,
            note: Annotated[Text | None, Field(description="A note kept in the receipt.")] = None,
        ) -> ReviewDecision:
            """Reject a proposed retraction: the at-risk nodes return to what they were."""
            who, name = decider(ctx)
            return decided(await rippl.reject(review_id, by=who, note=note,
                                              signing_key=reviewer_key, by_name=name), "rejected")

        @tool(read_only=False, title="Resolve a compensation")
        async def resolve_compensation(
            ctx: Context,
            action: Annotated[Id, Field(description="The executed action (as list_compensations "
                                                    "names it).")],
            resolution: Annotated[Literal["compensated", "not needed"],
                                  Field(description="How it was resolved.")],
            note: Annotated[Text, Field(description="What was done, or why nothing is needed; "
                                                    "kept in the receipt.")],
            attempt: Annotated[Id | None, Field(description="The reported attempt (ATT-...) this "
                                                            "confirms.")] = None,
        ) -> Receipt:
            """Resolve an open compensation as the reviewer this server was started with (with
            OAuth: the reviewer the token names): a receipt in the chain."""
            who, _ = decider(ctx)
            return await rippl.resolve_compensation(action, resolution=resolution, note=note,
                                                    by=who, attempt=attempt,
                                                    signing_key=reviewer_key)
