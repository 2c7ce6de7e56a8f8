"""What the pre-flight verdict says, pinned field by field: the exact blockers a denial names, the
target and tool call of a fail-closed verdict, the wording that tells a model what happened and
what to do, and each policy knob on both sides of its default."""

from __future__ import annotations

import pytest

from rippl_core import (
    DatabaseError,
    InvalidInputError,
    Kind,
    Policy,
    Rippl,
    State,
    ToolCall,
    UnavailableError,
)
from rippl_core.causal.preflight import error_verdict

MIGRATE_09 = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "09"})


def test_a_denial_names_exactly_its_blockers_with_their_trails(incident: Rippl) -> None:
    incident.retract("CLM-001", reason="disk errors", by="monitor")
    verdict = incident.check("ACT-001")
    assert not verdict.allowed and verdict.target == "ACT-001"
    assert verdict.kind is Kind.ACTION and verdict.state is State.OUT
    assert [(b.premise, b.kind, b.state, b.reason, b.trail) for b in verdict.blockers] == [
        ("CLM-001", Kind.CLAIM, State.OUT, "disk errors", ["CLM-001", "DEC-001", "ACT-001"])]
    assert verdict.reason == ("ACT-001 denied: Premise Retracted; premise CLM-001 (Retracted). "
                              "Choose an action that does not rest on it, or reinstate the premise "
                              "if it was wrong.")
    assert verdict.explain().splitlines()[1] == ("  CLM-001 is Retracted (disk errors): "
                                                 "CLM-001 -> DEC-001 -> ACT-001")


def test_an_at_risk_denial_says_a_review_is_pending(incident: Rippl) -> None:
    incident.propose_retraction("CLM-001", reason="suspect disk", by="monitor")
    verdict = incident.check("ACT-001")
    assert not verdict.allowed and verdict.state is State.AT_RISK
    assert [b.premise for b in verdict.blockers] == ["CLM-001"]
    assert verdict.reason.endswith("A retraction is awaiting human review; approve or reject it, "
                                   "then retry.")
    assert "denied: Blocked" in verdict.reason


def test_allowed_despite_at_risk_says_what_it_rests_on(incident: Rippl) -> None:
    incident.propose_retraction("CLM-001", reason="suspect disk", by="monitor")
    verdict = incident.check("ACT-001", at_risk="allow")
    assert verdict.allowed and verdict.state is State.AT_RISK
    assert verdict.reason == "ACT-001 allowed despite Blocked; it rests on CLM-001 (Proposed Retraction)"
    assert [b.premise for b in verdict.blockers] == ["CLM-001"]
    retracted = incident.check("ACT-001", at_risk="allow", policy=Policy(at_risk="allow"))
    assert retracted.allowed  # the policy object and the keyword agree
    incident.approve(incident.reviews()[0].id, by="alice")
    assert not incident.check("ACT-001", at_risk="allow").allowed  # OUT is never allowed


def test_an_allowed_check_names_the_action_and_why(incident: Rippl) -> None:
    verdict = incident.check("ACT-001")
    assert verdict.allowed and verdict.blockers == []
    assert verdict.reason == "ACT-001 is Pending: every premise under it holds"
    by_call = incident.check(MIGRATE_09)
    assert by_call.allowed and by_call.target == "ACT-001" and by_call.tool_call == MIGRATE_09


def test_unknown_targets_follow_the_unknown_policy(incident: Rippl) -> None:
    denied = incident.check("ACT-404")
    assert not denied.allowed and denied.target == "ACT-404" and denied.tool_call is None
    assert denied.reason == "denied (fail closed): ACT-404 is not in the graph; add it or check the id"
    allowed = incident.check("ACT-404", unknown="allow")
    assert allowed.allowed and allowed.reason.startswith("allowed (policy unknown='allow')")
    call = ToolCall(name="drop_database", args={"db": "billing"})
    nothing = incident.check(call)
    assert not nothing.allowed and nothing.target is None and nothing.tool_call == call
    assert "no action in the graph is executed by tool 'drop_database'" in nothing.reason
    assert incident.check(call, unknown="allow").allowed
    recorded = incident.check(call, unknown="record")
    assert not recorded.allowed and "rippl.run" in recorded.reason


@pytest.mark.parametrize("exc", [DatabaseError("boom"), UnavailableError("down")])
def test_an_error_verdict_carries_its_target_and_call(exc: Exception) -> None:
    by_id = error_verdict("ACT-001", exc, Policy())
    assert not by_id.allowed and by_id.target == "ACT-001" and by_id.tool_call is None
    assert by_id.reason.startswith("denied (fail closed): the premise graph could not be checked "
                                   "for ACT-001")
    by_call = error_verdict(MIGRATE_09, exc, Policy())
    assert by_call.target is None and by_call.tool_call == MIGRATE_09
    assert "checked for migrate_tables" in by_call.reason
    opened = error_verdict(MIGRATE_09, exc, Policy(on_error="allow"))
    assert opened.allowed and opened.reason.startswith("allowed (policy on_error='allow')")


def test_an_error_verdict_refuses_to_hide_a_caller_mistake() -> None:
    with pytest.raises(InvalidInputError):
        error_verdict("ACT-001", InvalidInputError("bad id"), Policy())


def test_the_graph_being_gone_is_denied_through_check(rippl: Rippl) -> None:
    rippl.add_action("A", "act", tool="t")
    rippl.redis.execute_command("GRAPH.DELETE", rippl.keys.graph)  # the graph is gone under the handle
    verdict = rippl.check("A")
    assert not verdict.allowed


@pytest.mark.asyncio(loop_scope="session")
async def test_the_async_check_says_the_same(incident: Rippl, arippl: object) -> None:
    from rippl_core import AsyncRippl

    assert isinstance(arippl, AsyncRippl)
    incident.retract("CLM-001", reason="disk errors", by="monitor")
    sync, asynchronous = incident.check("ACT-001"), await arippl.check("ACT-001")
    assert sync == asynchronous
    assert (incident.check("ACT-404", unknown="allow")
            == await arippl.check("ACT-404", unknown="allow"))


def test_declared_and_resolve_name_the_actions_a_call_executes(incident: Rippl) -> None:
    from rippl_core.causal import preflight

    def run(op):  # type: ignore[no-untyped-def]
        return incident._driver.run(op)

    assert run(lambda: preflight.declared(MIGRATE_09)) == [("ACT-001", Kind.ACTION, State.IN, False)]
    assert run(lambda: preflight.resolve(MIGRATE_09)) == "ACT-001"
    unmatched = ToolCall(name="migrate_tables", args={"table": "billing"})
    assert run(lambda: preflight.declared(unmatched)) == []
    assert run(lambda: preflight.resolve(unmatched)) is None
    explicit = ToolCall(name="anything", args={}, action_id="ACT-002")
    assert run(lambda: preflight.resolve(explicit)) == "ACT-002"
    with pytest.raises(InvalidInputError):
        run(lambda: preflight.resolve(ToolCall(name="anything", action_id=" ACT-002")))
    incident.add_action("ACT-ANY", "any migration", decisions=["DEC-001"], tool="migrate_tables")
    # the exact match first, then those declared with the tool and any args
    assert run(lambda: preflight.resolve(MIGRATE_09)) == ["ACT-001", "ACT-ANY"]
    assert run(lambda: preflight.resolve(unmatched)) == "ACT-ANY"


def test_find_blockers_of_a_node_that_carries_none(incident: Rippl) -> None:
    """A node that holds, or is not in the graph, has no blockers (the walk finds none)."""
    from rippl_core.causal import preflight

    assert incident._driver.run(lambda: preflight.find_blockers("ACT-001")) == []
    assert incident._driver.run(lambda: preflight.find_blockers("ACT-404")) == []
    assert incident._driver.run(lambda: preflight.walk_blockers("ACT-404")) == []


def test_a_denied_call_of_several_actions_names_the_others(incident: Rippl) -> None:
    incident.add_action("ACT-ANY", "any migration", decisions=["DEC-001"], tool="migrate_tables")
    incident.retract("CLM-001", reason="disk errors", by="monitor")
    verdict = incident.check(MIGRATE_09)
    assert not verdict.allowed and verdict.target == "ACT-001"
    assert verdict.reason.startswith("ACT-001 (and ACT-ANY) denied: ")


def test_an_unknown_action_id_is_named_and_is_the_target(incident: Rippl) -> None:
    verdict = incident.check(ToolCall(name="x", action_id="ACT-999"))
    assert not verdict.allowed and verdict.target == "ACT-999"
    assert verdict.reason == "denied (fail closed): ACT-999 is not in the graph; add it or check the id"


def test_a_bad_id_names_what_it_was_given_as(incident: Rippl) -> None:
    with pytest.raises(InvalidInputError, match=r"^action_id "):
        incident.check(ToolCall(name="x", action_id=""))
    with pytest.raises(InvalidInputError, match=r"^target "):
        incident.check("")


def test_an_allowed_at_risk_call_of_several_actions_names_the_others(incident: Rippl) -> None:
    incident.add_action("ACT-ANY", "any migration", decisions=["DEC-001"], tool="migrate_tables")
    incident.propose_retraction("CLM-001", reason="suspect disk", by="monitor")
    verdict = incident.check(MIGRATE_09, at_risk="allow")
    assert verdict.allowed and verdict.target == "ACT-001"
    assert verdict.reason.startswith("ACT-001 (and ACT-ANY) allowed despite ")


def test_an_allowed_verdict_says_whether_the_action_already_ran(incident: Rippl) -> None:
    """By id and by tool call alike, the verdict reads the action's execution with its state."""
    assert incident.check("ACT-001").reason.startswith("ACT-001 is Pending:")
    assert incident.check(MIGRATE_09).reason.startswith("ACT-001 is Pending:")
    incident.mark_executed("ACT-001")
    assert incident.check("ACT-001").reason.startswith("ACT-001 is Executed:")
    assert incident.check(MIGRATE_09).reason.startswith("ACT-001 is Executed:")


def test_several_matching_actions_are_named_exact_first_then_by_id(incident: Rippl) -> None:
    """The order does not depend on the order the actions were declared in (nor on the order
    the database returns them): exact matches first, each group by id."""
    for action in ("ACT-Z9", "ACT-M5", "ACT-B2"):  # declared in reverse order of their ids
        incident.add_action(action, "the same migration", decisions=["DEC-001"],
                            tool="migrate_tables", args=MIGRATE_09.args)
    incident.add_action("ACT-A0", "any migration", decisions=["DEC-001"], tool="migrate_tables")
    verdict = incident.check(MIGRATE_09)
    assert verdict.allowed and verdict.target == "ACT-001"
    assert verdict.reason.startswith("ACT-001, ACT-B2, ACT-M5, ACT-Z9, ACT-A0 are Pending:")
    incident.retract("CLM-001", reason="disk errors", by="monitor")
    denied = incident.check(MIGRATE_09)
    assert not denied.allowed and denied.target == "ACT-001"
    assert denied.reason.startswith("ACT-001 (and ACT-B2, ACT-M5, ACT-Z9, ACT-A0) denied:")
