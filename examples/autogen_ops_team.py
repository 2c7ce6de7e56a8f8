"""An AutoGen ops team on the incident graph, guarded by Rippl.

A planner and an operator (a RoundRobinGroupChat of AssistantAgents) work the billing migration
of examples/incident.yaml:

1. the operator provisions shard 09: the call is allowed (every premise holds);
2. telemetry disputes "Shard 09 is healthy" (CLM-001) and a human approves the retraction;
3. the operator tries to migrate billing to shard 09: Rippl vetoes the call before it runs and
   returns the reason, with the trail CLM-001 -> DEC-001 -> ACT-001, to the model;
4. the operator adapts and migrates billing to the pre-approved shard 07 fallback, which is allowed.

The operator's RipplMemory injects what it currently believes before each model call: after the
retraction the shard-09 belief is gone from its context.

    uv run python examples/autogen_ops_team.py               # offline: a scripted model, seconds
    GROQ_API_KEY=... uv run python examples/autogen_ops_team.py   # a Groq model (OpenAI-compatible)

The live mode uses autogen-ext's OpenAIChatCompletionClient, which needs
`pip install "autogen-ext[openai]"`. Options: --db PATH (embedded database file, default a
temporary one), --url falkordb://host:port (a server), --offline (scripted even with a key).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.messages import (
    MemoryQueryEvent,
    TextMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import FunctionCall
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import ChatCompletionClient, CreateResult, ModelFamily, ModelInfo, RequestUsage
from autogen_core.tools import FunctionTool
from autogen_ext.models.replay import ReplayChatCompletionClient
from rippl_autogen import RipplMemory, register_rippl

from rippl_core import AsyncRippl

INCIDENT = Path(__file__).with_name("incident.yaml")
GROQ_BASE_URL = "https://api.groq.com/openai/v1"
GROQ_MODEL = "llama-3.3-70b-versatile"
MODEL_INFO = ModelInfo(vision=False, function_calling=True, json_output=False,
                       family=ModelFamily.UNKNOWN, structured_output=False)

PLANNER_PROMPT = ("You are the incident planner for the payments database. Say in one or two "
                  "sentences what the operator should do next. You never call tools.")
OPERATOR_PROMPT = ("You are the operator. Do the planner's step with your tools. Rippl checks every "
                   "call against what it rests on: if a call comes back VETOED, read the trail, do "
                   "not retry it, and choose an action that does not rest on the retracted premise "
                   "(billing's pre-approved fallback home is shard 07). When the step is done, say "
                   "what happened in one sentence and end with TERMINATE.")

FIRST_TASK = "INC-4471 follow-up: billing must leave shard 03 before month-end. Start with shard 09."
SECOND_TASK = ("Update: a human approved retracting 'Shard 09 is healthy'. Continue the billing "
               "migration.")


@dataclass
class Outcome:
    """What the demo did, for callers and tests."""

    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    vetoed: list[str] = field(default_factory=list)
    memories: list[list[str]] = field(default_factory=list)
    receipt_ok: bool = False
    ran_before_retraction: int = 0  # how many calls of `ran` happened before CLM-001 was retracted

    def as_expected(self) -> bool:
        """The story held: provisioning and the fallback ran, the shard-09 migration was vetoed."""
        return (self.ran == [("resize_volume", {"shard": "09", "iops": 16000, "max_wal_size_gb": 64}),
                             ("migrate_tables", {"table": "billing", "shard": "07"})]
                and len(self.vetoed) == 1 and "CLM-001 -> DEC-001 -> ACT-001" in self.vetoed[0]
                and self.receipt_ok)


def ops_tools(outcome: Outcome) -> list[FunctionTool]:
    """The operator's tools. They only record what ran: this is a demo."""

    async def resize_volume(shard: str, iops: int, max_wal_size_gb: int) -> str:
        """Raise a shard's provisioned IOPS and Postgres max_wal_size (GB)."""
        outcome.ran.append(("resize_volume", {"shard": shard, "iops": iops,
                                              "max_wal_size_gb": max_wal_size_gb}))
        return f"shard {shard}: {iops} IOPS, max_wal_size {max_wal_size_gb} GB"

    async def migrate_tables(table: str, shard: str) -> str:
        """Copy a table group online (pglogical) onto a shard, e.g. table='billing', shard='07'."""
        outcome.ran.append(("migrate_tables", {"table": table, "shard": shard}))
        return f"{table} copied to shard {shard}; cutover window scheduled"

    async def shard_health(shard: str) -> str:
        """Read-only: the current health panel of a shard."""
        return {"09": "replication lag 45 s, 3 I/O errors in 10 min",
                "07": "0 replication lag, no I/O errors, 58% disk free"}.get(shard, "unknown shard")

    return [FunctionTool(fn, description=fn.__doc__ or "")
            for fn in (resize_volume, migrate_tables, shard_health)]


def _calls(name: str, **args: Any) -> CreateResult:
    return CreateResult(finish_reason="function_calls", cached=False,
                        usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
                        content=[FunctionCall(id=f"call-{uuid.uuid4().hex[:8]}", name=name,
                                              arguments=json.dumps(args))])


def scripted_models() -> tuple[ChatCompletionClient, ChatCompletionClient]:
    """Offline: what a tool-calling model would answer, turn by turn."""
    planner = ReplayChatCompletionClient([
        "Provision shard 09 for billing's write load first (16k IOPS, 64 GB max_wal_size).",
        "Shard 09's health is retracted. Migrate billing now; if shard 09 is vetoed, use the "
        "pre-approved shard 07 fallback.",
    ], model_info=MODEL_INFO)
    operator = ReplayChatCompletionClient([
        _calls("resize_volume", shard="09", iops=16000, max_wal_size_gb=64),
        "Shard 09 is provisioned for billing. TERMINATE",
        _calls("migrate_tables", table="billing", shard="09"),
        _calls("migrate_tables", table="billing", shard="07"),
        "Rippl vetoed the move to shard 09 (CLM-001 was retracted), so billing went to the "
        "shard 07 fallback instead. TERMINATE",
    ], model_info=MODEL_INFO)
    return planner, operator


def groq_models(api_key: str) -> tuple[ChatCompletionClient, ChatCompletionClient]:
    """Live: a Groq model through AutoGen's OpenAI-compatible client."""
    try:
        from autogen_ext.models.openai import OpenAIChatCompletionClient
    except ImportError as exc:
        raise SystemExit(f'the live mode needs autogen-ext\'s OpenAI client: pip install '
                         f'"autogen-ext[openai]" ({exc}); or run with --offline') from None
    model = os.environ.get("GROQ_MODEL", GROQ_MODEL)
    info = ModelInfo(vision=False, function_calling=True, json_output=True,
                     family=ModelFamily.UNKNOWN, structured_output=False)

    def client() -> ChatCompletionClient:
        return OpenAIChatCompletionClient(model=model, base_url=GROQ_BASE_URL, api_key=api_key,
                                          model_info=info, parallel_tool_calls=False)

    return client(), client()


async def run_demo(*, db: str | None = None, url: str | None = None, live_key: str | None = None,
                   keep: bool = False, say: Callable[[str], None] = print) -> Outcome:
    """Run the story once on a fresh graph and return what happened. `keep` leaves the graph in
    the database (at --db or --url) to inspect afterwards."""
    outcome = Outcome()
    graph = f"autogen-ops-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="rippl-autogen-") as folder:
        path = None if url else (db or str(Path(folder) / "rippl.db"))
        rippl = await AsyncRippl.open(path, url=url, graph=graph)
        try:
            await _story(rippl, outcome, live_key, say)
            if not keep:
                await rippl.drop()
        finally:
            await rippl.close()
        if keep and (db or url):
            say(f"\nThe graph is kept: rippl {'--url ' + url if url else '--db ' + str(db)} "
                f"--graph {graph} review list")
    return outcome


async def _story(rippl: AsyncRippl, outcome: Outcome, live_key: str | None,
                 say: Callable[[str], None]) -> None:
    await rippl.load(INCIDENT)
    say(f"Loaded the incident graph into {rippl.graph}: "
        f"{sum((await rippl.stats()).nodes.values())} nodes.")

    planner_model, operator_model = groq_models(live_key) if live_key else scripted_models()
    memory = RipplMemory(rippl, "operator")
    for claim, topic, source in (("CLM-001", "shard-09-health", "SRC-001"),
                                 ("CLM-003", "shard-07-health", "SRC-013")):
        node = await rippl.get(claim)
        await memory.add(MemoryContent(content=node.text, mime_type=MemoryMimeType.TEXT,
                                       metadata={"claim_id": claim, "topic": topic,
                                                 "sources": [source]}))
    planner = AssistantAgent("planner", model_client=planner_model, system_message=PLANNER_PROMPT)
    operator = AssistantAgent("operator", model_client=operator_model, tools=ops_tools(outcome),
                              memory=[memory], system_message=OPERATOR_PROMPT,
                              max_tool_iterations=4)
    team = RoundRobinGroupChat([planner, operator], termination_condition=(
        TextMentionTermination("TERMINATE") | MaxMessageTermination(12)))
    # The 0.2-style "register the hooks" in one line: every AssistantAgent's workbench is guarded,
    # and each agent gets its belief memory (the operator's is already there).
    register_rippl(team, rippl, memory=False, unguarded=["shard_health"])

    say("\n== 1. Provision shard 09 ==")
    await _run(team, FIRST_TASK, outcome, say)

    outcome.ran_before_retraction = len(outcome.ran)
    say("\n== 2. Telemetry disputes 'Shard 09 is healthy'; a human approves the retraction ==")
    review = await rippl.propose_retraction(
        "CLM-001", reason="Grafana alert: replication lag 45 s and I/O errors on shard 09",
        by="grafana-alert", evidence="https://grafana.internal/d/pg-shards?var-shard=09")
    say(f"{review.id}: {len(review.at_risk)} nodes at risk until reviewed")
    receipt = await rippl.approve(review.id, by="priya.raman", note="confirmed on the host")
    check = await rippl.verify_receipts()
    outcome.receipt_ok = check.ok
    say(f"approved by priya.raman; receipt #{receipt.seq} {receipt.hash[:16]}... "
        f"(chain {'verified' if check.ok else 'BROKEN'})")

    say("\n== 3. Continue the migration: the veto reaches the model, the operator adapts ==")
    await _run(team, SECOND_TASK, outcome, say)


async def _run(team: RoundRobinGroupChat, task: str, outcome: Outcome,
               say: Callable[[str], None]) -> None:
    async for event in team.run_stream(task=task):
        if isinstance(event, TaskResult):
            say(f"(stopped: {event.stop_reason})")
        elif isinstance(event, MemoryQueryEvent):
            remembered = [str(m.content) for m in event.content]
            outcome.memories.append(remembered)
            say(f"[{event.source} memory] " + " | ".join(remembered))
        elif isinstance(event, ToolCallRequestEvent):
            for call in event.content:
                say(f"{event.source} -> {call.name}({call.arguments})")
        elif isinstance(event, ToolCallExecutionEvent):
            for result in event.content:
                if result.is_error and result.content.startswith("VETOED by Rippl"):
                    outcome.vetoed.append(result.content)
                say(("   " if not result.is_error else "   ERROR ")
                    + result.content.replace("\n", "\n   "))
        elif isinstance(event, TextMessage) and event.source != "user":
            say(f"{event.source}: {event.content}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    place = parser.add_mutually_exclusive_group()
    place.add_argument("--db", help="embedded database file (default: a temporary one)")
    place.add_argument("--url", help="a FalkorDB server, e.g. falkordb://127.0.0.1:6379")
    parser.add_argument("--offline", action="store_true", help="scripted model even with a key")
    args = parser.parse_args(argv)
    key = None if args.offline else os.environ.get("GROQ_API_KEY") or None
    say(f"Model: {'Groq ' + os.environ.get('GROQ_MODEL', GROQ_MODEL) if key else 'scripted (offline)'}")
    logging.basicConfig(level=logging.ERROR)  # the story prints itself; keep library chatter out
    outcome = asyncio.run(run_demo(db=args.db, url=args.url, live_key=key,
                                   keep=bool(args.db or args.url)))
    if key:  # a live model may take another path; report what it did
        say(f"\nran: {outcome.ran}; vetoed calls: {len(outcome.vetoed)}")
        return 0
    ok = outcome.as_expected()
    say("\nOK: the shard-09 migration was vetoed before it ran; billing went to shard 07."
        if ok else f"\nUNEXPECTED: ran={outcome.ran} vetoed={len(outcome.vetoed)}")
    return 0 if ok else 1


def say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
