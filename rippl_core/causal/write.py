"""Writing the causal graph: nodes and their justifications, all or nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rippl_core._runtime.collector import held_off
from rippl_core._runtime.op import Op
from rippl_core._runtime.timeutil import now_ms
from rippl_core._runtime.validation import SequenceNotStr, check_id, check_ids
from rippl_core.causal.nodes import (
    fetch_justifications,
    fetch_nodes,
    get,
    require_nodes,
    stated_claims,
)
from rippl_core.causal.relabel import Change, plan_change
from rippl_core.causal.spec import GraphSpec, NodeSpec, node_specs, validated_all
from rippl_core.errors import ConflictError, InvalidInputError
from rippl_core.models import LoadReport, Node
from rippl_core.vocabulary import EDGE_TYPES, Kind, edge_type

type LoadProgress = Callable[[str, int, int], None]
CHECK_STEP = 1000  # nodes checked between two progress reports


def write_nodes(specs: Sequence[NodeSpec], *, replace: bool, now: int, cause: str = "add",
                progress: LoadProgress | None = None) -> Op[LoadReport]:
    """Create or update nodes and their support in one atomic commit (all or nothing): validate
    every spec, read what exists, check the edges, plan each node, then commit the change.
    `progress(stage, done, total)` is told how far "check" and "write" are."""
    report_progress = progress or (lambda stage, done, total: None)
    specs = yield from _named(specs)
    with held_off(len(specs)):  # CPU only, no I/O: see rippl_core._runtime.collector
        validated: list[NodeSpec] = []
        for done in range(0, len(specs), CHECK_STEP):  # each field checked a whole step at once
            report_progress("check", done, len(specs))
            validated += validated_all(specs[done:done + CHECK_STEP])
        report_progress("check", len(specs), len(specs))
        by_id = _distinct(validated)
        referenced = {a for s in by_id.values() for j in s.justifications for a in j}
    stored = yield from fetch_nodes(sorted(set(by_id) | referenced))
    yield from require_nodes([a for a in sorted(referenced) if a not in by_id and a not in stored],
                             what="referenced nodes")
    kinds = {node: Kind(props["kind"]) for node, props in stored.items()}
    kinds.update({node: spec.kind for node, spec in by_id.items()})
    if not _plain_support(by_id, kinds):
        for node, spec in by_id.items():
            _check_support(node, spec, kinds)
    stored_justs, _ = yield from fetch_justifications([node for node in by_id if node in stored])

    change = Change.over(stored)
    change.kinds.update(kinds)
    report: dict[str, list[str]] = {"created": [], "unchanged": [], "replaced": []}
    with held_off(len(by_id)):
        for node, spec in by_id.items():
            outcome = _plan_node(change, spec, stored.get(node), stored_justs.get(node, []),
                                 replace=replace, now=now)
            report[outcome].append(node)
        edges = sum(len(j) for justs in change.new_justifications.values() for j in justs)
    report_progress("write", 0, 1)
    if change.new_nodes or change.set_props or change.new_justifications:
        commit = yield from plan_change(change, cause=cause, at=now, now=now)
        yield commit
    report_progress("write", 1, 1)
    return LoadReport(**report, edges=edges)


def _named(specs: Sequence[NodeSpec]) -> Op[list[NodeSpec]]:
    """Claims given without an id are the claims already stating their text (whatever their ids,
    in their stored wording), else new claims with an id derived from the text."""
    unnamed = [s.text for s in specs if s.kind is Kind.CLAIM and s.id is None]
    stated = yield from stated_claims(unnamed)
    return [dataclasses.replace(s, id=stated[s.text][0], text=stated[s.text][1])
            if s.kind is Kind.CLAIM and s.id is None and s.text in stated else s for s in specs]


def _distinct(specs: Sequence[NodeSpec]) -> dict[str, NodeSpec]:
    by_id: dict[str, NodeSpec] = {}
    for spec in specs:
        assert spec.id is not None  # validated specs have their id
        if spec.id in by_id:
            raise InvalidInputError(f"{spec.id} is defined twice; give each node one definition")
        by_id[spec.id] = spec
    return by_id


def _plain_support(by_id: Mapping[str, NodeSpec], kinds: Mapping[str, Kind]) -> bool:
    """Whether every edge of the specs is allowed and every source is a Source (the whole batch at
    once; `_check_support` says what is wrong)."""
    return (all((kinds[a], spec.kind) in EDGE_TYPES and a != node
                for node, spec in by_id.items() for j in spec.justifications for a in j)
            and all(kinds.get(s) is Kind.SOURCE for spec in by_id.values() for s in spec.sources))


def _check_support(node: str, spec: NodeSpec, kinds: Mapping[str, Kind]) -> None:
    """Refuse edges the data model forbids, and sources that are not Source nodes."""
    check_edges(node, spec.kind, {a: kinds[a] for j in spec.justifications for a in j})
    not_sources = [s for s in spec.sources if kinds.get(s) is not Kind.SOURCE]
    if not_sources:
        raise InvalidInputError(
            f"sources of {node} must be Source nodes, but {', '.join(not_sources)} "
            f"{'is' if len(not_sources) == 1 else 'are'} not; a claim resting on other claims "
            "takes them as derived_from")


def _plan_node(change: Change, spec: NodeSpec, old: Mapping[str, Any] | None,
               old_justs: list[list[str]], *, replace: bool, now: int) -> str:
    """Add what writing `spec` changes to `change`; returns created, unchanged or replaced.
    The same content and support is a no-op; a claim re-stated by another source gains it as one
    more justification; anything else different needs `replace`."""
    node, props = spec.id, spec.props(now)
    assert node is not None
    if old is None:
        change.new_nodes[node] = props
        change.new_justifications[node] = spec.justifications
        return "created"
    have = {frozenset(j) for j in old_justs}
    missing = [j for j in spec.justifications if frozenset(j) not in have]
    keyed = _key_change(spec, old)
    same_content = old.get("digest") == props["digest"] and keyed is not None
    if same_content and not missing and not keyed:
        return "unchanged"
    if same_content and (not missing or _only_new_sources(spec, missing, change.kinds)):
        if missing:
            change.new_justifications[node] = missing
        if keyed:
            change.set_props[node] = keyed
        return "replaced"
    if not replace:
        differs = f"{node} already exists with different content or support"
        raise ConflictError(
            f"{differs}; pass replace=True to overwrite it, or use justify() to add an "
            "alternative justification",
            cli=f"{differs}; load with --replace to overwrite it, or list the extra support "
                "under justifications: to add an alternative justification")
    if Kind(old["kind"]) is not spec.kind:
        raise ConflictError(f"{node} is a {old['kind']}; it cannot become a {spec.kind}")
    keep = {k: old.get(k) for k in _KEPT_ON_REPLACE}
    dropped = {k: None for k in old if k not in props and k not in ("state", *keep)}
    change.set_props[node] = {**dropped, **props, **keep}
    change.replace_support.add(node)
    change.new_justifications[node] = spec.justifications
    return "replaced"


def _key_change(spec: NodeSpec, old: Mapping[str, Any]) -> dict[str, Any] | None:
    """What writing `spec` changes of a stored claim's key and value: {} nothing (no key given, or
    the same), the key and value to set (the claim had none), or None (another key or value: a
    change of content, which needs `replace`)."""
    if spec.key is None or (old.get("key"), old.get("value")) == (spec.key, spec.value):
        return {}
    if old.get("key") is None:
        return {"key": spec.key, "value": spec.value}
    return None


_KEPT_ON_REPLACE = ("retracted", "pending", "reason", "retracted_by", "retracted_at", "created_at",
                    "executed_at")


def _only_new_sources(spec: NodeSpec, missing: list[list[str]], kinds: dict[str, Kind]) -> bool:
    """A claim re-stated by another source gains that source as one more justification."""
    return spec.kind is Kind.CLAIM and all(
        len(j) == 1 and kinds[j[0]] is Kind.SOURCE for j in missing
    )


def justify(node_id: str, antecedents: SequenceNotStr[str], *, now: int) -> Op[bool]:
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
    change = Change.over(found, new_justifications={node_id: [ants]})
    commit = yield from plan_change(change, cause="justify", at=now, now=now)
    yield commit
    return True


def check_edges(node: str, kind: Kind, antecedents: Mapping[str, Kind]) -> None:
    """Refuse an edge the data model does not allow, before anything is written."""
    for antecedent, antecedent_kind in antecedents.items():
        if antecedent == node:
            raise InvalidInputError(f"{node} cannot support itself")
        if edge_type(antecedent_kind, kind) is None:
            raise InvalidInputError(
                f"a {antecedent_kind} ({antecedent}) cannot support a {kind} ({node}); allowed: "
                "Source->Claim, Claim->Claim, Claim->Decision, Decision->Decision, "
                "Decision->Action, Action->Action"
            )


def add(spec: NodeSpec, *, replace: bool) -> Op[Node]:
    report = yield from write_nodes([spec], replace=replace, now=now_ms())
    node = yield from get((report.created or report.unchanged or report.replaced)[0])
    return node


def load(spec: GraphSpec, *, replace: bool, progress: LoadProgress | None = None) -> Op[LoadReport]:
    with held_off(len(spec.sources) + len(spec.claims) + len(spec.decisions) + len(spec.actions)):
        specs = node_specs(spec)
    report = yield from write_nodes(specs, replace=replace, now=now_ms(), cause="load",
                                    progress=progress)
    return report


def add_justification(node_id: str, antecedents: SequenceNotStr[str]) -> Op[bool]:
    added = yield from justify(node_id, antecedents, now=now_ms())
    return added
