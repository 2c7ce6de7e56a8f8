"""Writing the causal graph: nodes and their justifications."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rippl_core.engine import (
    Change,
    Op,
    check_edges,
    content_digest,
    fetch_justifications,
    fetch_nodes,
    plan_change,
    require_nodes,
)
from rippl_core.errors import ConflictError, InvalidInputError
from rippl_core.models import LoadReport
from rippl_core.validation import (
    call_key,
    canonical_args,
    check_id,
    check_ids,
    check_text,
    normalise_text,
    semantic_id,
)
from rippl_core.vocabulary import Kind


@dataclass
class NodeSpec:
    """A node to write: its own content and the justifications it should have."""

    kind: Kind
    text: str
    id: str | None = None
    uri: str | None = None
    source_type: str | None = None
    tool: str | None = None
    args: Mapping[str, Any] | None = None
    justifications: list[list[str]] = field(default_factory=list)
    provenance: Mapping[str, Any] | None = None
    sources: list[str] = field(default_factory=list)  # antecedents that must be Source nodes

    def validated(self) -> NodeSpec:
        """A checked copy with its id filled in (derived from the content when not given)."""
        what = "title" if self.kind is not Kind.CLAIM else "text"
        text = check_text(self.text, what=f"{self.kind} {what}")
        node_id = check_id(self.id) if self.id is not None else semantic_id(self.kind, text)
        justs = [check_ids(j, what=f"antecedents of {node_id}") for j in self.justifications]
        if self.tool is not None:
            check_id(self.tool, what="tool")
        for key, value in (("uri", self.uri), ("source_type", self.source_type)):
            if value is not None:
                check_text(value, what=key)
        unique = list({frozenset(j): j for j in justs if j}.values())  # a repeat is one justification
        return NodeSpec(self.kind, text, node_id, self.uri, self.source_type, self.tool,
                        self.args, unique, self.provenance, check_ids(self.sources, what="sources"))

    def props(self, now: int) -> dict[str, Any]:
        args = canonical_args(self.args)
        props: dict[str, Any] = {
            "id": self.id, "kind": self.kind.value, "text": self.text, "uri": self.uri,
            "source_type": self.source_type, "tool": self.tool, "args": args,
            "call_key": call_key(self.tool, args) if self.tool else None,
            "retracted": False, "pending": 0, "created_at": now,
            "provenance": json.dumps(self.provenance, sort_keys=True) if self.provenance else None,
        }
        # Under a semantic id (derived from the normalised text) the normalised text is the content:
        # re-adding the same statement written differently is a no-op, not a conflict.
        semantic = self.id == semantic_id(self.kind, self.text)
        props["digest"] = content_digest({**props, "text": normalise_text(self.text)} if semantic else props)
        return {k: v for k, v in props.items() if v is not None}


def write_nodes(specs: Sequence[NodeSpec], *, replace: bool, now: int,
                cause: str = "add") -> Op[LoadReport]:
    """Create or update nodes and their support in one atomic commit (all or nothing)."""
    specs = [spec.validated() for spec in specs]
    by_id: dict[str, NodeSpec] = {}
    for spec in specs:
        if spec.id in by_id:
            raise InvalidInputError(f"{spec.id} is defined twice; give each node one definition")
        by_id[spec.id] = spec  # type: ignore[index]
    referenced = {a for s in specs for j in s.justifications for a in j}
    stored = yield from fetch_nodes(sorted(set(by_id) | referenced))
    yield from require_nodes([a for a in sorted(referenced) if a not in by_id and a not in stored],
                             what="referenced nodes")
    kinds = {node: Kind(props["kind"]) for node, props in stored.items()}
    kinds.update({node: spec.kind for node, spec in by_id.items()})
    for node, spec in by_id.items():
        check_edges(node, spec.kind, {a: kinds[a] for j in spec.justifications for a in j})
        not_sources = [s for s in spec.sources if kinds.get(s) is not Kind.SOURCE]
        if not_sources:
            raise InvalidInputError(
                f"sources of {node} must be Source nodes, but {', '.join(not_sources)} "
                f"{'is' if len(not_sources) == 1 else 'are'} not; a claim resting on other claims "
                "takes them as derived_from")
    existing = [node for node in by_id if node in stored]
    stored_justs, _ = yield from fetch_justifications(existing)

    change = Change(kinds=kinds)
    created, unchanged, replaced = [], [], []
    for node, spec in by_id.items():
        props = spec.props(now)
        if node not in stored:
            change.new_nodes[node] = props
            change.new_justifications[node] = spec.justifications
            created.append(node)
            continue
        old = stored[node]
        have = {frozenset(j) for j in stored_justs.get(node, [])}
        missing = [j for j in spec.justifications if frozenset(j) not in have]
        same_content = old.get("digest") == props["digest"]
        if same_content and not missing:
            unchanged.append(node)
        elif same_content and _only_new_sources(spec, missing, kinds):
            change.new_justifications[node] = missing
            replaced.append(node)
        elif replace:
            if Kind(old["kind"]) is not spec.kind:
                raise ConflictError(f"{node} is a {old['kind']}; it cannot become a {spec.kind}")
            keep = {k: old.get(k) for k in _KEPT_ON_REPLACE}
            dropped = {k: None for k in old if k not in props and k not in ("state", *keep)}
            change.set_props[node] = {**dropped, **props, **keep}
            change.replace_support.add(node)
            change.new_justifications[node] = spec.justifications
            replaced.append(node)
        else:
            raise ConflictError(
                f"{node} already exists with different content or support; pass replace=True to "
                "overwrite it, or use justify() to add an alternative justification"
            )
    edges = sum(len(j) for justs in change.new_justifications.values() for j in justs)
    if change.new_nodes or change.set_props or change.new_justifications:
        commit = yield from plan_change(change, cause=cause, at=now, now=now)
        yield commit
    return LoadReport(created=created, unchanged=unchanged, replaced=replaced, edges=edges)


_KEPT_ON_REPLACE = ("retracted", "pending", "reason", "retracted_by", "retracted_at", "created_at",
                    "executed_at")


def _only_new_sources(spec: NodeSpec, missing: list[list[str]], kinds: dict[str, Kind]) -> bool:
    """A claim re-stated by another source gains that source as one more justification."""
    return spec.kind is Kind.CLAIM and all(
        len(j) == 1 and kinds[j[0]] is Kind.SOURCE for j in missing
    )


def justify(node_id: str, antecedents: Sequence[str], *, now: int) -> Op[bool]:
    """Add an alternative justification; returns False when it already existed."""
    node_id = check_id(node_id, what="node id")
    ants = check_ids(antecedents, what="antecedents")
    if not ants:
        raise InvalidInputError("a justification needs at least one antecedent")
    found = yield from require_nodes([node_id, *ants], what="nodes")
    kinds = {n: Kind(p["kind"]) for n, p in found.items()}
    check_edges(node_id, kinds[node_id], {a: kinds[a] for a in ants})
    justs, _ = yield from fetch_justifications([node_id])
    if frozenset(ants) in {frozenset(j) for j in justs.get(node_id, [])}:
        return False
    change = Change(new_justifications={node_id: [ants]}, kinds=kinds)
    commit = yield from plan_change(change, cause="justify", at=now, now=now)
    yield commit
    return True
