"""Extractors: the structured Markdown reader (no model), Groq, and any LangChain chat model."""

from __future__ import annotations

from rippl_core.ingest.extractors.base import Extractor, aextract
from rippl_core.ingest.extractors.groq_extractor import DEFAULT_MODEL, GroqExtractor
from rippl_core.ingest.extractors.langchain_extractor import ChatModelExtractor, load_chat_model
from rippl_core.ingest.extractors.structured import StructuredExtractor, to_markdown
from rippl_core.ingest.schema import ExtractorError


def get_extractor(spec: str, *, model: str | None = None) -> Extractor:
    """An extractor by name: 'structured', 'groq' or 'langchain:<package.module:name>'."""
    if spec == "structured":
        if model is not None:
            raise ExtractorError("the structured extractor uses no model; drop --model")
        return StructuredExtractor()
    if spec == "groq":
        return GroqExtractor(model or DEFAULT_MODEL)
    if spec.startswith("langchain:"):
        return ChatModelExtractor(load_chat_model(spec.removeprefix("langchain:"), model=model))
    raise ExtractorError(f"unknown extractor {spec!r}: use structured, groq or "
                         "langchain:<package.module:name>")


__all__ = ["ChatModelExtractor", "Extractor", "GroqExtractor", "StructuredExtractor", "aextract",
           "get_extractor", "load_chat_model", "to_markdown"]
