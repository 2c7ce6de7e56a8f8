"""Premises flow with the text that carries them: a turn rests on what every message in its input
carries (the model's own turns and text replies, summaries, messages Rippl cannot account for, and
what another run of its scope handed over), so trimming a tool result takes its observation out only
once every message carrying it is gone. Both backends."""

from __future__ import annotations

import pytest

from rippl_core import Rippl, ToolCall
from rippl_core.capture import ids

HEALTH = ToolCall(name="get_health", args={"shard": "09"}, id="c1")
HEALTH_07 = ToolCall(name="get_health", args={"shard": "07"}, id="c5")
MIGRATE = ToolCall(name="migrate", args={"shard": "09"}, id="c2")


def read_health(rippl: Rippl, run_id: str = "r1", scope: str | None = None) -> str:
    """A turn that reads shard 09's health, and its result: the result claim."""
    run = rippl.run(run_id, scope=scope)
    run.decide("t1", [HEALTH.model_copy(update={"id": f"{run_id}-c1"})], context=[])
    return run.executed(HEALTH.model_copy(update={"id": f"{run_id}-c1"}), "shard 09: healthy")


def premises(rippl: Rippl, action: str) -> set[str]:
    decision = rippl.get(action).justifications[0][0]
    return set(rippl.get(decision).justifications[0]) - {c for c in rippl.get(decision)
                                                         .justifications[0] if c.startswith("RUN-")}


def test_the_models_own_message_carries_what_it_read_after_the_result_is_trimmed(rippl: Rippl) -> None:
    claim = read_health(rippl)
    run = rippl.run("r1")
    assert run.wrote("m1", context=["r1-c1"]) == [claim]  # "09 is healthy, a safe target"
    rippl.retract(claim, reason="stale cache", by="monitor")
    [kept] = run.decide("t2", [MIGRATE], context=["m1"])  # the result trimmed, the message kept
    assert not kept.allowed and kept.blockers[0].premise == claim
    [gone] = run.decide("t3", [MIGRATE.model_copy(update={"id": "c3",
                                                          "args": {"shard": "08"}})], context=[])
    assert gone.allowed  # every carrier gone: it no longer rests on the reading


def test_a_turn_carries_what_it_rested_on_into_later_turns(rippl: Rippl) -> None:
    claim = read_health(rippl)
    run = rippl.run("r1")
    run.decide("t2", [ToolCall(name="announce", args={"shard": "09"}, id="c3")], context=["r1-c1"])
    rippl.retract(claim, reason="stale cache", by="monitor")
    # the tool result trimmed, the model's turn t2 (its message) kept
    [verdict] = run.decide("t3", [MIGRATE], context=["t2", "c3"])
    assert not verdict.allowed and verdict.blockers[0].premise == claim


def test_a_message_rippl_cannot_account_for_carries_everything_the_run_carried(rippl: Rippl) -> None:
    claim = read_health(rippl)
    run = rippl.run("r1")
    # a summary written by middleware Rippl did not see: it replaced the reading
    [first] = run.decide("t2", [ToolCall(name="announce", args={}, id="c3")], context=["summary-1"])
    assert claim in premises(rippl, first.target)  # type: ignore[arg-type]
    # recorded on first sight: a reading after it is not in what it carries
    run.decide("t3", [HEALTH_07], context=[])
    later = run.executed(HEALTH_07, "shard 07: healthy")
    [then] = run.decide("t4", [ToolCall(name="migrate", args={"shard": "07"}, id="c6")],
                        context=["summary-1"])
    rests = premises(rippl, then.target)  # type: ignore[arg-type]
    assert claim in rests and later not in rests
    rippl.retract(claim, reason="stale", by="monitor")
    assert not run.judge(ToolCall(name="migrate", args={"shard": "07"}, id="c6")).allowed


def test_a_veto_message_carries_nothing(rippl: Rippl) -> None:
    claim = read_health(rippl)
    rippl.retract(claim, reason="stale", by="monitor")
    run = rippl.run("r1")
    [veto] = run.decide("t2", [MIGRATE], context=["r1-c1"])
    assert not veto.allowed
    other = ToolCall(name="migrate", args={"shard": "07"}, id="c3")
    [replan] = run.decide("t3", [other], context=["c2"], told=["c2"])
    assert replan.allowed  # the veto message is neither unaccounted nor a carrier of the reading


def test_a_hand_over_carries_what_the_text_carried_in_the_other_run(rippl: Rippl) -> None:
    claim = read_health(rippl, "crew/research", scope="crew")
    research = rippl.run("crew/research", scope="crew")
    research.wrote("report", context=["crew/research-c1"])  # "Shard 09 is healthy: a safe target"
    rippl.retract(claim, reason="stale cache", by="monitor")
    operator = rippl.run("crew/operator", scope="crew")
    [verdict] = operator.decide("t1", [MIGRATE], context=["report"])
    assert not verdict.allowed and verdict.blockers[0].premise == claim
    explained = verdict.explain()
    assert "crew/research" in explained and "crew/operator" in explained
    operator.decide("t2", [ToolCall(name="announce", args={}, id="c9")], context=["report"])
    # outside the scope the same ref is another message
    stranger = rippl.run("elsewhere/operator", scope="elsewhere")
    [fine] = stranger.decide("t1", [MIGRATE], context=["report"])
    assert fine.allowed


def test_what_ran_downstream_of_a_hand_over_is_a_compensation(rippl: Rippl) -> None:
    claim = read_health(rippl, "crew/research", scope="crew")
    rippl.run("crew/research", scope="crew").wrote("report", context=["crew/research-c1"])
    operator = rippl.run("crew/operator", scope="crew")
    [ok] = operator.decide("t1", [MIGRATE], context=["report"])
    assert ok.allowed
    operator.executed(MIGRATE, "migrated")
    rippl.retract(claim, reason="stale cache", by="monitor")
    [owed] = rippl.compensations()
    assert owed.run == "crew/operator" and owed.blockers[0].premise == claim


def test_an_agent_used_as_a_tool_hands_over_through_its_answer(rippl: Rippl) -> None:
    claim = read_health(rippl, "team/expert", scope="team")
    answer = "Shard 09 is healthy, go ahead."
    rippl.run("team/expert", scope="team").wrote(ids.text_ref(answer), context=["team/expert-c1"])
    lead = rippl.run("team/lead", scope="team")
    ask = ToolCall(name="ask_expert", args={"q": "is 09 safe?"}, id="c1")
    lead.decide("t1", [ask], context=[])
    lead.executed(ask, answer)  # the tool's output is the expert's answer
    rippl.retract(claim, reason="stale", by="monitor")
    [verdict] = lead.decide("t2", [MIGRATE], context=["c1"])
    assert not verdict.allowed and verdict.blockers[0].premise == claim


def test_a_message_that_read_nothing_rests_on_nothing_it_did_not_read(rippl: Rippl) -> None:
    claim = read_health(rippl)
    run = rippl.run("r1")
    run.decide("t2", [HEALTH_07], context=[])
    fresh = run.executed(HEALTH_07, "shard 07: healthy")
    run.wrote("m2", context=["c5"])  # a plan built only on the fresh reading
    rippl.retract(claim, reason="stale", by="monitor")
    [verdict] = run.decide("t3", [ToolCall(name="migrate", args={"shard": "07"}, id="c6")],
                           context=["m2"])
    assert verdict.allowed
    assert premises(rippl, verdict.target) == {fresh}  # type: ignore[arg-type]


@pytest.mark.parametrize("context", [None, ["r1-c1", "m1"]])
def test_wrote_records_once_and_returns_what_the_message_carries(rippl: Rippl,
                                                                context: list[str] | None) -> None:
    claim = read_health(rippl)
    run = rippl.run("r1")
    carried = run.wrote("m1", context=context)
    assert claim in carried and set(carried) <= {claim, ids.run_claim("r1")}
    assert run.wrote("m1", context=[]) == carried  # its first recording stands
