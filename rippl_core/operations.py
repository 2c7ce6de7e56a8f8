"""The public operations as generators, shared by `Rippl` and `AsyncRippl`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rippl_core import queries
from rippl_core.causal import NodeSpec, justify, write_nodes
from rippl_core.engine import Op, fetch_justifications, require_nodes
from rippl_core.errors import InvalidInputError
from rippl_core.models import LoadReport, Node, Reached, Stats, Wave
from rippl_core.receipts import SigningKey
from rippl_core.review import set_retracted
from rippl_core.spec import GraphSpec
from rippl_core.timeutil import TimeLike, from_ms, now_ms, to_ms
from rippl_core.validation import check_id
from rippl_core.vocabulary import Kind, State
from rippl_core.walk import trail, walk


def node_model(props: dict[str, Any], justs: list[list[str]] | None = None) -> Node:
    return Node(
        id=props["id"], kind=Kind(props["kind"]), text=props.get("text", ""),
        state=State(props["state"]), retracted=bool(props.get("retracted")),
        pending_reviews=int(props.get("pending") or 0), uri=props.get("uri"),
        source_type=props.get("source_type"), tool=props.get("tool"),
        args=json.loads(props["args"]) if props.get("args") else None,
        reason=props.get("reason"), executed_at=from_ms(props.get("executed_at")),
        created_at=from_ms(props.get("created_at")), justifications=justs or [],
        provenance=json.loads(props["provenance"]) if props.get("provenance") else None,
    )


def get(node_id: str) -> Op[Node]:
    node_id = check_id(node_id)
    found = yield from require_nodes([node_id], what="node")
    justs, _ = yield from fetch_justifications([node_id])
    return node_model(found[node_id], justs.get(node_id))


def add(spec: NodeSpec, *, replace: bool) -> Op[Node]:
    report = yield from write_nodes([spec], replace=replace, now=now_ms())
    node = yield from get((report.created or report.unchanged or report.replaced)[0])
    return node


def load(spec: GraphSpec, *, replace: bool) -> Op[LoadReport]:
    report = yield from write_nodes(spec.node_specs(), replace=replace, now=now_ms(), cause="load")
    return report


def add_justification(node_id: str, antecedents: Sequence[str]) -> Op[bool]:
    added = yield from justify(node_id, antecedents, now=now_ms())
    return added


def retraction(node_id: str, *, retracted: bool, reason: str, by: str, at: TimeLike | None,
               signing_key: SigningKey | None = None) -> Op[Wave]:
    now = now_ms()
    wave = yield from set_retracted(node_id, retracted=retracted, reason=reason, by=by,
                                    at=to_ms(at, name="at", default=now), now=now,
                                    signing_key=signing_key)
    return wave


def reach(node_id: str, *, down: bool, max_depth: int | None) -> Op[list[Reached]]:
    node_id = check_id(node_id)
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int)
                                  or max_depth < 1):
        raise InvalidInputError("max_depth must be a positive integer (or None for no limit)")
    yield from require_nodes([node_id], what="node")
    visits = yield from walk([node_id], down=down, max_depth=max_depth)
    reached = [
        Reached(id=v.id, kind=Kind(v.kind), state=State(v.state), depth=v.depth,
                trail=trail(visits, v.id) if down else trail(visits, v.id)[::-1])
        for v in visits.values()
    ]
    return sorted(reached, key=lambda r: (r.depth, r.id))


def stats() -> Op[Stats]:
    rows = yield queries.STATS
    edges = yield queries.EDGE_COUNT
    nodes: dict[str, int] = {}
    statuses: dict[str, dict[str, int]] = {}
    for kind, state, executed, count in rows:
        node = node_model({"id": "", "kind": kind, "state": state,
                           "executed_at": 0 if executed else None})
        nodes[kind] = nodes.get(kind, 0) + count
        by_status = statuses.setdefault(kind, {})
        by_status[node.status] = by_status.get(node.status, 0) + count
    return Stats(nodes=nodes, statuses=statuses, edges=edges[0][0] if edges else 0)
