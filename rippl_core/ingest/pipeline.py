"""The ingestion pipeline behind `Rippl.ingest(...)` and `await AsyncRippl.ingest(...)`.

Each document is extracted, planned, validated against the graph and written in one atomic
commit; a rejected document writes nothing and does not stop the others unless `errors="raise"`.
The pipeline is one generator of steps (`Extract` a document, `Write` a plan) that the sync and the
async handle each drive: the extractor's I/O and the graph's are theirs, the logic is shared.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from rippl_core._runtime.op import Op
from rippl_core._runtime.steps import adrive as steps_adrive
from rippl_core._runtime.steps import drive as steps_drive
from rippl_core._runtime.timeutil import now_ms
from rippl_core._runtime.validation import check_collection
from rippl_core.errors import InvalidInputError
from rippl_core.ingest.document import Document
from rippl_core.ingest.extractors.base import Extractor, aextract
from rippl_core.ingest.schema import Extraction, ExtractionRejected, ExtractorError, parse_extraction
from rippl_core.ingest.validate import OnConflict, Plan, plan
from rippl_core.ingest.writer import DocumentReport, IngestReport, iso, rejected, write_plan

type DocumentLike = str | os.PathLike[str] | Document
type Errors = Literal["raise", "report"]
type Progress = Callable[[str, DocumentReport | None], None]


def as_documents(documents: DocumentLike | Iterable[DocumentLike]) -> list[DocumentLike]:
    """One document or several: a path (str or Path) or a `Document` (text already in memory)."""
    if isinstance(documents, str | os.PathLike | Document):
        return [documents]
    items: list[str | os.PathLike[str] | Document] = []
    for item in check_collection(documents, what="documents", item="file path or Document"):
        if not isinstance(item, str | os.PathLike | Document):
            raise InvalidInputError(f"cannot ingest a {type(item).__name__}; give file paths or "
                                    "rippl_core.ingest.Document objects")
        items.append(item)
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


def default_extractor(extractor: Extractor | None) -> Extractor:
    """The extractor to use: the structured Markdown format (no model) unless one is given."""
    if extractor is None:
        from rippl_core.ingest.extractors.structured import StructuredExtractor

        return StructuredExtractor()
    if not isinstance(extractor, Extractor):
        raise InvalidInputError("extractor must have a name, a model and extract(document); use "
                                "StructuredExtractor, GroqExtractor or ChatModelExtractor")
    return extractor


@dataclass(frozen=True)
class Extract:
    """A step: run the extractor on this document (the driver answers with an `Extraction`)."""

    document: Document


@dataclass(frozen=True)
class Write:
    """A step: run this operation on the graph (a write unless `dry_run`)."""

    make: Callable[[], Op[DocumentReport]]
    write: bool


type Steps[T] = Generator[Extract | Write, Any, T]


def ingest_steps(documents: DocumentLike | Iterable[DocumentLike], extractor: Extractor, *,
                 dry_run: bool, on_conflict: OnConflict, errors: Errors,
                 progress: Progress | None) -> Steps[IngestReport]:
    """Ingest documents one by one: extract, plan, validate, write (each all or nothing)."""
    run = _Run(extractor.name, getattr(extractor, "model", None), dry_run, on_conflict, errors)
    reports: list[DocumentReport] = []
    earlier: set[str] = set()
    for item in as_documents(documents):
        if progress is not None:
            progress(_name(item), None)
        try:
            document = item if isinstance(item, Document) else Document.from_path(item)
            extraction = yield Extract(document)
            now = now_ms()
            p = run.plan(document, extraction, now)
            report = yield Write(run.op(p, now, frozenset(earlier)), not dry_run)
        except (ExtractionRejected, ExtractorError, InvalidInputError) as exc:
            report = run.failed(_name(item), exc)
        earlier |= {n.id for n in report.nodes}
        reports.append(report)
        if progress is not None:
            progress(_name(item), report)
    return IngestReport(documents=reports)


def extraction_steps(extraction: Extraction | dict[str, Any], *, document: Document | str | None,
                     extractor: str, model: str | None, dry_run: bool,
                     on_conflict: OnConflict) -> Steps[DocumentReport]:
    """Write an extraction the caller already has, with the same validation."""
    doc = Document(document, "") if isinstance(document, str) else document
    run = _Run(extractor, model, dry_run, on_conflict, "raise")
    now = now_ms()
    p = run.plan(doc, extraction, now)
    report: DocumentReport = yield Write(run.op(p, now, frozenset()), not dry_run)
    return report


def drive[T](steps: Steps[T], extractor: Extractor, run: Callable[..., Any]) -> T:
    """Run the steps with a sync extractor and a sync driver's `run`."""
    return steps_drive(steps, lambda step: extractor.extract(step.document)
                       if isinstance(step, Extract) else run(step.make, write=step.write))


async def adrive[T](steps: Steps[T], extractor: Extractor, run: Callable[..., Any]) -> T:
    """Run the steps with an async extractor (or a sync one in a thread) and an async `run`."""

    async def do(step: Extract | Write) -> Any:
        if isinstance(step, Extract):
            return await aextract(extractor, step.document)
        return await run(step.make, write=step.write)

    return await steps_adrive(steps, do)
