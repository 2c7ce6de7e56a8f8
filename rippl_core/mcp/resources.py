"""Resources (a node, the pending reviews) and the `check_before_acting` prompt."""

# No `from __future__ import annotations` here: the MCP server reads the tool signatures at registration.

from collections.abc import Awaitable, Callable
from typing import Annotated, Any
from urllib.parse import unquote

from pydantic import Field

from rippl_core.client import AsyncRippl
from rippl_core.mcp.common import reported_as
from rippl_core.mcp.models import CompensationList, NodeInfo, ReviewList
from rippl_core.mcp.sdk import Context, ResourceError, Server
from rippl_core.mcp.session import Sessions
from rippl_core.vocabulary import Kind

PROMPT = """\
You can call Rippl, a memory of what each of your decisions rests on.

Before you call any high-risk tool{tools}, first call `check_premises` with `tool` set to the tool's
name and `args` set to exactly the arguments you will pass (or `target` set to the action id).
- safe=true: go ahead.
- safe=false: do NOT call the tool. Read `explanation`: it names each retracted or at-risk premise
  and the trail from it to the action. Tell the user what changed, and pick an alternative that does
  not rest on the failed premise (check that one too). Never retry the same call hoping it passes:
  a repeat stays vetoed. If that very call must run anyway, call `propose_override`: a person
  decides.
- After the call ran, call `record_execution` with its output (and the `call_id` check_premises
  returned): later calls rest on it, and it is listed for compensation if a premise fails later.
- A status of Unknown means the graph could not be read: treat the call as unsafe.

When you learn that something you relied on is false, call `propose_retraction` with the claim id
and the reason; a human reviews it. Use `explain` to see why a node holds or not, and
`blast_radius` to see what rests on it. Record new reasoning with add_claim / add_decision /
add_action so that it is protected too."""


def register(server: Server[Any], rippl: AsyncRippl, sessions: Sessions) -> None:
    """Register the resources and the prompt on `server`."""

    def resource(uri: str, name: str, description: str
                 ) -> Callable[[Callable[..., Awaitable[str]]], Callable[..., Any]]:
        """Register a JSON resource whose Rippl errors reach the client with their message."""
        return lambda fn: server.resource(uri, name=name, mime_type="application/json",
                                          description=description)(reported_as(ResourceError, fn))

    @resource("rippl://node/{node_id}", "node", "One node of the causal graph with its status and "
              "justifications (percent-encode ids with reserved characters).")
    async def node_resource(node_id: str, ctx: Context) -> str:
        node = await rippl.get(unquote(node_id))
        if node.kind is Kind.CLAIM:  # the session read it: an observation of its run
            await sessions.of(ctx).run.observe([node.id])
        return NodeInfo.of(node).model_dump_json(indent=2)

    @resource("rippl://compensations", "compensations", "Actions executed on a premise since "
              "retracted, with the trail to what failed: what may need undoing.")
    async def compensations() -> str:
        found = await rippl.compensations()
        return CompensationList(count=len(found), compensations=found).model_dump_json(indent=2)

    @resource("rippl://reviews/pending", "pending_reviews",
              "Proposed retractions awaiting a human decision.")
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
