"""Human review inside the graph: interrupt on a pending retraction, resume with a decision, and
never run a tool twice or open a review twice."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command
from langgraph_helpers import MIGRATE_07, MIGRATE_09, ROLLBACK, Ops, react_builder, thread, tool_messages
from rippl_langgraph import FalkorDBSaver, add_preflight
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call
from rippl_langgraph.tools import retraction_tool

from rippl_core import AsyncRippl, Rippl


def review_graph(memory, ops: Ops, script: list, saver, **options):  # type: ignore[no-untyped-def]
    model = ScriptedChatModel(script=script)
    tools = [*ops.tools(), retraction_tool(memory, by="ops-agent")]
    builder = add_preflight(react_builder(model, tools), memory=memory, review=True,
                            reviewer="oncall", unguarded=["propose_retraction", "shard_health"],
                            **options)
    return builder.compile(checkpointer=saver), model


def test_interrupt_shows_the_review_and_reject_runs_the_call_once(incident: Rippl, ops: Ops,
                                                                  saver: FalkorDBSaver) -> None:
    proposal = incident.propose_retraction("CLM-001", reason="disk errors reported", by="telemetry")
    app, _ = review_graph(incident, ops, [calls(tool_call("migrate_tables", MIGRATE_09, "c1")),
                                          "migrated"], saver)
    first = app.invoke({"messages": [HumanMessage("migrate to 09")]}, thread(), version="v2")
    assert ops.ran == []
    (pause,) = first.interrupts
    assert pause.value["type"] == "rippl_review"
    (shown,) = pause.value["reviews"]
    assert shown["id"] == proposal.id and shown["claim"] == "CLM-001"
    assert "ACT-001" in shown["at_risk"] and "DEC-001" in shown["at_risk"]
    assert pause.value["tool_calls"][0]["action"] == "ACT-001"
    assert app.get_state(thread()).next == ("rippl_preflight",)

    out = app.invoke(Command(resume="reject"), thread())
    assert ops.ran == [("migrate_tables", MIGRATE_09)]
    assert tool_messages(out["messages"])["c1"].status == "success"
    decided = incident.review(proposal.id)
    assert decided.status == "rejected" and decided.decided_by == "oncall"
    assert incident.check("ACT-001").allowed
    # nothing left to resume: invoking the finished thread again runs nothing twice
    app.invoke(None, thread())
    assert ops.ran == [("migrate_tables", MIGRATE_09)]
    assert len(incident.reviews(None)) == 1


def test_approve_vetoes_and_the_model_reads_why(incident: Rippl, ops: Ops, saver: FalkorDBSaver) -> None:
    proposal = incident.propose_retraction("CLM-001", reason="disk errors reported", by="telemetry")
    app, _ = review_graph(incident, ops, [calls(tool_call("migrate_tables", MIGRATE_09, "c1")),
                                          "will use 07"], saver)
    app.invoke({"messages": [HumanMessage("migrate")]}, thread())
    out = app.invoke(Command(resume={"decision": "approve", "by": "alice", "note": "confirmed"}), thread())
    assert ops.ran == []
    veto = tool_messages(out["messages"])["c1"]
    assert veto.status == "error" and "Retracted" in veto.content and "CLM-001" in veto.content
    decided = incident.review(proposal.id)
    assert decided.status == "approved" and decided.decided_by == "alice" and decided.note == "confirmed"
    assert incident.get("CLM-001").status == "Retracted"
    assert out["messages"][-1].content == "will use 07"


def test_mixed_turn_waits_for_the_human_then_runs_each_call_once(incident: Rippl, ops: Ops,
                                                                 saver: FalkorDBSaver) -> None:
    incident.propose_retraction("CLM-001", reason="disk errors reported", by="telemetry")
    app, _ = review_graph(incident, ops, [
        calls(tool_call("migrate_tables", MIGRATE_09, "c1"), tool_call("rollback_deploy", ROLLBACK, "c2")),
        "done"], saver)
    app.invoke({"messages": [HumanMessage("go")]}, thread())
    assert ops.ran == []  # nothing runs before the decision, so nothing can run twice after it
    out = app.invoke(Command(resume="approve"), thread())
    assert ops.ran == [("rollback_deploy", ROLLBACK)]
    answers = tool_messages(out["messages"])
    assert answers["c1"].status == "error" and answers["c2"].status == "success"


def test_defer_keeps_the_review_pending_and_vetoes_for_now(incident: Rippl, ops: Ops,
                                                           saver: FalkorDBSaver) -> None:
    proposal = incident.propose_retraction("CLM-001", reason="disk errors reported", by="telemetry")
    app, _ = review_graph(incident, ops, [calls(tool_call("migrate_tables", MIGRATE_09, "c1")), "ok"], saver)
    app.invoke({"messages": [HumanMessage("go")]}, thread())
    out = app.invoke(Command(resume={proposal.id: "defer"}), thread())
    assert ops.ran == [] and incident.review(proposal.id).status == "pending"
    assert "Blocked" in tool_messages(out["messages"])["c1"].content


def test_an_unusable_answer_asks_again_and_changes_nothing(incident: Rippl, ops: Ops,
                                                            saver: FalkorDBSaver) -> None:
    proposal = incident.propose_retraction("CLM-001", reason="disk errors reported", by="telemetry")
    app, _ = review_graph(incident, ops, [calls(tool_call("migrate_tables", MIGRATE_09, "c1")), "ok"], saver)
    app.invoke({"messages": [HumanMessage("go")]}, thread())
    again = app.invoke(Command(resume="yes please"), thread(), version="v2")
    (pause,) = again.interrupts
    assert "not one of approve, reject, defer" in pause.value["error"]
    again = app.invoke(Command(resume={"REV-nope": "approve"}), thread(), version="v2")
    assert "not pending here" in again.interrupts[0].value["error"]
    assert incident.review(proposal.id).status == "pending" and ops.ran == []
    out = app.invoke(Command(resume="reject"), thread())  # a usable answer resumes the same pause
    assert ops.ran == [("migrate_tables", MIGRATE_09)]
    assert tool_messages(out["messages"])["c1"].status == "success"
    assert incident.review(proposal.id).status == "rejected"


def test_agent_flags_a_claim_once_then_the_human_decides(incident: Rippl, ops: Ops,
                                                         saver: FalkorDBSaver) -> None:
    flag = {"claim_id": "CLM-001", "reason": "shard 09 shows disk errors", "evidence": "shard_health"}
    app, _ = review_graph(incident, ops, [
        calls(tool_call("shard_health", {"shard": "09"}, "c1")),
        calls(tool_call("propose_retraction", flag, "c2")),
        calls(tool_call("propose_retraction", flag, "c3")),  # the model repeats itself
        calls(tool_call("migrate_tables", MIGRATE_09, "c4")),
        calls(tool_call("migrate_tables", MIGRATE_07, "c5")),
        "billing is on 07"], saver)
    app.invoke({"messages": [HumanMessage("move billing")]}, thread())
    (pending,) = incident.reviews("pending")
    assert pending.proposed_by == "ops-agent" and pending.claim == "CLM-001"
    out = app.invoke(Command(resume="approve"), thread())
    assert ops.names() == ["shard_health", "migrate_tables"] and ops.ran[-1][1] == MIGRATE_07
    assert len(incident.reviews(None)) == 1
    assert '"already_pending": true' in tool_messages(out["messages"])["c3"].content
    assert out["messages"][-1].content == "billing is on 07"


@pytest.mark.asyncio(loop_scope="session")
async def test_async_review_path(incident: Rippl, arippl: AsyncRippl, ops: Ops, asaver) -> None:  # type: ignore[no-untyped-def]
    proposal = await arippl.propose_retraction("CLM-001", reason="disk errors", by="telemetry")
    app, _ = review_graph(arippl, ops, [
        calls(tool_call("migrate_tables", MIGRATE_09, "c1"), tool_call("migrate_tables", MIGRATE_07, "c2")),
        "done"], asaver)
    first = await app.ainvoke({"messages": [HumanMessage("go")]}, thread(), version="v2")
    assert first.interrupts and ops.ran == []
    out = await app.ainvoke(Command(resume="reject"), thread())
    assert sorted(ops.ran, key=str) == sorted([("migrate_tables", MIGRATE_09),
                                               ("migrate_tables", MIGRATE_07)], key=str)
    assert all(m.status == "success" for m in tool_messages(out["messages"]).values())
    assert (await arippl.review(proposal.id)).status == "rejected"
