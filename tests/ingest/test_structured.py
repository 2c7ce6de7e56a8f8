"""The structured Markdown format, and the examples written with it, end to end on real FalkorDB."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from helpers_ingest import DOCS, EXAMPLES, causal, dump

from rippl_core import AsyncRippl, Kind, Rippl, State, ToolCall
from rippl_core._runtime.validation import semantic_id
from rippl_core.ingest import (
    Document,
    ExtractionRejected,
    StructuredExtractor,
    plan,
)

RFC = DOCS / "rfc-billing-shard-move.md"
POSTMORTEM = DOCS / "postmortem-inc-4471.md"
AUDIT = DOCS / "telemetry-audit-shard-09.md"


def extract(text: str, name: str = "doc.md"):
    return StructuredExtractor().extract(Document(name, text))


# ------------------------------------------------------------------------------- the format


def test_examples_parse_with_spans_and_sections() -> None:
    assert [p.name for p in EXAMPLES] == ["postmortem-inc-4471.md", "rfc-billing-shard-move.md",
                                          "telemetry-audit-shard-09.md"]
    document = Document.from_path(RFC)
    extraction = StructuredExtractor().extract(document)
    assert extraction.title == "RFC-0142: Move the billing tables from shard 03 to shard 09"
    assert (len(extraction.sources), len(extraction.claims), len(extraction.decisions),
            len(extraction.actions)) == (5, 7, 3, 4)
    for item in extraction.items():
        start, end = item.span  # type: ignore[misc]
        assert document.text[start:end].startswith(f"ref: {item.ref}")
    healthy = next(c for c in extraction.claims if c.ref == "shard-09-healthy")
    assert healthy.section == "RFC-0142: Move the billing tables from shard 03 to shard 09 > Evidence"
    migrate = next(a for a in extraction.actions if a.ref == "migrate-09")
    assert migrate.tool == "migrate_tables" and migrate.args == {"table": "billing", "shard": "09"}
    assert migrate.section.endswith("> Rollout")


def test_graph_in_front_matter_and_blocks_is_gathered() -> None:
    text = """---
title: Front
owner: someone            # free-form metadata is allowed in the front matter
sources:
  - {ref: s1, title: "Pager alert 42"}
---
# Heading
```rippl
claims:
  - {ref: c1, text: "The disk is full", sources: [s1]}
```
```python
claims = "not a rippl block"
```
"""
    extraction = extract(text)
    assert extraction.title == "Front"
    assert [s.ref for s in extraction.sources] == ["s1"]
    assert [c.ref for c in extraction.claims] == ["c1"]
    assert extraction.claims[0].section == "Heading"
    assert extraction.sources[0].section is None


def test_every_problem_is_reported_with_its_line() -> None:
    text = """# Doc
```rippl
claims:
  - ref: c1
    text: [unclosed
```
## Two
```rippl
claims:
  - ref: c2
decisions:
  - id: DEC-1
    title: Do it
colour: blue
```
"""
    with pytest.raises(ExtractionRejected) as caught:
        extract(text, "bad.md")
    problems = caught.value.problems
    assert [p.code for p in problems] == ["malformed-output", "schema", "schema", "schema"]
    assert problems[0].where == "bad.md:6" and "YAML" in problems[0].message
    assert problems[1].where == "bad.md:10" and "text" in problems[1].message
    assert problems[2].where == "bad.md:12" and "use `ref:`" in problems[2].message
    assert problems[3].where == "bad.md:14" and "'colour'" in problems[3].message
    assert "nothing was written" in str(caught.value)


def test_a_document_without_structure_is_refused_with_a_hint() -> None:
    with pytest.raises(ExtractionRejected) as caught:
        extract("# Just prose\n\nShard 09 is healthy.\n")
    assert "--extractor groq" in str(caught.value)


def test_document_locate_and_sections() -> None:
    document = Document("d.md", "# A\n\n## B\ntext Here  is\n  the quote.\n```\n# not a heading\n```\n")
    assert [h.title for h in document.headings] == ["A", "B"]
    start, end = document.locate("here is the QUOTE")  # type: ignore[misc]
    assert document.text[start:end] == "Here  is\n  the quote"
    assert document.section_at(start) == "A > B"
    assert document.locate("not there") is None
    assert document.locate("text Here") == (10, 19)


# --------------------------------------------------------------------------- into the graph


def test_examples_build_the_graph_and_merge_shared_statements(rippl: Rippl) -> None:
    report = rippl.ingest(EXAMPLES)
    assert report.ok
    assert [d.status for d in report.documents] == ["written"] * 3
    stats = rippl.stats()
    assert stats.nodes == {"Source": 12, "Claim": 17, "Decision": 8, "Action": 10}
    # Graph ids are the semantic ids of the text, whichever document states it.
    healthy = semantic_id(Kind.CLAIM, "Shard 09 is healthy")
    rfc, audit = report.documents[1], report.documents[2]
    assert rfc.ids["shard-09-healthy"] == audit.ids["shard-09-healthy"] == healthy
    assert healthy in rfc.added and healthy in audit.merged
    node = rippl.get(healthy)
    assert node.provenance is not None
    assert node.provenance["document"] == "examples/docs/rfc-billing-shard-move.md"
    assert node.provenance["extractor"] == "structured"
    assert [m["document"] for m in node.provenance["also"]] == [
        "examples/docs/telemetry-audit-shard-09.md"]
    span = node.provenance["span"]
    assert "Shard 09 is healthy" in RFC.read_text()[span[0]:span[1]]
    # "Shard 03 disk usage is at 91%": one source in the postmortem, two in the RFC (one shared).
    disk = rippl.get(semantic_id(Kind.CLAIM, "Shard 03 disk usage is at 91%"))
    assert len(disk.justifications) == 2
    assert all(len(j) == 1 and j[0].startswith("SRC-") for j in disk.justifications)


def test_retracting_an_ingested_premise_vetoes_the_migration(rippl: Rippl) -> None:
    report = rippl.ingest(EXAMPLES)
    ids = report.documents[1].ids
    assert rippl.check(ids["drop-03"]).allowed
    rippl.retract(ids["shard-09-healthy"], reason="disk errors on shard 09", by="audit")
    for action in ("migrate-09", "cutover-09", "drop-03"):
        verdict = rippl.check(ids[action])
        assert not verdict.allowed
        assert verdict.blockers[0].premise == ids["shard-09-healthy"]
    assert rippl.check(ids["migrate-07"]).allowed
    assert rippl.check(ToolCall(name="migrate_tables", args={"table": "billing", "shard": "07"})).allowed
    assert not rippl.check(ToolCall(name="migrate_tables",
                                    args={"shard": "09", "table": "billing"})).allowed


def test_ingesting_twice_changes_nothing(rippl: Rippl) -> None:
    rippl.ingest(EXAMPLES)
    before = dump(rippl)
    again = rippl.ingest(EXAMPLES)
    assert [d.status for d in again.documents] == ["unchanged"] * 3
    assert all(not d.added and not d.merged for d in again.documents)
    assert dump(rippl) == before


def test_document_order_does_not_change_the_graph(open_rippl: Callable[..., Rippl]) -> None:
    forward, backward = open_rippl(), open_rippl()
    forward.ingest(EXAMPLES)
    backward.ingest(list(reversed(EXAMPLES)))
    assert causal(forward) == causal(backward)


def test_the_plan_is_a_core_graph_spec(open_rippl: Callable[..., Rippl]) -> None:
    ingested, loaded = open_rippl(), open_rippl()
    ingested.ingest(RFC)
    document = Document.from_path(RFC)
    loaded.load(plan(StructuredExtractor().extract(document), document).graph_spec())
    assert causal(ingested) == causal(loaded)


def test_a_revised_document_adds_only_what_is_new(rippl: Rippl, tmp_path) -> None:
    path = tmp_path / "rfc.md"
    path.write_text(RFC.read_text())
    first = rippl.ingest(path).documents[0]
    path.write_text(RFC.read_text() + """
## Addendum
```rippl
claims:
  - ref: lag
    text: "Replication lag to shard 09 stays under 1 s"
    sources: [grafana-09]
```
""".replace("[grafana-09]", "[]"))
    second = rippl.ingest(path).documents[0]
    assert second.status == "written"
    assert second.added == [semantic_id(Kind.CLAIM, "Replication lag to shard 09 stays under 1 s")]
    assert sorted(second.unchanged) == sorted(first.added)


@pytest.mark.asyncio(loop_scope="session")
async def test_async_ingest_matches_sync(rippl: Rippl, arippl: AsyncRippl) -> None:
    report = await arippl.ingest(EXAMPLES)
    assert report.ok and len(report.added) == 47
    state = (await arippl.get(report.documents[1].ids["migrate-09"])).state
    assert state is State.IN
    before = dump(rippl)
    again = rippl.ingest(EXAMPLES)
    assert [d.status for d in again.documents] == ["unchanged"] * 3
    assert dump(rippl) == before


def test_duplicate_yaml_keys_are_not_silently_dropped() -> None:
    text = """```rippl
claims:
  - {ref: c1, text: "A"}
claims:
  - {ref: c2, text: "B", text: "C"}
```
```rippl
decisions:
  - ref: d
    title: Go
    title: Stop
```
"""
    with pytest.raises(ExtractionRejected) as caught:
        extract(text, "dup.md")
    messages = [(p.where, p.message) for p in caught.value.problems]
    assert messages[0] == ("dup.md:2", "'claims' appears more than once in this block; YAML keeps "
                                       "only the last, so write every item under one key")
    assert messages[1][0] == "dup.md:4"
    assert messages[2] == ("dup.md:9", "decisions[d] gives title more than once")
