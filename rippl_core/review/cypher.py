"""Cypher builders of the review gate and the receipt chain."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rippl_core._runtime.schema import Index, Schema
from rippl_core._runtime.wire import Query

# Review items and receipts have unique ids; the queue is read by status, the chain by sequence.
SCHEMA = Schema("3", unique_ids=("ReviewItem", "Receipt"),
                indexes=(Index("ReviewItem", "status"), Index("Receipt", "seq")))


def create_review(props: Mapping[str, Any]) -> Query:
    return Query("MATCH (c:Node {id: $claim}) CREATE (r:ReviewItem)-[:TARGETS]->(c) SET r += $props",
                 {"claim": props["claim"], "props": props})


def create_reviews_of(props: Mapping[str, Any], claims: list[str]) -> Query:
    """A review item targeting several claims (an override names every premise it covers)."""
    return Query("CREATE (r:ReviewItem) SET r += $props WITH r UNWIND $claims AS cid "
                 "MATCH (c:Node {id: cid}) CREATE (r)-[:TARGETS]->(c)",
                 {"props": props, "claims": claims})


def vetoed_calls(rkey: str) -> Query:
    """The captured calls vetoed by their premises whose repeat key is `rkey`: (id, what bound it)."""
    return Query("MATCH (a:Action {vkey: $rkey}) RETURN a.id, a.binds ORDER BY a.created_at",
                 {"rkey": rkey}, read_only=True)


def create_override(props: Mapping[str, Any]) -> Query:
    return Query("CREATE (o:Override) SET o += $props", {"props": props})


LIST_OVERRIDES = Query("MATCH (o:Override) OPTIONAL MATCH (a:Action {id: o.used_by}) "
                       "RETURN properties(o), a.executed_at ORDER BY o.approved_at, o.id",
                       read_only=True)


def get_review(review_id: str) -> Query:
    return Query("MATCH (r:ReviewItem {id: $id}) RETURN properties(r)", {"id": review_id},
                 read_only=True)


def list_reviews(status: str | None) -> Query:
    where = "" if status is None else " WHERE r.status = $status"
    return Query(f"MATCH (r:ReviewItem){where} RETURN properties(r) ORDER BY r.proposed_at, r.id",
                 {"status": status} if status is not None else {}, read_only=True)


def decide_review(review_id: str, props: Mapping[str, Any]) -> Query:
    return Query("MATCH (r:ReviewItem {id: $id}) SET r += $props", {"id": review_id, "props": props})


HEAD = Query("OPTIONAL MATCH (h:ReceiptHead) RETURN h.seq, h.hash", read_only=True)


def append_receipt(props: Mapping[str, Any]) -> Query:
    """Append a receipt and move the chain head, in one query."""
    return Query("CREATE (r:Receipt) SET r += $props "
                 "MERGE (h:ReceiptHead {name: 'head'}) SET h.seq = $props.seq, h.hash = $props.hash",
                 {"props": props})


# The whole chain and its head in one read, so a receipt appended meanwhile cannot make them disagree.
CHAIN = Query("OPTIONAL MATCH (h:ReceiptHead) WITH h.seq AS seq, h.hash AS hash "
              "OPTIONAL MATCH (r:Receipt) "
              "RETURN seq, hash, CASE WHEN r IS NULL THEN NULL ELSE properties(r) END ORDER BY r.seq",
              read_only=True)


def list_receipts() -> Query:
    return Query("MATCH (r:Receipt) RETURN properties(r) ORDER BY r.seq", read_only=True)
