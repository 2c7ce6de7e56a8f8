"""Provenance capture on real crews driven by scripted models, on the ReAct and the native
function-calling paths, against real FalkorDB (embedded and server): nothing is declared; what
each call rests on is recorded as the crew runs."""

from __future__ import annotations

import contextvars
import glob
import threading
from pathlib import Path
from typing import Any

import pytest
from crewai import Agent, Crew, Memory
from crewai.events.event_bus import crewai_event_bus
from crewai.flow.flow import Flow, start
from crewai.hooks import InterceptionPoint
from crewai.hooks.dispatch import register, unregister
from crewai.state.checkpoint_config import CheckpointConfig
from crewai.tools.tool_failure import ToolFailure
from crewai_helpers import (
    H09,
    SHARD_07,
    SHARD_09,
    HealthTool,
    MigrateTablesTool,
    crew_of,
    model,
)
from rippl_crewai import (
    GuardedTool,
    RipplHooks,
    RipplStorage,
    guard_tools,
    register_rippl_hooks,
    rippl_guard,
    run_id,
)
from rippl_crewai.testing import HashEmbedder, ScriptedLLM

from rippl_core import Rippl
from rippl_core.testing import start_falkordb_server

PATHS = ["react", "native"]
M09 = ("migrate_tables", SHARD_09)
M07 = ("migrate_tables", SHARD_07)


def claim_of(hooks: RipplHooks, tool: str, **args: Any) -> str:
    """The claim the recorded output of a call became."""
    [claim] = [e.claim for e in hooks.executions if e.tool == tool and e.args == args]
    return claim


def action_of(hooks: RipplHooks, tool: str, args: dict[str, Any], *, allowed: bool = True) -> str:
    [target] = [v.target for v in hooks.verdicts if v.tool_call and v.tool_call.name == tool
                and v.tool_call.args == args and v.allowed is allowed]
    assert target is not None
    return target


def rests_on(rippl: Rippl, node: str) -> set[str]:
    return {r.id for r in rippl.premises(node)}


@pytest.mark.parametrize("path", PATHS)
def test_capture_is_the_default(rippl: Rippl, path: str) -> None:
    health, migrate = HealthTool(), MigrateTablesTool()
    with rippl_guard(rippl) as hooks:  # nothing declared: no action, no claim in the graph
        crew = crew_of(model(path, H09, M09), [health, migrate])
        crew.kickoff()
    assert health.ran == ["09"] and migrate.ran == [SHARD_09]
    run = f"crewai/{crew._kickoff_event_id}/{crew.tasks[0].id}"
    assert [e.run for e in hooks.executions] == [run, run]
    reading = claim_of(hooks, "get_shard_health", shard="09")
    assert rippl.get(reading).text.startswith('get_shard_health({"shard":"09"}) returned: shard 09')
    moved = action_of(hooks, *M09)
    assert reading in rests_on(rippl, moved)  # the turn that migrated rested on the reading
    assert rippl.get(moved).status == "Executed"
    rippl.retract(reading, reason="served from a stale replica", by="monitor")
    [compensation] = rippl.compensations()
    assert compensation.action == moved and compensation.run == run
    assert compensation.call_id is not None
    assert compensation.call_id == "c1" if path == "native" else \
        compensation.call_id.startswith("react-")


@pytest.mark.parametrize("path", PATHS)
def test_a_retraction_approved_during_a_pause_vetoes_the_call_after_it(rippl: Rippl,
                                                                       path: str) -> None:
    health, migrate = HealthTool(), MigrateTablesTool()

    def pause_then_migrate(messages: list[dict[str, Any]]) -> Any:  # the run waited for a human
        review = rippl.propose_retraction(claim_of(hooks, "get_shard_health", shard="09"),
                                          reason="stale replica", by="monitor")
        rippl.approve(review.id, by="alice")
        return M09

    llm = model(path, H09, pause_then_migrate, M07)
    with rippl_guard(rippl) as hooks:
        crew_of(llm, [health, migrate]).kickoff()
    assert migrate.ran == [SHARD_07]
    vetoed = [v for v in hooks.verdicts if not v.allowed]
    assert [v.tool_call.args for v in vetoed if v.tool_call] == [SHARD_09]
    trail = vetoed[0].blockers[0].trail
    assert trail[0] == claim_of(hooks, "get_shard_health", shard="09") and trail[-1] == \
        vetoed[0].target
    assert " -> ".join(trail) in llm.shown(2)  # the model read the trail


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("hide_veto", [False, True])
def test_a_turn_after_a_veto_the_model_read_no_longer_rests_on_what_it_named(
        rippl: Rippl, path: str, hide_veto: bool) -> None:
    health, migrate = HealthTool(), MigrateTablesTool()

    def retract_then_migrate(messages: list[dict[str, Any]]) -> Any:
        rippl.retract(claim_of(hooks, "get_shard_health", shard="09"), reason="stale replica",
                      by="monitor")
        return M09

    def forget_vetoes(ctx: Any) -> None:  # a history editor that drops veto messages
        ctx.messages[:] = [m for m in ctx.messages if "VETOED by Rippl" not in
                           str(m.get("content") or "")]

    if hide_veto:
        register(InterceptionPoint.PRE_MODEL_CALL, forget_vetoes)
    try:
        with rippl_guard(rippl) as hooks:
            crew_of(model(path, H09, retract_then_migrate, M07), [health, migrate]).kickoff()
    finally:
        unregister(InterceptionPoint.PRE_MODEL_CALL, forget_vetoes)
    reading = claim_of(hooks, "get_shard_health", shard="09")
    if not hide_veto:  # told: the veto named the reading, so the re-plan does not rest on it
        assert migrate.ran == [SHARD_07]
        assert reading not in rests_on(rippl, action_of(hooks, *M07))
    else:  # the model never read the veto: its next turn still rests on the false reading
        assert migrate.ran == []
        assert [v.allowed for v in hooks.verdicts] == [True, False, False]


def test_trimmed_history_leaves_its_observations_out(rippl: Rippl) -> None:
    def trim(ctx: Any) -> None:  # keep only what came after the first turn
        ctx.messages[:] = [m for m in ctx.messages if m.get("tool_call_id") != "c0" and not any(
            call.get("id") == "c0" for call in m.get("tool_calls") or [])]

    for trimmed in (False, True):
        health, migrate = HealthTool(), MigrateTablesTool()
        if trimmed:
            register(InterceptionPoint.PRE_MODEL_CALL, trim)
        try:
            with rippl_guard(rippl) as hooks:
                crew_of(model("native", H09, M09), [health, migrate]).kickoff()
        finally:
            unregister(InterceptionPoint.PRE_MODEL_CALL, trim)
        reading = claim_of(hooks, "get_shard_health", shard="09")
        assert (reading in rests_on(rippl, action_of(hooks, *M09))) is not trimmed


@pytest.mark.parametrize("path", PATHS)
def test_a_resumed_crew_continues_its_run_and_records_nothing_twice(rippl: Rippl, path: str,
                                                                    tmp_path: Path) -> None:
    # CrewAI's automatic checkpoints (CheckpointConfig(on_events=...)) are written by a pool thread
    # of its event bus while the crew goes on emitting events; that serialiser races the run
    # ("dictionary changed size during iteration" inside pydantic-core) and then writes nothing.
    # So the checkpoint is written here on the crew's own thread, at its first model call (the
    # task started, nothing executed yet), once the bus's pending handlers are done.
    health, folder, written = HealthTool(), tmp_path / "checkpoints", []

    def checkpoint(_: Any) -> None:
        state = crewai_event_bus.runtime_state
        if not written and state is not None:
            assert crewai_event_bus.flush()
            written.append(state.checkpoint(str(folder)))

    register(InterceptionPoint.PRE_MODEL_CALL, checkpoint)
    try:
        with rippl_guard(rippl) as first:
            crew_of(model(path, H09), [health]).kickoff()
    finally:
        unregister(InterceptionPoint.PRE_MODEL_CALL, checkpoint)
    recorded = rippl.stats()
    [checkpoint_file] = glob.glob(f"{folder}/**/*.json", recursive=True)

    def resume() -> RipplHooks:  # as a new process would (restoring sets CrewAI's context)
        resumed = Crew.from_checkpoint(CheckpointConfig(restore_from=checkpoint_file))
        resumed.agents[0].llm = model(path, H09)
        resumed.agents[0].tools = resumed.tasks[0].tools = [health]
        with rippl_guard(rippl) as hooks:
            resumed.kickoff()  # the unfinished task re-runs from its start
        return hooks

    second = contextvars.copy_context().run(resume)
    assert health.ran == ["09", "09"]  # the tool ran again...
    assert [e.run for e in second.executions] == [e.run for e in first.executions]
    assert rippl.stats() == recorded  # ...and the same turn, call and result were found, not added


@pytest.mark.parametrize("path", PATHS)
def test_recording_that_fails_denies_every_call(path: str) -> None:
    server = start_falkordb_server()
    try:
        handle = Rippl.open(url=server.url, graph="ops")
        server.stop()  # the graph can no longer be written
        health, migrate = HealthTool(), MigrateTablesTool()
        llm = model(path, H09, M09)
        with rippl_guard(handle, unguarded=["get_shard_health"]) as hooks:
            crew_of(llm, [health, migrate]).kickoff()
        handle.close()
    finally:
        server.stop()
    assert health.ran == [] and migrate.ran == []  # unguarded too: what is not on record
    assert len(hooks.verdicts) == 2 and all(not v.allowed for v in hooks.verdicts)
    assert "could not be recorded or checked" in llm.shown(1)
    assert "Tool execution blocked by hook" not in llm.shown(1)


def test_concurrent_crews_keep_their_runs_apart(rippl: Rippl) -> None:
    replica = HealthTool()  # crew A reads a stale replica, crew B the primary
    primary = HealthTool(readings={"09": "shard 09: healthy (primary)"})
    moved_a, moved_b = MigrateTablesTool(), MigrateTablesTool()
    read, retracted = threading.Barrier(3), threading.Barrier(3)

    def after_reading(messages: list[dict[str, Any]]) -> Any:
        read.wait(timeout=60)
        retracted.wait(timeout=60)
        return M09

    crews = [crew_of(model("native", H09, after_reading), [replica, moved_a]),
             crew_of(model("react", H09, after_reading), [primary, moved_b])]
    hooks = register_rippl_hooks(rippl)  # threads do not inherit a scope: process-wide hooks
    try:
        threads = [threading.Thread(target=crew.kickoff) for crew in crews]
        for thread in threads:
            thread.start()
        read.wait(timeout=60)
        stale = [e.claim for e in hooks.executions if "replica r3" in rippl.get(e.claim).text]
        rippl.retract(stale[0], reason="stale replica", by="monitor")
        retracted.wait(timeout=60)
        for thread in threads:
            thread.join(timeout=120)
    finally:
        hooks.unregister()
    assert moved_a.ran == [] and moved_b.ran == [SHARD_09]  # only the run that read it
    runs = {e.run for e in hooks.executions}
    assert len(runs) == 2 and all(run.startswith("crewai/") for run in runs)
    assert run_id(crews[0], crews[0].tasks[0]) != run_id(crews[1], crews[1].tasks[0])


@pytest.mark.parametrize("path", PATHS)
def test_memory_recalls_are_observations_of_the_task_run(rippl: Rippl, path: str) -> None:
    rippl.add_claim("CLM-H09", "Shard 09 is healthy")
    storage = RipplStorage(rippl, store="ops")
    memory = Memory(storage=storage, llm=ScriptedLLM(["{}"]), embedder=HashEmbedder())
    memory.remember("Shard 09 is healthy", scope="/fleet", categories=["health"],
                    importance=0.9, metadata={"rippl_claim": "CLM-H09"}, source="grafana")
    migrate = MigrateTablesTool()
    llm = model(path, M09)
    with rippl_guard(rippl) as hooks:
        crew_of(llm, [migrate], memory=memory).kickoff()
    assert "Shard 09 is healthy" in llm.shown(0)  # recalled into the task's prompt
    moved = action_of(hooks, *M09)
    assert "CLM-H09" in rests_on(rippl, moved)
    with rippl_guard(rippl) as other:  # another crew without the memory: another run
        crew_of(model(path, M09), [MigrateTablesTool()]).kickoff()
    assert "CLM-H09" not in rests_on(rippl, action_of(other, *M09))
    rippl.retract("CLM-H09", reason="disk errors", by="sre")
    assert [c.action for c in rippl.compensations()] == [moved]


def test_a_recall_outside_a_crew_records_nothing(rippl: Rippl) -> None:
    rippl.add_claim("CLM-H09", "Shard 09 is healthy")
    memory = Memory(storage=RipplStorage(rippl), llm=ScriptedLLM(["{}"]), embedder=HashEmbedder())
    memory.remember("Shard 09 is healthy", scope="/fleet", categories=["health"],
                    importance=0.9, metadata={"rippl_claim": "CLM-H09"})
    before = rippl.stats()
    assert [m.record.content for m in memory.recall("shard 09", depth="shallow")] == [
        "Shard 09 is healthy"]
    assert rippl.stats() == before and run_id() is None


@pytest.mark.parametrize("path", PATHS)
def test_the_tool_cache_never_replays_a_retracted_result(rippl: Rippl, path: str) -> None:
    health = HealthTool()
    crew = crew_of(model(path, H09), [health, MigrateTablesTool()], cache=True)
    with rippl_guard(rippl) as hooks:
        crew.kickoff()  # runs the tool; CrewAI caches its output for the crew's life
        reading = claim_of(hooks, "get_shard_health", shard="09")
        crew.agents[0].llm = model(path, H09, M09)
        crew.kickoff()  # served from the cache: recorded as an observation, not an execution
        assert health.ran == ["09"]
        assert reading in rests_on(rippl, action_of(hooks, *M09))
        rippl.retract(reading, reason="stale replica", by="monitor")
        health.readings["09"] = "shard 09: degraded, 214 reallocated sectors (primary)"
        crew.agents[0].llm = model(path, H09)
        crew.kickoff()  # the cached output is false now: evicted, the tool really runs
    assert health.ran == ["09", "09"]
    assert "degraded" in rippl.get(hooks.executions[-1].claim).text


def test_a_guarded_tool_in_a_flow_records_its_calls_in_the_flows_run(rippl: Rippl) -> None:
    health, migrate = guard_tools([HealthTool(), MigrateTablesTool()], rippl)
    assert isinstance(health, GuardedTool) and isinstance(migrate, GuardedTool)
    outputs: list[Any] = []

    class Migration(Flow):  # type: ignore[type-arg]
        @start()
        def move(self) -> None:  # no hooks here: the tools record and judge themselves
            outputs.append(health.run(shard="09"))
            outputs.append(migrate.run(**SHARD_09))

    Migration().kickoff()
    assert outputs[1] == "migrated billing to shard 09"  # nothing declared: allowed, recorded
    moved = migrate.last_verdict.target if migrate.last_verdict else None
    assert moved is not None
    [reading] = [r.id for r in rippl.premises(moved) if rippl.get(r.id).text.startswith(
        "get_shard_health(")]
    rippl.retract(reading, reason="stale replica", by="monitor")
    [compensation] = rippl.compensations()
    assert compensation.action == moved and compensation.run is not None
    assert compensation.run.startswith("crewai/flow/")
    denied = migrate.run(**SHARD_07)  # outside any run: nothing to judge an undeclared call by
    assert isinstance(denied, ToolFailure) and denied.code == "unknown_action"


@pytest.mark.parametrize("path", PATHS)
def test_hooks_and_guarded_tools_record_each_call_once(rippl: Rippl, path: str) -> None:
    tools = guard_tools([HealthTool(), MigrateTablesTool()], rippl)
    with rippl_guard(rippl) as hooks:
        crew_of(model(path, H09, M09), tools).kickoff()
    reading = claim_of(hooks, "get_shard_health", shard="09")
    rippl.retract(reading, reason="stale replica", by="monitor")
    assert [c.tool for c in rippl.compensations()] == ["migrate_tables"]  # one action, not two
    assert rippl.stats().nodes["Action"] == 2


@pytest.mark.parametrize("path", PATHS)
def test_an_agent_kicked_off_alone_is_a_run_of_its_own(rippl: Rippl, path: str) -> None:
    health, migrate = HealthTool(), MigrateTablesTool()
    agent = Agent(role="ops engineer", goal="Move billing", backstory="You run the fleet.",
                  llm=model(path, H09, M09), tools=[health, migrate], max_iter=4)
    with rippl_guard(rippl) as hooks:
        agent.kickoff("Move billing off shard 03.")
    assert [e.run for e in hooks.executions] == [f"crewai/{agent._kickoff_event_id}"] * 2
    reading = claim_of(hooks, "get_shard_health", shard="09")
    assert reading in rests_on(rippl, action_of(hooks, *M09))
