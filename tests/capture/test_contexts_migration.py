"""Schema 15 regroups the runs captured before turns shared their contexts: a graph written by
the code of schema 14 (`fixtures/schema14.json`, made by `fixtures/make_schema14.py` at commit
4ba2519) is opened, and every answer that code gave about it is given again, while each captured
decision now rests on one context and a conversation's turns share what they had in common."""

from __future__ import annotations

import importlib.util
import itertools
import json
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers_core import fresh, snapshot

from rippl_core import Rippl
from rippl_core._runtime.wire import Query
from rippl_core.vocabulary import CARRIES, is_context

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "schema14.json").read_text())


def _write(rippl: Rippl, graph: Mapping[str, Any]) -> None:
    """Store the fixture's nodes and edges as they were, with no Rippl logic in between."""
    by_labels: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for internal, labels, props in graph["nodes"]:
        by_labels[":".join(labels)].append({"i": internal, "props": props})
    for labels, rows in by_labels.items():
        rippl._driver.run(lambda labels=labels, rows=rows: (yield Query(
            f"UNWIND $rows AS r CREATE (n:{labels}) SET n = r.props, n._fx = r.i",
            {"rows": rows})), write=True)
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for a, kind, props, b in graph["edges"]:
        by_type[kind].append({"a": a, "b": b, "props": props})
    for kind, rows in by_type.items():
        rippl._driver.run(lambda kind=kind, rows=rows: (yield Query(
            f"UNWIND $rows AS r MATCH (a {{_fx: r.a}}) MATCH (b {{_fx: r.b}}) "
            f"CREATE (a)-[e:{kind}]->(b) SET e = r.props", {"rows": rows})), write=True)
    rippl._driver.run(lambda: (yield Query("MATCH (n) SET n._fx = NULL")), write=True)


@pytest.fixture
def migrated(backend: Mapping[str, Any]) -> Iterator[tuple[Rippl, Rippl]]:
    """(the handle that wrote the schema-14 graph, a handle that opened it afterwards)."""
    with fresh(backend) as old:
        _write(old, FIXTURE["graph"])
        old.redis.set(old.keys.schema, FIXTURE["schema"])
        again = Rippl.open(graph=old.graph, **backend)
        try:
            yield old, again
        finally:
            again.close()


def _answers(rippl: Rippl) -> dict[str, Any]:
    """The questions the fixture's maker asked of the code of schema 14, asked of today's."""
    spec = importlib.util.spec_from_file_location("make_schema14", Path(__file__).parent
                                                  / "fixtures" / "make_schema14.py")
    assert spec is not None and spec.loader is not None
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    answers: dict[str, Any] = maker.answers(rippl, FIXTURE["story"])
    return answers


def test_the_fixture_is_of_schema_fourteen() -> None:
    decisions = {props["id"] for _, labels, props in FIXTURE["graph"]["nodes"]
                 if "Decision" in labels}
    assert FIXTURE["schema"] == "14" and not any(is_context(d) for d in decisions)
    assert not any(kind == CARRIES for _, kind, _, _ in FIXTURE["graph"]["edges"])


def test_every_answer_is_what_schema_fourteen_gave(migrated: tuple[Rippl, Rippl]) -> None:
    _, rippl = migrated
    got, expected = _answers(rippl), FIXTURE["answers"]
    assert got["actions"] == expected["actions"]
    assert got["blast_radius"] == expected["blast_radius"]
    assert got["what_if"] == expected["what_if"]
    assert got["stats"]["nodes"] == expected["stats"]["nodes"]
    assert got["stats"]["statuses"] == expected["stats"]["statuses"]


def test_each_captured_decision_rests_on_one_context_and_turns_share_theirs(
        migrated: tuple[Rippl, Rippl]) -> None:
    _, rippl = migrated
    snap = snapshot(rippl)
    decisions = [n for n, p in snap.nodes.items() if p["kind"] == "Decision" and not is_context(n)
                 and p.get("run")]
    assert decisions
    into: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for a, rel, b, _ in snap.edges:
        into[b].append((a, rel))
    for d in decisions:
        assert into[d] == [(f"CTX-{d}", CARRIES)]
    # the lead's conversation: each turn's context extends the one before it, in one chain
    first = f"CTX-{decisions_of(snap, 'lead')[0]}"
    lead = sorted((p["seq"], n) for n, p in snap.nodes.items()
                  if is_context(n) and p["chain"] == first)
    assert [seq for seq, _ in lead] == list(range(1, len(lead) + 1)) and len(lead) >= 5
    for (_, before), (_, after) in itertools.pairwise(lead):
        assert (before, CARRIES) in into[after]
    # stored once: what each context adds, against one edge per claim per turn before
    props = {internal: p for internal, _, p in FIXTURE["graph"]["nodes"]}
    direct = sum(1 for _, rel, _, b in FIXTURE["graph"]["edges"]
                 if rel == "SUPPORTS" and props[b].get("kind") == "Decision" and props[b].get("run"))
    shared = sum(1 for a, rel, b, _ in snap.edges if rel == CARRIES and is_context(b))
    assert shared < direct


def decisions_of(snap: Any, run: str) -> list[str]:
    """The run's captured decisions in the order it recorded them."""
    return [n for _, n in sorted((p["created_at"], n) for n, p in snap.nodes.items()
                                 if p["kind"] == "Decision" and not is_context(n)
                                 and p.get("run") == run)]


def test_opening_it_again_changes_nothing(migrated: tuple[Rippl, Rippl],
                                          backend: Mapping[str, Any]) -> None:
    _, rippl = migrated
    before = snapshot(rippl)
    rippl.redis.set(rippl.keys.schema, "14")
    with Rippl.open(graph=rippl.graph, **backend) as third:
        assert snapshot(third).nodes == before.nodes and snapshot(third).edges == before.edges


def test_a_migrated_conversation_goes_on_from_its_last_context(
        migrated: tuple[Rippl, Rippl]) -> None:
    from rippl_core import ToolCall
    _, rippl = migrated
    run = rippl.run("lead")
    read = ToolCall(name="get_shard_health", args={"shard": "07"}, id="c20")
    [v] = run.decide("t20", [read], context=["c10"])
    snap = snapshot(rippl)
    d = rippl.get(v.target).justifications[0][0]
    [base] = [a for a, rel, b, _ in snap.edges if b == f"CTX-{d}" and is_context(a)]
    assert base == f"CTX-{decisions_of(snap, 'lead')[-2]}"  # the run's last turn before it


def test_a_context_keeps_its_decisions_blockers_less_the_decision(
        migrated: tuple[Rippl, Rippl]) -> None:
    """What a later wave composes trails from (`causal.blockers`): the trails to the context."""
    _, rippl = migrated
    snap = snapshot(rippl)
    blocked = [n for n, p in snap.nodes.items() if p.get("blockers") and p["kind"] == "Decision"
               and not is_context(n) and p.get("run")]
    assert blocked
    for d in blocked:
        stored = json.loads(snap.nodes[d]["blockers"])
        kept = json.loads(snap.nodes[f"CTX-{d}"]["blockers"])
        assert [item[:-1] for item in kept] == [item[:-1] for item in stored]
        assert [item[-1] + [d] for item in kept] == [item[-1] for item in stored]


def test_two_processes_upgrading_at_once_regroup_a_run_once(backend: Mapping[str, Any]) -> None:
    from rippl_core.capture import chains
    from rippl_core.capture import cypher as capture_cypher
    with fresh(backend) as rippl:
        _write(rippl, FIXTURE["graph"])
        rows = rippl._driver.query(capture_cypher.turns_without_contexts("lead"))
        turns = [chains.Turn(d, state, at, frozenset(claims), blockers)
                 for d, state, at, claims, blockers in rows]
        commit = chains.regroup("lead", chains.chain(turns))  # both read the run before either wrote
        rippl._driver.run(lambda: (yield commit))
        once = snapshot(rippl)
        rippl._driver.run(lambda: (yield commit))
        twice = snapshot(rippl)
        assert twice.nodes == once.nodes and twice.edges == once.edges
        assert twice.other_nodes == once.other_nodes  # the status history copied once
