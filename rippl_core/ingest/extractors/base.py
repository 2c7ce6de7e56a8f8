"""What an extractor is: something that turns a `Document` into an `Extraction`."""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from rippl_core.ingest.document import Document
from rippl_core.ingest.schema import Extraction


@runtime_checkable
class Extractor(Protocol):
    """Turns one document into an `Extraction`.

    `extract` raises `ExtractionRejected` (with every problem) when the output does not fit the
    schema, and `ExtractorError` when no output could be had (no key, provider down, timeout).
    `name` and `model` are recorded in the provenance of every node written.
    """

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str | None: ...

    def extract(self, document: Document) -> Extraction: ...


async def aextract(extractor: Extractor, document: Document) -> Extraction:
    """Run an extractor from asyncio: its own `aextract` when it has one, else in a thread."""
    native = getattr(extractor, "aextract", None)
    if native is not None:
        result: Extraction = await native(document)
        return result
    return await asyncio.to_thread(extractor.extract, document)
