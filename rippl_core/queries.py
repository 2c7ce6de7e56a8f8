"""Every Cypher text Rippl sends. Labels and relationship types come from the fixed vocabulary;
all values are parameters. The sync and async clients share these builders."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rippl_core.temporal_queries import INDEXED_RELS
from rippl_core.temporal_queries import INDEXES as TEMPORAL_INDEXES
from rippl_core.vocabulary import CAUSAL_RELS, Kind
from rippl_core.wire import Query

# Labels with a unique `id` (constraint + range index), and extra range indexes.
ID_LABELS = ("Node", "Source", "Claim", "Decision", "Action", "Agent", "Topic", "ReviewItem",
             "Receipt")
EXTRA_INDEXES = (("Action", "call_key"), ("Change", "node"), ("Change", "valid_from"),
                 ("ReviewItem", "status"), ("Receipt", "seq"), *TEMPORAL_INDEXES)


def create_index(label: str, prop: str) -> Query:
    """A range index on a node label's property, or on a relationship type's (BELIEVES)."""
    if label in INDEXED_RELS:
        return Query(f"CREATE INDEX FOR ()-[r:{label}]-() ON (r.{prop})")
    return Query(f"CREATE INDEX FOR (n:{label}) ON (n.{prop})")


LIST_INDEXES = Query("CALL db.indexes() YIELD label, properties RETURN label, properties",
                     read_only=True)


def get_nodes(ids: Sequence[str]) -> Query:
    return Query("UNWIND $ids AS id MATCH (n:Node {id: id}) RETURN properties(n)", {"ids": ids},
                 read_only=True)


def node_state(node_id: str) -> Query:
    """The pre-flight read: one indexed lookup of the materialised state."""
    return Query("MATCH (n:Node {id: $id}) RETURN n.kind, n.state, n.executed_at", {"id": node_id},
                 read_only=True)


def resolve_call(keys: Sequence[str]) -> Query:
    """Actions matching a tool call: (id, call_key, kind, state, executed_at)."""
    return Query("MATCH (a:Action) WHERE a.call_key IN $keys "
                 "RETURN a.id, a.call_key, a.kind, a.state, a.executed_at LIMIT 4",
                 {"keys": keys}, read_only=True)


def justifications(ids: Sequence[str]) -> Query:
    """Incoming support edges of `ids`: (node, justification, antecedent, antecedent state)."""
    return Query(f"UNWIND $ids AS id MATCH (a:Node)-[e:{CAUSAL_RELS}]->(n:Node {{id: id}}) "
                 "RETURN id, e.j, a.id, a.state", {"ids": ids}, read_only=True)


def step_down(ids: Sequence[str]) -> Query:
    """One breadth-first step downstream: (from, to, kind, state, retracted, pending)."""
    return Query(f"UNWIND $ids AS id MATCH (:Node {{id: id}})-[:{CAUSAL_RELS}]->(m:Node) "
                 "RETURN id, m.id, m.kind, m.state, m.retracted, m.pending", {"ids": ids},
                 read_only=True)


def step_up(ids: Sequence[str], *, blocking_only: bool = False) -> Query:
    """One breadth-first step upstream: (from, to, kind, state, retracted, pending, reason)."""
    # WITH before the filter: a WHERE on p inside the MATCH makes the planner label-scan every node
    where = " WITH id, p WHERE p.state <> 'IN'" if blocking_only else ""
    return Query(f"UNWIND $ids AS id MATCH (p:Node)-[:{CAUSAL_RELS}]->(:Node {{id: id}}){where} "
                 "RETURN id, p.id, p.kind, p.state, p.retracted, p.pending, p.reason",
                 {"ids": ids}, read_only=True)


def create_nodes(kind: Kind, rows: Sequence[Mapping[str, Any]]) -> Query:
    return Query(f"UNWIND $rows AS r CREATE (n:Node:{kind.value}) SET n += r", {"rows": rows})


def update_nodes(rows: Sequence[Mapping[str, Any]]) -> Query:
    """Set properties: rows of {id, props}; a null prop removes it."""
    return Query("UNWIND $rows AS r MATCH (n:Node {id: r.id}) SET n += r.props", {"rows": rows})


def drop_support(ids: Sequence[str]) -> Query:
    return Query(f"UNWIND $ids AS id MATCH (:Node)-[e:{CAUSAL_RELS}]->(:Node {{id: id}}) DELETE e",
                 {"ids": ids})


def create_edges(rel: str, rows: Sequence[Mapping[str, Any]]) -> Query:
    """Edges of one type (from the vocabulary): rows of {src, dst, j}."""
    return Query(f"UNWIND $rows AS r MATCH (a:Node {{id: r.src}}), (b:Node {{id: r.dst}}) "
                 f"CREATE (a)-[:{rel} {{j: r.j}}]->(b)", {"rows": rows})


def set_states(rows: Sequence[Mapping[str, Any]], *, at: int, now: int, cause: str,
               review: str | None) -> Query:
    """Materialise new states and append one history record per change."""
    return Query(
        "UNWIND $rows AS r MATCH (n:Node {id: r.id}) SET n.state = r.after "
        "CREATE (:Change {node: r.id, kind: n.kind, before: r.before, after: r.after, "
        "valid_from: $at, recorded_at: $now, cause: $cause, review: $review})",
        {"rows": rows, "at": at, "now": now, "cause": cause, "review": review},
    )


STATS = Query("MATCH (n:Node) RETURN n.kind, n.state, n.executed_at IS NOT NULL, count(n)",
              read_only=True)
EDGE_COUNT = Query(f"MATCH (:Node)-[e:{CAUSAL_RELS}]->(:Node) RETURN count(e)", read_only=True)


def chunks[T](rows: Sequence[T], size: int = 5000) -> Iterable[Sequence[T]]:
    for start in range(0, len(rows), size):
        yield rows[start:start + size]
