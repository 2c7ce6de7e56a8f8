"""The structured format: Markdown with the graph written by hand, no LLM, works offline.

The graph is read from YAML in the front matter and/or in fenced blocks whose info string is
`rippl`, anywhere in the document; items of every block are gathered into one extraction:

    ---
    title: "Postmortem: checkout latency, 2026-10-08"
    ---
    # Postmortem
    ## Evidence
    ```rippl
    sources:
      - ref: grafana-09
        title: "Grafana: shard-09 health dashboard, 2026-10-08 09:00 UTC"
        kind: telemetry
    claims:
      - ref: shard-09-healthy
        text: Shard 09 is healthy
        sources: [grafana-09]
    ```

Each item records the character span of its YAML in the document and the heading path of the
section it sits in. See docs/ingestion.md for every field.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from rippl_core.ingest.document import HEADING, Document
from rippl_core.ingest.schema import (
    ActionItem,
    ClaimItem,
    DecisionItem,
    Extraction,
    ExtractionRejected,
    Problem,
    SourceItem,
    schema_problems,
)

INFO_STRING = "rippl"
GRAPH_KEYS: dict[str, type[BaseModel]] = {"sources": SourceItem, "claims": ClaimItem,
                                          "decisions": DecisionItem, "actions": ActionItem}
_FRONT_MATTER_GRAPH = set(GRAPH_KEYS)


class StructuredExtractor:
    """Reads the structured Markdown format (front matter and ```rippl blocks). No model."""

    name = "structured"
    model: str | None = None

    def extract(self, document: Document) -> Extraction:
        problems: list[Problem] = []
        collected: dict[str, list[Any]] = {key: [] for key in GRAPH_KEYS}
        title, body_start = self._front_matter(document, collected, problems)
        found = body_start is not None and any(collected.values())
        for start, end, info in document.fences:
            words = info.split()
            if not words or words[0] != INFO_STRING:
                continue
            found = True
            self._block(document, start, end, collected, problems, front_matter=False)
        if not found and not problems:
            problems.append(Problem(
                code="malformed-output", where=document.name,
                message="no ```rippl block and no graph in the front matter: write the sources, "
                        "claims, decisions and actions in a ```rippl block (docs/ingestion.md), "
                        "or ingest prose with an LLM extractor (--extractor groq)"))
        if problems:
            raise ExtractionRejected(problems, document.name)
        if title is None:
            first = next((h for h in document.headings if h.level == 1), None)
            title = first.title if first else None
        return Extraction(title=title, **collected)

    def _front_matter(self, document: Document, collected: dict[str, list[Any]],
                      problems: list[Problem]) -> tuple[str | None, int | None]:
        text = document.text
        if not text.startswith("---\n"):
            return None, None
        end = text.find("\n---", 3)
        while end >= 0 and text[end + 4: end + 5] not in ("\n", ""):
            end = text.find("\n---", end + 4)
        if end < 0:
            problems.append(Problem(code="malformed-output", where=f"{document.name}:1",
                                    message="the front matter opened by '---' is never closed"))
            return None, None
        data = self._block(document, 4, end + 1, collected, problems, front_matter=True)
        title = data.get("title") if isinstance(data, dict) else None
        return (str(title) if title is not None else None), end + 4

    def _block(self, document: Document, start: int, end: int, collected: dict[str, list[Any]],
               problems: list[Problem], *, front_matter: bool) -> Any:
        body = document.text[start:end]
        where = f"{document.name}:{document.line_of(start)}"
        loader = yaml.SafeLoader(body)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = document.line_of(start) + (mark.line if mark is not None else 0)
            problems.append(Problem(code="malformed-output", where=f"{document.name}:{line}",
                                    message=f"not valid YAML: {_yaml_message(exc)}"))
            return None
        finally:
            loader.dispose()
        if data is None:
            return None
        if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
            problems.append(Problem(code="schema", where=where, message=(
                "a rippl block is a YAML mapping with any of sources, claims, decisions, actions")))
            return None
        duplicated = _duplicate_keys(node)
        for key_node, value_node in node.value:
            key = key_node.value
            if key in duplicated:
                problems.append(Problem(
                    code="schema", where=f"{document.name}:"
                                         f"{document.line_of(start + key_node.start_mark.index)}",
                    message=f"{key!r} appears more than once in this block; YAML keeps only the "
                            "last, so write every item under one key"))
                continue
            if key not in GRAPH_KEYS:
                if not front_matter:
                    problems.append(Problem(
                        code="schema", where=f"{document.name}:"
                                             f"{document.line_of(start + key_node.start_mark.index)}",
                        message=f"unknown key {key!r}; a rippl block holds sources, claims, "
                                "decisions and actions"))
                continue
            self._items(document, start, key, value_node, loader_data=data[key],
                        collected=collected, problems=problems)
        return data

    def _items(self, document: Document, offset: int, key: str, node: yaml.Node, *,
               loader_data: Any, collected: dict[str, list[Any]], problems: list[Problem]) -> None:
        line = document.line_of(offset + node.start_mark.index)
        if loader_data is None:
            return
        if not isinstance(node, yaml.SequenceNode) or not isinstance(loader_data, list):
            problems.append(Problem(code="schema", where=f"{document.name}:{line}",
                                    message=f"{key} must be a list of items"))
            return
        model = GRAPH_KEYS[key]
        for item_node, item in zip(node.value, loader_data, strict=True):
            begin = offset + item_node.start_mark.index
            finish = offset + item_node.end_mark.index
            while finish > begin and document.text[finish - 1].isspace():
                finish -= 1
            where = f"{document.name}:{document.line_of(begin)}"
            if not isinstance(item, dict):
                problems.append(Problem(code="schema", where=where,
                                        message=f"each entry of {key} is a mapping (ref, ...)"))
                continue
            twice = _duplicate_keys(item_node)
            if twice:
                problems.append(Problem(code="schema", where=where, message=(
                    f"{key}[{item.get('ref', '?')}] gives {', '.join(sorted(twice))} more than once")))
                continue
            if "id" in item and "ref" not in item:
                problems.append(Problem(code="schema", where=where, message=(
                    "use `ref:` to name an item; graph ids are derived from the text, so the same "
                    "statement in two documents becomes one node")))
                continue
            fields = {"section": document.section_at(begin), **item}
            try:
                parsed = model.model_validate(fields)
            except ValidationError as exc:
                ref = item.get("ref")
                problems.extend(
                    p.model_copy(update={"message": f"{key}[{ref or '?'}] {p.message}",
                                         "ref": ref if isinstance(ref, str) else None})
                    for p in schema_problems(exc, where=where))
                continue
            assert isinstance(parsed, SourceItem | ClaimItem | DecisionItem | ActionItem)
            collected[key].append(parsed.with_span((begin, finish)))


def _duplicate_keys(node: yaml.Node) -> set[str]:
    if not isinstance(node, yaml.MappingNode):
        return set()
    seen: set[str] = set()
    twice: set[str] = set()
    for key_node, _ in node.value:
        key = str(key_node.value)
        (twice if key in seen else seen).add(key)
    return twice


def _yaml_message(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    return " ".join(str(part) for part in (context, problem) if part) or str(exc)


def to_markdown(extraction: Extraction) -> str:
    """Write an extraction in the structured format (one block per section), e.g. to review an
    LLM's extraction by hand and ingest the corrected file with the structured extractor.
    Reading the result back gives the same extraction."""
    lines: list[str] = []
    if extraction.title is not None:
        dumped = yaml.safe_dump({"title": extraction.title}, allow_unicode=True, width=10_000)
        lines += ["---", dumped.rstrip("\n"), "---", ""]
    by_section: dict[str | None, dict[str, list[dict[str, Any]]]] = {}
    for key in GRAPH_KEYS:
        for item in getattr(extraction, key):
            data = item.model_dump(exclude_none=True, exclude_defaults=True)
            section = data.pop("section", None)
            if section is not None and not _heading_round_trips(section):
                data["section"] = section
                section = None
            data = {"ref": data.pop("ref"), **data}
            by_section.setdefault(section, {}).setdefault(key, []).append(data)
    for section in sorted(by_section, key=lambda s: s is not None):
        if section is not None:
            lines += [f"## {section}", ""]
        dumped = yaml.safe_dump(by_section[section], sort_keys=False, allow_unicode=True, width=100)
        longest = max((len(run) for run in re.findall(r"`+", dumped)), default=0)
        fence = "`" * max(3, longest + 1)
        lines += [f"{fence}{INFO_STRING}", dumped.rstrip("\n"), fence, ""]
    return "\n".join(lines)


def _heading_round_trips(section: str) -> bool:
    match = HEADING.match(f"## {section}")
    return "\n" not in section and ">" not in section and match is not None \
        and match["title"].strip() == section
