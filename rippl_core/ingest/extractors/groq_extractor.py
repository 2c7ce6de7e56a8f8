"""`GroqExtractor`: extraction with the official `groq` SDK and JSON-schema structured output.

Install with the `groq` extra (`pip install "rippl-core[groq]"`); the SDK is imported only when an
extractor is created. Rate limits (429), 408/409 and server errors (5xx), connection errors and
timeouts are retried with exponential backoff and jitter, honouring the server's Retry-After; the
SDK's own retries are turned off so the count and the delays are the ones configured here.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from rippl_core.ingest.document import Document
from rippl_core.ingest.extractors.prompt import messages
from rippl_core.ingest.schema import (
    Extraction,
    ExtractionRejected,
    ExtractorError,
    Problem,
    extraction_json_schema,
    parse_extraction,
)

DEFAULT_MODEL = "openai/gpt-oss-120b"
RETRY_STATUSES = frozenset({408, 409, 429})


def _groq() -> Any:
    try:
        import groq
    except ImportError:  # pragma: no cover - depends on the installation
        raise ExtractorError('the groq package is not installed: pip install "rippl-core[groq]"') \
            from None
    return groq


class GroqExtractor:
    """Extract with a Groq-hosted model (default `openai/gpt-oss-120b`) using structured output.

    `api_key` defaults to the GROQ_API_KEY environment variable; without one, creating the
    extractor raises ExtractorError. `timeout` bounds each request (seconds); `max_retries`
    transient failures are retried, waiting `backoff * 2**attempt` seconds (with jitter, at most
    `max_backoff`, or what the server's Retry-After asks, up to `max_backoff`).
    """

    model: str
    timeout: float
    max_retries: int
    backoff: float
    max_backoff: float

    name = "groq"

    def __init__(self, model: str = DEFAULT_MODEL, *, api_key: str | None = None,
                 timeout: float = 60.0, max_retries: int = 4, backoff: float = 1.0,
                 max_backoff: float = 30.0, temperature: float = 0.0,
                 base_url: str | None = None, max_completion_tokens: int | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        key = api_key if api_key is not None else os.environ.get("GROQ_API_KEY")
        if not key or not key.strip():
            raise ExtractorError(
                "no Groq API key: set GROQ_API_KEY (or pass api_key=...), or ingest offline with "
                "the structured extractor (--extractor structured)")
        if timeout <= 0 or max_retries < 0 or backoff < 0 or max_backoff < 0:
            raise ExtractorError("timeout must be positive; max_retries, backoff and max_backoff "
                                 "must not be negative")
        self.model = model
        self.timeout, self.max_retries = timeout, max_retries
        self.backoff, self.max_backoff = backoff, max_backoff
        self.temperature = temperature
        self.max_completion_tokens = max_completion_tokens
        self._sleep, self._async_sleep = sleep, async_sleep
        self._groq = _groq()
        self._options: dict[str, Any] = {"api_key": key, "timeout": timeout, "max_retries": 0,
                                         "base_url": base_url}
        self._client: Any = None
        self._async_client: Any = None

    # -- the request ---------------------------------------------------------------------------
    def request(self, document: Document) -> dict[str, Any]:
        """The chat-completion request for a document (model, messages, the JSON schema)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages(document),
            "temperature": self.temperature,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "rippl_extraction",
                "description": "Sources, claims, decisions and actions of one document.",
                # Best-effort mode: strict decoding cannot express free-form tool arguments, and
                # every answer is validated against the schema anyway.
                "schema": extraction_json_schema(), "strict": False}},
        }
        if self.max_completion_tokens is not None:
            body["max_completion_tokens"] = self.max_completion_tokens
        return body

    def extract(self, document: Document) -> Extraction:
        if self._client is None:
            self._client = self._groq.Groq(**self._options)
        body = self.request(document)
        for attempt in range(self.max_retries + 1):
            try:
                response = self._client.chat.completions.create(**body)
            except self._groq.APIError as exc:
                delay = self._retry_delay(exc, attempt, document)
                self._sleep(delay)
                continue
            return self.parse(response, document)
        raise AssertionError("unreachable")  # pragma: no cover

    async def aextract(self, document: Document) -> Extraction:
        if self._async_client is None:
            self._async_client = self._groq.AsyncGroq(**self._options)
        body = self.request(document)
        for attempt in range(self.max_retries + 1):
            try:
                response = await self._async_client.chat.completions.create(**body)
            except self._groq.APIError as exc:
                delay = self._retry_delay(exc, attempt, document)
                await self._async_sleep(delay)
                continue
            return self.parse(response, document)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- failures --------------------------------------------------------------------------------
    def _retry_delay(self, exc: Exception, attempt: int, document: Document) -> float:
        """How long to wait before the next attempt; raises when the failure is final."""
        groq = self._groq
        status = getattr(exc, "status_code", None)
        transient = isinstance(exc, groq.APIConnectionError) or (
            status is not None and (status in RETRY_STATUSES or status >= 500))
        if not transient:
            raise self._final(exc, document) from exc
        if attempt >= self.max_retries:
            attempts = f"{attempt + 1} attempt{'s' if attempt else ''}"
            if isinstance(exc, groq.APITimeoutError):
                raise ExtractorError(
                    f"{document.name}: Groq did not answer within {self.timeout:g}s ({attempts}); "
                    "try again later or raise timeout=") from exc
            what = f"HTTP {status}" if status is not None else "a connection error"
            hint = " (rate limited: wait, or lower the request rate)" if status == 429 else ""
            raise ExtractorError(f"{document.name}: Groq failed with {what} after {attempts}"
                                 f"{hint}: {_message(exc)}") from exc
        wait: float = self.backoff * 2 ** attempt * random.uniform(0.5, 1.0)
        asked = _retry_after(getattr(exc, "response", None))
        if asked is not None:
            wait = asked
        return max(0.0, min(wait, self.max_backoff))

    def _final(self, exc: Exception, document: Document) -> Exception:
        groq = self._groq
        if isinstance(exc, groq.AuthenticationError):
            return ExtractorError("Groq refused the API key (HTTP 401): check GROQ_API_KEY")
        if isinstance(exc, groq.PermissionDeniedError):
            return ExtractorError(f"Groq denied access (HTTP 403): {_message(exc)}")
        if isinstance(exc, groq.NotFoundError):
            return ExtractorError(f"Groq does not know model {self.model!r} (HTTP 404): pick "
                                  "another with --model")
        body = getattr(exc, "body", None)
        error = body.get("error", body) if isinstance(body, dict) else None
        if isinstance(error, dict) and error.get("code") == "json_validate_failed":
            failed = str(error.get("failed_generation") or "")
            return ExtractionRejected([Problem(
                code="schema", where=document.name,
                message=f"the model's output did not match the extraction schema ({_message(exc)})"
                        + (f"; it began: {failed[:200]!r}" if failed else ""))], document.name)
        status = getattr(exc, "status_code", None)
        return ExtractorError(f"{document.name}: Groq refused the request (HTTP {status}): "
                              f"{_message(exc)}")

    # -- the answer ------------------------------------------------------------------------------
    def parse(self, response: Any, document: Document) -> Extraction:
        """The extraction in a chat-completion response, or ExtractionRejected saying why not."""
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise _malformed(document, "the response has no choices")
        choice = choices[0]
        content = getattr(choice.message, "content", None)
        if choice.finish_reason == "length":
            raise _malformed(document, "the model's output was cut off at the token limit; raise "
                                       "max_completion_tokens or split the document")
        if not content or not content.strip():
            refusal = getattr(choice.message, "refusal", None)
            raise _malformed(document, "the model returned no content"
                                       + (f" (refusal: {refusal})" if refusal else ""))
        try:
            data = json.loads(content)
        except json.JSONDecodeError as exc:
            raise _malformed(document, f"the model's output is not valid JSON ({exc.msg} at line "
                                       f"{exc.lineno} column {exc.colno}); it began: "
                                       f"{content[:120]!r}") from None
        return parse_extraction(data, where=document.name)


def _malformed(document: Document, message: str) -> ExtractionRejected:
    return ExtractionRejected([Problem(code="malformed-output", where=document.name,
                                       message=message)], document.name)


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return str(getattr(exc, "message", None) or exc)


def _retry_after(response: Any) -> float | None:
    """Seconds the server asks to wait (retry-after-ms, Retry-After seconds or HTTP date)."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if parsed.tzinfo is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())
