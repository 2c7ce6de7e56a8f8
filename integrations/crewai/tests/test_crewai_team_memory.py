"""What a CrewAI agent knows leaves its task by two more doors, and its premises go with it (real
crews, scripted models, both backends):

- **memory**: a scout saves what it read to the crew's memory (`RipplStorage`) with a tool, or
  CrewAI saves the scout's task output by itself; the reading is retracted; an operator in a later
  kickoff recalls the memory and migrates: vetoed, the trail through the memory. A memory a person
  also stated holds.
- **team mates**: a lead vetoed on `migrate_tables(shard="09")` delegates the task to a coworker
  ("Delegate work to coworker"), or a hierarchical crew's manager re-assigns it: the coworker's
  identical call, defaults spelled out or a number quoted, stays vetoed naming the original veto;
  its different act runs.
"""

from __future__ import annotations

import json
from typing import Any

from crewai import Agent, Crew, Memory, Process, Task
from crewai.tools import BaseTool
from crewai_helpers import HealthTool, RecallTool, SaveNoteTool, retract, then, vetoes_shown
from pydantic import BaseModel, Field
from rippl_crewai import RipplHooks, RipplStorage, rippl_guard
from rippl_crewai.testing import HashEmbedder, ScriptedLLM, native_call

from rippl_core import Rippl, State

TEXT = "Shard 09 is healthy"


class MoveInput(BaseModel):
    shard: str = Field(description="The destination shard, e.g. '07'")
    rows: int = Field(default=100, description="Rows per batch")
    dry_run: bool = Field(default=False, description="Only say what would move")


class MigrateTool(BaseTool):
    name: str = "migrate_tables"
    description: str = "Migrate the billing tables to another shard."
    args_schema: type[BaseModel] = MoveInput
    ran: list[dict[str, Any]] = Field(default_factory=list)

    def _run(self, shard: str, rows: int = 100, dry_run: bool = False) -> str:
        self.ran.append({"shard": shard, "rows": rows, "dry_run": dry_run})
        return f"migrated billing to shard {shard}"


def memory_llm(extracted: list[str]) -> ScriptedLLM:
    """The memory's own model: extracts `extracted` from a task's output; any other question
    (how to file a memory) gets the empty answer (CrewAI's defaults)."""
    def answer(messages: list[dict[str, Any]]) -> str:
        asked = " ".join(str(m.get("content")) for m in messages).lower()
        return json.dumps({"memories": extracted}) if "extract" in asked else "{}"
    return ScriptedLLM([answer])


def memory_on(rippl: Rippl, extracted: list[str] | None = None) -> Memory:
    return Memory(storage=RipplStorage(rippl), llm=memory_llm(extracted or []),
                  embedder=HashEmbedder())


def steps(*replies: Any, final: str = "done") -> ScriptedLLM:
    return ScriptedLLM([*replies, final], native=True)


def agent(role: str, llm: ScriptedLLM, tools: list[BaseTool], **kw: Any) -> Agent:
    return Agent(role=role, goal="Keep billing healthy", backstory="You run the payments fleet.",
                 llm=llm, tools=tools, max_iter=10, verbose=False,
                 allow_delegation=kw.pop("allow_delegation", False), **kw)


def one_task(member: Agent, description: str, **kw: Any) -> Crew:
    task = Task(description=description, expected_output="a summary", agent=member)
    return Crew(agents=[member], tasks=[task], verbose=False, **kw)


# ------------------------------------------------------------------------------ memory


def operator_recalls(rippl: Rippl, memory: Memory, hooks: list[RipplHooks],
                     migrate: MigrateTool) -> ScriptedLLM:
    llm = steps(native_call("recall", {"query": "shard 09 health"}, "r1"),
                then(lambda: retract(rippl, hooks[0])(),
                     native_call("migrate_tables", {"shard": "09"}, "m1")))
    one_task(agent("operator", llm, [RecallTool(memory=memory), migrate]),
             "Move billing to shard 09 if memory says it is healthy.").kickoff()
    return llm


def scout_notes(memory: Memory) -> None:
    """A scout reads shard 09's health and saves what it read to memory with a tool."""
    one_task(agent("scout", steps(native_call("get_shard_health", {"shard": "09"}, "h1"),
                                  native_call("save_note", {"text": TEXT}, "s1")),
                   [HealthTool(), SaveNoteTool(memory=memory)]),
             "Check shard 09 and note what you find.").kickoff()
    memory.drain_writes()


def test_a_memory_a_tool_saved_from_a_reading_is_vetoed_with_it(rippl: Rippl) -> None:
    memory, migrate, box = memory_on(rippl), MigrateTool(), []
    with rippl_guard(rippl) as hooks:
        box.append(hooks)
        scout_notes(memory)
        llm = operator_recalls(rippl, memory, box, migrate)
    assert TEXT in llm.shown(1) and migrate.ran == []
    [veto] = vetoes_shown(llm)
    [claim] = [e.claim for e in hooks.executions if e.tool == "get_shard_health"]
    assert claim in veto
    [saved] = [r for r in memory.list_records() if r.content == TEXT]
    assert saved.metadata["rippl_status"] == "Retracted"
    writer = rippl.get(saved.metadata["rippl_claim"]).justifications[0][0]
    assert rippl.get(writer).text.startswith("run crewai/") and " wrote it (turn " in \
        rippl.get(writer).text


def test_crewais_own_save_of_a_task_output_rests_on_what_the_task_read(rippl: Rippl) -> None:
    memory, migrate, box = memory_on(rippl, extracted=[TEXT]), MigrateTool(), []
    with rippl_guard(rippl) as hooks:
        box.append(hooks)
        one_task(agent("scout", steps(native_call("get_shard_health", {"shard": "09"}, "h1"),
                                      final=f"{TEXT}."), [HealthTool()]),
                 "Check shard 09.", memory=memory).kickoff()
        memory.drain_writes()
        [saved] = [r for r in memory.list_records() if r.content == TEXT]
        assert saved.metadata["rippl_status"] == "Verified"
        llm = operator_recalls(rippl, memory, box, migrate)
    assert migrate.ran == [] and len(vetoes_shown(llm)) == 1
    [saved] = [r for r in memory.list_records() if r.content == TEXT]
    assert saved.metadata["rippl_status"] == "Retracted"


def test_a_memory_a_person_also_stated_holds(rippl: Rippl) -> None:
    memory, migrate, box = memory_on(rippl), MigrateTool(), []
    with rippl_guard(rippl) as hooks:
        box.append(hooks)
        scout_notes(memory)
        memory.remember(TEXT, scope="/ops", categories=["shards"], importance=0.9,
                        source="on-call engineer, by hand")  # outside any crew: a person
        operator_recalls(rippl, memory, box, migrate)
    assert [r["shard"] for r in migrate.ran] == ["09"]
    [claim] = {r.metadata["rippl_claim"] for r in memory.list_records() if r.content == TEXT}
    assert rippl.get(claim).state is State.IN


# ------------------------------------------------------------------------------ team mates

SPELLINGS = [{"shard": "09"}, {"shard": "09", "dry_run": False},
             {"shard": "09", "rows": 100, "dry_run": False}, {"shard": "09", "rows": "100"}]


def coworker_llm(prefix: str) -> ScriptedLLM:
    return steps(*(native_call("migrate_tables", args, f"{prefix}{n}")
                   for n, args in enumerate(SPELLINGS)),
                 native_call("migrate_tables", {"shard": "07"}, f"{prefix}-07"))


def check_held(migrate: MigrateTool, llm: ScriptedLLM) -> None:
    shown = vetoes_shown(llm)
    assert len(shown) == len(SPELLINGS), shown
    assert all("vetoed at turn" in v and "of run crewai/" in v for v in shown), shown
    assert [r["shard"] for r in migrate.ran] == ["07"]


def test_a_coworker_delegated_the_vetoed_task_stays_vetoed(rippl: Rippl) -> None:
    migrate, box = MigrateTool(), []
    operator_llm = coworker_llm("op-")
    operator = agent("operator", operator_llm, [migrate])
    lead_llm = steps(native_call("get_shard_health", {"shard": "09"}, "h1"),
                     then(lambda: retract(rippl, box[0])(),
                          native_call("migrate_tables", {"shard": "09"}, "m1")),
                     native_call("delegate_work_to_coworker", {
                         "task": "Migrate the billing tables to shard 09.",
                         "context": "the billing migration", "coworker": "operator"}, "d1"))
    lead = agent("lead", lead_llm, [HealthTool(), migrate], allow_delegation=True)
    task = Task(description="Move billing to shard 09.", expected_output="a summary", agent=lead)
    with rippl_guard(rippl) as hooks:
        box.append(hooks)
        Crew(agents=[lead, operator], tasks=[task], verbose=False).kickoff()
    check_held(migrate, operator_llm)


def test_a_hierarchical_manager_re_assigning_the_vetoed_task_does_not_lift_it(
        rippl: Rippl) -> None:
    migrate, box = MigrateTool(), []
    first_llm = steps(native_call("get_shard_health", {"shard": "09"}, "h1"),
                      then(lambda: retract(rippl, box[0])(),
                           native_call("migrate_tables", {"shard": "09"}, "m1")),
                      final="Vetoed: shard 09's health reading was retracted.")
    second_llm = coworker_llm("w2-")
    first = agent("first operator", first_llm, [HealthTool(), migrate])
    second = agent("second operator", second_llm, [migrate])
    ask = "Migrate the billing tables to shard 09."
    manager = steps(
        native_call("delegate_work_to_coworker",
                    {"task": ask, "context": "billing", "coworker": "first operator"}, "g1"),
        native_call("delegate_work_to_coworker",
                    {"task": ask, "context": "billing", "coworker": "second operator"}, "g2"))
    task = Task(description="Move billing to shard 09.", expected_output="a summary")
    crew = Crew(agents=[first, second], tasks=[task], process=Process.hierarchical,
                manager_llm=manager, verbose=False)
    with rippl_guard(rippl) as hooks:
        box.append(hooks)
        crew.kickoff()
    check_held(migrate, second_llm)


def test_one_agent_spelling_its_vetoed_call_another_way_stays_vetoed(rippl: Rippl) -> None:
    migrate, box = MigrateTool(), []
    llm = steps(native_call("get_shard_health", {"shard": "09"}, "h1"),
                then(lambda: retract(rippl, box[0])(),
                     native_call("migrate_tables", {"shard": "09"}, "m1")),
                *(native_call("migrate_tables", args, f"s{n}") for n, args in enumerate(SPELLINGS)),
                native_call("migrate_tables", {"shard": "07"}, "s-07"))
    with rippl_guard(rippl) as hooks:
        box.append(hooks)
        one_task(agent("ops", llm, [HealthTool(), migrate]), "Move billing.").kickoff()
    shown = vetoes_shown(llm)
    assert len(shown) == 1 + len(SPELLINGS)
    assert all("repeats the call vetoed at turn" in v for v in shown[1:])
    assert [r["shard"] for r in migrate.ran] == ["07"]
