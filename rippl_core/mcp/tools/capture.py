"""Capture tools: begin a run (for clients without a session, or in a team's scope), register the
schemas of the tools a run checks, report that a checked call ran (its output becomes an
observation of the client's run), hand over to a team mate of the scope and receive a hand-over,
cite the claims a plan relies on, list the calls executed on premises since retracted, and report
an attempt to compensate one (a person confirms it; over MCP a compensation is resolved only by a
server started with a reviewer, see tools/review.py)."""

# No `from __future__ import annotations` here: the MCP server reads the tool signatures at registration.

import secrets
from typing import Annotated, Any

from pydantic import Field

from rippl_core.client import AsyncRippl
from rippl_core.errors import InvalidInputError, NotFoundError
from rippl_core.mcp.common import MAX_IDS, Id, Ids, Registrar, Text, client_identity
from rippl_core.mcp.models import CompensationList, ExecutionRecord, HandOver, RunStarted, ToolSchema
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
        scope: Annotated[Id | None, Field(description=(
            "A team's label (e.g. billing-team): runs begun in one scope hand messages to one "
            "another (hand_over, receive_hand_over). Omit: the run is alone."))] = None,
    ) -> RunStarted:
        """Begin a captured run of your own and get its token. A client on a session (stdio, or
        HTTP with a session id) already has a run and needs this only to keep several apart, or
        to join a team's scope. A client without a session (stateless HTTP, MCP 2026-07-28) must
        call it first and send the returned `run` as params._meta.rippl_run in every request: its
        reads and checks are recorded in that run, and another client cannot act in it."""
        started = sessions.start(ctx, name, scope)
        return RunStarted(run=started.token, run_id=started.run.id)

    @tool(read_only=False, idempotent=True, title="Register the schemas of your tools")
    async def register_tools(
        ctx: Context,
        tools: Annotated[list[ToolSchema], Field(min_length=1, max_length=MAX_IDS, description=(
            "Each tool you will check: its name and its MCP inputSchema (a JSON Schema "
            "object)."))],
    ) -> ExecutionRecord:
        """Register the input schema of each tool you will check in this run: its calls are then
        compared on the arguments the tool receives (defaults filled, numbers and booleans
        written as text read as values), so spelling a default out or quoting a number does not
        make another call. Kept with the run in the graph: a server that restarted, or a run
        that left its memory, still compares on them. A tool registered again is replaced."""
        client = sessions.of(ctx)
        await client.register({t.name: dict(t.inputSchema) for t in tools})
        return ExecutionRecord(call_id=None, result_claim=None, run=client.token,
                               run_id=client.run.id)

    @tool(read_only=False, title="Hand over to your team")
    async def hand_over(ctx: Context) -> HandOver:
        """Write a hand-over for another run of your scope (a task, a report): it carries what
        your run has carried (less what the vetoes you received named) and those vetoes: a team
        mate that receives it rests on what you did, and repeating an act you were refused stays
        vetoed for it. Give the returned `ref` to the team mate (receive_hand_over)."""
        client = sessions.of(ctx)
        ref = f"handover-{secrets.token_hex(16)}"
        await client.run.wrote(ref, context=None, told=list(client.told), kind="handover")
        return HandOver(ref=ref, run=client.token, run_id=client.run.id)

    @tool(read_only=False, idempotent=True, title="Receive a hand-over")
    async def receive_hand_over(
        ctx: Context,
        ref: Annotated[Id, Field(description="The `ref` another run of your scope handed over.")],
    ) -> ExecutionRecord:
        """Take a hand-over a team mate of your scope wrote (hand_over): what it carries is in
        your run's context from now on (your later calls rest on it), with the vetoes it hands
        on. A ref no run of your scope wrote is a message Rippl cannot account for: it carries
        everything your run and its scope carried (fail closed)."""
        client = sessions.of(ctx)
        if not ref.startswith("handover-"):
            raise InvalidInputError("ref is the `ref` hand_over returned (handover-...)")
        await client.run.wrote(f"received-{ref}", context=[ref], kind="received")
        return ExecutionRecord(call_id=None, result_claim=None, run=client.token,
                               run_id=client.run.id)

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
        claim = await client.run.executed(ToolCall(name=tool, args=await client.received(tool, args),
                                                   id=chosen), output,
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
