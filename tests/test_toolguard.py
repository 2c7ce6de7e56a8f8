"""The tool guard's every decision, without a database: which calls are checked, how a call maps to
an action, and the verdict (allowed or not, its target, the call it carries, its reason) when a
call cannot be mapped or checked, on the sync path and on the async one alike.

The graph is stood in for by the `check` function the guard is given (a verdict or an exception):
what is tested here is the guard, which never reads the graph itself. tests/test_adapters.py holds
the guard against a real graph.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from rippl_core import InvalidInputError, Policy, ToolCall, ToolSettings, Verdict
from rippl_core.adapters import VETO_PREFIX, ToolGuard, arguments, veto_text
from rippl_core.adapters.toolguard import safe_call, unanswered, unmappable

ARGS = {"table": "billing", "shard": "09"}
ALLOWED = Verdict(allowed=True, target="ACT-001", reason="ACT-001 is ready")


def judged(guard: ToolGuard, name: str, args: Any, check: Callable[[ToolCall], Verdict], *,
           call_id: str | None = None, default_policy: Policy | None = None) -> Verdict | None:
    """The verdict of `judge`, after asserting that `ajudge` gives the same one."""
    verdict = guard.judge(name, args, check, call_id=call_id, default_policy=default_policy)

    async def acheck(call: ToolCall) -> Verdict:
        return check(call)

    averdict = asyncio.run(guard.ajudge(name, args, acheck, call_id=call_id,
                                        default_policy=default_policy))
    assert averdict == verdict
    return verdict


def seen(verdict: Verdict | None = ALLOWED) -> tuple[list[ToolCall], Callable[[ToolCall], Verdict]]:
    calls: list[ToolCall] = []

    def check(call: ToolCall) -> Verdict:
        calls.append(call)
        assert verdict is not None
        return verdict

    return calls, check


def down(call: ToolCall) -> Verdict:
    raise ConnectionError("graph unreachable")


def bad_id(call: ToolCall) -> Verdict:
    raise InvalidInputError("action_id ' x' has surrounding whitespace")


# -- which calls are checked ------------------------------------------------------------------


@pytest.mark.parametrize(("unguarded", "only", "checked"), [
    ((), None, {"a", "b", "c"}),
    (["a"], None, {"b", "c"}),
    ((), ["a", "b"], {"a", "b"}),
    (["a"], ["a", "b"], {"b"}),
    ((), [], set()),
    (iter(["b"]), iter(["b", "c"]), {"c"}),
])
def test_unguarded_and_only_decide_what_is_checked(unguarded: Any, only: Any,
                                                   checked: set[str]) -> None:
    guard = ToolGuard(unguarded=unguarded, only=only)
    for name in ("a", "b", "c"):
        calls, check = seen()
        assert guard.guards(name) is (name in checked)
        verdict = judged(guard, name, {}, check)
        assert (verdict is not None) is (name in checked)
        assert calls == ([ToolCall(name=name, args={})] * 2 if name in checked else [])


@pytest.mark.parametrize("what", ["unguarded", "only"])
def test_a_single_string_is_not_a_list_of_names(what: str) -> None:
    with pytest.raises(InvalidInputError, match=f"{what} must be a list of tool names"):
        ToolGuard(**{what: "lookup"})


# -- policies ---------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", [{"unknown": "allow"}, "allow", 3, Policy])
def test_a_policy_that_is_not_a_policy_is_refused(policy: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"policy must be a rippl_core\.Policy, got "):
        ToolGuard(policy=policy)


def test_the_guards_policy_then_the_default_then_fail_closed() -> None:
    lenient, strict = Policy(on_error="allow"), Policy(on_error="deny")
    assert ToolGuard().policy is None and ToolGuard(policy=lenient).policy is lenient
    assert not judged(ToolGuard(), "t", {}, down).allowed  # type: ignore[union-attr]
    assert judged(ToolGuard(), "t", {}, down, default_policy=lenient).allowed  # type: ignore[union-attr]
    assert judged(ToolGuard(policy=lenient), "t", {}, down).allowed  # type: ignore[union-attr]
    assert not judged(ToolGuard(policy=strict), "t", {}, down,  # type: ignore[union-attr]
                      default_policy=lenient).allowed


# -- mapping ----------------------------------------------------------------------------------


@pytest.mark.parametrize("resolver", [42, "ACT-001", ["ACT-001"]])
def test_a_resolver_must_be_a_mapping_or_a_function(resolver: Any) -> None:
    with pytest.raises(InvalidInputError, match="resolver must map tool names to action ids"):
        ToolGuard(resolver=resolver)


def test_resolvers_map_a_call() -> None:
    assert ToolGuard().to_call("t", ARGS, "c1") == ToolCall(name="t", args=ARGS, id="c1")
    by_map = ToolGuard(resolver={"t": "ACT-003"})
    assert by_map.to_call("t", ARGS, "c1") == ToolCall(name="t", args=ARGS, action_id="ACT-003",
                                                       id="c1")
    assert by_map.to_call("other", {}).action_id is None
    given: list[tuple[str, dict[str, Any]]] = []

    def resolver(name: str, args: Any) -> str | None:
        given.append((name, args))
        args["mutated"] = True  # the resolver gets a copy
        return "ACT-002" if name == "t" else None

    by_fn = ToolGuard(resolver=resolver)
    assert by_fn.to_call("t", ARGS).action_id == "ACT-002"
    assert by_fn.to_call("u", ARGS) == ToolCall(name="u", args=ARGS)
    assert [name for name, _ in given] == ["t", "u"]
    whole = ToolCall(name="other", args={"x": 1}, action_id="ACT-009", id="mine")
    assert ToolGuard(resolver=lambda name, args: whole).to_call("t", ARGS, "c1") is whole


@pytest.mark.parametrize("returned", [42, ["ACT-001"], b"ACT-001"])
def test_a_resolver_returning_something_else_is_judged_by_unknown(returned: Any) -> None:
    guard = ToolGuard(resolver=lambda name, args: returned)
    with pytest.raises(TypeError, match=f"the resolver returned {type(returned).__name__}; return "
                                        "an action id, a ToolCall or None"):
        guard.to_call("t", ARGS)
    calls, check = seen()
    denied = judged(guard, "t", ARGS, check, call_id="c1")
    assert denied is not None and calls == []
    assert (denied.allowed, denied.target, denied.tool_call) == \
        (False, None, ToolCall(name="t", args=ARGS, id="c1"))
    assert denied.reason == (f"denied (fail closed): the call to t could not be mapped to an "
                             f"action of the premise graph: TypeError: the resolver returned "
                             f"{type(returned).__name__}; return an action id, a ToolCall or None")


def test_an_async_resolver_needs_the_async_path() -> None:
    async def resolver(name: str, args: Any) -> str:
        return "ACT-001"

    guard = ToolGuard(resolver=resolver)
    with pytest.raises(TypeError, match="an async resolver needs the async path"):
        guard.to_call("t", ARGS)
    assert asyncio.run(guard.ato_call("t", ARGS, "c1")) == ToolCall(name="t", args=ARGS,
                                                                     action_id="ACT-001", id="c1")
    assert asyncio.run(ToolGuard(resolver={"t": "A"}).ato_call("t", None)).action_id == "A"
    denied = guard.judge("t", ARGS, seen()[1])
    assert denied is not None and not denied.allowed and "async resolver" in denied.reason


def test_a_failing_resolver_is_judged_by_unknown_on_both_paths() -> None:
    def broken(name: str, args: Any) -> str:
        raise RuntimeError("resolver bug")

    calls, check = seen()
    denied = judged(ToolGuard(resolver=broken), "t", ARGS, check, call_id="c1")
    assert denied == Verdict(allowed=False, target=None, tool_call=ToolCall(name="t", args=ARGS,
                                                                             id="c1"),
                             reason="denied (fail closed): the call to t could not be mapped to an "
                                    "action of the premise graph: RuntimeError: resolver bug")
    allowed = judged(ToolGuard(resolver=broken, policy=Policy(unknown="allow")), "t", ARGS, check)
    assert allowed is not None and allowed.allowed
    assert allowed.reason.startswith("allowed (policy unknown='allow'): the call to t could not")
    assert calls == []


# -- arguments --------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "values"), [
    (None, {}), ("", {}), ("  \n", {}), ('{"a": [1, {"b": null}]}', {"a": [1, {"b": None}]}),
    ({"a": 1}, {"a": 1}), ({}, {}),
])
def test_arguments(args: Any, values: dict[str, Any]) -> None:
    assert arguments("t", args) == values


@pytest.mark.parametrize(("args", "says"), [
    ("{oops", "the arguments of t are not JSON (Expecting property name"),
    ("[1, 2]", "the arguments of t are not a JSON object"),
    ("3", "the arguments of t are not a JSON object"),
    (["a"], "the arguments of t must be a mapping or JSON text, got list"),
    (7, "the arguments of t must be a mapping or JSON text, got int"),
])
def test_arguments_that_are_no_object(args: Any, says: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        arguments("t", args)
    assert str(raised.value).startswith(says)
    calls, check = seen()
    denied = judged(ToolGuard(), "t", args, check, call_id="c1")
    assert denied is not None and calls == []
    assert (denied.allowed, denied.target, denied.tool_call) == (False, None, None)
    assert denied.reason.startswith(f"denied (fail closed): the call to t could not be mapped to "
                                    f"an action of the premise graph: InvalidInputError: {says}")


def test_a_mapping_is_copied() -> None:
    given = {"a": 1}
    values = arguments("t", given)
    values["b"] = 2
    assert given == {"a": 1}


# -- the graph's answer -------------------------------------------------------------------------


def test_the_checks_verdict_is_returned_for_the_mapped_call() -> None:
    for verdict in (ALLOWED, Verdict(allowed=False, target="ACT-001", reason="no")):
        calls, check = seen(verdict)
        assert judged(ToolGuard(resolver={"t": "ACT-001"}), "t", '{"shard": "09"}', check,
                      call_id="c1") is verdict
        assert calls == [ToolCall(name="t", args={"shard": "09"}, action_id="ACT-001", id="c1")] * 2


def test_a_failing_check_is_judged_by_on_error() -> None:
    denied = judged(ToolGuard(), "t", ARGS, down, call_id="c1")
    assert denied == Verdict(allowed=False, target=None, tool_call=ToolCall(name="t", args=ARGS,
                                                                             id="c1"),
                             reason="denied (fail closed): the premise graph could not be checked "
                                    "for t: ConnectionError: graph unreachable")
    allowed = judged(ToolGuard(policy=Policy(on_error="allow")), "t", ARGS, down)
    assert allowed is not None and allowed.allowed and allowed.target is None
    assert allowed.reason == ("allowed (policy on_error='allow'): the premise graph could not be "
                              "checked for t: ConnectionError: graph unreachable")
    assert not judged(ToolGuard(policy=Policy(unknown="allow")), "t", ARGS,  # type: ignore[union-attr]
                      down).allowed


def test_a_bad_id_from_the_check_is_judged_by_unknown_not_on_error() -> None:
    denied = judged(ToolGuard(resolver={"t": "ACT-001"}), "t", ARGS, bad_id, call_id="c9")
    assert denied is not None and not denied.allowed and denied.target is None
    assert denied.tool_call == ToolCall(name="t", args=ARGS, id="c9")
    assert denied.reason == ("denied (fail closed): the call to t could not be mapped to an action "
                             "of the premise graph: InvalidInputError: action_id ' x' has "
                             "surrounding whitespace")
    assert judged(ToolGuard(policy=Policy(unknown="allow")), "t", ARGS,  # type: ignore[union-attr]
                  bad_id).allowed
    assert not judged(ToolGuard(policy=Policy(on_error="allow")), "t", ARGS,  # type: ignore[union-attr]
                      bad_id).allowed


def test_unanswered_and_unmappable_verdicts() -> None:
    call = ToolCall(name="t", args=ARGS, id="c1")
    assert unanswered(call, OSError("x"), Policy()).tool_call is call
    assert unanswered(call, InvalidInputError("bad"), Policy(unknown="allow")).allowed
    assert unmappable("t", '{"shard": "09"}', "c1", ValueError("x"), Policy()).tool_call == \
        ToolCall(name="t", args={"shard": "09"}, id="c1")
    assert safe_call("t", "not json", "c2") is None
    assert safe_call("t", None, None) == ToolCall(name="t", args={})


# -- what the model and the log read ------------------------------------------------------------


def test_veto_text() -> None:
    verdict = Verdict(allowed=False, target="ACT-001", reason="ACT-001 denied: premise CLM-001")
    assert veto_text("t", verdict) == f"{VETO_PREFIX}: the call to t did not run.\n{verdict.explain()}"
    assert VETO_PREFIX == "VETOED by Rippl"


def vetoes(caplog: pytest.LogCaptureFixture, args: Any, check: Callable[[ToolCall], Verdict] = down,
           **kw: Any) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rippl"):
        ToolGuard(**kw).judge("t", args, check)
    return [r.getMessage() for r in caplog.records if r.name == "rippl"]


def test_a_veto_is_logged_with_its_arguments(caplog: pytest.LogCaptureFixture) -> None:
    reason = "denied (fail closed): the premise graph could not be checked for t: " \
             "ConnectionError: graph unreachable"
    assert vetoes(caplog, {"b": 1, "a": [2]}) == [f'vetoed tool call t({{"a": [2], "b": 1}}): {reason}']
    assert vetoes(caplog, '{"b": 1}') == [f'vetoed tool call t({{"b": 1}}): {reason}']
    assert vetoes(caplog, None) == [f"vetoed tool call t({{}}): {reason}"]
    odd: dict[Any, Any] = {1: "x", "a": "y"}  # keys that do not sort
    assert vetoes(caplog, odd)[0].startswith("vetoed tool call t({1: 'x', 'a': 'y'}): denied")
    assert vetoes(caplog, {}, seen()[1]) == []  # an allowed call is not logged
    assert vetoes(caplog, {}, down, policy=Policy(on_error="allow")) == []


@pytest.mark.parametrize("size", [199, 200, 201, 300])
def test_long_arguments_are_cut_in_the_log(caplog: pytest.LogCaptureFixture, size: int) -> None:
    text = "x" * size
    [message] = vetoes(caplog, text)
    shown = message.removeprefix("vetoed tool call t(").split("): ")[0]
    assert shown == (text if size <= 200 else "x" * 200 + "...")


def test_a_tool_learns_its_settings_from_metadata_unless_given() -> None:
    learner = ToolGuard()
    learner.learn("migrate", {"rippl": {"repeat_scope": "tool"}})
    assert learner.settings("migrate").repeat_scope == "tool"
    given = ToolGuard(tools={"migrate": ToolSettings(repeat_scope="args")})
    given.learn("migrate", {"rippl": "not settings"})  # what the adapter was given wins, unread
    assert given.settings("migrate").repeat_scope == "args"


@pytest.mark.parametrize("how", ["given", "learnt"])
def test_settings_that_are_not_tool_settings_are_refused_naming_the_tool(how: str) -> None:
    bad = {"repeat_scope": "sometimes"}
    with pytest.raises(InvalidInputError, match="the settings of tool 'migrate' are not valid"):
        if how == "given":
            ToolGuard(tools={"migrate": bad})
        else:
            ToolGuard().learn("migrate", {"rippl": bad})

