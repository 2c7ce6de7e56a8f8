"""Helpers for the AutoGen adapter tests: a scripted (replayed) model, recording ops tools, what a
run recorded, and a health reading retracted while a scripted model thinks."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import TextMessage
from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import CreateResult, LLMMessage
from autogen_core.tools import BaseStreamTool, FunctionTool
from autogen_ext.models.replay import ReplayChatCompletionClient
from pydantic import BaseModel
from rippl_autogen.testing import MODEL_INFO, ScriptedModel, tool_call
from rippl_autogen.testing import calls as calls  # the tests take it from here

from rippl_core import Rippl

TO_09 = {"table": "billing", "shard": "09"}  # migrate_tables' args of ACT-001, rests on CLM-001
TO_07 = {"table": "billing", "shard": "07"}  # ACT-002, the safe fallback


def call(name: str, /, **args: Any) -> FunctionCall:
    return tool_call(name, **args)


def replay(*turns: str | CreateResult) -> ReplayChatCompletionClient:
    """A scripted tool-calling model: each create() returns the next turn."""
    return ReplayChatCompletionClient(list(turns), model_info=MODEL_INFO)


def Scripted(*steps: Any) -> ScriptedModel:
    """A scripted model whose steps may be functions of the messages it is shown (to react to a
    veto as a model would)."""
    return ScriptedModel(steps)


def vetoed_in(messages: Sequence[Any]) -> bool:
    """Whether the model's latest tool results include a Rippl veto."""
    from autogen_core.models import FunctionExecutionResultMessage

    rounds = [m for m in messages if isinstance(m, FunctionExecutionResultMessage)]
    return bool(rounds) and any(r.content.startswith("VETOED by Rippl") for r in rounds[-1].content)


def seen_by_model(client: ReplayChatCompletionClient, turn: int) -> str:
    """Everything the model was shown on its `turn`-th call, as text."""
    return "\n".join(str(getattr(m, "content", m)) for m in client.create_calls[turn]["messages"])


@dataclass
class Ops:
    """Ops tools that record what actually ran."""

    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def tools(self) -> list[FunctionTool]:
        async def migrate_tables(table: str, shard: str) -> str:
            """Copy a table onto a database shard."""
            self.ran.append(("migrate_tables", {"table": table, "shard": shard}))
            return f"migrated {table} to shard {shard}"

        async def rollback_deploy(service: str, to_version: str) -> str:
            """Roll a service back to an earlier version."""
            self.ran.append(("rollback_deploy", {"service": service, "to_version": to_version}))
            return f"rolled {service} back to {to_version}"

        async def shard_health(shard: str) -> str:
            """Read-only: the health of a shard."""
            self.ran.append(("shard_health", {"shard": shard}))
            return f"shard {shard}: ok"

        return [FunctionTool(fn, description=fn.__doc__ or "")
                for fn in (migrate_tables, rollback_deploy, shard_health)]

    def names(self) -> list[str]:
        return [name for name, _ in self.ran]


class MigrateArgs(BaseModel):
    table: str
    shard: str


class StreamingMigrate(BaseStreamTool[MigrateArgs, TextMessage, TextMessage]):
    """A streaming migrate_tables: reports progress as it copies."""

    def __init__(self, ops: Ops) -> None:
        super().__init__(MigrateArgs, TextMessage, "migrate_tables", "Copy a table onto a shard.")
        self.ops = ops

    async def run(self, args: MigrateArgs, cancellation_token: CancellationToken) -> TextMessage:
        events = [event async for event in self.run_stream(args, cancellation_token)]
        return events[-1]

    async def run_stream(self, args: MigrateArgs, cancellation_token: CancellationToken
                         ) -> AsyncGenerator[TextMessage, None]:
        self.ops.ran.append(("migrate_tables", args.model_dump()))
        for percent in (50, 100):
            yield TextMessage(source="migrate_tables", content=f"copying {args.table}: {percent}%")
        yield TextMessage(source="migrate_tables", content=f"migrated {args.table} to {args.shard}")

    def return_value_as_string(self, value: Any) -> str:
        return str(value.content)


def results_of(events: Sequence[Any]) -> list[Any]:
    """The FunctionExecutionResults of every ToolCallExecutionEvent among `events`."""
    from autogen_agentchat.messages import ToolCallExecutionEvent

    return [r for e in events if isinstance(e, ToolCallExecutionEvent) for r in e.content]


def migrate_tables(table: str, shard: str) -> str:
    """Copy a table onto a database shard (stateless, so FunctionTool can serialise it)."""
    return f"migrated {table} to shard {shard}"


def rollback_deploy(service: str, to_version: str) -> str:
    """Roll a service back (stateless)."""
    return f"rolled {service} back to {to_version}"


def shard_health(shard: str) -> str:
    """Read-only: the health of a shard (stateless)."""
    return f"shard {shard}: ok"


def plain_tools() -> list[FunctionTool]:
    """Stateless tools, for component round trips (FunctionTool dumps their source)."""
    return [FunctionTool(fn, description=fn.__doc__ or "")
            for fn in (migrate_tables, rollback_deploy, shard_health)]


# -- capture: what a run recorded -------------------------------------------------------------


def _named(fc: FunctionCall) -> Any:
    from rippl_core import ToolCall
    from rippl_core.capture import ids

    return ids.Call.of(ToolCall(name=fc.name, args=json.loads(fc.arguments or "{}"), id=fc.id),
                       fc.id, 0)


def action_of(run: str, fc: FunctionCall) -> str:
    """The id of the action capture records for this call of this run."""
    from rippl_core.capture import ids

    return ids.action(run, _named(fc))


def result_of(fc: FunctionCall, output: str) -> str:
    """The id of the claim "`tool(args)` returned `output`" capture records for this call."""
    from rippl_core.capture import ids

    return ids.result_claim(_named(fc), ids.output_digest(output))


def run_claim(run: str) -> str:
    from rippl_core.capture import ids

    return ids.run_claim(run)


def premises_of(rippl: Any, action: str) -> set[str]:
    """The claims the decision driving `action` rests on (its one justification)."""
    decision = rippl.get(action).justifications[0][0]
    return set(rippl.get(decision).justifications[0])


def decision_of(rippl: Any, action: str) -> str:
    return str(rippl.get(action).justifications[0][0])


# -- agents that read shard 09, a reading retracted while a model thinks ----------------------

HEALTHY = 'get_health({"shard":"09"}) returned'  # the claim a get_health(shard="09") became
VETO = "VETOED by Rippl"


def fc(name: str, /, **args: Any) -> FunctionCall:
    """A tool call whose arguments keep the order given (to spell the same call another way)."""
    return FunctionCall(id=f"call-{uuid.uuid4().hex[:8]}", name=name, arguments=json.dumps(args))


type Step = Callable[[Sequence[LLMMessage]], CreateResult | str]


def then(effect: Callable[[], Any], reply: CreateResult | str) -> Step:
    """A script step that runs a side effect first (a person acting while the model thinks)."""
    def step(_: Sequence[LLMMessage]) -> CreateResult | str:
        effect()
        return reply
    return step


def health_claim(rippl: Rippl) -> str:
    """The claim the healthy reading of shard 09 (`get_health`) became."""
    [claim] = [n.id for n in rippl.nodes() if n.kind.value == "Claim" and n.text.startswith(HEALTHY)
               and "healthy" in n.text]
    return claim


def retract_health(rippl: Rippl) -> Callable[[], None]:
    """A monitor proposes the health reading false and a reviewer approves."""
    def act() -> None:
        review = rippl.propose_retraction(health_claim(rippl), reason="served from a stale cache",
                                          by="replica-monitor")
        rippl.approve(review.id, by="oncall")
    return act


def vetoes(messages: Sequence[Any]) -> list[str]:
    """The vetoes among the tool results of `messages`, in order."""
    return [r.content for r in results_of(messages) if r.is_error and VETO in r.content]


def agent(name: str, model: Any, tools: Sequence[Any], **kwargs: Any) -> AssistantAgent:
    return AssistantAgent(name, model_client=model, tools=list(tools), max_tool_iterations=10,
                          **kwargs)
