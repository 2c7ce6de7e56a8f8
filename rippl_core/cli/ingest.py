"""`rippl ingest PATH...`: documents into the causal graph, with a progress bar and a summary."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from rippl_core.cli.app import EXIT_ERROR, command, connection, console, errors, styled
from rippl_core.cli.render import mermaid_text
from rippl_core.errors import InvalidInputError
from rippl_core.vocabulary import Kind

if TYPE_CHECKING:
    from rich.table import Table

    from rippl_core.ingest.writer import DocumentReport, IngestReport


class IngestOutput(StrEnum):
    """What `rippl ingest` prints."""

    table = "table"
    json = "json"
    mermaid = "mermaid"
    markdown = "markdown"


class OnConflictChoice(StrEnum):
    """What a document stating an existing decision or action with other support does."""

    justify = "justify"
    reject = "reject"

_OUTCOME_STYLE = {"added": "green", "merged": "cyan", "unchanged": "dim"}
_STATUS_STYLE = {"written": "green", "unchanged": "dim", "dry-run": "cyan", "rejected": "red",
                 "failed": "red"}


@command("ingest")
def ingest_cmd(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(
        help="Documents to ingest (Markdown or text); a folder means the *.md files in it.")],
    extractor: Annotated[str, typer.Option(
        help="structured (the Markdown format, offline), groq (needs GROQ_API_KEY) or "
             "langchain:<package.module:name> (a LangChain chat model, its class or a factory).")
    ] = "structured",
    model: Annotated[str | None, typer.Option(help="Model for the groq or langchain extractor.")
                     ] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Validate and show the would-be graph; write nothing.")] = False,
    format: Annotated[IngestOutput, typer.Option(
        "--format", "-f", case_sensitive=False,
        help="What to print: table (summary; with --dry-run the nodes too), mermaid (the would-be "
             "graph), markdown (the extraction in the structured format) or json.")
    ] = IngestOutput.table,
    detector: Annotated[str | None, typer.Option(
        help="A model that compares each claim ingested with those it may contradict and proposes "
             "retractions: langchain:<package.module:name>.")] = None,
    on_conflict: Annotated[OnConflictChoice, typer.Option(
        help="When a decision or action already in the graph is stated with other support: "
             "justify (add it as an alternative justification) or reject the document.")
    ] = OnConflictChoice.justify,
) -> None:
    """Extract sources, claims, decisions and actions from documents and write them to the graph.

    Each document is validated in full before anything is written, and written all-or-nothing.
    Node ids derive from the text, so ingesting again, or two documents stating the same thing,
    merges instead of duplicating. Exit code 1 when any document was rejected."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from rippl_core.cli.review import model_detector
    from rippl_core.ingest.extractors import get_extractor
    from rippl_core.ingest.writer import as_dict

    documents = expand(paths)
    chosen = get_extractor(extractor, model=model)
    judge = model_detector(detector, model)
    # The summary goes to stdout for the table; with another format stdout carries only that.
    summary = console if format is IngestOutput.table else errors
    with connection(ctx).open(create=True) as rippl, Progress(
        TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=errors, transient=True, disable=not errors.is_terminal,
    ) as progress:
        task = progress.add_task("ingesting", total=len(documents))

        def advance(name: str, report: DocumentReport | None) -> None:
            if report is None:
                progress.update(task, description=f"{chosen.name}: {name}")
            else:
                progress.advance(task)

        rippl.detector = judge
        report = rippl.ingest(documents, extractor=chosen, dry_run=dry_run,
                              on_conflict=on_conflict.value, errors="report",
                              progress=advance)
    if format is IngestOutput.json:
        print(json.dumps(as_dict(report), indent=2))
    elif format is IngestOutput.mermaid:
        print(mermaid(report))
    elif format is IngestOutput.markdown:
        print(_markdown(report))
    elif dry_run:
        for document in report.documents:
            if document.nodes:
                console.print(nodes_table(document))
    summary.print(summary_table(report, dry_run=dry_run))
    for document in report.documents:
        for line in _failure_lines(document):
            errors.print(line)
    if not report.ok:
        raise typer.Exit(EXIT_ERROR)


def expand(paths: list[Path]) -> list[Path]:
    """The documents named: files as given, folders as their *.md files (sorted)."""
    documents: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.glob("*.md") if p.is_file())
            if not found:
                raise InvalidInputError(f"{path} holds no *.md file; name the documents or a folder of "
                                        "*.md files")
            documents += found
        else:
            documents.append(path)
    return documents


def summary_table(report: IngestReport, *, dry_run: bool = False) -> Table:
    from rich.table import Table

    used = sorted({d.extractor + (f" ({d.model})" if d.model else "") for d in report.documents})
    title = f"ingest with {', '.join(used)}" + (" (dry run: nothing written)" if dry_run else "")
    table = Table(title=title)
    table.add_column("document", overflow="fold", ratio=1)
    table.add_column("status", no_wrap=True)
    for name in ("added", "merged", "unchanged", "edges", "problems"):
        table.add_column(name, justify="right", no_wrap=True)
    totals = [0, 0, 0, 0, 0]
    for d in report.documents:
        counts = [len(d.added), len(d.merged), len(d.unchanged), d.edges,
                  len(d.problems) or (1 if d.status == "failed" else 0)]
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        style = _STATUS_STYLE[d.status]
        table.add_row(d.document, Text(d.status, style=style), *map(str, counts))
    if len(report.documents) > 1:
        table.add_section()
        rejected = len(report.rejected)
        table.add_row(f"{len(report.documents)} documents", f"{rejected} rejected" if rejected
                      else "", *map(str, totals))
    return table


def nodes_table(document: DocumentReport) -> Table:
    from rich.table import Table

    title = document.document + (": would be written" if document.status == "dry-run" else "")
    table = Table(title=title)
    table.add_column("ref", overflow="fold")
    table.add_column("id", no_wrap=True)
    table.add_column("text", ratio=1)
    table.add_column("outcome", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for node in document.nodes:
        style = _OUTCOME_STYLE[node.outcome]
        text = node.text if len(node.text) <= 90 else node.text[:89] + "…"
        table.add_row(", ".join(node.refs), node.id, text, Text(node.outcome, style=style),
                      node.status or "")
    return table


def _failure_lines(document: DocumentReport) -> list[Text]:
    if document.ok:
        return []
    name = document.document
    if not document.problems:
        return [styled("[red]{}: failed:[/red] {}", name, document.error or "")]
    count = len(document.problems)
    lines = [styled("[red]{}: rejected, nothing written ({} problem{}):[/red]", name, count,
                    "s" if count > 1 else "")]
    lines += [Text(f"  - {problem}") for problem in document.problems]
    return lines


def _markdown(report: IngestReport) -> str:
    from rippl_core.ingest.extractors import to_markdown

    parts = []
    for document in report.documents:
        if document.extraction is None:
            continue
        head = f"<!-- extracted from {document.document} by {document.extractor}"
        head += f" ({document.model})" if document.model else ""
        parts.append(f"{head} -->\n{to_markdown(document.extraction)}")
    return "\n".join(parts)


_SHAPE = {Kind.SOURCE: ('[("', '")]'), Kind.CLAIM: ('["', '"]'), Kind.DECISION: ('{{"', '"}}'),
          Kind.ACTION: ('(["', '"])')}


def mermaid(report: IngestReport) -> str:
    """The documents' nodes and the support they state, as a Mermaid flowchart coloured by what
    ingesting does to each (added, merged, unchanged); nodes only referenced are dashed."""
    lines = ["flowchart TD"]
    names: dict[str, str] = {}
    kinds: dict[str, Kind] = {}
    outcome: dict[str, str] = {}
    texts: dict[str, str] = {}
    edges: set[tuple[str, str]] = set()
    for document in report.documents:
        for node in document.nodes:
            kinds[node.id], texts[node.id] = node.kind, node.text
            if outcome.get(node.id) in (None, "unchanged") or node.outcome == "added":
                outcome[node.id] = node.outcome
            edges |= {(a, node.id) for j in node.support for a in j}
    for node_id in sorted({a for a, _ in edges} | set(kinds)):
        names[node_id] = f"n{len(names)}"
        text = texts.get(node_id, node_id)
        text = text if len(text) <= 60 else text[:59] + "…"
        label = f"{mermaid_text(text)}<br/><small>{mermaid_text(node_id)}</small>"
        left, right = _SHAPE.get(kinds.get(node_id, Kind.CLAIM), ('["', '"]'))
        style = outcome.get(node_id, "graph")
        lines.append(f"    {names[node_id]}{left}{label}{right}:::{style}")
    lines += [f"    {names[a]} --> {names[b]}" for a, b in sorted(edges)]
    lines += ["    classDef added fill:#d4f7d4,stroke:#2a7a2a",
              "    classDef merged fill:#d4e9f7,stroke:#1f5f8b",
              "    classDef unchanged fill:#eeeeee,stroke:#888888",
              "    classDef graph fill:#ffffff,stroke:#888888,stroke-dasharray: 4 3"]
    return "\n".join(lines)
