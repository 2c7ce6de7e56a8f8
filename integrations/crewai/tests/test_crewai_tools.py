"""GuardedTool (the check inside the tool's own run: direct calls, flows, crews without hooks) and
CheckPremisesTool (the agent asks), against real FalkorDB."""

from __future__ import annotations

from typing import Any

import pytest
from crewai.flow.flow import Flow, start
from crewai.tools import tool
from crewai.tools.tool_failure import ToolFailure
from crewai_helpers import SHARD_07, SHARD_09, MigrateTablesTool, WipeTool, run_crew
from rippl_crewai import CheckPremisesTool, GuardedTool, guard_tools
from rippl_crewai.testing import ScriptedLLM, native_call, react_call, react_final

from rippl_core import InvalidInputError, Policy, PremiseRetractedError, Rippl

TRAIL = "CLM-001 -> DEC-001 -> ACT-001"


def retract(incident: Rippl) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="sre")


def test_direct_run_bypassing_hooks_is_still_vetoed(incident: Rippl) -> None:
    migrate = MigrateTablesTool()
    [guarded] = guard_tools([migrate], incident)
    assert isinstance(guarded, GuardedTool)
    assert (guarded.name, guarded.description, guarded.args_schema) == (
        migrate.name, migrate.description, migrate.args_schema)
    assert guarded.run(**SHARD_09) == "migrated billing to shard 09"
    retract(incident)
    vetoed = guarded.run(**SHARD_09)
    assert isinstance(vetoed, ToolFailure) and vetoed.code == "premise_retracted"
    assert "VETOED by Rippl" in vetoed.message and TRAIL in vetoed.message
    assert vetoed.details["verdict"]["target"] == "ACT-001"
    assert guarded.last_verdict is not None and not guarded.last_verdict.allowed
    positional = guarded.run("billing", "09")  # positional arguments are checked too
    assert isinstance(positional, ToolFailure)
    assert guarded.run(**SHARD_07) == "migrated billing to shard 07"
    assert migrate.ran == [SHARD_09, SHARD_07]


def test_raise_on_deny(incident: Rippl) -> None:
    retract(incident)
    guarded = GuardedTool(wrapped=MigrateTablesTool(), memory=incident, on_deny="raise")
    with pytest.raises(PremiseRetractedError) as caught:
        guarded.run(**SHARD_09)
    assert caught.value.verdict.target == "ACT-001" and TRAIL in str(caught.value)


async def test_async_run(incident: Rippl) -> None:
    migrate = MigrateTablesTool()
    guarded = GuardedTool(wrapped=migrate, memory=incident)
    retract(incident)
    vetoed = await guarded.arun(**SHARD_09)
    assert isinstance(vetoed, ToolFailure)
    assert await guarded.arun(**SHARD_07) == "migrated billing to shard 07"

    @tool("migrate_tables")
    def plain(table: str, shard: str) -> str:
        """Migrate a table (sync only)."""
        return f"plain {table} {shard}"

    wrapped_sync = GuardedTool(wrapped=plain, memory=incident)
    assert await wrapped_sync.arun(**SHARD_07) == "plain billing 07"  # run in a thread
    assert isinstance(await wrapped_sync.arun(**SHARD_09), ToolFailure)


def test_a_flow_step_calling_the_tool_is_vetoed(incident: Rippl) -> None:
    migrate = MigrateTablesTool()
    guarded = GuardedTool(wrapped=migrate, memory=incident)
    retract(incident)

    class Migration(Flow):  # type: ignore[type-arg]
        @start()
        def move(self) -> Any:
            return guarded.run(**SHARD_09)

    result = Migration().kickoff()
    assert isinstance(result, ToolFailure) and TRAIL in result.message
    assert migrate.ran == []


@pytest.mark.parametrize("native", [False, True])
def test_guarded_tool_in_a_crew_without_hooks(incident: Rippl, native: bool) -> None:
    retract(incident)
    migrate = MigrateTablesTool()
    if native:
        llm = ScriptedLLM([native_call("migrate_tables", SHARD_09, "c1"),
                           native_call("migrate_tables", SHARD_07, "c2"), "done"], native=True)
    else:
        llm = ScriptedLLM([react_call("migrate_tables", SHARD_09),
                           react_call("migrate_tables", SHARD_07), react_final("done")])
    run_crew(llm, guard_tools([migrate], incident))
    assert migrate.ran == [SHARD_07]
    assert "VETOED by Rippl" in llm.shown(1) and TRAIL in llm.shown(1)
    assert "(code: premise_retracted)" in llm.shown(1)  # CrewAI's ToolFailure rendering


def test_a_repeated_call_is_checked_again_not_served_from_cache(incident: Rippl) -> None:
    migrate = MigrateTablesTool()

    def retract_then_repeat(messages: Any) -> Any:  # the premise falls between two calls
        retract(incident)
        return native_call("migrate_tables", SHARD_09, "c2")

    llm = ScriptedLLM([native_call("migrate_tables", SHARD_09, "c1"), retract_then_repeat,
                       "done"], native=True)
    run_crew(llm, guard_tools([migrate], incident))
    assert migrate.ran == [SHARD_09]
    assert "migrated billing to shard 09" in llm.shown(1)
    assert "VETOED by Rippl" in llm.shown(2) and TRAIL in llm.shown(2)


def test_guard_tools_keeps_guarded_and_check_tools_and_pins_actions(incident: Rippl) -> None:
    check = CheckPremisesTool(incident)
    already = GuardedTool(wrapped=MigrateTablesTool(), memory=incident)
    wipe = WipeTool()
    tools = guard_tools([check, already, wipe], incident, actions={"wipe_disk": "ACT-001"})
    assert tools[0] is check and tools[1] is already
    assert guard_tools([wipe], incident, unguarded=["wipe_disk"]) == [wipe]
    assert isinstance(tools[2], GuardedTool) and tools[2].action_id == "ACT-001"
    assert tools[2].run(target="sda") == "wiped sda"
    retract(incident)
    assert isinstance(tools[2].run(target="sda"), ToolFailure) and wipe.ran == [{"target": "sda"}]


def test_unknown_and_unreachable_fail_closed(incident: Rippl) -> None:
    wipe = WipeTool()
    strict = GuardedTool(wrapped=wipe, memory=incident)
    denied = strict.run(target="sda")
    assert isinstance(denied, ToolFailure) and denied.code == "unknown_action"
    lenient = GuardedTool(wrapped=wipe, memory=incident, policy=Policy(unknown="allow"))
    assert lenient.run(target="sda") == "wiped sda"
    assert wipe.ran == [{"target": "sda"}]


def test_more_positional_arguments_than_fields_are_judged_by_unknown(incident: Rippl) -> None:
    migrate = MigrateTablesTool()
    strict = GuardedTool(wrapped=migrate, memory=incident)
    denied = strict.run("billing", "07", "extra")
    assert isinstance(denied, ToolFailure) and denied.code == "unknown_action"
    assert "the call to migrate_tables could not be mapped to an action" in denied.message
    assert "takes at most 2 arguments" in denied.message
    assert strict.last_verdict is not None and not strict.last_verdict.allowed
    lenient = GuardedTool(wrapped=migrate, memory=incident, policy=Policy(unknown="allow"))
    with pytest.raises(TypeError):  # the guard steps aside: the tool itself refuses the call
        lenient.run("billing", "07", "extra")
    assert migrate.ran == []


def test_pending_review_is_a_retryable_failure(incident: Rippl) -> None:
    incident.propose_retraction("CLM-001", reason="disk errors?", by="grafana")
    failure = GuardedTool(wrapped=MigrateTablesTool(), memory=incident).run(**SHARD_09)
    assert isinstance(failure, ToolFailure)
    assert failure.code == "premise_at_risk" and failure.retryable


def test_check_premises_tool_answers_in_words(incident: Rippl) -> None:
    check = CheckPremisesTool(incident)
    allowed = check.run(target="ACT-001")
    assert allowed.startswith("ALLOWED: ACT-001 is Pending")
    assert "It rests on: " in allowed and "CLM-001 (Verified)" in allowed
    retract(incident)
    denied = check.run(target="ACT-001")
    assert denied.startswith("DENIED: ACT-001 denied: Premise Retracted")
    assert "CLM-001 is Retracted (disk errors on shard 09): " + TRAIL in denied
    fallback = check.run(target="migrate_tables", args=SHARD_07)
    assert fallback.startswith("ALLOWED: ACT-002") and "CLM-001" not in fallback
    assert check.run(target="DEC-001").startswith("DENIED: DEC-001 denied")
    assert check.run(target="ACT-404").startswith("DENIED: denied (fail closed): ACT-404 is not")
    assert "cannot be checked" in check.run(target=" padded ")


def test_an_agent_checks_before_acting(incident: Rippl) -> None:
    retract(incident)
    migrate = MigrateTablesTool()
    llm = ScriptedLLM([react_call("check_premises", {"target": "ACT-001"}),
                       react_call("check_premises", {"target": "migrate_tables",
                                                     "args": SHARD_07}),
                       react_call("migrate_tables", SHARD_07), react_final("moved to 07")])
    answer = run_crew(llm, [CheckPremisesTool(incident), *guard_tools([migrate], incident)])
    assert answer == "moved to 07" and migrate.ran == [SHARD_07]
    assert "DENIED" in llm.shown(1) and TRAIL in llm.shown(1)
    assert "ALLOWED: ACT-002" in llm.shown(2)


def test_bad_construction_is_refused(incident: Rippl) -> None:
    with pytest.raises(InvalidInputError):
        GuardedTool(wrapped=MigrateTablesTool(), memory="nope")
    with pytest.raises(InvalidInputError):
        CheckPremisesTool(object())  # type: ignore[arg-type]
    with pytest.raises(Exception, match="on_deny"):
        GuardedTool(wrapped=MigrateTablesTool(), memory=incident, on_deny="ignore")
