"""Shared pieces of the CrewAI adapter tests: ops tools that log what really ran, a crew, a
scripted model of a few steps, and what a run did (its readings, verdicts, the vetoes shown).

A tool whose arguments need no description leaves out `args_schema`: CrewAI makes it from the
signature of the tool's `_run`."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from crewai import Agent, Crew, Task
from crewai.tools import BaseTool
from pydantic import BaseModel, Field
from rippl_crewai import VETO_PREFIX, RipplHooks
from rippl_crewai.testing import ScriptedLLM, native_call, react_call, react_final

from rippl_core import Rippl, Verdict

SHARD_09 = {"table": "billing", "shard": "09"}  # ACT-001, rests on CLM-001
SHARD_07 = {"table": "billing", "shard": "07"}  # ACT-002, the safe fallback
ROLLBACK = {"service": "checkout-api", "to_version": "2.3.7"}  # ACT-012, unrelated to CLM-001


class MigrateInput(BaseModel):
    table: str = Field(description="The table to move")
    shard: str = Field(description="The destination shard, e.g. '07'")


class MigrateTablesTool(BaseTool):
    """Records every migration that really ran."""

    name: str = "migrate_tables"
    description: str = "Migrate a table to another database shard."
    args_schema: type[BaseModel] = MigrateInput
    ran: list[dict[str, Any]] = Field(default_factory=list)

    def _run(self, table: str, shard: str) -> str:
        self.ran.append({"table": table, "shard": shard})
        return f"migrated {table} to shard {shard}"

    async def _arun(self, table: str, shard: str) -> str:
        return self._run(table, shard)


class RollbackTool(BaseTool):
    name: str = "rollback_deploy"
    description: str = "Roll a service back to an earlier version."
    ran: list[dict[str, Any]] = Field(default_factory=list)

    def _run(self, service: str, to_version: str) -> str:
        self.ran.append({"service": service, "to_version": to_version})
        return f"rolled {service} back to {to_version}"


class WipeTool(BaseTool):
    """A tool no action of the graph is executed by."""

    name: str = "wipe_disk"
    description: str = "Erase a disk."
    ran: list[dict[str, Any]] = Field(default_factory=list)

    def _run(self, target: str) -> str:
        self.ran.append({"target": target})
        return f"wiped {target}"


def declared_action(verdict: Verdict) -> str | None:
    """The declared action of the incident graph (ACT-0NN) a verdict judged the call by: the
    target, or one of the actions its reason names (a captured call is judged by its own captured
    action and every declared match)."""
    found = re.findall(r"\bACT-\d{3}\b", f"{verdict.target} {verdict.reason}")
    return found[0] if found else None


def run_crew(llm: ScriptedLLM, tools: Sequence[BaseTool], *, max_iter: int = 6) -> str:
    """One agent, one task, the scripted model; returns the crew's final answer."""
    return str(crew_of(llm, tools, max_iter=max_iter).kickoff())


class ShardInput(BaseModel):
    shard: str = Field(description="The shard, e.g. '09'")


class HealthTool(BaseTool):
    """A read: what each shard's health reads as (`readings`), counted per real run."""

    name: str = "get_shard_health"
    description: str = "Read a shard's health."
    args_schema: type[BaseModel] = ShardInput
    readings: dict[str, str] = Field(default_factory=lambda: {
        "09": "shard 09: healthy (served from replica r3)", "07": "shard 07: healthy (primary)"})
    ran: list[str] = Field(default_factory=list)

    def _run(self, shard: str) -> str:
        self.ran.append(shard)
        return self.readings.get(shard, f"shard {shard}: unknown")


class MoveInput(BaseModel):
    shard: str = Field(description="The destination shard, e.g. '07'")
    batch: int = Field(default=100, description="Rows per batch")


class MigrateTool(BaseTool):
    """Migrate billing to a shard, `batch` rows at a time; records every migration that ran.
    `metadata` carries Rippl's settings for the tool (key "rippl"), as a tool may."""

    name: str = "migrate_tables"
    description: str = "Migrate the billing tables to another shard."
    args_schema: type[BaseModel] = MoveInput
    metadata: dict[str, Any] = Field(default_factory=dict)
    ran: list[str] = Field(default_factory=list)

    def _run(self, shard: str, batch: int = 100) -> str:
        self.ran.append(shard)
        return f"migrated billing to shard {shard}"


class NotifyTool(BaseTool):
    """Posts to the ops channel; `meanwhile` runs while it does (another agent at work)."""

    name: str = "notify_ops"
    description: str = "Post a message to the ops channel."
    meanwhile: Any = Field(default=None, exclude=True)

    def _run(self, text: str) -> str:
        if self.meanwhile is not None:
            self.meanwhile()
        return "posted"


class MemoryTool(BaseTool):
    """A tool on the crew's `memory` (CrewAI's `Memory`)."""

    memory: Any = Field(exclude=True)


class SaveNoteTool(MemoryTool):
    name: str = "save_note"
    description: str = "Save a fact to memory."

    def _run(self, text: str) -> str:
        self.memory.remember(text, scope="/ops", categories=["shards"], importance=0.9)
        return "saved"


class RecallTool(MemoryTool):
    name: str = "recall"
    description: str = "Recall what memory holds."

    def _run(self, query: str) -> str:
        found = self.memory.recall(query, depth="shallow")
        return "\n".join(m.record.content for m in found) or "nothing remembered"


def crew_of(llm: ScriptedLLM, tools: Sequence[BaseTool], *, max_iter: int = 12,
            agent: Mapping[str, Any] | None = None, **crew: Any) -> Crew:
    """One agent, one task, the scripted model (not kicked off); `agent`: more of the agent's
    options, `crew`: the crew's."""
    ops = Agent(role="ops engineer", goal="Move billing off shard 03",
                backstory="You run the payments database fleet.", llm=llm, tools=list(tools),
                max_iter=max_iter, verbose=False, allow_delegation=False, **(agent or {}))
    task = Task(description="Move the billing tables off shard 03.", expected_output="a summary",
                agent=ops)
    return Crew(agents=[ops], tasks=[task], verbose=False, **crew)


# ------------------------------------------------------------------------------ scripted models

H09 = ("get_shard_health", {"shard": "09"})
H07 = ("get_shard_health", {"shard": "07"})


type Step = (str | tuple[str, dict[str, Any]] | list[tuple[str, dict[str, Any]]]
             | Callable[..., Any])


def model(path: str, *steps: Step, final: str = "done", kind: type[ScriptedLLM] = ScriptedLLM,
          **fields: Any) -> ScriptedLLM:
    """A scripted model: one turn per step (a call, a list of calls for one native turn, or a
    function of the messages returning one), then `final`. Native call ids: c<step>[-<k>]."""
    def reply(index: int, step: Step) -> Any:
        if callable(step):
            return lambda messages: reply(index, step(messages))
        if isinstance(step, str):  # a text answer
            return step
        if isinstance(step, list):
            return [native_call(t, a, f"c{index}-{k}")[0] for k, (t, a) in enumerate(step)]
        tool, args = step
        return native_call(tool, args, f"c{index}") if path == "native" else react_call(tool, args)

    answer = final if path == "native" else react_final(final)
    return kind([*(reply(i, s) for i, s in enumerate(steps)), answer], native=path == "native",
                **fields)


def then(effect: Callable[[], Any], step: Step) -> Callable[[list[dict[str, Any]]], Step]:
    def run(_: list[dict[str, Any]]) -> Step:
        effect()
        return step
    return run


# ------------------------------------------------------------------------------ what happened


def reading(hooks: RipplHooks, shard: str = "09") -> str:
    [claim] = [e.claim for e in hooks.executions
               if e.tool == "get_shard_health" and e.args == {"shard": shard}]
    return claim


def retract(rippl: Rippl, hooks: RipplHooks) -> Callable[[], None]:
    """A monitor proposes the health reading false and a reviewer approves."""
    def act() -> None:
        review = rippl.propose_retraction(reading(hooks), reason="served from a stale replica",
                                          by="replica-monitor")
        rippl.approve(review.id, by="oncall")
    return act


def verdicts_of(hooks: RipplHooks, tool: str = "migrate_tables") -> list[Verdict]:
    return [v for v in hooks.verdicts if v.tool_call is not None and v.tool_call.name == tool]


def vetoes_shown(llm: ScriptedLLM) -> list[str]:
    """The veto texts the model read, in order."""
    texts: list[str] = []
    for messages in llm.received:
        for message in messages:
            content = str(message.get("content") or "")
            if VETO_PREFIX in content and content not in texts:
                texts.append(content)
    return texts
