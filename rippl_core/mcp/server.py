"""The FastMCP server over one `AsyncRippl` handle.

Every tool is a thin call into the core API; a Rippl error becomes an MCP tool error (the client
sees `isError` with the message) and nothing is written, because every core write is atomic.
Approving and rejecting reviews are tools only when the server is started with `allow_review=True`
and a `reviewer` identity: by default that decision belongs to a human, outside the agent's reach.
"""

# No `from __future__ import annotations` here: FastMCP reads the tool signatures at registration.

import contextlib
import functools
import importlib.metadata
import os
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from enum import StrEnum
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Self, Union, get_args, get_origin
from urllib.parse import unquote

import anyio
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.fastmcp.utilities.func_metadata import FuncMetadata
from mcp.types import ToolAnnotations
from pydantic import Field

from rippl_core.client import AsyncRippl
from rippl_core.errors import InvalidInputError, RipplError
from rippl_core.explain import Explanation
from rippl_core.mcp.models import (
    BeliefAnswer,
    BeliefDropped,
    BlastRadius,
    CheckResult,
    History,
    HistoryEntry,
    NodeInfo,
    ReachedInfo,
    ReviewDecision,
    ReviewList,
    Timeline,
    WhatIfAnswer,
    WhyChanged,
)
from rippl_core.models import Policy, Receipt, ReceiptCheck, ReviewItem, ToolCall
from rippl_core.temporal_models import Belief
from rippl_core.validation import MAX_ID_LENGTH, MAX_TEXT_LENGTH, check_actor

MAX_IDS = 1000
REVIEW_TOOLS = ("approve_review", "reject_review")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)]
Ids = Annotated[list[Id], Field(max_length=MAX_IDS)]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_LENGTH)]
Time = Annotated[str, Field(min_length=1, max_length=64,
                            description="ISO-8601 with a time zone, e.g. 2026-10-08T09:00:00Z.")]


class Transport(StrEnum):
    STDIO = "stdio"
    HTTP = "http"


INSTRUCTIONS = """\
Rippl is a causal memory: it records what each decision and action rests on (sources -> claims ->
decisions -> actions) and vetoes an action when a premise under it has been retracted.
Before any high-risk or irreversible tool call (deleting, migrating, deploying, paying, notifying
people), call check_premises with the tool name and the exact arguments you will pass (or the
action id). If it answers safe=false, do not make the call: read `explanation`, tell the user which
premise failed, and choose an action that does not rest on it. If you learn that a claim is false,
call propose_retraction; a human approves or rejects it. Record your own reasoning with add_claim,
add_decision and add_action so later checks can protect it. explain says why a node holds or not;
blast_radius says what rests on a node. record_belief / ask_belief / timeline / why_changed / what_if
keep what an agent believed about a topic and when (times are ISO-8601 with a time zone)."""

PROMPT = """\
You can call Rippl, a memory of what each of your decisions rests on.

Before you call any high-risk tool{tools}, first call `check_premises` with `tool` set to the tool's
name and `args` set to exactly the arguments you will pass (or `target` set to the action id).
- safe=true: go ahead.
- safe=false: do NOT call the tool. Read `explanation`: it names each retracted or at-risk premise
  and the trail from it to the action. Tell the user what changed, and pick an alternative that does
  not rest on the failed premise (check that one too). Never retry the same call hoping it passes.
- A status of Unknown means the call is not recorded in the graph, or the graph could not be
  read: treat it as unsafe until the action is recorded with add_action or the graph is reachable.

When you learn that something you relied on is false, call `propose_retraction` with the claim id
and the reason; a human reviews it. Use `explain` to see why a node holds or not, and
`blast_radius` to see what rests on it. Record new reasoning with add_claim / add_decision /
add_action so that it is protected too."""


def client_identity(ctx: Context) -> str:
    """Who is calling: `mcp:<client name>` from the client's initialize handshake."""
    try:
        params = ctx.session.client_params
    except Exception:  # no session (called outside a request)
        params = None
    name = params.clientInfo.name if params is not None else ""
    clean = "".join(ch for ch in name if ch.isprintable()).strip()[:100]
    return f"mcp:{clean}" if clean else "mcp:client"


def _tool_errors[R](fn: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """Turn a Rippl error into an MCP tool error naming its type (the message says what to do)."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> R:
        try:
            return await fn(*args, **kwargs)
        except RipplError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    return wrapper


def accepts_text(annotation: Any) -> bool:
    """Whether a parameter annotation takes a string (str, an Annotated str, or a union with one)."""
    if get_origin(annotation) is Annotated:
        return accepts_text(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        return any(accepts_text(a) for a in get_args(annotation))
    return annotation is str


class KeepText(FuncMetadata):
    """FastMCP decodes string arguments that look like JSON when the parameter is not exactly `str`
    (for clients that send lists as JSON text), so an optional id or note "null" became None and
    "[1]" a list. Strings given to parameters that take text are kept as sent."""

    @classmethod
    def of(cls, meta: FuncMetadata) -> Self:
        return cls(arg_model=meta.arg_model, output_schema=meta.output_schema,
                   output_model=meta.output_model, wrap_output=meta.wrap_output)

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = super().pre_parse_json(data)
        fields = self.arg_model.model_fields
        for key, value in data.items():
            if isinstance(value, str) and key in fields and accepts_text(fields[key].annotation):
                parsed[key] = value
        return parsed


class RipplMCP(FastMCP[Any]):
    """FastMCP with a clear refusal for the review tools when they are not enabled, and for
    arguments a tool does not take (a misspelt `source` must not silently record a claim without
    its source)."""

    review_enabled: bool = False

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        if name in REVIEW_TOOLS and not self.review_enabled:
            raise ToolError(
                f"{name} is not available: approving or rejecting a proposed retraction is a human "
                "decision. A person runs `rippl review approve REVIEW_ID --by NAME` (or reject), or "
                "starts this server with --allow-review --reviewer NAME."
            )
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            known = tool.parameters.get("properties", {})
            unknown = sorted(str(k)[:MAX_ID_LENGTH] for k in arguments if k not in known)
            if unknown:
                raise ToolError(f"{name} takes no argument {', '.join(map(repr, unknown))}; its "
                                f"arguments are: {', '.join(known)}. Nothing was done.")
        return await super().call_tool(name, arguments)


def _rippl_version() -> str:
    try:
        return importlib.metadata.version("rippl-core")
    except importlib.metadata.PackageNotFoundError:
        return "0"


def check_review_options(allow_review: bool, reviewer: str | None) -> str | None:
    """The reviewer identity when review tools are enabled; refuses inconsistent options."""
    if allow_review and reviewer is None:
        raise InvalidInputError("--allow-review needs --reviewer NAME: every approval's receipt "
                                "names the person who decided it")
    if reviewer is not None and not allow_review:
        raise InvalidInputError("--reviewer only applies with --allow-review (the review tools are "
                                "off by default)")
    return check_actor(reviewer, what="reviewer") if reviewer is not None else None


def build_server(rippl: AsyncRippl, *, allow_review: bool = False, reviewer: str | None = None,
                 **settings: Any) -> RipplMCP:
    """A FastMCP server whose tools run on `rippl`. `settings` go to FastMCP (host, port,
    log_level...). The review tools exist only with `allow_review=True` and a `reviewer`."""
    reviewer = check_review_options(allow_review, reviewer)
    server = RipplMCP(name="rippl", instructions=INSTRUCTIONS, **settings)
    server.review_enabled = allow_review
    server._mcp_server.version = _rippl_version()  # FastMCP would report the SDK's version

    def tool(*, read_only: bool, title: str, idempotent: bool = False,
             destructive: bool = False) -> Callable[[Callable[..., Awaitable[Any]]], Any]:
        hints = ToolAnnotations(title=title, readOnlyHint=read_only, idempotentHint=idempotent,
                                destructiveHint=destructive, openWorldHint=False)

        def register(fn: Callable[..., Awaitable[Any]]) -> Any:
            server.add_tool(_tool_errors(fn), title=title, annotations=hints, structured_output=True)
            return fn

        return register

    # ------------------------------------------------------------------ safety (read-only)

    @tool(read_only=True, idempotent=True, title="Check the premises of an action")
    async def check_premises(
        target: Annotated[Id | None, Field(description="An action or decision id, e.g. ACT-001.")] = None,
        tool: Annotated[Id | None, Field(description="Instead of target: the name of the tool you "
                                                     "are about to call.")] = None,
        args: Annotated[dict[str, Any] | None, Field(description="With tool: exactly the arguments "
                                                                 "you are about to pass.")] = None,
        as_of: Annotated[Time | None, Field(description="Audits only: was it safe at this time? "
                                                        "Leave empty before acting.")] = None,
        known_at: Annotated[Time | None, Field(description="Audits only: as Rippl knew it at this "
                                                           "time.")] = None,
    ) -> CheckResult:
        """Pre-flight check before a high-risk tool call: is every premise under it still valid?
        Give an action or decision id as `target`, or the `tool` name and its `args`. Fails closed:
        an unknown action, or a graph that cannot be read, is unsafe."""
        if (target is None) == (tool is None):
            raise InvalidInputError("give either target (an action or decision id) or tool (with its "
                                    "args), exactly one of them")
        if args is not None and tool is None:
            raise InvalidInputError("args go with tool; to check an action by id pass only target")
        subject: str | ToolCall = ToolCall(name=tool, args=args or {}) if tool is not None else target  # type: ignore[assignment]
        return CheckResult.of(await rippl.check(subject, as_of=as_of, known_at=known_at))

    @tool(read_only=True, idempotent=True, title="Blast radius of a node")
    async def blast_radius(
        node_id: Annotated[Id, Field(description="Any node id: source, claim, decision or action.")],
        max_depth: Annotated[int | None, Field(ge=1, description="Stop after this many levels.")] = None,
        limit: Annotated[int, Field(ge=1, le=10_000, description="List at most this many nodes.")] = 200,
    ) -> BlastRadius:
        """Everything that rests on a node, directly or at any depth: what would be invalidated if
        it were retracted. Nearest first, each with one trail from the node."""
        root = await rippl.get(node_id)
        reached = await rippl.blast_radius(node_id, max_depth=max_depth)
        return BlastRadius(root=root.id, root_status=root.status, count=len(reached),
                           truncated=len(reached) > limit,
                           by_kind=dict(Counter(r.kind.value for r in reached)),
                           nodes=[ReachedInfo.of(r) for r in reached[:limit]])

    @tool(read_only=True, idempotent=True, title="Explain a node's status")
    async def explain(
        node_id: Annotated[Id, Field(description="The node to explain.")],
    ) -> Explanation:
        """Why a node is valid or not: each of its justifications with every antecedent's status,
        which one holds, and the retracted or at-risk premises underneath with their trails."""
        return await rippl.explain(node_id)

    # ------------------------------------------------------------------ review gate

    @tool(read_only=False, title="Propose retracting a claim")
    async def propose_retraction(
        claim_id: Annotated[Id, Field(description="The claim (or source) you believe is false.")],
        reason: Annotated[Text, Field(description="Why it is false, in plain words.")],
        ctx: Context,
        evidence: Annotated[Text | None, Field(description="A pointer to the evidence (URL, "
                                                           "ticket, log line).")] = None,
        by: Annotated[Id | None, Field(description="Who proposes it (your agent name). Defaults "
                                                   "to this MCP client's name as mcp:<client>.")] = None,
    ) -> ReviewItem:
        """Flag a claim as false. It and everything that would lose support become at risk (actions
        on it are blocked) until a human approves or rejects the retraction."""
        return await rippl.propose_retraction(claim_id, reason=reason, evidence=evidence,
                                              by=by if by is not None else client_identity(ctx))

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

    # ------------------------------------------------------------------ belief memory (bitemporal)

    def describe(belief: Belief | None, none: str) -> str:
        return belief.describe() if belief is not None else none

    @tool(read_only=False, title="Record a belief")
    async def record_belief(
        agent: Annotated[Id, Field(description="The agent that holds the belief.")],
        claim_id: Annotated[Id, Field(description="The claim it believes (record it with add_claim).")],
        topic: Annotated[Id, Field(description="What the belief is about, e.g. billing-home-shard. "
                                               "One belief per agent and topic at a time.")],
        valid_from: Annotated[Time | None, Field(description="Since when it holds; default now.")] = None,
        evidence: Annotated[Ids | None, Field(description="Source ids that made the agent adopt it.")] = None,
        note: Annotated[Text | None, Field(description="Why, in plain words.")] = None,
    ) -> Belief:
        """Record that an agent believes a claim about a topic from a time on. Adopting a new claim
        on the topic closes the previous belief's interval; history is kept, never deleted."""
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
        return BeliefAnswer(found=belief is not None, belief=belief,
                            summary=describe(belief, f"{agent} held no belief about {topic} then"))

    @tool(read_only=True, idempotent=True, title="Timeline of a belief")
    async def timeline(
        agent: Annotated[Id, Field(description="The agent.")],
        topic: Annotated[Id, Field(description="The topic.")],
        known_at: Annotated[Time | None, Field(description="As Rippl knew it then; default now.")] = None,
    ) -> Timeline:
        """Every interval of the agent's belief about a topic, oldest first."""
        beliefs = await rippl.timeline(agent, topic, known_at=known_at)
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

    # ------------------------------------------------------------------ recording reasoning

    @tool(read_only=False, idempotent=True, title="Record a source")
    async def add_source(
        title: Annotated[Text, Field(description="What the source is, e.g. 'Grafana shard-09 "
                                                 "dashboard, 09:00 UTC'.")],
        id: Annotated[Id | None, Field(description="Its id; derived from the title if omitted.")] = None,
        uri: Annotated[Text | None, Field(description="Where it can be found.")] = None,
        kind: Annotated[Id | None, Field(description="document, telemetry, person, ticket...")] = None,
    ) -> NodeInfo:
        """Record a source of evidence (a document, dashboard, person, ticket) that claims rest on."""
        return NodeInfo.of(await rippl.add_source(id, title, uri=uri, kind=kind))

    @tool(read_only=False, idempotent=True, title="Record a claim")
    async def add_claim(
        text: Annotated[Text, Field(description="The statement, e.g. 'Shard 09 is healthy'.")],
        id: Annotated[Id | None, Field(description="Its id; derived from the text if omitted "
                                                    "(the same statement gets the same id).")] = None,
        sources: Annotated[Ids | None, Field(description="Source ids; each alone supports it.")] = None,
        derived_from: Annotated[Ids | None, Field(description="Claim ids it is inferred from "
                                                              "(all needed).")] = None,
    ) -> NodeInfo:
        """Record a claim you rely on, with the sources that assert it or the claims it is derived
        from. Re-adding the same claim changes nothing."""
        return NodeInfo.of(await rippl.add_claim(id, text, sources=sources or (),
                                                 derived_from=derived_from or ()))

    @tool(read_only=False, idempotent=True, title="Record a decision")
    async def add_decision(
        title: Annotated[Text, Field(description="What was decided.")],
        id: Annotated[Id | None, Field(description="Its id; derived from the title if omitted.")] = None,
        premises: Annotated[Ids | None, Field(description="Claim or decision ids it rests on "
                                                          "(all needed).")] = None,
        depends_on: Annotated[Ids | None, Field(description="Decision ids it depends on.")] = None,
    ) -> NodeInfo:
        """Record a decision and the claims (or decisions) it rests on: if any is retracted, the
        decision no longer holds."""
        return NodeInfo.of(await rippl.add_decision(id, title, premises=premises or (),
                                                    depends_on=depends_on or ()))

    @tool(read_only=False, idempotent=True, title="Record an action")
    async def add_action(
        title: Annotated[Text, Field(description="What the action does.")],
        id: Annotated[Id | None, Field(description="Its id; derived from the title if omitted.")] = None,
        decisions: Annotated[Ids | None, Field(description="Decision ids that drive it (all "
                                                           "needed).")] = None,
        tool: Annotated[Id | None, Field(description="The tool that executes it, so check_premises "
                                                     "can match a tool call.")] = None,
        args: Annotated[dict[str, Any] | None, Field(description="The tool's arguments; omit to "
                                                                 "match any arguments.")] = None,
        triggers: Annotated[Ids | None, Field(description="Action ids that must run before it.")] = None,
    ) -> NodeInfo:
        """Record an action (a tool call you plan to make) and the decisions behind it, so that
        check_premises can veto it when a premise is retracted."""
        return NodeInfo.of(await rippl.add_action(id, title, decisions=decisions or (), tool=tool,
                                                  args=args, triggers=triggers or ()))

    # ------------------------------------------------------------------ human decisions (opt-in)

    if allow_review:
        assert reviewer is not None
        who: str = reviewer

        def decided(receipt: Receipt, decision: str) -> ReviewDecision:
            return ReviewDecision(review=receipt.review or "", decision=decision, decided_by=receipt.actor,
                                  receipt=receipt.id, receipt_hash=receipt.hash,
                                  changes=list(receipt.body.get("affected", [])))

        @tool(read_only=False, destructive=True, title="Approve a retraction")
        async def approve_review(
            review_id: Annotated[Id, Field(description="The review id (REV-...).")],
            note: Annotated[Text | None, Field(description="A note kept in the receipt.")] = None,
        ) -> ReviewDecision:
            """Approve a proposed retraction: what rests only on the claim is invalidated. The
            receipt names the reviewer this server was started with."""
            return decided(await rippl.approve(review_id, by=who, note=note), "approved")

        @tool(read_only=False, title="Reject a retraction")
        async def reject_review(
            review_id: Annotated[Id, Field(description="The review id (REV-...).")],
            note: Annotated[Text | None, Field(description="A note kept in the receipt.")] = None,
        ) -> ReviewDecision:
            """Reject a proposed retraction: the at-risk nodes return to what they were."""
            return decided(await rippl.reject(review_id, by=who, note=note), "rejected")

    # ------------------------------------------------------------------ resources and prompt

    @server.resource("rippl://node/{node_id}", name="node", mime_type="application/json",
                     description="One node of the causal graph with its status and justifications "
                                 "(percent-encode ids with reserved characters).")
    async def node_resource(node_id: str) -> str:
        return NodeInfo.of(await rippl.get(unquote(node_id))).model_dump_json(indent=2)

    @server.resource("rippl://reviews/pending", name="pending_reviews", mime_type="application/json",
                     description="Proposed retractions awaiting a human decision.")
    async def pending_reviews() -> str:
        items = await rippl.reviews("pending")
        return ReviewList(status="pending", count=len(items), reviews=items).model_dump_json(indent=2)

    @server.prompt(name="check_before_acting", title="Check premises before acting",
                   description="Tells an agent to call check_premises before any high-risk tool.")
    def check_before_acting(
        high_risk_tools: Annotated[str, Field(description="Comma-separated names of the tools to "
                                                          "guard (optional).", max_length=2000)] = "",
    ) -> str:
        names = [n.strip() for n in high_risk_tools.split(",") if n.strip()]
        listed = f" (in particular: {', '.join(names)})" if names else ""
        return PROMPT.format(tools=listed)

    for registered in server._tool_manager.list_tools():
        registered.fn_metadata = KeepText.of(registered.fn_metadata)
    return server


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send file descriptor 1 to stderr for the duration: on stdio, stdout is the protocol stream,
    and starting the embedded database must never write to it."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


async def serve_async(*, db: str | os.PathLike[str] | None = None, url: str | None = None,
                      graph: str = "rippl", transport: Transport | str = Transport.STDIO,
                      host: str = "127.0.0.1", port: int = 8000, allow_review: bool = False,
                      reviewer: str | None = None, log_level: str = "WARNING",
                      policy: Policy | None = None) -> None:
    """Open the graph, serve it over stdio or streamable HTTP until the client leaves or the
    process is stopped, then close the graph."""
    transport = Transport(transport)
    check_review_options(allow_review, reviewer)
    if log_level.upper() not in LOG_LEVELS:
        raise InvalidInputError(f"log level must be one of {', '.join(LOG_LEVELS)}")
    guard = stdout_to_stderr() if transport is Transport.STDIO else contextlib.nullcontext()
    with guard:
        rippl = await AsyncRippl.open(Path(db) if db is not None else None, url=url, graph=graph,
                                      policy=policy)
    try:
        server = build_server(rippl, allow_review=allow_review, reviewer=reviewer, host=host,
                              port=port, log_level=log_level.upper())
        if transport is Transport.STDIO:
            await server.run_stdio_async()
        else:
            await server.run_streamable_http_async()
    finally:
        await rippl.close()


def serve(**options: Any) -> None:
    """Blocking `serve_async` (see there for the options)."""
    anyio.run(functools.partial(serve_async, **options))
