"""Writing and reading the causal graph: add_*, get, justify, load (dict, JSON, YAML), idempotence,
conflicts, all-or-nothing loads, semantic ids, and the async twin. Both backends."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers_core import IN, assert_consistent, snapshot, version

from rippl_core import AsyncRippl, ConflictError, InvalidInputError, Kind, NotFoundError, Rippl, State
from rippl_core._runtime.validation import semantic_id
from rippl_core._runtime.wire import parse

INCIDENT = Path(__file__).parents[2] / "examples" / "incident.yaml"


def small_spec() -> dict[str, Any]:
    return {
        "sources": [{"id": "S1", "title": "dashboard", "kind": "telemetry", "uri": "https://d/1"},
                    {"id": "S2", "title": "runbook"}],
        "claims": [{"id": "C1", "text": "shard 09 is healthy", "sources": ["S1"]},
                   {"id": "C2", "text": "shard 07 has room", "sources": ["S1", "S2"]},
                   {"id": "C3", "text": "09 beats 07", "derived_from": ["C1", "C2"]}],
        "decisions": [{"id": "D1", "title": "migrate to 09", "premises": ["C1", "C3"]},
                      {"id": "D2", "title": "notify finance", "depends_on": ["D1"]}],
        "actions": [{"id": "A1", "title": "migrate", "decisions": ["D1"], "tool": "migrate_tables",
                     "args": {"table": "billing", "shard": "09"}},
                    {"id": "A2", "title": "cut over", "decisions": ["D2"], "triggers": ["A1"]}],
        "justifications": [{"node": "D1", "antecedents": ["C2"]}],
    }


def test_add_and_get_every_kind(rippl: Rippl) -> None:
    src = rippl.add_source("S1", "Grafana dashboard", uri="https://grafana/d/1", kind="telemetry")
    assert (src.id, src.kind, src.title, src.uri, src.source_type, src.state) == \
        ("S1", Kind.SOURCE, "Grafana dashboard", "https://grafana/d/1", "telemetry", State.IN)
    assert src.status == "Active" and src.justifications == []
    claim = rippl.add_claim("C1", "Shard 09 is healthy", sources=["S1"])
    assert (claim.kind, claim.text, claim.status, claim.justifications) == \
        (Kind.CLAIM, "Shard 09 is healthy", "Verified", [["S1"]])
    rippl.add_claim("C0", "Shard 07 is healthy")
    decision = rippl.add_decision("D1", "Migrate billing to 09", premises=["C1", "C0"])
    assert decision.status == "Holding" and decision.justifications == [["C0", "C1"]]
    dep = rippl.add_decision("D2", "Tell finance", depends_on=["D1"])
    assert dep.justifications == [["D1"]]
    action = rippl.add_action("A1", "migrate", decisions=["D1"], tool="migrate_tables",
                              args={"table": "billing", "shard": "09"})
    assert (action.tool, action.args, action.status) == \
        ("migrate_tables", {"table": "billing", "shard": "09"}, "Pending")
    after = rippl.add_action("A2", "cut over", decisions=["D2"], triggers=["A1"])
    assert after.justifications == [["A1", "D2"]] and after.tool is None and after.args is None
    assert rippl.get("A2") == after
    assert rippl.get("C1").created_at is not None
    snap = snapshot(rippl)
    assert {(a, rel, b) for a, rel, b, _ in snap.edges} == {
        ("S1", "SUPPORTS", "C1"), ("C1", "SUPPORTS", "D1"), ("C0", "SUPPORTS", "D1"),
        ("D1", "DEPENDS_ON", "D2"), ("D1", "DRIVES", "A1"), ("D2", "DRIVES", "A2"),
        ("A1", "TRIGGERS", "A2")}
    stats = rippl.stats()
    assert stats.nodes == {"Source": 1, "Claim": 2, "Decision": 2, "Action": 2}
    assert stats.edges == 7 and stats.statuses["Action"] == {"Pending": 2}


def test_every_node_has_one_kind_label_and_the_node_label(rippl: Rippl) -> None:
    rippl.load(small_spec())
    rows = parse(rippl.redis.execute_command("GRAPH.RO_QUERY", rippl.keys.graph,
                                             "MATCH (n:Node) RETURN n.id, labels(n)", "--compact"))
    assert len(rows) == 9
    for node_id, labels in rows:
        assert sorted(labels) == sorted(["Node", {"S": "Source", "C": "Claim", "D": "Decision",
                                                  "A": "Action"}[node_id[0]]])


def test_readding_the_same_content_is_a_no_op(rippl: Rippl) -> None:
    rippl.load(small_spec())
    before, stamp = snapshot(rippl), version(rippl)
    assert rippl.add_source("S1", "dashboard", kind="telemetry", uri="https://d/1").id == "S1"
    rippl.add_claim("C2", "shard 07 has room", sources=["S2", "S1"])
    rippl.add_decision("D2", "notify finance", depends_on=["D1"])
    rippl.add_action("A1", "migrate", decisions=["D1"], tool="migrate_tables",
                     args={"shard": "09", "table": "billing"})  # key order does not matter
    assert snapshot(rippl) == before and version(rippl) == stamp


@pytest.mark.parametrize("call", [
    lambda r: r.add_source("S1", "another title", kind="telemetry", uri="https://d/1"),
    lambda r: r.add_source("S1", "dashboard", kind="document", uri="https://d/1"),
    lambda r: r.add_claim("C1", "shard 09 is NOT healthy", sources=["S1"]),
    lambda r: r.add_claim("C3", "09 beats 07", derived_from=["C1"]),
    lambda r: r.add_decision("D1", "migrate to 09", premises=["C1"]),
    lambda r: r.add_action("A1", "migrate", decisions=["D1"], tool="migrate_tables",
                           args={"table": "billing", "shard": "07"}),
    lambda r: r.add_action("A1", "migrate", decisions=["D1"], tool="other_tool",
                           args={"table": "billing", "shard": "09"}),
    lambda r: r.add_claim("D1", "a claim now"),
])
def test_different_content_is_a_conflict_and_writes_nothing(rippl: Rippl, call: Any) -> None:
    rippl.load(small_spec())
    before = snapshot(rippl)
    with pytest.raises(ConflictError):
        call(rippl)
    assert snapshot(rippl) == before


def test_replace_overwrites_content_but_keeps_retraction(rippl: Rippl) -> None:
    rippl.load(small_spec())
    rippl.retract("C1", reason="disk errors", by="sre")
    node = rippl.add_claim("C1", "shard 09 was healthy at 09:00", sources=["S2"], replace=True)
    assert node.text == "shard 09 was healthy at 09:00" and node.justifications == [["S2"]]
    assert node.retracted and node.state is State.OUT and node.reason == "disk errors"
    source = rippl.add_source("S1", "dashboard v2", replace=True)
    assert source.uri is None and source.source_type is None and source.title == "dashboard v2"
    with pytest.raises(ConflictError):
        rippl.add_decision("C2", "a decision", replace=True)  # cannot change kind
    assert_consistent(snapshot(rippl))


def test_semantic_ids_make_ingestion_idempotent(rippl: Rippl) -> None:
    first = rippl.add_claim(None, "Shard 09 is healthy.")
    again = rippl.add_claim(None, "  shard 09   IS healthy ")
    assert first.id == again.id == semantic_id(Kind.CLAIM, "Shard 09 is healthy")
    assert first.id.startswith("CLM-")
    other = rippl.add_decision(None, "Shard 09 is healthy")
    assert other.id != first.id and other.id.startswith("DEC-")
    assert rippl.stats().nodes == {"Claim": 1, "Decision": 1}


def test_duplicate_antecedents_make_one_edge(rippl: Rippl) -> None:
    rippl.add_source("S", "s")
    rippl.add_claim("C", "c", sources=["S", "S"])
    rippl.add_decision("D", "d", premises=["C", "C"])
    assert rippl.stats().edges == 2
    assert rippl.get("C").justifications == [["S"]]


def test_justify_adds_an_alternative_and_validates(rippl: Rippl) -> None:
    rippl.load(small_spec())
    assert rippl.justify("D2", ["C2"])
    assert sorted(rippl.get("D2").justifications) == [["C2"], ["D1"]]
    assert not rippl.justify("D2", ["C2"])
    before = snapshot(rippl)
    with pytest.raises(NotFoundError):
        rippl.justify("D2", ["C2", "ghost"])
    with pytest.raises(NotFoundError):
        rippl.justify("ghost", ["C2"])
    with pytest.raises(InvalidInputError):
        rippl.justify("A1", ["C1"])  # a claim cannot drive an action
    with pytest.raises(InvalidInputError):
        rippl.justify("C1", ["C1"])
    assert snapshot(rippl) == before


# ------------------------------------------------------------------------------------- load


@pytest.mark.parametrize("form", ["dict", "json", "yaml", "yml-path-str"])
def test_load_from_dict_json_and_yaml(rippl: Rippl, tmp_path: Path, form: str) -> None:
    spec = small_spec()
    source: Any = spec
    if form == "json":
        source = tmp_path / "graph.json"
        source.write_text(json.dumps(spec))
    elif form == "yaml":
        source = tmp_path / "graph.yaml"
        source.write_text(yaml.safe_dump(spec))
    elif form == "yml-path-str":
        (tmp_path / "graph.yml").write_text(yaml.safe_dump(spec))
        source = str(tmp_path / "graph.yml")
    report = rippl.load(source)
    assert sorted(report.created) == ["A1", "A2", "C1", "C2", "C3", "D1", "D2", "S1", "S2"]
    assert report.unchanged == [] and report.replaced == []
    assert report.edges == 12
    assert sorted(rippl.get("D1").justifications) == [["C1", "C3"], ["C2"]]
    snap = snapshot(rippl)
    assert len(snap.edges) == 12 and set(snap.states().values()) == {IN}


def test_loading_twice_changes_nothing(rippl: Rippl) -> None:
    first = rippl.load(INCIDENT)
    assert len(first.created) == 71
    before, stamp = snapshot(rippl), version(rippl)
    second = rippl.load(INCIDENT)
    assert second.created == [] and sorted(second.unchanged) == sorted(first.created)
    assert snapshot(rippl) == before and version(rippl) == stamp


def test_load_after_a_retraction_keeps_the_retraction(rippl: Rippl) -> None:
    rippl.load(INCIDENT)
    rippl.retract("CLM-001", reason="disk errors", by="telemetry")
    before = snapshot(rippl)
    rippl.load(INCIDENT)
    assert snapshot(rippl) == before


@pytest.mark.parametrize("breakage, error", [
    (lambda s: s["claims"].append({"id": "C9", "text": "x", "sources": ["ghost"]}), NotFoundError),
    (lambda s: s["actions"].append({"id": "A9", "title": "x", "decisions": ["S1"]}), InvalidInputError),
    (lambda s: s["claims"].append({"id": "C9", "text": "x", "derived_from": ["A1"]}), InvalidInputError),
    (lambda s: s["claims"].append({"id": "C1", "text": "defined twice"}), InvalidInputError),
    (lambda s: s["claims"].append({"id": "", "text": "empty id"}), InvalidInputError),
    (lambda s: s["claims"].append({"id": "C9", "text": ""}), InvalidInputError),
    (lambda s: s["claims"].append({"id": "C9", "text": "x", "colour": "red"}), InvalidInputError),
    (lambda s: s["justifications"].append({"node": "ghost", "antecedents": ["C1"]}), InvalidInputError),
    (lambda s: s["justifications"].append({"node": "D1", "antecedents": ["D1"]}), InvalidInputError),
    (lambda s: s.update(claims="not a list"), InvalidInputError),
])
def test_load_is_all_or_nothing(rippl: Rippl, breakage: Any, error: type[Exception]) -> None:
    rippl.add_source("S0", "already there")
    before = snapshot(rippl)
    spec = small_spec()
    breakage(spec)
    with pytest.raises(error):
        rippl.load(spec)
    assert snapshot(rippl) == before


def test_load_conflicting_with_the_graph_writes_nothing(rippl: Rippl) -> None:
    rippl.add_claim("C2", "something else entirely")
    before = snapshot(rippl)
    with pytest.raises(ConflictError):
        rippl.load(small_spec())
    assert snapshot(rippl) == before
    report = rippl.load(small_spec(), replace=True)
    assert report.replaced == ["C2"] and rippl.get("C2").text == "shard 07 has room"


@pytest.mark.parametrize("content, suffix", [("sources: [", ".yaml"), ("{bad json", ".json"),
                                             ("- just\n- a list\n", ".yaml")])
def test_unreadable_files_are_refused(rippl: Rippl, tmp_path: Path, content: str, suffix: str) -> None:
    path = tmp_path / f"graph{suffix}"
    path.write_text(content)
    with pytest.raises(InvalidInputError):
        rippl.load(path)
    with pytest.raises(InvalidInputError):
        rippl.load(tmp_path / "missing.yaml")
    assert snapshot(rippl).nodes == {}


def test_load_writes_large_graphs_in_batches(rippl: Rippl) -> None:
    n = 5_500  # more than one UNWIND batch (5000 rows) of nodes, of edges and of state changes
    spec = {"sources": [{"id": "S", "title": "root"}],
            "claims": [{"id": f"C{i}", "text": f"claim {i}", "sources": ["S"]} for i in range(n)]}
    report = rippl.load(spec)
    assert len(report.created) == n + 1 and report.edges == n
    assert rippl.stats().nodes == {"Source": 1, "Claim": n}
    wave = rippl.retract("S", reason="bad feed", by="x")
    assert len(wave.changed(State.OUT)) == n + 1
    assert rippl.stats().statuses == {"Source": {"Retracted": 1}, "Claim": {"Retracted": n}}


# ------------------------------------------------------------------------------- async twin


@pytest.mark.asyncio(loop_scope="session")
async def test_async_handle_does_what_the_sync_one_does(rippl: Rippl, arippl: AsyncRippl) -> None:
    report = await arippl.load(small_spec())
    assert len(report.created) == 9
    node = await arippl.add_claim("C4", "async claim", sources=["S2"])
    assert node == rippl.get("C4")
    assert await arippl.justify("D2", ["C4"])
    with pytest.raises(ConflictError):
        await arippl.add_claim("C4", "different")
    with pytest.raises(NotFoundError):
        await arippl.add_claim("C5", "x", sources=["ghost"])
    wave = await arippl.retract("S1", reason="bad", by="a")
    assert set(wave.changed(State.OUT)) == {"S1", "C1", "C3"}  # D1 holds on its alternative [C2]
    assert (await arippl.get("D1")).state is State.IN
    assert [r.id for r in await arippl.blast_radius("S1")] == [r.id for r in rippl.blast_radius("S1")]
    assert await arippl.premises("A2") == rippl.premises("A2")
    assert await arippl.stats() == rippl.stats()
    await arippl.reinstate("S1", reason="ok", by="a")
    assert_consistent(snapshot(rippl))
    assert set(snapshot(rippl).states().values()) == {IN}


# ----------------------------------------------------------------- a statement is one claim


def test_a_claim_without_an_id_is_the_claim_already_stating_its_text(rippl: Rippl) -> None:
    rippl.add_source("S1", "one")
    rippl.add_source("S2", "two")
    named = rippl.add_claim("CLM-1", "Shard 09 is healthy", sources=["S1"])
    for wording in ("Shard 09 is healthy", "shard 09 IS healthy.", "Shard  09 is healthy"):
        again = rippl.add_claim(None, wording, sources=["S2"])
        assert again.id == "CLM-1" and again.text == named.text
    assert rippl.stats().nodes["Claim"] == 1
    assert rippl.get("CLM-1").justifications == [["S1"], ["S2"]]
    report = rippl.load({"claims": [{"text": "SHARD 09 is healthy"}]})
    assert report.unchanged == ["CLM-1"] and rippl.stats().nodes["Claim"] == 1
    assert [c.id for c in rippl.claims_stating("shard 09 is healthy.")] == ["CLM-1"]
    rippl.add_claim("CLM-2", "shard 09 is healthy")
    with pytest.raises(InvalidInputError, match="CLM-1, CLM-2"):
        rippl.add_claim(None, "Shard 09 is healthy")


def test_a_record_states_the_claim_already_stating_its_content(rippl: Rippl) -> None:
    from rippl_core import Record

    rippl.add_claim("CLM-1", "Shard 09 is healthy")
    saved = rippl.records("mem").save([Record(id="r1", content="shard 09 is healthy")])
    assert saved[0].claim == "CLM-1" and rippl.stats().nodes["Claim"] == 1
    rippl.retract("CLM-1", reason="disk errors", by="ops")
    assert rippl.records("mem").get("r1").claim_state is State.OUT  # type: ignore[union-attr]


def test_claims_written_before_text_keys_get_theirs_on_open(backend: dict[str, object]) -> None:
    graph = f"t-{uuid.uuid4().hex[:12]}"
    with Rippl.open(graph=graph, **backend) as rippl:  # type: ignore[arg-type]
        rippl.add_claim("CLM-OLD", "an old statement")
        rippl.redis.execute_command("GRAPH.QUERY", rippl.keys.graph, "MATCH (c:Claim) REMOVE c.text_key")
        rippl.redis.delete(rippl.keys.schema)  # as an older Rippl left it
    try:
        with Rippl.open(graph=graph, **backend) as rippl:  # type: ignore[arg-type]
            assert [c.id for c in rippl.claims_stating("An old statement.")] == ["CLM-OLD"]
            assert rippl.add_claim(None, "an old statement").id == "CLM-OLD"
    finally:
        with Rippl.open(graph=graph, **backend) as rippl:  # type: ignore[arg-type]
            rippl.drop()
