"""The extraction schema: what every extractor (Groq, any LangChain chat model, the structured
Markdown reader) must return. It is the single contract between a document and the causal graph.

Items refer to each other by `ref`, a short local name unique within one extraction (`s1`, `c2`,
`shard09-healthy`). A reference that matches no local `ref` is read as the id of a node already in
the graph (`CLM-001`), and must exist there. Graph ids of new nodes are never chosen by the
extractor: they are derived from the kind and the normalised text (`validation.semantic_id`), so the
same statement made twice, by one document or by two, is one node.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from rippl_core.errors import InvalidInputError, RipplError

_REF = "Short local name of this item, unique within the extraction (for example 's1', 'c2')."
_SECTION = "Heading of the document section where this is stated, if any."
_QUOTE = "A short verbatim excerpt of the document that states this (copied exactly), if any."


class _Item(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid", str_strip_whitespace=True)

    ref: str = Field(min_length=1, max_length=128, description=_REF)
    section: str | None = Field(default=None, description=_SECTION)
    quote: str | None = Field(default=None, description=_QUOTE)
    # Character span [start, end) of the item in the document: set by the structured reader or
    # located by Rippl from `quote`; a model can never set it.
    _span: tuple[int, int] | None = PrivateAttr(default=None)

    @property
    def span(self) -> tuple[int, int] | None:
        return self._span

    def with_span(self, span: tuple[int, int] | None) -> Self:
        self._span = span
        return self


class SourceItem(_Item):
    """Where a claim comes from: a dashboard, a log, a ticket, a person, a runbook, a document."""

    title: str = Field(min_length=1, description="What the source is, e.g. 'Grafana: shard-09 "
                                                   "health dashboard, 2026-10-08 09:00 UTC'.")
    kind: str | None = Field(default=None, description="telemetry, document, ticket, person, "
                                                       "runbook, log, ...")
    uri: str | None = Field(default=None, description="Link to the source, if the document "
                                                      "gives one.")


class ClaimItem(_Item):
    """A statement of fact the document asserts. Each source is its own justification (any one
    suffices); `derived_from` is one more justification (every claim in it is needed)."""

    text: str = Field(min_length=1, description="The claim as one self-contained sentence.")
    sources: list[str] = Field(default_factory=list, description="refs of the sources asserting it.")
    derived_from: list[str] = Field(default_factory=list,
                                    description="refs of claims it is inferred from (all needed).")
    alternatives: list[list[str]] = Field(
        default_factory=list,
        description="Other independent sets of claim refs, each enough on its own to support it.")
    key: str | None = Field(default=None, description="What the claim is about, as SUBJECT/PROPERTY "
                                                      "(e.g. 'shard-09/health'), if it states the "
                                                      "value of one property of one thing.")
    value: str | None = Field(default=None, description="The value it states for that key (e.g. "
                                                        "'degraded'), with `key` only.")


class DecisionItem(_Item):
    """A decision the document records. Its premises and depends_on form one justification (every
    one is needed); each entry of `alternatives` is another, independent justification."""

    title: str = Field(min_length=1, description="The decision, e.g. 'Move billing to shard 09'.")
    premises: list[str] = Field(default_factory=list,
                                description="refs of the claims (or decisions) it rests on.")
    depends_on: list[str] = Field(default_factory=list,
                                  description="refs of earlier decisions it depends on.")
    alternatives: list[list[str]] = Field(
        default_factory=list,
        description="Other independent sets of claim/decision refs that would each justify it.")


class ActionItem(_Item):
    """An action (usually a tool call) taken or planned because of decisions."""

    title: str = Field(min_length=1, description="The action, e.g. 'Migrate the billing tables "
                                                   "to shard 09'.")
    decisions: list[str] = Field(default_factory=list,
                                 description="refs of the decisions that drive it.")
    triggers: list[str] = Field(default_factory=list,
                                description="refs of actions that must run before it.")
    tool: str | None = Field(default=None, description="Tool or command name, only if the "
                                                       "document names one.")
    args: dict[str, Any] | None = Field(default=None, description="Tool arguments, only if the "
                                                                  "document gives them.")
    alternatives: list[list[str]] = Field(
        default_factory=list,
        description="Other independent sets of decision/action refs that would each justify it.")


class Extraction(BaseModel):
    """Sources, claims, decisions and actions found in one document, and how they depend on each
    other. Only include what the document states; never invent ids, links or tool arguments."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid", str_strip_whitespace=True)

    title: str | None = Field(default=None, description="The document's title.")
    sources: list[SourceItem] = Field(default_factory=list)
    claims: list[ClaimItem] = Field(default_factory=list)
    decisions: list[DecisionItem] = Field(default_factory=list)
    actions: list[ActionItem] = Field(default_factory=list)

    def items(self) -> list[SourceItem | ClaimItem | DecisionItem | ActionItem]:
        return [*self.sources, *self.claims, *self.decisions, *self.actions]

    def __len__(self) -> int:
        return len(self.items())


# ---------------------------------------------------------------------------------- problems


class Problem(BaseModel):
    """One reason an extraction cannot be written. `code` is one of: malformed-output, schema,
    duplicate-ref, invalid-value, unknown-reference, disallowed-edge, self-support, conflict."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)

    code: str
    message: str
    ref: str | None = None
    where: str | None = None

    def __str__(self) -> str:
        at = f"{self.where}: " if self.where else ""
        return f"{at}[{self.code}] {self.message}"


class ExtractionRejected(InvalidInputError):
    """The extraction (or the document) has problems; nothing was written. Every problem found is
    in `problems`, not just the first."""

    problems: list[Problem]

    def __init__(self, problems: list[Problem], document: str | None = None) -> None:
        self.problems = list(problems)
        self.document = document
        head = f"{document}: " if document else ""
        lines = [f"{head}rejected with {len(self.problems)} problem(s); nothing was written. "
                 "Fix the document (or the extractor's output) and ingest it again."]
        lines += [f"  - {p}" for p in self.problems]
        super().__init__("\n".join(lines))


class ExtractorError(RipplError):
    """The extractor could not produce an extraction (no API key, the provider failed after
    retries, a timeout...). Nothing was written."""


def schema_problems(exc: ValidationError, *, where: str | None = None) -> list[Problem]:
    """Every error of a pydantic validation, as problems."""
    problems = []
    for error in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in error["loc"]) or "(top level)"
        problems.append(Problem(code="schema", message=f"{loc}: {error['msg']}", where=where))
    return problems


def parse_extraction(data: Any, *, where: str | None = None) -> Extraction:
    """Validate raw data (a dict parsed from JSON or YAML) against the schema."""
    if isinstance(data, Extraction):
        return data
    if not isinstance(data, dict):
        raise ExtractionRejected([Problem(
            code="malformed-output", where=where,
            message=f"expected a JSON object with sources, claims, decisions and actions, got "
                    f"{type(data).__name__}")])
    try:
        return Extraction.model_validate(data)
    except ValidationError as exc:
        raise ExtractionRejected(schema_problems(exc, where=where)) from None


def extraction_json_schema() -> dict[str, Any]:
    """The JSON schema of `Extraction` with every `$ref` inlined (some providers refuse `$defs`)."""
    schema = Extraction.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = defs[node["$ref"].rsplit("/", 1)[-1]]
                merged = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
                return inline(merged)
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    inlined: dict[str, Any] = inline(schema)
    return inlined
