"""The safety tools (read-only): the pre-flight check, the blast radius, and why a node holds."""

# No `from __future__ import annotations` here: the MCP server reads the tool signatures at registration.

from collections import Counter
from typing import Annotated, Any

from pydantic import Field

from rippl_core.causal.explain import Explanation
from rippl_core.causal.preflight import error_verdict
from rippl_core.client import AsyncRippl
from rippl_core.errors import DatabaseError, InvalidInputError
from rippl_core.mcp.common import Id, Registrar, Time
from rippl_core.mcp.models import BlastRadius, CheckResult, ReachedInfo
from rippl_core.mcp.sdk import Context
from rippl_core.mcp.session import Sessions
from rippl_core.models import RepeatScope, ToolCall
from rippl_core.vocabulary import Kind


def register(rippl: AsyncRippl, tool: Registrar, sessions: Sessions) -> None:
    """Register this family's tools on the server `tool` belongs to."""

    @tool(read_only=False, idempotent=True, title="Check the premises of an action")
    async def check_premises(
        ctx: Context,
        target: Annotated[Id | None, Field(description="An action or decision id, e.g. ACT-001.")] = None,
        tool: Annotated[Id | None, Field(description="Instead of target: the name of the tool you "
                                                     "are about to call.")] = None,
        args: Annotated[dict[str, Any] | None, Field(description="With tool: exactly the arguments "
                                                                 "you are about to pass.")] = None,
        as_of: Annotated[Time | None, Field(description="Audits only: was it safe at this time? "
                                                        "Leave empty before acting.")] = None,
        known_at: Annotated[Time | None, Field(description="Audits only: as Rippl knew it at this "
                                                           "time.")] = None,
        call_id: Annotated[Id | None, Field(description="With tool: your id for this call (default: "
                                                        "one is made); pass it to record_execution "
                                                        "after the call ran.")] = None,
        repeat_scope: Annotated[RepeatScope, Field(description=(
            "With tool: what counts as repeating a call vetoed earlier in this run, which stays "
            "vetoed while the vetoed call's premises stay retracted. 'args' (default): the same tool "
            "with the same arguments (key order, spacing, Unicode form and 9 vs 9.0 do not make "
            "another call). 'tool': any call of that tool after a veto of it."))] = "args",
    ) -> CheckResult:
        """Pre-flight check before a tool call: is every premise under it still valid? Give the
        `tool` name and its `args`: the call is recorded in this client's run as resting on what
        the run read through Rippl, and judged (by that, and by any action declared for it);
        report it with record_execution once it ran. A call repeating one vetoed earlier in the
        run, or one a hand-over of your scope carries after a veto, stays vetoed (compared as
        the tool receives its arguments, when you registered its schema: register_tools). Or
        give an action or decision id as `target`. Fails closed: a graph that
        cannot be read is unsafe. The answer's `run` is this run's token: a client without a
        session (stateless HTTP) sends it as params._meta.rippl_run in every request."""
        if target is not None and tool is None:
            subject: str | ToolCall = target
        elif tool is not None and target is None:
            subject = ToolCall(name=tool, args=args or {})
        else:
            raise InvalidInputError("give either target (an action or decision id) or tool (with its "
                                    "args), exactly one of them")
        if args is not None and tool is None:
            raise InvalidInputError("args go with tool; to check an action by id pass only target")
        if tool is None or as_of is not None or known_at is not None:  # an action by id, or an audit
            if call_id is not None or repeat_scope != "args":
                raise InvalidInputError("call_id and repeat_scope go with a tool call being checked "
                                        "before it runs (tool and args, without as_of or known_at)")
            return CheckResult.of(await rippl.check(subject, as_of=as_of, known_at=known_at))
        client = sessions.of(ctx)
        ref = call_id or client.next_call_id()
        call = ToolCall(name=tool, args=args or {}, id=ref)
        try:  # the graph unreachable, for the tool's schema or the decision: a verdict that denies
            call = ToolCall(name=tool, args=await client.received(tool, args), id=ref)
            verdict = await client.decide(call, repeat_scope)
        except DatabaseError as exc:
            return CheckResult.of(error_verdict(call, exc, rippl.policy), run=client.token,
                                  run_id=client.run.id)
        client.remember(tool, args, ref)
        if not verdict.allowed:
            client.shown_veto(ref)
        return CheckResult.of(verdict, call_id=ref, run=client.token, run_id=client.run.id)

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
        ctx: Context,
    ) -> Explanation:
        """Why a node is valid or not: each of its justifications with every antecedent's status,
        which one holds, and the retracted or at-risk premises underneath with their trails."""
        explanation = await rippl.explain(node_id)
        claims = [a.id for j in explanation.justifications for a in j.antecedents
                  if a.kind is Kind.CLAIM] + ([node_id] if explanation.kind is Kind.CLAIM else [])
        if claims:  # what the session read through Rippl is an observation of its run
            await sessions.of(ctx).run.observe(sorted(set(claims)))
        return explanation
