"""A veto binds the action, not the message: a call that repeats a call vetoed earlier in its run
stays vetoed while the premises under the vetoed call stay retracted, whatever the model was told,
on every path that judges a call; only a person lifts it (a reinstatement, or a one-call override
approved through the review gate). Both backends, sync and async."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rippl_core import AsyncRippl, Policy, ReviewError, Rippl, State, ToolCall, Verdict

HEALTH = ToolCall(name="get_health", args={"shard": "09"}, id="c1")


def migrate(call_id: str, **args: object) -> ToolCall:
    return ToolCall(name="migrate", args=args or {"shard": "09", "table": "billing"}, id=call_id)


def vetoed_once(rippl: Rippl, run_id: str = "r1") -> tuple[str, Verdict]:
    """The agent reads shard health, the reading is retracted through the review gate, and its
    migration is vetoed (the model reads the veto): (the health claim, the veto)."""
    run = rippl.run(run_id, agent="ops")
    run.decide("t1", [HEALTH], context=[])
    claim = run.executed(HEALTH, "shard 09: healthy")
    review = rippl.propose_retraction(claim, reason="served from a stale cache", by="monitor")
    rippl.approve(review.id, by="alice")
    [veto] = run.decide("t2", [migrate("c2")], context=["c1"])
    assert not veto.allowed and veto.blockers[0].premise == claim
    return claim, veto


def repeat(rippl: Rippl, turn: str, call: ToolCall, run_id: str = "r1") -> Verdict:
    """The model, having read the veto of c2 (told), asks again."""
    [verdict] = rippl.run(run_id).decide(turn, [call], context=["c1", "t2", "c2"], told=["c2"])
    return verdict


@pytest.mark.parametrize("args", [
    {"shard": "09", "table": "billing"},                        # identical
    {"table": "billing", "shard": "09"},                        # keys reordered
    {"shard": "0\u0039", "table": "bil\u006cing"},              # the same text spelt in escapes
])
def test_a_repeated_call_stays_vetoed_naming_the_original_veto(rippl: Rippl,
                                                               args: dict[str, object]) -> None:
    claim, _ = vetoed_once(rippl)
    again = repeat(rippl, "t3", migrate("c3", **args))
    assert not again.allowed
    assert "repeats the call vetoed at turn t2, and" in again.reason and claim in again.reason
    assert f"(rippl override {again.target})" in again.reason
    assert [b.premise for b in again.blockers] == [claim]
    assert again.blockers[0].trail[0] == claim and again.blockers[0].trail[-1] == again.target


def test_numbers_and_unicode_spelt_another_way_are_the_same_call(rippl: Rippl) -> None:
    run = rippl.run("r1")
    run.decide("t1", [HEALTH], context=[])
    claim = run.executed(HEALTH, "healthy")
    rippl.retract(claim, reason="stale", by="monitor")
    [veto] = run.decide("t2", [ToolCall(name="scale", args={"replicas": 3, "zone": "é"}, id="c2")],
                        context=["c1"])
    assert not veto.allowed
    for n, args in enumerate(({"replicas": 3.0, "zone": "e\u0301"}, {"zone": "é", "replicas": 3e0})):
        [again] = run.decide(f"t{n + 3}", [ToolCall(name="scale", args=args, id=f"c{n + 3}")],
                             context=["c2"], told=["c2"])
        assert not again.allowed and "repeats the call vetoed" in again.reason


def test_another_call_re_plans_and_is_allowed(rippl: Rippl) -> None:
    vetoed_once(rippl)
    other = repeat(rippl, "t3", migrate("c3", shard="07", table="billing"))
    assert other.allowed, other.reason


def test_a_repeat_without_the_veto_message_is_still_vetoed(rippl: Rippl) -> None:
    vetoed_once(rippl)
    # the veto message was trimmed: the repeat rests on the health reading again, and on the veto
    [again] = rippl.run("r1").decide("t3", [migrate("c3")], context=["c1"])
    assert not again.allowed
    [again] = rippl.run("r1").decide("t4", [migrate("c4")], context=[])  # everything trimmed
    assert not again.allowed and "repeats the call vetoed at turn t2" in again.reason


def test_a_reinstatement_lifts_the_repeat_as_it_lifts_the_original(rippl: Rippl) -> None:
    claim, _veto = vetoed_once(rippl)
    rippl.reinstate(claim, reason="the cache was right after all", by="alice")
    again = repeat(rippl, "t3", migrate("c3"))
    assert again.allowed, again.reason
    assert rippl.run("r1").judge(migrate("c2")).allowed  # and the original, judged again


def test_every_path_that_judges_a_call_holds_the_veto(open_rippl: Callable[..., Rippl]) -> None:
    rippl = open_rippl()
    vetoed_once(rippl)
    run = rippl.run("r1")
    # a call of no decided turn, judged at execution (decided as a turn of its own)
    assert not run.judge(migrate("c9")).allowed
    # parallel calls in one turn: the repeat is vetoed, the other call is not
    both = run.decide("t5", [migrate("c5"), migrate("c6", shard="07", table="billing")],
                      context=["c2"], told=["c2"])
    assert [v.allowed for v in both] == [False, True]
    # a human edits an allowed call into the vetoed one before it runs
    [fine] = run.decide("t6", [migrate("c7", shard="05", table="billing")], context=["c2"],
                        told=["c2"])
    assert fine.allowed
    assert not run.judge(migrate("c7")).allowed
    # a second process on the same run, and the same run resumed later
    other = open_rippl(rippl.graph)
    [again] = other.run("r1").decide("t8", [migrate("c8")], context=["c2"], told=["c2"])
    assert not again.allowed and "repeats the call vetoed" in again.reason


def test_a_repeat_is_judged_again_at_execution(rippl: Rippl) -> None:
    vetoed_once(rippl)
    again = repeat(rippl, "t3", migrate("c3"))
    assert not again.allowed
    judged = rippl.run("r1").judge(migrate("c3"))
    assert not judged.allowed and "repeats the call vetoed at turn t2" in judged.reason
    # the model's call edited before it runs (another table): a repeat under the tool's scope
    edited = rippl.run("r1", repeat_scope="tool").judge(migrate("c3", shard="09", table="ledger"))
    assert not edited.allowed and "repeats the call vetoed at turn t2" in edited.reason


def test_a_call_vetoed_only_when_it_is_about_to_run_binds_its_repeat(rippl: Rippl) -> None:
    """Allowed at its turn, retracted before it ran: the veto at execution binds a repeat too."""
    run = rippl.run("r1", agent="ops")
    run.decide("t1", [HEALTH], context=[])
    claim = run.executed(HEALTH, "shard 09: healthy")
    [planned] = run.decide("t2", [migrate("c2")], context=["c1"])
    assert planned.allowed
    rippl.retract(claim, reason="served from a stale cache", by="monitor")
    vetoed = run.judge(migrate("c2"))
    assert not vetoed.allowed
    again = repeat(rippl, "t3", migrate("c3"))
    assert not again.allowed and "repeats the call vetoed at turn t2" in again.reason


@pytest.mark.parametrize("scope", [{"migrate": "tool"}, "tool"])
def test_repeat_scope_tool_binds_every_later_call_of_the_tool(
        rippl: Rippl, scope: dict[str, str] | str) -> None:
    vetoed_once(rippl)
    run = rippl.run("r1", repeat_scope=scope)  # type: ignore[arg-type]
    [other] = run.decide("t3", [migrate("c3", shard="07", table="billing")],
                         context=["c1", "c2"], told=["c2"])
    assert not other.allowed and "repeats the call vetoed at turn t2" in other.reason
    [unrelated] = run.decide("t4", [ToolCall(name="notify", args={"to": "ops"}, id="c4")],
                             context=["c2"], told=["c2"])
    assert unrelated.allowed
    with pytest.raises(Exception, match="repeat_scope"):
        rippl.run("r1", repeat_scope="everything")  # type: ignore[arg-type]


def test_a_veto_in_one_run_does_not_bind_another_run(rippl: Rippl) -> None:
    vetoed_once(rippl)
    other = rippl.run("r2")
    other.decide("t1", [ToolCall(name="get_health", args={"shard": "09"}, id="c1")], context=[])
    other.executed(ToolCall(name="get_health", args={"shard": "09"}, id="c1"), "09: healthy (fresh)")
    [verdict] = other.decide("t2", [migrate("c2")], context=["c1"])
    assert verdict.allowed


def test_a_veto_under_review_binds_until_the_proposal_is_decided(rippl: Rippl) -> None:
    run = rippl.run("r1")
    run.decide("t1", [HEALTH], context=[])
    claim = run.executed(HEALTH, "healthy")
    review = rippl.propose_retraction(claim, reason="maybe stale", by="monitor")
    [held] = run.decide("t2", [migrate("c2")], context=["c1"])
    assert not held.allowed and held.state is State.AT_RISK
    [again] = run.decide("t3", [migrate("c3")], context=[])
    assert not again.allowed and again.state is State.AT_RISK
    rippl.reject(review.id, by="alice")
    [after] = run.decide("t4", [migrate("c4")], context=[])
    assert after.allowed
    # under at_risk="allow" a call under review is allowed, and so is its repeat
    lenient = rippl.run("r3", policy=Policy(at_risk="allow"))
    lenient.decide("t1", [HEALTH], context=[])
    other_claim = lenient.executed(HEALTH, "healthy (r3)")
    rippl.propose_retraction(other_claim, reason="maybe", by="monitor")
    assert lenient.decide("t2", [migrate("c2")], context=["c1"])[0].allowed
    assert lenient.decide("t3", [migrate("c3")], context=[])[0].allowed


def test_a_one_call_override_lets_exactly_one_call_run(rippl: Rippl) -> None:
    claim, veto = vetoed_once(rippl)
    proposal = rippl.override(veto.target, reason="we checked the shard by hand", by="agent:ops")
    assert proposal.kind == "override" and proposal.claims == [claim]
    assert proposal.call == ToolCall(name="migrate", args={"shard": "09", "table": "billing"})
    assert repeat(rippl, "t3", migrate("c3")).allowed is False  # not yet approved
    receipt = rippl.approve(proposal.id, by="alice")
    assert receipt.kind == "override_approved" and receipt.actor == "alice"
    body = receipt.body
    assert body["proposed_by"] == "agent:ops" and body["premises"] == [claim]
    assert body["call"] == {"tool": "migrate", "args": {"shard": "09", "table": "billing"},
                            "run": "r1"}
    allowed = repeat(rippl, "t4", migrate("c4"))
    assert allowed.allowed and allowed.reason.startswith(f"{allowed.target} allowed by override ")
    assert rippl.run("r1").judge(migrate("c4")).allowed  # judged again at execution: still its own
    assert not repeat(rippl, "t5", migrate("c5")).allowed  # the next repeat: vetoed again
    rippl.run("r1").executed(migrate("c4"), "migrated")
    assert rippl.compensations() == []  # it ran under the override: not a compensation
    [taken] = rippl.overrides()
    assert taken.used_by == allowed.target and taken.executed_at is not None
    assert taken.receipt == receipt.id and taken.approved_by == "alice"
    assert rippl.verify_receipts().ok


def test_an_override_lets_a_call_edited_into_the_overridden_call_run_once(rippl: Rippl) -> None:
    """A human edits a call, after its turn, into the call a reviewer overrode: the edited call
    (a new action of the same decision) takes the override, once."""
    claim, veto = vetoed_once(rippl)
    rippl.approve(rippl.override(veto.target, reason="checked by hand", by="bob").id, by="alice")
    run = rippl.run("r1")
    [other] = run.decide("t3", [migrate("c3", shard="09", table="ledger")], context=["c1"])
    assert not other.allowed and other.blockers[0].premise == claim  # not the overridden call
    edited = run.judge(migrate("c3"))  # now the overridden call's arguments
    assert edited.allowed and edited.target != other.target
    assert edited.reason.startswith(f"{edited.target} allowed by override ")
    assert not run.judge(migrate("c5")).allowed  # taken: the next one is vetoed again


def test_an_override_does_not_cover_a_premise_retracted_after_it(rippl: Rippl) -> None:
    _claim, veto = vetoed_once(rippl)
    run = rippl.run("r1")
    run.decide("t3", [ToolCall(name="get_load", args={}, id="c3")], context=[])
    load = run.executed(ToolCall(name="get_load", args={}, id="c3"), "load is low")
    proposal = rippl.override(veto.target, reason="checked by hand", by="bob")
    rippl.approve(proposal.id, by="alice")
    rippl.retract(load, reason="the load meter was broken", by="monitor")
    [verdict] = run.decide("t4", [migrate("c4")], context=["c3", "c2"], told=["c2"])
    assert not verdict.allowed  # it rests on the load reading too, which no one overrode


def test_an_override_needs_a_veto_and_a_distinct_approver_when_asked(
        open_rippl: Callable[..., Rippl]) -> None:
    rippl = open_rippl(distinct_approver=True)
    _, _veto = vetoed_once(rippl)
    with pytest.raises(ReviewError, match="no veto to override"):
        rippl.override(ToolCall(name="migrate", args={"shard": "07"}), run="r1", reason="x", by="bob")
    proposal = rippl.override(ToolCall(name="migrate", args={"table": "billing", "shard": "09"}),
                              run="r1", reason="checked", by="bob")
    with pytest.raises(ReviewError, match="separation of duties"):
        rippl.approve(proposal.id, by="bob")
    rejected = rippl.reject(proposal.id, by="carol", note="not convinced")
    assert rejected.kind == "override_rejected"
    assert not repeat(rippl, "t3", migrate("c3")).allowed
    assert rippl.overrides() == []


@pytest.mark.asyncio(loop_scope="session")
async def test_the_async_handle_holds_the_veto_too(rippl: Rippl, arippl: AsyncRippl) -> None:
    vetoed_once(rippl)
    run = arippl.run("r1")
    [again] = await run.decide("t3", [migrate("c3")], context=["c2"], told=["c2"])
    assert not again.allowed and "repeats the call vetoed at turn t2" in again.reason
    assert (await run.decide("t4", [migrate("c4", shard="07", table="billing")], context=["c2"],
                             told=["c2"]))[0].allowed
