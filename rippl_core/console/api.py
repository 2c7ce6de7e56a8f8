"""The console's JSON API: one route per core operation, over the app's `AsyncRippl` handle.

Reads go through `reader` (open on loopback), state changes through `reviewer` (an authenticated
reviewer, whose name is the only identity a receipt or a proposal ever records); both are request
dependencies of `access.py`."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from rippl_core.beliefs.models import Belief, BeliefChange, WhatIf
from rippl_core.causal.explain import Explanation
from rippl_core.console import monitors, views
from rippl_core.console.access import (
    COOKIE,
    Proposing,
    Read,
    Reviewer,
    SignedIn,
    console,
    cookie_path,
    decide,
    display_name,
    session_of,
)
from rippl_core.console.auth import Session
from rippl_core.console.notify import DeliveryStatus
from rippl_core.errors import InvalidInputError
from rippl_core.identity.roles import Role
from rippl_core.models import (
    Compensation,
    CompensationAttempt,
    ConsistencyProof,
    InclusionProof,
    Node,
    Reached,
    Receipt,
    ReceiptCheck,
    ReviewItem,
    Stats,
    StatusChange,
    TreeHead,
    Verdict,
    WhatIfRetracted,
)

GRAPH_LIMIT = 2_500  # nodes the explorer draws at once; beyond, it focuses on a neighbourhood

router: APIRouter = APIRouter(prefix="/api")


class _Body(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid")


class Login(_Body):
    token: str = Field(min_length=1, max_length=512)


class Proposal(_Body):
    claim: str = Field(description="The claim (or source) found false.")
    reason: str = Field(description="Why it is false, for the reviewer who decides.")
    evidence: str | None = None


class ProvenanceProposal(_Body):
    reason: str = Field(description="Why what the query matches is false, for the reviewer.")
    evidence: str | None = None
    tool: str | None = Field(default=None, description="Readings of this tool.")
    args: dict[str, Any] | None = Field(default=None, description="Readings whose arguments "
                                                                  "include these.")
    since: str | None = Field(default=None, description="Read at or after (ISO 8601, offset).")
    until: str | None = Field(default=None, description="Read before (ISO 8601, offset).")
    run: str | None = None
    agent: str | None = None
    framework: str | None = None
    source_kind: str | None = None
    source_prefix: str | None = Field(default=None, description="Sources whose id or uri, or "
                                      "readings one of whose arguments, start with this.")


class Ruling(_Body):
    note: str = Field(description="Why the reviewer decided so; recorded in the receipt.")
    signature: str | None = Field(default=None, description=(
        "The reviewer's Ed25519 signature (hex) of the decision's statement: the canonical JSON "
        "(sorted keys, no spaces) of {claim, kind: retraction_approved|retraction_rejected, note, "
        "proposed_by, review, reviewer}. Required when the reviewer has a key."))


class KeyRegistration(_Body):
    public_key: str = Field(description="The reviewer's Ed25519 public key (64 hex characters).")
    signature: str = Field(description="Its signature (hex) of the canonical JSON of {kind: "
                                       "key_registered, public_key, reviewer}.")


class Revocation(_Body):
    reason: str = Field(description="Why the key is revoked; recorded in the receipt.")


class SessionInfo(BaseModel):
    reviewer: str | None = Field(description="The signed-in reviewer (who decides), or null.")
    csrf: str | None = Field(description="Send it back as X-CSRF-Token on every change.")
    public_key: str | None = Field(default=None, description=(
        "The reviewer's key (as the reviewers file names it, or as the log registered it for a "
        "reviewer signed in with the identity provider): decisions must be signed with it."))
    who: str | None = Field(default=None, description="Who is signed in: a reviewer's name, or "
                                                      "the identity provider's subject.")
    role: Role | None = Field(default=None, description="reviewer, proposer or reader.")
    name: str | None = Field(default=None, description="The display name the provider gives.")


class Info(BaseModel):
    graph: str = Field(description="The graph served (empty until the caller may read).")
    distinct_approver: bool = Field(description="Whoever proposed a retraction may not approve it.")
    read_open: bool
    reviewers: bool = Field(description="Whether anyone may sign in to decide (else read-only).")
    sign_in: Literal["token", "provider"] = Field(description=(
        "token: reviewers paste their token (POST /api/session); provider: people sign in with "
        "the identity provider (GET /api/oidc/login)."))
    graph_limit: int


# -- session -----------------------------------------------------------------------------------
async def _session_info(request: Request, session: Session | None) -> SessionInfo:
    if session is None:
        return SessionInfo(reviewer=None, csrf=None)
    state = console(request)
    if state.provider is None:
        key = state.reviewers.keys.get(session.who)
    else:  # no file pins a key: the one the log registered for them signs their decisions
        key = (await state.rippl.reviewer_keys()).get(session.who) \
            if session.role is Role.REVIEWER else None
    return SessionInfo(reviewer=session.who if session.role is Role.REVIEWER else None,
                       csrf=session.csrf, public_key=key, who=session.who, role=session.role,
                       name=session.name)


@router.get("/session", response_model=SessionInfo, tags=["session"])
async def get_session(request: Request) -> SessionInfo:
    """Who is signed in (their role, and the CSRF token of this session)."""
    return await _session_info(request, session_of(request))


@router.post("/session", response_model=SessionInfo, tags=["session"])
async def sign_in(body: Login, request: Request, response: Response) -> SessionInfo:
    """Exchange a reviewer token for a session cookie (HttpOnly, SameSite=Strict)."""
    state = console(request)
    if state.provider is not None:
        raise HTTPException(404, "this console signs people in with the identity provider: "
                                 "GET api/oidc/login (the Sign in button)")
    name = state.reviewers.identify(body.token)
    if name is None:
        raise HTTPException(401, "unknown reviewer token")
    session = state.sessions.open(name)
    response.set_cookie(COOKIE, session.id, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path=cookie_path(request),
                        max_age=int(state.sessions.ttl))
    return await _session_info(request, session)


@router.delete("/session", response_model=SessionInfo, tags=["session"])
def sign_out(request: Request, response: Response, _: SignedIn) -> SessionInfo:
    """End this session (its cookie and its CSRF token: a reader's too)."""
    console(request).sessions.close(request.cookies.get(COOKIE))
    response.delete_cookie(COOKIE, path=cookie_path(request))
    return SessionInfo(reviewer=None, csrf=None)


# -- the graph ---------------------------------------------------------------------------------
@router.get("/info", response_model=Info, tags=["graph"])
async def info(request: Request) -> Info:
    """How this console is configured, and (to whoever may read) which graph it serves: the page
    needs the rest before anyone signs in."""
    state = console(request)
    readable = (await decide(request, "read")).allowed
    return Info(graph=state.rippl.graph if readable else "",
                distinct_approver=state.rippl.distinct_approver, read_open=state.read_open,
                reviewers=bool(state.reviewers) or state.provider is not None,
                sign_in="provider" if state.provider is not None else "token",
                graph_limit=GRAPH_LIMIT)


@router.get("/stats", response_model=Stats, dependencies=[Read], tags=["graph"])
async def stats(request: Request) -> Stats:
    """Counts of nodes by kind and status, and of edges."""
    return await console(request).rippl.stats()


@router.get("/graph", response_model=views.GraphView, dependencies=[Read], tags=["graph"])
async def graph(request: Request,
                limit: Annotated[int, Query(ge=1, le=20_000)] = GRAPH_LIMIT) -> views.GraphView:
    """Every node and edge, up to `limit` nodes (then `truncated`: focus on a node instead)."""
    return await views.whole_graph(console(request).rippl, limit)


@router.get("/graph/focus", response_model=views.GraphView, dependencies=[Read], tags=["graph"])
async def focus(request: Request, node: str, depth: Annotated[int, Query(ge=1, le=50)] = 3,
                limit: Annotated[int, Query(ge=1, le=20_000)] = GRAPH_LIMIT) -> views.GraphView:
    """A node's neighbourhood: what it rests on and what rests on it, `depth` steps each way."""
    return await views.neighbourhood(console(request).rippl, node, depth, limit)


@router.get("/nodes/{node_id:path}/blast-radius", response_model=list[Reached],
            dependencies=[Read], tags=["graph"])
async def blast_radius(request: Request, response: Response, node_id: str,
                       max_depth: Annotated[int | None, Query(ge=1)] = None,
                       limit: Annotated[int | None, Query(ge=1)] = None) -> list[Reached]:
    """Everything downstream of a node, each with one trail from it (the nearest `limit`; the
    header `X-Total-Count` says how many there are)."""
    return _page(await console(request).rippl.blast_radius(node_id, max_depth=max_depth),
                 limit, response)


@router.get("/nodes/{node_id:path}/premises", response_model=list[Reached], dependencies=[Read],
            tags=["graph"])
async def premises(request: Request, response: Response, node_id: str,
                   max_depth: Annotated[int | None, Query(ge=1)] = None,
                   limit: Annotated[int | None, Query(ge=1)] = None) -> list[Reached]:
    """Everything upstream of a node: what it rests on, each with one trail to it (the nearest
    `limit`; the header `X-Total-Count` says how many there are)."""
    return _page(await console(request).rippl.premises(node_id, max_depth=max_depth),
                 limit, response)


def _page(reached: list[Reached], limit: int | None, response: Response) -> list[Reached]:
    """The first `limit` rows (nearest first, as `reach` orders them), the total in a header: a
    panel that lists 60 of 10,000 dependents is not sent the other 9,940."""
    response.headers["X-Total-Count"] = str(len(reached))
    return reached if limit is None else reached[:limit]


@router.get("/nodes/{node_id:path}/explain", response_model=Explanation, dependencies=[Read],
            tags=["graph"])
async def explain(request: Request, node_id: str) -> Explanation:
    """Why a node is IN, AT_RISK or OUT: its justifications and the premises underneath."""
    return await console(request).rippl.explain(node_id)


@router.get("/nodes/{node_id:path}/history", response_model=list[StatusChange],
            dependencies=[Read], tags=["graph"])
async def history(request: Request, node_id: str, known_at: str | None = None) -> list[StatusChange]:
    """Every status change of a node, with valid and transaction times."""
    return await console(request).rippl.history(node_id, known_at=known_at)


@router.get("/nodes/{node_id:path}/check", response_model=Verdict, dependencies=[Read],
            tags=["graph"])
async def check(request: Request, node_id: str) -> Verdict:
    """The pre-flight check of an action or decision (fails closed)."""
    return await console(request).rippl.check(node_id)


@router.get("/nodes/{node_id:path}", response_model=Node, dependencies=[Read], tags=["graph"])
async def node(request: Request, node_id: str) -> Node:
    """One node as stored, with its status and justifications."""
    return await console(request).rippl.get(node_id)


@router.get("/what-if-retracted", response_model=WhatIfRetracted, dependencies=[Read],
            tags=["graph"])
async def what_if_retracted(request: Request,
                            claim: Annotated[list[str], Query(min_length=1)]) -> WhatIfRetracted:
    """What would be blocked were these claims retracted (nothing is written)."""
    return await console(request).rippl.what_if_retracted(claim)


# -- reviews -----------------------------------------------------------------------------------
@router.get("/reviews", response_model=list[ReviewItem], dependencies=[Read], tags=["reviews"])
async def reviews(request: Request, status: Literal["pending", "approved", "rejected", "all"] = "pending"
                  ) -> list[ReviewItem]:
    """The review queue (pending by default), oldest first."""
    return await console(request).rippl.reviews(None if status == "all" else status)


@router.post("/reviews", response_model=ReviewItem, status_code=201, tags=["reviews"])
async def propose(request: Request, body: Proposal, who: Proposing) -> ReviewItem:
    """Propose retracting a claim, as the signed-in reviewer or a proposer (a monitor's token)."""
    return await console(request).rippl.propose_retraction(
        body.claim, reason=body.reason, by=who.name, evidence=body.evidence,
        monitor=who.name if who.monitor else None)


@router.post("/reviews/where", response_model=ReviewItem, status_code=201, tags=["reviews"])
async def propose_where(request: Request, body: ProvenanceProposal, who: Proposing) -> ReviewItem:
    """Propose retracting every source a provenance query matches, as one review (a reviewer, or a
    proposer's token). Nothing matched: 404 (NoMatchError), nothing proposed."""
    query = body.model_dump(exclude={"reason", "evidence"}, exclude_none=True)
    return await console(request).rippl.propose_retraction_where(
        reason=body.reason, by=who.name, evidence=body.evidence,
        monitor=who.name if who.monitor else None, **query)


@router.post("/alertmanager", response_model=monitors.Handled, tags=["monitors"])
async def alertmanager(request: Request, who: Proposing) -> monitors.Handled:
    """Alertmanager's webhook (payload version 4), with a proposer's token as its bearer
    credentials: each firing alert that a rule of the console's rules file matches becomes one
    pending retraction by provenance; a resolved alert changes nothing. A payload that is not the
    documented format is refused (422) before anything is proposed."""
    rules = console(request).alert_rules
    if rules is None:
        raise HTTPException(404, "this console has no alert rules: start it with --alert-rules FILE")
    try:
        body = await request.json()
    except ValueError:
        raise InvalidInputError("the body is not JSON; send Alertmanager's webhook payload "
                                "(version 4); nothing was proposed") from None
    notification = monitors.parse_notification(body)
    return await monitors.handle(console(request).rippl, notification, rules, who.name)


@router.get("/reviews/{review_id}", response_model=ReviewItem, dependencies=[Read], tags=["reviews"])
async def review(request: Request, review_id: str) -> ReviewItem:
    """One review, pending or decided."""
    return await console(request).rippl.review(review_id)


@router.get("/reviews/{review_id}/preview", response_model=views.Preview, dependencies=[Read],
            tags=["reviews"])
async def preview(request: Request, review_id: str) -> views.Preview:
    """The blast radius of approving: what would go OUT, what survives by another justification."""
    return await views.preview(console(request).rippl, review_id)


@router.post("/reviews/{review_id}/approve", response_model=Receipt, tags=["reviews"])
async def approve(request: Request, review_id: str, body: Ruling, who: Reviewer) -> Receipt:
    """Approve: the wave commits; the receipt names the signed-in reviewer (with the identity
    provider: their subject, and their display name), and carries their signed statement when
    they have a key."""
    await _signer_ready(request, who, body.signature)
    return await console(request).rippl.approve(review_id, by=who, note=_note(body),
                                                signature=body.signature,
                                                by_name=display_name(request, who))


@router.post("/reviews/{review_id}/reject", response_model=Receipt, tags=["reviews"])
async def reject(request: Request, review_id: str, body: Ruling, who: Reviewer) -> Receipt:
    """Reject: the at-risk nodes recover; the receipt names the signed-in reviewer."""
    await _signer_ready(request, who, body.signature)
    return await console(request).rippl.reject(review_id, by=who, note=_note(body),
                                               signature=body.signature,
                                               by_name=display_name(request, who))


async def _signer_ready(request: Request, who: str, signature: str | None) -> None:
    """A reviewer whom the reviewers file gives a key (with an identity provider: whose key the
    log registered) decides only signed, with that key registered in the log (fail closed: the
    console never decides unsigned in their name)."""
    state = console(request)
    if state.provider is None:
        pinned = state.reviewers.keys.get(who)
    else:
        pinned = (await state.rippl.reviewer_keys()).get(who)
    if pinned is None:
        return
    if signature is None:
        raise HTTPException(422, f"{who} has a reviewer key: sign the decision with it (load your "
                                 "key in the console, or use `rippl review approve --key FILE`)")
    registered = (await console(request).rippl.reviewer_keys()).get(who)
    if registered != pinned:
        raise HTTPException(409, f"the key the reviewers file names for {who} is not registered "
                                 "in the log yet: register it first (POST /api/keys; the console "
                                 "does it when you load your key)")


# -- reviewer keys -----------------------------------------------------------------------------
@router.get("/keys", response_model=dict[str, str], dependencies=[Read], tags=["keys"])
async def keys(request: Request) -> dict[str, str]:
    """Each reviewer's registered Ed25519 public key (hex), as the log records it."""
    return await console(request).rippl.reviewer_keys()


@router.post("/keys", response_model=Receipt, status_code=201, tags=["keys"])
async def register_key(request: Request, body: KeyRegistration, who: Reviewer) -> Receipt:
    """Register the signed-in reviewer's key (signed with it: proof that they hold it). When the
    reviewers file names a key for them, only that key."""
    pinned = console(request).reviewers.keys.get(who)
    if pinned is not None and body.public_key.lower() != pinned:
        raise HTTPException(403, f"that is not the key the reviewers file names for {who}")
    return await console(request).rippl.register_key(who, public_key=body.public_key,
                                                     signature=body.signature)


@router.post("/keys/revoke", response_model=Receipt, tags=["keys"])
async def revoke_key(request: Request, body: Revocation, who: Reviewer) -> Receipt:
    """Revoke the signed-in reviewer's own registered key (a lost or leaked key)."""
    if not body.reason.strip():
        raise HTTPException(422, "say why the key is revoked")
    return await console(request).rippl.revoke_key(who, by=who, reason=body.reason)


def _note(body: Ruling) -> str:
    if not body.note.strip():
        raise HTTPException(422, "say why: a decision needs a note for its receipt")
    return body.note


# -- receipts ----------------------------------------------------------------------------------
@router.get("/receipts", response_model=list[Receipt], dependencies=[Read], tags=["receipts"])
async def receipts(request: Request) -> list[Receipt]:
    """The receipt chain, in order."""
    return await console(request).rippl.receipts()


@router.get("/receipts/verify", response_model=ReceiptCheck, dependencies=[Read], tags=["receipts"])
async def verify(request: Request) -> ReceiptCheck:
    """Re-walk the chain: every edited, deleted, inserted or reordered receipt is reported."""
    return await console(request).rippl.verify_receipts()


@router.get("/receipts/export", dependencies=[Read], tags=["receipts"],
            response_class=Response, responses={200: {"content": {"application/x-ndjson": {}}}})
async def export(request: Request) -> Response:
    """The chain as JSON Lines headed by its count and last hash, to keep and check elsewhere
    (`rippl receipts verify --file FILE`)."""
    state = console(request)
    lines = await state.rippl.export_receipts()
    return Response("".join(f"{line}\n" for line in lines), media_type="application/x-ndjson",
                    headers={"content-disposition":
                             f'attachment; filename="{state.rippl.graph}-receipts.jsonl"'})


@router.get("/receipts/{receipt_id}/proof", response_model=InclusionProof, dependencies=[Read],
            tags=["receipts"])
async def proof(request: Request, receipt_id: str,
                size: Annotated[int | None, Query(ge=1)] = None) -> InclusionProof:
    """The inclusion proof of a receipt in the log's Merkle tree (of `size` receipts)."""
    return await console(request).rippl.prove(receipt_id, tree_size=size)


@router.get("/log/head", response_model=TreeHead, dependencies=[Read], tags=["receipts"])
async def head(request: Request) -> TreeHead:
    """The log's tree head now (RFC 9162): its size and Merkle root."""
    return await console(request).rippl.tree_head()


@router.get("/log/consistency", response_model=ConsistencyProof, dependencies=[Read],
            tags=["receipts"])
async def consistency(request: Request, old_size: Annotated[int, Query(ge=0)],
                      new_size: Annotated[int | None, Query(ge=0)] = None) -> ConsistencyProof:
    """The proof that the log of `new_size` receipts (default: now) extends the log of
    `old_size`."""
    return await console(request).rippl.consistency(old_size, new_size=new_size)


# -- compensations -----------------------------------------------------------------------------
class CompensationRuling(_Body):
    resolution: Literal["compensated", "not needed"] = Field(
        description="compensated (undone, or made good) or not needed.")
    note: str = Field(description="What was done, or why nothing is needed; in the receipt.")
    attempt: str | None = Field(default=None, description="The reported attempt (ATT-...) this "
                                                          "confirms.")


class AttemptReport(_Body):
    what: str = Field(description="What was done to compensate the action.")
    output: str | None = Field(default=None, description="Its output.")
    by: str | None = Field(default=None, description="The agent or script that did it, recorded "
                                                     "under the signed-in identity: <who>/<by>.")


@router.get("/compensations", response_model=list[Compensation], dependencies=[Read],
            tags=["compensations"])
async def compensations(request: Request, as_of: str | None = None, known_at: str | None = None,
                        include_resolved: bool = False) -> list[Compensation]:
    """Actions executed on a premise since retracted (as of a time, as known then), each with
    the trail to what failed: the open ones (and, with include_resolved, those resolved)."""
    return await console(request).rippl.compensations(as_of=as_of, known_at=known_at,
                                                      include_resolved=include_resolved)


@router.post("/compensations/{action_id:path}/resolve", response_model=Receipt,
             tags=["compensations"])
async def resolve_compensation(request: Request, action_id: str, body: CompensationRuling,
                               who: Reviewer) -> Receipt:
    """Resolve an open compensation as the signed-in reviewer: a receipt in the chain. A reviewer
    with a registered key resolves with `rippl compensations resolve --key` (the console does not
    sign resolutions yet)."""
    return await console(request).rippl.resolve_compensation(
        action_id, resolution=body.resolution, note=body.note, by=who, attempt=body.attempt)


@router.post("/compensations/{action_id:path}/attempts", response_model=CompensationAttempt,
             status_code=201, tags=["compensations"])
async def report_attempt(request: Request, action_id: str, body: AttemptReport,
                         who: Reviewer) -> CompensationAttempt:
    """Report what was done to compensate an open compensation (a person confirms it by
    resolving); recorded as the signed-in identity (or <who>/<by>)."""
    return await console(request).rippl.report_compensation_attempt(
        action_id, what=body.what, output=body.output, by=f"{who}/{body.by}" if body.by else who)


# -- notifications ------------------------------------------------------------------------------
@router.get("/notifications", response_model=list[DeliveryStatus], dependencies=[Read],
            tags=["notifications"])
async def notifications(request: Request) -> list[DeliveryStatus]:
    """How webhook deliveries go (rippl serve --notify): delivered, failing (the last error and
    the next retry), the position in the event stream and what is pending; empty without any."""
    notifier = console(request).notifier
    return notifier.statuses() if notifier is not None else []


# -- beliefs -----------------------------------------------------------------------------------
@router.get("/agents", response_model=list[str], dependencies=[Read], tags=["beliefs"])
async def agents(request: Request) -> list[str]:
    """Every agent that recorded a belief."""
    return await console(request).rippl.agents()


@router.get("/topics", response_model=list[str], dependencies=[Read], tags=["beliefs"])
async def topics(request: Request, agent: str) -> list[str]:
    """Every topic the agent recorded a belief about."""
    return await console(request).rippl.topics(agent)


@router.get("/beliefs/ask", response_model=Belief | None, dependencies=[Read], tags=["beliefs"])
async def ask(request: Request, agent: str, topic: str, as_of: str | None = None,
              known_at: str | None = None) -> Belief | None:
    """What the agent believed about the topic at `as_of`, as recorded at `known_at`."""
    return await console(request).rippl.ask(agent, topic, as_of=as_of, known_at=known_at)


@router.get("/beliefs/timeline", response_model=list[Belief], dependencies=[Read], tags=["beliefs"])
async def timeline(request: Request, agent: str, topic: str, known_at: str | None = None,
                   limit: Annotated[int | None, Query(ge=1)] = None,
                   before: str | None = None) -> list[Belief]:
    """Every interval of the agent's belief about the topic, oldest first; with `limit`, the
    latest `limit` starting before `before` (page back with the first row's `valid_from`)."""
    return await console(request).rippl.timeline(agent, topic, known_at=known_at, limit=limit,
                                                  before=before)


@router.get("/beliefs/why-changed", response_model=BeliefChange, dependencies=[Read],
            tags=["beliefs"])
async def why_changed(request: Request, agent: str, topic: str, at: str,
                      known_at: str | None = None) -> BeliefChange:
    """The change of belief nearest `at`, with the evidence that arrived."""
    return await console(request).rippl.why_changed(agent, topic, at, known_at=known_at)


@router.get("/beliefs/what-if", response_model=WhatIf, dependencies=[Read], tags=["beliefs"])
async def what_if(request: Request, agent: str, topic: str,
                  without: Annotated[list[str], Query(min_length=1)], as_of: str | None = None,
                  known_at: str | None = None) -> WhatIf:
    """What the agent would believe had these evidence sources never existed."""
    return await console(request).rippl.what_if(agent, topic, without=without, as_of=as_of,
                                                known_at=known_at)


# -- live events -------------------------------------------------------------------------------
@router.get("/events", dependencies=[Read], tags=["events"], response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}}}})
async def events(request: Request) -> StreamingResponse:
    """Server-Sent Events: `hello` (the stream's position), `events` (the events of one commit, in
    order), `reset` (reload: events were missed). Resumable with Last-Event-ID; comment lines
    keep it alive."""
    hub = console(request).hub
    return StreamingResponse(hub.frames(request.headers.get("last-event-id")),
                             media_type="text/event-stream",
                             headers={"cache-control": "no-cache", "x-accel-buffering": "no"})
