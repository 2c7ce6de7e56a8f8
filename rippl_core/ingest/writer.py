"""Writing a validated extraction: one operation that reads what it needs, validates against the
graph and writes everything in one atomic commit, or nothing.

It runs as a write operation of the core (under WATCH of the graph's version key, re-run from the
start if another writer commits in between), so what it validated is what it writes on. New nodes
and new support go through the core's own write path (`NodeSpec` -> `engine.plan_change`, exactly
what `load` uses): truth maintenance labels every node and records its status changes.

Merging: a node is identified by its kind and normalised text, so a statement made again (by the
same document or another) is the same node. What ingestion does with it:

- same content, support already there: nothing (re-ingesting a document changes nothing);
- a claim with a new source: the source becomes one more justification (any one suffices);
- a decision, action or derived claim with different support: with `on_conflict="justify"` (the
  default) the new support is added as an alternative justification, as `justify()` would; with
  `on_conflict="reject"` the document is rejected with a conflict;
- different content under the same text (a source with another uri, an action with other tool
  arguments): always a conflict, the document is rejected.

Every node records where it was stated (`provenance`): the first document at the top level, later
documents in `provenance["also"]`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from rippl_core._runtime.op import Commit, Op
from rippl_core.causal import cypher as causal_cypher
from rippl_core.causal.nodes import fetch_justifications, fetch_nodes
from rippl_core.causal.relabel import Change, plan_change
from rippl_core.ingest.schema import Extraction, ExtractionRejected, Problem
from rippl_core.ingest.validate import (
    GraphView,
    OnConflict,
    Plan,
    check_against_graph,
    cycle_roots,
    merged_provenance,
)
from rippl_core.vocabulary import Kind, State, public_status

type IngestOutcome = Literal["added", "merged", "unchanged"]
type IngestStatus = Literal["written", "unchanged", "dry-run", "rejected", "failed"]


class _Model(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)


class IngestedNode(_Model):
    """One node of a document: its graph id, the refs that named it, what ingesting it did."""

    id: str
    kind: Kind
    text: str
    refs: list[str]
    outcome: IngestOutcome
    state: State | None = None
    support: list[list[str]] = Field(default_factory=list)  # as the document states it
    new_support: list[list[str]] = Field(default_factory=list)  # what the graph did not have

    @property
    def status(self) -> str | None:
        return public_status(self.kind, self.state) if self.state is not None else None


class DocumentReport(_Model):
    """What ingesting one document did (or would do, for a dry run)."""

    document: str
    extractor: str
    model: str | None = None
    title: str | None = None
    status: IngestStatus
    nodes: list[IngestedNode] = Field(default_factory=list)
    edges: int = 0
    ids: dict[str, str] = Field(default_factory=dict)
    problems: list[Problem] = Field(default_factory=list)
    error: str | None = None
    extraction: Extraction | None = Field(default=None, repr=False)

    def _of(self, outcome: IngestOutcome) -> list[str]:
        return [n.id for n in self.nodes if n.outcome == outcome]

    @property
    def added(self) -> list[str]:
        return self._of("added")

    @property
    def merged(self) -> list[str]:
        return self._of("merged")

    @property
    def unchanged(self) -> list[str]:
        return self._of("unchanged")

    @property
    def ok(self) -> bool:
        return self.status not in ("rejected", "failed")


class IngestReport(_Model):
    """What ingesting several documents did, document by document (each is all-or-nothing)."""

    documents: list[DocumentReport]

    @property
    def ok(self) -> bool:
        return all(d.ok for d in self.documents)

    @property
    def added(self) -> list[str]:
        return [i for d in self.documents for i in d.added]

    @property
    def merged(self) -> list[str]:
        return [i for d in self.documents for i in d.merged]

    @property
    def rejected(self) -> list[DocumentReport]:
        return [d for d in self.documents if not d.ok]


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


def stored_edges_below(roots: Sequence[str]) -> Op[set[tuple[str, str]]]:
    """Every causal edge downstream of `roots`, each node expanded once (linear)."""
    edges: set[tuple[str, str]] = set()
    seen = set(roots)
    frontier = list(roots)
    while frontier:
        rows = yield causal_cypher.step_down(frontier)
        frontier = []
        for parent, child, *_ in rows:
            edges.add((parent, child))
            if child not in seen:
                seen.add(child)
                frontier.append(child)
    return edges


def write_plan(p: Plan, *, extractor: str, model: str | None, now: int, dry_run: bool = False,
               on_conflict: OnConflict = "justify", earlier: frozenset[str] = frozenset()
               ) -> Op[DocumentReport]:
    """Validate `p` against the graph and write it in one commit (or, for a dry run, say what would
    be written). Raises ExtractionRejected with every problem, having written nothing."""
    if on_conflict not in ("justify", "reject"):
        raise ValueError("on_conflict must be 'justify' or 'reject'")
    stored = yield from fetch_nodes(sorted(set(p.nodes) | set(p.external)))
    existing = [node_id for node_id in p.nodes if node_id in stored]
    justs, _ = yield from fetch_justifications(existing)
    view = GraphView(stored, justs)
    roots = cycle_roots(p, view)
    if roots:
        view.edges = yield from stored_edges_below(roots)
    resolution, problems = check_against_graph(p, view, on_conflict=on_conflict)
    problems = [*p.problems, *problems]
    if problems:
        raise ExtractionRejected(problems, p.document)

    change = Change.over(stored)
    change.kinds.update({node.id: node.kind for node in p.nodes.values()})
    for node_id in resolution.new:
        spec = p.nodes[node_id].spec().validated()
        change.new_nodes[node_id] = spec.props(now)
        change.new_justifications[node_id] = spec.justifications
    change.new_justifications.update(resolution.missing)
    for node_id in resolution.existing:
        provenance = merged_provenance(stored[node_id].get("provenance"), p.nodes[node_id].mention)
        if provenance is not None:
            change.set_props[node_id] = {"provenance": json.dumps(provenance, sort_keys=True)}
        planned = p.nodes[node_id]
        if planned.key is not None and stored[node_id].get("key") is None:  # the first key stands
            change.set_props.setdefault(node_id, {}).update(key=planned.key, value=planned.value)
    for node_id, details in resolution.fill.items():
        change.set_props.setdefault(node_id, {}).update(details)

    states = {node_id: State(props["state"]) for node_id, props in stored.items()}
    if change.new_nodes or change.new_justifications or change.set_props:
        commit = yield from plan_change(change, cause="ingest", at=now, now=now)
        states.update(_states(commit))
        if not dry_run:
            yield commit

    nodes = []
    for node in p.nodes.values():
        outcome: IngestOutcome = "added"
        if node.id in stored:
            touched = node.id in change.new_justifications or node.id in change.set_props
            outcome = "merged" if touched else "unchanged"
        elif node.id in earlier:
            outcome = "merged"
        nodes.append(IngestedNode(id=node.id, kind=node.kind, text=node.text, refs=node.refs,
                                  outcome=outcome, state=states.get(node.id),
                                  support=node.justifications,
                                  new_support=change.new_justifications.get(node.id, [])))
    changed = bool(change.new_nodes or change.new_justifications or change.set_props)
    status: IngestStatus = "dry-run" if dry_run else "written" if changed else "unchanged"
    edges = sum(len(j) for js in change.new_justifications.values() for j in js)
    return DocumentReport(document=p.document, extractor=extractor, model=model, title=p.title,
                          status=status, nodes=nodes, edges=edges, ids=p.ids,
                          extraction=p.extraction)


def _states(commit: Commit) -> dict[str, State]:
    """The state of each node a commit creates or relabels."""
    create = {causal_cypher.create_nodes(kind, [], at=0, now=0, cause="", review=None).text
              for kind in Kind}
    states: dict[str, State] = {}
    for query in commit.queries:
        if query.text in create:
            for row in query.params["rows"]:
                states[row["id"]] = State(row["state"])
    for event in commit.events:
        if "after" in event and "node" in event:
            states[event["node"]] = State(event["after"])
    return states


def rejected(document: str, extractor: str, model: str | None, exc: Exception,
             problems: Sequence[Problem] = ()) -> DocumentReport:
    return DocumentReport(document=document, extractor=extractor, model=model,
                          status="rejected" if problems else "failed", problems=list(problems),
                          error=str(exc))


def as_dict(report: IngestReport) -> dict[str, Any]:
    """JSON-ready summary (the CLI's --format json)."""
    return {"ok": report.ok, "documents": [
        {**d.model_dump(mode="json"), "added": d.added, "merged": d.merged,
         "unchanged": d.unchanged} for d in report.documents]}
