"""A CrewAI ops crew on the incident graph, guarded by Rippl.

One database engineer works two tasks of examples/incident.yaml:

1. roll checkout-api back to v2.3.7: the call is allowed (every premise under ACT-012 holds);
2. between the tasks, telemetry disputes "Shard 09 is healthy" (CLM-001) and a human approves the
   retraction through the review gate;
3. the engineer tries to migrate billing to shard 09 as planned: Rippl's hook vetoes the call
   before it runs and the agent reads why, with the trail CLM-001 -> DEC-001 -> ACT-001;
4. the engineer adapts: checks the pre-approved shard-07 fallback with the check_premises tool,
   and migrates billing to shard 07, which is allowed.

The crew's memory lives in the same graph (RipplStorage): after the retraction, recall no longer
returns "shard 09 is healthy", and recall as of before the retraction still shows what was
believed then.

    uv run python examples/crewai_ops_crew.py                # offline: a scripted model, seconds
    GROQ_API_KEY=... uv run python examples/crewai_ops_crew.py   # a Groq model

Options: --native (the scripted model uses native function calling instead of ReAct text),
--db PATH (embedded database file, default a temporary one), --url falkordb://host:port (a
server), --offline (scripted even with a key).
"""

from __future__ import annotations

import os

# Before crewai is imported: no telemetry, no tracing (offline and fast).
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

import argparse
import logging
import tempfile
import uuid
import warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from crewai import LLM, Agent, BaseLLM, Crew, Memory, Task
from crewai.events.event_listener import event_listener
from crewai.tools import BaseTool
from pydantic import BaseModel, Field
from rippl_crewai import CheckPremisesTool, RipplStorage, guard_tools, rippl_guard
from rippl_crewai.testing import (
    HashEmbedder,
    ScriptedLLM,
    native_call,
    react_call,
    react_final,
)

from rippl_core import Rippl, Verdict

INCIDENT = Path(__file__).with_name("incident.yaml")
GROQ_BASE_URL = "https://api.groq.com/openai/v1"
GROQ_MODEL = "llama-3.3-70b-versatile"
TO_09 = {"table": "billing", "shard": "09"}
TO_07 = {"table": "billing", "shard": "07"}
ROLLBACK = {"service": "checkout-api", "to_version": "2.3.7"}


# ------------------------------------------------------------------------------ the ops tools


@dataclass
class Ops:
    """What really ran against the (pretend) infrastructure."""

    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class MigrateInput(BaseModel):
    table: str = Field(description="The table to move, e.g. 'billing'")
    shard: str = Field(description="The destination shard, two digits, e.g. '07'")


class MigrateTablesTool(BaseTool):
    name: str = "migrate_tables"
    description: str = "Copy a table online to another Postgres shard and switch writes to it."
    args_schema: type[BaseModel] = MigrateInput
    ops: Any = Field(exclude=True)

    def _run(self, table: str, shard: str) -> str:
        self.ops.ran.append((self.name, {"table": table, "shard": shard}))
        return f"migrated {table} to shard {shard}: copy verified, writes switched"


class RollbackInput(BaseModel):
    service: str = Field(description="The service to roll back, e.g. 'checkout-api'")
    to_version: str = Field(description="The version to roll back to, e.g. '2.3.7'")


class RollbackTool(BaseTool):
    name: str = "rollback_deploy"
    description: str = "Roll a service back to an earlier version."
    args_schema: type[BaseModel] = RollbackInput
    ops: Any = Field(exclude=True)

    def _run(self, service: str, to_version: str) -> str:
        self.ops.ran.append((self.name, {"service": service, "to_version": to_version}))
        return f"rolled {service} back to {to_version}; p99 back to 305 ms"


# ---------------------------------------------------------------------- the scripted engineer


def observations(messages: list[dict[str, Any]]) -> list[str]:
    """The tool results the model has seen in this task (ReAct text or native tool messages)."""
    seen = []
    for message in messages:
        content = str(message.get("content") or "")
        if message.get("role") == "tool":
            seen.append(content)
        elif message.get("role") == "assistant" and "Observation:" in content:
            seen.append(content.split("Observation:", 1)[1])
    return seen


class OpsEngineer:
    """A scripted model that reads its observations: it follows the plan, and when a call is
    vetoed it reads the reason and turns to the fallback the task names."""

    def __init__(self, native: bool) -> None:
        self.native = native
        self.calls = 0

    def call(self, tool: str, args: dict[str, Any], thought: str) -> Any:
        self.calls += 1
        if self.native:
            return native_call(tool, args, f"call_{self.calls}")
        return react_call(tool, args, thought)

    def final(self, answer: str) -> str:
        return answer if self.native else react_final(answer)

    def __call__(self, messages: list[dict[str, Any]]) -> Any:
        task = next((str(m["content"]) for m in messages if "Current Task:" in
                     str(m.get("content") or "")), "")
        seen = observations(messages)
        last = seen[-1] if seen else ""
        if "Roll back checkout-api" in task:
            if not seen:
                return self.call("rollback_deploy", ROLLBACK, "The plan says roll back to 2.3.7.")
            return self.final(f"checkout-api is back on 2.3.7 ({last.strip()}).")
        if not seen:
            return self.call("migrate_tables", TO_09, "The plan (DEC-001) moves billing to 09.")
        if "VETOED by Rippl" in last:
            return self.call("check_premises", {"target": "migrate_tables", "args": TO_07},
                             "Shard 09 was ruled out; check the shard-07 fallback first.")
        if last.lstrip().startswith("ALLOWED"):
            return self.call("migrate_tables", TO_07, "The fallback holds; migrate to 07.")
        return self.final("Billing moved off shard 03 to shard 07 (the pre-approved fallback): "
                          "the shard-09 plan was vetoed because CLM-001 was retracted.")


def make_llm(offline: bool, native: bool) -> tuple[BaseLLM, str]:
    key = os.environ.get("GROQ_API_KEY")
    if key and not offline:
        return LLM(model=f"openai/{GROQ_MODEL}", base_url=GROQ_BASE_URL, api_key=key,
                   temperature=0), f"Groq {GROQ_MODEL}"
    engineer = OpsEngineer(native)
    mode = "native function calling" if native else "ReAct text"
    return ScriptedLLM([engineer], native=native), f"scripted engineer ({mode}), offline"


# ------------------------------------------------------------------------------------ the story


@dataclass
class Story:
    """What happened, for the printout and for the tests."""

    model: str
    ran: list[tuple[str, dict[str, Any]]]
    verdicts: list[Verdict]
    answers: list[str]
    recalled_now: list[str]
    recalled_before: list[tuple[str, str, str | None]]
    llm: BaseLLM
    veto_seen_by_agent: bool


def run_story(rippl: Rippl, *, offline: bool = False, native: bool = False,
              say: Any = lambda *_: None) -> Story:
    """Load the incident, run the crew, retract between the tasks, and report."""
    rippl.load(INCIDENT)
    ops = Ops()
    llm, model = make_llm(offline, native)
    say(f"model: {model}")

    storage = RipplStorage(rippl, store="ops-crew")
    memory = Memory(storage=storage, llm=llm, embedder=HashEmbedder())
    for text, claim in (("Shard 09 is healthy: 0 replication lag, no I/O errors", "CLM-001"),
                        ("Shard 07 is healthy with 58% disk free", "CLM-003")):
        memory.remember(text, scope="/fleet/shards", categories=["health"], importance=0.8,
                        metadata={"rippl_claim": claim}, source="grafana")
    before = datetime.now(UTC)

    def retract_shard_09(output: Any) -> None:  # the monitor, and a human at the review gate
        review = rippl.propose_retraction(
            "CLM-001", reason="disk errors on shard 09: 214 reallocated sectors", by="grafana",
            evidence="https://grafana.internal/d/pg-shards?var-shard=09")
        rippl.approve(review.id, by="priya")
        say("\n[monitor] CLM-001 'Shard 09 is healthy' retracted (approved by priya)")

    engineer = Agent(
        role="database engineer", goal="Keep checkout and billing healthy",
        backstory="You run the payments Postgres fleet and follow the incident plan.", llm=llm,
        tools=[CheckPremisesTool(rippl), *guard_tools([MigrateTablesTool(ops=ops),
                                                       RollbackTool(ops=ops)], rippl)],
        max_iter=6, allow_delegation=False, verbose=False)
    with warnings.catch_warnings():  # a closure callback cannot be checkpointed; none is needed
        warnings.filterwarnings("ignore", message="function callbacks cannot be serialized")
        rollback = Task(description="Roll back checkout-api to v2.3.7 (DEC-008).",
                        expected_output="what was rolled back", agent=engineer,
                        callback=retract_shard_09)
    migrate = Task(description=(
        "Move the billing tables off shard 03 before month-end close. The plan (DEC-001) moves "
        "them to shard 09; the pre-approved fallback is shard 07 (DEC-002)."),
        expected_output="where billing lives now and why", agent=engineer)
    crew = Crew(agents=[engineer], tasks=[rollback, migrate], verbose=False)
    with rippl_guard(rippl) as hooks:
        crew.kickoff()
    answers = [str(task.output.raw) if task.output else "" for task in (rollback, migrate)]

    now = [m.record.content for m in memory.recall("is shard 09 healthy", depth="shallow")]
    past = Memory(storage=storage.as_of(before), llm=llm, embedder=HashEmbedder(), read_only=True)
    then = [(m.record.content, m.record.metadata.get("rippl_status", ""),
             m.record.metadata.get("rippl_status_now"))
            for m in past.recall("is shard 09 healthy", depth="shallow", limit=1)]
    seen = any("VETOED by Rippl" in text_of_call for text_of_call in _shown(llm))
    return Story(model, ops.ran, list(hooks.verdicts), answers, now, then, llm, seen)


def _shown(llm: BaseLLM) -> list[str]:
    if isinstance(llm, ScriptedLLM):
        return [llm.shown(i) for i in range(len(llm.received))]
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="embedded database file (default: a temporary one)")
    parser.add_argument("--url", help="a FalkorDB server, falkordb://host:port")
    parser.add_argument("--native", action="store_true", help="scripted native function calls")
    parser.add_argument("--offline", action="store_true", help="scripted even with a Groq key")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    event_listener.formatter.verbose = False  # this script prints its own story

    folder = tempfile.TemporaryDirectory(prefix="rippl-crewai-")
    graph = f"crewai-demo-{uuid.uuid4().hex[:6]}"
    with (Rippl.open(url=args.url, graph=graph) if args.url else
          Rippl.open(args.db or Path(folder.name) / "rippl.db", graph=graph)) as rippl:
        story = run_story(rippl, offline=args.offline, native=args.native, say=print)
        if args.url or args.db:
            rippl.drop()
    folder.cleanup()

    print("\nverdicts, in order:")
    for verdict in story.verdicts:
        text = verdict.explain().replace("\n", "\n        ")
        print(f"  {'ALLOW' if verdict.allowed else 'VETO '} {text}")
    print("\ntools that really ran:")
    for name, call_args in story.ran:
        print(f"  {name} {call_args}")
    print(f"\nthe agent read the veto's reason: {story.veto_seen_by_agent}")
    for label, answer in zip(("task 1", "task 2"), story.answers, strict=True):
        print(f"{label}: {answer}")
    print(f"\nmemory now, 'is shard 09 healthy': {story.recalled_now}")
    print("memory as of before the retraction:")
    for content, then, now in story.recalled_before:
        print(f"  {content!r}: {then} then, {now or then} now")


if __name__ == "__main__":
    main()
