"""Capture tools: begin a run (for clients without a session), report that a checked call ran
(its output becomes an observation of the client's run), cite the claims a plan relies on, list
the calls executed on premises since retracted, and report an attempt to compensate one (a
person confirms it; over MCP a compensation is resolved only by a server started with a
reviewer, see tools/review.py)."""

# No `from __future__ import annotations` here: the MCP server reads the tool signatures at registration.

from typing import Annotated, Any

from pydantic import Field

from rippl_core.client import AsyncRippl
from rippl_core.errors import NotFoundError
from rippl_core.mcp.common import Id, Ids, Registrar, Text, client_identity
from rippl_core.mcp.models import CompensationList, ExecutionRecord, RunStarted
from rippl_core.mcp.sdk import Context
from rippl_core.mcp.session import Sessions
from rippl_core.models import CompensationAttempt, ToolCall


def register(rippl: AsyncRippl, tool: Registrar, sessions: Sessions) -> None:
    """Register the capture tools."""

    @tool(read_only=False, title="Begin a run")
    async def start_run(
        ctx: Context,
        name: Annotated[Id | None, Field(description="A label for the run's id, e.g. your task or "
                                                     "thread (it does not name the run for "
                                                     "anyone else).")] = None,
    ) -> RunStarted:
        """Begin a captured run of your own and get its token. A client on a session (stdio, or
        HTTP with a session id) already has a run and needs this only to keep several apart. A
        client without a session (stateless HTTP, MCP 2026-07-28) must call it first and send the
        returned `run` as params._meta.rippl_run in every request: its reads and checks are
        recorded in that run, and another client cannot act in it."""
        started = sessions.start(ctx, name)
        return RunStarted(run=started.token, run_id=started.run.id)

    @tool(read_only=False, title="Record that a checked call ran")
    async def record_execution(
        ctx: Context,
        tool: Annotated[Id, Field(description="The tool that ran (as given to check_premises).")],
        output: Annotated[Text, Field(description="What it returned (its text, or a summary).")],
        args: Annotated[dict[str, Any] | None, Field(description="Its arguments, as checked.")] = None,
        call_id: Annotated[Id | None, Field(description="The call_id check_premises returned "
                                                        "(default: the last check of this tool "
                                                        "and args in this run).")] = None,
        ok: Annotated[bool, Field(description="False if the call ran and failed.")] = True,
        fresh_for: Annotated[float | None, Field(gt=0, description=(
            "Seconds this reading stays valid (a read of live state, e.g. a health check): later "
            "calls resting on it are denied as stale until you read again. Omit: it never "
            "expires."))] = None,
        reads: Annotated[bool | None, Field(description=(
            "The tool is a read of live state: a later reading of the same tool and args with "
            "another output supersedes this one (default: true when fresh_for is given)."))] = None,
    ) -> ExecutionRecord:
        """Report that a call you checked with check_premises has run, with its output. Its action
        is marked executed (listed for compensation if a premise is later retracted), and the
        output becomes something your run observed: later calls rest on it (while it is fresh,
        when you give fresh_for)."""
        client = sessions.of(ctx)
        chosen = call_id or client.last_call(tool, args)
        if chosen is None:
            raise NotFoundError(f"no check of {tool} with these args in this run; call "
                                "check_premises first and pass its call_id")
        claim = await client.run.executed(ToolCall(name=tool, args=args or {}, id=chosen), output,
                                          ok=ok, fresh_for=fresh_for, reads=reads)
        return ExecutionRecord(call_id=chosen, result_claim=claim, run=client.token,
                               run_id=client.run.id)

    @tool(read_only=False, idempotent=True, title="Cite the claims a plan relies on")
    async def cite_claims(
        ctx: Context,
        claims: Annotated[Ids, Field(min_length=1, description="Claim ids you rely on.")],
    ) -> ExecutionRecord:
        """Say which claims your next calls rely on: they become premises of the calls your run
        checks from now on, so a retraction of any of them vetoes those calls."""
        client = sessions.of(ctx)
        cited = await client.run.cite(claims)
        return ExecutionRecord(call_id=None, result_claim=None, run=client.token,
                               run_id=client.run.id, cited=cited)

    @tool(read_only=True, idempotent=True, title="Calls executed on retracted premises")
    async def list_compensations() -> CompensationList:
        """Actions that already ran on a premise since retracted (what may need undoing), each
        with the trail to the premise that failed."""
        found = await rippl.compensations()
        return CompensationList(count=len(found), compensations=found)  # the open ones

    @tool(read_only=False, title="Report an attempt to compensate")
    async def report_compensation_attempt(
        ctx: Context,
        action: Annotated[Id, Field(description="The executed action, as list_compensations names "
                                                "it.")],
        what: Annotated[Text, Field(description="What you did to undo it or make it good.")],
        output: Annotated[Text | None, Field(description="What that returned.")] = None,
        by: Annotated[Id | None, Field(description="Your agent's name, recorded under this MCP "
                                                   "client's identity: mcp:<client>/<by>.")] = None,
    ) -> CompensationAttempt:
        """Report what you did about an open compensation (an action that ran on a premise since
        retracted), with its output. It resolves nothing: a person confirms it, and the
        compensation stays open until they do."""
        return await rippl.report_compensation_attempt(action, what=what, output=output,
                                                       by=client_identity(ctx, agent=by))
