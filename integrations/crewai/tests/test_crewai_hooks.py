"""The tool-call hooks on a real Crew driven by a scripted model, on the ReAct text path and the
native function-calling path, against real FalkorDB (embedded and server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.hooks import InterceptionPoint, get_hooks
from crewai.hooks.dispatch import get_scoped_hooks, register, unregister
from crewai_helpers import (
    ROLLBACK,
    SHARD_07,
    SHARD_09,
    MigrateTablesTool,
    RollbackTool,
    WipeTool,
    declared_action,
    run_crew,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rippl_crewai import (
    CheckPremisesTool,
    check_call,
    register_rippl_hooks,
    rippl_guard,
)
from rippl_crewai.testing import ScriptedLLM, native_call, react_call, react_final

from rippl_core import InvalidInputError, Policy, Rippl, ToolCall
from rippl_core.testing import start_falkordb_server

INCIDENT = Path(__file__).resolve().parents[3] / "examples" / "incident.yaml"
TRAIL = "CLM-001 -> DEC-001 -> ACT-001"
PATHS = ["react", "native"]


def model(path: str, *calls: tuple[str, dict[str, Any]], final: str = "done") -> ScriptedLLM:
    """A scripted model that makes `calls` one per turn, then answers `final`."""
    if path == "native":
        steps: list[Any] = [native_call(tool, args, f"call_{i}") for i, (tool, args) in
                            enumerate(calls)]
        return ScriptedLLM([*steps, final], native=True)
    return ScriptedLLM([*(react_call(tool, args) for tool, args in calls), react_final(final)])


def hook_lists() -> tuple[list[Any], list[Any]]:
    return get_hooks(InterceptionPoint.PRE_TOOL_CALL), get_hooks(InterceptionPoint.POST_TOOL_CALL)


@pytest.fixture(autouse=True)
def no_leftover_hooks() -> Any:
    before = hook_lists()
    yield
    assert hook_lists() == before, "a test left global hooks behind"


@pytest.mark.parametrize("path", PATHS)
def test_allowed_call_runs(incident: Rippl, path: str) -> None:
    migrate = MigrateTablesTool()
    llm = model(path, ("migrate_tables", SHARD_09))
    with rippl_guard(incident) as hooks:
        assert run_crew(llm, [migrate]) == "done"
    assert migrate.ran == [SHARD_09]
    assert [v.allowed for v in hooks.verdicts] == [True]
    assert hooks.last_verdict is not None and declared_action(hooks.last_verdict) == "ACT-001"
    assert "migrated billing to shard 09" in llm.shown(1)


@pytest.mark.parametrize("path", PATHS)
def test_retracted_premise_vetoes_and_the_agent_reads_why(incident: Rippl, path: str) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="sre")
    migrate = MigrateTablesTool()
    llm = model(path, ("migrate_tables", SHARD_09), ("migrate_tables", SHARD_07))
    with rippl_guard(incident) as hooks:
        run_crew(llm, [migrate])
    assert migrate.ran == [SHARD_07]  # the vetoed call never ran; the fallback did
    assert [(v.allowed, declared_action(v)) for v in hooks.verdicts] == [(False, "ACT-001"),
                                                                         (True, "ACT-002")]
    shown = llm.shown(1)  # what the model was given after the vetoed call
    assert "VETOED by Rippl: the call to migrate_tables did not run" in shown
    assert "CLM-001 is Retracted (disk errors on shard 09): " + TRAIL in shown
    assert "Tool execution blocked by hook" not in shown
    assert "migrated billing to shard 07" in llm.shown(2)


@pytest.mark.parametrize("path", PATHS)
async def test_native_async_kickoff_is_guarded(incident: Rippl, path: str) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="sre")
    migrate = MigrateTablesTool()
    llm = model(path, ("migrate_tables", SHARD_09), ("migrate_tables", SHARD_07))
    agent = Agent(role="ops engineer", goal="g", backstory="b", llm=llm, tools=[migrate],
                  max_iter=5)
    crew = Crew(agents=[agent], tasks=[Task(description="Move billing off shard 03.",
                                            expected_output="a summary", agent=agent)])
    with rippl_guard(incident) as hooks:  # the contextvar scope follows the coroutine
        await crew.akickoff()
    assert migrate.ran == [SHARD_07] and [v.allowed for v in hooks.verdicts] == [False, True]
    assert TRAIL in llm.shown(1)


def test_parallel_native_calls_each_get_their_own_verdict(incident: Rippl) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="sre")
    migrate, rollback = MigrateTablesTool(), RollbackTool()
    llm = ScriptedLLM([native_call("migrate_tables", SHARD_09, "c1")
                       + native_call("rollback_deploy", ROLLBACK, "c2"), "done"], native=True)
    with rippl_guard(incident):
        run_crew(llm, [migrate, rollback])
    assert migrate.ran == [] and rollback.ran == [ROLLBACK]
    results = {m.get("tool_call_id"): m["content"] for m in llm.received[1] if m["role"] == "tool"}
    assert TRAIL in results["c1"] and results["c2"] == "rolled checkout-api back to 2.3.7"


@pytest.mark.parametrize("path", PATHS)
def test_an_undeclared_call_is_recorded_and_judged_by_its_run(incident: Rippl, path: str) -> None:
    wipe = WipeTool()
    with rippl_guard(incident) as hooks:  # capture: nothing declared for wipe_disk
        run_crew(model(path, ("wipe_disk", {"target": "shard-03"})), [wipe])
    assert wipe.ran == [{"target": "shard-03"}]
    verdict = hooks.verdicts[0]
    assert verdict.allowed and verdict.target is not None and verdict.target.startswith("ACT-")
    assert incident.get(verdict.target).status == "Executed"
    [execution] = hooks.executions
    assert (execution.tool, execution.args) == ("wipe_disk", {"target": "shard-03"})
    assert "wiped shard-03" in incident.get(execution.claim).text


@pytest.mark.parametrize("path", PATHS)
def test_a_strict_policy_denies_an_undeclared_call_and_the_agent_is_told(incident: Rippl,
                                                                         path: str) -> None:
    wipe = WipeTool()
    llm = model(path, ("wipe_disk", {"target": "shard-03"}))
    with rippl_guard(incident, policy=Policy(unknown="deny")) as hooks:
        run_crew(llm, [wipe])
    assert wipe.ran == []
    assert "no declared action matches wipe_disk" in llm.shown(1)
    assert hooks.verdicts[0].reason.startswith("denied (policy unknown='deny')")
    for capture in (True, False):
        with rippl_guard(incident, capture=capture, policy=Policy(unknown="allow")):
            run_crew(model(path, ("wipe_disk", {"target": "shard-03"})), [wipe])
    assert wipe.ran == [{"target": "shard-03"}] * 2


def test_args_that_match_no_action_are_denied_without_capture(incident: Rippl) -> None:
    migrate = MigrateTablesTool()
    llm = model("react", ("migrate_tables", {"table": "billing", "shard": "11"}))
    with rippl_guard(incident, capture=False):
        run_crew(llm, [migrate])
    assert migrate.ran == [] and "no action in the graph" in llm.shown(1)


@pytest.mark.parametrize("path", PATHS)
def test_graph_down_blocks_instead_of_allowing(path: str) -> None:
    server = start_falkordb_server()
    try:
        handle = Rippl.open(url=server.url, graph="ops")
        handle.load(INCIDENT)
        migrate = MigrateTablesTool()
        with rippl_guard(handle) as hooks:
            run_crew(model(path, ("migrate_tables", SHARD_07)), [migrate])
            assert migrate.ran == [SHARD_07]
            server.stop()  # the graph is gone mid-session
            llm = model(path, ("migrate_tables", SHARD_07))
            run_crew(llm, [migrate])
        assert migrate.ran == [SHARD_07]  # the second call was blocked, not allowed
        assert not hooks.verdicts[-1].allowed
        assert "denied (fail closed): the run crewai/" in llm.shown(1)
        assert "could not be recorded or checked" in llm.shown(1)
        for capture in (True, False):  # on_error="allow" never lets an unrecorded call run
            lenient = model(path, ("migrate_tables", SHARD_07))
            with rippl_guard(handle, capture=capture, policy=Policy(on_error="allow")):
                run_crew(lenient, [migrate])
            assert len(migrate.ran) == (1 if capture else 2)
        handle.close()
    finally:
        server.stop()


def test_a_failing_resolver_blocks_the_call(incident: Rippl) -> None:
    def broken(name: str, args: Any) -> str:
        raise RuntimeError("resolver bug")

    migrate = MigrateTablesTool()
    llm = model("react", ("migrate_tables", SHARD_07))
    with rippl_guard(incident, resolver=broken):
        run_crew(llm, [migrate])
    assert migrate.ran == []
    assert "could not be mapped to an action" in llm.shown(1) and "resolver bug" in llm.shown(1)


@pytest.mark.parametrize("capture", [False, True])
def test_resolver_pins_a_tool_to_an_action(incident: Rippl, capture: bool) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="sre")
    wipe = WipeTool()
    with rippl_guard(incident, resolver={"wipe_disk": "ACT-001"}, capture=capture) as hooks:
        run_crew(model("react", ("wipe_disk", {"target": "x"})), [wipe])
    assert wipe.ran == [] and hooks.verdicts[0].target == "ACT-001"


def test_scoped_hooks_are_gone_after_the_block(incident: Rippl) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="sre")
    before = hook_lists()
    migrate = MigrateTablesTool()
    with pytest.raises(RuntimeError), rippl_guard(incident):
        assert hook_lists() == before  # scoped: the global lists are never touched
        assert len(get_scoped_hooks(InterceptionPoint.PRE_TOOL_CALL)) == 1
        run_crew(model("react", ("migrate_tables", SHARD_09)), [migrate])
        assert migrate.ran == []
        raise RuntimeError("the run failed")
    assert hook_lists() == before
    assert get_scoped_hooks(InterceptionPoint.PRE_TOOL_CALL) == []
    assert get_scoped_hooks(InterceptionPoint.POST_TOOL_CALL) == []
    run_crew(model("react", ("migrate_tables", SHARD_09)), [migrate])  # unguarded now
    assert migrate.ran == [SHARD_09]


def test_nested_scopes_keep_the_outer_hooks(incident: Rippl) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="sre")
    migrate = MigrateTablesTool()
    with rippl_guard(incident, tools=["migrate_tables"]) as outer:
        with rippl_guard(incident, tools=["rollback_deploy"]):
            assert len(get_scoped_hooks(InterceptionPoint.PRE_TOOL_CALL)) == 2
            run_crew(model("react", ("migrate_tables", SHARD_09)), [migrate])
        assert len(get_scoped_hooks(InterceptionPoint.PRE_TOOL_CALL)) == 1
        outer.unregister()
        assert get_scoped_hooks(InterceptionPoint.PRE_TOOL_CALL) == []
    assert migrate.ran == []


@pytest.mark.parametrize("path", PATHS)
def test_global_hooks_until_unregistered(incident: Rippl, path: str) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="sre")
    before = hook_lists()
    migrate = MigrateTablesTool()
    hooks = register_rippl_hooks(incident)
    try:
        assert len(hook_lists()[0]) == len(before[0]) + 1
        llm = model(path, ("migrate_tables", SHARD_09))
        run_crew(llm, [migrate])
        assert migrate.ran == [] and TRAIL in llm.shown(1)
    finally:
        hooks.unregister()
    hooks.unregister()  # idempotent
    assert hook_lists() == before and not hooks.registered
    run_crew(model(path, ("migrate_tables", SHARD_09)), [migrate])
    assert migrate.ran == [SHARD_09]


def test_tools_agents_and_unguarded_filters(incident: Rippl) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="sre")
    migrate, wipe = MigrateTablesTool(), WipeTool()
    with rippl_guard(incident, tools=[RollbackTool()]):  # only rollback_deploy is checked
        run_crew(model("react", ("migrate_tables", SHARD_09)), [migrate])
    assert migrate.ran == [SHARD_09]
    with rippl_guard(incident, unguarded=["wipe_disk"]):
        run_crew(model("react", ("wipe_disk", {"target": "tmp"})), [wipe])
    assert wipe.ran == [{"target": "tmp"}]
    with rippl_guard(incident, agents=["auditor"]):  # the crew's agent is "ops engineer"
        run_crew(model("react", ("migrate_tables", SHARD_09)), [migrate])
    assert len(migrate.ran) == 2
    with rippl_guard(incident, agents=["ops engineer"]):
        run_crew(model("react", ("migrate_tables", SHARD_09)), [migrate])
    assert len(migrate.ran) == 2


def test_pending_review_blocks_until_decided(incident: Rippl) -> None:
    incident.propose_retraction("CLM-001", reason="disk errors on shard 09?", by="grafana")
    migrate = MigrateTablesTool()
    llm = model("native", ("migrate_tables", SHARD_09))
    with rippl_guard(incident):
        run_crew(llm, [migrate])
    assert migrate.ran == []
    assert "awaiting human review" in llm.shown(1) and "Proposed Retraction" in llm.shown(1)
    with rippl_guard(incident, policy=Policy(at_risk="allow")):
        run_crew(model("native", ("migrate_tables", SHARD_09)), [migrate])
    assert migrate.ran == [SHARD_09]


def test_the_premise_check_tool_is_never_vetoed(incident: Rippl) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="sre")
    check = CheckPremisesTool(incident)
    llm = model("react", ("check_premises", {"target": "ACT-001"}))
    with rippl_guard(incident):
        run_crew(llm, [check, MigrateTablesTool()])
    assert "DENIED: ACT-001 denied: Premise Retracted" in llm.shown(1)
    assert TRAIL in llm.shown(1) and "VETOED" not in llm.shown(1)


def test_a_call_blocked_by_another_hook_keeps_its_text(incident: Rippl) -> None:
    def deny_all(ctx: Any) -> bool:
        return False

    register(InterceptionPoint.PRE_TOOL_CALL, deny_all)
    try:
        migrate = MigrateTablesTool()
        llm = model("react", ("migrate_tables", SHARD_07))
        with rippl_guard(incident):
            run_crew(llm, [migrate])
    finally:
        unregister(InterceptionPoint.PRE_TOOL_CALL, deny_all)
    assert migrate.ran == []
    assert "Tool execution blocked by hook" in llm.shown(1) and "VETOED" not in llm.shown(1)


def test_bad_arguments_are_refused_up_front(incident: Rippl) -> None:
    with pytest.raises(InvalidInputError):
        register_rippl_hooks("not a handle")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError), rippl_guard(incident, tools="migrate_tables"):
        pass
    with pytest.raises(InvalidInputError):
        register_rippl_hooks(incident, policy={"unknown": "allow"})  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        register_rippl_hooks(incident, resolver=42)  # type: ignore[arg-type]


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)
tool_names = st.sampled_from(["migrate_tables", "cutover_traffic", "wipe_disk", ""]) | st.text(
    max_size=20)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=tool_names, args=st.dictionaries(st.text(max_size=8), json_values, max_size=4)
       | st.sampled_from([SHARD_09, SHARD_07]))
def test_check_call_never_raises_and_allows_only_mapped_calls(incident: Rippl, name: str,
                                                              args: dict[str, Any]) -> None:
    verdict = check_call(incident, name, args)
    if verdict.allowed:  # only a call that is exactly one action of the graph, holding
        assert verdict.target is not None
        node = incident.get(verdict.target)
        assert node.tool == name and node.args == args
    else:
        assert verdict.reason.startswith(("denied", f"{verdict.target} denied"))
    assert verdict.allowed == (name == "migrate_tables" and args in (SHARD_09, SHARD_07))


def test_check_call_with_an_explicit_action(incident: Rippl) -> None:
    assert check_call(incident, "anything", {}, action_id="ACT-002").allowed
    assert not check_call(incident, "anything", {}, action_id="ACT-404").allowed
    pinned = check_call(incident, "t", {}, resolver=lambda n, a: ToolCall(name="migrate_tables",
                                                                            args=SHARD_07))
    assert pinned.allowed and pinned.target == "ACT-002"
