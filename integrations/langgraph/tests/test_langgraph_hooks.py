"""The two other ways to guard a graph: `guarded_tool_node` (ToolNode wrappers) and
`RipplMiddleware` for `langchain.agents.create_agent`, sync and async, on FalkorDB checkpoints."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.types import Command
from langgraph_helpers import MIGRATE_07, MIGRATE_09, ROLLBACK, Ops, react_builder, thread, tool_messages
from rippl_langgraph import FalkorDBSaver, RipplMiddleware, guarded_tool_node
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import AsyncRippl, Policy, Rippl

MIXED = [calls(tool_call("migrate_tables", MIGRATE_09, "c1"), tool_call("migrate_tables", MIGRATE_07, "c2"),
               tool_call("delete_database", {"name": "billing"}, "c3")), "done"]


STRICT = Policy(unknown="deny")  # a strict allow-list: a call must match a declared action


def assert_mixed(ops: Ops, messages: list, *, strict: bool) -> None:  # type: ignore[type-arg]
    """migrate to 09 rests on the retracted CLM-001 (declared); migrate to 07 is declared and holds;
    delete_database matches nothing declared: captured and run, or denied by a strict policy."""
    answers = tool_messages(messages)
    assert set(answers) == {"c1", "c2", "c3"}
    assert answers["c1"].status == "error" and "CLM-001 -> DEC-001 -> ACT-001" in answers["c1"].content
    assert answers["c2"].status == "success"
    if strict:
        assert ops.ran == [("migrate_tables", MIGRATE_07)]
        assert answers["c3"].status == "error" and "strict allow-list" in answers["c3"].content
    else:
        assert sorted(ops.ran, key=str) == sorted([("migrate_tables", MIGRATE_07),
                                                   ("delete_database", {"name": "billing"})], key=str)
        assert answers["c3"].status == "success"


def assert_declared_only(ops: Ops, messages: list) -> None:  # type: ignore[type-arg]
    """MIXED judged by the declared actions only: the retracted premise vetoes c1, c2 runs, and
    delete_database, which no declared action matches, is denied (fail closed)."""
    answers = tool_messages(messages)
    assert answers["c1"].status == "error" and "CLM-001 -> DEC-001 -> ACT-001" in answers["c1"].content
    assert answers["c2"].status == "success"
    assert answers["c3"].status == "error" and "no action in the graph" in answers["c3"].content
    assert ops.ran == [("migrate_tables", MIGRATE_07)]


def test_guarded_tool_node_runs_only_allowed_calls(incident: Rippl, ops: Ops, saver: FalkorDBSaver) -> None:
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    model = ScriptedChatModel(script=MIXED)
    tools = guarded_tool_node(ops.tools(), incident, policy=STRICT)
    app = react_builder(model, tools).compile(checkpointer=saver)
    out = app.invoke({"messages": [HumanMessage("go")]}, thread())
    assert_mixed(ops, out["messages"], strict=True)


def test_guarded_tool_node_allows_when_premises_hold(incident: Rippl, ops: Ops, saver: FalkorDBSaver) -> None:
    model = ScriptedChatModel(script=[calls(tool_call("migrate_tables", MIGRATE_09, "c1"),
                                            tool_call("rollback_deploy", ROLLBACK, "c2")), "ok"])
    app = react_builder(model, guarded_tool_node(ops.tools(), incident)).compile(checkpointer=saver)
    app.invoke({"messages": [HumanMessage("go")]}, thread())
    assert sorted(ops.names()) == ["migrate_tables", "rollback_deploy"]


@pytest.mark.asyncio(loop_scope="session")
async def test_guarded_tool_node_async(incident: Rippl, arippl: AsyncRippl, ops: Ops, asaver) -> None:  # type: ignore[no-untyped-def]
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    model = ScriptedChatModel(script=MIXED)
    app = react_builder(model, guarded_tool_node(ops.tools(), arippl)).compile(checkpointer=asaver)
    out = await app.ainvoke({"messages": [HumanMessage("go")]}, thread())
    assert_mixed(ops, out["messages"], strict=False)


def test_middleware_on_create_agent(incident: Rippl, ops: Ops, saver: FalkorDBSaver) -> None:
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    model = ScriptedChatModel(script=MIXED)
    agent = create_agent(model, ops.tools(), middleware=[RipplMiddleware(incident, policy=STRICT)],
                         checkpointer=saver)
    out = agent.invoke({"messages": [HumanMessage("go")]}, thread())
    assert_mixed(ops, out["messages"], strict=True)
    assert out["messages"][-1].content == "done"


@pytest.mark.parametrize("review", [False, True])
def test_middleware_without_capture_guards_tool_calls_only(incident: Rippl, ops: Ops,
                                                           saver: FalkorDBSaver, review: bool) -> None:
    """capture=False: the declared-action check on every call, and no model-call hook, so
    create_agent adds no layer around the model (nothing is recorded there)."""
    from langchain.agents.middleware import AgentMiddleware

    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    middleware = RipplMiddleware(incident, policy=STRICT, capture=False, review=review)
    assert isinstance(middleware, RipplMiddleware) and middleware.name == "RipplMiddleware"
    assert type(middleware).wrap_model_call is AgentMiddleware.wrap_model_call
    assert type(middleware).awrap_model_call is AgentMiddleware.awrap_model_call
    assert type(RipplMiddleware(incident)).wrap_model_call is RipplMiddleware.wrap_model_call
    agent = create_agent(ScriptedChatModel(script=MIXED), ops.tools(), middleware=[middleware],
                         checkpointer=saver)
    out = agent.invoke({"messages": [HumanMessage("go")]}, thread())
    assert_declared_only(ops, out["messages"])
    runs = incident.redis.execute_command("GRAPH.RO_QUERY", incident.keys.graph,
                                           "MATCH (r:Run) RETURN count(r)")
    assert runs[1] == [[0]]  # nothing captured


@pytest.mark.asyncio(loop_scope="session")
async def test_middleware_without_capture_async(incident: Rippl, arippl: AsyncRippl, ops: Ops,
                                                asaver) -> None:  # type: ignore[no-untyped-def]
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    agent = create_agent(ScriptedChatModel(script=MIXED), ops.tools(), checkpointer=asaver,
                         middleware=[RipplMiddleware(arippl, policy=STRICT, capture=False)])
    out = await agent.ainvoke({"messages": [HumanMessage("go")]}, thread())
    assert_declared_only(ops, out["messages"])


@pytest.mark.asyncio(loop_scope="session")
async def test_middleware_async_stream(incident: Rippl, arippl: AsyncRippl, ops: Ops, asaver) -> None:  # type: ignore[no-untyped-def]
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    model = ScriptedChatModel(script=MIXED)
    agent = create_agent(model, ops.tools(), middleware=[RipplMiddleware(arippl)], checkpointer=asaver)
    async for _ in agent.astream({"messages": [HumanMessage("go")]}, thread(), stream_mode="updates"):
        pass
    state = await agent.aget_state(thread())
    assert_mixed(ops, state.values["messages"], strict=False)


def test_middleware_review_pauses_only_the_blocked_call(incident: Rippl, ops: Ops,
                                                        saver: FalkorDBSaver) -> None:
    proposal = incident.propose_retraction("CLM-001", reason="disk errors", by="telemetry")
    model = ScriptedChatModel(script=[calls(tool_call("migrate_tables", MIGRATE_09, "c1"),
                                            tool_call("rollback_deploy", ROLLBACK, "c2")), "done"])
    agent = create_agent(model, ops.tools(), checkpointer=saver,
                         middleware=[RipplMiddleware(incident, review=True, reviewer="oncall")])
    first = agent.invoke({"messages": [HumanMessage("go")]}, thread(), version="v2")
    (pause,) = first.interrupts
    assert pause.value["reviews"][0]["id"] == proposal.id
    assert ops.ran == [("rollback_deploy", ROLLBACK)]  # its own task: it ran, and only once
    out = agent.invoke(Command(resume="reject"), thread())
    assert sorted(ops.names()) == ["migrate_tables", "rollback_deploy"]
    assert all(m.status == "success" for m in tool_messages(out["messages"]).values())
    assert incident.review(proposal.id).status == "rejected"


def test_guard_denies_calls_it_cannot_check(incident: Rippl) -> None:
    from rippl_langgraph import Guard

    guard = Guard(incident)
    odd_name = guard.outcome({"name": " migrate_tables", "args": MIGRATE_07, "id": "c1"})
    assert not odd_name.allowed and "could not be mapped to an action" in odd_name.verdict.reason
    not_json = guard.outcome({"name": "migrate_tables", "args": {"shard": {1, 2}}, "id": "c2"})
    assert not not_json.allowed and "fail closed" in not_json.verdict.reason
    assert guard.outcome({"name": "migrate_tables", "args": MIGRATE_07, "id": "c3"}).allowed
