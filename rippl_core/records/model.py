"""A record (a memory) and the validation of what a record store takes: scopes, categories,
metadata, embeddings, limits, and the time of a read (`view_of`)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from rippl_core._runtime.timeutil import TimeLike, read_times
from rippl_core._runtime.validation import canonical_json, check_collection, check_id, check_text
from rippl_core.errors import InvalidInputError
from rippl_core.vocabulary import Kind, State, public_status

MAX_METADATA_BYTES = 64_000


MAX_EMBEDDING_SIZE = 65_536


MAX_CATEGORIES = 256


class Record(BaseModel):
    """A text record (a memory) and the claim it states.

    On input, `claim` names an existing claim the record states; left None, the claim is derived
    from the content and supported by a source for `source`. A record read back carries the claim
    derived from its content; saved again with new content, its claim is derived again. On
    output, `version`, the validity interval and the claim's status are filled in: `claim_state`
    at the time asked (now, or as of), `claim_state_now` now.
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)

    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    content: str
    scope: str = "/"
    categories: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    importance: float = 0.5
    embedding: list[float] | None = None
    source: str | None = None
    private: bool = False
    created_at: datetime | None = None
    last_accessed: datetime | None = None
    claim: str | None = None
    version: int = 0
    claim_state: State | None = None
    claim_state_now: State | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    recorded_at: datetime | None = None

    @property
    def claim_status(self) -> str | None:
        """The claim's public status at the time asked (Verified, Proposed Retraction, Retracted)."""
        return public_status(Kind.CLAIM, self.claim_state) if self.claim_state else None

    @property
    def claim_status_now(self) -> str | None:
        return public_status(Kind.CLAIM, self.claim_state_now) if self.claim_state_now else None


class ScopeSummary(BaseModel):
    """What a scope holds: record count (sub-scopes included), categories, time range, children."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)

    path: str
    count: int
    categories: dict[str, int]
    oldest: datetime | None
    newest: datetime | None
    children: list[str]


type View = tuple[int, int] | None  # (valid time t, transaction time known), or None for now


def check_store(store: object) -> str:
    return check_id(store, what="store")


def normalise_scope(scope: object, *, what: str = "scope") -> str:
    """'/a/b' form: a leading slash, no trailing or doubled slashes; '' and '/' are the root."""
    if not isinstance(scope, str):
        raise InvalidInputError(f"{what} must be a string like '/team/project', "
                                f"got {type(scope).__name__}")
    if not scope.isprintable() or len(scope) > 1024:
        raise InvalidInputError(f"{what}={scope!r} must be printable and at most 1024 characters")
    parts = [p.strip() for p in scope.split("/")]
    return "/" + "/".join(p for p in parts if p)


def scope_prefix(prefix: str | None) -> str | None:
    """A scope filter: None (or the root) matches everything."""
    if prefix is None:
        return None
    scope = normalise_scope(prefix, what="scope_prefix")
    return None if scope == "/" else scope


def check_categories(values: Iterable[object] | None, *, what: str = "categories") -> list[str]:
    if values is None:
        return []
    seen: dict[str, None] = {}
    for value in check_collection(values, what=what, item="string"):
        seen[check_text(value, what="category")] = None
    if len(seen) > MAX_CATEGORIES:
        raise InvalidInputError(f"a record has at most {MAX_CATEGORIES} categories")
    return list(seen)


def check_metadata(metadata: object) -> str:
    """Canonical JSON of a metadata mapping (string keys, JSON values)."""
    if metadata is None:
        return "{}"
    return canonical_json(metadata, what="metadata", limit=MAX_METADATA_BYTES, default=_json_default)


def record_ids(ids: object) -> list[str]:
    """Record ids given as a list (a filter, or the records to touch)."""
    return [check_id(i, what="record id") for i in check_collection(ids, what="ids", item="record id")]


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def check_vector(vector: object, *, what: str = "embedding") -> list[float]:
    values: Sequence[object]
    if isinstance(vector, str | bytes):
        raise InvalidInputError(f"{what} must be a list of numbers")
    if hasattr(vector, "tolist"):  # numpy arrays too
        values = vector.tolist()
    elif isinstance(vector, Sequence):
        values = list(vector)
    else:
        raise InvalidInputError(f"{what} must be a list of numbers")
    if not values:
        raise InvalidInputError(f"{what} is empty")
    if len(values) > MAX_EMBEDDING_SIZE:
        raise InvalidInputError(f"{what} has {len(values)} dimensions; the limit is "
                                f"{MAX_EMBEDDING_SIZE}")
    out = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InvalidInputError(f"{what} must hold finite numbers, found {value!r}")
        out.append(float(value))
    if not any(out):
        raise InvalidInputError(f"{what} is all zeros; cosine similarity is undefined for it")
    return out


def check_importance(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not 0.0 <= value <= 1.0:
        raise InvalidInputError(f"importance must be a number from 0 to 1, got {value!r}")
    return float(value)


def check_limit(value: object, *, what: str = "limit") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{what} must be a non-negative integer, got {value!r}")
    return value


def view_of(as_of: TimeLike | None, known_at: TimeLike | None) -> View:
    """None for the current view, else (valid time, transaction time), each defaulting to now."""
    if as_of is None and known_at is None:
        return None
    return read_times(as_of, known_at)
