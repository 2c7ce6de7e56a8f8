"""Every Cypher text of the causal graph: nodes, support edges, materialised states and their
history (`:Change` records). Labels and relationship types come from the fixed vocabulary; all
values are parameters. The sync and async clients share these builders."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rippl_core._runtime.schema import Index, Schema
from rippl_core._runtime.wire import Query
from rippl_core.vocabulary import CARRIES, CAUSAL_RELS, CONTEXT, Kind

# Every causal node carries :Node and its kind's label, each with a unique `id`; status history
# (:Change) is read by node and by time; a claim is found by what it states (`text_key`, the
# semantic id of its text, whatever its own id).
SCHEMA = Schema("3", unique_ids=("Node", "Source", "Claim", "Decision", "Action"), indexes=(
    Index("Action", "call_key"), Index("Change", "node"), Index("Change", "valid_from"),
    Index("Change", "recorded_at"), Index("Claim", "text_key"), Index("Retraction", "node")))


def claims_stating(text_keys: Sequence[str]) -> Query:
    """The claims stating the same thing (equal once normalised) as each text key:
    (text key, properties)."""
    return Query("UNWIND $keys AS key MATCH (c:Claim {text_key: key}) "
                 "RETURN key, properties(c) ORDER BY key, c.id", {"keys": list(text_keys)},
                 read_only=True)


def claims_without_text_key(limit: int) -> Query:
    return Query("MATCH (c:Claim) WHERE c.text_key IS NULL RETURN c.id, c.text LIMIT $limit",
                 {"limit": limit}, read_only=True)


def set_text_keys(rows: Sequence[Mapping[str, str]]) -> Query:
    return Query("UNWIND $rows AS r MATCH (c:Claim {id: r.id}) SET c.text_key = r.key",
                 {"rows": list(rows)})


def actions_with_args(after: str, limit: int) -> Query:
    """A page of actions that have arguments, by id (for re-canonicalising them)."""
    return Query("MATCH (a:Action) WHERE a.id > $after AND a.args IS NOT NULL "
                 "RETURN properties(a) ORDER BY a.id LIMIT $limit",
                 {"after": after, "limit": limit}, read_only=True)


def set_args(rows: Sequence[Mapping[str, Any]]) -> Query:
    """Store re-canonicalised arguments (with their call key, when declared, and digest)."""
    return Query("UNWIND $rows AS r MATCH (a:Action {id: r.id}) SET a.args = r.args, "
                 "a.call_key = CASE WHEN a.call_key IS NULL THEN NULL ELSE r.call_key END, "
                 "a.digest = r.digest", {"rows": list(rows)})


def get_nodes(ids: Sequence[str]) -> Query:
    return Query("UNWIND $ids AS id MATCH (n:Node {id: id}) RETURN properties(n)", {"ids": ids},
                 read_only=True)


def node_state(node_id: str) -> Query:
    """The pre-flight read: one indexed lookup of the materialised state, what blocks the node
    when it is not IN, whether it rests on captured readings (`reads`) and until when they are
    all fresh at the latest (`reads_until`, kept on the node: see `FOREVER`)."""
    # one list column: each column of a reply costs the server more than a list's item
    return Query("MATCH (n:Node {id: $id}) "
                 "RETURN [n.kind, n.state, n.executed_at, n.blockers, n.reads_until, "
                 "CASE WHEN n.reads_until IS NULL THEN size(coalesce(n.reads, [])) > 0 "
                 "ELSE true END]", {"id": node_id}, read_only=True)


def read_ids(n: str, keep: str, when: str = "true") -> str:
    """Cypher: the read claims node `n` rests on, one a row (`rid`, NULL when none): its own
    `reads`, and for a turn that went on from the previous one (`reads_via`: its context) those
    its context's chain added up to it (each context keeps the readings of the claims it added),
    read only `when` it holds (a chain's length of index lookups). Keeps `keep` and `n`."""
    # (the WITH between the two: FalkorDB cannot look up a property of a NULL `via` otherwise)
    return (f"OPTIONAL MATCH (via:Node {{id: CASE WHEN {when} THEN {n}.reads_via END}}) "
            f"WITH {keep}, {n}, via "
            f"OPTIONAL MATCH (kk:{CONTEXT} {{chain: via.chain}}) WHERE kk.seq <= via.seq "
            f"WITH {keep}, {n}, [coalesce({n}.reads, [])] + collect(kk.reads) AS lists "
            "UNWIND lists AS l UNWIND CASE WHEN size(coalesce(l, [])) = 0 THEN [NULL] ELSE l END "
            "AS rid ")


def read_pairs(n: str, keep: str, when: str = "true") -> str:
    """Cypher: the READ_PAIRs of the read claims node `n` rests on (`read_ids`), distinct. Ends
    with `keep`, `n` and `reads`."""
    return (read_ids(n, keep, when) + "OPTIONAL MATCH (rc:Claim {id: rid}) "
            f"WITH {keep}, {n}, collect(DISTINCT {READ_PAIR}) AS reads ")


def node_reads(node_id: str) -> Query:
    """The freshness of each read claim a node rests on (`read_pairs`): [[claim id, fresh_until]]
    (an index lookup each). Read only when the node's `reads_until` does not settle it."""
    return Query("MATCH (n:Node {id: $id}) WITH 1 AS one, n " + read_pairs("n", "one")
                 + "RETURN reads", {"id": node_id}, read_only=True)


# [claim id, fresh_until] of a read claim `rc` found by an OPTIONAL MATCH (NULL when none)
READ_PAIR = "CASE WHEN rc IS NULL THEN NULL ELSE [rc.id, rc.fresh_until] END"

# A node resting on readings keeps `reads_until`: a time before which every one of them is surely
# still fresh (epoch ms; FOREVER when none expires). Set when the node is recorded, from its
# readings' `fresh_until` then (`reads_until(pairs)`, over READ_PAIRs); lowered to the moment a
# newer reading supersedes one of them. A re-read that refreshes a reading does not raise it: it
# stays a lower bound, and a check past it reads the readings themselves (`node_reads`). A node
# without it (recorded before it existed) is always checked that way.
FOREVER = 2**63 - 1


def reads_until(pairs: str) -> str:
    """Cypher: the earliest `fresh_until` of a list of READ_PAIRs (FOREVER when none has one)."""
    return (f"reduce(m = {FOREVER}, p IN {pairs} | CASE WHEN p IS NULL OR p[1] IS NULL OR p[1] >= m "
            "THEN m ELSE p[1] END)")


def reads_of(ids: Sequence[str]) -> Query:
    """The read claims these nodes rest on (captured actions' `reads`) and each claim's readings:
    (claim properties, [{observed_at, expires_at, superseded_at}])."""
    return Query("UNWIND $ids AS nid MATCH (n:Node {id: nid}) WITH 1 AS one, n "
                 + read_ids("n", "one") + "WITH DISTINCT n, rid "
                 "MATCH (c:Claim {id: rid}) OPTIONAL MATCH (s:Source)-[:SUPPORTS]->(c) "
                 "WHERE s.observed_at IS NOT NULL "
                 "RETURN properties(c), collect(CASE WHEN s IS NULL THEN NULL ELSE {observed_at: "
                 "s.observed_at, expires_at: s.expires_at, superseded_at: s.superseded_at} END)",
                 {"ids": list(ids)}, read_only=True)


def readings(ids: Sequence[str]) -> Query:
    """Read claims and the claim that superseded each (if any): (properties, properties)."""
    return Query("UNWIND $ids AS cid MATCH (c:Claim {id: cid}) "
                 "OPTIONAL MATCH (later:Claim {id: c.superseded_by}) "
                 "RETURN properties(c), CASE WHEN later IS NULL THEN NULL ELSE properties(later) END",
                 {"ids": list(ids)}, read_only=True)


def resolve_call(keys: Sequence[str]) -> Query:
    """Every declared action matching a tool call: (id, call_key, kind, state, executed_at,
    blockers)."""
    return Query("MATCH (a:Action) WHERE a.call_key IN $keys "
                 "RETURN a.id, a.call_key, a.kind, a.state, a.executed_at, a.blockers",
                 {"keys": keys}, read_only=True)


def node_blockers(node_id: str) -> Query:
    """What a check says of a node that is not IN: (kind, state, retracted, pending, reason,
    stored blockers)."""
    return Query("MATCH (n:Node {id: $id}) "
                 "RETURN n.kind, n.state, n.retracted, n.pending, n.reason, n.blockers",
                 {"id": node_id}, read_only=True)


def justifications(ids: Sequence[str]) -> Query:
    """Incoming support edges of `ids`: (node, justification, antecedent, antecedent state)."""
    return Query(f"UNWIND $ids AS id MATCH (a:Node)-[e:{CAUSAL_RELS}]->(n:Node {{id: id}}) "
                 "RETURN id, e.j, a.id, a.state", {"ids": ids}, read_only=True)


def context_claims(ids: Sequence[str]) -> Query:
    """The claims under turns' contexts `ids` (what each holds, through its chain): (context,
    claim, claim state)."""
    return Query(f"UNWIND $ids AS id MATCH (k:Node {{id: id}}) MATCH (c:Claim)-[:{CARRIES}*]->(k) "
                 "RETURN DISTINCT id, c.id, c.state", {"ids": list(ids)}, read_only=True)


def step_down(ids: Sequence[str]) -> Query:
    """One breadth-first step downstream: (from, to, kind, state, retracted, pending, executed)."""
    return Query(f"UNWIND $ids AS id MATCH (:Node {{id: id}})-[:{CAUSAL_RELS}]->(m:Node) "
                 "RETURN id, m.id, m.kind, m.state, m.retracted, m.pending, "
                 "m.executed_at IS NOT NULL", {"ids": ids},
                 read_only=True)


def through_down(ids: Sequence[str]) -> Query:
    """Every edge leaving the turns' contexts `ids` and the contexts after them in their chains,
    in one round trip: (context, to, kind, state, retracted, pending, executed). A chain is a line
    (`capture.chains`): what follows a context in it is found by its index, not by paths."""
    # (the chain and place projected first: matched from `s` itself, FalkorDB scans every context)
    return Query(f"UNWIND $ids AS id MATCH (s:Node {{id: id}}) WITH s.chain AS c, s.seq AS q "
                 f"MATCH (k:{CONTEXT} {{chain: c}}) WHERE k.seq >= q "
                 f"MATCH (k)-[:{CARRIES}]->(m:Node) RETURN DISTINCT k.id, m.id, m.kind, m.state, "
                 "m.retracted, m.pending, m.executed_at IS NOT NULL", {"ids": list(ids)},
                 read_only=True)


def through_up(ids: Sequence[str], *, blocking_only: bool = False) -> Query:
    """Every edge into the turns' contexts `ids` and the contexts before them in their chains, in
    one round trip: (context, from, kind, state, retracted, pending, reason)."""
    where = " WITH k, p WHERE p.state <> 'IN'" if blocking_only else ""
    return Query(f"UNWIND $ids AS id MATCH (s:Node {{id: id}}) WITH s.chain AS c, s.seq AS q "
                 f"MATCH (k:{CONTEXT} {{chain: c}}) WHERE k.seq <= q "
                 f"MATCH (p:Node)-[:{CARRIES}]->(k){where} RETURN DISTINCT k.id, p.id, p.kind, "
                 "p.state, p.retracted, p.pending, p.reason", {"ids": list(ids)}, read_only=True)


def step_up(ids: Sequence[str], *, blocking_only: bool = False) -> Query:
    """One breadth-first step upstream: (from, to, kind, state, retracted, pending, reason)."""
    # WITH before the filter: a WHERE on p inside the MATCH makes the planner label-scan every node
    where = " WITH id, p WHERE p.state <> 'IN'" if blocking_only else ""
    return Query(f"UNWIND $ids AS id MATCH (p:Node)-[:{CAUSAL_RELS}]->(:Node {{id: id}}){where} "
                 "RETURN id, p.id, p.kind, p.state, p.retracted, p.pending, p.reason",
                 {"ids": ids}, read_only=True)


def create_nodes(kind: Kind, rows: Sequence[Mapping[str, Any]], *, at: int, now: int, cause: str,
                 review: str | None) -> Query:
    """New nodes (rows of their properties, `state` included), each with its first status record
    (`before` null), in one pass over the rows."""
    return Query(f"UNWIND $rows AS r CREATE (n:Node:{kind.value}) SET n += r "
                 "CREATE (:Change {node: r.id, kind: r.kind, after: r.state, valid_from: $at, "
                 "recorded_at: $now, cause: $cause, review: $review})",
                 {"rows": rows, "at": at, "now": now, "cause": cause, "review": review})


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
    """Materialise new states (and what blocks each node, see `blockers`) and append one history
    record per change."""
    return Query(
        "UNWIND $rows AS r MATCH (n:Node {id: r.id}) SET n.state = r.after, n.blockers = r.blockers "
        "CREATE (:Change {node: r.id, kind: n.kind, before: r.before, after: r.after, "
        "valid_from: $at, recorded_at: $now, cause: $cause, review: $review})",
        {"rows": rows, "at": at, "now": now, "cause": cause, "review": review},
    )


def set_blockers(rows: Sequence[Mapping[str, Any]]) -> Query:
    """Rows of {id, blockers}: what blocks a node whose state did not change (null: nothing)."""
    return Query("UNWIND $rows AS r MATCH (n:Node {id: r.id}) SET n.blockers = r.blockers",
                 {"rows": rows})


def blockers_of(ids: Sequence[str]) -> Query:
    """(id, stored blockers, reason) of the nodes among `ids` that exist."""
    return Query("UNWIND $ids AS id MATCH (n:Node {id: id}) RETURN n.id, n.blockers, n.reason",
                 {"ids": list(ids)}, read_only=True)


STATS = Query(f"MATCH (n:Node) WHERE NOT n:{CONTEXT} "
              "RETURN n.kind, n.state, n.executed_at IS NOT NULL, count(n)", read_only=True)
EDGE_COUNT = Query(f"MATCH (:Node)-[e:{CAUSAL_RELS}]->(:Node) RETURN count(e)", read_only=True)


def chunks[T](rows: Sequence[T], size: int = 5000) -> Iterable[Sequence[T]]:
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


def node_briefs(ids: Sequence[str]) -> Query:
    """(id, kind, text, state, retracted, pending) of the nodes among `ids` that exist."""
    return Query("UNWIND $ids AS id MATCH (n:Node {id: id}) "
                 "RETURN n.id, n.kind, n.text, n.state, n.retracted, n.pending", {"ids": list(ids)},
                 read_only=True)


def own_changes(rows: Sequence[Mapping[str, Any]], *, cause: str, review: str | None) -> Query:
    """Nodes' own retraction state (`retracted`, and/or the count of `pending` proposals; a
    missing field is unchanged) from valid time `at` on, recorded at `now`: rows of {id,
    retracted, pending, at, now}."""
    return Query("UNWIND $rows AS r CREATE (:Retraction {node: r.id, retracted: r.retracted, "
                 "pending: r.pending, valid_from: r.at, recorded_at: r.now, cause: $cause, "
                 "review: $review})", {"rows": list(rows), "cause": cause, "review": review})


def flags_without_records(limit: int) -> Query:
    """Retracted or proposed nodes of a graph written before own retraction records existed, and
    no record yet: (id, retracted, retracted_at, pending, created_at, latest pending proposal)."""
    return Query("MATCH (n:Node) WHERE n.retracted = true OR n.pending > 0 "
                 "OPTIONAL MATCH (r:Retraction {node: n.id}) WITH n, count(r) AS records "
                 "WHERE records = 0 OPTIONAL MATCH (v:ReviewItem {claim: n.id, status: 'pending'}) "
                 "RETURN n.id, n.retracted, n.retracted_at, n.pending, n.created_at, "
                 "max(v.proposed_at) LIMIT $limit", {"limit": limit}, read_only=True)


def own_changes_of(ids: Sequence[str], known: int) -> Query:
    """The own retraction records of `ids` recorded by `known`: (node, retracted, pending,
    valid_from, recorded_at, order)."""
    return Query("UNWIND $ids AS id MATCH (r:Retraction {node: id}) WHERE r.recorded_at <= $known "
                 "RETURN r.node, r.retracted, r.pending, r.valid_from, r.recorded_at, id(r)",
                 {"ids": list(ids), "known": known}, read_only=True)


def changes_of(ids: Sequence[str], known: int) -> Query:
    """Status changes of `ids` recorded by `known`."""
    return Query("UNWIND $ids AS id MATCH (ch:Change {node: id}) WHERE ch.recorded_at <= $known "
                 "RETURN ch.node, ch.kind, ch.before, ch.after, ch.valid_from, ch.recorded_at, "
                 "ch.cause, ch.review, id(ch)", {"ids": list(ids), "known": known}, read_only=True)


def step_up_all(ids: Sequence[str]) -> Query:
    """Every incoming causal edge of `ids`: (node, justification, antecedent, antecedent kind)."""
    return Query(f"UNWIND $ids AS id MATCH (p:Node)-[e:{CAUSAL_RELS}]->(:Node {{id: id}}) "
                 "RETURN id, e.j, p.id, p.kind", {"ids": list(ids)}, read_only=True)


def node_times(ids: Sequence[str]) -> Query:
    """(id, kind, state, created_at, executed_at) of `ids`."""
    return Query("UNWIND $ids AS id MATCH (n:Node {id: id}) "
                 "RETURN n.id, n.kind, n.state, n.created_at, n.executed_at", {"ids": list(ids)},
                 read_only=True)


def claim_support(ids: Sequence[str]) -> Query:
    """Incoming support of claims `ids`: (claim, justification, antecedent, its retracted flag,
    its pending count). Claims rest only on sources and claims, through SUPPORTS edges."""
    return Query("UNWIND $ids AS id MATCH (a:Node)-[e:SUPPORTS]->(n:Node {id: id}) "
                 "RETURN id, e.j, a.id, a.retracted, a.pending", {"ids": list(ids)},
                 read_only=True)


def region(ids: Sequence[str]) -> Query:
    """What relabelling needs of `ids`: (id, kind, state, retracted, pending)."""
    return Query("UNWIND $ids AS id MATCH (n:Node {id: id}) "
                 "RETURN n.id, n.kind, n.state, n.retracted, n.pending", {"ids": list(ids)},
                 read_only=True)


MAX_NODE_ID = Query("MATCH (n:Node) RETURN max(id(n))", read_only=True)


def nodes_in_id_range(low: int, high: int) -> Query:
    """(id, kind, state, retracted, pending) of the causal nodes with internal ids in [low, high)
    (a scan of the whole graph, cut into pieces that each answer well within a client timeout)."""
    return Query("MATCH (n:Node) WHERE id(n) >= $low AND id(n) < $high "
                 "RETURN n.id, n.kind, n.state, n.retracted, n.pending",
                 {"low": low, "high": high}, read_only=True)


def node_props_in_id_range(low: int, high: int) -> Query:
    """(internal id, properties) of the causal nodes with internal ids in [low, high)."""
    return Query("MATCH (n:Node) WHERE id(n) >= $low AND id(n) < $high RETURN id(n), properties(n)",
                 {"low": low, "high": high}, read_only=True)


def edges_in_id_range(low: int, high: int) -> Query:
    """(antecedent, consequent, justification) of the causal edges leaving nodes with internal
    ids in [low, high)."""
    return Query(f"MATCH (a:Node)-[e:{CAUSAL_RELS}]->(b:Node) WHERE id(a) >= $low AND id(a) < $high "
                 "RETURN a.id, b.id, e.j", {"low": low, "high": high}, read_only=True)


def support(ids: Sequence[str]) -> Query:
    """Incoming support of `ids`: (node, justification, antecedent, antecedent state)."""
    return Query(f"UNWIND $ids AS id MATCH (a:Node)-[e:{CAUSAL_RELS}]->(n:Node {{id: id}}) "
                 "RETURN id, e.j, a.id, a.state", {"ids": list(ids)}, read_only=True)
