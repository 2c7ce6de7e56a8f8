"""Reading the causal graph: nodes, their justifications, walks from a node, and counts."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rippl_core._runtime.op import Batch, Op
from rippl_core._runtime.timeutil import from_ms
from rippl_core._runtime.validation import (
    SequenceNotStr,
    call_key,
    canonical_args,
    check_id,
    check_ids,
    check_text,
    semantic_id,
)
from rippl_core.causal import cypher
from rippl_core.causal.spec import action_digest
from rippl_core.causal.walk import trails, walk
from rippl_core.errors import InvalidInputError, NotFoundError
from rippl_core.models import Node, Reached, Stats
from rippl_core.vocabulary import Kind, State, is_context


def fetch_nodes(ids: Sequence[str]) -> Op[dict[str, dict[str, Any]]]:
    """Stored properties of the nodes among `ids` that exist."""
    if not ids:
        return {}
    rows = yield cypher.get_nodes(list(ids))
    return {row[0]["id"]: row[0] for row in rows}


def fetch_justifications(ids: Sequence[str], *, public: bool = False
                         ) -> Op[tuple[dict[str, list[list[str]]], dict[str, str]]]:
    """Justifications of `ids` (antecedent lists grouped by edge property `j`) and antecedent
    states; `public`: as reads show them, through turns' contexts to their claims."""
    if not ids:
        return {}, {}
    rows = yield cypher.justifications(list(ids))
    if public:
        rows = yield from through_contexts(rows)
    return _grouped(rows)


def through_contexts(rows: Sequence[tuple[Any, ...]]) -> Op[list[tuple[Any, ...]]]:
    """Rows of `cypher.justifications` as public reads show them: a turn's context stands for
    the claims under it (one more round trip, only when a justification holds one)."""
    contexts = sorted({row[2] for row in rows if is_context(row[2])})
    if not contexts:
        return list(rows)
    held: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for context, claim, state in (yield cypher.context_claims(contexts)):
        held[context].append((claim, state))
    out: list[tuple[Any, ...]] = []
    for node, j, antecedent, state in rows:
        if is_context(antecedent):
            out.extend((node, j, claim, claim_state) for claim, claim_state in held[antecedent])
        else:
            out.append((node, j, antecedent, state))
    return out


def _grouped(rows: Sequence[tuple[Any, ...]]) -> tuple[dict[str, list[list[str]]], dict[str, str]]:
    """Rows of `cypher.justifications` as (justifications per node, antecedent states)."""
    grouped: dict[str, dict[Any, list[str]]] = defaultdict(lambda: defaultdict(list))
    states: dict[str, str] = {}
    for node, j, antecedent, state in rows:
        grouped[node][j].append(antecedent)
        states[antecedent] = state
    justs = {node: [sorted(ants) for _, ants in sorted(groups.items(), key=lambda kv: str(kv[0]))]
             for node, groups in grouped.items()}
    return justs, states


def require_nodes(ids: Sequence[str], *, what: str) -> Op[dict[str, dict[str, Any]]]:
    found = yield from fetch_nodes(ids)
    missing = [i for i in ids if i not in found]
    if missing:
        raise _not_found(what, missing)
    return found


def _not_found(what: str, missing: Sequence[str]) -> NotFoundError:
    return NotFoundError(f"{what} not found: {', '.join(missing)}. Add them first (add_source/"
                         "add_claim/add_decision/add_action) or check the ids.")


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
        key=props.get("key"), value=props.get("value"),
    )


def claims_stating(text: str) -> Op[list[Node]]:
    """The claims stating `text` (equal once normalised: case, spacing, a final period), whatever
    their ids, in id order."""
    rows = yield cypher.claims_stating([semantic_id(Kind.CLAIM, check_text(text, what="text"))])
    found = {props["id"]: props for _, props in rows}
    justs, _ = yield from fetch_justifications(list(found), public=True)
    return [node_model(props, justs.get(node_id)) for node_id, props in found.items()]


def stated_claims(texts: Sequence[str]) -> Op[dict[str, tuple[str, str]]]:
    """For each text, the claim that already states it, whatever its id: (id, stored wording).
    A statement is one claim: a claim given without an id is that claim, not a second one that a
    retraction of the first would miss. Several claims stating one text are refused: the caller
    must say which (by id)."""
    keys = {semantic_id(Kind.CLAIM, check_text(text, what="claim text")): text for text in texts}
    if not keys:
        return {}
    rows = yield cypher.claims_stating(list(keys))
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for key, props in rows:
        found[key].append(props)
    stated = {}
    for key, claims in found.items():
        if len(claims) > 1:
            ids = ", ".join(c["id"] for c in claims)
            raise InvalidInputError(f"{len(claims)} claims state {keys[key]!r} ({ids}); give the "
                                    "id of the one you mean")
        stated[keys[key]] = (claims[0]["id"], claims[0]["text"])
    return stated


def backfill_text_keys() -> Op[None]:
    """Give the claims written before claims had a text key theirs (a schema upgrade)."""
    while True:
        rows = yield cypher.claims_without_text_key(5000)
        if not rows:
            return
        yield cypher.set_text_keys([{"id": node_id, "key": semantic_id(Kind.CLAIM, str(text))}
                                    for node_id, text in rows])


def backfill_call_keys() -> Op[None]:
    """Re-canonicalise the arguments of actions stored before arguments were Unicode-normalised
    and spelt numbers one way (a schema upgrade): their call key, and so which calls match them,
    is what `canonical_args` says today."""
    after = ""
    while True:
        rows = yield cypher.actions_with_args(after, 2000)
        if not rows:
            return
        changed = []
        for (props,) in rows:
            try:
                args = canonical_args(json.loads(props["args"]))
            except (InvalidInputError, ValueError):
                continue  # kept as stored: it cannot be read as arguments today
            if args != props["args"]:
                changed.append({"id": props["id"], "args": args,
                                "call_key": call_key(props.get("tool") or "", args),
                                "digest": action_digest(props, args)})
        if changed:
            yield cypher.set_args(changed)
        after = rows[-1][0]["id"]


def get(node_id: str) -> Op[Node]:
    node_id = check_id(node_id)
    rows, support = yield Batch(cypher.get_nodes([node_id]), cypher.justifications([node_id]))
    if not rows:
        raise _not_found("node", [node_id])
    justs, _ = _grouped((yield from through_contexts(support)))
    return node_model(rows[0][0], justs.get(node_id))


def reach(node_id: str, *, down: bool, max_depth: int | None) -> Op[list[Reached]]:
    node_id = check_id(node_id)
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int)
                                  or max_depth < 1):
        raise InvalidInputError("max_depth must be a positive integer (or None for no limit)")
    yield from require_nodes([node_id], what="node")
    visits = yield from walk([node_id], down=down, max_depth=max_depth)
    paths = trails(visits)
    reached = [
        Reached(id=v.id, kind=Kind(v.kind), state=State(v.state), depth=v.depth,
                trail=paths[v.id] if down else paths[v.id][::-1])
        for v in visits.values() if not is_context(v.id)
    ]
    return sorted(reached, key=lambda r: (r.depth, r.id))


SCAN_CHUNK = 25_000  # internal node ids per query of a scan of the whole graph


def list_nodes(ids: SequenceNotStr[str] | None, *, limit: int | None) -> Op[list[Node]]:
    """The causal nodes with their justifications: these `ids` (those that exist, in that order),
    or every node in creation order; at most `limit` of them."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidInputError("limit must be a non-negative integer (or None for no limit)")
    if ids is not None:
        wanted = check_ids(ids, what="node ids")
        found = yield from fetch_nodes(wanted)
        props = [found[i] for i in wanted if i in found][:limit]
    else:
        top = (yield cypher.MAX_NODE_ID)[0][0]
        props = []
        for low in range(0, (top if top is not None else -1) + 1, SCAN_CHUNK):
            if limit is not None and len(props) >= limit:
                break
            rows = yield cypher.node_props_in_id_range(low, low + SCAN_CHUNK)
            props += [row[1] for row in sorted(rows, key=lambda r: r[0])]
        props = [p for p in props if not is_context(p["id"])][:limit]
    justs: dict[str, list[list[str]]] = {}
    for start in range(0, len(props), SCAN_CHUNK):
        more, _ = yield from fetch_justifications([p["id"] for p in props[start:start + SCAN_CHUNK]],
                                                  public=True)
        justs.update(more)
    return [node_model(p, justs.get(p["id"])) for p in props]


def stats() -> Op[Stats]:
    rows = yield cypher.STATS
    edges = yield cypher.EDGE_COUNT
    nodes: dict[str, int] = {}
    statuses: dict[str, dict[str, int]] = {}
    for kind, state, executed, count in rows:
        node = node_model({"id": "", "kind": kind, "state": state,
                           "executed_at": 0 if executed else None})
        nodes[kind] = nodes.get(kind, 0) + count
        by_status = statuses.setdefault(kind, {})
        by_status[node.status] = by_status.get(node.status, 0) + count
    return Stats(nodes=nodes, statuses=statuses, edges=edges[0][0] if edges else 0)
