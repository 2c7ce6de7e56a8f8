"""Validation before any write: every problem of an extraction is found and reported together.

`plan` resolves an extraction against itself (no I/O): local refs become deterministic graph ids
(`semantic_id(kind, normalised text)`), statements that normalise to the same id merge, and it
reports duplicate refs, bad values, references of the wrong kind, edges the data model forbids and
support cycles. References that match no local ref are left for `check_against_graph`, which is
given what the graph holds (the writer reads it in the same transaction as the write) and reports
references to nodes that do not exist, conflicts with stored nodes and cycles through stored edges.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

from rippl_core._runtime.validation import canonical_args, check_id, check_text, semantic_id
from rippl_core.causal.spec import (
    ActionEntry,
    ClaimEntry,
    DecisionEntry,
    GraphSpec,
    JustificationEntry,
    NodeSpec,
    SourceEntry,
    claim_key,
    claim_value,
)
from rippl_core.errors import InvalidInputError
from rippl_core.ingest.document import Document
from rippl_core.ingest.schema import (
    ActionItem,
    ClaimItem,
    DecisionItem,
    Extraction,
    Problem,
    SourceItem,
)
from rippl_core.vocabulary import Kind, edge_type

type Item = SourceItem | ClaimItem | DecisionItem | ActionItem
type OnConflict = Literal["justify", "reject"]

KIND_OF: dict[type, Kind] = {SourceItem: Kind.SOURCE, ClaimItem: Kind.CLAIM,
                             DecisionItem: Kind.DECISION, ActionItem: Kind.ACTION}
PLURAL = {Kind.SOURCE: "sources", Kind.CLAIM: "claims", Kind.DECISION: "decisions",
          Kind.ACTION: "actions"}
# The kinds each reference field may name (alternatives: whatever the data model allows).
FIELD_KINDS: dict[tuple[Kind, str], frozenset[Kind]] = {
    (Kind.CLAIM, "sources"): frozenset({Kind.SOURCE}),
    (Kind.CLAIM, "derived_from"): frozenset({Kind.CLAIM}),
    (Kind.DECISION, "premises"): frozenset({Kind.CLAIM, Kind.DECISION}),
    (Kind.DECISION, "depends_on"): frozenset({Kind.DECISION}),
    (Kind.ACTION, "decisions"): frozenset({Kind.DECISION}),
    (Kind.ACTION, "triggers"): frozenset({Kind.ACTION}),
}


@dataclass(frozen=True)
class Reference:
    """One use of a ref: which item, which field, which kind of node it must be."""

    ref: str
    by: str  # the ref of the item that uses it
    field: str
    consequent: Kind
    where: str | None


@dataclass
class PlannedNode:
    """A node the extraction states, under its deterministic graph id."""

    id: str
    kind: Kind
    text: str
    refs: list[str]
    uri: str | None = None
    source_type: str | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    justifications: list[list[str]] = field(default_factory=list)
    mention: dict[str, Any] = field(default_factory=dict)
    key: str | None = None  # a claim's key and value, normalised (the first ref's, when several)
    value: str | None = None

    def spec(self, provenance: Mapping[str, Any] | None = None) -> NodeSpec:
        return NodeSpec(self.kind, self.text, self.id, uri=self.uri, source_type=self.source_type,
                        tool=self.tool, args=self.args,
                        justifications=[list(j) for j in self.justifications],
                        provenance=self.mention if provenance is None else provenance,
                        key=self.key, value=self.value)

    def details(self) -> dict[str, Any]:
        return {"uri": self.uri, "source_type": self.source_type, "tool": self.tool,
                "args": canonical_args(self.args)}

    def set_details(self, details: Mapping[str, Any]) -> None:
        self.uri, self.source_type = details["uri"], details["source_type"]
        self.tool = details["tool"]
        self.args = json.loads(details["args"]) if details["args"] is not None else None


@dataclass
class Plan:
    """An extraction resolved to graph ids, with the problems found without the graph."""

    document: str
    nodes: dict[str, PlannedNode]
    ids: dict[str, str]  # local ref -> graph id
    external: dict[str, list[Reference]]  # graph id named by a ref that is not local -> its uses
    problems: list[Problem]
    title: str | None = None
    extraction: Extraction | None = None

    def graph_spec(self, kinds: Mapping[str, Kind] | None = None) -> GraphSpec:
        """The plan as a core `GraphSpec` (what `rippl load` reads), ids and support explicit."""
        known = {**(kinds or {}), **{n.id: n.kind for n in self.nodes.values()}}
        spec = GraphSpec(name=self.title or self.document)
        for node in self.nodes.values():
            justs = [list(j) for j in node.justifications]
            prov = node.mention or None
            if node.kind is Kind.SOURCE:
                spec.sources.append(SourceEntry(id=node.id, title=node.text, kind=node.source_type,
                                                uri=node.uri, provenance=prov))
                continue
            if node.kind is Kind.CLAIM:
                single = [j for j in justs if len(j) == 1 and known.get(j[0]) is Kind.SOURCE]
                rest = [j for j in justs if j not in single]
                spec.claims.append(ClaimEntry(id=node.id, text=node.text,
                                              sources=[j[0] for j in single], provenance=prov,
                                              key=node.key, value=node.value))
            else:
                first, rest = (justs[0], justs[1:]) if justs else ([], [])
                if node.kind is Kind.DECISION:
                    spec.decisions.append(DecisionEntry(
                        id=node.id, title=node.text, provenance=prov,
                        premises=[a for a in first if known.get(a) is not Kind.DECISION],
                        depends_on=[a for a in first if known.get(a) is Kind.DECISION]))
                else:
                    spec.actions.append(ActionEntry(
                        id=node.id, title=node.text, tool=node.tool, args=node.args, provenance=prov,
                        decisions=[a for a in first if known.get(a) is not Kind.ACTION],
                        triggers=[a for a in first if known.get(a) is Kind.ACTION]))
            spec.justifications += [JustificationEntry(node=node.id, antecedents=j) for j in rest]
        return spec


def mention(document: Document | None, item: Item, *, extractor: str, model: str | None,
            at: str) -> dict[str, Any]:
    """Where a node was stated: document, section, character span, extractor, model, time."""
    span = item.span
    if span is None and document is not None:
        span = document.locate(item.quote) or document.locate(_text(item))
    section = item.section
    if section is None and document is not None and span is not None:
        section = document.section_at(span[0])
    record: dict[str, Any] = {
        "document": document.name if document else None,
        "sha256": document.sha256 if document and document.text else None,
        "section": section, "span": list(span) if span else None,
        "extractor": extractor, "model": model, "ingested_at": at,
    }
    return {k: v for k, v in record.items() if v is not None}


def _text(item: Item) -> str:
    return item.text if isinstance(item, ClaimItem) else item.title


def _where(document: Document | None, item: Item) -> str | None:
    if document is None:
        return None
    return f"{document.name}:{document.line_of(item.span[0])}" if item.span else document.name


def plan(extraction: Extraction, document: Document | None = None, *, extractor: str = "manual",
         model: str | None = None, at: str = "") -> Plan:
    """Resolve an extraction to graph ids and find every problem that needs no graph."""
    name = document.name if document else (extraction.title or "extraction")
    problems: list[Problem] = []
    items = extraction.items()

    # 1. Refs: unique, usable.
    by_ref: dict[str, Item] = {}
    for item in items:
        where = _where(document, item)
        if item.ref in by_ref:
            other = by_ref[item.ref]
            problems.append(Problem(
                code="duplicate-ref", ref=item.ref, where=where,
                message=f"ref {item.ref!r} names both a {KIND_OF[type(other)]} and a "
                        f"{KIND_OF[type(item)]}; give each item its own ref"))
            continue
        try:
            check_id(item.ref, what="ref")
        except InvalidInputError as exc:
            problems.append(Problem(code="invalid-value", ref=item.ref, where=where, message=str(exc)))
            continue
        by_ref[item.ref] = item

    # 2. Values and graph ids.
    ids: dict[str, str] = {}
    nodes: dict[str, PlannedNode] = {}
    for ref, item in by_ref.items():
        kind = KIND_OF[type(item)]
        where = _where(document, item)
        bad = _bad_values(item, kind)
        if bad:
            problems += [Problem(code="invalid-value", ref=ref, where=where, message=m) for m in bad]
            continue
        node_id = semantic_id(kind, _text(item))
        ids[ref] = node_id
        planned = PlannedNode(
            id=node_id, kind=kind, text=_text(item), refs=[ref],
            uri=getattr(item, "uri", None), source_type=getattr(item, "kind", None),
            tool=getattr(item, "tool", None), args=getattr(item, "args", None),
            mention=mention(document, item, extractor=extractor, model=model, at=at),
            key=claim_key(getattr(item, "key", None)), value=claim_value(getattr(item, "value", None)))
        if node_id not in nodes:
            nodes[node_id] = planned
            continue
        first = nodes[node_id]
        first.refs.append(ref)
        merged, conflicts = merge_details(first.details(), planned.details())
        if conflicts:
            problems.append(Problem(
                code="conflict", ref=ref, where=where,
                message=f"{ref!r} and {first.refs[0]!r} state the same {kind} "
                        f"({_short(first.text)}) with different details: "
                        f"{'; '.join(conflicts)}; make them agree or reword one"))
        else:
            first.set_details(merged)

    # 3. References and justifications.
    external: dict[str, list[Reference]] = defaultdict(list)
    for ref, item in by_ref.items():
        if ref not in ids:
            continue
        kind = KIND_OF[type(item)]
        node = nodes[ids[ref]]
        where = _where(document, item)
        for justification in _justifications(item, kind):
            resolved: list[str] = []
            for field_name, target in justification:
                use = Reference(target, ref, field_name, kind, where)
                try:
                    check_id(target, what=f"{PLURAL[kind]}[{ref}].{field_name}")
                except InvalidInputError as exc:
                    problems.append(Problem(code="invalid-value", ref=ref, where=where,
                                            message=str(exc)))
                    continue
                if target in by_ref and target not in ids:
                    continue  # the target itself is broken; already reported
                if target in by_ref:
                    problem = kind_problem(use, KIND_OF[type(by_ref[target])])
                    if problem:
                        problems.append(problem)
                        continue
                    resolved.append(ids[target])
                else:
                    external[target].append(use)
                    resolved.append(target)
            ordered = list(dict.fromkeys(resolved))
            if ordered and frozenset(ordered) not in {frozenset(j) for j in node.justifications}:
                node.justifications.append(ordered)

    # 4. Support cycles among the extraction's own nodes.
    problems += cycle_problems(plan_edges(nodes), set(), nodes, by_id_refs(nodes), document=name)
    title = extraction.title
    return Plan(name, nodes, ids, dict(external), problems, title, extraction)


def _justifications(item: Item, kind: Kind) -> list[list[tuple[str, str]]]:
    """The item's justifications as lists of (field, ref)."""
    groups: list[list[tuple[str, str]]] = []
    if isinstance(item, ClaimItem):
        groups += [[("sources", s)] for s in item.sources]
        if item.derived_from:
            groups.append([("derived_from", c) for c in item.derived_from])
    elif isinstance(item, DecisionItem):
        main = [("premises", p) for p in item.premises] + [("depends_on", d) for d in item.depends_on]
        if main:
            groups.append(main)
    elif isinstance(item, ActionItem):
        main = [("decisions", d) for d in item.decisions] + [("triggers", t) for t in item.triggers]
        if main:
            groups.append(main)
    if not isinstance(item, SourceItem):
        groups += [[("alternatives", a) for a in alt] for alt in item.alternatives if alt]
    return groups


def kind_problem(use: Reference, antecedent: Kind) -> Problem | None:
    """A problem when `use` names a node of the wrong kind, else None."""
    allowed = FIELD_KINDS.get((use.consequent, use.field))
    edge = edge_type(antecedent, use.consequent)
    label = f"{PLURAL[use.consequent]}[{use.by}].{use.field}"
    if edge is None:
        return Problem(code="disallowed-edge", ref=use.by, where=use.where, message=(
            f"{label} names {use.ref!r}, {_a(antecedent)}; {_a(antecedent)} cannot support "
            f"{_a(use.consequent)} (allowed: Source->Claim, Claim->Claim, Claim->Decision, "
            "Decision->Decision, Decision->Action, Action->Action)"))
    if allowed is not None and antecedent not in allowed:
        wanted = " or ".join(sorted(str(k) for k in allowed))
        return Problem(code="invalid-value", ref=use.by, where=use.where, message=(
            f"{label} names {use.ref!r}, {_a(antecedent)}; {use.field} lists {wanted} refs"))
    return None


def _a(kind: Kind) -> str:
    return f"{'an' if kind is Kind.ACTION else 'a'} {kind}"


def _bad_values(item: Item, kind: Kind) -> list[str]:
    bad = []
    what = "text" if kind is Kind.CLAIM else "title"
    label = f"{PLURAL[kind]}[{item.ref}]"
    checks: list[tuple[str, Any]] = [(what, _text(item))]
    if isinstance(item, SourceItem):
        checks += [("kind", item.kind), ("uri", item.uri)]
    for name, value in checks:
        if value is not None:
            try:
                check_text(value, what=f"{label}.{name}")
            except InvalidInputError as exc:
                bad.append(str(exc))
    if isinstance(item, ClaimItem) and (item.key is not None or item.value is not None):
        try:
            if claim_key(item.key) is None:
                raise InvalidInputError(f"{label} has a value but no key; give the key it is the "
                                        "value of (SUBJECT/PROPERTY)")
            claim_value(item.value)
        except InvalidInputError as exc:
            bad.append(f"{label}: {exc}")
    if isinstance(item, ActionItem):
        if item.tool is not None:
            try:
                check_id(item.tool, what=f"{label}.tool")
            except InvalidInputError as exc:
                bad.append(str(exc))
        try:
            canonical_args(item.args)
        except InvalidInputError as exc:
            bad.append(f"{label}.{exc}")
    return bad


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


# How a restatement's details combine with what is known: a detail left out (None) keeps the known
# value; a uri or a source kind not known yet is filled in; tool and arguments decide which tool
# calls an action guards, so they must agree exactly (or be left out); a source kind is a label, so
# a different one keeps the first.
_FILLABLE = ("uri", "source_type")
_LABELS = {"uri": "uri", "source_type": "kind", "tool": "tool", "args": "args"}


def merge_details(known: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The combined details, and a description of each field in conflict."""
    merged = dict(known)
    conflicts = []
    for field_name in ("uri", "source_type", "tool", "args"):
        was, now = known.get(field_name), new.get(field_name)
        if now is None or now == was:
            continue
        if was is None and field_name in _FILLABLE:
            merged[field_name] = now
        elif field_name != "source_type":
            conflicts.append(f"{_LABELS[field_name]} {was} vs {now}")
    return merged, conflicts


# ------------------------------------------------------------------------------------ cycles


def plan_edges(nodes: Mapping[str, PlannedNode]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for node in nodes.values():
        for justification in node.justifications:
            for antecedent in justification:
                edges[antecedent].add(node.id)
    return edges


def by_id_refs(nodes: Mapping[str, PlannedNode]) -> dict[str, str]:
    return {node.id: node.refs[0] for node in nodes.values()}


def find_cycles(edges: Mapping[str, Iterable[str]], must_use: set[tuple[str, str]] | None = None
                ) -> list[list[str]]:
    """One cycle (as a closed walk a -> ... -> a) per strongly connected component that has one;
    with `must_use`, only components holding one of those edges (a cycle through one of them)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    graph = {a: sorted(set(bs)) for a, bs in edges.items()}
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = graph.get(node, [])
            if i < len(children):
                work.append((node, i + 1))
                child = children[i]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    cycles = []
    for component in components:
        members = set(component)
        inner = [(a, b) for a in component for b in graph.get(a, []) if b in members]
        if not inner:
            continue
        candidates = [e for e in inner if must_use is None or e in must_use]
        if not candidates:
            continue
        start, nxt = min(candidates)
        cycles.append([start, *_path(graph, nxt, start, members)])
    return cycles


def _path(graph: Mapping[str, Sequence[str]], start: str, goal: str, members: set[str]) -> list[str]:
    """A shortest path from start to goal inside one component (breadth first)."""
    parents: dict[str, str | None] = {start: None}
    frontier = [start]
    while frontier and goal not in parents:
        nxt = []
        for node in frontier:
            for child in graph.get(node, []):
                if child in members and child not in parents:
                    parents[child] = node
                    nxt.append(child)
        frontier = nxt
    path: list[str] = []
    current: str | None = goal
    while current is not None:
        path.append(current)
        current = parents[current]
    return path[::-1]


def cycle_problems(edges: Mapping[str, Iterable[str]], stored: set[tuple[str, str]],
                   nodes: Mapping[str, PlannedNode], names: Mapping[str, str], *,
                   document: str, through_stored: bool = False) -> list[Problem]:
    """A self-support problem for every cycle that goes through an edge of the extraction
    (`stored` edges are the graph's own; a cycle made only of them is not this document's).
    With `through_stored`, only cycles that also use a stored edge (the others were reported
    without the graph)."""
    new = {(a, b) for a, bs in edges.items() for b in bs} - stored
    problems = []
    for cycle in find_cycles(edges, new):
        if through_stored and not any(step in stored for step in pairwise(cycle)):
            continue
        shown = " -> ".join(names.get(n, n) for n in cycle)
        first = cycle[0] if cycle[0] in nodes else next((n for n in cycle if n in nodes), None)
        ref = names.get(first) if first else None
        message = (f"{names.get(cycle[0], cycle[0])} would support itself: {shown}. Support must "
                   "flow one way (sources -> claims -> decisions -> actions); drop one of these links")
        problems.append(Problem(code="self-support", ref=ref, where=document, message=message))
    return problems


# ------------------------------------------------------------------------ against the graph


@dataclass
class GraphView:
    """What the graph holds that matters to one plan (read in the write transaction)."""

    stored: dict[str, dict[str, Any]]  # props of the plan's ids and external refs that exist
    justifications: dict[str, list[list[str]]]  # stored justifications of the plan's existing ids
    edges: set[tuple[str, str]] = field(default_factory=set)  # stored edges below those ids

    def kind(self, node_id: str) -> Kind | None:
        props = self.stored.get(node_id)
        return Kind(props["kind"]) if props else None


@dataclass
class Resolution:
    """How each planned node meets the graph."""

    new: list[str] = field(default_factory=list)
    missing: dict[str, list[list[str]]] = field(default_factory=dict)  # existing id -> new support
    existing: list[str] = field(default_factory=list)
    fill: dict[str, dict[str, Any]] = field(default_factory=dict)  # details an existing node gains


def cycle_roots(p: Plan, view: GraphView) -> list[str]:
    """Existing nodes that would gain support through something other than a source: the only
    places where a new edge can close a cycle with stored edges."""
    roots = []
    for node in p.nodes.values():
        if node.id not in view.stored:
            continue
        have = {frozenset(j) for j in view.justifications.get(node.id, [])}
        for j in node.justifications:
            if frozenset(j) in have:
                continue
            if any(_kind(p, view, a) is not Kind.SOURCE for a in j):
                roots.append(node.id)
                break
    return roots


def _kind(p: Plan, view: GraphView, node_id: str) -> Kind | None:
    return p.nodes[node_id].kind if node_id in p.nodes else view.kind(node_id)


def check_against_graph(p: Plan, view: GraphView, *, on_conflict: OnConflict = "justify"
                        ) -> tuple[Resolution, list[Problem]]:
    """Every problem the graph reveals, and what writing the plan would change."""
    problems: list[Problem] = []
    names = by_id_refs(p.nodes)
    for target, uses in p.external.items():
        kind = view.kind(target)
        for use in uses:
            if kind is None:
                problems.append(Problem(
                    code="unknown-reference", ref=use.by, where=use.where,
                    message=f"{PLURAL[use.consequent]}[{use.by}].{use.field} names {target!r}, which "
                            "is neither a ref defined in this document nor a node in the graph"))
                continue
            problem = kind_problem(use, kind)
            if problem:
                problems.append(problem)

    resolution = Resolution()
    for node in p.nodes.values():
        stored = view.stored.get(node.id)
        if stored is None:
            resolution.new.append(node.id)
            continue
        resolution.existing.append(node.id)
        label = f"{PLURAL[node.kind]}[{node.refs[0]}]"
        if Kind(stored["kind"]) is not node.kind:
            problems.append(Problem(code="conflict", ref=node.refs[0], where=p.document, message=(
                f"{label} would be {node.id}, which the graph holds as a {stored['kind']}")))
            continue
        known = {k: stored.get(k) for k in ("uri", "source_type", "tool", "args")}
        merged, conflicts = merge_details(known, node.details())
        if conflicts:
            problems.append(Problem(code="conflict", ref=node.refs[0], where=p.document, message=(
                f"{label} ({_short(node.text)}) is already in the graph as {node.id} with "
                f"different details: {'; '.join(conflicts)} (stored vs this document). "
                "Make the document agree with the graph, or update the node first")))
            continue
        if merged != known:
            filled = PlannedNode(node.id, node.kind, stored["text"], node.refs)
            filled.set_details(merged)
            resolution.fill[node.id] = {
                **{k: merged[k] for k in _FILLABLE if merged[k] != known[k]},
                "digest": filled.spec().props(0)["digest"]}
        have = {frozenset(j) for j in view.justifications.get(node.id, [])}
        missing = [j for j in node.justifications if frozenset(j) not in have]
        if not missing:
            continue
        only_sources = node.kind is Kind.CLAIM and all(
            len(j) == 1 and _kind(p, view, j[0]) is Kind.SOURCE for j in missing)
        if on_conflict == "reject" and not only_sources:
            problems.append(Problem(code="conflict", ref=node.refs[0], where=p.document, message=(
                f"{label} ({_short(node.text)}) is already in the graph as {node.id} resting on "
                f"{_justs(view.justifications.get(node.id, []))}; this document says it rests on "
                f"{_justs(missing)}. Ingest with on_conflict='justify' to add that as an "
                "alternative justification, or make the document agree")))
            continue
        resolution.missing[node.id] = missing

    edges = plan_edges(p.nodes)
    for a, b in view.edges:
        edges.setdefault(a, set()).add(b)
    for node_id in resolution.existing:  # only their new support is new
        for j in view.justifications.get(node_id, []):
            for a in j:
                edges.setdefault(a, set()).add(node_id)
    stored_edges = set(view.edges) | {(a, n) for n in resolution.existing
                                      for j in view.justifications.get(n, []) for a in j}
    problems += cycle_problems(edges, stored_edges, p.nodes, names, document=p.document,
                               through_stored=True)
    return resolution, problems


def _justs(justs: Sequence[Sequence[str]]) -> str:
    if not justs:
        return "nothing (a premise)"
    return " or ".join("[" + ", ".join(j) + "]" for j in justs)


def merged_provenance(stored: str | None, new: Mapping[str, Any]) -> dict[str, Any] | None:
    """The stored provenance with one more mention, or None when this document is already in it
    (re-ingesting a document changes nothing)."""
    try:
        current = json.loads(stored) if stored else None
    except json.JSONDecodeError:
        current = None
    if not isinstance(current, dict):
        return dict(new)
    documents = {current.get("document")}
    documents |= {m.get("document") for m in current.get("also", []) if isinstance(m, dict)}
    if new.get("document") in documents:
        return None
    return {**current, "also": [*current.get("also", []), dict(new)]}
