"""Shared pieces of the CrewAI adapter tests: ops tools that log what really ran, and a crew."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from crewai import Agent, Crew, Task
from crewai.tools import BaseTool
from pydantic import BaseModel, Field
from rippl_crewai.testing import ScriptedLLM

from rippl_core import Verdict

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


class RollbackInput(BaseModel):
    service: str
    to_version: str


class RollbackTool(BaseTool):
    name: str = "rollback_deploy"
    description: str = "Roll a service back to an earlier version."
    args_schema: type[BaseModel] = RollbackInput
    ran: list[dict[str, Any]] = Field(default_factory=list)

    def _run(self, service: str, to_version: str) -> str:
        self.ran.append({"service": service, "to_version": to_version})
        return f"rolled {service} back to {to_version}"


class WipeInput(BaseModel):
    target: str


class WipeTool(BaseTool):
    """A tool no action of the graph is executed by."""

    name: str = "wipe_disk"
    description: str = "Erase a disk."
    args_schema: type[BaseModel] = WipeInput
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
    agent = Agent(role="ops engineer", goal="Relieve disk pressure on shard 03",
                  backstory="You run the payments database fleet.", llm=llm, tools=list(tools),
                  max_iter=max_iter, verbose=False, allow_delegation=False)
    task = Task(description="Move the billing tables off shard 03.", expected_output="a summary",
                agent=agent)
    return str(Crew(agents=[agent], tasks=[task], verbose=False).kickoff())


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


def crew_of(llm: ScriptedLLM, tools: Sequence[BaseTool], *, max_iter: int = 6,
            **crew: Any) -> Crew:
    """One agent, one task, the scripted model (not kicked off)."""
    agent = Agent(role="ops engineer", goal="Move billing off shard 03",
                  backstory="You run the payments database fleet.", llm=llm, tools=list(tools),
                  max_iter=max_iter, verbose=False, allow_delegation=False)
    task = Task(description="Move the billing tables off shard 03.", expected_output="a summary",
                agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False, **crew)
