"""The preflight node on real StateGraphs checkpointed in FalkorDB, driven by a scripted model."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph_helpers import (
    MIGRATE_07,
    MIGRATE_09,
    ROLLBACK,
    Ops,
    State,
    model_node,
    react_builder,
    thread,
    tool_messages,
)
from rippl_langgraph import VETO_PREFIX, FalkorDBSaver, add_preflight, preflight_node
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import AsyncRippl, InvalidInputError, Policy, Rippl, ToolCall
from rippl_core.testing import start_falkordb_server


def guarded(incident: Rippl, ops: Ops, script: list, saver, **options):  # type: ignore[no-untyped-def]
    model = ScriptedChatModel(script=script)
    builder = add_preflight(react_builder(model, ops.tools()), memory=incident, **options)
    return builder.compile(checkpointer=saver), model


def test_allowed_calls_run(incident: Rippl, ops: Ops, saver: FalkorDBSaver) -> None:
    app, _ = guarded(incident, ops, [
        calls(tool_call("migrate_tables", MIGRATE_09, "c1"), tool_call("rollback_deploy", ROLLBACK, "c2")),
        "both done"], saver)
    out = app.invoke({"messages": [HumanMessage("migrate billing, roll back checkout")]}, thread())
    assert sorted(ops.names()) == ["migrate_tables", "rollback_deploy"]
    answers = tool_messages(out["messages"])
    assert set(answers) == {"c1", "c2"} and all(m.status == "success" for m in answers.values())
    assert out["messages"][-1].content == "both done"


def test_denied_call_never_runs_and_model_reads_the_trail(incident: Rippl, ops: Ops,
                                                          saver: FalkorDBSaver) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="telemetry")
    app, model = guarded(incident, ops, [calls(tool_call("migrate_tables", MIGRATE_09, "c1")),
                                         "understood"], saver)
    out = app.invoke({"messages": [HumanMessage("migrate billing to 09")]}, thread())
    assert ops.ran == []
    veto = tool_messages(out["messages"])["c1"]
    assert veto.status == "error" and veto.content.startswith(VETO_PREFIX)
    assert "CLM-001 -> DEC-001 -> ACT-001" in veto.content and "disk errors on shard 09" in veto.content
    assert veto.artifact["rippl_verdict"]["target"] == "ACT-001"
    assert veto.artifact["rippl_verdict"]["blockers"][0]["premise"] == "CLM-001"
    # the model's second turn saw the veto
    assert any(isinstance(m, ToolMessage) and m.status == "error" for m in model.seen[1])
    # the vetoed turn is in the checkpoint: a later read of the thread shows it
    state = app.get_state(thread())
    assert tool_messages(state.values["messages"])["c1"].status == "error"


def test_mixed_turn_runs_only_the_allowed_call(incident: Rippl, ops: Ops, saver: FalkorDBSaver) -> None:
    incident.retract("CLM-001", reason="disk errors on shard 09", by="telemetry")
    app, _ = guarded(incident, ops, [
        calls(tool_call("migrate_tables", MIGRATE_09, "c1"), tool_call("migrate_tables", MIGRATE_07, "c2"),
              tool_call("rollback_deploy", ROLLBACK, "c3")),
        "done"], saver)
    out = app.invoke({"messages": [HumanMessage("go")]}, thread())
    assert sorted(ops.ran, key=str) == sorted([("migrate_tables", MIGRATE_07),
                                               ("rollback_deploy", ROLLBACK)], key=str)
    answers = tool_messages(out["messages"])
    assert set(answers) == {"c1", "c2", "c3"}  # every tool call id gets exactly one answer
    assert answers["c1"].status == "error" and answers["c2"].status == "success"
    assert answers["c3"].status == "success"


def test_unknown_tool_is_recorded_by_default_and_denied_by_a_strict_policy(
        incident: Rippl, ops: Ops, saver: FalkorDBSaver) -> None:
    drop = calls(tool_call("delete_database", {"name": "billing"}, "c1"))
    app, _ = guarded(incident, ops, [drop, "ok"], saver)
    out = app.invoke({"messages": [HumanMessage("drop it")]}, thread("record"))
    assert ops.names() == ["delete_database"]  # captured: judged by what it rests on, which holds
    assert tool_messages(out["messages"])["c1"].status == "success"

    strict, _ = guarded(incident, ops, [drop, "ok"], saver, policy=Policy(unknown="deny"))
    out = strict.invoke({"messages": [HumanMessage("drop it")]}, thread("strict"))
    assert ops.names() == ["delete_database"]  # not again
    veto = tool_messages(out["messages"])["c1"]
    assert veto.status == "error" and "no declared action matches delete_database" in veto.content
    assert "strict allow-list" in veto.content

    unrecorded, _ = guarded(incident, ops, [drop, "ok"], saver, capture=False)
    out = unrecorded.invoke({"messages": [HumanMessage("drop it")]}, thread("plain"))
    assert ops.names() == ["delete_database"] and "no action in the graph" in \
        tool_messages(out["messages"])["c1"].content

    open_app, _ = guarded(incident, ops, [calls(tool_call("delete_database", {"name": "x"}, "c1")),
                                          "ok"], InMemorySaver(), policy=Policy(unknown="allow"),
                          capture=False)
    open_app.invoke({"messages": [HumanMessage("drop it")]}, thread("allow"))
    assert ops.names() == ["delete_database", "delete_database"]


def test_unguarded_and_resolver(incident: Rippl, ops: Ops, saver: FalkorDBSaver) -> None:
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    # shard_health is read-only: never checked; rollback_deploy is mapped to ACT-001 by name
    app, _ = guarded(incident, ops, [
        calls(tool_call("shard_health", {"shard": "09"}, "c1"), tool_call("rollback_deploy", ROLLBACK, "c2")),
        "ok"], saver, unguarded=["shard_health"], resolver={"rollback_deploy": "ACT-001"})
    out = app.invoke({"messages": [HumanMessage("look")]}, thread())
    assert ops.names() == ["shard_health"]
    assert "ACT-001" in tool_messages(out["messages"])["c2"].content


def test_resolver_function_and_its_failure_fails_closed(incident: Rippl, ops: Ops,
                                                        saver: FalkorDBSaver) -> None:
    def resolver(name: str, args: dict) -> ToolCall | str | None:  # type: ignore[type-arg]
        if name == "rollback_deploy":
            raise KeyError("no mapping for this service")
        return None

    app, _ = guarded(incident, ops, [
        calls(tool_call("migrate_tables", MIGRATE_07, "c1"), tool_call("rollback_deploy", ROLLBACK, "c2")),
        "ok"], saver, resolver=resolver)
    out = app.invoke({"messages": [HumanMessage("go")]}, thread())
    assert ops.names() == ["migrate_tables"]
    veto = tool_messages(out["messages"])["c2"]
    assert "the call to rollback_deploy could not be mapped to an action" in veto.content
    assert "KeyError" in veto.content


def test_at_risk_blocks_by_default_and_allows_by_policy(incident: Rippl, ops: Ops,
                                                        saver: FalkorDBSaver) -> None:
    incident.propose_retraction("CLM-001", reason="disk errors reported", by="telemetry")
    app, _ = guarded(incident, ops, [calls(tool_call("migrate_tables", MIGRATE_09, "c1")), "ok"], saver)
    out = app.invoke({"messages": [HumanMessage("go")]}, thread("block"))
    assert ops.ran == [] and "Blocked" in tool_messages(out["messages"])["c1"].content

    lenient, _ = guarded(incident, ops, [calls(tool_call("migrate_tables", MIGRATE_09, "c1")), "ok"],
                         saver, policy=Policy(at_risk="allow"))
    lenient.invoke({"messages": [HumanMessage("go")]}, thread("allow"))
    assert ops.ran == [("migrate_tables", MIGRATE_09)]


def test_unreachable_graph_denies_and_says_so(backend: dict, ops: Ops, saver: FalkorDBSaver) -> None:
    server = start_falkordb_server()
    memory = Rippl.open(url=server.url, graph="unreachable")
    memory.load({"sources": [{"id": "S1", "title": "s"}],
                 "claims": [{"id": "C1", "text": "c", "sources": ["S1"]}],
                 "decisions": [{"id": "D1", "title": "d", "premises": ["C1"]}],
                 "actions": [{"id": "A1", "title": "a", "decisions": ["D1"], "tool": "migrate_tables"}]})
    assert memory.check(ToolCall(name="migrate_tables", args=MIGRATE_07)).allowed
    server.stop()  # the premise graph goes away; checkpoints stay in the working FalkorDB
    try:
        model = ScriptedChatModel(script=[calls(tool_call("migrate_tables", MIGRATE_07, "c1")), "ok"])
        app = add_preflight(react_builder(model, ops.tools()), memory=memory).compile(checkpointer=saver)
        out = app.invoke({"messages": [HumanMessage("go")]}, thread())
        assert ops.ran == []
        veto = tool_messages(out["messages"])["c1"]
        assert "could not be recorded or checked" in veto.content and "fail closed" in veto.content
        assert "cannot reach" in veto.content
    finally:
        memory.close()


def test_explicit_node_wiring_and_stream(incident: Rippl, ops: Ops, saver: FalkorDBSaver) -> None:
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    model = ScriptedChatModel(script=[calls(tool_call("migrate_tables", MIGRATE_09, "c1")),
                                      calls(tool_call("migrate_tables", MIGRATE_07, "c2")), "moved to 07"])
    builder = StateGraph(State)
    builder.add_node("llm", model_node(model))
    builder.add_node("guard", preflight_node(incident, tools="run_tools", model="llm"),
                     destinations=("run_tools", "llm"))
    builder.add_node("run_tools", ToolNode(ops.tools()))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition, {"tools": "guard", "__end__": "__end__"})
    builder.add_edge("run_tools", "llm")
    app = builder.compile(checkpointer=saver)
    updates = list(app.stream({"messages": [HumanMessage("go")]}, thread(), stream_mode="updates"))
    order = [next(iter(u)) for u in updates]
    assert order == ["llm", "guard", "llm", "guard", "run_tools", "llm"]
    assert ops.ran == [("migrate_tables", MIGRATE_07)]


def test_no_tool_calls_means_nothing_to_check(incident: Rippl, ops: Ops, saver: FalkorDBSaver) -> None:
    app, _ = guarded(incident, ops, [AIMessage("nothing to do")], saver)
    out = app.invoke({"messages": [HumanMessage("hi")]}, thread())
    assert out["messages"][-1].content == "nothing to do" and ops.ran == []


def test_sync_graph_refuses_an_async_handle_loudly(ops: Ops, saver: FalkorDBSaver,
                                                   arippl: AsyncRippl) -> None:
    model = ScriptedChatModel(script=[calls(tool_call("migrate_tables", MIGRATE_07, "c1")), "ok"])
    app = add_preflight(react_builder(model, ops.tools()), memory=arippl).compile(checkpointer=saver)
    with pytest.raises(InvalidInputError, match="AsyncRippl"):
        app.invoke({"messages": [HumanMessage("go")]}, thread())
    assert ops.ran == []


def test_add_preflight_refuses_graphs_it_cannot_guard(rippl: Rippl, ops: Ops) -> None:
    model = ScriptedChatModel(script=["x"])
    with pytest.raises(InvalidInputError, match="no node 'run'"):
        add_preflight(react_builder(model, ops.tools()), memory=rippl, before="run")
    builder = StateGraph(State)
    builder.add_node("tools", ToolNode(ops.tools()))
    with pytest.raises(InvalidInputError, match="no edge leads"):
        add_preflight(builder, memory=rippl)
    with pytest.raises(InvalidInputError, match="Rippl or AsyncRippl"):
        add_preflight(react_builder(model, ops.tools()), memory="CLM-001")  # type: ignore[arg-type]


@pytest.mark.asyncio(loop_scope="session")
async def test_async_graph_with_async_handles(incident: Rippl, arippl: AsyncRippl, ops: Ops,
                                             asaver) -> None:  # type: ignore[no-untyped-def]
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    model = ScriptedChatModel(script=[
        calls(tool_call("migrate_tables", MIGRATE_09, "c1"), tool_call("migrate_tables", MIGRATE_07, "c2")),
        "done"])
    app = add_preflight(react_builder(model, ops.tools()), memory=arippl).compile(checkpointer=asaver)
    out = await app.ainvoke({"messages": [HumanMessage("go")]}, thread())
    assert ops.ran == [("migrate_tables", MIGRATE_07)]
    answers = tool_messages(out["messages"])
    assert answers["c1"].status == "error" and answers["c2"].status == "success"
    history = [s async for s in app.aget_state_history(thread())]
    assert len(history) >= 5 and history[0].values["messages"][-1].content == "done"


@pytest.mark.asyncio(loop_scope="session")
async def test_async_stream_with_a_sync_handle(incident: Rippl, ops: Ops, asaver) -> None:  # type: ignore[no-untyped-def]
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    model = ScriptedChatModel(script=[calls(tool_call("migrate_tables", MIGRATE_09, "c1")), "noted"])
    app = add_preflight(react_builder(model, ops.tools()), memory=incident).compile(checkpointer=asaver)
    chunks = [c async for c in app.astream({"messages": [HumanMessage("go")]}, thread(),
                                           stream_mode="updates")]
    vetoes = [m for c in chunks for update in c.values() if update
              for m in update.get("messages", []) if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in vetoes] == ["c1"] and ops.ran == []


# every tool-bearing action of the incident graph, plus calls no action describes
CALL_POOL = [
    ("migrate_tables", MIGRATE_09), ("migrate_tables", MIGRATE_07), ("rollback_deploy", ROLLBACK),
    ("delete_database", {"name": "billing"}), ("shard_health", {"shard": "09"}),
]
RETRACTABLE = ["CLM-001", "CLM-003", "CLM-009", "SRC-013"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picked=st.lists(st.sampled_from(range(len(CALL_POOL))), min_size=1, max_size=4),
       retracted=st.sets(st.sampled_from(RETRACTABLE)))
def test_partial_veto_property(incident: Rippl, picked: list[int], retracted: set[str]) -> None:
    """Whatever the turn and whatever is retracted: exactly the calls the core allows run, once
    each, and every tool call id gets exactly one answer. Captured on a fresh thread, a call rests
    on nothing retractable here, so it runs exactly when every declared action it matches allows it."""
    ops = Ops()
    turn = [tool_call(*CALL_POOL[i], f"c{n}") for n, i in enumerate(picked)]
    for claim in sorted(retracted):
        incident.retract(claim, reason="property test", by="hypothesis")
    try:
        allowed = [c for c in turn if incident.check(ToolCall(name=c["name"], args=c["args"]),
                                                     unknown="allow").allowed]
        app, _ = guarded(incident, ops, [calls(*turn), "done"], InMemorySaver())
        out = app.invoke({"messages": [HumanMessage("go")]}, thread())
        assert sorted(ops.ran, key=str) == sorted(((c["name"], c["args"]) for c in allowed), key=str)
        answers = tool_messages(out["messages"])
        assert set(answers) == {c["id"] for c in turn}
        ok = {c["id"] for c in allowed}
        assert {i for i, m in answers.items() if m.status == "success"} == ok
        assert all(m.content.startswith(VETO_PREFIX) for i, m in answers.items() if i not in ok)
    finally:
        for claim in sorted(retracted):
            incident.reinstate(claim, reason="property test done", by="hypothesis")


def _recorded_runs(memory: Rippl) -> list[str]:
    reply = memory.redis.execute_command("GRAPH.RO_QUERY", memory.keys.graph,
                                         "MATCH (r:Run) RETURN r.id ORDER BY r.id")
    return [row[0].decode() if isinstance(row[0], bytes) else row[0] for row in reply[1]]


@pytest.mark.asyncio(loop_scope="session")
async def test_node_invoked_alone_records_into_the_config_thread(incident: Rippl) -> None:
    """Outside a graph the node takes its run from the config it is invoked with (LangGraph
    passes the step's config in), sync and async; without a thread it denies, saying why."""
    state = {"messages": [HumanMessage("go"), calls(tool_call("migrate_tables", MIGRATE_07, "c1"))]}
    node = preflight_node(incident)
    routed = node.invoke(state, {"configurable": {"thread_id": "alone"}})
    assert [send.arg for send in routed.goto] == [[{**state["messages"][1].tool_calls[0],
                                                    "type": "tool_call"}]]
    await node.ainvoke(state, {"configurable": {"thread_id": "alone-async"}})
    assert _recorded_runs(incident) == ["alone", "alone-async"]
    denied = node.invoke(state)
    (veto,) = denied.update["messages"]
    assert veto.status == "error" and "thread" in veto.content
    assert _recorded_runs(incident) == ["alone", "alone-async"]
