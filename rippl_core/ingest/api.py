"""Ingestion on the handles: `Rippl.ingest(...)` and `await AsyncRippl.ingest(...)`.

Each document is extracted, planned, validated against the graph and written in one atomic
commit; a rejected document writes nothing and does not stop the others unless `errors="raise"`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rippl_core.errors import InvalidInputError
from rippl_core.ingest.document import Document
from rippl_core.ingest.extractors.base import Extractor, aextract
from rippl_core.ingest.schema import Extraction, ExtractionRejected, ExtractorError, parse_extraction
from rippl_core.ingest.validate import OnConflict, Plan, plan
from rippl_core.ingest.writer import DocumentReport, IngestReport, iso, rejected, write_plan
from rippl_core.timeutil import now_ms

if TYPE_CHECKING:
    from rippl_core.driver import AsyncDriver, SyncDriver

type DocumentLike = str | os.PathLike[str] | Document
type Errors = Literal["raise", "report"]
type Progress = Callable[[str, DocumentReport | None], None]


def as_documents(documents: DocumentLike | Iterable[DocumentLike]) -> list[DocumentLike]:
    """One document or several: a path (str or Path) or a `Document` (text already in memory)."""
    if isinstance(documents, str | os.PathLike | Document):
        return [documents]
    items = list(documents)
    for item in items:
        if not isinstance(item, str | os.PathLike | Document):
            raise InvalidInputError(f"cannot ingest a {type(item).__name__}; give file paths or "
                                    "rippl_core.ingest.Document objects")
    return items


def _name(item: DocumentLike) -> str:
    return item.name if isinstance(item, Document) else os.fspath(item)


@dataclass
class _Run:
    """The shared, I/O-free part of ingesting one document."""

    name: str
    model: str | None
    dry_run: bool
    on_conflict: OnConflict
    errors: Errors

    def __post_init__(self) -> None:
        if self.on_conflict not in ("justify", "reject"):
            raise InvalidInputError("on_conflict must be 'justify' (add an alternative "
                                    "justification) or 'reject'")
        if self.errors not in ("raise", "report"):
            raise InvalidInputError("errors must be 'raise' or 'report'")

    def plan(self, document: Document | None, extraction: Extraction | dict[str, Any],
             now: int) -> Plan:
        where = document.name if document else None
        try:
            parsed = parse_extraction(extraction, where=where)
        except ExtractionRejected as exc:
            raise ExtractionRejected(exc.problems, where) from None
        return plan(parsed, document, extractor=self.name, model=self.model, at=iso(now))

    def op(self, p: Plan, now: int, earlier: frozenset[str]) -> Any:
        return lambda: write_plan(p, extractor=self.name, model=self.model, now=now,
                                  dry_run=self.dry_run, on_conflict=self.on_conflict,
                                  earlier=earlier)

    def failed(self, name: str, exc: Exception) -> DocumentReport:
        if self.errors == "raise":
            raise exc
        problems = exc.problems if isinstance(exc, ExtractionRejected) else []
        return rejected(name, self.name, self.model, exc, problems)


def _default(extractor: Extractor | None) -> Extractor:
    if extractor is None:
        from rippl_core.ingest.extractors.structured import StructuredExtractor

        return StructuredExtractor()
    if not isinstance(extractor, Extractor):
        raise InvalidInputError("extractor must have a name, a model and extract(document); use "
                                "StructuredExtractor, GroqExtractor or ChatModelExtractor")
    return extractor


class IngestMethods:
    """Documents into the causal graph (sync)."""

    _driver: SyncDriver

    def ingest(self, documents: DocumentLike | Iterable[DocumentLike], *,
               extractor: Extractor | None = None, dry_run: bool = False,
               on_conflict: OnConflict = "justify", errors: Errors = "raise",
               progress: Progress | None = None) -> IngestReport:
        """Extract each document (default: the structured Markdown format, no model), validate it
        and write it in one atomic commit. A rejected document raises ExtractionRejected (with
        every problem) unless errors="report", which records it and goes on. `progress` is called
        with (name, None) when a document starts and (name, report) when it is done."""
        chosen = _default(extractor)
        run = _Run(chosen.name, getattr(chosen, "model", None), dry_run, on_conflict, errors)
        reports: list[DocumentReport] = []
        earlier: set[str] = set()
        for item in as_documents(documents):
            if progress is not None:
                progress(_name(item), None)
            try:
                document = item if isinstance(item, Document) else Document.from_path(item)
                extraction = chosen.extract(document)
                now = now_ms()
                p = run.plan(document, extraction, now)
                report = self._driver.run(run.op(p, now, frozenset(earlier)), write=not dry_run)
            except (ExtractionRejected, ExtractorError, InvalidInputError) as exc:
                report = run.failed(_name(item), exc)
            earlier |= {n.id for n in report.nodes}
            reports.append(report)
            if progress is not None:
                progress(_name(item), report)
        return IngestReport(documents=reports)

    def ingest_extraction(self, extraction: Extraction | dict[str, Any], *,
                          document: Document | str | None = None, extractor: str = "manual",
                          model: str | None = None, dry_run: bool = False,
                          on_conflict: OnConflict = "justify") -> DocumentReport:
        """Write an extraction you already have (from your own pipeline), with the same validation.
        `document` (a Document, for spans and sections, or just a name) goes into provenance."""
        doc = Document(document, "") if isinstance(document, str) else document
        run = _Run(extractor, model, dry_run, on_conflict, "raise")
        now = now_ms()
        p = run.plan(doc, extraction, now)
        return self._driver.run(run.op(p, now, frozenset()), write=not dry_run)


class AsyncIngestMethods:
    """Documents into the causal graph (asyncio): the same steps, awaited."""

    _driver: AsyncDriver

    async def ingest(self, documents: DocumentLike | Iterable[DocumentLike], *,
                     extractor: Extractor | None = None, dry_run: bool = False,
                     on_conflict: OnConflict = "justify", errors: Errors = "raise",
                     progress: Progress | None = None) -> IngestReport:
        chosen = _default(extractor)
        run = _Run(chosen.name, getattr(chosen, "model", None), dry_run, on_conflict, errors)
        reports: list[DocumentReport] = []
        earlier: set[str] = set()
        for item in as_documents(documents):
            if progress is not None:
                progress(_name(item), None)
            try:
                document = item if isinstance(item, Document) else Document.from_path(item)
                extraction = await aextract(chosen, document)
                now = now_ms()
                p = run.plan(document, extraction, now)
                report = await self._driver.run(run.op(p, now, frozenset(earlier)),
                                                write=not dry_run)
            except (ExtractionRejected, ExtractorError, InvalidInputError) as exc:
                report = run.failed(_name(item), exc)
            earlier |= {n.id for n in report.nodes}
            reports.append(report)
            if progress is not None:
                progress(_name(item), report)
        return IngestReport(documents=reports)

    async def ingest_extraction(self, extraction: Extraction | dict[str, Any], *,
                                document: Document | str | None = None, extractor: str = "manual",
                                model: str | None = None, dry_run: bool = False,
                                on_conflict: OnConflict = "justify") -> DocumentReport:
        doc = Document(document, "") if isinstance(document, str) else document
        run = _Run(extractor, model, dry_run, on_conflict, "raise")
        now = now_ms()
        p = run.plan(doc, extraction, now)
        return await self._driver.run(run.op(p, now, frozenset()), write=not dry_run)
