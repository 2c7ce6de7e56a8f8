"""Record stores (rippl_core.records): records held as claims, exact similarity search inside
FalkorDB, versions and as-of reads, sync and async, against embedded FalkorDB and a server."""

from __future__ import annotations

import math
import time
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import AsyncRippl, ConflictError, InvalidInputError, NotFoundError, Rippl, State
from rippl_core.records.ops import Record


def later() -> datetime:
    time.sleep(0.005)
    moment = datetime.now(UTC)
    time.sleep(0.005)
    return moment


def rec(rid: str, content: str, vector: list[float], **fields: object) -> Record:
    return Record(id=rid, content=content, embedding=vector, **fields)  # type: ignore[arg-type]


def test_save_get_and_versions(rippl: Rippl) -> None:
    store = rippl.records("notes")
    [saved] = store.save([rec("r1", "Shard 09 is healthy", [1, 0, 0], scope="ops/db/",
                              categories=["db", "db", "health"], metadata={"k": [1, 2]},
                              source="grafana")])
    assert (saved.version, saved.scope, saved.categories) == (1, "/ops/db", ["db", "health"])
    assert saved.claim_state is State.IN and saved.claim_status == "Verified"
    assert store.save([saved]) == [saved]  # unchanged: no new version
    t = later()
    [second] = store.save([saved.model_copy(update={"content": "Shard 09 is degraded"})])
    assert second.version == 2 and second.claim != saved.claim
    assert store.get("r1").content == "Shard 09 is degraded"  # type: ignore[union-attr]
    old = store.get("r1", as_of=t)
    assert old is not None and old.version == 1 and old.valid_to is not None
    assert store.get("nope") is None


def test_retracted_claims_are_not_searched(rippl: Rippl) -> None:
    store = rippl.records("s")
    a, _b = store.save([rec("a", "alpha", [1, 0]), rec("b", "beta", [1, 0.1])])
    t = later()
    rippl.retract(a.claim, reason="wrong", by="qa")  # type: ignore[arg-type]
    assert [r.id for r, _ in store.search([1, 0])] == ["b"]
    then = store.search([1, 0], as_of=t)
    assert [(r.id, r.claim_state, r.claim_state_now) for r, _ in then] == [
        ("a", State.IN, State.OUT), ("b", State.IN, State.IN)]
    assert {r.id for r in store.find()} == {"a", "b"}  # listing keeps them, with their status
    assert store.get("a").claim_status == "Retracted"  # type: ignore[union-attr]


def test_pending_retraction_is_searchable_unless_excluded(rippl: Rippl) -> None:
    store = rippl.records("s")
    [a] = store.save([rec("a", "alpha", [1, 0])])
    rippl.propose_retraction(a.claim, reason="doubt", by="qa")  # type: ignore[arg-type]
    [(found, _)] = store.search([1, 0])
    assert found.claim_status == "Proposed Retraction"
    assert store.search([1, 0], include_at_risk=False) == []


def test_linked_claims_and_wrong_kinds(incident: Rippl) -> None:
    store = incident.records("s")
    [linked] = store.save([Record(id="x", content="the dashboard said so", claim="CLM-001")])
    assert linked.claim == "CLM-001"
    assert incident.get("CLM-001").justifications == [["SRC-001"]]  # its support untouched
    with pytest.raises(NotFoundError):
        store.save([Record(id="y", content="z", claim="CLM-404")])
    with pytest.raises(ConflictError):
        store.save([Record(id="y", content="z", claim="DEC-001")])
    assert [r.id for r in store.find()] == ["x"]


@pytest.mark.parametrize("bad", [
    {"scope": 7}, {"importance": 1.5}, {"importance": math.nan}, {"embedding": [0.0, 0.0]},
    {"embedding": [1.0, math.inf]}, {"metadata": {"k": object()}}, {"categories": "db"},
    {"content": "   "}, {"id": ""}, {"created_at": datetime(2026, 1, 1)},
])
def test_bad_records_are_refused_and_nothing_is_written(rippl: Rippl, bad: dict[str, object]) -> None:
    store = rippl.records("s")
    fields = {"id": "ok", "content": "fine", "embedding": [1.0, 0.0], **bad}
    with pytest.raises(InvalidInputError):
        store.save([rec("good", "good", [0.0, 1.0]), Record.model_construct(**fields)])
    assert store.find() == []


def test_duplicate_ids_and_dimension_mismatch(rippl: Rippl) -> None:
    store = rippl.records("s")
    with pytest.raises(InvalidInputError, match="twice"):
        store.save([rec("a", "x", [1, 0]), rec("a", "y", [0, 1])])
    store.save([rec("a", "x", [1, 0])])
    with pytest.raises(InvalidInputError, match="2-dimensional"):
        store.search([1, 0, 0])
    with pytest.raises(InvalidInputError, match="time zone"):
        store.find(as_of=datetime(2026, 1, 1))


def test_delete_purge_and_touch(rippl: Rippl) -> None:
    store = rippl.records("s")
    store.save([rec("a", "x", [1, 0], scope="/p"), rec("b", "y", [0, 1], scope="/q",
                                                       metadata={"team": "red"})])
    t = later()
    assert store.delete(metadata_filter={"team": "red"}) == 1
    assert store.get("b") is None and store.get("b", as_of=t) is not None
    assert store.delete(scope_prefix="/p", purge=True) == 1
    assert store.get("a", as_of=t) is None  # erased with its history
    assert store.delete() == 0 and store.touch(["a"]) == 0


def test_stores_are_separate(rippl: Rippl) -> None:
    one, two = rippl.records("one"), rippl.records("two")
    one.save([rec("a", "same text", [1, 0])])
    two.save([rec("a", "same text", [0, 1])])
    assert one.get("a").claim == two.get("a").claim  # type: ignore[union-attr]
    assert one.get("a").embedding == [1.0, 0.0]  # type: ignore[union-attr]
    assert one.delete() == 1 and len(two.find()) == 1


@pytest.mark.asyncio(loop_scope="session")
async def test_async_twin(rippl: Rippl, arippl: AsyncRippl) -> None:
    store = arippl.records("async")
    [saved] = await store.save([rec("a", "alpha", [1, 0], scope="/x")])
    assert (await store.get("a")) == saved
    assert [r.id for r, _ in await store.search([1, 0])] == ["a"]
    assert [r.id for r in await store.find(scope_prefix="/x")] == ["a"]
    assert (await store.summary("/")).children == ["/x"]
    assert await store.touch(["a"]) == 1
    assert await store.delete() == 1
    assert rippl.records("async").find() == []


# ----------------------------------------------------------------------------- properties

SCOPES = ["/", "/a", "/a/b", "/a/bc", "/ab", "/c/d"]
CATS = ["x", "y", "z"]
vectors = st.lists(st.integers(-3, 3), min_size=3, max_size=3).filter(any)
records = st.lists(st.tuples(st.sampled_from(SCOPES), st.lists(st.sampled_from(CATS), max_size=2,
                                                                unique=True), vectors,
                             st.booleans()), min_size=1, max_size=12)


def cosine(a: list[int], b: list[int]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def in_scope(scope: str, prefix: str | None) -> bool:
    return prefix in (None, "/") or scope == prefix or scope.startswith(f"{prefix}/")


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=records, query=vectors, prefix=st.sampled_from([None, *SCOPES]),
       cats=st.none() | st.lists(st.sampled_from(CATS), min_size=1, max_size=2, unique=True),
       limit=st.integers(1, 6))
def test_search_is_the_exact_top_k_of_what_passes_the_filters(
        rippl: Rippl, rows: list[tuple[str, list[str], list[int], bool]], query: list[int],
        prefix: str | None, cats: list[str] | None, limit: int) -> None:
    store = rippl.records(f"p-{uuid.uuid4().hex[:8]}")
    saved = store.save([rec(f"r{i}", f"{store.store} statement {i}", v, scope=s, categories=c)
                        for i, (s, c, v, _) in enumerate(rows)])
    for record, (_, _, _, retract) in zip(saved, rows, strict=True):
        if retract:
            rippl.retract(record.claim, reason="false", by="qa")  # type: ignore[arg-type]
    model = {f"r{i}": cosine(v, query) for i, (s, c, v, retract) in enumerate(rows)
             if not retract and in_scope(s, prefix) and (cats is None or set(c) & set(cats))
             and cosine(v, query) >= 0.0}
    found = store.search(query, scope_prefix=prefix, categories=cats, limit=limit)
    scores = [score for _, score in found]
    assert len(found) == min(limit, len(model))
    assert scores == sorted(scores, reverse=True)
    for record, score in found:
        assert score == pytest.approx(model[record.id], abs=1e-5)
    cut = min(scores) if scores else 1.0
    missing = [rid for rid in model if rid not in {r.id for r, _ in found}]
    assert all(model[rid] <= cut + 1e-5 for rid in missing)  # nothing better was left out

    summary = store.summary(prefix or "/")
    inside = [(s, c) for s, c, _, _ in rows if in_scope(s, prefix)]
    assert summary.count == len(inside)
    base = "" if prefix in (None, "/") else prefix
    assert summary.children == sorted({f"{base}/{s[len(base) + 1:].split('/')[0]}"
                                       for s, _ in inside if s.startswith(f"{base}/")
                                       and s[len(base) + 1:]})
    counts: dict[str, int] = {}
    for _, c in inside:
        for cat in c:
            counts[cat] = counts.get(cat, 0) + 1
    assert summary.categories == counts
