"""What a small write and a node read cost in round trips to the server, counted on the wire (each
request the client sends), and that reusing what a write has already read stays correct when the
graph changes under it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from redis.connection import AbstractConnection

from rippl_core import Rippl
from rippl_core.causal import write
from rippl_core.vocabulary import State


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """Every request sent to the server, as sent (a pipeline is one request)."""
    requests: list[bytes] = []
    send = AbstractConnection.send_packed_command

    def recording(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        requests.append(b"".join(bytes(part) for part in command) if isinstance(command, list)
                        else bytes(command))
        send(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", recording)
    return requests


def commands(requests: list[bytes]) -> list[bytes]:
    """The first word of each request (MULTI for a transaction)."""
    return [r.split(b"\r\n")[2] if r.startswith(b"*") else b"?" for r in requests]


def test_adding_a_claim_is_four_round_trips(rippl: Rippl, sent: list[bytes]) -> None:
    rippl.add_source("SRC", "a source")
    rippl.add_claim("WARM", "warm the connection pool", sources=["SRC"])
    sent.clear()
    node = rippl.add_claim("C1", "a claim", sources=["SRC"])
    # WATCH; one read of the claim and its source; the commit; the claim and its support read
    # back together (the source's state is not read a second time to label the claim)
    assert commands(sent) == [b"WATCH", b"GRAPH.RO_QUERY", b"MULTI", b"MULTI"]
    assert node.state is State.IN and node.justifications == [["SRC"]]


def test_reading_a_node_is_one_round_trip(rippl: Rippl, sent: list[bytes]) -> None:
    rippl.add_source("SRC", "a source")
    rippl.add_claim("C1", "a claim", sources=["SRC"])
    sent.clear()
    node = rippl.get("C1")
    assert commands(sent) == [b"MULTI"]  # the node and its support in one transaction
    assert node.justifications == [["SRC"]]


def test_a_state_read_before_a_concurrent_retraction_is_not_used(
        rippl: Rippl, open_rippl: Callable[..., Rippl], monkeypatch: pytest.MonkeyPatch) -> None:
    """The source's state read at the start of the write is reused to label the new claim; when
    the source is retracted before the commit, the commit is refused and the write starts over, so
    the claim is labelled from the state it really rests on."""
    rippl.add_source("SRC", "a source")
    other = open_rippl(graph=rippl.graph)
    plan, calls = write.plan_change, []

    def racing(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:  # between the write's reads and its commit
            other.retract("SRC", reason="found false", by="test")
        return (yield from plan(*args, **kwargs))

    monkeypatch.setattr(write, "plan_change", racing)
    node = rippl.add_claim("C1", "a claim", sources=["SRC"])
    assert len(calls) == 2  # planned again after the refused commit
    assert node.state is State.OUT
    assert rippl.get("C1").state is State.OUT


def test_a_retraction_reads_the_claim_once(rippl: Rippl, sent: list[bytes]) -> None:
    rippl.add_source("SRC", "a source")
    rippl.add_claim("C1", "a claim", sources=["SRC"])
    rippl.add_decision("D1", "a decision", premises=["C1"])
    rippl.add_action("A1", "an action", decisions=["D1"], tool="t", args={"a": 1})
    sent.clear()
    rippl.retract("C1", reason="found false", by="test")
    # WATCH; the claim; the walk down, a level a read; the region's support; the receipt chain's
    # head; the commit
    assert commands(sent) == [b"WATCH", *[b"GRAPH.RO_QUERY"] * 6, b"MULTI"]
    assert sum(b"RETURN properties(n)" in request for request in sent) == 1
    assert rippl.get("A1").state is State.OUT


def test_a_captured_turn_and_its_execution_are_one_round_trip_each(rippl: Rippl,
                                                                   sent: list[bytes]) -> None:
    """decide records the turn (its context set, hand-overs, repeats, overrides, the readings it
    rests on) and reads the declared matches in one transaction; executed records the reading,
    refreshes or supersedes, in one; a repeat of a vetoed call and an unaccounted message too."""
    from rippl_core import ToolCall
    from rippl_core.adapters import output_digest

    run = rippl.run("r1", scope="s")
    warm = ToolCall(name="warm", args={}, id="w1")
    run.decide("t0", [warm], context=[])
    run.executed(warm, "warm")
    health = ToolCall(name="get_health", args={"shard": "09"}, id="h1")
    sent.clear()
    run.decide("t1", [health], context=["w1"], results={"w1": output_digest("warm")})
    assert commands(sent) == [b"MULTI"]
    sent.clear()
    run.executed(health, "shard 09: healthy", fresh_for=300)
    assert commands(sent) == [b"MULTI"]
    migrate = ToolCall(name="migrate", args={"shard": "09"}, id="m1")
    sent.clear()
    [allowed] = run.decide("t2", [migrate], context=["h1", "summary-1", "t1"], inputs=["u1"])
    assert allowed.allowed and commands(sent) == [b"MULTI"]
    sent.clear()
    assert rippl.check(str(allowed.target)).allowed
    assert commands(sent) == [b"MULTI"]  # the allowed check: one read, freshness included
    sent.clear()
    assert run.judge(migrate).allowed  # the call as decided, judged again: one read
    assert commands(sent) == [b"MULTI"]
    sent.clear()
    run.executed(migrate, "migrated")  # not a read: the smaller query, once
    assert commands(sent) == [b"MULTI"]


def test_asking_a_belief_as_of_a_past_time_is_two_round_trips(rippl: Rippl,
                                                              sent: list[bytes]) -> None:
    """The interval holding then; then the claim's and the evidence's ancestry with their
    retraction records and the evidence's states now, in one round trip when the evidence is
    what the claim rests on (a level more of ancestry is a round trip more)."""
    import time
    from datetime import UTC, datetime

    rippl.add_source("SRC", "a report")
    rippl.add_claim("C1", "a claim", sources=["SRC"])
    rippl.believe("agent", "C1", topic="topic", evidence=["SRC"])
    time.sleep(0.01)
    before = datetime.now(UTC)
    time.sleep(0.01)
    rippl.retract("SRC", reason="found false", by="test")
    sent.clear()
    belief = rippl.ask("agent", "topic", as_of=before, known_at=before)
    assert commands(sent) == [b"MULTI", b"MULTI"]
    assert belief is not None and belief.claim_state is State.IN  # not retracted yet then
    assert belief.claim_state_now is State.OUT and belief.retracted_evidence == []
    now = rippl.ask("agent", "topic", as_of=datetime.now(UTC))
    assert now is not None and now.claim_state is State.OUT
