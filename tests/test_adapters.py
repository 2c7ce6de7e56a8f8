"""The adapter-independent tool guard: mapping, fail-closed verdicts, veto text."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rippl_core import InvalidInputError, Policy, Rippl, ToolCall
from rippl_core.adapters import VETO_PREFIX, Capture, Guard, ToolGuard, arguments, veto_text

MIGRATE_09 = {"table": "billing", "shard": "09"}


def test_judge_allows_then_vetoes_with_the_trail(incident: Rippl) -> None:
    guard = ToolGuard()

    def ask(call: ToolCall):  # type: ignore[no-untyped-def]
        return incident.check(call)

    assert guard.judge("migrate_tables", MIGRATE_09, ask).allowed  # type: ignore[union-attr]
    incident.retract("CLM-001", reason="disk errors", by="telemetry")
    verdict = guard.judge("migrate_tables", MIGRATE_09, ask, call_id="call-1")
    assert verdict is not None and not verdict.allowed
    assert verdict.tool_call is not None and verdict.tool_call.id == "call-1"
    text = veto_text("migrate_tables", verdict)
    assert text.startswith(VETO_PREFIX) and "CLM-001 -> DEC-001 -> ACT-001" in text


def test_unguarded_and_only_decide_what_is_checked() -> None:
    guard = ToolGuard(unguarded=["lookup"], only=["migrate_tables", "lookup"])
    assert not guard.guards("lookup") and guard.guards("migrate_tables") and not guard.guards("other")
    assert guard.judge("lookup", {}, lambda call: pytest.fail("must not be checked")) is None
    with pytest.raises(InvalidInputError):
        ToolGuard(unguarded="lookup")


def test_resolver_mapping_function_and_failures(incident: Rippl) -> None:
    by_map = ToolGuard(resolver={"run_cutover": "ACT-003"})
    assert by_map.to_call("run_cutover", {}).action_id == "ACT-003"
    by_fn = ToolGuard(resolver=lambda name, args: ToolCall(name=name, args=args, action_id="ACT-002"))
    assert by_fn.to_call("x", {"a": 1}).action_id == "ACT-002"

    def broken(name: str, args: object) -> str:
        raise RuntimeError("resolver bug")

    denied = ToolGuard(resolver=broken).judge("x", {}, incident.check)
    assert denied is not None and not denied.allowed and "resolver bug" in denied.reason
    allowed = ToolGuard(resolver=broken, policy=Policy(unknown="allow")).judge("x", {}, incident.check)
    assert allowed is not None and allowed.allowed


def test_a_failing_check_is_denied_unless_on_error_allows() -> None:
    def down(call: ToolCall):  # type: ignore[no-untyped-def]
        raise ConnectionError("graph unreachable")

    verdict = ToolGuard().judge("migrate_tables", MIGRATE_09, down)
    assert verdict is not None and not verdict.allowed and "could not be checked" in verdict.reason
    lenient = ToolGuard(policy=Policy(on_error="allow")).judge("migrate_tables", MIGRATE_09, down)
    assert lenient is not None and lenient.allowed


async def test_ajudge_awaits_async_resolvers_and_checks(incident: Rippl) -> None:
    async def resolver(name: str, args: object) -> str:
        return "ACT-001"

    async def ask(call: ToolCall):  # type: ignore[no-untyped-def]
        return incident.check(call)

    guard = ToolGuard(resolver=resolver)
    verdict = await guard.ajudge("anything", {}, ask)
    assert verdict is not None and verdict.allowed and verdict.target == "ACT-001"
    with pytest.raises(TypeError):
        guard.to_call("anything", {})  # an async resolver needs the async path


def test_arguments_may_be_json_text(incident: Rippl) -> None:
    guard = ToolGuard()
    verdict = guard.judge("migrate_tables", json.dumps(MIGRATE_09), incident.check, call_id="c1")
    assert verdict is not None and verdict.allowed and verdict.target == "ACT-001"
    assert verdict.tool_call == ToolCall(name="migrate_tables", args=MIGRATE_09, id="c1")
    assert guard.to_call("restart", "  ").args == {}  # blank text: no arguments


@pytest.mark.parametrize(("args", "says"), [
    ("{oops", "are not JSON"), ("[1, 2]", "are not a JSON object"), (["table"], "must be a mapping"),
])
def test_arguments_that_are_no_object_are_judged_by_unknown(incident: Rippl, args: Any, says: str,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="rippl"):
        denied = ToolGuard().judge("migrate_tables", args, incident.check, call_id="c1")
    assert denied is not None and not denied.allowed and denied.tool_call is None
    assert "denied (fail closed)" in denied.reason and says in denied.reason
    assert "could not be mapped to an action" in denied.reason
    assert "vetoed tool call migrate_tables" in caplog.text
    lenient = ToolGuard(policy=Policy(unknown="allow")).judge("migrate_tables", args, incident.check)
    assert lenient is not None and lenient.allowed and "policy unknown='allow'" in lenient.reason


def test_a_veto_with_unsortable_arguments_is_still_logged(incident: Rippl,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    odd: dict[Any, Any] = {1: "x", "table": "billing"}
    with caplog.at_level(logging.WARNING, logger="rippl"):
        verdict = ToolGuard().judge("migrate_tables", odd, incident.check)
    assert verdict is not None and not verdict.allowed  # no action takes these arguments
    assert "vetoed tool call migrate_tables" in caplog.text


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
CALL_ARGS = st.one_of(
    st.none(), st.text(max_size=20), JSONISH.map(json.dumps),
    st.dictionaries(st.sampled_from(["table", "shard", "x"]), st.sampled_from(["billing", "07", "09"]),
                    max_size=3),
    st.dictionaries(st.integers() | st.text(max_size=3), JSONISH, max_size=3), JSONISH)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=CALL_ARGS)
@example(args=MIGRATE_09)
@example(args=json.dumps({"shard": "07", "table": "billing"}))
@example(args={"shard": "07", "table": "billing", "x": "09"})
def test_judge_never_raises_and_denies_what_it_cannot_map(incident: Rippl, args: Any) -> None:
    verdict = ToolGuard().judge("migrate_tables", args, incident.check, call_id="c1")
    assert verdict is not None
    try:
        values = arguments("migrate_tables", args)
    except InvalidInputError:
        assert not verdict.allowed and "could not be mapped to an action" in verdict.reason
        return
    try:
        expected = incident.check(ToolCall(name="migrate_tables", args=values, id="c1"))
    except (InvalidInputError, ValueError):  # arguments a ToolCall or the graph cannot hold
        assert not verdict.allowed and "could not be mapped to an action" in verdict.reason
        return
    assert (verdict.allowed, verdict.target) == (expected.allowed, expected.target)
    assert verdict.allowed == (values in ({"table": "billing", "shard": "09"},
                                          {"table": "billing", "shard": "07"}))


# -- every branch that decides allow or deny, on both paths ---------------------------------------


async def test_unguarded_and_only_decide_the_async_path_too() -> None:
    guard = ToolGuard(unguarded=["lookup"], only=["migrate_tables", "lookup"])

    async def never(call: ToolCall):  # type: ignore[no-untyped-def]
        pytest.fail("must not be checked")

    assert await guard.ajudge("lookup", {}, never) is None
    assert await guard.ajudge("other", {}, never) is None  # outside `only`

    async def deny(call: ToolCall):  # type: ignore[no-untyped-def]
        raise ConnectionError("down")

    checked = await guard.ajudge("migrate_tables", MIGRATE_09, deny)
    assert checked is not None and not checked.allowed


@pytest.mark.parametrize("bad", [" padded", "", "x" * 200, "tab\there"])
def test_a_bad_id_from_the_check_is_judged_by_unknown(bad: str) -> None:
    def check(call: ToolCall):  # type: ignore[no-untyped-def]
        raise InvalidInputError(f"id {bad!r} is not usable")

    denied = ToolGuard().judge("migrate_tables", MIGRATE_09, check, call_id="c9")
    assert denied is not None and not denied.allowed
    assert denied.reason.startswith("denied (fail closed): the call to migrate_tables could not be "
                                    "mapped to an action")
    assert denied.tool_call is not None and denied.tool_call.id == "c9"
    allowed = ToolGuard(policy=Policy(unknown="allow")).judge("migrate_tables", MIGRATE_09, check)
    assert allowed is not None and allowed.allowed
    assert allowed.reason.startswith("allowed (policy unknown='allow')")
    lenient_on_errors = ToolGuard(policy=Policy(on_error="allow")).judge("migrate_tables",
                                                                          MIGRATE_09, check)
    assert lenient_on_errors is not None and not lenient_on_errors.allowed  # a bad id is no outage


@pytest.mark.parametrize("policy", [{"unknown": "allow"}, "allow", 3, Policy])
def test_a_policy_that_is_not_a_policy_is_refused(policy: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"policy must be a rippl_core\.Policy"):
        ToolGuard(policy=policy)


def test_an_unmappable_verdict_carries_the_call_when_it_can() -> None:
    from rippl_core.adapters import unmappable

    mapped = unmappable("migrate_tables", '{"shard": "09"}', "c1", ValueError("x"), Policy())
    assert mapped.tool_call == ToolCall(name="migrate_tables", args={"shard": "09"}, id="c1")
    assert mapped.target is None and not mapped.allowed
    garbage = unmappable("migrate_tables", "not json", "c2", ValueError("x"), Policy())
    assert garbage.tool_call is None and not garbage.allowed


def test_capture_executed_returns_the_result_claim(rippl: Rippl) -> None:
    capture = Capture(Guard(rippl), "run-1", agent="ops", framework="test")
    call = ("get_shard_health", {"shard": "09"}, "c1")
    [verdict] = capture.decide("turn-1", [call])
    assert verdict is not None and verdict.allowed
    claim = capture.executed(call, "healthy")
    assert claim is not None and "healthy" in rippl.get(claim).text
    assert rippl.run("run-1").executed(ToolCall(name="get_shard_health", args={"shard": "09"},
                                                id="c1"), "healthy") == claim
