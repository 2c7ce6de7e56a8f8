"""The LangChain extractor with a scripted chat model that really goes through
`with_structured_output` (tool calling), sync and async."""

from __future__ import annotations

from typing import Any

import pytest
from helpers_ingest import PROSE, dump, scripted, tool_call
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage

from rippl_core import AsyncRippl, Kind, Rippl, State, ToolCall
from rippl_core._runtime.validation import semantic_id
from rippl_core.ingest import ChatModelExtractor, Extraction, ExtractionRejected, ExtractorError
from rippl_core.ingest.extractors.prompt import SYSTEM_PROMPT

RFC = PROSE / "rfc-billing-shard-move.md"

EXTRACTION: dict[str, Any] = {
    "title": "RFC-0142: Move the billing tables from shard 03 to shard 09",
    "sources": [
        {"ref": "s1", "title": "Q4 2026 Postgres capacity plan (payments-infra), rev. 2026-10-01",
         "kind": "document"},
        {"ref": "s2", "title": "Grafana: shard-09 health dashboard, 2026-10-08 09:00 UTC",
         "kind": "telemetry", "quote": "The Grafana shard-09 health dashboard at 09:00 UTC"},
    ],
    "claims": [
        {"ref": "c1", "text": "Shard 03 disk usage is at 91%", "sources": ["s1"],
         "quote": "shard 03 disk usage is at\n91%"},
        {"ref": "c2", "text": "Shard 09 is healthy", "sources": ["s2"],
         "quote": "shard 09 is healthy"},
        {"ref": "c3", "text": "Shard 09 has 6 TB of free disk", "sources": ["s1"]},
        {"ref": "c4", "text": "Shard 07 has 2.5 TB of free disk", "sources": ["s1"]},
    ],
    "decisions": [
        {"ref": "d1", "title": "Move the billing tables from shard 03 to shard 09",
         "premises": ["c1", "c2", "c3"], "section": "Decision"},
        {"ref": "d2", "title": "Keep shard 07 as the pre-approved fallback target for billing",
         "premises": ["c1", "c4"]},
    ],
    "actions": [
        {"ref": "a1", "title": "Migrate the billing tables to shard 09", "decisions": ["d1"],
         "tool": "migrate_tables", "args": {"table": "billing", "shard": "09"}},
        {"ref": "a2", "title": "Cut billing traffic over to shard 09", "decisions": ["d1"],
         "triggers": ["a1"], "tool": "switch_traffic",
         "args": {"service": "billing", "target": "shard-09"}},
        {"ref": "a3", "title": "Migrate the billing tables to shard 07", "decisions": ["d2"],
         "tool": "migrate_tables", "args": {"table": "billing", "shard": "07"}},
    ],
}


def test_structured_output_is_written(rippl: Rippl) -> None:
    model = scripted(tool_call(EXTRACTION))
    extractor = ChatModelExtractor(model)
    assert extractor.model == "scripted-1"
    report = rippl.ingest(RFC, extractor=extractor)
    # with_structured_output bound our schema as the one tool the model must call.
    tools, choice = model.bound[0]
    assert tools == [Extraction] and choice == "any"
    system, human = model.seen[0]
    assert system.content == SYSTEM_PROMPT
    assert RFC.read_text() in str(human.content)

    document = report.documents[0]
    assert document.status == "written" and document.extractor == "langchain"
    assert len(document.added) == 11
    healthy = rippl.get(semantic_id(Kind.CLAIM, "Shard 09 is healthy"))
    assert healthy.provenance["model"] == "scripted-1"  # type: ignore[index]
    start, end = healthy.provenance["span"]  # type: ignore[index]
    assert RFC.read_text()[start:end] == "shard 09 is healthy"
    rippl.retract(healthy.id, reason="disk errors", by="audit")
    assert rippl.get(document.ids["a2"]).state is State.OUT
    assert rippl.check(ToolCall(name="migrate_tables", args={"table": "billing", "shard": "07"})).allowed


def test_the_same_statements_from_an_llm_merge_with_the_structured_document(rippl: Rippl) -> None:
    structured = PROSE.parent / "rfc-billing-shard-move.md"
    rippl.ingest(structured)
    report = rippl.ingest(RFC, extractor=ChatModelExtractor(scripted(tool_call(EXTRACTION))))
    document = report.documents[0]
    # Same texts, same ids: the LLM's claims and actions are the hand-written ones.
    assert semantic_id(Kind.CLAIM, "Shard 09 is healthy") in document.merged
    assert document.ids["a1"] in document.merged
    assert not [n for n in document.nodes if n.kind is Kind.ACTION and n.outcome == "added"]


def test_schema_violations_are_rejected(rippl: Rippl) -> None:
    bad = {"claims": [{"ref": "c1"}], "decisions": [{"ref": "d1", "title": "x", "premises": "c1"}]}
    before = dump(rippl)
    with pytest.raises(ExtractionRejected) as caught:
        rippl.ingest(RFC, extractor=ChatModelExtractor(scripted(tool_call(bad))))
    messages = [p.message for p in caught.value.problems]
    assert any(m.startswith("claims.0.text") for m in messages)
    assert any(m.startswith("decisions.0.premises") for m in messages)
    assert dump(rippl) == before


def test_hallucinated_references_and_cycles_are_rejected(rippl: Rippl) -> None:
    bad = {"claims": [{"ref": "c1", "text": "A", "derived_from": ["c2"]},
                      {"ref": "c2", "text": "B", "derived_from": ["c1"]}],
           "decisions": [{"ref": "d1", "title": "D", "premises": ["c1", "CLM-made-up"]}]}
    before = dump(rippl)
    with pytest.raises(ExtractionRejected) as caught:
        rippl.ingest(RFC, extractor=ChatModelExtractor(scripted(tool_call(bad))))
    assert sorted(p.code for p in caught.value.problems) == ["self-support", "unknown-reference"]
    assert dump(rippl) == before


def test_an_answer_without_structure_is_rejected(rippl: Rippl) -> None:
    model = scripted(AIMessage("I could not find any claims."))
    with pytest.raises(ExtractionRejected, match=r"without a structured extraction.*could not find"):
        rippl.ingest(RFC, extractor=ChatModelExtractor(model))


def test_provider_failures_are_extractor_errors(rippl: Rippl) -> None:
    model = scripted()  # an exhausted script raises inside the model, like a provider error
    with pytest.raises(ExtractorError, match="the chat model failed"):
        rippl.ingest(RFC, extractor=ChatModelExtractor(model))


def test_a_model_without_structured_output_is_refused_up_front() -> None:
    with pytest.raises(ExtractorError, match="does not support structured output"):
        ChatModelExtractor(FakeListChatModel(responses=["{}"]))
    with pytest.raises(ExtractorError, match="needs a LangChain BaseChatModel"):
        ChatModelExtractor(object())


@pytest.mark.asyncio(loop_scope="session")
async def test_async_ingest_uses_ainvoke(rippl: Rippl, arippl: AsyncRippl) -> None:
    model = scripted(tool_call(EXTRACTION))
    report = await arippl.ingest(RFC, extractor=ChatModelExtractor(model))
    assert report.ok and len(report.added) == 11 and len(model.seen) == 1
    assert (await arippl.get(report.documents[0].ids["a1"])).tool == "migrate_tables"
