"""`ChatModelExtractor`: extraction with any LangChain chat model (OpenAI, Anthropic, Ollama, Groq
through LangChain...) via `with_structured_output(Extraction)`.

Install with the `langchain` extra; langchain-core is imported only when an extractor is created.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from rippl_core.ingest.document import Document
from rippl_core.ingest.extractors.prompt import SYSTEM_PROMPT, user_prompt
from rippl_core.ingest.schema import (
    Extraction,
    ExtractionRejected,
    ExtractorError,
    Problem,
    parse_extraction,
    schema_problems,
)

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


def _base_chat_model() -> type[BaseChatModel]:
    try:
        from langchain_core.language_models import BaseChatModel
    except ImportError:  # pragma: no cover - depends on the installation
        raise ExtractorError('langchain-core is not installed: pip install "rippl-core[langchain]"') \
            from None
    return BaseChatModel


class ChatModelExtractor:
    """Extract with a LangChain `BaseChatModel`. `method` is passed to `with_structured_output`
    when given (e.g. "json_schema" or "function_calling"); by default the model's own default.
    Provider errors (network, auth, rate limits after the model's own retries) become
    ExtractorError; output that does not fit the schema becomes ExtractionRejected."""

    model: str | None

    name = "langchain"

    def __init__(self, chat_model: Any, *, method: str | None = None,
                 model: str | None = None) -> None:
        if not isinstance(chat_model, _base_chat_model()):
            raise ExtractorError(f"ChatModelExtractor needs a LangChain BaseChatModel, got "
                                 f"{type(chat_model).__name__}")
        self.chat_model = chat_model
        self.method = method
        self.model = model or _model_name(chat_model)
        kwargs: dict[str, Any] = {"include_raw": True}
        if method is not None:
            kwargs["method"] = method
        try:
            self._runnable = chat_model.with_structured_output(Extraction, **kwargs)
        except NotImplementedError:
            raise ExtractorError(f"{type(chat_model).__name__} does not support structured output "
                                 "(with_structured_output); use a model with tool calling or JSON "
                                 "schema support") from None

    def _input(self, document: Document) -> list[tuple[str, str]]:
        return [("system", SYSTEM_PROMPT), ("human", user_prompt(document))]

    def extract(self, document: Document) -> Extraction:
        with _model_failures(document):
            result = self._runnable.invoke(self._input(document))
        return self._result(result, document)

    async def aextract(self, document: Document) -> Extraction:
        with _model_failures(document):
            result = await self._runnable.ainvoke(self._input(document))
        return self._result(result, document)

    def _result(self, result: Any, document: Document) -> Extraction:
        if not isinstance(result, dict):  # a model overriding with_structured_output without raw
            return parse_extraction(_plain(result), where=document.name)
        parsed, error = result.get("parsed"), result.get("parsing_error")
        if error is not None:
            cause = error if isinstance(error, ValidationError) else error.__cause__
            if isinstance(cause, ValidationError):
                raise ExtractionRejected(schema_problems(cause, where=document.name), document.name)
            raise ExtractionRejected([Problem(
                code="malformed-output", where=document.name,
                message=f"the model's output could not be parsed: {error}")], document.name)
        if parsed is None:
            raw = result.get("raw")
            content = getattr(raw, "content", "")
            raise ExtractionRejected([Problem(
                code="malformed-output", where=document.name,
                message="the model answered without a structured extraction"
                        + (f"; it said: {str(content)[:160]!r}" if content else ""))], document.name)
        return parse_extraction(_plain(parsed), where=document.name)


def _plain(value: Any) -> Any:
    """An Extraction (ours) as it is; another model or a dict as plain data to validate."""
    if isinstance(value, Extraction):
        return value
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return value


def _model_name(chat_model: Any) -> str | None:
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(chat_model, attribute, None)
        if isinstance(value, str) and value:
            return value
    try:
        return str(chat_model._llm_type)
    except Exception:
        return type(chat_model).__name__


def load_chat_model(path: str, *, model: str | None = None) -> Any:
    """Import a chat model from 'package.module:attribute' (or 'package.module.attribute'): a
    BaseChatModel instance, or a class or factory called with no arguments (or model=...)."""
    module_name, _, attribute = path.partition(":") if ":" in path else path.rpartition(".")
    if not module_name or not attribute:
        raise ExtractorError(f"langchain:{path} is not an import path; write it as "
                             "package.module:name (a chat model, its class or a factory)")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ExtractorError(f"cannot import {path}: {exc}") from None
    base = _base_chat_model()
    if isinstance(target, base):
        return target
    if callable(target):
        try:
            made = target(model=model) if model else target()
        except Exception as exc:
            raise ExtractorError(f"{path}() failed: {type(exc).__name__}: {exc}") from exc
        if isinstance(made, base):
            return made
        raise ExtractorError(f"{path}() returned a {type(made).__name__}, not a LangChain chat model")
    raise ExtractorError(f"{path} is a {type(target).__name__}, not a LangChain chat model")


@contextmanager
def _model_failures(document: Document) -> Iterator[None]:
    """A chat model's own failure as an ExtractorError naming the document (Rippl's own errors
    pass)."""
    try:
        yield
    except (ExtractionRejected, ExtractorError):
        raise
    except Exception as exc:
        raise ExtractorError(f"{document.name}: the chat model failed: "
                             f"{type(exc).__name__}: {exc}") from exc
