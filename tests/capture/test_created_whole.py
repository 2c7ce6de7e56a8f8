"""A node the common turn's queries create gets every property in its CREATE: FalkorDB's SET on a
node the same query created costs time that grows with the graph (docs/design.md, "Capture at
scale"), where the same properties given inline do not."""

from __future__ import annotations

import re

import pytest

from rippl_core.capture import cypher

_CREATED = re.compile(r"CREATE \((\w+):")


def set_after_create(text: str) -> list[str]:
    """The nodes a query creates and then SETs (a MERGE's ON CREATE SET among them)."""
    created = set(_CREATED.findall(text))
    found = sorted(n for n in created if re.search(rf"(?:SET|,) {n}(?:\.\w+ =| \+=)", text))
    return found + (["ON CREATE SET"] if "ON CREATE SET" in text else [])


MESSAGE = [{"oid": "o", "ref": "r", "key": "k"}]
RESULT = {"status": "ok", "digest": "d", "source": {"id": "S", "text": "t"},
          "claim": {"id": "C", "text": "t"}}
OBSERVATION = {"id": "O", "run": "r", "ref": "h1", "key": "k", "kind": "tool_result"}
READ = {"key": "k", "tool": "t", "until": 1, "fresh_for": 1, "supersedes": True}
RUN = {"id": "r", "agent": "a", "framework": None, "scope": None,
       "source": {"id": "S0", "text": "t"}, "claim": {"id": "C0", "text": "t"}}


def turns() -> list[tuple[str, str]]:
    """Every query of the common turn: the smaller decide (each variant) and the executions."""
    made = []
    for root in (False, True):
        for refs in ([], MESSAGE):
            for inputs in ([], MESSAGE):
                for base in ((None, "CTX-b") if root else (None,)):
                    made.append((f"decide_own root={root} refs={bool(refs)} inputs={bool(inputs)} "
                                 f"base={base}", cypher.decide_own(
                                     RUN, {"id": "D", "text": "t"}, refs,
                                     [{"id": "A", "text": "t"}], 0, root=root, inputs=inputs,
                                     base=base).text))
    made.append(("executed_plain", cypher.executed_plain("r", "A", RESULT, OBSERVATION, 0, None).text))
    # (less the hand-over, another run's text handed in: not the common turn, and still merged)
    handed = cypher._handed("o, c, unlinked, shifts", "foreign")
    for read in (None, READ):
        text = cypher.executed("r", "A", RESULT, OBSERVATION, 0, None, read).text
        assert handed in text
        made.append((f"executed read={read is not None}", text.replace(handed, "")))
    return made


@pytest.mark.parametrize(("name", "text"), turns(), ids=[name for name, _ in turns()])
def test_the_common_turn_creates_its_nodes_whole(name: str, text: str) -> None:
    assert set_after_create(text) == []


def test_the_check_finds_a_set_after_a_create() -> None:
    """The check itself: each form of the SET it exists to keep out is found."""
    assert set_after_create("CREATE (d:Node:Decision) SET d += $decision") == ["d"]
    assert set_after_create("CREATE (k:Node:Context {id: 1}) SET run.context = 1, k.seq = 2") == ["k"]
    assert set_after_create("MERGE (o:Observation {id: $id}) ON CREATE SET o.at = 1") == [
        "ON CREATE SET"]
    assert set_after_create("CREATE (k:Node:Context {id: 1}) SET run.context = 1") == []
