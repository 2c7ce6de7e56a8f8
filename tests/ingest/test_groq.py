"""The Groq extractor with the real `groq` client against constructed HTTP responses (respx): the
request it sends, parsing, retries, timeouts, and every kind of bad output refused with nothing
written. A live test runs only with GROQ_API_KEY."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
import pytest
import respx
from helpers_ingest import PROSE, dump

from rippl_core import AsyncRippl, Kind, Rippl, State
from rippl_core._runtime.validation import semantic_id
from rippl_core.ingest import (
    Document,
    ExtractionRejected,
    ExtractorError,
    GroqExtractor,
    extraction_json_schema,
)
from rippl_core.ingest.extractors.prompt import SYSTEM_PROMPT

BASE = "https://api.groq.com"
URL = f"{BASE}/openai/v1/chat/completions"
POSTMORTEM = PROSE / "postmortem-inc-4471.md"

# What a model would answer for the prose postmortem; quotes are verbatim excerpts of it.
EXTRACTION: dict[str, Any] = {
    "title": "Postmortem INC-4471: checkout latency regression, 2026-10-07",
    "sources": [
        {"ref": "s1", "title": "Datadog APM: checkout-api POST /v1/checkout latency", "kind": "telemetry",
         "quote": "the Datadog APM view of checkout-api POST /v1/checkout"},
        {"ref": "s2", "title": "Argo CD deploy log: checkout-api v2.4.0", "kind": "telemetry",
         "section": "Root cause"},
        {"ref": "s3", "title": "Grafana PgBouncer dashboard, checkout cluster", "kind": "telemetry"},
    ],
    "claims": [
        {"ref": "c1", "text": "Checkout p99 latency rose from 420 ms to 2.8 s on 2026-10-07",
         "sources": ["s1"], "section": "Impact",
         "quote": "checkout p99 latency rose from 420 ms to 2.8 s"},
        {"ref": "c2", "text": "checkout-api v2.4.0 was deployed at 16:02 UTC on 2026-10-07",
         "sources": ["s2"], "quote": "checkout-api v2.4.0 was deployed at 16:02 UTC on 2026-10-07"},
        {"ref": "c3", "text": "The checkout latency regression is caused by checkout-api v2.4.0",
         "derived_from": ["c1", "c2"],
         "quote": "the regression is caused by\ncheckout-api v2.4.0"},
        {"ref": "c4", "text": "The PgBouncer pool for checkout is saturated at 100 of 100 connections",
         "sources": ["s3"], "quote": "the pool at 100 of 100 connections"},
    ],
    "decisions": [
        {"ref": "d1", "title": "Roll checkout-api back to v2.3.9", "premises": ["c3"],
         "quote": "we decided to roll checkout-api back to v2.3.9"},
        {"ref": "d2", "title": "Raise the PgBouncer pool for checkout from 100 to 200 connections",
         "premises": ["c4"]},
    ],
    "actions": [
        {"ref": "a1", "title": "Set PgBouncer default_pool_size to 200 on the checkout cluster",
         "decisions": ["d2"], "tool": "set_pgbouncer_pool", "args": {"cluster": "checkout", "size": 200}},
    ],
}


def completion(content: str | None, *, finish_reason: str = "stop", model: str = "m") -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1760000000, "model": model,
            "choices": [{"index": 0, "finish_reason": finish_reason, "logprobs": None,
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def ok(data: Any = EXTRACTION, **kwargs: Any) -> httpx.Response:
    return httpx.Response(200, json=completion(json.dumps(data), **kwargs))


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def extractor(sleeps: Sleeps | None = None, **kwargs: Any) -> GroqExtractor:
    options: dict[str, Any] = {"api_key": "gsk-test", "base_url": BASE, "max_retries": 2,
                               "timeout": 5.0, "sleep": sleeps if sleeps is not None else Sleeps()}
    return GroqExtractor("openai/gpt-oss-120b", **{**options, **kwargs})


@respx.mock
def test_request_parsing_and_provenance(rippl: Rippl) -> None:
    route = respx.post(URL).mock(return_value=ok())
    report = rippl.ingest(POSTMORTEM, extractor=extractor())
    assert route.call_count == 1
    request = route.calls[0].request
    body = json.loads(request.content)
    assert body["model"] == "openai/gpt-oss-120b"
    assert body["temperature"] == 0.0
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == extraction_json_schema()
    assert body["response_format"]["json_schema"]["strict"] is False
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == SYSTEM_PROMPT
    assert POSTMORTEM.read_text() in body["messages"][1]["content"]
    assert request.headers["authorization"] == "Bearer gsk-test"
    assert request.extensions["timeout"]["read"] == 5.0

    document = report.documents[0]
    assert document.status == "written" and document.extractor == "groq"
    assert document.model == "openai/gpt-oss-120b" and len(document.added) == 10
    cause = rippl.get(semantic_id(Kind.CLAIM, EXTRACTION["claims"][2]["text"]))
    assert cause.provenance is not None
    assert cause.provenance["extractor"] == "groq"
    assert cause.provenance["model"] == "openai/gpt-oss-120b"
    start, end = cause.provenance["span"]
    text = POSTMORTEM.read_text()
    assert text[start:end] == "the regression is caused by\ncheckout-api v2.4.0"
    assert cause.provenance["section"].endswith("Root cause")
    action = rippl.get(document.ids["a1"])
    assert action.tool == "set_pgbouncer_pool" and action.args == {"cluster": "checkout", "size": 200}
    rippl.retract(document.ids["c4"], reason="the pool was fine", by="sre")
    assert rippl.get(document.ids["a1"]).state is State.OUT


@respx.mock
def test_rate_limits_and_server_errors_are_retried_with_backoff(rippl: Rippl) -> None:
    route = respx.post(URL).mock(side_effect=[
        httpx.Response(429, headers={"retry-after": "7"},
                       json={"error": {"message": "Rate limit reached", "type": "tokens"}}),
        httpx.Response(503, json={"error": {"message": "over capacity"}}),
        ok(),
    ])
    sleeps = Sleeps()
    report = rippl.ingest(POSTMORTEM, extractor=extractor(sleeps, backoff=1.0))
    assert route.call_count == 3
    assert sleeps[0] == 7.0  # the server's Retry-After
    assert 1.0 <= sleeps[1] <= 2.0  # backoff * 2**1 with jitter in [0.5, 1]
    assert report.documents[0].status == "written"


@respx.mock
def test_retry_after_is_capped(rippl: Rippl) -> None:
    respx.post(URL).mock(side_effect=[httpx.Response(429, headers={"retry-after": "3600"}), ok()])
    sleeps = Sleeps()
    rippl.ingest(POSTMORTEM, extractor=extractor(sleeps, max_backoff=12.0))
    assert sleeps == [12.0]


@respx.mock
def test_persistent_server_errors_fail_clearly_and_write_nothing(rippl: Rippl) -> None:
    route = respx.post(URL).mock(return_value=httpx.Response(500, json={"error": {"message": "boom"}}))
    before = dump(rippl)
    sleeps = Sleeps()
    with pytest.raises(ExtractorError, match=r"HTTP 500 after 3 attempts: boom"):
        rippl.ingest(POSTMORTEM, extractor=extractor(sleeps))
    assert route.call_count == 3 and len(sleeps) == 2
    assert sleeps[1] > 0 and sleeps[0] <= 1.0
    assert dump(rippl) == before


@respx.mock
def test_timeouts_are_retried_then_reported(rippl: Rippl) -> None:
    route = respx.post(URL).mock(side_effect=httpx.ReadTimeout("timed out"))
    before = dump(rippl)
    with pytest.raises(ExtractorError, match=r"did not answer within 5s \(3 attempts\)"):
        rippl.ingest(POSTMORTEM, extractor=extractor())
    assert route.call_count == 3
    assert dump(rippl) == before


@respx.mock
def test_a_timeout_then_success(rippl: Rippl) -> None:
    respx.post(URL).mock(side_effect=[httpx.ConnectTimeout("slow"), ok()])
    assert rippl.ingest(POSTMORTEM, extractor=extractor()).ok


@respx.mock
@pytest.mark.parametrize("status, message", [
    (401, "refused the API key"), (404, "does not know model"), (400, "refused the request")])
def test_client_errors_are_not_retried(rippl: Rippl, status: int, message: str) -> None:
    route = respx.post(URL).mock(return_value=httpx.Response(status, json={"error": {"message": "no"}}))
    with pytest.raises(ExtractorError, match=message):
        rippl.ingest(POSTMORTEM, extractor=extractor())
    assert route.call_count == 1


def test_a_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    with pytest.raises(ExtractorError, match="GROQ_API_KEY") as caught:
        GroqExtractor()
    assert "--extractor structured" in str(caught.value)
    monkeypatch.setenv("GROQ_API_KEY", "gsk-from-env")
    assert GroqExtractor().model == "openai/gpt-oss-120b"


BAD_OUTPUTS = {
    "malformed json": (completion('{"claims": [{"ref": "c1", "text": "x"'), "malformed-output",
                       "not valid JSON"),
    "truncated": (completion('{"claims": []}', finish_reason="length"), "malformed-output",
                  "cut off"),
    "empty": (completion(None), "malformed-output", "no content"),
    "schema violation": (completion(json.dumps({"claims": [{"ref": "c1", "txt": "x"}],
                                                "actions": [{"ref": "a", "title": "t", "args": 3}]})),
                         "schema", "claims.0.text: Field required"),
    "not an object": (completion("[1, 2]"), "malformed-output", "expected a JSON object"),
    "hallucinated reference": (completion(json.dumps({
        "claims": [{"ref": "c1", "text": "Disk is full", "sources": ["SRC-invented"]}],
        "decisions": [{"ref": "d1", "title": "Free disk", "premises": ["c1", "c9"]}]})),
        "unknown-reference", "'c9', which is neither a ref defined in this document"),
    "self-support": (completion(json.dumps({
        "claims": [{"ref": "c1", "text": "A", "derived_from": ["c2"]},
                   {"ref": "c2", "text": "B", "derived_from": ["c1"]}]})),
        "self-support", "c1 would support itself: c1 -> c2 -> c1"),
}


@respx.mock
@pytest.mark.parametrize("case", sorted(BAD_OUTPUTS))
def test_bad_output_is_rejected_and_nothing_is_written(incident: Rippl, case: str) -> None:
    payload, code, message = BAD_OUTPUTS[case]
    route = respx.post(URL).mock(return_value=httpx.Response(200, json=payload))
    before = dump(incident)
    with pytest.raises(ExtractionRejected) as caught:
        incident.ingest(POSTMORTEM, extractor=extractor())
    assert code in {p.code for p in caught.value.problems}
    assert message in str(caught.value)
    assert route.call_count == 1  # bad output is not retried: the document is rejected
    assert dump(incident) == before


@respx.mock
def test_groq_schema_validation_failure_is_a_rejection(rippl: Rippl) -> None:
    route = respx.post(URL).mock(return_value=httpx.Response(400, json={"error": {
        "message": "Generated JSON does not match the expected schema.",
        "type": "invalid_request_error", "code": "json_validate_failed",
        "failed_generation": '{"claims": "oops"}'}}))
    with pytest.raises(ExtractionRejected, match="did not match the extraction schema") as caught:
        rippl.ingest(POSTMORTEM, extractor=extractor())
    assert caught.value.problems[0].code == "schema" and route.call_count == 1


@respx.mock
def test_a_batch_reports_each_document(rippl: Rippl, tmp_path: Any) -> None:
    other = tmp_path / "other.md"
    other.write_text("Shard 09 is healthy.\n")
    respx.post(URL).mock(side_effect=[ok(), httpx.Response(200, json=completion("not json"))])
    report = rippl.ingest([POSTMORTEM, other], extractor=extractor(), errors="report")
    assert [d.status for d in report.documents] == ["written", "rejected"]
    assert not report.ok and report.rejected[0].problems[0].code == "malformed-output"
    assert rippl.stats().nodes["Claim"] == 4


@pytest.mark.asyncio(loop_scope="session")
async def test_async_extract_retries_with_async_sleep(rippl: Rippl, arippl: AsyncRippl) -> None:
    waited: list[float] = []

    async def asleep(seconds: float) -> None:
        waited.append(seconds)

    with respx.mock:
        route = respx.post(URL).mock(side_effect=[httpx.Response(502), ok()])
        report = await arippl.ingest(POSTMORTEM, extractor=extractor(async_sleep=asleep))
    assert route.call_count == 2 and len(waited) == 1
    assert report.documents[0].status == "written"
    assert len(report.added) == 10


@pytest.mark.groq
@pytest.mark.skipif(not os.environ.get("GROQ_API_KEY"), reason="needs a live GROQ_API_KEY")
def test_live_groq_extracts_the_prose_rfc(rippl: Rippl) -> None:
    document = Document.from_path(PROSE / "rfc-billing-shard-move.md")
    report = rippl.ingest(document, extractor=GroqExtractor(), errors="report")
    result = report.documents[0]
    assert result.status == "written", result.problems or result.error
    kinds = {n.kind for n in result.nodes}
    assert {Kind.CLAIM, Kind.DECISION} <= kinds
    assert rippl.stats().edges > 0
