"""The smaller queries of the common turn and the common execution (`cypher.decide_own`,
`cypher.executed_plain`) record exactly what the whole ones (`cypher.decide`, `cypher.executed`)
record: the same flow run twice, once letting the client choose and once always sending the whole
queries, leaves the same graph; and a turn the smaller query does not cover is recorded by the
whole query in the same call."""

from __future__ import annotations

import ast
import os
import re
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import Rippl, ToolCall
from rippl_core._runtime.wire import Query
from rippl_core.adapters import output_digest
from rippl_core.capture import ids
from rippl_core.capture import run as capture_run
from rippl_core.capture.memory import Writing, writing
from rippl_core.capture.run import RunRef
from rippl_core.causal import cypher as causal_cypher

# times and what depends on them differ from one run of the flow to the other
CLOCKS = {"created_at", "at", "started_at", "last_active", "recorded_at", "valid_from",
          "executed_at", "read_at", "fresh_until", "observed_at", "expires_at", "retracted_at",
          "superseded_at", "recorded_ns", "reads_until"}


def flow(rippl: Rippl) -> None:
    """Turns on own carriers, a read, a reading superseded, a retraction, a veto and a repeat,
    another run of the scope, a text reply, tool results verified (one edited), an unaccounted
    message, a replay; executions plain,
    retried, failed, and one whose claim exists already."""
    rippl.add_source("S", "a report")
    rippl.add_claim("C", "billing is idle", sources=["S"])
    run = rippl.run("r1", agent="ops", framework="test", scope="team")
    health = ToolCall(name="get_health", args={"shard": "09"}, id="h1")
    run.decide("t1", [health], context=[])
    run.executed(health, "healthy", fresh_for=300)
    run.observe(["C"], ref="memory-1")
    announce = ToolCall(name="announce", args={"shard": "09"}, id="a1")
    migrate = ToolCall(name="migrate", args={"shard": "09"}, id="m1")
    run.decide("t2", [announce, migrate], context=["h1"])
    run.executed(announce, "announced")
    run.wrote("reply-1", context=["h1", "a1"])
    run.decide("t3", [ToolCall(name="noop", args={}, id="n1")], context=["h1", "a1", "t2",
                                                                         "reply-1"])
    run.decide("t3b", [ToolCall(name="noop", args={"b": 1}, id="n1b")], context=["h1", "a1"],
               results={"h1": output_digest("healthy"), "a1": None})  # recorded results
    run.decide("t3c", [ToolCall(name="noop", args={"c": 1}, id="n1c")], context=["h1"],
               results={"h1": output_digest("healthy, honestly")})  # an edited result
    run.decide("t4", [ToolCall(name="deploy", args={"v": 1}, id="d1")], context=["memory-1"])
    rippl.retract("C", reason="false", by="test")
    run.decide("t5", [ToolCall(name="deploy", args={"v": 1}, id="d2")], context=["memory-1"])
    run.decide("t6", [ToolCall(name="deploy", args={"v": 1}, id="d3")], context=["h1"],
               told=["d2"])
    run.decide("t7", [ToolCall(name="deploy", args={"v": 1}, id="d4")], context=["h1"])
    other = rippl.run("r2", agent="dba", framework="test", scope="team")
    again = ToolCall(name="get_health", args={"shard": "09"}, id="h2")
    other.decide("u1", [again], context=["reply-1"])
    other.executed(again, "down", fresh_for=300)
    other.decide("u2", [ToolCall(name="noop", args={}, id="o1")], context=["h2"])
    run.decide("t8", [ToolCall(name="noop", args={}, id="n2")], context=["h1", "somewhere"])
    run.decide("t9", [ToolCall(name="noop", args={}, id="n3")], context=["h1", "somewhere"])
    run.decide("t2", [announce, migrate], context=["h1"])  # a replay
    first, second = (ToolCall(name="noop", args={}, id=ref) for ref in ("n2", "n3"))
    run.executed(first, "done")
    run.executed(first, "done")  # a retry of the same call
    run.executed(migrate, "failed: locked", ok=False)
    run.executed(second, "done")  # the same result again: an existing claim
    # the user's questions: a first turn on them alone (a run of its own, and one in the scope of
    # others: nothing to hand over, or maybe something), a new question after the run's messages
    asked = rippl.run("r3", agent="ops", framework="test")
    look = ToolCall(name="get_health", args={"shard": "10"}, id="q1c")
    asked.decide("q1", [look], context=["sys", "ask-1"], inputs=["sys", "ask-1"])
    asked.executed(look, "healthy", fresh_for=300)
    asked.decide("q2", [ToolCall(name="noop", args={"q": 2}, id="q2c")],
                 context=["sys", "ask-1", "q1c", "ask-2"], inputs=["sys", "ask-1", "ask-2"])
    asked.decide("q3", [ToolCall(name="noop", args={"q": 3}, id="q3c")],
                 context=["ask-3", "q1c"], inputs=["ask-3"])  # a user message before: a rewrite
    joined = rippl.run("r4", agent="ops", framework="test", scope="team")
    joined.decide("j1", [ToolCall(name="noop", args={"j": 1}, id="j1c")], context=["ask-j"],
                  inputs=["ask-j"])
    run.decide("t10", [ToolCall(name="noop", args={}, id="n4")], context=["h1", "ask-late"],
               inputs=["ask-late"])  # a run that carried much: a new question after its messages
    run.decide("t11", [ToolCall(name="noop", args={}, id="n5")], context=["ask-first"],
               inputs=["ask-first"])  # only a question, in a run that carried much: a rewrite


def dump(rippl: Rippl) -> tuple[list[Any], list[Any]]:
    """Every node and edge. The readings a node rests on are compared as the readers see them
    (`causal_cypher.read_ids`: its own list, or its context chain's, as a turn that went on from
    the last keeps them), as a set."""
    nodes = rippl._driver.query(Query(  # receipts hash their times
        "MATCH (n) WHERE NOT (n:Receipt OR n:ReceiptHead OR n:MerkleNode) "
        "RETURN labels(n), properties(n)", read_only=True))
    edges = rippl._driver.query(Query("MATCH (a)-[e]->(b) RETURN type(e), properties(e), "
                                      "properties(a), properties(b)", read_only=True))
    readings = dict(rippl._driver.query(Query(
        "MATCH (n:Node) WHERE n.reads IS NOT NULL OR n.reads_via IS NOT NULL WITH 1 AS one, n "
        + causal_cypher.read_ids("n", "one") + "RETURN n.id, collect(DISTINCT rid)",
        read_only=True)))

    def plain(props: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        if props.get("id") in readings:
            props = {**{k: v for k, v in props.items() if k not in ("reads", "reads_via")},
                     "readings": sorted(readings[props["id"]])}
        return tuple(sorted((k, repr(v)) for k, v in props.items() if k not in CLOCKS))

    def key(props: dict[str, Any]) -> str:
        return str(props.get("id") or props.get("node") or props.get("name") or plain(props))

    return (sorted((sorted(labels), plain(props)) for labels, props in nodes),
            sorted((kind, plain(props), key(a), key(b)) for kind, props, a, b in edges))


# a property given inline from a map (`cypher._props`): which ones depends on the map's keys
_GIVEN = re.compile(r"\w+: (?:\$[\w.]+|act)\.\w+(?:, )?")


def shape(text: str) -> str:
    """A query's text less the properties it gives inline from a map: the same for every turn of
    one query, whatever properties its decision and actions have."""
    return _GIVEN.sub("", text)


def own_texts(*, root: bool | None = None) -> set[str]:
    """Every text of the smaller decide query (the run known or not, with or without the user's
    new messages, after the run's own messages or alone, going on from the previous turn's
    input or not)."""
    message = [{"oid": "o", "ref": "r", "key": "k"}]
    return {shape(capture_run.cypher.decide_own({"id": "x"}, {}, refs, [], 0, root=known,
                                                inputs=inputs, base=base).text)
            for known in ((False, True) if root is None else (root,))
            for refs in ([], message) for inputs in ([], message)
            for base in ((None, "CTX-b") if known else (None,))}


def test_the_smaller_query_records_what_the_whole_one_does(
        open_rippl: Callable[..., Rippl], monkeypatch: pytest.MonkeyPatch, sent: list[str]) -> None:
    chosen = open_rippl()
    flow(chosen)
    smaller = own_texts()
    assert sum(shape(text) in smaller for text in sent) >= 8  # the common turns took the smaller query
    plain_text = shape(capture_run.cypher.executed_plain("x", "a", {}, {}, 0, None).text)
    assert sum(shape(text) == plain_text for text in sent) >= 2  # and plain executions the smaller one
    # every turn tried with the smaller query first (it must refuse those it does not cover)
    with monkeypatch.context() as patched:
        patched.setattr(capture_run.Carriers, "common", lambda self, run, keys: True)
        patched.setattr(capture_run.Carriers, "knows_run", lambda self, run: True)
        eager = open_rippl()
        flow(eager)
    monkeypatch.setattr(capture_run.Carriers, "common", lambda self, run, keys: False)
    monkeypatch.setattr(capture_run.cypher, "executed_plain",
                        lambda *args, **kwargs: Query("RETURN 1 LIMIT 0", read_only=True))
    whole = open_rippl()
    flow(whole)
    assert dump(chosen) == dump(whole)
    assert dump(eager) == dump(whole)


def test_a_turn_the_smaller_query_does_not_cover_is_recorded_whole(
        rippl: Rippl, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hint that is wrong (a carrier pruned, another run's message) costs a second commit, and
    the turn is recorded as the whole query records it."""
    run = rippl.run("r1")
    first = ToolCall(name="read", args={}, id="c1")
    run.decide("t1", [first], context=[])
    run.executed(first, "read")
    monkeypatch.setattr(capture_run.Carriers, "common", lambda self, run, keys: True)
    monkeypatch.setattr(capture_run.Carriers, "knows_run", lambda self, run: True)
    [verdict] = run.decide("t2", [ToolCall(name="noop", args={}, id="c2")],
                           context=["c1", "never-recorded"])
    assert verdict.allowed
    unaccounted = rippl._driver.query(Query(
        "MATCH (o:Observation {kind: 'unaccounted'}) RETURN o.ref", read_only=True))
    assert unaccounted == [("never-recorded",)]
    run.close()
    assert rippl.prune_runs(older_than=datetime.now(UTC) + timedelta(minutes=1)) == ["r1"]
    third = ToolCall(name="noop", args={}, id="c3")
    [verdict] = run.decide("t3", [third], context=[])  # the run is gone: recorded again, whole
    assert verdict.allowed and rippl.get(ids.run_claim("r1")).state.value == "IN"


def test_a_turn_on_the_runs_own_summary_takes_the_smaller_query(rippl: Rippl,
                                                                sent: list[str]) -> None:
    """What `wrote` recorded is a carrier of the run itself: the client knows it (its hint) and
    the next turn whose input holds the summary sends the smaller query, first time."""
    run = rippl.run("r1")
    read = ToolCall(name="read", args={}, id="c1")
    run.decide("t1", [read], context=[])
    run.executed(read, "healthy")
    run.wrote("s1", context=["c1"], kind="summary")
    sent.clear()
    [verdict] = run.decide("t2", [ToolCall(name="noop", args={}, id="c2")], context=["s1"])
    assert verdict.allowed
    # the smaller query, knowing the run's root exists (the client recorded the run)
    known_root = shape(capture_run.cypher.decide_own({"id": "x"}, {}, [], [], 0, root=True).text)
    assert [shape(text) for text in sent].count(known_root) == 1


def test_a_turn_repeating_its_input_keeps_taking_the_smaller_query(rippl: Rippl,
                                                                   sent: list[str]) -> None:
    """The user's message, recorded by the first turn (the smaller query: a new run), is guessed
    the run's own from then on: every later turn on it takes the smaller query (a success does
    not unlearn the guess)."""
    run = rippl.run("r1")
    for n in range(1, 4):
        [verdict] = run.decide(f"t{n}", [ToolCall(name="noop", args={"n": n}, id=f"c{n}")],
                               context=["u1"], inputs=["u1"])
        assert verdict.allowed
    assert sum(shape(text) in own_texts() for text in sent) == 3  # t1 (the question alone) to t3


def test_what_the_run_recorded_itself_stays_known_when_a_guess_fails(
        open_rippl: Callable[..., Rippl], sent: list[str]) -> None:
    """A failed smaller query forgets the guessed messages (another client's run's, here), not
    the run's own turns and summaries: the next turn on those takes the smaller query again."""
    rippl = open_rippl()
    other = open_rippl(graph=rippl.graph)  # another client: this one's hint knows none of it
    a, b = rippl.run("ra", scope="s"), other.run("rb", scope="s")
    health = ToolCall(name="get_health", args={}, id="h9")
    b.decide("b1", [health], context=[])
    b.executed(health, "healthy")
    own = ToolCall(name="noop", args={"n": 1}, id="c1")
    a.decide("t1", [own], context=[])
    a.executed(own, "done")
    a.wrote("s1", context=["t1"], kind="summary")
    a.decide("t2", [ToolCall(name="noop", args={"n": 2}, id="c2")], context=["h9"])  # b's: whole
    a.decide("t3", [ToolCall(name="noop", args={"n": 3}, id="c3")],
             context=["t1", "c1", "s1", "h9"])  # guessed common, refused: the guess about h9 forgotten
    sent.clear()
    a.decide("t4", [ToolCall(name="noop", args={"n": 4}, id="c4")], context=["t1", "c1", "s1"])
    known_root = shape(capture_run.cypher.decide_own({"id": "x"}, {}, [], [], 0, root=True).text)
    assert [shape(text) for text in sent].count(known_root) == 1
    sent.clear()  # and the failed guess is forgotten: a turn on h9 sends the whole query at once
    a.decide("t5", [ToolCall(name="noop", args={"n": 5}, id="c5")], context=["h9"])
    assert known_root not in sent


def test_the_hint_survives_many_threads_forgetting_its_oldest_entries_at_once() -> None:
    """One handle's runs mark carriers from many threads; past its bound each forgets the oldest
    entry, and two threads forgetting the same one must not delete it twice (KeyError) or change
    the dict under another's iteration (RuntimeError)."""

    class Small(capture_run.Carriers):
        LIMIT = 4

    carriers = Small()
    errors: list[BaseException] = []

    def mark(n: int) -> None:
        try:
            for i in range(3000):
                carriers.mark(f"run-{n}", [f"{n}-{i}", f"{n}-{i}b"], sure=i % 2 == 0)
                carriers.doubt([f"{n}-{i}"])
        except BaseException as error:  # reported below
            errors.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads between almost every bytecode
    try:
        threads = [threading.Thread(target=mark, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(carriers._keys) <= Small.LIMIT


# ------------------------------------------------------------------ a turn going on from the last


def extending_texts() -> set[str]:
    """Every text of the smaller query extending the previous turn's context (`base`)."""
    message = [{"oid": "o", "ref": "r", "key": "k"}]
    return {shape(capture_run.cypher.decide_own({"id": "x"}, {}, refs, [], 0, root=True,
                                                inputs=inputs, base="CTX-b").text)
            for refs in ([], message) for inputs in ([], message)}


def as_sets(graph: tuple[list[Any], list[Any]]) -> tuple[list[Any], list[Any]]:
    """`dump` with each node's readings (`reads`, a set: its order is the order a query happened
    to collect them in) sorted, and the time a belief was first recorded left out."""

    def plain(props: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        return tuple((k, repr(sorted(ast.literal_eval(v))) if k == "reads" else v)
                     for k, v in props if k != "first_recorded")

    nodes, edges = graph
    return (sorted((labels, plain(props)) for labels, props in nodes),
            sorted((kind, plain(props), a, b) for kind, props, a, b in edges))


def conversation(rippl: Rippl, turns: int = 12) -> None:
    """One run whose every input holds every earlier message (a framework's message list): the
    model's turns, readings fresh for a while, results verified, a reading superseded (shard 01
    read again, degraded) and one retracted, a user's question in the middle, the model's own
    summary."""
    run = rippl.run("long", agent="ops", framework="test")
    messages: list[str] = ["ask"]
    results: dict[str, str | None] = {}
    for k in range(1, turns + 1):
        call = ToolCall(name="get_health", args={"shard": f"{k % 4:02d}"}, id=f"h{k}")
        inputs = ["ask"] if k == 1 else ["ask-2"] if k == 6 else []
        if k == 6:
            messages.append("ask-2")
        run.decide(f"t{k}", [call], context=list(messages), inputs=inputs, results=dict(results))
        output = f"shard {k % 4:02d}: {'degraded' if k == 9 else 'healthy'}"
        reading = run.executed(call, output, fresh_for=300)
        messages += [f"t{k}", f"h{k}"]
        results[f"h{k}"] = output_digest(output) if k % 2 else None
        if k == 10:  # (every later turn rests on it: denied, they take the whole query)
            rippl.retract(reading, reason="a stale replica answered", by="monitor")
        if k == 7:
            run.wrote("summary", context=list(messages), kind="summary")
            messages.append("summary")


def test_a_turn_going_on_from_the_last_sends_only_its_new_messages(
        open_rippl: Callable[..., Rippl], monkeypatch: pytest.MonkeyPatch, sent: list[str]) -> None:
    """Each turn whose input goes on from the previous one's extends that turn's context, sending
    the new messages only (its parameters do not grow with the conversation), and records exactly
    what the whole query records: the same graph, premises, labels, readings and bounds."""
    chosen = open_rippl()
    conversation(chosen)
    extending = extending_texts()
    assert sum(shape(text) in extending for text in sent) == 10  # t2 to t11 (t12 is after a veto)
    monkeypatch.setattr(capture_run.Carriers, "common", lambda self, run, keys: False)
    whole = open_rippl()
    conversation(whole)
    assert as_sets(dump(chosen)) == as_sets(dump(whole))


def test_a_turn_going_on_from_the_last_carries_what_its_input_held(
        open_rippl: Callable[..., Rippl], sent: list[str]) -> None:
    """What an extended turn rests on is what its whole input carries: the readings of every
    earlier message, not only the new ones, and a retraction of an early one vetoes it."""
    rippl = open_rippl()
    run = rippl.run("r1")
    messages: list[str] = []
    readings = []
    for k in range(1, 6):
        call = ToolCall(name="get_health", args={"shard": f"{k:02d}"}, id=f"h{k}")
        [verdict] = run.decide(f"t{k}", [call], context=list(messages))
        assert verdict.allowed, verdict.reason
        readings.append(run.executed(call, f"shard {k:02d}: healthy"))
        messages += [f"t{k}", f"h{k}"]
    rippl.retract(readings[0], reason="the first answer was a stale replica", by="monitor")
    sent.clear()
    move = ToolCall(name="migrate", args={"shard": "05"}, id="m1")
    [verdict] = run.decide("t6", [move], context=list(messages))
    assert sum(shape(text) in extending_texts() for text in sent) == 1
    assert not verdict.allowed and readings[0] in {b.premise for b in verdict.blockers}
    premises = {n.id for n in rippl.premises(str(verdict.target))}
    assert set(readings) <= premises


def test_a_client_that_resumes_a_conversation_goes_on_from_its_first_turn(
        open_rippl: Callable[..., Rippl], sent: list[str]) -> None:
    """A new client (another process: it remembers nothing of the run) sends its first turn's
    input whole, then goes on from that turn: a long conversation resumed pays the whole query
    once, not on every turn. What it records is what the first client would have."""
    rippl = open_rippl()
    run = rippl.run("r1")
    messages: list[str] = []
    readings = []

    def turn(run: Any, k: int) -> None:
        call = ToolCall(name="get_health", args={"shard": f"{k:02d}"}, id=f"h{k}")
        [verdict] = run.decide(f"t{k}", [call], context=list(messages))
        assert verdict.allowed, verdict.reason
        readings.append(run.executed(call, f"shard {k:02d}: healthy", fresh_for=300))
        messages.extend([f"t{k}", f"h{k}"])

    for k in range(1, 4):
        turn(run, k)
    resumed = open_rippl(graph=rippl.graph).run("r1")
    sent.clear()
    for k in range(4, 7):
        turn(resumed, k)
    assert sum(shape(text) in extending_texts() for text in sent) == 2  # t5 and t6
    rippl.retract(readings[0], reason="the first answer was a stale replica", by="monitor")
    [verdict] = resumed.decide("t7", [ToolCall(name="migrate", args={}, id="m1")],
                               context=list(messages))
    assert not verdict.allowed and readings[0] in {b.premise for b in verdict.blockers}
    assert set(readings) <= {n.id for n in rippl.premises(str(verdict.target))}


def test_a_turn_does_not_extend_a_context_another_client_moved_on_from(
        open_rippl: Callable[..., Rippl], sent: list[str]) -> None:
    """The run's latest context is no longer the one this client remembers (another client
    recorded a turn of the run, extending it too): the extending query refuses, and the turn is
    recorded from its whole input; a chain never forks (each of its contexts is one step)."""
    rippl = open_rippl()
    other = open_rippl(graph=rippl.graph)
    run, same = rippl.run("r1"), other.run("r1")
    first = ToolCall(name="get_health", args={"shard": "01"}, id="h1")
    run.decide("t1", [first], context=[])
    reading = run.executed(first, "shard 01: healthy")
    second = ToolCall(name="noop", args={"n": 2}, id="c2")
    run.decide("t2", [second], context=["t1", "h1"])
    run.executed(second, "done")
    same.decide("o1", [ToolCall(name="noop", args={"o": 1}, id="o1")], context=["t1", "h1"])
    rippl.retract(reading, reason="stale", by="monitor")
    sent.clear()
    [verdict] = run.decide("t3", [ToolCall(name="migrate", args={"shard": "01"}, id="m1")],
                           context=["t1", "h1", "t2", "c2"])
    assert sum(shape(text) in extending_texts() for text in sent) == 1  # tried, refused, then the rest
    assert not verdict.allowed and reading in {b.premise for b in verdict.blockers}
    assert reading in {n.id for n in rippl.premises(str(verdict.target))}
    steps = rippl._driver.query(Query("MATCH (k:Context) RETURN k.chain, k.seq", read_only=True))
    assert len(steps) == 4 and len(set(steps)) == len(steps)


def test_a_memory_written_onto_a_claim_in_the_context_is_read_again(
        open_rippl: Callable[..., Rippl], monkeypatch: pytest.MonkeyPatch) -> None:
    """A claim the run's context holds gains a binding after the context was stored (another run,
    vetoed, writes a memory onto it): the next turn cannot take the context as it was; it reads
    its whole input again and the veto binds it, as the whole query records."""

    def flow(rippl: Rippl) -> list[bool]:
        scout = rippl.run("T0", agent="scout")
        health = ToolCall(name="get_health", args={"shard": "09"}, id="c1")
        scout.decide("s1", [health], context=[])
        scout.executed(health, "shard 09: healthy")
        save = ToolCall(name="remember", args={"text": "09 is due"}, id="c2")
        scout.decide("s2", [save], context=["s1", "c1"])
        with writing(Writing(RunRef("T0", "scout"), call="c2")):
            note = rippl.add_claim("NOTE", "Shard 09 still needs its migration").id
            rippl.believe("ops", note, topic="todo/09")
        scout.executed(save, "saved")
        planner = rippl.run("R2", agent="planner")
        planner.observe([note], ref="recall")
        verdicts = []
        messages = ["recall"]
        for k in range(1, 3):
            look = ToolCall(name="noop", args={"k": k}, id=f"x{k}")
            verdicts += [v.allowed for v in planner.decide(f"r{k}", [look], context=list(messages))]
            planner.executed(look, "ok")
            messages += [f"r{k}", f"x{k}"]
        lead = rippl.run("T1", agent="lead")
        lead.decide("l1", [health.model_copy(update={"id": "l0"})], context=[])
        lead_reading = lead.executed(health.model_copy(update={"id": "l0"}), "shard 09: healthy")
        rippl.retract(lead_reading, reason="stale cache", by="monitor")
        [veto] = lead.decide("l2", [migrate("v1")], context=["l1", "l0"])
        assert not veto.allowed
        keep = ToolCall(name="remember", args={"text": "later"}, id="c3")
        lead.decide("l3", [keep], context=["l1", "l0", "l2", "v1"], told=["v1"])
        with writing(Writing(RunRef("T1", "lead"), call="c3")):
            rippl.believe("ops", note, topic="todo/09")  # onto the note the planner holds
        verdicts += [v.allowed for v in planner.decide("r3", [migrate("m1")],
                                                       context=list(messages))]
        return verdicts

    chosen = open_rippl()
    assert flow(chosen) == [True, True, False]  # the lead's veto binds the planner's act
    monkeypatch.setattr(capture_run.Carriers, "common", lambda self, run, keys: False)
    whole = open_rippl()
    assert flow(whole) == [True, True, False]
    assert as_sets(dump(chosen)) == as_sets(dump(whole))


def migrate(call_id: str) -> ToolCall:
    return ToolCall(name="migrate", args={"shard": "09"}, id=call_id)


# A conversation's steps: a turn on the messages so far (its result fresh for a while or not),
# a message dropped from the input (trimmed), the user's question added, a result's digest given
# (right or edited), the latest reading retracted, another client's turn of the same run.
going_on = st.lists(st.one_of(
    st.tuples(st.just("turn"), st.booleans()),
    st.tuples(st.just("drop"), st.integers(0, 40)),
    st.tuples(st.just("ask"), st.just(0)),
    st.tuples(st.just("digest"), st.booleans()),
    st.tuples(st.just("retract"), st.just(0)),
    st.tuples(st.just("other"), st.just(0)),
    st.tuples(st.just("resume"), st.just(0)),
), min_size=3, max_size=16)


@settings(max_examples=int(os.environ.get("RIPPL_EXAMPLES", "50")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=going_on)
def test_turns_going_on_from_the_last_record_what_the_whole_query_does(
        open_rippl: Callable[..., Rippl], plan: list[tuple[str, Any]]) -> None:
    """Whatever the conversation does between turns, a client that extends the previous turn's
    context where it may records what a client sending every turn whole records: the same
    graph, the same verdicts."""

    def play(rippl: Rippl, other: Rippl) -> list[tuple[bool, str]]:
        run = rippl.run("conv", agent="ops")
        messages: list[str] = []
        results: dict[str, str | None] = {}
        readings: list[str] = []
        verdicts: list[tuple[bool, str]] = []
        for k, (step, arg) in enumerate(plan):
            if step == "turn":
                call = ToolCall(name="get_health", args={"shard": k % 3}, id=f"h{k}")
                inputs = [m for m in messages if m.startswith("ask")]
                [verdict] = run.decide(f"t{k}", [call], context=list(messages), inputs=inputs,
                                       results=dict(results))
                verdicts.append((verdict.allowed, verdict.reason))
                readings.append(run.executed(call, f"shard {k % 3}: up {k % 2}",
                                             fresh_for=300 if arg else None))
                messages += [f"t{k}", f"h{k}"]
            elif step == "drop" and messages:
                del messages[arg % len(messages)]
            elif step == "ask":
                messages.append(f"ask{k}")
            elif step == "digest" and readings:
                ref = next((m for m in reversed(messages) if m.startswith("h")), None)
                if ref is not None:
                    shard = int(ref[1:]) % 3
                    results[ref] = output_digest(f"shard {shard}: up {int(ref[1:]) % 2}"
                                                 + ("" if arg else " (edited)"))
            elif step == "retract" and readings and not rippl.get(readings[-1]).retracted:
                rippl.retract(readings[-1], reason="stale", by="monitor")
            elif step == "other":
                other.run("conv").decide(f"o{k}", [ToolCall(name="noop", args={"k": k},
                                                            id=f"o{k}")], context=[])
            elif step == "resume":  # a new client (another process) takes the run on
                run = open_rippl(graph=rippl.graph).run("conv", agent="ops")
        return verdicts

    chosen = open_rippl()
    first = play(chosen, open_rippl(graph=chosen.graph))
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(capture_run.Carriers, "common", lambda self, run, keys: False)
        whole = open_rippl()
        second = play(whole, open_rippl(graph=whole.graph))
    assert first == second
    assert as_sets(dump(chosen)) == as_sets(dump(whole))


def test_an_input_given_as_a_tuple_goes_on_from_the_last_too(rippl: Rippl, sent: list[str]) -> None:
    """The input's messages may come as any sequence: a tuple that goes on from the previous
    turn's input takes the extending query as a list does."""
    run = rippl.run("r1")
    messages: tuple[str, ...] = ()
    for k in range(1, 4):
        call = ToolCall(name="get_health", args={"k": k}, id=f"h{k}")
        run.decide(f"t{k}", [call], context=messages)
        run.executed(call, "healthy")
        messages += (f"t{k}", f"h{k}")
    assert sum(shape(text) in extending_texts() for text in sent) == 1  # t3 (t2's input had t1's: none)


def test_a_veto_read_from_a_team_mate_is_never_taken_as_going_on(
        open_rippl: Callable[..., Rippl], monkeypatch: pytest.MonkeyPatch) -> None:
    """A run reads a team mate's veto (`told`, from a shared history) while its input goes on
    from its previous turn's: what the veto named leaves the turn's premises, as the whole query
    records, so the re-plan is allowed; extending the previous context would keep them."""

    def flow(rippl: Rippl) -> list[bool]:
        lead = rippl.run("A", scope="team")
        health = ToolCall(name="get_health", args={"shard": "09"}, id="a1")
        lead.decide("a-t1", [health], context=[])
        reading = lead.executed(health, "shard 09: healthy")
        mate = rippl.run("B", scope="team")
        mate.observe([reading], ref="shared")
        verdicts, messages = [], ["shared"]
        for k in (1, 2):  # the second turn's input goes on from the first's (remembered)
            call = ToolCall(name="noop", args={"n": k}, id=f"b{k}")
            verdicts += [v.allowed for v in mate.decide(f"b-t{k}", [call], context=list(messages))]
            mate.executed(call, "done")
            messages += [f"b-t{k}", f"b{k}"]
        rippl.retract(reading, reason="a stale replica answered", by="monitor")
        verdicts += [v.allowed for v in lead.decide("a-t2", [ToolCall(
            name="migrate", args={"shard": "09"}, id="v1")], context=["a-t1", "a1"])]
        verdicts += [v.allowed for v in mate.decide(
            "b-t3", [ToolCall(name="migrate", args={"shard": "07"}, id="b3")],
            context=list(messages), told=["v1"])]
        return verdicts

    chosen = open_rippl()
    assert flow(chosen) == [True, True, False, True]  # the re-plan rests on none of the veto's
    monkeypatch.setattr(capture_run.Carriers, "common", lambda self, run, keys: False)
    whole = open_rippl()
    assert flow(whole) == [True, True, False, True]
    assert as_sets(dump(chosen)) == as_sets(dump(whole))
