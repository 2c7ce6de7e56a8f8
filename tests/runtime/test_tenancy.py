"""Tenancy: graphs in one database never see each other's nodes, reviews, receipts or events, whatever
ids (and whatever graph names) they share. Both backends."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers_core import fresh, snapshot
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rippl_core import AsyncRippl, DatabaseError, NotFoundError, Rippl, State
from rippl_core.adapters import Commit, Op, Query, Schema, StateGraph
from rippl_core.cli import app
from rippl_core.testing import drop_graph

pytestmark = pytest.mark.on_cluster  # also on a 3-shard cluster, in the `cluster` step

INCIDENT = Path(__file__).parents[2] / "examples" / "incident.yaml"


def test_same_ids_in_two_graphs_stay_apart(open_rippl: Callable[..., Rippl]) -> None:
    a, b = open_rippl(), open_rippl()
    a.load(INCIDENT)
    b.load(INCIDENT)
    b.add_claim("ONLY-B", "exists in b alone")
    before_b = snapshot(b)
    item = a.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    a.approve(item.id, by="alice")
    a.retract("SRC-002", reason="stale", by="telemetry")
    a.add_claim("CLM-001-BIS", "a's own claim", sources=["SRC-001"])
    assert snapshot(b) == before_b
    assert b.check("ACT-001").allowed and not a.check("ACT-001").allowed
    assert b.reviews(None) == [] and b.receipts() == [] and b.verify_receipts().count == 0
    assert [r.seq for r in a.receipts()] == [1, 2]
    with pytest.raises(NotFoundError):
        a.get("ONLY-B")
    with pytest.raises(NotFoundError):
        b.get("CLM-001-BIS")
    with pytest.raises(NotFoundError):
        b.review(item.id)
    assert {r.id for r in a.blast_radius("SRC-001")} == \
        {r.id for r in b.blast_radius("SRC-001")} | {"CLM-001-BIS"}
    assert b.stats().nodes["Claim"] == a.stats().nodes["Claim"]  # 22 + one each
    b.propose_retraction("CLM-001", reason="b's own review", by="monitor")
    assert [r.claim for r in b.reviews()] == ["CLM-001"] and a.reviews() == []
    b.reject(b.reviews()[0].id, by="bob")
    assert [r.seq for r in b.receipts()] == [1] and a.verify_receipts().ok and b.verify_receipts().ok


def test_deleting_one_graph_leaves_the_other(open_rippl: Callable[..., Rippl]) -> None:
    a, b = open_rippl(), open_rippl()
    for handle in (a, b):
        handle.add_claim("C", "shared id")
        handle.retract("C", reason="r", by="x")
    before = snapshot(b)
    a.drop()
    assert snapshot(a).nodes == {} and a.receipts() == []
    assert snapshot(b) == before and b.verify_receipts().ok
    assert b.redis.get(b.keys.version) is not None


@pytest.mark.parametrize("names", [("t*", "t1"), ("t?", "tx"), ("t[ab]", "ta"), ("t\\", "t\\\\")])
def test_graph_names_are_data_not_patterns(backend: dict[str, object], names: tuple[str, str]) -> None:
    suffix = f"-{abs(hash(names)) % 10**8}"
    with Rippl.open(graph=names[0] + suffix, **backend) as odd, \
            Rippl.open(graph=names[1] + suffix, **backend) as plain:
        try:
            odd.add_claim("C", "in the odd graph")
            plain.add_claim("C", "in the plain graph")
            plain.retract("C", reason="r", by="x")
            odd.drop()
            assert plain.get("C").text == "in the plain graph" and plain.get("C").state is State.OUT
            assert plain.redis.get(plain.keys.version) is not None
            assert plain.verify_receipts().ok and len(plain.receipts()) == 1
            assert snapshot(odd).nodes == {}
        finally:
            drop_graph(odd)
            drop_graph(plain)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ids=st.lists(st.text(min_size=1, max_size=40).filter(lambda s: s.isprintable() and s == s.strip()),
                    min_size=1, max_size=6, unique=True),
       retract=st.data())
def test_whatever_ids_they_share_graphs_never_mix(backend: dict[str, object], ids: list[str],
                                                  retract: st.DataObject) -> None:
    with fresh(backend) as a, fresh(backend) as b:
        for node in ids:
            a.add_claim(node, f"a says {node}")
            b.add_claim(node, f"b says {node}")
        only_a = [f"{node}~a" for node in ids]
        for node, own in zip(ids, only_a, strict=True):
            a.add_decision(own, "a's decision", premises=[node])
        gone = retract.draw(st.lists(st.sampled_from(ids), max_size=len(ids), unique=True))
        for node in gone:
            a.retract(node, reason="only in a", by="x")
        snap_a, snap_b = snapshot(a), snapshot(b)
        assert set(snap_a.nodes) == set(ids) | set(only_a) and set(snap_b.nodes) == set(ids)
        assert all(b.get(node).text == f"b says {node}" and b.get(node).state is State.IN for node in ids)
        assert all(a.get(node).text == f"a says {node}" for node in ids)
        assert snap_b.edges == set() and len(snap_a.edges) == len(ids)
        assert {n for n, s in snap_a.states().items() if s == "OUT"} == \
            set(gone) | {f"{n}~a" for n in gone}
        assert len(a.receipts()) == len(gone) and b.receipts() == []


@pytest.mark.asyncio(loop_scope="session")
async def test_async_handles_on_two_graphs(backend: dict[str, object],
                                           open_rippl: Callable[..., Rippl]) -> None:
    sync_a, sync_b = open_rippl(), open_rippl()
    a = await AsyncRippl.open(graph=sync_a.graph, **backend)
    b = await AsyncRippl.open(graph=sync_b.graph, **backend)
    try:
        await a.load(INCIDENT)
        await b.load(INCIDENT)
        await a.retract("CLM-001", reason="disk errors", by="telemetry")
        assert not (await a.check("ACT-001")).allowed and (await b.check("ACT-001")).allowed
        assert (await b.get("CLM-001")).state is State.IN
        assert await b.receipts() == []
    finally:
        await a.close()
        await b.close()


def test_two_database_files_in_one_folder_are_independent(tmp_path: Path) -> None:
    with Rippl.open(tmp_path / "one.db") as one, Rippl.open(tmp_path / "two.db") as two:
        assert one._server is not None and two._server is not None
        assert one._server.pid != two._server.pid
        one.add_claim("C", "in file one")
        two.add_claim("C", "in file two")
        one.retract("C", reason="r", by="x")
        assert two.get("C").state is State.IN and two.get("C").text == "in file two"
    with Rippl.open(tmp_path / "two.db") as two:
        assert two.get("C").text == "in file two" and two.get("C").state is State.IN
        assert two.receipts() == []


# -- keys: one function derives every key of a tenant; drop() deletes exactly those ----------------

CHECKPOINTS = Schema("1", unique_ids=("Checkpoint",))


def tenant_keys(handle: Rippl) -> set[str]:
    return set(handle.redis.scan_iter(match=handle.keys.pattern, count=1000))


def populate(handle: Rippl) -> None:
    """A claim, a retraction with its receipt, and a companion graph of framework state."""
    handle.add_claim("C", f"a claim of {handle.graph}")
    handle.add_decision("D", "rests on C", premises=["C"])
    handle.retract("C", reason="r", by="x")
    store = StateGraph(handle, CHECKPOINTS, companion="checkpoints")
    store.setup()
    store.run(lambda: _one_checkpoint(handle.graph), write=True)


def _one_checkpoint(owner: str) -> Op[None]:
    yield Commit([Query("CREATE (:Checkpoint {id: $id})", {"id": f"cp of {owner}"})])


def state_of(handle: Rippl) -> tuple[object, ...]:
    store = StateGraph(handle, CHECKPOINTS, companion="checkpoints")
    checkpoints = store.run(lambda: _read_checkpoints())
    return (snapshot(handle), handle.redis.get(handle.keys.version), len(handle.receipts()),
            handle.verify_receipts().ok, checkpoints)


def _read_checkpoints() -> Op[list[str]]:
    rows = yield Query("MATCH (c:Checkpoint) RETURN c.id ORDER BY c.id", read_only=True)
    return [row[0] for row in rows]


def test_dropping_acme_leaves_acme_eu_and_acme_star_whole(open_rippl: Callable[..., Rippl]) -> None:
    acme = open_rippl(graph=f"acme-{uuid.uuid4().hex[:8]}")
    others = [open_rippl(graph=f"{acme.graph}{tail}") for tail in (":eu", "*", "}", "%3Aeu", "x")]
    for handle in (acme, *others):
        populate(handle)
    before = {h.graph: (state_of(h), tenant_keys(h)) for h in others}
    acme.drop()
    assert {h.graph: (state_of(h), tenant_keys(h)) for h in others} == before
    assert snapshot(acme).nodes == {} and acme.receipts() == []
    assert tenant_keys(acme) == {acme.keys.graph, acme.keys.schema}  # the empty schema, recreated
    with pytest.raises(DatabaseError):  # the companion graph went with the tenant
        StateGraph(acme, CHECKPOINTS, companion="checkpoints").run(lambda: _read_checkpoints())


def test_a_graph_named_like_another_tenants_keys_cannot_touch_them(
        open_rippl: Callable[..., Rippl]) -> None:
    victim = open_rippl()
    populate(victim)
    before = state_of(victim)
    keys = victim.keys
    lookalikes = [keys.graph, keys.version, keys.schema, keys.events, keys.pattern,
                  keys.of("checkpoints").graph, f"rippl:{victim.graph}:version",
                  f"rippl:{victim.graph}:checkpoints", "{" + victim.graph + "}"]
    for name in lookalikes:
        attacker = open_rippl(graph=name)
        populate(attacker)
        attacker.add_claim("X", "written through a look-alike name")
        attacker.drop()
        assert state_of(victim) == before, name
    victim.add_claim("STILL", "the victim still writes")  # its version key is still a counter
    assert victim.get("STILL").state is State.IN


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(a=st.text(min_size=1, max_size=30).filter(lambda s: s.isprintable() and s == s.strip()),
       b=st.text(min_size=1, max_size=30).filter(lambda s: s.isprintable() and s == s.strip()))
@example(a="t", b="t:x")
@example(a="t", b="t*")
@example(a="t", b="{t}")
def test_whatever_their_names_dropping_one_tenant_leaves_the_other(
        backend: dict[str, object], a: str, b: str) -> None:
    if a == b:
        return
    salt = uuid.uuid4().hex[:6]
    with Rippl.open(graph=f"{salt}{a}", **backend) as one, \
            Rippl.open(graph=f"{salt}{b}", **backend) as two:
        try:
            populate(one)
            populate(two)
            before = (state_of(two), tenant_keys(two))
            one.drop()
            assert (state_of(two), tenant_keys(two)) == before
            assert snapshot(one).nodes == {}
        finally:
            drop_graph(one)
            drop_graph(two)


def test_listing_graphs_names_every_tenant_once(open_rippl: Callable[..., Rippl],
                                                backend: dict[str, object]) -> None:
    handles = [open_rippl(graph=f"list-{uuid.uuid4().hex[:6]}{tail}") for tail in ("", ":eu", "*", "é")]
    handles[0].add_claim("C", "a claim")
    StateGraph(handles[1], CHECKPOINTS, companion="checkpoints").setup()  # a companion: no tenant
    listed = Rippl.list_graphs(**backend)  # type: ignore[arg-type]
    assert {h.graph for h in handles} <= set(listed) and len(listed) == len(set(listed))
    assert not any(name.startswith("rippl:{") for name in listed)
    where = ["--db", str(backend["path"])] if "path" in backend else ["--url", str(backend["url"])]
    shown = CliRunner().invoke(app, [*where, "graphs", "--json"])
    assert shown.exit_code == 0 and {h.graph for h in handles} <= set(json.loads(shown.output))
