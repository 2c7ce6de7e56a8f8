"""Cypher builders of the review gate and the receipt chain."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from rippl_core._runtime.schema import Index, Schema
from rippl_core._runtime.validation import MANY_HOSTS
from rippl_core._runtime.wire import Query

# Review items and receipts have unique ids; the queue is read by status, the chain by sequence.
# The log's Merkle tree keeps each perfect subtree as a :MerkleNode (id "<level>:<index>", hash h);
# each reviewer's current key is a :ReviewerKey (id: the reviewer).
# A retraction by provenance finds sources by what read them: the tool, the reading's time, the
# run (and the run's agent and framework), the source's kind and uri.
SCHEMA = Schema("3", unique_ids=("ReviewItem", "Receipt", "MerkleNode", "ReviewerKey"),
                indexes=(Index("ReviewItem", "status"), Index("Receipt", "seq"),
                         Index("Source", "tool"), Index("Source", "observed_at"),
                         Index("Source", "run"), Index("Source", "source_type"),
                         Index("Source", "uri"), Index("Source", "host"), Index("Run", "agent"),
                         Index("Run", "framework")))


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


def head(actor: str) -> Query:
    """The chain's head (last seq and hash, the tree's size and frontier) and the actor's
    registered key, in one read: all an append needs."""
    return Query("OPTIONAL MATCH (h:ReceiptHead) OPTIONAL MATCH (k:ReviewerKey {id: $actor}) "
                 "RETURN h.seq, h.hash, h.size, h.frontier, k.key, k.seq",
                 {"actor": actor}, read_only=True)


TREE_HEAD = Query("OPTIONAL MATCH (h:ReceiptHead) RETURN h.seq, h.size, h.root", read_only=True)


def append_receipt(props: Mapping[str, Any], tree: Mapping[str, Any],
                   nodes: list[dict[str, str]]) -> Query:
    """Append a receipt, move the chain head and the tree's head, and add the perfect subtrees the
    receipt completes, in one query."""
    return Query("CREATE (r:Receipt) SET r += $props "
                 "MERGE (h:ReceiptHead {name: 'head'}) SET h.seq = $props.seq, h.hash = $props.hash, "
                 "h.size = $tree.size, h.root = $tree.root, h.frontier = $tree.frontier "
                 "WITH h UNWIND $nodes AS n CREATE (:MerkleNode {id: n.id, h: n.h})",
                 {"props": props, "tree": tree, "nodes": nodes})


def receipts_since(after: int, upto: int) -> Query:
    """The receipts after seq `after` up to `upto`, with the tree's stored leaf of each."""
    return Query("MATCH (r:Receipt) WHERE r.seq > $after AND r.seq <= $upto "
                 "OPTIONAL MATCH (m:MerkleNode {id: '0:' + toString(r.seq - 1)}) "
                 "RETURN properties(r), m.h ORDER BY r.seq", {"after": after, "upto": upto},
                 read_only=True)


def merkle_nodes(ids: list[str]) -> Query:
    return Query("UNWIND $ids AS id MATCH (m:MerkleNode {id: id}) RETURN m.id, m.h", {"ids": ids},
                 read_only=True)


def backfill_tree(tree: Mapping[str, Any], nodes: list[dict[str, str]]) -> Query:
    """Write perfect subtrees (idempotent) and, with `tree`, the tree's head."""
    return Query("UNWIND $nodes AS n MERGE (m:MerkleNode {id: n.id}) SET m.h = n.h "
                 "WITH count(*) AS written MATCH (h:ReceiptHead) "
                 "SET h.size = $tree.size, h.root = $tree.root, h.frontier = $tree.frontier",
                 {"tree": tree, "nodes": nodes})


def set_reviewer_key(reviewer: str, key: str, seq: int) -> Query:
    return Query("MERGE (k:ReviewerKey {id: $reviewer}) SET k.key = $key, k.seq = $seq",
                 {"reviewer": reviewer, "key": key, "seq": seq})


def drop_reviewer_key(reviewer: str) -> Query:
    return Query("MATCH (k:ReviewerKey {id: $reviewer}) DELETE k", {"reviewer": reviewer})


REVIEWER_KEYS = Query("MATCH (k:ReviewerKey) RETURN k.id, k.key ORDER BY k.id", read_only=True)


# The whole chain and its head in one read, so a receipt appended meanwhile cannot make them disagree.
CHAIN = Query("OPTIONAL MATCH (h:ReceiptHead) WITH h.seq AS seq, h.hash AS hash "
              "OPTIONAL MATCH (r:Receipt) "
              "RETURN seq, hash, CASE WHEN r IS NULL THEN NULL ELSE properties(r) END ORDER BY r.seq",
              read_only=True)


def list_receipts() -> Query:
    return Query("MATCH (r:Receipt) RETURN properties(r) ORDER BY r.seq", read_only=True)


# What a retraction by provenance reads of each candidate source (and the stored state a wave
# plans from), with its run's agent and framework and the claims it supports.
_SOURCE_FIELDS = ("id", "kind", "state", "source_type", "tool", "args", "uri", "run", "observed_at",
                  "retracted", "pending", "blockers", "reason", "host")
RUN_LABEL = "Run"  # capture's run node (capture sits beside review; the label is all we share)


def provenance_sources(*, tool: str | None, since: int | None, until: int | None,
                       run: str | None, agent: str | None, framework: str | None,
                       kind: str | None, prefix: str | None, with_run_sources: bool,
                       fragments: Sequence[str] = (),
                       prefix_on: Literal["all", "names", "host"] = "all") -> Query:
    """Candidate sources of a provenance query: every indexed condition given is tested here
    (the arguments and an argument's prefix are confirmed by the caller, on the `args` text
    returned; `fragments`, texts the canonical arguments must contain, narrow the rows first).
    A `prefix` is looked for in the source's id, uri and argument text (`prefix_on="all"`: a
    scan), in its id and uri only ("names"), or by the indexed `host` of a reading's URL
    arguments ("host": `prefix` is then the host; a reading naming several hosts is a candidate).
    Rows: (source fields, run's agent, run's framework, [claims it supports])."""
    where: list[str] = [f"s.args CONTAINS $frag{i}" for i in range(len(fragments))]
    params: dict[str, Any] = {f"frag{i}": f for i, f in enumerate(fragments)}
    runs = ""
    if agent is not None or framework is not None:
        cond = " AND ".join(c for c, v in (("r.agent = $agent", agent),
                                           ("r.framework = $framework", framework)) if v is not None)
        runs = f"MATCH (r:{RUN_LABEL}) WHERE {cond} WITH collect(r.id) AS runs "
        where.append("s.run IN runs")
        params |= {"agent": agent, "framework": framework}
    for cond, name, value in (("s.tool = $tool", "tool", tool), ("s.observed_at >= $since", "since", since),
                              ("s.observed_at < $until", "until", until), ("s.run = $run", "run", run),
                              ("s.source_type = $kind", "kind", kind)):
        if value is not None:
            where.append(cond)
            params[name] = value
    if not with_run_sources and kind is None:
        where.append("(s.source_type IS NULL OR s.source_type <> 'run')")
    if prefix is not None and prefix_on == "host":
        where.append("s.host IN $hosts")
        params["hosts"] = [prefix, MANY_HOSTS]
    elif prefix is not None and prefix_on == "names":
        where.append("(s.id STARTS WITH $prefix OR s.uri STARTS WITH $prefix)")
        params["prefix"] = prefix
    elif prefix is not None:  # an argument's value is confirmed by the caller on the parsed args
        where.append("(s.id STARTS WITH $prefix OR s.uri STARTS WITH $prefix "
                     "OR s.args CONTAINS $escaped)")
        params |= {"prefix": prefix, "escaped": json.dumps(prefix, ensure_ascii=False)[1:-1]}
    fields = ", ".join(f"{f}: s.{f}" for f in _SOURCE_FIELDS)
    return Query(f"{runs}MATCH (s:Source) WHERE {' AND '.join(where) or 'true'} "
                 f"OPTIONAL MATCH (sr:{RUN_LABEL} {{id: s.run}}) "
                 "OPTIONAL MATCH (s)-[:SUPPORTS]->(c:Claim) "
                 f"RETURN {{{fields}}}, sr.agent, sr.framework, collect(c.id)",
                 params, read_only=True)
