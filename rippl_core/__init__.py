"""Rippl: causal and temporal memory for agents, on FalkorDB.

Open a graph, record what each decision rests on, and check a tool call before it runs:

    >>> from rippl_core import Rippl
    >>> with Rippl.open() as rippl:
    ...     rippl.guard("ACT-001")   # raises PremiseRetractedError if a premise was retracted

This module is the whole public surface: every type that appears in a public signature is
importable from here. Framework adapters also use `rippl_core.adapters`, the adapter kit.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rippl_core._runtime.connection import Location
    from rippl_core._runtime.timeutil import TimeLike
    from rippl_core._runtime.validation import CollectionNotStr, SequenceNotStr
    from rippl_core.beliefs.models import Belief, BeliefChange, WhatIf
    from rippl_core.capture.handle import AsyncRun, Run
    from rippl_core.capture.trace import CallTrace, Rested, RunSummary, RunTrace, TurnTrace
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
        CheckpointIntegrityError,
        ConflictError,
        DatabaseError,
        InvalidInputError,
        NoMatchError,
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
        ClaimEvidence,
        Compensation,
        CompensationAttempt,
        CompensationResolution,
        ConsistencyProof,
        Contradiction,
        Event,
        Expired,
        InclusionProof,
        LoadReport,
        Node,
        OnErrorPolicy,
        Override,
        Policy,
        ProvenanceQuery,
        Reached,
        Receipt,
        ReceiptCheck,
        RepeatScope,
        RepeatScopes,
        ReviewItem,
        ReviewKind,
        ReviewStatus,
        Stats,
        StatusChange,
        ToolCall,
        ToolSettings,
        Transition,
        TreeHead,
        UnknownPolicy,
        Verdict,
        Wave,
        WhatIfRetracted,
    )
    from rippl_core.records.model import Record, ScopeSummary
    from rippl_core.records.store import AsyncRecordStore, RecordStore
    from rippl_core.review.contradictions import ContradictionDetector, Judgement
    from rippl_core.review.detectors import DetectorError
    from rippl_core.review.events import AsyncEventStream, EventStream
    from rippl_core.review.receipts import SigningKey
    from rippl_core.vocabulary import Kind, State

# Each public name and the module that defines it. `import rippl_core` imports none of them: a
# name's module is imported the first time the name is used (PEP 562), so a program (or the
# `rippl` command) pays only for what it touches. tests/test_public_surface.py keeps this table
# and the imports above in step.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "rippl_core._runtime.connection": ("Location",),
    "rippl_core._runtime.timeutil": ("TimeLike",),
    "rippl_core._runtime.validation": ("CollectionNotStr", "SequenceNotStr"),
    "rippl_core.beliefs.models": ("Belief", "BeliefChange", "WhatIf"),
    "rippl_core.capture.handle": ("AsyncRun", "Run"),
    "rippl_core.capture.trace": ("CallTrace", "Rested", "RunSummary", "RunTrace", "TurnTrace"),
    "rippl_core.causal.explain": ("Antecedent", "Explanation", "Justification", "Standing"),
    "rippl_core.causal.spec": (
        "ActionEntry", "ClaimEntry", "DecisionEntry", "GraphSpec", "JustificationEntry",
        "SourceEntry",
    ),
    "rippl_core.causal.write": ("LoadProgress",),
    "rippl_core.client": ("AsyncRippl", "PathLike", "Rippl", "Target"),
    "rippl_core.errors": (
        "CheckpointIntegrityError", "ConflictError", "DatabaseError", "InvalidInputError", "NoMatchError",
        "NotFoundError",
        "PremiseRetractedError", "ReplicationError", "ReviewError", "RipplError",
        "UnavailableError",
    ),
    "rippl_core.ingest.document": ("Document",),
    "rippl_core.ingest.extractors.base": ("Extractor",),
    "rippl_core.ingest.pipeline": ("DocumentLike", "Errors", "Progress"),
    "rippl_core.ingest.schema": (
        "ActionItem", "ClaimItem", "DecisionItem", "Extraction", "ExtractionRejected",
        "ExtractorError", "Problem", "SourceItem",
    ),
    "rippl_core.ingest.validate": ("OnConflict",),
    "rippl_core.ingest.writer": (
        "DocumentReport", "IngestedNode", "IngestOutcome", "IngestReport", "IngestStatus",
    ),
    "rippl_core.models": (
        "Blocker", "Compensation", "CompensationAttempt", "CompensationResolution",
        "Event", "Expired", "LoadReport", "Node", "Override",
        "Policy", "Reached", "Receipt", "ReceiptCheck", "ReviewItem", "TreeHead", "InclusionProof",
        "ConsistencyProof", "Stats", "StatusChange", "ToolCall", "ToolSettings", "Transition",
        "Verdict", "Wave", "WhatIfRetracted", "AtRiskPolicy", "UnknownPolicy", "OnErrorPolicy",
        "RepeatScope", "RepeatScopes", "ReviewKind", "ReviewStatus", "ProvenanceQuery",
        "ClaimEvidence", "Contradiction",
    ),
    "rippl_core.records.model": ("Record", "ScopeSummary"),
    "rippl_core.records.store": ("AsyncRecordStore", "RecordStore"),
    "rippl_core.review.contradictions": ("ContradictionDetector", "Judgement"),
    "rippl_core.review.detectors": ("DetectorError",),
    "rippl_core.review.events": ("AsyncEventStream", "EventStream"),
    "rippl_core.review.receipts": ("SigningKey",),
    "rippl_core.vocabulary": ("Kind", "State"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


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
    "CallTrace",
    "CheckpointIntegrityError",
    "ClaimEntry",
    "ClaimEvidence",
    "ClaimItem",
    "CollectionNotStr",
    "Compensation",
    "CompensationAttempt",
    "CompensationResolution",
    "ConflictError",
    "ConsistencyProof",
    "Contradiction",
    "ContradictionDetector",
    "DatabaseError",
    "DecisionEntry",
    "DecisionItem",
    "DetectorError",
    "Document",
    "DocumentLike",
    "DocumentReport",
    "Errors",
    "Event",
    "EventStream",
    "Expired",
    "Explanation",
    "Extraction",
    "ExtractionRejected",
    "Extractor",
    "ExtractorError",
    "GraphSpec",
    "InclusionProof",
    "IngestOutcome",
    "IngestReport",
    "IngestStatus",
    "IngestedNode",
    "InvalidInputError",
    "Judgement",
    "Justification",
    "JustificationEntry",
    "Kind",
    "LoadProgress",
    "LoadReport",
    "Location",
    "NoMatchError",
    "Node",
    "NotFoundError",
    "OnConflict",
    "OnErrorPolicy",
    "Override",
    "PathLike",
    "Policy",
    "PremiseRetractedError",
    "Problem",
    "Progress",
    "ProvenanceQuery",
    "Reached",
    "Receipt",
    "ReceiptCheck",
    "Record",
    "RecordStore",
    "RepeatScope",
    "RepeatScopes",
    "ReplicationError",
    "Rested",
    "ReviewError",
    "ReviewItem",
    "ReviewKind",
    "ReviewStatus",
    "Rippl",
    "RipplError",
    "Run",
    "RunSummary",
    "RunTrace",
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
    "ToolSettings",
    "Transition",
    "TreeHead",
    "TurnTrace",
    "UnavailableError",
    "UnknownPolicy",
    "Verdict",
    "Wave",
    "WhatIf",
    "WhatIfRetracted",
]


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif name == "__version__":
        from importlib import metadata

        try:
            value = metadata.version("rippl-core")
        except metadata.PackageNotFoundError:  # a source tree that is not installed
            value = "0+unknown"
    else:
        raise AttributeError(f"module 'rippl_core' has no attribute {name!r}")
    globals()[name] = value  # the next use is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "__version__"})
