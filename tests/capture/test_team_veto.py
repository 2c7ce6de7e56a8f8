"""A veto binds the team: what a run writes after it read a veto carries the veto's binding, and a
call in another run whose input holds such a carrier and repeats the bound act stays vetoed,
naming the original veto, its run and the hand-over. A team mate that never received such a
carrier is judged on its own context. Both backends."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rippl_core import AsyncRippl, Rippl, ToolCall, Verdict

SCOPE = "team"
HEALTH = ToolCall(name="get_health", args={"shard": "09"}, id="c1")


def migrate(call_id: str, shard: str = "09", **extra: object) -> ToolCall:
    return ToolCall(name="migrate", args={"shard": shard, "table": "billing", **extra}, id=call_id)


def lead_vetoed(rippl: Rippl) -> tuple[str, Verdict]:
    """Run `lead` reads the shard's health, the reading is retracted through the review gate, its
    migration is vetoed, and, having read the veto, it writes a hand-over: (the reading, the veto)."""
    lead = rippl.run("lead", agent="lead", scope=SCOPE)
    lead.decide("t1", [HEALTH], context=["task"], inputs=["task"])
    reading = lead.executed(HEALTH, "shard 09: healthy")
    review = rippl.propose_retraction(reading, reason="served from a stale cache", by="monitor")
    rippl.approve(review.id, by="alice")
    [veto] = lead.decide("t2", [migrate("c2")], context=["task", "t1", "c1"])
    assert not veto.allowed
    # the lead read the veto (told): by the told rule its hand-over carries only the run's input
    carried = lead.wrote("lead-delegate", context=["task", "t1", "c1", "t2", "c2"], told=["c2"])
    assert reading not in carried
    return reading, veto


def helper_decides(rippl: Rippl, call: ToolCall, context: list[str], turn: str = "h1",
                   told: list[str] | None = None) -> Verdict:
    helper = rippl.run("helper", agent="helper", scope=SCOPE)
    [verdict] = helper.decide(turn, [call], context=context, told=told or [])
    return verdict


def test_the_act_handed_to_a_team_mate_stays_vetoed_naming_the_veto_and_the_hand_over(
        rippl: Rippl) -> None:
    reading, veto = lead_vetoed(rippl)
    again = helper_decides(rippl, migrate("h-c1"), ["lead-delegate"])
    assert not again.allowed
    assert "vetoed at turn t2 of run lead" in again.reason
    assert veto.target in again.reason  # the original veto
    assert "handed over from run lead (lead-delegate) after the veto" in again.reason
    assert [b.premise for b in again.blockers] == [reading]
    assert again.blockers[0].trail[0] == reading and again.blockers[0].trail[-1] == again.target


@pytest.mark.parametrize("args", [{"table": "billing", "shard": "09"},
                                  {"shard": "0\u0039", "table": "billing"}])
def test_the_same_act_in_another_spelling_stays_vetoed(rippl: Rippl,
                                                       args: dict[str, object]) -> None:
    lead_vetoed(rippl)
    again = helper_decides(rippl, ToolCall(name="migrate", args=args, id="h-c1"), ["lead-delegate"])
    assert not again.allowed and "handed over from run lead" in again.reason


def test_a_different_act_is_judged_on_its_own_premises(rippl: Rippl) -> None:
    lead_vetoed(rippl)
    other = helper_decides(rippl, migrate("h-c1", shard="07"), ["lead-delegate"])
    assert other.allowed, other.reason


def test_a_team_mate_that_never_received_the_hand_over_is_judged_on_its_own_context(
        rippl: Rippl) -> None:
    lead_vetoed(rippl)
    helper = rippl.run("helper", agent="helper", scope=SCOPE)
    fresh = ToolCall(name="get_health", args={"shard": "09"}, id="h-c0")
    helper.decide("h0", [fresh], context=[])
    helper.executed(fresh, "shard 09: healthy after the disk swap")  # a fresh, different reading
    [verdict] = helper.decide("h1", [migrate("h-c1")], context=["h0", "h-c0"])
    assert verdict.allowed, verdict.reason


def test_a_reinstatement_lifts_it_for_the_team(rippl: Rippl) -> None:
    reading, _ = lead_vetoed(rippl)
    held = helper_decides(rippl, migrate("h-c1"), ["lead-delegate"])
    assert not held.allowed
    rippl.reinstate(reading, reason="the cache was fine after all", by="alice")
    assert rippl.run("helper", scope=SCOPE).judge(migrate("h-c1")).allowed
    later = helper_decides(rippl, migrate("h-c2"), ["lead-delegate"], turn="h2")
    assert later.allowed, later.reason


def test_an_override_in_the_leads_run_does_not_cover_the_helpers_call(rippl: Rippl) -> None:
    _, veto = lead_vetoed(rippl)
    assert veto.target is not None
    review = rippl.override(veto.target, reason="migrate anyway: the DBA checked", by="lead")
    rippl.approve(review.id, by="alice")
    held = helper_decides(rippl, migrate("h-c1"), ["lead-delegate"])
    assert not held.allowed and "handed over from run lead" in held.reason
    lead = rippl.run("lead", scope=SCOPE)
    [allowed] = lead.decide("t3", [migrate("c3")], context=["task", "t1", "c1", "t2", "c2"],
                            told=["c2"])
    assert allowed.allowed and "override" in allowed.reason  # the lead's own one call


def test_a_veto_read_in_a_shared_history_binds_the_reader(rippl: Rippl) -> None:
    """The helper's input holds the lead's veto message itself (one message list, as in a
    LangGraph supervisor or an AutoGen team): it read the veto, so the act stays bound for it."""
    reading, _ = lead_vetoed(rippl)
    again = helper_decides(rippl, migrate("h-c1"), ["task", "t1", "c1", "t2", "c2"], told=["c2"])
    assert not again.allowed
    assert "vetoed at turn t2 of run lead" in again.reason
    assert "whose veto message is in this run's input" in again.reason
    assert [b.premise for b in again.blockers] == [reading]


def test_the_binding_passes_from_hand_over_to_hand_over(rippl: Rippl) -> None:
    lead_vetoed(rippl)
    helper = rippl.run("helper", agent="helper", scope=SCOPE)
    helper.wrote("helper-report", context=["lead-delegate"])  # passes the task on, unread
    third = rippl.run("third", agent="third", scope=SCOPE)
    [verdict] = third.decide("x1", [migrate("x-c1")], context=["helper-report"])
    assert not verdict.allowed
    assert "handed over from run helper (helper-report)" in verdict.reason
    assert "vetoed at turn t2 of run lead" in verdict.reason


def test_a_rewrite_the_run_cannot_account_for_carries_what_the_run_carried(rippl: Rippl) -> None:
    """A summary Rippl did not see written (an unknown ref in the lead's later input) may have
    been written from anything the lead carried: a team mate reading it rests on the reading
    again, and the veto's trail names the hand-over."""
    reading, _ = lead_vetoed(rippl)
    lead = rippl.run("lead", scope=SCOPE)
    lead.decide("t3", [ToolCall(name="notify", args={"text": "done"}, id="c3")],
                context=["summary-1", "t2", "c2"], told=["c2"])
    again = helper_decides(rippl, migrate("h-c1"), ["summary-1"])
    assert not again.allowed and "from run lead (summary-1)" in again.reason
    assert [b.premise for b in again.blockers] == [reading]


def test_a_tool_scoped_veto_binds_any_call_of_the_tool(rippl: Rippl) -> None:
    lead = rippl.run("lead", agent="lead", scope=SCOPE, repeat_scope="tool")
    lead.decide("t1", [HEALTH], context=["task"], inputs=["task"])
    reading = lead.executed(HEALTH, "shard 09: healthy")
    rippl.retract(reading, reason="stale", by="monitor")
    [veto] = lead.decide("t2", [migrate("c2")], context=["task", "t1", "c1"])
    assert not veto.allowed
    lead.wrote("lead-delegate", context=["task", "t1", "c1", "t2", "c2"], told=["c2"])
    helper = rippl.run("helper", scope=SCOPE, repeat_scope="tool")
    [other_args] = helper.decide("h1", [migrate("h-c1", shard="07")], context=["lead-delegate"])
    assert not other_args.allowed and "handed over from run lead" in other_args.reason
    loose = rippl.run("loose", scope=SCOPE)  # args scope: another shard is another act
    [allowed] = loose.decide("l1", [migrate("l-c1", shard="07")], context=["lead-delegate"])
    assert allowed.allowed, allowed.reason


def test_a_team_mate_in_another_scope_never_finds_the_hand_over(rippl: Rippl) -> None:
    lead_vetoed(rippl)
    stranger = rippl.run("stranger", scope="other-team")
    [verdict] = stranger.decide("s1", [migrate("s-c1")], context=["lead-delegate"],
                                inputs=["lead-delegate"])
    assert verdict.allowed, verdict.reason  # its own context: the user's message, nothing more


async def test_the_async_handle_binds_the_team_the_same_way(
        open_rippl: Callable[..., Rippl], backend: dict[str, object]) -> None:
    sync = open_rippl()
    lead_vetoed(sync)
    async with await AsyncRippl.open(graph=sync.graph, **backend) as rippl:
        helper = rippl.run("helper", scope=SCOPE)
        [verdict] = await helper.decide("h1", [migrate("h-c1")], context=["lead-delegate"])
        assert not verdict.allowed and "handed over from run lead" in verdict.reason


def test_the_result_of_a_call_made_after_the_veto_carries_it(rippl: Rippl) -> None:
    """A delegation is a tool call whose arguments the lead wrote after reading its veto: the
    tool's result (what the team mate is handed) carries the veto's binding."""
    lead_vetoed(rippl)
    lead = rippl.run("lead", scope=SCOPE)
    delegate = ToolCall(name="delegate", args={"task": "migrate billing to 09"}, id="c3")
    [sent] = lead.decide("t3", [delegate], context=["task", "t1", "c1", "t2", "c2"], told=["c2"])
    assert sent.allowed
    lead.executed(delegate, "the operator has the task: migrate billing to 09")
    again = helper_decides(rippl, migrate("h-c1"), ["c3"])
    assert not again.allowed and "handed over from run lead (c3) after the veto" in again.reason
