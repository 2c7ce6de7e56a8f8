"""Bad input to every public call: a typed error with a useful message, and nothing written. Hostile
strings (quotes, backslashes, backticks, newlines, Cypher fragments, unicode) are stored verbatim and
never change a query. Both backends."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from helpers_core import fresh, snapshot, version
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rippl_core import (
    AsyncRippl,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    ReviewError,
    Rippl,
    RipplError,
    ToolCall,
)
from rippl_core._runtime.validation import canonical_args

HOSTILE = [
    '"}) MATCH (n) DETACH DELETE n //',
    "'}) MATCH (n) DETACH DELETE n //",
    "x` DETACH DELETE n //",
    "back\\slash\\",
    '\\"escaped quote\\"',
    "CYPHER id=1 MATCH (n) RETURN n",
    "$id {id: $id}",
    "é ü 中文 😀 \u202e",
    "a'b\"c`d",
    "; DROP GRAPH rippl",
]


def base(rippl: Rippl) -> dict[str, str]:
    rippl.add_source("S1", "dashboard")
    rippl.add_claim("C1", "shard 09 is healthy", sources=["S1"])
    rippl.add_claim("C2", "already retracted")
    rippl.retract("C2", reason="wrong", by="x")
    rippl.add_decision("D1", "migrate", premises=["C1"])
    rippl.add_action("A1", "move", decisions=["D1"], tool="migrate", args={"shard": "09"})
    item = rippl.propose_retraction("C1", reason="doubt", by="monitor")
    done = rippl.propose_retraction("S1", reason="doubt", by="monitor")
    rippl.reject(done.id, by="human")
    return {"pending": item.id, "decided": done.id}


Call = Callable[[Rippl, dict[str, str]], Any]
BIG = "x" * 10_001
# (None is not bad: it derives a semantic id from the text)
BAD_IDS = ["", " C9", "C9 ", "x" * 129, "a\nb", "tab\there", "nul\x00", "\u200b", "\u202e", "\ud800", 5,
           b"C9"]

CASES: list[tuple[str, Call, type[Exception]]] = [
    *[(f"add_source id={i!r:.20}", lambda r, _, i=i: r.add_source(i, "title"), InvalidInputError)
      for i in BAD_IDS],
    *[(f"add_claim id={i!r:.20}", lambda r, _, i=i: r.add_claim(i, "text"), InvalidInputError)
      for i in BAD_IDS],
    *[(f"add_decision id={i!r:.20}", lambda r, _, i=i: r.add_decision(i, "t"), InvalidInputError)
      for i in BAD_IDS],
    *[(f"add_action id={i!r:.20}", lambda r, _, i=i: r.add_action(i, "t"), InvalidInputError)
      for i in BAD_IDS],
    *[(f"add_claim text={t!r:.20}", lambda r, _, t=t: r.add_claim("C9", t), InvalidInputError)
      for t in ["", "   ", "\n\t", BIG, None, 5, "nul\x00", "lone \udc80 surrogate"]],
    ("add_source empty uri", lambda r, _: r.add_source("S9", "t", uri=""), InvalidInputError),
    ("add_source uri not str", lambda r, _: r.add_source("S9", "t", uri=5), InvalidInputError),
    ("add_source kind too long", lambda r, _: r.add_source("S9", "t", kind=BIG), InvalidInputError),
    ("add_claim sources str", lambda r, _: r.add_claim("C9", "t", sources="S1"), InvalidInputError),
    ("add_claim source not str", lambda r, _: r.add_claim("C9", "t", sources=[5]), InvalidInputError),
    ("add_claim source missing", lambda r, _: r.add_claim("C9", "t", sources=["S9"]), NotFoundError),
    ("add_claim from action", lambda r, _: r.add_claim("C9", "t", derived_from=["A1"]), InvalidInputError),
    ("add_claim from decision", lambda r, _: r.add_claim("C9", "t", derived_from=["D1"]), InvalidInputError),
    ("add_claim source is action", lambda r, _: r.add_claim("C9", "t", sources=["A1"]), InvalidInputError),
    ("add_decision on source", lambda r, _: r.add_decision("D9", "t", premises=["S1"]), InvalidInputError),
    ("add_decision on action", lambda r, _: r.add_decision("D9", "t", depends_on=["A1"]), InvalidInputError),
    ("add_decision missing", lambda r, _: r.add_decision("D9", "t", premises=["C1", "C9"]), NotFoundError),
    ("add_action on source", lambda r, _: r.add_action("A9", "t", decisions=["S1"]), InvalidInputError),
    ("add_action on claim", lambda r, _: r.add_action("A9", "t", decisions=["C1"]), InvalidInputError),
    ("add_action missing", lambda r, _: r.add_action("A9", "t", triggers=["A8"]), NotFoundError),
    ("add_action tool empty", lambda r, _: r.add_action("A9", "t", tool=""), InvalidInputError),
    ("add_action tool newline", lambda r, _: r.add_action("A9", "t", tool="a\nb"), InvalidInputError),
    ("add_action args list", lambda r, _: r.add_action("A9", "t", tool="x", args=[1]), InvalidInputError),
    ("add_action args nan", lambda r, _: r.add_action("A9", "t", tool="x", args={"v": float("nan")}),
     InvalidInputError),
    ("add_action args object", lambda r, _: r.add_action("A9", "t", tool="x", args={"v": object()}),
     InvalidInputError),
    ("add_action args huge", lambda r, _: r.add_action("A9", "t", tool="x", args={"v": "y" * 70_000}),
     InvalidInputError),
    ("add_action args surrogate", lambda r, _: r.add_action("A9", "t", tool="x", args={"v": "\ud800"}),
     InvalidInputError),
    ("add_claim conflict", lambda r, _: r.add_claim("C1", "something else", sources=["S1"]), ConflictError),
    ("add_decision over a claim id", lambda r, _: r.add_decision("C1", "t"), ConflictError),
    ("justify empty", lambda r, _: r.justify("D1", []), InvalidInputError),
    ("justify str", lambda r, _: r.justify("D1", "C1"), InvalidInputError),
    ("justify self", lambda r, _: r.justify("D1", ["D1"]), InvalidInputError),
    ("justify missing node", lambda r, _: r.justify("D9", ["C1"]), NotFoundError),
    ("justify missing antecedent", lambda r, _: r.justify("D1", ["C9"]), NotFoundError),
    ("justify bad edge", lambda r, _: r.justify("S1", ["C1"]), InvalidInputError),
    ("load not a mapping", lambda r, _: r.load([1, 2]), InvalidInputError),
    ("load unknown section", lambda r, _: r.load({"claimz": []}), InvalidInputError),
    ("load missing reference",
     lambda r, _: r.load({"claims": [{"id": "C9", "text": "t", "sources": ["S9"]}]}), NotFoundError),
    ("load missing file", lambda r, _: r.load("/nonexistent/graph.yaml"), InvalidInputError),
    ("retract missing", lambda r, _: r.retract("C9", reason="r", by="x"), NotFoundError),
    ("retract decision", lambda r, _: r.retract("D1", reason="r", by="x"), InvalidInputError),
    ("retract action", lambda r, _: r.retract("A1", reason="r", by="x"), InvalidInputError),
    ("retract twice", lambda r, _: r.retract("C2", reason="r", by="x"), InvalidInputError),
    ("retract empty reason", lambda r, _: r.retract("C1", reason="", by="x"), InvalidInputError),
    ("retract reason None", lambda r, _: r.retract("C1", reason=None, by="x"), InvalidInputError),
    ("retract empty by", lambda r, _: r.retract("C1", reason="r", by=""), InvalidInputError),
    ("retract blank by", lambda r, _: r.retract("C1", reason="r", by="  "), InvalidInputError),
    ("retract by None", lambda r, _: r.retract("C1", reason="r", by=None), InvalidInputError),
    ("retract naive at", lambda r, _: r.retract("C1", reason="r", by="x", at=datetime(2026, 1, 1)),
     InvalidInputError),
    ("retract naive at str", lambda r, _: r.retract("C1", reason="r", by="x", at="2026-01-01T00:00"),
     InvalidInputError),
    ("retract garbage at", lambda r, _: r.retract("C1", reason="r", by="x", at="yesterday"),
     InvalidInputError),
    ("retract bad key", lambda r, _: r.retract("C1", reason="r", by="x", signing_key=b"short"),
     InvalidInputError),
    ("reinstate not retracted", lambda r, _: r.reinstate("C1", reason="r", by="x"), InvalidInputError),
    ("reinstate missing", lambda r, _: r.reinstate("C9", reason="r", by="x"), NotFoundError),
    ("reinstate empty by", lambda r, _: r.reinstate("C2", reason="r", by=""), InvalidInputError),
    ("get empty", lambda r, _: r.get(""), InvalidInputError),
    ("get None", lambda r, _: r.get(None), InvalidInputError),
    ("get missing", lambda r, _: r.get("C9"), NotFoundError),
    ("blast_radius missing", lambda r, _: r.blast_radius("C9"), NotFoundError),
    ("premises bad depth", lambda r, _: r.premises("A1", max_depth=0), InvalidInputError),
    ("check None", lambda r, _: r.check(None), InvalidInputError),
    ("check int", lambda r, _: r.check(5), InvalidInputError),
    ("check empty", lambda r, _: r.check(""), InvalidInputError),
    ("check bad policy", lambda r, _: r.check("A1", at_risk="sometimes"), InvalidInputError),
    ("check bad unknown", lambda r, _: r.check("A1", unknown="maybe"), InvalidInputError),
    ("check bad on_error", lambda r, _: r.check("A1", on_error="shrug"), InvalidInputError),
    ("check policy not a Policy", lambda r, _: r.check("A1", policy="block"), InvalidInputError),
    ("check empty tool", lambda r, _: r.check(ToolCall(name="", args={})), InvalidInputError),
    ("check nan args", lambda r, _: r.check(ToolCall(name="migrate", args={"v": float("inf")})),
     InvalidInputError),
    ("guard None", lambda r, _: r.guard(None), InvalidInputError),
    ("guard bad policy", lambda r, _: r.guard("A1", at_risk="sometimes"), InvalidInputError),
    ("propose missing", lambda r, _: r.propose_retraction("C9", reason="r", by="x"), NotFoundError),
    ("propose decision", lambda r, _: r.propose_retraction("D1", reason="r", by="x"), InvalidInputError),
    ("propose retracted", lambda r, _: r.propose_retraction("C2", reason="r", by="x"), ReviewError),
    ("propose empty by", lambda r, _: r.propose_retraction("C1", reason="r", by=""), InvalidInputError),
    ("propose empty reason", lambda r, _: r.propose_retraction("C1", reason=" ", by="x"), InvalidInputError),
    ("propose evidence int", lambda r, _: r.propose_retraction("C1", reason="r", by="x", evidence=5),
     InvalidInputError),
    ("approve missing", lambda r, _: r.approve("REV-nope", by="human"), NotFoundError),
    ("approve empty id", lambda r, _: r.approve("", by="human"), InvalidInputError),
    ("approve empty by", lambda r, ids: r.approve(ids["pending"], by=""), InvalidInputError),
    ("approve by None", lambda r, ids: r.approve(ids["pending"], by=None), InvalidInputError),
    ("approve note int", lambda r, ids: r.approve(ids["pending"], by="h", note=5), InvalidInputError),
    ("approve bad key", lambda r, ids: r.approve(ids["pending"], by="h", signing_key="k"), InvalidInputError),
    ("approve decided", lambda r, ids: r.approve(ids["decided"], by="human"), ReviewError),
    ("reject decided", lambda r, ids: r.reject(ids["decided"], by="human"), ReviewError),
    ("reject missing", lambda r, _: r.reject("REV-nope", by="human"), NotFoundError),
    ("reject empty by", lambda r, ids: r.reject(ids["pending"], by=""), InvalidInputError),
    ("review missing", lambda r, _: r.review("REV-nope"), NotFoundError),
    ("review empty", lambda r, _: r.review(""), InvalidInputError),
    ("reviews bad status", lambda r, _: r.reviews("open"), InvalidInputError),
    ("verify_receipts keys list", lambda r, _: r.verify_receipts(public_keys=["alice"]), InvalidInputError),
    ("verify_receipts keys str", lambda r, _: r.verify_receipts(public_keys="alice"), InvalidInputError),
]


@pytest.fixture(scope="module", params=["embedded", "server"])
def shared(request: pytest.FixtureRequest) -> Iterator[tuple[Rippl, dict[str, str]]]:
    """One graph per backend for the whole table: a refused call must leave it as it was."""
    backend = ({"path": request.getfixturevalue("embedded_db")} if request.param == "embedded"
               else {"url": request.getfixturevalue("falkordb_server").url})
    with fresh(backend) as handle:
        yield handle, base(handle)


@pytest.mark.parametrize("call, error", [(c, e) for _, c, e in CASES], ids=[n for n, _, _ in CASES])
def test_bad_input_raises_a_typed_error_and_writes_nothing(shared: tuple[Rippl, dict[str, str]],
                                                           call: Call, error: type[Exception]) -> None:
    rippl, ids = shared
    before, stamp = snapshot(rippl), version(rippl)
    with pytest.raises(error) as raised:
        call(rippl, ids)
    assert isinstance(raised.value, RipplError)
    assert len(str(raised.value)) > 10  # says what is wrong
    assert snapshot(rippl) == before and version(rippl) == stamp


@pytest.mark.parametrize("kwargs", [{"graph": ""}, {"graph": "a\nb"}, {"graph": "x" * 129},
                                    {"url": "http://localhost:6379"},
                                    {"url": "falkordb://127.0.0.1:1", "path": "/tmp/x.db"}])
def test_open_refuses_bad_options(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        Rippl.open(**kwargs)


@pytest.mark.asyncio(loop_scope="session")
async def test_async_bad_input_is_refused_the_same_way(rippl: Rippl, arippl: AsyncRippl) -> None:
    ids = base(rippl)
    before = snapshot(rippl)
    with pytest.raises(NotFoundError):
        await arippl.add_claim("C9", "t", sources=["S9"])
    with pytest.raises(InvalidInputError):
        await arippl.add_action("A9", "t", decisions=["S1"])
    with pytest.raises(InvalidInputError):
        await arippl.retract("C1", reason="r", by="")
    with pytest.raises(ReviewError):
        await arippl.approve(ids["decided"], by="human")
    with pytest.raises(InvalidInputError):
        await arippl.check(None)  # type: ignore[arg-type]
    with pytest.raises(ConflictError):
        await arippl.add_claim("C1", "different", sources=["S1"])
    assert snapshot(rippl) == before


# ---------------------------------------------------------------------------- hostile strings

ids_ = st.one_of(st.sampled_from([h for h in HOSTILE if h.isprintable()]),
                 st.text(min_size=1, max_size=128).filter(lambda s: s.isprintable() and s == s.strip()))
texts = st.one_of(st.sampled_from(HOSTILE),
                  st.text(min_size=1, max_size=400).filter(lambda s: s.strip() and "\x00" not in s))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(node_id=ids_, text=texts, reason=texts, actor=ids_, key=texts)
@example(node_id=HOSTILE[0], text=HOSTILE[1], reason=HOSTILE[3], actor=HOSTILE[2], key=HOSTILE[4])
@example(node_id=HOSTILE[0], text=HOSTILE[1], reason=HOSTILE[3], actor=HOSTILE[2], key="n")
def test_hostile_strings_round_trip_verbatim(backend: dict[str, object], node_id: str, text: str,
                                             reason: str, actor: str, key: str) -> None:
    with fresh(backend) as handle:
        handle.add_claim("canary", "must survive")
        claim = handle.add_claim(node_id, text)
        assert (claim.id, claim.text) == (node_id, text)
        decision_id = "D-" + hashlib.sha256(node_id.encode()).hexdigest()[:12]
        handle.add_decision(decision_id, text, premises=[node_id])
        action = handle.add_action("A-" + decision_id, text, decisions=[decision_id], tool=actor,
                                   args={key: [text, reason], "n": 1})
        # arguments are canonical (NFC, so a key spelt with a compatibility character is its
        # canonical equivalent); everything else round-trips verbatim
        assert action.args == json.loads(canonical_args({key: [text, reason], "n": 1}) or "{}")
        assert action.tool == actor
        assert handle.get(node_id).text == text
        assert handle.add_claim(node_id, text) == handle.get(node_id)  # same content: a no-op
        assert [r.id for r in handle.blast_radius(node_id)] == [decision_id, action.id]
        # the same arguments in the other key order (`key` may itself be "n": one key then)
        call = ToolCall(name=actor, args=dict(reversed({key: [text, reason], "n": 1}.items())))
        assert handle.check(call).target == action.id
        handle.retract(node_id, reason=reason, by=actor)
        stored = handle.get(node_id)
        assert stored.reason == reason and stored.retracted
        verdict = handle.check(call)
        assert not verdict.allowed and verdict.blockers[0].premise == node_id
        assert verdict.blockers[0].reason == reason
        receipt = handle.receipts()[-1]
        assert receipt.actor == actor and receipt.claim == node_id and receipt.body["reason"] == reason
        assert handle.verify_receipts().ok
        item = handle.propose_retraction("canary", reason=reason, by=actor, evidence=text)
        assert handle.review(item.id).evidence == text and handle.review(item.id).proposed_by == actor
        assert set(snapshot(handle).nodes) == {"canary", node_id, decision_id, action.id}


# ------------------------------------------------------------- every collection and mapping taken

# A parameter that takes several values refuses a scalar, a single string, bytes or a mapping
# (iterating them would fail with a TypeError or silently take characters or keys).
class Opaque:
    """An arbitrary object (its repr is stable, so test ids are the same in every process)."""

    def __repr__(self) -> str:
        return "<an object>"


NOT_A_COLLECTION = [5, 3.5, "C1", b"C1", {"C1": 1}, Opaque()]
COLLECTIONS: dict[str, Call] = {
    "Rippl.add_claim.sources": lambda r, v: r.add_claim("C9", "t", sources=v),
    "Rippl.add_claim.derived_from": lambda r, v: r.add_claim("C9", "t", derived_from=v),
    "Rippl.add_decision.premises": lambda r, v: r.add_decision("D9", "t", premises=v),
    "Rippl.add_decision.depends_on": lambda r, v: r.add_decision("D9", "t", depends_on=v),
    "Rippl.add_action.decisions": lambda r, v: r.add_action("A9", "t", decisions=v),
    "Rippl.add_action.triggers": lambda r, v: r.add_action("A9", "t", triggers=v),
    "Rippl.justify.antecedents": lambda r, v: r.justify("D1", v),
    "Rippl.believe.evidence": lambda r, v: r.believe("ag", "C1", topic="t", evidence=v),
    "Rippl.revise.evidence": lambda r, v: r.revise("ag", "t", "C1", valid_from="2026-01-01T00:00:00Z",
                                                   evidence=v),
    "Rippl.what_if.without": lambda r, v: r.what_if("ag", "t", without=v),
    "Rippl.what_if_retracted.claim_ids": lambda r, v: r.what_if_retracted(v),
    "Rippl.nodes.ids": lambda r, v: r.nodes(v),
    "Rippl.ingest.documents": lambda r, v: r.ingest(v),
    "RecordStore.save.records": lambda r, v: r.records("s").save(v),
    "RecordStore.find.categories": lambda r, v: r.records("s").find(categories=v),
    "RecordStore.find.ids": lambda r, v: r.records("s").find(ids=v),
    "RecordStore.search.embedding": lambda r, v: r.records("s").search(v),
    "RecordStore.search.categories": lambda r, v: r.records("s").search([0.1], categories=v),
    "RecordStore.delete.categories": lambda r, v: r.records("s").delete(categories=v),
    "RecordStore.delete.ids": lambda r, v: r.records("s").delete(ids=v),
    "RecordStore.touch.ids": lambda r, v: r.records("s").touch(v),
}
# A parameter that takes a JSON object refuses non-string keys at any depth (never {1: 2} stored
# as {"1": 2}) and anything that is not a mapping.
NOT_A_JSON_OBJECT = [{1: 2}, {"a": {1: 2}}, {"a": [{None: 1}]}, {(1,): 2}, {True: 1}, [("a", 1)],
                     "a=1"]
MAPPINGS: dict[str, Call] = {
    "Rippl.add_action.args": lambda r, v: r.add_action("A9", "t", tool="x", args=v),
    "Rippl.load.spec": lambda r, v: r.load({"actions": [{"id": "A9", "title": "t", "tool": "x",
                                                         "args": v}]}),
    "Rippl.verify_receipts.public_keys": lambda r, v: r.verify_receipts(public_keys=v),
    "Rippl.propose_retraction_where.args": lambda r, v: r.propose_retraction_where(
        args=v, reason="r", by="b"),
    "RecordStore.find.metadata_filter": lambda r, v: r.records("s").find(metadata_filter=v),
    "RecordStore.search.metadata_filter": lambda r, v: r.records("s").search(
        [0.1], metadata_filter=v),
    "RecordStore.delete.metadata_filter": lambda r, v: r.records("s").delete(metadata_filter=v),
}


# every collection parameter given a non-collection, every mapping parameter non-string keys
REFUSED = [pytest.param(calls[name], value, id=f"{name}-{value!r}")
           for calls, values in ((COLLECTIONS, NOT_A_COLLECTION), (MAPPINGS, NOT_A_JSON_OBJECT))
           for name in calls for value in values]


@pytest.mark.parametrize(("call", "value"), REFUSED)
def test_every_collection_and_mapping_parameter_refuses_what_it_is_not(
        shared: tuple[Rippl, dict[str, str]], call: Call,
        value: object) -> None:
    rippl, _ = shared
    before, stamp = snapshot(rippl), version(rippl)
    with pytest.raises(InvalidInputError):
        call(rippl, value)
    assert snapshot(rippl) == before and version(rippl) == stamp


@pytest.mark.parametrize("keys", [{"alice": 5}, {"alice": "zz"}, {"alice": "ab" * 31},
                                  {1: "ab" * 32}])
def test_trusted_keys_are_checked(shared: tuple[Rippl, dict[str, str]], keys: object) -> None:
    with pytest.raises(InvalidInputError):
        shared[0].verify_receipts(public_keys=keys)  # type: ignore[arg-type]


def test_the_tables_cover_every_collection_and_mapping_parameter() -> None:
    """A new public parameter taking a list or a dict cannot skip these checks unnoticed."""
    import inspect

    from rippl_core.records.store import RecordStore

    taken = set()
    for owner in (Rippl, RecordStore):
        for name, method in inspect.getmembers(owner, inspect.isfunction):
            if name.startswith("_"):
                continue
            for param in inspect.signature(method).parameters.values():
                annotation = str(param.annotation)
                if any(t in annotation for t in ("Sequence[", "Mapping[", "Iterable[")):
                    taken.add(f"{owner.__name__}.{name}.{param.name}")
    assert taken <= set(COLLECTIONS) | set(MAPPINGS), sorted(taken - set(COLLECTIONS) - set(MAPPINGS))
