"""Rippl: causal and temporal memory for agents, on FalkorDB.

Open a graph, record what each decision rests on, and check a tool call before it runs:

    >>> from rippl_core import Rippl
    >>> with Rippl.open() as rippl:
    ...     rippl.guard("ACT-001")   # raises PremiseRetractedError if a premise was retracted

This module is the whole public surface: every type that appears in a public signature is
importable from here. Framework adapters also use `rippl_core.adapters`, the adapter kit.
"""

from importlib import metadata as _metadata

from rippl_core._runtime.connection import Location
from rippl_core._runtime.timeutil import TimeLike
from rippl_core._runtime.validation import CollectionNotStr, SequenceNotStr
from rippl_core.beliefs.models import Belief, BeliefChange, WhatIf
from rippl_core.capture.handle import AsyncRun, Run
from rippl_core.causal.explain import Antecedent, Explanation, Justification, Standing
from rippl_core.causal.spec import (
    ActionEntry,
    ClaimEntry,
    DecisionEntry,
    GraphSpec,
    JustificationEntry,
    SourceEntry,
)
from rippl_core.causal.write import LoadProgress
from rippl_core.client import AsyncRippl, PathLike, Rippl, Target
from rippl_core.errors import (
    ConflictError,
    DatabaseError,
    InvalidInputError,
    NotFoundError,
    PremiseRetractedError,
    ReplicationError,
    ReviewError,
    RipplError,
    UnavailableError,
)
from rippl_core.ingest.document import Document
from rippl_core.ingest.extractors.base import Extractor
from rippl_core.ingest.pipeline import DocumentLike, Errors, Progress
from rippl_core.ingest.schema import (
    ActionItem,
    ClaimItem,
    DecisionItem,
    Extraction,
    ExtractionRejected,
    ExtractorError,
    Problem,
    SourceItem,
)
from rippl_core.ingest.validate import OnConflict
from rippl_core.ingest.writer import (
    DocumentReport,
    IngestedNode,
    IngestOutcome,
    IngestReport,
    IngestStatus,
)
from rippl_core.models import (
    AtRiskPolicy,
    Blocker,
    Compensation,
    Event,
    LoadReport,
    Node,
    OnErrorPolicy,
    Policy,
    Reached,
    Receipt,
    ReceiptCheck,
    ReviewItem,
    ReviewStatus,
    Stats,
    StatusChange,
    ToolCall,
    Transition,
    UnknownPolicy,
    Verdict,
    Wave,
    WhatIfRetracted,
)
from rippl_core.records.model import Record, ScopeSummary
from rippl_core.records.store import AsyncRecordStore, RecordStore
from rippl_core.review.events import AsyncEventStream, EventStream
from rippl_core.review.receipts import SigningKey
from rippl_core.vocabulary import Kind, State

try:
    __version__ = _metadata.version("rippl-core")
except _metadata.PackageNotFoundError:  # a source tree that is not installed
    __version__ = "0+unknown"

__all__ = [
    "ActionEntry",
    "ActionItem",
    "Antecedent",
    "AsyncEventStream",
    "AsyncRecordStore",
    "AsyncRippl",
    "AsyncRun",
    "AtRiskPolicy",
    "Belief",
    "BeliefChange",
    "Blocker",
    "ClaimEntry",
    "ClaimItem",
    "CollectionNotStr",
    "Compensation",
    "ConflictError",
    "DatabaseError",
    "DecisionEntry",
    "DecisionItem",
    "Document",
    "DocumentLike",
    "DocumentReport",
    "Errors",
    "Event",
    "EventStream",
    "Explanation",
    "Extraction",
    "ExtractionRejected",
    "Extractor",
    "ExtractorError",
    "GraphSpec",
    "IngestOutcome",
    "IngestReport",
    "IngestStatus",
    "IngestedNode",
    "InvalidInputError",
    "Justification",
    "JustificationEntry",
    "Kind",
    "LoadProgress",
    "LoadReport",
    "Location",
    "Node",
    "NotFoundError",
    "OnConflict",
    "OnErrorPolicy",
    "PathLike",
    "Policy",
    "PremiseRetractedError",
    "Problem",
    "Progress",
    "Reached",
    "Receipt",
    "ReceiptCheck",
    "Record",
    "RecordStore",
    "ReplicationError",
    "ReviewError",
    "ReviewItem",
    "ReviewStatus",
    "Rippl",
    "RipplError",
    "Run",
    "ScopeSummary",
    "SequenceNotStr",
    "SigningKey",
    "SourceEntry",
    "SourceItem",
    "Standing",
    "State",
    "Stats",
    "StatusChange",
    "Target",
    "TimeLike",
    "ToolCall",
    "Transition",
    "UnavailableError",
    "UnknownPolicy",
    "Verdict",
    "Wave",
    "WhatIf",
    "WhatIfRetracted",
]
