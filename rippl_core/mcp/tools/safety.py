"""The safety tools (read-only): the pre-flight check, the blast radius, and why a node holds."""

# No `from __future__ import annotations` here: FastMCP reads the tool signatures at registration.

from collections import Counter
from typing import Annotated, Any

from pydantic import Field

from rippl_core.causal.explain import Explanation
from rippl_core.client import AsyncRippl
from rippl_core.errors import InvalidInputError
from rippl_core.mcp.common import Id, Registrar, Time
from rippl_core.mcp.models import BlastRadius, CheckResult, ReachedInfo
from rippl_core.models import ToolCall


def register(rippl: AsyncRippl, tool: Registrar) -> None:
    """Register this family's tools on the server `tool` belongs to."""

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
