"""What a token must carry for each MCP request: the scopes of Rippl's tools, and who may use the
review tools. Pure policy, no SDK: the HTTP gate (`gate.py`) asks it about every JSON-RPC message
before the SDK sees one.

- `rippl:check`: the agent's own run and memory (start_run, check_premises, record_execution,
  cite_claims, recording its reasoning and beliefs, handing messages over in its team and
  registering its tools' schemas) and every read (tools, resources, prompts).
- `rippl:propose`: proposing retractions and overrides, and reporting compensation attempts
  (a person decides every one of them).
- `rippl:review`: approve_review, reject_review and resolve_compensation (which exist only on a
  server started with --allow-review), and only for a person the issuer marks as a reviewer:
  never a machine's token (client credentials), whatever its scopes or groups.

Any request needs at least one Rippl scope (a token for this server with none of them is for
something else). A tool Rippl does not know needs `rippl:check` (the SDK then says it does not
exist). A missing scope is 403 `insufficient_scope` naming the scopes to ask for; a review tool
refused for who the token names is 403 `access_denied` (asking for more scopes would not help).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rippl_core.identity.roles import CHECK_SCOPE, PROPOSE_SCOPE, REVIEW_SCOPE, Principal

CHECK, PROPOSE, REVIEW = CHECK_SCOPE, PROPOSE_SCOPE, REVIEW_SCOPE
SCOPES = (CHECK, PROPOSE, REVIEW)

PROPOSING = frozenset({"propose_retraction", "propose_retraction_where", "propose_override",
                       "report_compensation_attempt"})
REVIEWING = frozenset({"approve_review", "reject_review", "resolve_compensation"})
CHECKING = frozenset({
    "start_run", "check_premises", "record_execution", "cite_claims", "explain", "blast_radius",
    "list_compensations", "list_reviews", "verify_receipts", "log_head", "prove_receipt",
    "log_consistency", "add_source", "add_claim", "add_decision", "add_action", "record_belief",
    "retract_belief", "ask_belief", "timeline", "why_changed", "what_if", "history",
    "hand_over", "receive_hand_over", "register_tools"})
TOOLS = CHECKING | PROPOSING | REVIEWING
NEEDS_CHECK = frozenset({"resources/read", "resources/subscribe", "prompts/get",
                         "completion/complete"})


@dataclass(frozen=True)
class Refusal:
    """A request refused: the HTTP status, the OAuth error code, the scope to ask for, and why."""

    status: int
    error: str
    reason: str
    scope: str | None = None


def tool_scope(tool: str) -> str:
    """The scope a call of this tool needs."""
    if tool in REVIEWING:
        return REVIEW
    if tool in PROPOSING:
        return PROPOSE
    return CHECK


def scope_of(method: object, params: object) -> str | None:
    """The scope a JSON-RPC request needs beyond any Rippl scope (None: none more)."""
    if method == "tools/call":
        name = params.get("name") if isinstance(params, Mapping) else None
        return tool_scope(name) if isinstance(name, str) else CHECK
    return CHECK if method in NEEDS_CHECK else None


def refusal(principal: Principal, message: Mapping[str, Any]) -> Refusal | None:
    """Why this token may not send this JSON-RPC message (None: it may)."""
    held = principal.scopes & set(SCOPES)
    if not held:
        return Refusal(403, "insufficient_scope", f"this token carries none of Rippl's scopes "
                       f"({', '.join(SCOPES)}): ask the issuer for a token with {CHECK} (and "
                       f"{PROPOSE} to propose) for this server", CHECK)
    method, params = message.get("method"), message.get("params")
    needed = scope_of(method, params)
    if needed is None:
        return None
    if needed not in held:
        wanted = " ".join(s for s in SCOPES if s in held or s == needed)
        return Refusal(403, "insufficient_scope", f"this needs the scope {needed}, which the "
                       f"token of {principal.subject} does not carry: ask the issuer for a token "
                       f"with {needed}", wanted)
    if needed == REVIEW:
        if principal.machine:
            return Refusal(403, "access_denied", f"{principal.subject} is a machine's token "
                           "(client credentials): the review tools are a person's decision, "
                           "whatever its scopes; a reviewer approves in the console or with a "
                           "token of their own")
        if not principal.reviewer:
            return Refusal(403, "access_denied", f"the issuer does not mark {principal.subject} "
                           "as a reviewer (the reviewer group of the configured claim); ask an "
                           "administrator of the identity provider, or a reviewer, to decide")
    return None
