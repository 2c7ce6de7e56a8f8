"""Relabelling what a change affects: read the region downstream of the change, label it with the
truth-maintenance rule, and build the atomic commit of the new states, their history records and
their events. Every write of the causal graph (adds, retractions, reviews) goes through here.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from rippl_core._runtime.collector import held_off
from rippl_core._runtime.op import Commit, Op
from rippl_core._runtime.timeutil import from_ms
from rippl_core._runtime.wire import Query
from rippl_core.causal import blockers, cypher
from rippl_core.causal.nodes import fetch_justifications, fetch_nodes
from rippl_core.causal.tms import Premise, Region, label
from rippl_core.causal.walk import walk
from rippl_core.vocabulary import EDGE_TYPES, Kind, State, is_context

_VALUE = {state: state.value for state in State}
_STATE = {state.value: state for state in State}  # State(x), without the call
_KIND = {kind.value: kind for kind in Kind}
_KIND_VALUE = {kind: kind.value for kind in Kind}


class _Transition(TypedDict):
    """A node's change of state as stored and announced (values, not enums)."""

    id: str
    kind: str
    before: str
    after: str
    blockers: str | None


@dataclass
class Change:
    """A structural or flag change to apply, before relabelling what it affects."""

    new_nodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> stored props
    set_props: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> props (None drops)
    new_justifications: dict[str, list[list[str]]] = field(default_factory=dict)
    replace_support: set[str] = field(default_factory=set)  # existing nodes losing old support
    kinds: dict[str, Kind] = field(default_factory=dict)  # kind of every node referenced
    # stored properties of nodes already read by the operation planning the change (the same
    # attempt, so the same graph: a commit whose reads went stale is retried from its start);
    # not read again
    stored: dict[str, dict[str, Any]] = field(default_factory=dict)
    executed: set[str] = field(default_factory=set)  # actions of the region that already ran
    # read with the region: the blockers stored on its nodes and on the antecedents around it
    # that are not IN (None: none stored), and why each retracted node of it was retracted
    stored_blockers: dict[str, str | None] = field(default_factory=dict)
    reasons: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def over(cls, stored: Mapping[str, dict[str, Any]], **fields: Any) -> Change:
        """A change planned on these stored nodes (id -> properties), read by the same attempt."""
        return cls(kinds={node: Kind(props["kind"]) for node, props in stored.items()},
                   stored=dict(stored), **fields)


_FRESH = Premise()


def _premise(props: Mapping[str, Any]) -> Premise:
    retracted, pending = props.get("retracted"), props.get("pending")
    if not retracted and not pending:
        return _FRESH
    return Premise(bool(retracted), int(pending or 0))


def read_region(change: Change, touched: Iterable[str] = ()) -> Op[tuple[Region, dict[str, State]]]:
    """Read what `change` can affect: the changed nodes plus everything downstream of the existing
    ones, with their justifications and the stored states of antecedents outside the region.
    Returns the region (with the change applied) and the stored state of each existing node."""
    roots = set(touched) | set(change.set_props) | set(change.replace_support)
    roots |= {n for n in change.new_justifications if n not in change.new_nodes}
    visits = yield from walk(roots, down=True)
    stored = {node: change.stored[node] for node in roots if node in change.stored}
    stored |= yield from fetch_nodes(sorted(roots - stored.keys()))
    info: dict[str, dict[str, Any]] = {node: stored[node] for node in roots}
    info.update({v.id: {"kind": v.kind, "state": v.state, "retracted": v.retracted,
                        "pending": v.pending} for v in visits.values()})
    change.executed |= {v.id for v in visits.values() if v.executed}
    justs, outside_states = yield from fetch_justifications(list(info))

    with held_off(len(info) + len(change.new_nodes)):  # CPU only
        region = Region()
        old: dict[str, State] = {}
        for node, props in info.items():
            region.nodes[node] = _premise({**props, **change.set_props.get(node, {})})
            old[node] = _STATE[props["state"]]
            change.kinds.setdefault(node, _KIND[props["kind"]])
            region.justifications[node] = [] if node in change.replace_support else justs.get(node, [])
        for node, props in change.new_nodes.items():
            region.nodes[node] = _premise(props)
        for node, extra in change.new_justifications.items():
            region.justifications[node] = region.justifications.get(node, []) + extra
        needed = {a for js in region.justifications.values() for j in js for a in j}
        known = {**{node: props["state"] for node, props in change.stored.items()}, **outside_states}
        unknown_outside = [a for a in needed if a not in region.nodes and a not in known]
    outside_props = yield from fetch_nodes(unknown_outside)
    for antecedent in needed - set(region.nodes):
        state = known.get(antecedent) or outside_props[antecedent]["state"]
        region.outside[antecedent] = _STATE[state]
    # what the blockers of the region are computed from (see `rippl_core.causal.blockers`)
    shaky = [v.id for v in visits.values() if v.state != "IN" or v.retracted or v.pending]
    shaky += [a for a, state in region.outside.items() if state is not State.IN]
    rows = (yield cypher.blockers_of(shaky)) if shaky else []
    read = {node: (carried, reason) for node, carried, reason in rows}
    read.update((node, (stored[node].get("blockers"), stored[node].get("reason"))) for node in roots)
    for node, (carried, reason) in read.items():
        change.stored_blockers[node] = carried
        change.reasons[node] = change.set_props.get(node, {}).get("reason", reason)
    return region, old


def plan_change(change: Change, *, cause: str, at: int, now: int, review: str | None = None,
                touched: Iterable[str] = ()) -> Op[Commit]:
    """Relabel everything `change` can affect and build the atomic commit that applies it."""
    region, old = yield from read_region(change, touched)
    with held_off(len(region.nodes)):  # CPU only (see rippl_core._runtime.collector)
        return commit_labels(change, region, label(region), old, cause=cause, at=at, now=now,
                             review=review)


def would_invalidate(region: Region, old: Mapping[str, State], node: str) -> list[str]:
    """Nodes of an already-read region that would go OUT if `node` were retracted (a preview)."""
    hypothetical = Region({**region.nodes, node: Premise(retracted=True)}, region.justifications,
                          region.outside)
    labels = label(hypothetical)
    return sorted(n for n, state in labels.items()
                  if state is State.OUT and old.get(n) is not State.OUT and n != node)


def materialised_blockers(change: Change, region: Region, labels: Mapping[str, State]
                          ) -> dict[str, str | None]:
    """What each node of the region will carry as `blockers` once labelled (None: nothing, for a
    node that is IN, or one left to a walk; see `rippl_core.causal.blockers`)."""
    shaky = [node for node, state in labels.items() if state is not State.IN]
    if not shaky:
        return dict.fromkeys(labels)

    def not_in(node: str) -> bool:
        state = labels.get(node) or region.outside.get(node)
        return state is not None and state is not State.IN

    preds = {node: {a for j in region.justifications.get(node, ()) for a in j if not_in(a)}
             for node in shaky}
    premises: dict[str, blockers.Premise] = {}
    known: dict[str, blockers.Trails | None] = {}
    for node in {a for ps in preds.values() for a in ps if a not in labels}:
        stored = change.stored_blockers.get(node)
        if stored is None:
            known[node] = None
            continue
        known[node], around = blockers.decode(stored)
        premises.update(around)
    blocking = [n for n in shaky if region.nodes[n].retracted or region.nodes[n].pending]
    for node in blocking:
        premises[node] = blockers.Premise(change.kinds[node].value, labels[node].value,
                                          change.reasons.get(node))
    found = blockers.trails(shaky, preds, blocking, known, cap=blockers.CAP)
    out: dict[str, str | None] = dict.fromkeys(labels)
    for node, trails in found.items():
        if trails is not None:
            out[node] = blockers.encode(trails, premises)
    return out


def commit_labels(change: Change, region: Region, labels: dict[str, State],
                  old: dict[str, State], *, cause: str, at: int, now: int,
                  review: str | None) -> Commit:
    commit = Commit()
    carried = materialised_blockers(change, region, labels)
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for node, props in change.new_nodes.items():
        row = {**props, "state": _VALUE[labels[node]]}
        if carried[node] is not None:
            row["blockers"] = carried[node]
        by_kind[props["kind"]].append(row)
    for kind, rows in by_kind.items():  # each with its first status record (`before` null)
        commit.queries.extend(cypher.create_nodes(Kind(kind), chunk, at=at, now=now, cause=cause,
                                                  review=review) for chunk in cypher.chunks(rows))
    if change.replace_support:
        commit.queries.append(cypher.drop_support(sorted(change.replace_support)))
    if change.set_props:
        rows = [{"id": node, "props": props} for node, props in change.set_props.items()]
        commit.queries.append(cypher.update_nodes(rows))
    own = [{"id": node, "retracted": props.get("retracted"), "pending": props.get("pending"),
            "at": at, "now": now}
           for node, props in change.set_props.items()
           if props.get("retracted") is not None or props.get("pending") is not None]
    if own:  # a node's own retraction state, bitemporally: what as-of reads rest on
        commit.queries.append(cypher.own_changes(own, cause=cause, review=review))
    commit.queries.extend(_edge_queries(change))
    transitions: list[_Transition] = [
        {"id": node, "kind": _KIND_VALUE[change.kinds[node]], "before": _VALUE[old[node]],
         "after": _VALUE[state], "blockers": carried[node]}
        for node, state in labels.items() if node in old and old[node] is not state
    ]
    for chunk in cypher.chunks(transitions):
        commit.queries.append(cypher.set_states(chunk, at=at, now=now, cause=cause,
                                                 review=review))
    recarried = [{"id": node, "blockers": value} for node, value in carried.items()
                 if node in old and old[node] is labels[node]
                 and value != change.stored_blockers.get(node)]
    for part in cypher.chunks(recarried):
        commit.queries.append(cypher.set_blockers(part))
    when = from_ms(now)
    stamp = when.isoformat() if when else None
    commit.events.extend(_created_events(change, labels, cause, stamp))
    # a turn's context is stored and labelled like any node, and announced never: what it holds
    # is announced by the decision resting on it (and a wave counts, receipts cover, only those)
    shown = [t for t in transitions if not is_context(t["id"])]
    commit.events.extend(_state_event(t, cause, review, stamp) for t in shown)
    commit.events.extend({**_state_event(t, cause, review, stamp), "type": "compensation_needed"}
                         for t in shown
                         if t["id"] in change.executed and t["after"] == State.OUT.value)
    return commit


def _edge_queries(change: Change) -> list[Query]:
    by_rel: dict[str, list[dict[str, Any]]] = defaultdict(list)
    kinds = change.kinds
    for node, justs in change.new_justifications.items():
        kind = kinds[node]
        for antecedents in justs:
            j = justification_key(antecedents)
            for antecedent in antecedents:  # the edge types were validated before planning
                by_rel[EDGE_TYPES[kinds[antecedent], kind]].append(
                    {"src": antecedent, "dst": node, "j": j})
    return [cypher.create_edges(rel, chunk) for rel, rows in sorted(by_rel.items())
            for chunk in cypher.chunks(rows)]


def justification_key(antecedents: Sequence[str]) -> str:
    """A stable name for a justification: the same antecedent set always gets the same key."""
    return hashlib.sha256("\x1f".join(sorted(antecedents)).encode()).hexdigest()[:16]


_EVENT_FOR_STATE = {State.AT_RISK: "node_at_risk", State.OUT: "node_invalidated",
                    State.IN: "node_restored"}


CREATED_EVENTS = 500  # a write creating more nodes announces them as one event, with a count


def _created_events(change: Change, labels: dict[str, State], cause: str,
                    at: str | None) -> list[dict[str, Any]]:
    """`node_created` of each node the change creates (one event with the count past
    `CREATED_EVENTS`: a load of a million nodes is not a million events in one message)."""
    created = change.new_nodes
    if len(created) > CREATED_EVENTS:
        return [{"type": "node_created", "count": len(created), "cause": cause, "at": at}]
    return [{"type": "node_created", "node": node, "kind": props["kind"],
             "after": _VALUE[labels[node]], "cause": cause, "at": at}
            for node, props in created.items()]


def _state_event(transition: _Transition, cause: str, review: str | None,
                 at: str | None) -> dict[str, Any]:
    return {"type": _EVENT_FOR_STATE[_STATE[transition["after"]]], "node": transition["id"],
            "kind": transition["kind"], "before": transition["before"],
            "after": transition["after"], "cause": cause, "review": review, "at": at}
