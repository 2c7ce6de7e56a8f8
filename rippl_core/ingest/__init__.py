"""Ingestion: documents (postmortems, RFCs, ADRs, telemetry audits) into the causal graph.

    >>> from rippl_core import Rippl
    >>> from rippl_core.ingest import StructuredExtractor
    >>> with Rippl.open() as rippl:
    ...     report = rippl.ingest(["postmortem.md", "rfc.md"], extractor=StructuredExtractor())

An extractor turns a document into an `Extraction` (the schema every extractor shares);
validation reports every problem before anything is written; the writer gives each node a
deterministic id from its kind and normalised text, so the same statement is one node however
often and wherever it is stated, and records where each node was stated (`provenance`).
The groq and langchain-core packages are imported only when their extractor is created.
"""

from rippl_core.ingest.document import Document
from rippl_core.ingest.extractors import (
    ChatModelExtractor,
    Extractor,
    GroqExtractor,
    StructuredExtractor,
    get_extractor,
    to_markdown,
)
from rippl_core.ingest.schema import (
    ActionItem,
    ClaimItem,
    DecisionItem,
    Extraction,
    ExtractionRejected,
    ExtractorError,
    Problem,
    SourceItem,
    extraction_json_schema,
)
from rippl_core.ingest.validate import Plan, plan
from rippl_core.ingest.writer import DocumentReport, IngestedNode, IngestReport

__all__ = [
    "ActionItem",
    "ChatModelExtractor",
    "ClaimItem",
    "DecisionItem",
    "Document",
    "DocumentReport",
    "Extraction",
    "ExtractionRejected",
    "Extractor",
    "ExtractorError",
    "GroqExtractor",
    "IngestReport",
    "IngestedNode",
    "Plan",
    "Problem",
    "SourceItem",
    "StructuredExtractor",
    "extraction_json_schema",
    "get_extractor",
    "plan",
    "to_markdown",
]
