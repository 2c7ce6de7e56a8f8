"""Tools for an agent to record its own reasoning (sources, claims, decisions, actions), so that
later checks protect it.

What an agent records must rest on something: a decision on at least one premise, an action on
at least one decision or earlier action, so that every recorded action rests, through them, on
claims a human can retract. A node resting on nothing could never be vetoed (and, with no
declared action for its tool, would turn the `unknown` policy's denial into an allow)."""

# No `from __future__ import annotations` here: the MCP server reads the tool signatures at registration.

from typing import Annotated, Any

from pydantic import Field

from rippl_core.capture.memory import writing
from rippl_core.client import AsyncRippl
from rippl_core.errors import InvalidInputError
from rippl_core.mcp.common import Id, Ids, Registrar, Text
from rippl_core.mcp.models import NodeInfo
from rippl_core.mcp.sdk import Context
from rippl_core.mcp.session import Sessions


def register(rippl: AsyncRippl, tool: Registrar, sessions: Sessions) -> None:
    """Register this family's tools on the server `tool` belongs to."""

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
        ctx: Context,
        text: Annotated[Text, Field(description="The statement, e.g. 'Shard 09 is healthy'.")],
        id: Annotated[Id | None, Field(description="Its id; derived from the text if omitted "
                                                    "(the same statement gets the same id).")] = None,
        sources: Annotated[Ids | None, Field(description="Source ids; each alone supports it.")] = None,
        derived_from: Annotated[Ids | None, Field(description="Claim ids it is inferred from "
                                                              "(all needed).")] = None,
        key: Annotated[Text | None, Field(description="What it is about, as SUBJECT/PROPERTY "
                                                      "(e.g. 'shard-09/health'), if it states one "
                                                      "property of one thing.")] = None,
        value: Annotated[Text | None, Field(description="The value it states for that key, e.g. "
                                                        "'degraded'.")] = None,
    ) -> NodeInfo:
        """Record a claim you rely on, with the sources that assert it or the claims it is derived
        from. Re-adding the same claim changes nothing. With a `key`, a claim of the same key with
        another value is proposed for retraction (a person decides; see list_reviews). A claim
        your run adds is your run's statement: a belief of it your run records rests on what the
        run has carried (record_belief)."""
        with writing(sessions.writer(ctx)):  # a claim your run states is your run's
            return NodeInfo.of(await rippl.add_claim(id, text, sources=sources or (),
                                                     derived_from=derived_from or (), key=key,
                                                     value=value))

    @tool(read_only=False, idempotent=True, title="Record a decision")
    async def add_decision(
        title: Annotated[Text, Field(description="What was decided.")],
        id: Annotated[Id | None, Field(description="Its id; derived from the title if omitted.")] = None,
        premises: Annotated[Ids | None, Field(description="Claim or decision ids it rests on "
                                                          "(all needed).")] = None,
        depends_on: Annotated[Ids | None, Field(description="Decision ids it depends on.")] = None,
    ) -> NodeInfo:
        """Record a decision and the claims (or decisions) it rests on (at least one): if any is
        retracted, the decision no longer holds."""
        _rests_on("a decision", premises, depends_on, hint="premises=[claim ids]")
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
        """Record an action (a tool call you plan to make) and the decisions behind it (at least
        one decision or earlier action), so that check_premises can veto it when a premise is
        retracted."""
        _rests_on("an action", decisions, triggers, hint="decisions=[decision ids]")
        return NodeInfo.of(await rippl.add_action(id, title, decisions=decisions or (), tool=tool,
                                                  args=args, triggers=triggers or ()))


def _rests_on(what: str, *antecedents: list[str] | None, hint: str) -> None:
    if not any(antecedents):
        raise InvalidInputError(f"{what} recorded through MCP must rest on something ({hint}): one "
                                "resting on nothing could never be vetoed")
