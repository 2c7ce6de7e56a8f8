"""The adapter-independent tool guard: mapping, fail-closed verdicts, veto text."""

from __future__ import annotations

import pytest

from rippl_core import InvalidInputError, Policy, Rippl, ToolCall
from rippl_core.toolguard import VETO_PREFIX, ToolGuard, veto_text

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
