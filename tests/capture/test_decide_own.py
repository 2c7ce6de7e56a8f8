"""The smaller queries of the common turn and the common execution (`cypher.decide_own`,
`cypher.executed_plain`) record exactly what the whole ones (`cypher.decide`, `cypher.executed`)
record: the same flow run twice, once letting the client choose and once always sending the whole
queries, leaves the same graph; and a turn the smaller query does not cover is recorded by the
whole query in the same call."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from rippl_core import Rippl, ToolCall
from rippl_core._runtime.wire import Query
from rippl_core.adapters import output_digest
from rippl_core.capture import ids
from rippl_core.capture import run as capture_run

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
    nodes = rippl._driver.query(Query(  # receipts hash their times
        "MATCH (n) WHERE NOT (n:Receipt OR n:ReceiptHead OR n:MerkleNode) "
        "RETURN labels(n), properties(n)", read_only=True))
    edges = rippl._driver.query(Query("MATCH (a)-[e]->(b) RETURN type(e), properties(e), "
                                      "properties(a), properties(b)", read_only=True))

    def plain(props: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((k, repr(v)) for k, v in props.items() if k not in CLOCKS))

    def key(props: dict[str, Any]) -> str:
        return str(props.get("id") or props.get("node") or props.get("name") or plain(props))

    return (sorted((sorted(labels), plain(props)) for labels, props in nodes),
            sorted((kind, plain(props), key(a), key(b)) for kind, props, a, b in edges))


def own_texts(*, root: bool | None = None) -> set[str]:
    """Every text of the smaller decide query (the run known or not, with or without the user's
    new messages, after the run's own messages or alone)."""
    message = [{"oid": "o", "ref": "r", "key": "k"}]
    return {capture_run.cypher.decide_own({"id": "x"}, {}, refs, [], 0, root=known,
                                          inputs=inputs).text
            for known in ((False, True) if root is None else (root,))
            for refs in ([], message) for inputs in ([], message)}


def test_the_smaller_query_records_what_the_whole_one_does(
        open_rippl: Callable[..., Rippl], monkeypatch: pytest.MonkeyPatch, sent: list[str]) -> None:
    chosen = open_rippl()
    flow(chosen)
    smaller = own_texts()
    assert sum(text in smaller for text in sent) >= 8  # the common turns took the smaller query
    plain_text = capture_run.cypher.executed_plain("x", "a", {}, {}, 0, None).text
    assert sum(text == plain_text for text in sent) >= 2  # and plain executions the smaller one
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
    known_root = capture_run.cypher.decide_own({"id": "x"}, {}, [], [], 0, root=True).text
    assert sent.count(known_root) == 1


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
    assert sum(text in own_texts() for text in sent) == 3  # t1 (the question alone) to t3


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
    known_root = capture_run.cypher.decide_own({"id": "x"}, {}, [], [], 0, root=True).text
    assert sent.count(known_root) == 1
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
