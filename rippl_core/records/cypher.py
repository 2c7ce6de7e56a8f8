"""Cypher for record stores (`rippl_core.records`): versioned text records held as claims.

A record version is a `(:Record)` node linked to the claim it states by a `RECORDS` edge. Labels and
relationship types are fixed here; every value is a parameter. Queries never return the `vec`
property (a `vecf32`, which the compact reply format does not carry as a list): they project the
fields they need.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rippl_core._runtime.schema import Index
from rippl_core._runtime.wire import Query

LABEL = "Record"
REL = "RECORDS"
INDEXES = (Index(LABEL, "rid"), Index(LABEL, "store"))

# The stored fields of a version, projected as a map (everything but `vec`).
_FIELDS = ("store", "rid", "version", "content", "scope", "categories", "metadata", "importance",
           "source", "private", "created_at", "last_accessed", "claim", "linked", "valid_from",
           "valid_to", "recorded_at", "closed_at")
_SLIM = "{" + ", ".join(f"{f}: r.{f}" for f in _FIELDS) + "}"
_FULL = "{" + ", ".join(f"{f}: r.{f}" for f in (*_FIELDS, "embedding")) + "}"

# Visibility of a version. Current view: the open version. As of (t, known): the version valid at
# t, as recorded by `known` (a version closed after `known` still counted as open then).
CURRENT = "r.valid_to IS NULL"
AS_OF = ("r.recorded_at <= $known AND r.valid_from <= $t AND "
         "(r.valid_to IS NULL OR r.valid_to > $t OR r.closed_at > $known)")
SCOPE = "($prefix IS NULL OR r.scope = $prefix OR r.scope STARTS WITH ($prefix + '/'))"
CATEGORIES = "($categories IS NULL OR any(x IN r.categories WHERE x IN $categories))"
IDS = "($ids IS NULL OR r.rid IN $ids)"
OLDER = "($older IS NULL OR r.created_at < $older)"


def _view(as_of: tuple[int, int] | None) -> tuple[str, dict[str, Any]]:
    if as_of is None:
        return CURRENT, {}
    return AS_OF, {"t": as_of[0], "known": as_of[1]}


def current(store: str, rids: Sequence[str]) -> Query:
    """The open versions of `rids`, with their embeddings."""
    return Query(f"UNWIND $rids AS k MATCH (r:{LABEL} {{rid: k}}) WHERE r.store = $store AND "
                 f"{CURRENT} RETURN {_FULL}", {"store": store, "rids": list(rids)}, read_only=True)


def select(store: str, *, as_of: tuple[int, int] | None, prefix: str | None,
           categories: Sequence[str] | None, ids: Sequence[str] | None, older: int | None,
           embeddings: bool) -> Query:
    """The visible versions matching the filters (all given filters must hold), with the claim's
    materialised state."""
    view, params = _view(as_of)
    return Query(
        f"MATCH (r:{LABEL})-[:{REL}]->(c:Node) WHERE r.store = $store AND {view} AND {SCOPE} "
        f"AND {CATEGORIES} AND {IDS} AND {OLDER} "
        f"RETURN {_FULL if embeddings else _SLIM}, c.state",
        {"store": store, "prefix": prefix, "categories": _list(categories), "ids": _list(ids),
         "older": older, **params}, read_only=True)


def overview(store: str, *, as_of: tuple[int, int] | None, prefix: str | None) -> Query:
    """What a scope summary needs: scope, categories and creation time of each visible version."""
    view, params = _view(as_of)
    return Query(f"MATCH (r:{LABEL}) WHERE r.store = $store AND {view} AND {SCOPE} "
                 "RETURN r.scope, r.categories, r.created_at",
                 {"store": store, "prefix": prefix, **params}, read_only=True)


def rank(store: str, vector: Sequence[float], *, as_of: tuple[int, int] | None,
         prefix: str | None, categories: Sequence[str] | None, min_score: float,
         exclude: Sequence[str], limit: int | None) -> Query:
    """Exact cosine ranking inside FalkorDB: (rid, version, claim, claim state, metadata, score) of
    every visible version with an embedding that passes the filters, best first. `exclude` drops
    versions whose claim is in one of those materialised states (the current view). Scores are
    computed from the record index first and the claim is reached only for what passes (joining
    first made the planner traverse every record: 2x slower at 20k records)."""
    view, params = _view(as_of)
    tail = " LIMIT $limit" if limit is not None else ""
    return Query(
        f"MATCH (r:{LABEL}) WHERE r.store = $store AND {view} AND {SCOPE} AND {CATEGORIES} "
        "AND r.vec IS NOT NULL "
        "WITH r, 1.0 - vec.cosineDistance(r.vec, vecf32($vector)) AS score WHERE score >= $min "
        f"MATCH (r)-[:{REL}]->(c:Node) WHERE NOT c.state IN $exclude "
        "RETURN r.rid, r.version, r.claim, c.state, r.metadata, score "
        f"ORDER BY score DESC, r.rid{tail}",
        {"store": store, "vector": list(vector), "prefix": prefix,
         "categories": _list(categories), "min": min_score, "exclude": list(exclude),
         "limit": limit, **params}, read_only=True)


def versions(store: str, keys: Sequence[Mapping[str, Any]]) -> Query:
    """Full versions by (rid, version), with the claim's materialised state."""
    return Query(f"UNWIND $keys AS k MATCH (r:{LABEL} {{rid: k.rid}})-[:{REL}]->(c:Node) "
                 f"WHERE r.store = $store AND r.version = k.version RETURN {_FULL}, c.state",
                 {"store": store, "keys": list(keys)}, read_only=True)


def latest_versions(store: str, rids: Sequence[str]) -> Query:
    """The highest version number of each of `rids` (open or ended)."""
    return Query(f"UNWIND $rids AS k MATCH (r:{LABEL} {{rid: k}}) WHERE r.store = $store "
                 "RETURN k, max(r.version)", {"store": store, "rids": list(rids)}, read_only=True)


def dimension(store: str) -> Query:
    """The embedding size used in the store (one sample)."""
    return Query(f"MATCH (r:{LABEL}) WHERE r.store = $store AND r.embedding IS NOT NULL "
                 "RETURN size(r.embedding) LIMIT 1", {"store": store}, read_only=True)


def create(store: str, rows: Sequence[Mapping[str, Any]]) -> Query:
    """New versions: rows of {claim, props}; `vec` is derived from the embedding."""
    return Query(
        f"UNWIND $rows AS row MATCH (c:Node {{id: row.claim}}) CREATE (r:{LABEL}) "
        "SET r += row.props, r.store = $store, "
        "r.vec = CASE WHEN row.props.embedding IS NULL THEN NULL "
        "ELSE vecf32(row.props.embedding) END "
        f"CREATE (r)-[:{REL}]->(c)", {"store": store, "rows": list(rows)})


def close(store: str, rids: Sequence[str], at: int) -> Query:
    """End the open versions of `rids` at `at` (valid and transaction time)."""
    return Query(f"UNWIND $rids AS k MATCH (r:{LABEL} {{rid: k}}) WHERE r.store = $store AND "
                 f"{CURRENT} SET r.valid_to = $at, r.closed_at = $at",
                 {"store": store, "rids": list(rids), "at": at})


def purge(store: str, rids: Sequence[str]) -> Query:
    """Delete every version of `rids` (history included)."""
    return Query(f"UNWIND $rids AS k MATCH (r:{LABEL} {{rid: k}}) WHERE r.store = $store "
                 "DETACH DELETE r", {"store": store, "rids": list(rids)})


def touch(store: str, rids: Sequence[str], at: int) -> Query:
    """Set the last access time of the open versions (not a new version)."""
    return Query(f"UNWIND $rids AS k MATCH (r:{LABEL} {{rid: k}}) WHERE r.store = $store AND "
                 f"{CURRENT} SET r.last_accessed = $at RETURN count(r)",
                 {"store": store, "rids": list(rids), "at": at})


def node_states(ids: Sequence[str]) -> Query:
    """Current materialised state of nodes."""
    return Query("UNWIND $ids AS id MATCH (n:Node {id: id}) RETURN id, n.state",
                 {"ids": list(ids)}, read_only=True)


def _list(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)
