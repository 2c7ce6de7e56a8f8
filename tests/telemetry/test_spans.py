"""Rippl's OpenTelemetry spans, events and metrics, read back from the SDK's in-memory exporter and
metric reader: the name and attributes of each span kind, the veto event with its trail, the wave
under the decision that caused it, errors on the span's status, nesting under the caller's span
(sync and async), and no secret in any attribute."""

from __future__ import annotations

import base64
import subprocess
import sys
import textwrap

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from helpers_telemetry import Telemetry, ancestors, delta, events, every_attribute_value, point
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from rippl_core import AsyncRippl, InvalidInputError, Policy, Rippl, ToolCall
from rippl_core.adapters import Capture, Guard, ToolGuard

PLACE = ToolCall(name="place_order", args={"sku": "A1"}, id="call-1")
BASE = {"rippl.operation": "rippl.check", "db.system.name": "falkordb",
        "rippl.policy.at_risk": "block", "rippl.policy.unknown": "deny", "rippl.policy.on_error": "deny"}


def declare(rippl: Rippl) -> None:
    rippl.add_source("S1", "the stock dashboard")
    rippl.add_claim("C1", "A1 is in stock", sources=["S1"])
    rippl.add_decision("D1", "reorder A1", premises=["C1"])
    rippl.add_action("A1", "place the order", decisions=["D1"], tool="place_order", args={"sku": "A1"})


def test_a_check_is_a_span_and_a_veto_an_event_with_the_trail(rippl: Rippl, otel: Telemetry) -> None:
    declare(rippl)
    latency, verdicts, vetoes = (otel.metric(n) for n in ("rippl.check.duration", "rippl.verdicts",
                                                          "rippl.vetoes"))
    assert rippl.check(PLACE).allowed
    rippl.retract("C1", reason="the dashboard was stale", by="alice")
    assert not rippl.check(PLACE.model_copy(update={"id": "call-2"})).allowed
    allowed, denied = otel.named("rippl.check")
    graph = {"rippl.graph": rippl.graph, "db.namespace": rippl.graph}
    assert allowed.name == "rippl.check place_order"
    assert dict(allowed.attributes or {}) == {
        **BASE, **graph, "gen_ai.tool.name": "place_order", "gen_ai.tool.call.id": "call-1",
        "rippl.verdict": "allow", "rippl.verdict.target": "A1", "rippl.verdict.status": "Pending",
        "rippl.verdict.blockers.count": 0}
    assert events(allowed) == [] and allowed.status.status_code is StatusCode.UNSET
    assert dict(denied.attributes or {}) == {
        **BASE, **graph, "gen_ai.tool.name": "place_order", "gen_ai.tool.call.id": "call-2",
        "rippl.verdict": "deny", "rippl.verdict.target": "A1",
        "rippl.verdict.status": "Premise Retracted", "rippl.verdict.blockers.count": 1,
        "rippl.veto.reason": "retracted"}
    [veto] = events(denied)
    assert veto == {
        "rippl.veto.reason": "retracted", "rippl.veto.premises": ("C1",),
        "rippl.veto.trails": ("C1 -> D1 -> A1",), "rippl.verdict.target": "A1",
        "rippl.verdict.status": "Premise Retracted", "gen_ai.tool.name": "place_order",
        "gen_ai.tool.call.id": "call-2",
        "rippl.veto.explanation": "A1 denied: Premise Retracted; premise C1 (Retracted). Choose an "
                                  "action that does not rest on it, or reinstate the premise if it "
                                  "was wrong."}
    assert denied.status.status_code is StatusCode.UNSET  # a veto is an answer, not an error
    assert delta(verdicts, otel.metric("rippl.verdicts")) == {
        point(rippl__operation="rippl.check", rippl__verdict="allow"): 1,
        point(rippl__operation="rippl.check", rippl__verdict="deny"): 1}
    assert delta(vetoes, otel.metric("rippl.vetoes")) == {
        point(rippl__operation="rippl.check", rippl__veto__reason="retracted"): 1}
    assert delta(latency, otel.metric("rippl.check.duration")) == {
        point(rippl__operation="rippl.check", rippl__verdict="allow"): 1,
        point(rippl__operation="rippl.check", rippl__verdict="deny"): 1}


def test_a_check_by_id_an_unknown_call_and_a_premise_under_review(rippl: Rippl, otel: Telemetry) -> None:
    declare(rippl)
    vetoes = otel.metric("rippl.vetoes")
    assert not rippl.check(ToolCall(name="wire_money", args={})).allowed
    item = rippl.propose_retraction("C1", reason="looks wrong", by="monitor")
    assert rippl.guard("A1", at_risk="allow").blockers != []  # allowed despite, with blockers
    with pytest.raises(Exception, match="awaiting human review"):
        rippl.guard("A1")
    unknown, despite, at_risk = otel.named("rippl.check")
    assert unknown.name == "rippl.check wire_money"
    assert (unknown.attributes or {})["rippl.veto.reason"] == "unknown"
    assert "rippl.verdict.target" not in (unknown.attributes or {})
    assert events(unknown)[0]["rippl.veto.premises"] == ()
    assert despite.name == "rippl.check"
    assert {k: (despite.attributes or {})[k] for k in ("rippl.target", "rippl.verdict",
                                                        "rippl.policy.at_risk")} == \
        {"rippl.target": "A1", "rippl.verdict": "allow", "rippl.policy.at_risk": "allow"}
    assert events(despite) == []
    assert (at_risk.attributes or {})["rippl.veto.reason"] == "at_risk"
    assert events(at_risk)[0]["rippl.veto.trails"] == ("C1 -> D1 -> A1",)
    assert delta(vetoes, otel.metric("rippl.vetoes")) == {
        point(rippl__operation="rippl.check", rippl__veto__reason="unknown"): 1,
        point(rippl__operation="rippl.check", rippl__veto__reason="at_risk"): 1}
    rippl.reject(item.id, by="alice")


def test_review_decisions_and_retractions_carry_their_wave(rippl: Rippl, otel: Telemetry) -> None:
    declare(rippl)
    rippl.mark_executed("A1")  # it ran: retracting its premise opens a compensation
    sizes, compensations = otel.metric("rippl.wave.size"), otel.metric("rippl.compensations")
    item = rippl.propose_retraction("C1", reason="stale dashboard", by="monitor", evidence="ticket 7")
    rippl.reject(item.id, by="alice", note="it was fine")
    again = rippl.propose_retraction("C1", reason="stale dashboard", by="monitor")
    receipt = rippl.approve(again.id, by="alice")
    rippl.reinstate("C1", reason="restocked", by="bob")
    rippl.retract("C1", reason="sold out", by="bob")
    graph = {"rippl.graph": rippl.graph, "db.namespace": rippl.graph, "db.system.name": "falkordb"}
    spans = [s for s in otel.rippl() if s.name != "rippl.wave"]
    assert [s.name for s in spans] == ["rippl.review.propose", "rippl.review.reject",
                                       "rippl.review.propose", "rippl.review.approve",
                                       "rippl.reinstate", "rippl.retract"]
    proposed, rejected, _, approved, reinstated, retracted = (dict(s.attributes or {}) for s in spans)
    assert proposed == {**graph, "rippl.operation": "rippl.review.propose", "rippl.claim.id": "C1",
                        "rippl.actor": "monitor", "rippl.review.id": item.id,
                        "rippl.review.at_risk.count": 2}
    assert rejected == {**graph, "rippl.operation": "rippl.review.reject", "rippl.review.id": item.id,
                        "rippl.actor": "alice", "rippl.claim.id": "C1", "rippl.receipt.id": "RCP-00000001",
                        "rippl.receipt.seq": 1, "rippl.receipt.signed": False}
    assert approved == {**graph, "rippl.operation": "rippl.review.approve", "rippl.review.id": again.id,
                        "rippl.actor": "alice", "rippl.claim.id": "C1", "rippl.receipt.id": receipt.id,
                        "rippl.receipt.seq": 2, "rippl.receipt.signed": False}
    assert reinstated == {**graph, "rippl.operation": "rippl.reinstate", "rippl.claim.id": "C1",
                          "rippl.actor": "bob", "rippl.wave.size": 3}
    assert retracted == {**reinstated, "rippl.operation": "rippl.retract"}
    waves = otel.named("rippl.wave")
    assert len(waves) == 6  # every decision changed statuses, each in one wave under it
    parents = [w.parent.span_id for w in waves if w.parent is not None]
    assert parents == [s.context.span_id for s in spans]
    wave = dict(waves[3].attributes or {})  # the approval's
    assert wave == {"rippl.operation": "rippl.wave", "rippl.wave.size": 3, "rippl.wave.out": 3,
                    "rippl.wave.at_risk": 0, "rippl.wave.in": 0, "rippl.wave.compensations": 1,
                    "rippl.wave.cause": "approve", "rippl.review.id": again.id,
                    "rippl.graph": rippl.graph, "db.namespace": rippl.graph}
    assert (waves[0].attributes or {})["rippl.wave.at_risk"] == 3
    assert (waves[4].attributes or {})["rippl.wave.in"] == 3
    assert (waves[5].attributes or {})["rippl.wave.cause"] == "retract"
    grown = delta(sizes, otel.metric("rippl.wave.size"))
    assert grown == {point(rippl__wave__cause=c): n for c, n in
                     (("propose", 2), ("reject", 1), ("approve", 1), ("reinstate", 1), ("retract", 1))}
    assert delta(compensations, otel.metric("rippl.compensations")) == {
        point(rippl__wave__cause="approve"): 1, point(rippl__wave__cause="retract"): 1}


def test_capture_decide_judge_executed(rippl: Rippl, otel: Telemetry) -> None:
    run = rippl.run("run-7", agent="buyer", framework="tests")
    read = ToolCall(name="get_stock", args={"sku": "A1"}, id="c1")
    [verdict] = run.decide("turn-1", [read])
    assert verdict.allowed and run.judge(read).allowed
    claim = run.executed(read, "A1: 3 in stock")
    place = ToolCall(name="place_order", args={"sku": "A1"}, id="c2")
    first, second = run.decide("turn-2", [place, place.model_copy(update={"id": "c3"})])
    rippl.retract(claim, reason="the stock service lied", by="alice")
    assert not run.judge(place).allowed
    late = ToolCall(name="cancel", args={}, id="c4")  # no decided turn: judged as a turn of its own
    assert not run.judge(late).allowed
    names = [s.name for s in otel.rippl() if s.name != "rippl.wave"]
    assert names == ["rippl.capture.decide get_stock", "rippl.capture.judge get_stock",
                     "rippl.capture.executed get_stock", "rippl.capture.decide",
                     "rippl.retract", "rippl.capture.judge place_order",
                     "rippl.capture.decide cancel", "rippl.capture.judge cancel"]
    spans = {s.name: s for s in otel.rippl()}
    who = {"rippl.run.id": "run-7", "gen_ai.agent.name": "buyer", "rippl.run.framework": "tests",
           "rippl.graph": rippl.graph, "db.namespace": rippl.graph, "db.system.name": "falkordb"}
    capture_policy = {"rippl.policy.at_risk": "block", "rippl.policy.unknown": "record",
                      "rippl.policy.on_error": "deny"}
    decided = dict(spans["rippl.capture.decide get_stock"].attributes or {})
    assert decided == {**who, **capture_policy, "rippl.operation": "rippl.capture.decide",
                       "rippl.turn.id": "turn-1", "rippl.calls.count": 1,
                       "gen_ai.tool.name": "get_stock", "gen_ai.tool.call.id": "c1",
                       "rippl.verdict": "allow", "rippl.verdict.target": verdict.target or "",
                       "rippl.verdict.status": "Pending", "rippl.verdict.blockers.count": 0}
    executed = dict(spans["rippl.capture.executed get_stock"].attributes or {})
    assert executed == {**who, "rippl.operation": "rippl.capture.executed",
                        "gen_ai.tool.name": "get_stock", "gen_ai.tool.call.id": "c1",
                        "rippl.execution.ok": True, "rippl.execution.claim.id": claim}
    two = dict(spans["rippl.capture.decide"].attributes or {})
    assert {k: two[k] for k in ("rippl.calls.count", "rippl.verdict", "rippl.verdicts.denied")} == \
        {"rippl.calls.count": 2, "rippl.verdict": "allow", "rippl.verdicts.denied": 0}
    assert "gen_ai.tool.name" not in two and first.allowed and second.allowed
    judged = spans["rippl.capture.judge place_order"]
    assert {k: (judged.attributes or {})[k] for k in ("rippl.operation", "gen_ai.tool.call.id",
                                                       "rippl.verdict", "rippl.veto.reason")} == \
        {"rippl.operation": "rippl.capture.judge", "gen_ai.tool.call.id": "c2",
         "rippl.verdict": "deny", "rippl.veto.reason": "retracted"}
    [veto] = events(judged)
    assert veto["rippl.veto.premises"] == (claim,) and veto["gen_ai.tool.call.id"] == "c2"
    assert veto["rippl.veto.trails"][0].startswith(claim + " -> ")
    # judging a call no turn decided decides it first: that decision nests under the judgement
    inner, outer = spans["rippl.capture.decide cancel"], spans["rippl.capture.judge cancel"]
    assert inner.parent is not None and inner.parent.span_id == outer.context.span_id
    assert len(events(inner)) == 1 and len(events(outer)) == 1


def test_errors_set_the_status_and_a_graph_that_cannot_answer_is_a_veto(rippl: Rippl,
                                                                           otel: Telemetry) -> None:
    declare(rippl)
    with pytest.raises(InvalidInputError):
        rippl.check("")
    with pytest.raises(InvalidInputError):
        rippl.approve("REV-nope", by="")
    rippl.redis.execute_command("GRAPH.DELETE", rippl.keys.graph)
    rippl.redis.set(rippl.keys.graph, "not a graph any more")  # every graph query now fails
    try:
        verdict = rippl.check(PLACE)
    finally:
        rippl.redis.delete(rippl.keys.graph)
    assert not verdict.allowed
    bad_id, bad_actor, failed = otel.rippl()
    for span in (bad_id, bad_actor):
        assert span.status.status_code is StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == "InvalidInputError"
        assert [e.name for e in span.events] == ["exception"]
    assert bad_actor.name == "rippl.review.approve"
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "DatabaseError"
    assert {k: (failed.attributes or {})[k] for k in ("rippl.verdict", "rippl.veto.reason")} == \
        {"rippl.verdict": "deny", "rippl.veto.reason": "error"}
    [veto] = events(failed)
    assert veto["rippl.veto.explanation"] == verdict.reason and veto["gen_ai.tool.name"] == "place_order"


@pytest.mark.asyncio(loop_scope="session")
async def test_async_spans_nest_under_the_callers_span(arippl: AsyncRippl, otel: Telemetry) -> None:
    await arippl.add_claim("C1", "A1 is in stock")
    await arippl.add_decision("D1", "reorder", premises=["C1"])
    await arippl.add_action("A1", "order", decisions=["D1"], tool="place_order", args={"sku": "A1"})
    await arippl.retract("C1", reason="sold out", by="alice")
    tracer = trace.get_tracer("tests")
    with tracer.start_as_current_span("execute_tool place_order") as tool:
        assert not (await arippl.check(PLACE)).allowed
        run = arippl.run("run-a", agent="buyer")
        assert (await run.judge(ToolCall(name="lookup", args={}, id="x1"))).allowed
    check, decide, judge = (s for s in otel.rippl() if s.name != "rippl.retract" and s.name != "rippl.wave")
    assert check.parent is not None and check.parent.span_id == tool.get_span_context().span_id
    assert judge.parent is not None and judge.parent.span_id == tool.get_span_context().span_id
    assert decide.parent is not None and decide.parent.span_id == judge.context.span_id
    assert events(check)[0]["rippl.veto.trails"] == ("C1 -> D1 -> A1",)
    assert [a.name for a in ancestors(decide, otel.spans())] == [
        "rippl.capture.judge lookup", "execute_tool place_order"]


def test_the_adapters_fail_closed_verdicts_are_guard_spans(rippl: Rippl, otel: Telemetry) -> None:
    vetoes = otel.metric("rippl.vetoes")
    guard = ToolGuard()
    verdict = guard.judge("place_order", "{not json", lambda call: rippl.check(call), call_id="g1")
    assert verdict is not None and not verdict.allowed

    def unreachable(call: ToolCall) -> None:
        raise ConnectionError("the graph is down")

    assert not guard.judge("place_order", {"sku": "A1"}, unreachable, call_id="g2").allowed  # type: ignore[arg-type, union-attr]
    capture = Capture(Guard(rippl, policy=Policy(unknown="record")), "run/ with a bad id?")
    capture.run_id = "bad id\n"  # a run the graph refuses to record: its calls are denied
    [unrecorded] = capture.decide("t1", [("place_order", {"sku": "A1"}, "g3")])
    assert unrecorded is not None and not unrecorded.allowed
    spans = otel.named("rippl.guard")
    assert [s.name for s in spans] == ["rippl.guard place_order"] * 3
    reasons = [(s.attributes or {})["rippl.veto.reason"] for s in spans]
    assert reasons == ["unmappable", "error", "unrecorded"]
    for span, call_id in zip(spans, ["g1", "g2", "g3"], strict=True):
        attributes = dict(span.attributes or {})
        assert attributes["rippl.operation"] == "rippl.guard"
        assert attributes["gen_ai.tool.call.id"] == call_id and attributes["rippl.verdict"] == "deny"
        assert span.status.status_code is StatusCode.ERROR and "error.type" in attributes
        assert events(span)[0]["rippl.veto.explanation"].startswith("denied (fail closed)")
    assert delta(vetoes, otel.metric("rippl.vetoes")) == {
        point(rippl__operation="rippl.guard", rippl__veto__reason=r): 1 for r in reasons}


@pytest.mark.asyncio(loop_scope="session")
async def test_no_secret_in_any_attribute(otel: Telemetry) -> None:
    """A reviewer's token (the console's bearer credential) and a signing key never reach a
    span or an event, whatever path the decision took."""
    from helpers_console import ALICE, BOB, client, sign_in

    from rippl_core.testing import start_falkordb_server

    server = start_falkordb_server()
    try:
        handle = await AsyncRippl.open(url=server.url, graph="secrets")
        await handle.add_claim("C1", "A1 is in stock")
        await handle.add_action("A1", "order", decisions=[], tool="place_order")
        await handle.add_decision("D1", "reorder", premises=["C1"])
        key = Ed25519PrivateKey.generate()
        raw = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                serialization.NoEncryption())
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
        item = await handle.propose_retraction("C1", reason="stale", by="monitor")
        await handle.approve(item.id, by="alice", signing_key=key)
        await handle.reinstate("C1", reason="fine", by="bob", signing_key=raw)
        async with client(handle) as http:
            csrf = await sign_in(http, ALICE)
            proposed = await http.post("/api/reviews", headers={"x-csrf-token": csrf},
                                       json={"claim": "C1", "reason": "stale again"})
            assert proposed.status_code == 201, proposed.text
            decided = await http.post(f"/api/reviews/{proposed.json()['id']}/approve",
                                      headers={"authorization": f"Bearer {BOB}"},
                                      json={"note": "confirmed"})
            assert decided.status_code == 200, decided.text
        await handle.drop()
        await handle.close()
    finally:
        server.stop()
    spans = otel.rippl()
    assert {s.name for s in spans} >= {"rippl.review.approve", "rippl.reinstate", "rippl.review.propose"}
    assert any((s.attributes or {}).get("rippl.receipt.signed") is True for s in spans)
    secrets = [ALICE, BOB, raw.hex(), base64.b64encode(raw).decode(),
               base64.urlsafe_b64encode(raw).decode().rstrip("="), pem.splitlines()[1], csrf]
    for value in every_attribute_value(spans):
        for secret in secrets:
            assert secret not in value, f"a secret reached an attribute: {value!r}"


def test_without_the_api_installed_nothing_is_added() -> None:
    """With opentelemetry not importable, the operations are the undecorated functions."""
    code = textwrap.dedent("""
        import sys
        class Hide:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ImportError("hidden")
        sys.meta_path.insert(0, Hide())
        from rippl_core._runtime import telemetry
        from rippl_core.causal import preflight
        from rippl_core.capture import run
        from rippl_core.review import gate
        assert not telemetry.ENABLED
        for op in (preflight.check, run.decide, run.judge, run.executed, gate.propose, gate.decide,
                   gate.retraction):
            assert not hasattr(op, "__wrapped__"), op
        assert "opentelemetry" not in sys.modules
        print("plain")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "plain"
