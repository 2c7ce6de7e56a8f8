"""Every Cypher text of provenance capture. Labels and relationship types are constants; every
value is a parameter.

The writes are blind commits (see `rippl_core._runtime.op.Commit`): each creates new nodes and
labels them from the states its antecedents have when the query runs, inside one MULTI/EXEC that
also bumps the graph's version key, so a wave planned concurrently is re-planned and sees them.
None of them changes the state of a node that existed before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rippl_core._runtime.schema import Index, Schema
from rippl_core._runtime.wire import Query

RUN, OBSERVATION, SAW = "Run", "Observation", "SAW"

SCHEMA = Schema("3", unique_ids=(RUN, OBSERVATION), indexes=(
    Index("Action", "call_ref"), Index("Action", "executed_at"), Index(OBSERVATION, "key"),
    Index(OBSERVATION, "run"), Index("Node", "run"), Index(RUN, "last_active")))


def call_ref(run: str, call_id: str) -> str:
    """The lookup key of a captured call: its run and its call id (one index lookup)."""
    return f"{run}\x1f{call_id}"


def observation_key(run: str, ref: str | None) -> str:
    """The lookup key of an observation: its run and its ref ("*" for none: always in context)."""
    return f"{run}\x1f{ref if ref is not None else '*'}"

# The state of a node with one justification, from its antecedents' states.
_STATE = ("CASE WHEN 'OUT' IN {states} THEN 'OUT' WHEN 'AT_RISK' IN {states} THEN 'AT_RISK' "
          "ELSE 'IN' END")
_CREATED = ("CREATE (:Change {{node: {id}, kind: {kind}, after: {after}, valid_from: $now, "
            "recorded_at: $now, cause: 'capture'}})")


def captured(run: str, refs: Sequence[str]) -> Query:
    """The captured actions of these calls of the run: (call id, action id, args, kind, state,
    executed_at, decision id)."""
    return Query("MATCH (a:Action) WHERE a.call_ref IN $keys "
                 "OPTIONAL MATCH (d:Decision)-[:DRIVES]->(a) "
                 "RETURN a.call_id, a.id, a.args, a.kind, a.state, a.executed_at, d.id "
                 "ORDER BY a.created_at DESC", {"keys": [call_ref(run, r) for r in refs]},
                 read_only=True)


def declared(keys: Sequence[str], pinned: Sequence[str] = ()) -> Query:
    """Declared actions matching any of these call keys, and the actions of these ids (calls
    mapped to them explicitly): (id, call_key, kind, state, executed_at)."""
    # two indexed lookups (an OR of the two would scan every action)
    return Query("MATCH (a:Action) WHERE a.call_key IN $keys "
                 "RETURN a.id, a.call_key, a.kind, a.state, a.executed_at UNION "
                 "MATCH (a:Action) WHERE a.id IN $pinned "
                 "RETURN a.id, a.call_key, a.kind, a.state, a.executed_at",
                 {"keys": list(keys), "pinned": list(pinned)}, read_only=True)


def _run_root(run: Mapping[str, Any]) -> str:
    """Cypher creating a run's node and root (source and claim, IN) the first time it is seen."""
    return (
        f"MERGE (r:{RUN} {{id: $run.id}}) ON CREATE SET r.agent = $run.agent, "
        "r.framework = $run.framework, r.started_at = $now, r.last_active = $now "
        "WITH r OPTIONAL MATCH (s0:Node {id: $run.source.id}) "
        "WITH r, s0 IS NULL AS new_run "
        "FOREACH (_ IN CASE WHEN new_run THEN [1] ELSE [] END | "
        "CREATE (s:Node:Source) SET s += $run.source, s.state = 'IN' "
        "CREATE (c:Node:Claim) SET c += $run.claim, c.state = 'IN' "
        "CREATE (s)-[:SUPPORTS {j: $run.source.id}]->(c) "
        + _CREATED.format(id="$run.source.id", kind="'Source'", after="'IN'") + " "
        + _CREATED.format(id="$run.claim.id", kind="'Claim'", after="'IN'") + ") "
    )


def decide(run: Mapping[str, Any], decision: Mapping[str, Any], refs: Sequence[str] | None,
           told: Sequence[str], actions: Sequence[Mapping[str, Any]], now: int) -> Query:
    """Record a turn in one query: the run's root if new; the decision, resting on the run's claim
    and the turn's context set, computed here by the rule of `capture.context` (the claims the
    run's observations still in the model's input saw — `refs` None: all of them, an observation
    without a ref: always — less the nodes named by the vetoes whose call ids are in `told`); and
    an action per call driven by it. A replayed turn finds its decision and actions and changes
    nothing. Returns (action id, state, executed_at, created) per call."""
    return Query(
        _run_root(run)
        + "WITH 1 AS one MATCH (root:Node {id: $run.claim.id}) "
        "OPTIONAL MATCH (d0:Node {id: $decision.id}) WITH root, d0 IS NULL AS fresh "
        "OPTIONAL MATCH (v:Action) WHERE v.call_ref IN $told "
        "WITH root, fresh, collect(v.told) AS named "
        "WITH root, fresh, reduce(acc = [], t IN named | acc + coalesce(t, [])) AS known "
        f"OPTIONAL MATCH (o:{OBSERVATION}) WHERE "
        + ("o.run = $run.id " if refs is None else "o.key IN $seen ")  # all, or by ref: indexed
        + f"OPTIONAL MATCH (o)-[:{SAW}]->(c:Claim) "
        "WITH root, fresh, known, collect(DISTINCT c) AS seen "
        "WITH fresh, [c IN seen WHERE NOT c.id IN known] + [root] AS ants "
        "WITH fresh, ants, " + _STATE.format(states="[a IN ants | a.state]") + " AS computed "
        "MERGE (d:Node:Decision {id: $decision.id}) ON CREATE SET d += $decision, d.state = computed "
        "FOREACH (a IN CASE WHEN fresh THEN ants ELSE [] END | "
        "CREATE (a)-[:SUPPORTS {j: $decision.id}]->(d)) "
        "FOREACH (_ IN CASE WHEN fresh THEN [1] ELSE [] END | "
        + _CREATED.format(id="$decision.id", kind="'Decision'", after="computed") + ") "
        "WITH d UNWIND $actions AS act "
        "OPTIONAL MATCH (x0:Node {id: act.id}) WITH d, act, x0 IS NULL AS created "
        "MERGE (x:Node:Action {id: act.id}) ON CREATE SET x += act, x.state = d.state "
        "FOREACH (_ IN CASE WHEN created THEN [1] ELSE [] END | "
        "CREATE (d)-[:DRIVES {j: act.id}]->(x) "
        + _CREATED.format(id="act.id", kind="'Action'", after="d.state") + ") "
        "RETURN x.id, x.state, x.executed_at, created",
        {"run": run, "decision": decision, "actions": list(actions), "now": now,
         "told": [call_ref(run["id"], t) for t in told],
         "seen": [] if refs is None else
         [observation_key(run["id"], r) for r in refs] + [observation_key(run["id"], None)]})


def drive(run: Mapping[str, Any], decision: str, actions: Sequence[Mapping[str, Any]],
          now: int) -> Query:
    """Add actions to an existing decision (a call edited after its turn was decided), labelled
    from the decision's state. Returns (action id, state, executed_at, created)."""
    return Query(
        "MATCH (d:Decision {id: $decision}) WITH d UNWIND $actions AS act "
        "OPTIONAL MATCH (x0:Node {id: act.id}) WITH d, act, x0 IS NULL AS created "
        "MERGE (x:Node:Action {id: act.id}) ON CREATE SET x += act, x.state = d.state "
        "FOREACH (_ IN CASE WHEN created THEN [1] ELSE [] END | "
        "CREATE (d)-[:DRIVES {j: act.id}]->(x) "
        + _CREATED.format(id="act.id", kind="'Action'", after="d.state") + ") "
        f"WITH x, created OPTIONAL MATCH (r:{RUN} {{id: $run}}) SET r.last_active = $now "
        "RETURN x.id, x.state, x.executed_at, created",
        {"run": run["id"], "decision": decision, "actions": list(actions), "now": now})


def tell(action_id: str, told: Sequence[str]) -> Query:
    """Record what a veto of this captured action named (the model read it)."""
    return Query("MATCH (a:Action {id: $id}) SET a.told = $told", {"id": action_id, "told": list(told)})


def observe(run: Mapping[str, Any], observation: Mapping[str, Any], claims: Sequence[str],
            now: int) -> Query:
    """Record that the run saw these claims (new observations only); returns the claims seen."""
    return Query(
        _run_root(run)
        + f"WITH 1 AS one MERGE (o:{OBSERVATION} {{id: $obs.id}}) ON CREATE SET o += $obs "
        "WITH o UNWIND $claims AS cid MATCH (c:Claim {id: cid}) "
        f"MERGE (o)-[:{SAW}]->(c) RETURN c.id",
        {"run": run, "obs": observation, "claims": list(claims), "now": now})


def executed(run: str, action_id: str, result: Mapping[str, Any], observation: Mapping[str, Any],
             now: int) -> Query:
    """Mark a captured action executed and record its output as an observation of the run: the
    result's source (new, IN) and claim (new, IN; or existing). An existing claim whose state the
    new source would change (OUT or at risk through its support alone) is not linked here: the
    query returns `linked` false and the caller adds that support with a full relabel.
    Returns (claim state, linked), or no row when there is no such action (nothing is written)."""
    return Query(
        "MATCH (x:Action {id: $action}) "
        "SET x.executed_at = $now, x.exec_status = $result.status, x.output = $result.digest "
        f"WITH x OPTIONAL MATCH (r:{RUN} {{id: $run}}) SET r.last_active = $now "
        "WITH x OPTIONAL MATCH (s0:Node {id: $result.source.id}) "
        "OPTIONAL MATCH (c0:Node {id: $result.claim.id}) "
        "WITH s0 IS NULL AS new_source, c0, c0 IS NULL AS new_claim, "
        "(c0 IS NOT NULL AND c0.state <> 'IN' AND NOT coalesce(c0.retracted, false) "
        " AND coalesce(c0.pending, 0) = 0) AS shifts "
        "FOREACH (_ IN CASE WHEN new_source THEN [1] ELSE [] END | "
        "CREATE (s:Node:Source) SET s += $result.source, s.state = 'IN' "
        + _CREATED.format(id="$result.source.id", kind="'Source'", after="'IN'") + ") "
        "FOREACH (_ IN CASE WHEN new_claim THEN [1] ELSE [] END | "
        "CREATE (c:Node:Claim) SET c += $result.claim, c.state = 'IN' "
        + _CREATED.format(id="$result.claim.id", kind="'Claim'", after="'IN'") + ") "
        "WITH shifts MATCH (s:Node {id: $result.source.id}), (c:Node {id: $result.claim.id}) "
        "OPTIONAL MATCH (s)-[e:SUPPORTS]->(c) "
        "WITH s, c, shifts, e IS NULL AS unlinked "
        "FOREACH (_ IN CASE WHEN unlinked AND NOT shifts THEN [1] ELSE [] END | "
        "CREATE (s)-[:SUPPORTS {j: $result.source.id}]->(c)) "
        f"MERGE (o:{OBSERVATION} {{id: $obs.id}}) ON CREATE SET o += $obs "
        f"MERGE (o)-[:{SAW}]->(c) "
        "RETURN c.state, NOT (unlinked AND shifts)",
        {"run": run, "action": action_id, "result": result, "obs": observation, "now": now})


def mark_executed(action_id: str, at: int, digest: str | None) -> Query:
    """Mark any action executed (declared or captured): (id, kind, state)."""
    return Query("MATCH (a:Action {id: $id}) SET a.executed_at = $at, "
                 "a.output = coalesce($digest, a.output) RETURN a.id, a.kind, a.state",
                 {"id": action_id, "at": at, "digest": digest})


def close(run: str, now: int) -> Query:
    return Query(f"MATCH (r:{RUN} {{id: $run}}) SET r.closed_at = coalesce(r.closed_at, $now) "
                 "RETURN r.id", {"run": run, "now": now})


EXECUTED_OUT = Query("MATCH (a:Action) WHERE a.executed_at IS NOT NULL AND a.state = 'OUT' "
                     "RETURN properties(a) ORDER BY a.executed_at, a.id", read_only=True)
EXECUTED = Query("MATCH (a:Action) WHERE a.executed_at IS NOT NULL "
                 "RETURN properties(a) ORDER BY a.executed_at, a.id", read_only=True)


def stale_runs(before: int, include_open: bool) -> Query:
    """Runs closed before `before` (or, with include_open, last active before it), except those
    whose root claim is under review."""
    done = "r.closed_at < $before" + (" OR r.last_active < $before" if include_open else "")
    return Query(f"MATCH (r:{RUN}) WHERE {done} RETURN r.id ORDER BY r.id",
                 {"before": before}, read_only=True)


def prune(runs: Sequence[str]) -> Query:
    """Delete the capture of these runs: their observations, decisions, actions, result sources,
    root and run node, and the history of those nodes. Claims are left to `prune_claims`."""
    return Query(
        f"UNWIND $runs AS rid MATCH (r:{RUN} {{id: rid}}) "
        f"OPTIONAL MATCH (o:{OBSERVATION}) WHERE o.run = rid DETACH DELETE o "
        "WITH DISTINCT r, rid OPTIONAL MATCH (n:Node) WHERE n.run = rid "
        "WITH r, rid, collect(n) AS doomed "
        "WITH r, rid, doomed, [n IN doomed | n.id] AS ids "
        "FOREACH (n IN doomed | DETACH DELETE n) "
        "WITH r, ids DETACH DELETE r "
        "WITH ids UNWIND ids AS gone MATCH (ch:Change {node: gone}) DELETE ch",
        {"runs": list(runs)})


# Result claims of capture nothing supports or rests on any more, never retracted or reviewed.
PRUNE_CLAIMS = Query(
    "MATCH (c:Claim) WHERE c.captured = true AND NOT coalesce(c.retracted, false) "
    "AND coalesce(c.pending, 0) = 0 AND NOT ()-[:SUPPORTS]->(c) AND NOT (c)-[:SUPPORTS]->() "
    "AND NOT ()-[:TARGETS]->(c) AND NOT ()-[:BELIEVES]->(c) "
    f"AND NOT ()-[:{SAW}]->(c) "
    "WITH collect(c) AS doomed, collect(c.id) AS ids FOREACH (c IN doomed | DETACH DELETE c) "
    "WITH ids UNWIND ids AS gone OPTIONAL MATCH (ch:Change {node: gone}) DELETE ch "
    "RETURN count(DISTINCT gone)")
