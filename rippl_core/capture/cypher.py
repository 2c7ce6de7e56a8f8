"""Every Cypher text of provenance capture. Labels and relationship types are constants; every
value is a parameter.

The writes are blind commits (see `rippl_core._runtime.op.Commit`): each creates new nodes and
labels them from the states its antecedents have when the query runs, inside one MULTI/EXEC that
also bumps the graph's version key, so a wave planned concurrently is re-planned and sees them.
None of them changes the state of a node that existed before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rippl_core._runtime.schema import Index, Schema
from rippl_core._runtime.wire import Query
from rippl_core.capture.context import BIND_SEP
from rippl_core.causal import cypher as causal_cypher
from rippl_core.vocabulary import CARRIES, CONTEXT, CONTEXT_PREFIX

RUN, OBSERVATION, SAW = "Run", "Observation", "SAW"
TOOL_SCHEMA = "ToolSchema"  # a tool's input schema registered with a run (its calls compared on it)

OVERRIDE = "Override"

SCHEMA = Schema("3", unique_ids=(RUN, OBSERVATION, OVERRIDE), indexes=(
    Index("Action", "call_ref"), Index("Action", "executed_at"), Index(OBSERVATION, "key"),
    Index(OBSERVATION, "run"), Index("Node", "run"), Index(RUN, "last_active"),
    Index("Decision", "key"), Index("Action", "vkey"), Index("Action", "vtool"),
    Index(OVERRIDE, "vkey"), Index(RUN, "scope"), Index("Claim", "read_key"),
    Index("Claim", "read_tool"), Index("Node", "reads"), Index("Action", "scall"),
    Index(TOOL_SCHEMA, "run"), Index(CONTEXT, "chain")))


def call_ref(run: str, call_id: str) -> str:
    """The lookup key of a captured call: its run and its call id (one index lookup)."""
    return f"{run}\x1f{call_id}"


def observation_key(run: str, ref: str | None, scope: str | None = None) -> str:
    """The lookup key of a carrier (an observation, or a turn's decision): its scope (the run's,
    which is the run itself unless it was given one) and its ref; an observation with no ref is
    keyed by its run and "*" (in context for the whole run, and only for it)."""
    return f"{run}\x1f*" if ref is None else f"{scope or run}\x1f{ref}"



def _each(items: str, var: str) -> str:
    """UNWIND the list `items` as `var`, one NULL row when it is empty or NULL, so an OPTIONAL
    MATCH of `var` by an indexed property that follows finds each through the index (a filter
    `n.p IN items` would scan the whole label) and the row survives when there is none."""
    return f"UNWIND CASE WHEN size(coalesce({items}, [])) = 0 THEN [NULL] ELSE {items} END AS {var} "


_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _props(source: str, keys: Iterable[str], **more: str) -> str:
    """The properties of a node being created, given inline in its CREATE: each of `keys` from
    the map `source` (a parameter, or a row's map; a NULL one is not set), then `more` (key: a
    Cypher expression). Never SET on a node the same query created: FalkorDB's cost of that SET
    grows with the graph (0.10 ms at a graph's first node, 0.59 ms at its 20,000th), the
    inline map's does not (docs/design.md, "Capture at scale")."""
    names = [k for k in dict.fromkeys(keys) if k not in more]
    if not all(_KEY.fullmatch(k) for k in [*names, *more]):
        raise ValueError(f"not a property name: {[k for k in [*names, *more] if not _KEY.fullmatch(k)]}")
    return "{" + ", ".join([f"{k}: {source}.{k}" for k in names]
                           + [f"{k}: {v}" for k, v in more.items()]) + "}"


# The state of a node with one justification, from its antecedents' states.
_STATE = ("CASE WHEN 'OUT' IN ({states}) THEN 'OUT' WHEN 'AT_RISK' IN ({states}) THEN 'AT_RISK' "
          "ELSE 'IN' END")  # parenthesised: FalkorDB binds IN tighter than +
_CREATED = ("CREATE (:Change {{node: {id}, kind: {kind}, after: {after}, valid_from: $now, "
            "recorded_at: $now, cause: 'capture'}})")


def captured(run: str, refs: Sequence[str]) -> Query:
    """The captured actions of these calls of the run: (call id, action id, args, kind, state,
    executed_at, its turn's decision id and state, [turn of each decision it repeats], unused
    override id, override premises)."""
    return Query("MATCH (a:Action) WHERE a.call_ref IN $keys "
                 "OPTIONAL MATCH (d:Decision)-[e:DRIVES]->(a) WHERE e.repeat IS NULL "
                 "OPTIONAL MATCH (rb)-[r:DRIVES|TRIGGERS]->(a) WHERE r.repeat = true "
                 "WITH a, d, collect(CASE WHEN rb IS NULL THEN NULL "
                 "ELSE [rb.turn, rb.id, r.veto, r.via] END) AS repeats "
                 f"OPTIONAL MATCH (ov:{OVERRIDE}) WHERE ov.vkey = a.rkey "
                 "AND (ov.used_by IS NULL OR ov.used_by = a.id) "
                 "WITH a, d, repeats, ov " + causal_cypher.read_pairs("a", "d, repeats, ov")
                 + "RETURN a.call_id, a.id, a.args, a.kind, a.state, a.executed_at, d.id, d.state, "
                 "repeats, ov.id, ov.premises, reads ORDER BY a.created_at DESC",
                 {"keys": [call_ref(run, r) for r in refs]}, read_only=True)


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
        f"OPTIONAL MATCH (r0:{RUN} {{id: $run.id}}) "
        "FOREACH (_ IN CASE WHEN r0 IS NULL THEN [1] ELSE [] END | "
        f"CREATE (:{RUN} {{id: $run.id, agent: $run.agent, framework: $run.framework, "
        "scope: $run.scope, started_at: $now, last_active: $now})) "
        f"WITH 1 AS one MATCH (r:{RUN} {{id: $run.id}}) "
        "OPTIONAL MATCH (s0:Node {id: $run.source.id}) "
        "WITH r, s0 IS NULL AS new_run "
        "FOREACH (_ IN CASE WHEN new_run THEN [1] ELSE [] END | "
        "CREATE (s:Node:Source " + _props("$run.source", run.get("source", {}), state="'IN'") + ") "
        "CREATE (c:Node:Claim " + _props("$run.claim", run.get("claim", {}), state="'IN'") + ") "
        "CREATE (s)-[:SUPPORTS {j: $run.source.id}]->(c) "
        + _CREATED.format(id="$run.source.id", kind="'Source'", after="'IN'") + " "
        + _CREATED.format(id="$run.claim.id", kind="'Claim'", after="'IN'") + ") "
    )


# The bound the check reads (`causal_cypher.FOREVER`): on a turn's action and decision, from the
# freshness of the readings they rest on (`reads`, the READ_PAIRs of `x.reads`; the same as d's).
# (each computed in the SET: FalkorDB evaluates a query's SET expressions before it assigns any,
# so `d.reads_until = x.reads_until` would read the action's value from before)
_KEEP_UNTIL = ("SET x.reads_until = " + causal_cypher.reads_until("reads") + ", "
               "d.reads_until = " + causal_cypher.reads_until("reads") + " ")


# The read claims a node resting on the claims `{0}` rests on: each reading among them, and
# what a claim written from readings (a memory, a hand-over of one) rests on (`reads`). (A list
# built by a reduce that adds to it copies it at each step: quadratic in a long input; the
# comprehension is linear, and only the few claims written from readings are folded.)
_READS = ("[a IN {0} WHERE a.read_key IS NOT NULL | coalesce(a.origin, a.id)] + "
          "reduce(acc = [], a IN [a IN {0} WHERE a.read_key IS NULL AND a.reads IS NOT NULL] | "
          "acc + a.reads)")

# A decision's bindings (`binds`: [binding, the node that brought it]), kept once each
# (`bound`: `bkeys`, distinct), with the node that brought each (`bound_via`, in the same order).
_BIND = ("d.bound = CASE WHEN size(bkeys) = 0 THEN NULL ELSE bkeys END, "
         "d.bound_via = CASE WHEN size(bkeys) = 0 THEN NULL "
         "ELSE [b IN bkeys | head([p IN binds WHERE p[0] = b])[1]] END")

# Whether a binding (`{0}`) is one the call `act` repeats, handed over from another run: its act
# is the call's (tool and canonical arguments), or its tool is, under repeat_scope="tool".
_REPEATS = ("(split({0}, $sep)[0] = act.akey OR (act.rtool IS NOT NULL AND "
            "split({0}, $sep)[1] = act.tool)) AND split({0}, $sep)[4] <> act.run")

# The actions of a turn (or an edited call), each driven by the turn's decision `d` and, when it
# repeats a call vetoed earlier in the run (found by its repeat keys), by what that veto bound it
# to (the vetoed call's decision, or the declared actions that vetoed it): labelled from all of
# them. Also the unused override approved for the call, if any. Returns, per action: (id, state,
# executed_at, created, own decision state, [[turn, id] of each node it is bound to], override
# id, override premises).
_ACTIONS = (
    "UNWIND $actions AS act "
    "OPTIONAL MATCH (x0:Node {id: act.id}) WITH d, act, x0 IS NULL AS created "
    "OPTIONAL MATCH (v1:Action {vkey: act.rkey}) "
    "OPTIONAL MATCH (v2:Action {vtool: act.rtool}) "
    "WITH d, act, created, collect(v1.binds) AS l1, collect(v2.binds) AS l2 "
    "WITH d, act, created, reduce(acc = [], l IN l1 + l2 | acc + coalesce(l, [])) AS binds, "
    # the bindings handed over to this run that the call repeats (`_REPEATS`)
    "[i IN range(0, size(coalesce(d.bound, [])) - 1) WHERE "
    + _REPEATS.format("d.bound[i]") + " | [split(d.bound[i], $sep)[2], d.bound[i], "
    "d.bound_via[i]]] AS handed "
    # each bound node by its id (an IN over a list built in the query would scan every node)
    "UNWIND CASE WHEN size(binds) = 0 THEN [NULL] ELSE binds END AS bid "
    "OPTIONAL MATCH (b:Node {id: bid}) WHERE b.id <> act.id "
    "WITH d, act, created, handed, collect(DISTINCT b) AS bs "
    "UNWIND [NULL] + handed AS hb OPTIONAL MATCH (hn:Node {id: hb[0]}) WHERE hn.id <> act.id "
    "AND NOT hn IN bs "
    "WITH d, act, created, bs, collect(DISTINCT CASE WHEN hn IS NULL THEN NULL "
    "ELSE [hn, split(hb[1], $sep)[3], hb[2]] END) AS hs "
    "MERGE (x:Node:Action {id: act.id}) ON CREATE SET x += act, x.reads = d.reads, x.bound = d.bound, "
    "x.state = " + _STATE.format(states="[d.state] + [b IN bs | b.state] + [h IN hs | h[0].state]")
    + " FOREACH (_ IN CASE WHEN created THEN [1] ELSE [] END | "
    "CREATE (d)-[:DRIVES {j: act.id}]->(x) "
    "FOREACH (b IN [b IN bs WHERE b:Decision] | CREATE (b)-[:DRIVES {j: act.id, repeat: true}]->(x)) "
    "FOREACH (b IN [b IN bs WHERE b:Action] | CREATE (b)-[:TRIGGERS {j: act.id, repeat: true}]->(x)) "
    # a binding handed over: the edge names the veto and the message that brought it
    "FOREACH (h IN [h IN hs WHERE 'Decision' IN labels(h[0])] | FOREACH (b IN [h[0]] | "
    "CREATE (b)-[:DRIVES {j: act.id, repeat: true, veto: h[1], via: h[2]}]->(x))) "
    "FOREACH (h IN [h IN hs WHERE 'Action' IN labels(h[0])] | FOREACH (b IN [h[0]] | "
    "CREATE (b)-[:TRIGGERS {j: act.id, repeat: true, veto: h[1], via: h[2]}]->(x))) "
    + _CREATED.format(id="act.id", kind="'Action'", after="x.state") + ") "
    f"WITH d, x, created OPTIONAL MATCH (ov:{OVERRIDE}) WHERE ov.vkey = x.rkey "
    "AND (ov.used_by IS NULL OR ov.used_by = x.id) "
    "OPTIONAL MATCH (rb)-[rr:DRIVES|TRIGGERS]->(x) WHERE rr.repeat = true "
    "WITH d, x, created, ov, collect(CASE WHEN rb IS NULL THEN NULL "
    "ELSE [rb.turn, rb.id, rr.veto, rr.via] END) AS repeats "
    + causal_cypher.read_pairs("x", "d, created, ov, repeats")
    + _KEEP_UNTIL +
    "RETURN x.id, x.state, x.executed_at, created, d.state, repeats, ov.id, ov.premises, reads"
)


def _handed(carry: str, fs: str) -> str:
    """Cypher turning `fs` (what carriers of other runs of the scope carry: {carrier, run, ref,
    claim}) into hand-over claims, one per carrier and claim: "run A carried it (its message M):
    <claim>", resting on the claim, so a trail, a blast radius and an explanation show the path
    from the premise through the run that handed it over. Ends with `carry` and `hs`, the
    hand-over claims."""
    hid = "'HND-' + f.carrier + '-' + coalesce(c.origin, c.id)"  # bounded: never nested
    return (
        f"FOREACH (f IN {fs} | FOREACH (c IN [f.claim] | "
        f"MERGE (h:Node:Claim {{id: {hid}}}) ON CREATE SET h.kind = 'Claim', h.state = c.state, "
        "h.text = 'run ' + f.run + ' carried it (' + coalesce(f.ref, 'its messages') + '): ' "
        "+ left(c.text, 400), h.retracted = false, h.pending = 0, h.created_at = $now, "
        "h.run = f.run, h.handed_from = f.run, h.carrier = f.carrier, h.captured = true, "
        "h.origin = coalesce(c.origin, c.id), h.read_key = c.read_key, h.reads = c.reads, "
        "h.bound = c.bound "
        f"MERGE (c)-[:SUPPORTS {{j: {hid}}}]->(h))) "
        f"WITH {carry}, {fs} UNWIND {fs} + [NULL] AS f "
        "OPTIONAL MATCH (h:Node {id: 'HND-' + f.carrier + '-' + coalesce(f.claim.origin, f.claim.id)}) "
        f"WITH {carry}, collect(DISTINCT h) AS hs "
    )


# A node that carries bindings (`bound`: see `capture.context`), else NULL (collect skips it).
_BEARER = "CASE WHEN {0}.bound IS NOT NULL THEN {0} END"
# The bindings a veto holds, each as [binding, the vetoed action] (`capture.context.BIND_SEP`):
# its act (tool and canonical arguments), its tool, each node that vetoed it, itself, its run.
_VETO_BINDS = ("[n IN CASE WHEN {0}.vact IS NULL THEN [] ELSE coalesce({0}.binds, []) END | "
               "[{0}.vact + $sep + {0}.tool + $sep + n + $sep + {0}.id + $sep + {0}.run, {0}.id]]")


# Cypher: the distinct items of a list expression, in their first order (quadratic in its size:
# for short lists, or where the items are known to be distinct but for a few).
_DISTINCT = "reduce(acc = [], x IN {0} | CASE WHEN x IN acc THEN acc ELSE acc + [x] END)"


def _context(carry: str) -> str:
    """Cypher computing a model input's context set by the rule of `capture.context`, from `known`
    (the nodes named by the vetoes the model read) and the parameters `$keys` (the keys of the
    input's messages and of the run's ref-less observations), `$refs` (each message's {ref, key,
    oid}) and `$every` (no input given: everything the run has carried). What the messages carry
    is read by key (observations and turns of the scope; what another run's message carries comes
    through a hand-over claim, `_handed`); a message found nowhere is unaccounted: it carries
    everything the run has carried, and is recorded so (as observation `oid`). The bindings the
    input holds come along: those of the vetoes read (`tb`, from `_known`) and those each message
    and each carried claim carries (`bound`), every one with the node that brought it. Ends with
    `carry` (the variables to keep), `ctx` (the context set's claims, distinct) and `binds`
    ([binding, the node that brought it])."""
    k = f"{carry}, known, tb"
    return (
        # the messages no carrier has, each looked up by its key while the row is small (a list
        # membership test per message would grow with the square of the input)
        f"UNWIND $refs + [NULL] AS r OPTIONAL MATCH (po:{OBSERVATION} {{key: r.key}}) "
        f"WITH {k}, r, count(po) AS hits OPTIONAL MATCH (pm:Decision {{key: r.key}}) "
        f"WITH {k}, r, hits, count(pm) AS more "  # (no grouping key inside an aggregate)
        f"WITH {k}, collect(CASE WHEN r IS NOT NULL AND hits + more = 0 THEN r END) AS missing "
        # the run's own messages, then those of the scope's other runs (each its own pass: one
        # aggregate over a long input's carried claims costs a quarter of a mixed one)
        f"OPTIONAL MATCH (o:{OBSERVATION}) WHERE o.key IN $keys AND o.run = $run.id "
        f"OPTIONAL MATCH (o)-[:{SAW}]->(c:Claim) "
        f"WITH {k}, missing, collect(DISTINCT o.key) AS ok1, collect(DISTINCT c) AS oc, "
        f"collect(DISTINCT {_BEARER.format('o')}) AS br1 "
        f"OPTIONAL MATCH (o:{OBSERVATION}) WHERE o.key IN $keys AND o.run <> $run.id "
        f"OPTIONAL MATCH (o)-[:{SAW}]->(c:Claim) "
        f"WITH {k}, missing, ok1, oc, br1, collect(DISTINCT o.key) AS ok2, "
        "collect(DISTINCT CASE WHEN c IS NOT NULL "
        "THEN {carrier: o.id, run: o.run, ref: o.ref, claim: c} END) AS of, "
        f"collect(DISTINCT {_BEARER.format('o')}) AS br2 "
        "OPTIONAL MATCH (m:Decision) WHERE m.key IN $keys AND m.run = $run.id "
        f"OPTIONAL MATCH (mc:Claim)-[:{CARRIES}*]->(m) "
        f"WITH {k}, missing, ok1, oc, br1, ok2, of, br2, collect(DISTINCT m.key) AS mk1, "
        f"collect(DISTINCT mc) AS mcs, collect(DISTINCT {_BEARER.format('m')}) AS br3 "
        "OPTIONAL MATCH (m:Decision) WHERE m.key IN $keys AND m.run <> $run.id "
        f"OPTIONAL MATCH (mc:Claim)-[:{CARRIES}*]->(m) "
        f"WITH {k}, missing, ok1, oc, br1, ok2, of, br2, mk1, mcs, br3, collect(DISTINCT m.key) AS mk2, "
        "collect(DISTINCT CASE WHEN mc IS NOT NULL "
        "THEN {carrier: m.id, run: m.run, ref: m.turn, claim: mc} END) AS mf, "
        f"collect(DISTINCT {_BEARER.format('m')}) AS br4 "
        f"WITH {k}, missing, oc + mcs AS own, of + mf AS foreign, ok1 + ok2 + mk1 + mk2 AS found, "
        "br1 + br2 + br3 + br4 AS bearers "
        # where each message stands among the known ones: read only when one is unaccounted
        f"WITH {k}, own, foreign, missing, bearers, CASE WHEN size(missing) = 0 THEN [] "
        "ELSE [r IN $refs | r.key IN found] END AS knowns "
        + _handed(f"{k}, own, missing, knowns, bearers", "foreign")
        + f"WITH {k}, own + hs AS carried, missing, knowns, bearers, "
        "(size(missing) > 0 OR $every) AS wide "
        # everything the run has carried: read only when needed (an unaccounted message, or no input)
        f"OPTIONAL MATCH (e:{OBSERVATION}) WHERE wide AND e.run = $run.id "
        f"OPTIONAL MATCH (e)-[:{SAW}]->(ec:Claim) "
        f"WITH {k}, carried, missing, knowns, bearers, wide, collect(DISTINCT ec) AS seen, "
        f"collect(DISTINCT {_BEARER.format('e')}) AS wbr "
        "OPTIONAL MATCH (t:Node) WHERE wide AND t.run = $run.id AND t:Decision "
        f"OPTIONAL MATCH (tc:Claim)-[:{CARRIES}*]->(t) "
        f"WITH {k}, missing, knowns, carried, wide, seen, bearers, wbr, "
        f"collect(DISTINCT tc) AS tcs, collect(DISTINCT {_BEARER.format('t')}) AS bt "
        # and the vetoes of the run: a message written from anything may hand over their bindings
        "OPTIONAL MATCH (vv:Node) WHERE wide AND vv.run = $run.id AND vv:Action "
        "AND vv.vact IS NOT NULL "
        f"WITH {k}, missing, knowns, carried, wide, seen, tcs, bearers, wbr + bt AS wbr, "
        "collect(DISTINCT vv) AS vvs "
        f"WITH {k}, missing, knowns, carried, wide, seen, tcs, bearers, wbr, "
        "reduce(acc = [], v IN vvs | acc + " + _VETO_BINDS.format("v") + ") AS wb "
        # and what the other runs of the scope carried (a message of theirs Rippl did not see
        # written may have reached this run): through hand-over claims
        f"OPTIONAL MATCH (sr:{RUN}) WHERE wide AND sr.scope = $run.scope AND sr.id <> $run.id "
        f"WITH {k}, missing, knowns, carried, wide, seen, tcs, bearers, wbr, wb, "
        "collect(sr.id) AS others "
        + _each("others", "orun") + f"OPTIONAL MATCH (fe:{OBSERVATION} {{run: orun}}) "
        f"OPTIONAL MATCH (fe)-[:{SAW}]->(fc:Claim) "
        f"WITH {k}, missing, knowns, carried, wide, seen, tcs, bearers, wbr, wb, others, "
        "collect(DISTINCT CASE WHEN fc IS NOT NULL "
        "THEN {carrier: fe.id, run: fe.run, ref: fe.ref, claim: fc} END) AS fo, "
        f"collect(DISTINCT {_BEARER.format('fe')}) AS bfe "
        f"WITH {k}, missing, knowns, carried, wide, seen, tcs, bearers, wbr + bfe AS wbr, wb, "
        "others, fo "
        + _each("others", "trun") + "OPTIONAL MATCH (ft:Node {run: trun}) WHERE ft:Decision "
        f"OPTIONAL MATCH (ftc:Claim)-[:{CARRIES}*]->(ft) "
        f"WITH {k}, missing, knowns, carried, seen, tcs, bearers, wbr, wb, fo, "
        "collect(DISTINCT CASE WHEN ftc IS NOT NULL "
        "THEN {carrier: ft.id, run: ft.run, ref: ft.turn, claim: ftc} END) AS ft, "
        f"collect(DISTINCT {_BEARER.format('ft')}) AS bft "
        f"WITH {k}, missing, knowns, carried, seen, tcs, bearers, wbr + bft AS wbr, wb, "
        "fo + ft AS scoped "
        + _handed(f"{k}, missing, knowns, carried, seen, tcs, bearers, wbr, wb", "scoped")
        + f"WITH {k}, missing, knowns, carried, bearers, wbr, wb, seen + tcs + hs AS everything "
        # the user's new input (`context.user_input`) carries nothing; any other unknown message
        # is a rewrite and carries everything the run has carried
        f"WITH {k}, carried, everything, bearers, wbr, wb, [r IN missing | {{r: r, fresh: r.input AND "
        "none(k IN knowns[r.i + 1..] WHERE k) AND (any(k IN knowns[..r.i] WHERE k) "
        "OR size(everything) = 0)}] AS judged "
        "FOREACH (j IN judged | "
        + _message_recorded("j.r", "CASE WHEN j.fresh THEN 'input' ELSE 'unaccounted' END")
        + f"FOREACH (c IN CASE WHEN j.fresh THEN [] ELSE everything END | MERGE (u)-[:{SAW}]->(c)) "
        "FOREACH (_ IN CASE WHEN j.fresh THEN [] ELSE [1] END | SET u.bound = "
        + _DISTINCT.format("[p IN wb | p[0]] + reduce(acc = [], n IN bearers + wbr | acc + n.bound)")
        + ")) "
        f"WITH {k}, bearers, wbr, wb, CASE WHEN $every OR any(j IN judged WHERE NOT j.fresh) "
        "THEN carried + everything ELSE carried END AS all, "
        "$every OR any(j IN judged WHERE NOT j.fresh) AS rewritten "
        # the bindings: of the vetoes read, of every message and carried claim (whatever the
        # model was told: only a person lifts a veto), and, through a message written from
        # anything, of the run's own vetoes
        f"WITH {carry}, known, all, tb + CASE WHEN rewritten THEN wb ELSE [] END "
        "+ reduce(acc = [], n IN bearers + CASE WHEN rewritten THEN wbr ELSE [] END "
        "+ [c IN all WHERE c.bound IS NOT NULL] | "
        "acc + [x IN n.bound | [x, n.id]]) AS binds "
        # what a veto named leaves, and so does a hand-over of it (the same claim, another path)
        f"UNWIND [c IN all WHERE NOT c.id IN known AND NOT coalesce(c.origin, c.id) IN known] "
        "+ [NULL] AS a "
        f"WITH {carry}, binds, collect(DISTINCT a) AS ctx "
    )




# The context of a turn's decision (`CONTEXT`), from `ants` (the claims it rests on, distinct):
# what the turns before it had in common is stored once. The run's latest context (`base`, kept on
# the run) holds a chain of them, each resting on the one before and on the claims it added
# (`CARRIES`); when every claim under the base is among `ants` (counted: a claim is under it when
# it was added at or before it in its chain, and added once), the new context extends it with the
# claims the base lacks; otherwise it starts a chain of its own, resting on every claim. Either
# way it holds exactly `ants`, and truth maintenance labels it like the decision it supports
# (`computed`, from `ants`). Created when `fresh`; ends with `carry`, `ants`, `computed` and `k`,
# the context (NULL when not fresh and none was recorded).
def _context_node(kid: str, *, chain: str, seq: str, size: str) -> str:
    """Cypher creating a turn's context `k` (id `kid`, labelled `computed`) at `seq` of `chain`,
    holding `size` claims and keeping the readings of those it adds (`delta`), and making it the
    run's latest (`run.context`)."""
    return (f"CREATE (k:Node:{CONTEXT} " + _props(
        "", (), id=kid, kind="'Decision'", run="$run.id", state="computed", created_at="$now",
        retracted="false", pending="0", chain=chain, seq=seq, size=size,
        reads=_READS.format("delta")) + f") SET run.context = {kid} ")


def _turn_context(carry: str, fresh: str = "true") -> str:
    kid = f"'{CONTEXT_PREFIX}' + $decision.id"
    return (
        f"MATCH (run:{RUN} {{id: $run.id}}) OPTIONAL MATCH (base:Node {{id: run.context}}) "
        f"WITH {carry}, ants, run, base UNWIND ants AS a "
        # (a filter naming `base` inside the step would make FalkorDB step from each claim on its
        # own: several times slower than filtering the contexts collected)
        f"OPTIONAL MATCH (a1:Node {{id: CASE WHEN a.id = $run.claim.id THEN '' ELSE a.id END}})"
        f"-[:{CARRIES}]->(ac) WITH {carry}, run, base, a, collect(ac) AS acs "
        # the run's root is carried by the first context of every chain of the run (one a turn,
        # in a run whose inputs do not go on from the last): it is under `base` when the first
        # context of base's chain carries it, read from that context's few incoming edges
        f"OPTIONAL MATCH (first:Node {{id: CASE WHEN a.id = $run.claim.id "
        f"THEN coalesce(base.chain, '') ELSE '' END}})<-[:{CARRIES}]-(fa) "
        "WHERE fa.id = $run.claim.id "
        f"WITH {carry}, run, base, a, acs, count(fa) AS rooted "
        f"WITH {carry}, run, base, a, "
        "rooted + size([x IN acs WHERE x.chain = base.chain AND x.seq <= base.seq]) AS under "
        f"WITH {carry}, run, base, collect(a) AS ants, collect(CASE WHEN under = 0 THEN a END) AS delta, "
        "sum(CASE WHEN under > 0 THEN 1 ELSE 0 END) AS covered "
        f"WITH {carry}, run, ants, CASE WHEN covered = base.size THEN base END AS base, delta "
        f"WITH {carry}, run, ants, base, CASE WHEN base IS NULL THEN ants ELSE delta END AS delta, "
        + _STATE.format(states="[a IN ants | a.state]") + " AS computed "
        f"FOREACH (_ IN CASE WHEN {fresh} THEN [1] ELSE [] END | "
        + _context_node(kid, chain=f"coalesce(base.chain, {kid})", seq="coalesce(base.seq + 1, 1)",
                        size="coalesce(base.size, 0) + size(delta)")
        + f"FOREACH (a IN delta + [b IN [base] WHERE b IS NOT NULL] | "
        f"CREATE (a)-[:{CARRIES} {{j: {kid}}}]->(k)) "
        + _CREATED.format(id=kid, kind="'Decision'", after="computed") + ") "
        f"WITH {carry}, ants, computed OPTIONAL MATCH (k:Node {{id: {kid}}}) "
    )


def _message_recorded(row: str, kind: str, new: bool = False) -> str:
    """Cypher recording a message of the input that no carrier had (`row`: its {oid, ref, key})
    as an observation of the run, of `kind` (the user's `input`, or `unaccounted`), as `u`.
    `new`: the message is known not to be recorded (created whole, not merged)."""
    props = {"run": "$run.id", "ref": f"{row}.ref", "key": f"{row}.key", "at": "$now", "kind": kind}
    if new:
        return f"CREATE (u:{OBSERVATION} " + _props(row, (), id=f"{row}.oid", **props) + ") "
    return (f"MERGE (u:{OBSERVATION} {{id: {row}.oid}}) ON CREATE SET "
            + ", ".join(f"u.{k} = {v}" for k, v in props.items()) + " ")


def _known(carry: str) -> str:
    """Cypher reading the vetoes the model read: by their call refs in this run (`$told`) or their
    keys in its scope (`$stold`: a veto another run of the scope gave, in a shared history).
    Ends with `carry`, `known` (the nodes they named) and `tb` (the bindings they hold, each with
    the vetoed action: `_VETO_BINDS`)."""
    return ("OPTIONAL MATCH (v:Action) WHERE v.call_ref IN $told "
            f"WITH {carry}, collect(v) AS v1 "
            "OPTIONAL MATCH (v:Action) WHERE v.scall IN $stold "
            f"WITH {carry}, v1, collect(v) AS v2 WITH {carry}, v1 + v2 AS vs "
            f"WITH {carry}, reduce(acc = [], v IN vs | acc + coalesce(v.told, [])) AS known, "
            "reduce(acc = [], v IN vs | acc + " + _VETO_BINDS.format("v") + ") AS tb ")


def _input(run: Mapping[str, Any], refs: Sequence[Mapping[str, Any]] | None,
           told: Sequence[str]) -> dict[str, Any]:
    """The parameters of `_known` and `_context` for a model input."""
    keys = [r["key"] for r in refs or ()] + [observation_key(run["id"], None)]
    return {"told": [call_ref(run["id"], t) for t in told],
            "stold": [observation_key(run["id"], t, run.get("scope")) for t in told],
            "keys": keys, "every": refs is None, "refs": list(refs or ()), "sep": BIND_SEP}


def _unrecorded(carry: str) -> str:
    """Cypher checking the tool results of the input (`$results`, each {ref, key, digest, fid,
    claim, reason}) against what Rippl recorded: one no tool-result observation of the scope has
    (with that content digest) gets a claim "it is genuine", created retracted (a forged or edited
    message: a person reinstates it to accept it). Ends with `carry` and `unrecorded`, those claims."""
    return (
        f"UNWIND $results + [NULL] AS r OPTIONAL MATCH (ro:{OBSERVATION} {{key: r.key}}) "
        "WHERE ro.kind = 'tool_result' AND (r.digest IS NULL OR ro.output = r.digest) "
        "OPTIONAL MATCH (u0:Node {id: r.fid}) "
        f"WITH {carry}, r, u0, count(ro) AS recorded "
        f"WITH {carry}, collect(CASE WHEN r IS NOT NULL AND recorded = 0 "
        "THEN {r: r, new: u0 IS NULL} END) AS forged "
        "FOREACH (f IN forged | MERGE (u:Node:Claim {id: f.r.fid}) ON CREATE SET u += f.r.claim, "
        "u.state = 'OUT', u.retracted = true, u.retracted_at = $now, u.retracted_by = 'rippl', "
        "u.reason = f.r.reason "
        "FOREACH (_ IN CASE WHEN f.new THEN [1] ELSE [] END | "
        "CREATE (:Retraction {node: f.r.fid, retracted: true, valid_from: $now, recorded_at: $now, "
        "cause: 'unrecorded'}) "
        + _CREATED.format(id="f.r.fid", kind="'Claim'", after="'OUT'") + ")) "
        f"WITH {carry}, forged UNWIND [f IN forged | f.r.fid] + [NULL] AS fid "
        "OPTIONAL MATCH (u:Node {id: fid}) "
        f"WITH {carry}, collect(u) AS unrecorded "
    )


def decide(run: Mapping[str, Any], decision: Mapping[str, Any], refs: Sequence[Mapping[str, Any]] | None,
           told: Sequence[str], actions: Sequence[Mapping[str, Any]], now: int,
           results: Sequence[Mapping[str, Any]] = ()) -> Query:
    """Record a turn in one query: the run's root if new; the decision, resting on the run's claim
    and the turn's context set (`_context`: what the messages of the model's input carry, `refs`
    None: everything the run has carried, less the nodes named by the vetoes whose call ids are in
    `told`); and an action per call (`_ACTIONS`). A replayed turn finds its decision and actions and
    changes nothing. Returns `_ACTIONS`' rows."""
    return Query(
        _run_root(run)
        + "WITH 1 AS one MATCH (root:Node {id: $run.claim.id}) "
        "OPTIONAL MATCH (d0:Node {id: $decision.id}) WITH root, d0 IS NULL AS fresh "
        + _known("root, fresh") + _context("root, fresh")
        + _unrecorded("root, fresh, ctx, binds")
        + "WITH fresh, binds, CASE WHEN root IN ctx THEN ctx ELSE ctx + [root] END + unrecorded AS ants "
        + _turn_context("fresh, binds", "fresh")
        + "WITH fresh, ants, binds, computed, k, "
        + _DISTINCT.format("[p IN binds | p[0]]") + " AS bkeys "
        "MERGE (d:Node:Decision {id: $decision.id}) ON CREATE SET d += $decision, d.state = computed, "
        "d.reads = " + _READS.format("ants") + ", " + _BIND + " "
        "FOREACH (_ IN CASE WHEN fresh THEN [1] ELSE [] END | "
        f"CREATE (k)-[:{CARRIES} {{j: $decision.id}}]->(d) "
        + _CREATED.format(id="$decision.id", kind="'Decision'", after="computed") + ") "
        "WITH d " + _ACTIONS,
        {"run": run, "decision": decision, "actions": list(actions), "now": now,
         "results": list(results), **_input(run, refs, told)})


def _own_context(keep: str, within: bool = False) -> str:
    """Cypher: what a model input's messages carry when each is a carrier of this run Rippl
    recorded: the claims its observations saw and its turns' decisions rest on, distinct, in the
    order `_context` gives them (`ctx`). `fallback` is true when that is not the whole answer (a
    message found nowhere, or one another run of the scope wrote: `_context` records the one and
    hands over the other). Keeps `keep`. `within`: a turn whose context extends `base`
    (`_next_context`) needs nothing of a turn of the run whose context is under it (a model's
    earlier message, in a framework's message list): not stepping through that turn's contexts
    keeps its cost to the new messages."""
    return (
        # each message looked up by its key first, while the row is small (a list membership test
        # per message would grow with the square of the input): the first `$carriers` of `$keys`
        # must be carriers, the `$inputs` after them (the user's new messages) must not
        "UNWIND [k IN $keys[..$carriers] | [k, true]] "
        "+ [k IN $keys[$carriers..$carriers + size($inputs)] | [k, false]] + [NULL] AS p "
        f"OPTIONAL MATCH (po:{OBSERVATION} {{key: p[0]}}) WITH {keep}, p, count(po) AS hits "
        f"OPTIONAL MATCH (pm:Decision {{key: p[0]}}) WITH {keep}, p, hits, count(pm) AS more "
        f"WITH {keep}, sum(CASE WHEN p IS NOT NULL AND (hits + more > 0) <> p[1] "
        "THEN 1 ELSE 0 END) AS odd "
        f"OPTIONAL MATCH (o:{OBSERVATION}) WHERE o.key IN $keys "
        f"OPTIONAL MATCH (o)-[:{SAW}]->(c:Claim) "
        f"WITH {keep}, odd, collect(DISTINCT CASE WHEN o.run = $run.id THEN c END) AS oc, "
        "count(CASE WHEN o.run <> $run.id AND c IS NOT NULL THEN 1 END) AS nof, "
        "count(o.bound) AS nob "
        "OPTIONAL MATCH (m:Decision) WHERE m.key IN $keys "
        + (f"OPTIONAL MATCH (mk:{CONTEXT})-[:{CARRIES}]->(m) WITH {keep}, odd, oc, nof, nob, m, "
           "CASE WHEN mk.chain = base.chain AND mk.seq <= base.seq THEN NULL ELSE m END AS mw "
           if within else f"WITH {keep}, odd, oc, nof, nob, m, m AS mw ")
        # (the far end's label checked in the collect: in the step, FalkorDB filtered by reading
        # the label's matrix, also when `mw` was not found)
        + f"OPTIONAL MATCH (mc)-[:{CARRIES}*]->(mw) "
        f"WITH {keep}, odd, oc, nof, nob, "
        "collect(DISTINCT CASE WHEN m.run = $run.id AND mc:Claim THEN mc END) AS mcs, "
        "count(CASE WHEN m.run <> $run.id AND mc:Claim THEN 1 END) AS nmf, "
        "count(m.bound) AS nmb "
        # the claims of both, distinct (an aggregate: a fold over the list would grow with its square)
        f"WITH {keep}, oc + mcs AS both, (nof + nmf + nob + nmb + odd > 0) AS fallback "
        f"UNWIND both + [NULL] AS one WITH {keep}, fallback, collect(DISTINCT one) AS ctx "
        # a claim that carries bindings (a memory written after a veto) is for the whole query
        f"WITH {keep}, ctx, fallback OR any(c IN ctx WHERE c.bound IS NOT NULL) AS fallback "
    )

# A first turn whose whole input is the user's (no message before it is a carrier): its messages
# carry nothing only if the run has carried nothing yet (`capture.context.user_input`); the
# smaller query takes it when the run has recorded no observation and no turn and shares its
# scope with no other run (nothing to hand over), and defers to `decide` otherwise.
_BLANK_RUN = (
    f"OPTIONAL MATCH (e:{OBSERVATION}) WHERE e.run = $run.id "
    "WITH root, fresh, ctx, fallback, count(e) AS seen "
    "OPTIONAL MATCH (t:Node) WHERE t.run = $run.id AND t:Decision "
    "WITH root, fresh, ctx, fallback, seen, count(t) AS turns "
    f"OPTIONAL MATCH (sr:{RUN}) WHERE sr.scope = $run.scope AND sr.id <> $run.id "
    "WITH root, fresh, ctx, fallback, seen, turns, count(sr) AS others "
    "WITH root, fresh, ctx, fallback OR seen + turns + others > 0 AS fallback "
)


def _turn_nodes(keeps: Mapping[str, str], carry: str, decision: Iterable[str],
                actions: Iterable[str]) -> str:
    """Cypher creating `decide_own`'s decision (properties `decision` of `$decision`), resting
    on its context `k` and labelled `computed`, and its actions (properties `actions` of each of
    `$actions`), each keeping the readings it rests on by `keeps` (key: a Cypher expression,
    given inline: `_props`). Ends with `d`, `x` (an action a row) and `carry`."""
    return (
        "CREATE (d:Node:Decision " + _props("$decision", decision, state="computed", **keeps) + ") "
        f"CREATE (k)-[:{CARRIES} {{j: $decision.id}}]->(d) "
        + _CREATED.format(id="$decision.id", kind="'Decision'", after="computed") + " "
        f"WITH d, {carry} UNWIND $actions AS act "
        "CREATE (x:Node:Action " + _props("act", actions, state="d.state", **keeps) + ") "
        "CREATE (d)-[:DRIVES {j: act.id}]->(x) "
        + _CREATED.format(id="act.id", kind="'Action'", after="x.state") + " "
    )


def _own_turn(decision: Iterable[str], actions: Iterable[str]) -> str:
    """`decide_own`'s turn, its context `k` made (`_turn_context`): each node keeps the readings
    it rests on (`reads`) and their bound (`reads_until`), found before the nodes are made. Ends
    with `d`, `x` and `reads` (their READ_PAIRs)."""
    return (
        "WITH computed, k, " + _READS.format("ants") + " AS rids "
        + _each("rids", "cid") + "OPTIONAL MATCH (rc:Claim {id: cid}) "
        f"WITH computed, k, rids, collect({causal_cypher.READ_PAIR}) AS reads "
        "WITH computed, k, rids, reads, " + causal_cypher.reads_until("reads") + " AS until "
        + _turn_nodes({"reads": "rids", "reads_until": "until"}, "reads, rids, until",
                      decision, actions))


def _next_turn(decision: Iterable[str], actions: Iterable[str]) -> str:
    """The same for a turn going on from the last (`_next_context`): the decision and its actions
    rest on the readings of their context's chain (`reads_via`, `causal_cypher.read_ids`), not a
    list of their own; their bound is the previous turn's (lowered when a reading it rests on is
    superseded: `executed`) and the new readings', and their READ_PAIRs are read through the
    chain only when that bound has passed (then some may have expired: `preflight.fresh` tells)."""
    return (
        "WITH computed, k, dp " + _each("k.reads", "cid") + "OPTIONAL MATCH (rc:Claim {id: cid}) "
        f"WITH computed, k, dp, collect({causal_cypher.READ_PAIR}) AS added "
        "WITH computed, k, coalesce(dp.reads_until, 0) AS before, "
        + causal_cypher.reads_until("added") + " AS until "
        "WITH computed, k, CASE WHEN before < until THEN before ELSE until END AS until "
        + _turn_nodes({"reads_via": "k.id", "reads_until": "until"}, "k, until", decision, actions)
        + "WITH d, x " + causal_cypher.read_pairs("x", "d", when="x.reads_until <= $now"))


def _next_context(keep: str) -> str:
    """`_turn_context` for a turn whose input is the previous turn's input and more (`decide_own`
    with `base`): the previous turn's context (`base`, still the run's latest) holds every claim of
    that input, so the new context extends it with the claims of the new messages (`ctx`) it
    lacks, and rests on nothing else; its label is the base's (kept current by truth maintenance)
    and the new claims'. It keeps the readings of the claims it added (`reads`), so the readings
    a turn rests on are those of its chain up to its context (`causal_cypher.read_ids`). Work and
    storage grow with the new messages, not the conversation. Ends with `keep`, `computed`, `k`
    and `dp`, the previous turn's decision."""
    kid = f"'{CONTEXT_PREFIX}' + $decision.id"
    return (
        f"UNWIND ctx + [NULL] AS a OPTIONAL MATCH (a)-[:{CARRIES}]->(ac) "
        f"WITH {keep}, base, a, collect(ac) AS acs "
        f"WITH {keep}, base, a, size([x IN acs WHERE x.chain = base.chain AND x.seq <= base.seq]) "
        "AS under "
        f"WITH {keep}, base, collect(CASE WHEN a IS NOT NULL AND under = 0 THEN a END) AS delta "
        f"MATCH (run:{RUN} {{id: $run.id}}) OPTIONAL MATCH (base)-[:{CARRIES}]->(dp:Decision) "
        f"WITH {keep}, base, delta, run, dp, "
        + _STATE.format(states="[base.state] + [a IN delta | a.state]") + " AS computed "
        + _context_node(kid, chain="base.chain", seq="base.seq + 1",
                        size="base.size + size(delta)")
        + f"FOREACH (a IN delta + [base] | CREATE (a)-[:{CARRIES} {{j: {kid}}}]->(k)) "
        + _CREATED.format(id=kid, kind="'Decision'", after="computed") + " "
        f"WITH {keep}, computed, k, dp "
    )


def decide_own(run: Mapping[str, Any], decision: Mapping[str, Any],
               refs: Sequence[Mapping[str, Any]], actions: Sequence[Mapping[str, Any]],
               now: int, root: bool = False,
               results: Sequence[Mapping[str, Any]] = (),
               inputs: Sequence[Mapping[str, Any]] = (), base: str | None = None) -> Query:
    """`decide` for the common turn, in a query a quarter of its size: a new turn (its decision and
    actions not recorded yet), no veto read (`told` empty), tool results to verify that Rippl
    recorded (`results`), a model input whose every message is a carrier this run recorded
    (`_own_context`) followed by the user's new messages (`inputs`: recorded nowhere, each
    recorded here as the run's `input` observation, carrying nothing; with no message before them,
    only in a run that has carried nothing, `_BLANK_RUN`), and calls that
    repeat no vetoed call and have no override approved. Its nodes are known to be new, so they
    are created, not merged, and what an action repeats is known to be nothing. It records
    exactly what `decide` would; for any other turn it writes nothing and returns no row, and the
    caller sends `decide`. `root`: the run's node and root are believed to exist (not created
    here: a run without them is another turn).

    `base`: the context of the run's previous turn, whose input (as recorded) begins this one's:
    `refs`, `results` and `inputs` are then only the messages after it, and the turn extends that
    context (`_next_context`), so it costs what its new messages do. Only while `base` is still
    the run's latest context, the turn resting on it held no bindings (a veto handed over), and
    no claim under its chain has since gained readings or bindings (`tainted`, set by a memory
    written onto it: `_WROTE`); otherwise it writes nothing."""
    if base is None:
        head = (("" if root else _run_root(run) + "WITH 1 AS one ")
                + "MATCH (root:Node {id: $run.claim.id}) "
                "OPTIONAL MATCH (d0:Node {id: $decision.id}) WITH root, d0 IS NULL AS fresh ")
        keep = "root, fresh"
    else:  # (`fresh` also says the turn can extend `base`)
        head = ("MATCH (root:Node {id: $run.claim.id}) "
                f"OPTIONAL MATCH (run:{RUN} {{id: $run.id}}) "
                "OPTIONAL MATCH (base:Node {id: $base}) "
                "OPTIONAL MATCH (chain:Node {id: base.chain}) "
                "OPTIONAL MATCH (d0:Node {id: $decision.id}) "
                # (the previous turn held bindings, a veto handed over: the whole query binds them)
                f"OPTIONAL MATCH (base)-[:{CARRIES}]->(bd:Decision) WHERE bd.bound IS NOT NULL "
                "WITH root, base, coalesce(d0 IS NULL AND run.context = $base "
                "AND chain.tainted IS NULL AND chain.reads IS NOT NULL AND bd IS NULL, false) "
                "AS fresh ")
        keep = "root, fresh, base"
    kept = "root" if base is None else "root, base"
    made = [k for act in actions for k in act]  # every action's properties, given inline
    return Query(
        head + _own_context(keep, within=base is not None)
        + (_BLANK_RUN if inputs and not refs and base is None else "")
        # the tool results of the input, each one Rippl recorded (else `_unrecorded` is needed)
        + f"UNWIND $results + [NULL] AS r OPTIONAL MATCH (ro:{OBSERVATION} {{key: r.key}}) "
        "WHERE ro.kind = 'tool_result' AND (r.digest IS NULL OR ro.output = r.digest) "
        f"WITH {keep}, ctx, fallback, r, count(ro) AS recorded "
        f"WITH {keep}, ctx, fallback, sum(CASE WHEN r IS NOT NULL AND recorded = 0 THEN 1 "
        "ELSE 0 END) AS forged "  # (FalkorDB cannot mix a grouping key into an aggregate's expression)
        f"WITH {keep}, ctx, fallback OR forged > 0 AS fallback "
        f"WITH {kept}, ctx, fallback OR NOT fresh AS other UNWIND $actions AS act "
        "OPTIONAL MATCH (x0:Node {id: act.id}) OPTIONAL MATCH (v1:Action {vkey: act.rkey}) "
        "OPTIONAL MATCH (v2:Action {vtool: act.rtool}) "
        f"OPTIONAL MATCH (ov:{OVERRIDE} {{vkey: act.rkey}}) "
        f"WITH {kept}, ctx, other, count(x0) + count(v1) + count(v2) + count(ov) AS found "
        "WHERE NOT other AND found = 0 "
        + ("FOREACH (r IN $inputs | " + _message_recorded("r", "'input'", new=True)
           + f") WITH {kept}, ctx "
           if inputs else "")
        + ("WITH CASE WHEN root IN ctx THEN ctx ELSE ctx + [root] END AS ants "
           + _turn_context("1 AS one") + _own_turn(decision, made) if base is None
           else _next_context("1 AS one") + _next_turn(decision, made))
        + "RETURN x.id, x.state, x.executed_at, true AS created, d.state, [] AS repeats, "
        "NULL AS ov, NULL AS overridden, reads",
        {"run": run, "decision": decision, "actions": list(actions), "now": now,
         "keys": _input(run, [*refs, *inputs], ())["keys"], "carriers": len(refs),
         "inputs": [{k: r[k] for k in ("oid", "ref", "key")} for r in inputs],
         "results": [{"key": r["key"], "digest": r["digest"]} for r in results],
         **({"base": base} if base is not None else {})})


def wrote(run: Mapping[str, Any], carrier: Mapping[str, Any],
          refs: Sequence[Mapping[str, Any]] | None, told: Sequence[str], now: int) -> Query:
    """Record a message the model wrote (a text reply, a summary) as a carrier of the run: an
    observation under its ref, seeing the context set of the input it was written from (once: a
    message recorded before keeps what it carries). Returns the claims it carries."""
    return Query(
        _run_root(run)
        + f"WITH 1 AS one OPTIONAL MATCH (w0:{OBSERVATION} {{key: $carrier.key, run: $run.id}}) "
        "WITH w0 IS NULL AS fresh "
        + _known("fresh") + _context("fresh")
        + f"MERGE (w:{OBSERVATION} {{id: $carrier.id}}) ON CREATE SET w += $carrier "
        "FOREACH (c IN CASE WHEN fresh THEN ctx ELSE [] END | "
        f"MERGE (w)-[:{SAW}]->(c)) "
        "FOREACH (_ IN CASE WHEN fresh AND size(binds) > 0 THEN [1] ELSE [] END | SET w.bound = "
        + _DISTINCT.format("[p IN binds | p[0]]") + ") "
        f"WITH w OPTIONAL MATCH (w)-[:{SAW}]->(c:Claim) RETURN c.id",
        {"run": run, "carrier": carrier, "now": now, **_input(run, refs, told)})


# A memory written in a run (`capture.memory`): for each claim written (`$claims`, each {claim,
# w: the writer node's id}), a node "run R wrote it (turn T, call C): <claim>" resting on what the
# writing rested on (`ants`), linked to the claim as a justification of it, unless the claim is a
# premise someone stated before this write began (`$since`: it holds on its own) or the link would
# change the claim's state (then `capture.memory` links it with a relabel). The claim is no
# fresher than the readings the writer rests on (`reads`, unless another kind of justification
# holds it), and carries the writer's bindings; the chains of contexts holding it are marked
# `tainted` when it gains either. Returns (claim, writer, linked or nothing to do).
_WROTE = (
    "UNWIND $claims AS cl MATCH (c:Node {id: cl.claim}) "
    "OPTIONAL MATCH (w0:Node {id: cl.w}) OPTIONAL MATCH (j)-[:SUPPORTS]->(c) "
    "WITH ants, bound, turn, c, cl, w0 IS NULL AS fresh, count(j) AS justs, "
    "count(CASE WHEN j IS NOT NULL AND j.wrote_run IS NULL THEN 1 END) AS others "
    "MERGE (w:Node:Claim {id: cl.w}) ON CREATE SET w += $writer, w.id = cl.w, "
    "w.text = 'run ' + $writer.wrote_run + ' wrote it' + coalesce(' (' + turn + ')', '') + ': ' "
    "+ left(c.text, 300), w.state = " + _STATE.format(states="[a IN ants | a.state]") + ", "
    "w.reads = " + _READS.format("ants") + ", "
    "w.bound = CASE WHEN size(bound) = 0 THEN NULL ELSE bound END "
    "FOREACH (a IN CASE WHEN fresh THEN ants ELSE [] END | CREATE (a)-[:SUPPORTS {j: cl.w}]->(w)) "
    "FOREACH (_ IN CASE WHEN fresh THEN [1] ELSE [] END | "
    + _CREATED.format(id="cl.w", kind="'Claim'", after="w.state") + ") "
    "WITH c, w, justs, others OPTIONAL MATCH (w)-[l:SUPPORTS]->(c) "
    "WITH c, w, justs, others, l IS NOT NULL AS had, "
    "(justs = 0 AND c.created_at < $since AND coalesce(c.created_in, '') <> $writer.wrote_run) "
    "AS stated, "
    "CASE WHEN coalesce(c.retracted, false) OR coalesce(c.pending, 0) > 0 THEN c.state "
    "WHEN justs = 0 THEN w.state WHEN c.state = 'IN' OR w.state = 'IN' THEN 'IN' "
    "WHEN c.state = 'AT_RISK' OR w.state = 'AT_RISK' THEN 'AT_RISK' ELSE 'OUT' END AS after "
    "WITH c, w, had, stated, others, NOT had AND NOT stated AND after = c.state AS blind "
    "FOREACH (_ IN CASE WHEN blind THEN [1] ELSE [] END | CREATE (w)-[:SUPPORTS {j: w.id}]->(c)) "
    "FOREACH (_ IN CASE WHEN had OR stated THEN [] ELSE [1] END | "
    "SET c.reads = CASE WHEN others = 0 THEN "
    + _DISTINCT.format("coalesce(c.reads, []) + coalesce(w.reads, [])") + " ELSE c.reads END, "
    "c.bound = CASE WHEN w.bound IS NULL THEN c.bound ELSE "
    + _DISTINCT.format("coalesce(c.bound, []) + w.bound") + " END) "
    # the turns that extend a context holding the claim from before (`decide_own`'s `base`) take
    # what it carries as it was: each chain it is under is marked, and such a turn then reads it
    # all again (`_own_context`)
    "WITH c, w, had OR stated OR blind AS done, CASE WHEN NOT had AND NOT stated AND "
    "(w.bound IS NOT NULL OR (others = 0 AND size(coalesce(w.reads, [])) > 0)) THEN c END AS g "
    f"OPTIONAL MATCH (g)-[:{CARRIES}]->(kc:{CONTEXT}) WITH c, w, done, kc "
    "OPTIONAL MATCH (chain:Node {id: kc.chain}) "
    "FOREACH (x IN CASE WHEN chain IS NULL THEN [] ELSE [chain] END | SET x.tainted = true) "
    "WITH c, w, done, count(chain) AS chains "
    "RETURN c.id, w.id, done"
)


def wrote_memory(call_ref_: str, claims: Sequence[Mapping[str, str]],
                 writer: Mapping[str, Any], unrecorded: Mapping[str, Any], since: int,
                 now: int) -> Query:
    """A memory a tool call of a run wrote (`call_ref_`): each claim written rests on what the
    call's turn rested on (its decision's premises, after the told rule) and holds its bindings
    (`_WROTE`). A call never recorded (fail closed) rests on `unrecorded`, a claim that it was,
    created retracted: the memory holds only once a person reinstates it."""
    return Query(
        "OPTIONAL MATCH (x:Action {call_ref: $call}) "
        "OPTIONAL MATCH (d:Decision)-[e:DRIVES]->(x) WHERE e.repeat IS NULL "
        f"OPTIONAL MATCH (a:Claim)-[:{CARRIES}*]->(d) "
        "WITH x, d, collect(DISTINCT a) AS ants OPTIONAL MATCH (u0:Node {id: $unrec.id}) "
        "WITH x, d, ants, u0 "
        "FOREACH (_ IN CASE WHEN d IS NULL AND u0 IS NULL THEN [1] ELSE [] END | "
        "CREATE (u:Node:Claim " + _props("$unrec.props", unrecorded.get("props", {}), state="'OUT'",
                                          retracted="true", retracted_at="$now",
                                          retracted_by="'rippl'") + ") "
        "CREATE (:Retraction {node: $unrec.id, retracted: true, valid_from: $now, "
        "recorded_at: $now, cause: 'unrecorded'}) "
        + _CREATED.format(id="$unrec.id", kind="'Claim'", after="'OUT'") + ") "
        "WITH x, d, ants OPTIONAL MATCH (u:Node {id: $unrec.id}) WHERE d IS NULL "
        "WITH CASE WHEN d IS NULL THEN [u] ELSE ants END AS ants, "
        "coalesce(d.bound, []) AS bound, "
        "CASE WHEN d IS NULL THEN NULL ELSE 'turn ' + d.turn + ', call ' + x.call_id END AS turn "
        + _WROTE,
        {"call": call_ref_, "claims": list(claims), "writer": writer, "unrec": unrecorded,
         "since": since, "now": now})


def run_wrote_memory(run: Mapping[str, Any], claims: Sequence[Mapping[str, str]],
                     writer: Mapping[str, Any], told: Sequence[str], since: int,
                     now: int) -> Query:
    """A memory a run wrote with no tool call of its own (a framework's own save, a graph node,
    an MCP session): each claim rests on everything the run has carried, less what the vetoes
    it read named (`context=None`), and holds every binding of it (`_WROTE`)."""
    return Query(
        _run_root(run) + "WITH 1 AS one MATCH (root:Node {id: $run.claim.id}) WITH root "
        + _known("root") + _context("root")
        + "WITH CASE WHEN root IN ctx THEN ctx ELSE ctx + [root] END AS ants, "
        + _DISTINCT.format("[p IN binds | p[0]]") + " AS bound, NULL AS turn "
        + _WROTE,
        {"run": run, "claims": list(claims), "writer": writer, "since": since, "now": now,
         **_input(run, None, told)})


def drive(run: Mapping[str, Any], decision: str, actions: Sequence[Mapping[str, Any]],
          now: int) -> Query:
    """Add actions to an existing decision (a call edited after its turn was decided), labelled
    from the decision's state and what they repeat (`_ACTIONS`)."""
    return Query(
        f"OPTIONAL MATCH (r:{RUN} {{id: $run}}) SET r.last_active = $now "
        "WITH 1 AS one MATCH (d:Decision {id: $decision}) WITH d " + _ACTIONS,
        {"run": run["id"], "decision": decision, "actions": list(actions), "now": now,
         "sep": BIND_SEP})


def tell(action_id: str, told: Sequence[str], binds: Sequence[str],
         keys: tuple[str, str, str]) -> Query:
    """Record what a veto of this captured action named (the model read it), and, when premises
    denied it (`binds`: the nodes not holding that vetoed it), make it findable as a vetoed call by
    its repeat keys (run, tool and arguments; run and tool), so a call repeating it rests on
    `binds` too, and give it its act (tool and arguments, whatever the run: what a binding it
    hands over names)."""
    return Query("MATCH (a:Action {id: $id}) SET a.told = $told, "
                 "a.binds = CASE WHEN size($binds) > 0 THEN $binds ELSE a.binds END, "
                 "a.vkey = CASE WHEN size($binds) > 0 THEN $vkey ELSE a.vkey END, "
                 "a.vtool = CASE WHEN size($binds) > 0 THEN $vtool ELSE a.vtool END, "
                 "a.vact = CASE WHEN size($binds) > 0 THEN $vact ELSE a.vact END",
                 {"id": action_id, "told": list(told), "binds": list(binds), "vkey": keys[0],
                  "vtool": keys[1], "vact": keys[2]})


def binding_origins(vetoes: Sequence[str], vias: Sequence[str]) -> Query:
    """Where each binding a call repeats came from: (the vetoed action, its run, its turn, and the
    kind, run and name of the node that brought it: a message's ref, a turn, a memory's text, or
    the veto itself), one row per distinct pair, by veto."""
    return Query(
        "UNWIND $pairs AS p MATCH (v:Action {id: p.veto}) "
        "OPTIONAL MATCH (d:Decision)-[e:DRIVES]->(v) WHERE e.repeat IS NULL "
        f"OPTIONAL MATCH (n:Node {{id: p.via}}) OPTIONAL MATCH (o:{OBSERVATION} {{id: p.via}}) "
        "RETURN DISTINCT v.id, v.run, d.turn, CASE WHEN o IS NOT NULL THEN 'Observation' "
        "WHEN n:Decision THEN 'Decision' WHEN n:Claim THEN 'Claim' ELSE 'Action' END, "
        "coalesce(o.run, n.run, v.run), coalesce(o.ref, n.turn, CASE WHEN n:Claim "
        "THEN left(n.text, 120) END, n.call_id) ORDER BY v.id",
        {"pairs": [{"veto": v, "via": w} for v, w in zip(vetoes, vias, strict=True)]},
        read_only=True)


def hand_overs(ids: Sequence[str]) -> Query:
    """The run each of these hand-over claims came from, and the carrier's ref."""
    return Query(f"UNWIND $ids AS hid MATCH (h:Node {{id: hid}}) "
                 f"OPTIONAL MATCH (w:{OBSERVATION} {{id: h.carrier}}) "
                 "OPTIONAL MATCH (m:Decision {id: h.carrier}) "
                 "RETURN DISTINCT h.handed_from, coalesce(w.ref, m.turn, 'its messages') "
                 "ORDER BY h.handed_from", {"ids": list(ids)}, read_only=True)


# Captured calls recorded before they kept their key in the run's scope (schema 13's backfill):
# a veto another run of the scope gave is found by it.
BACKFILL_SCOPED_CALLS = Query(
    "MATCH (a:Action) WHERE a.call_ref IS NOT NULL AND a.scall IS NULL "
    f"OPTIONAL MATCH (r:{RUN} {{id: a.run}}) SET a.scall = coalesce(r.scope, a.run) + $sep + a.call_id",
    {"sep": "\x1f"})


BACKFILL_RESULT_DIGESTS = Query(
    f"MATCH (o:{OBSERVATION}) WHERE o.kind = 'tool_result' AND o.output IS NULL "
    "MATCH (a:Action {call_ref: o.run + $sep + o.ref}) SET o.output = a.output", {"sep": "\x1f"})


# Readings whose arguments may name a URL and that have no host recorded (schema 10's backfill).
READINGS_WITH_URLS = Query("MATCH (s:Source) WHERE s.source_type = 'tool_result' AND s.host IS NULL "
                           "AND s.args CONTAINS '://' RETURN s.id, s.args", read_only=True)


def set_hosts(rows: list[dict[str, str]]) -> Query:
    return Query("UNWIND $rows AS r MATCH (s:Source {id: r.id}) SET s.host = r.host",
                 {"rows": rows})


def is_read(tool: str) -> Query:
    """Whether `tool` was ever recorded as a read (one of its readings refreshes or supersedes)."""
    return Query("MATCH (c:Claim {read_tool: $tool}) RETURN c.id LIMIT 1", {"tool": tool},
                 read_only=True)


def take_override(override: str, action_id: str) -> Query:
    """Bind an approved override to the call it allows (once: returns no row when another call
    took it first)."""
    return Query(f"MATCH (o:{OVERRIDE} {{id: $o}}) WHERE o.used_by IS NULL OR o.used_by = $a "
                 "SET o.used_by = $a WITH o MATCH (a:Action {id: $a}) SET a.override = $o "
                 "RETURN o.id", {"o": override, "a": action_id})


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
             now: int, handed: str | None = None, read: Mapping[str, Any] | None = None) -> Query:
    """Mark a captured action executed and record its output as an observation of the run: the
    result's source (new, IN) and claim (new, IN; or existing). An existing claim whose state the
    new source would change (OUT or at risk through its support alone) is not linked here: the
    query returns `linked` false and the caller adds that support with a full relabel.
    A reading of a read tool (`read`: its key, the end of its freshness, whether it supersedes)
    refreshes its claim and ends the readings of other outputs of the same read, in every run.
    Returns (claim state, linked, [claims superseded]), or no row when there is no such action
    (nothing is written)."""
    return Query(
        "MATCH (x:Action {id: $action}) "
        "SET x.executed_at = $now, x.exec_status = $result.status, x.output = $result.digest "
        f"WITH x OPTIONAL MATCH (r:{RUN} {{id: $run}}) SET r.last_active = $now "
        "WITH x OPTIONAL MATCH (s0:Node {id: $result.source.id}) "
        "OPTIONAL MATCH (c0:Node {id: $result.claim.id}) "
        "WITH s0 IS NULL AS new_source, c0, c0 IS NULL AS new_claim, x.bound AS xb, "
        "(c0 IS NOT NULL AND c0.state <> 'IN' AND NOT coalesce(c0.retracted, false) "
        " AND coalesce(c0.pending, 0) = 0) AS shifts "
        # a claim carried before that becomes a reading: the turns that extend a context holding
        # it took it as no reading, so each chain it is under is marked (`_WROTE`, `decide_own`)
        f"OPTIONAL MATCH (g:Node {{id: CASE WHEN $read.key IS NOT NULL AND c0.read_key IS NULL "
        f"THEN c0.id ELSE '' END}})-[:{CARRIES}]->(kc:{CONTEXT}) "
        "WITH new_source, c0, new_claim, xb, shifts, kc "
        "OPTIONAL MATCH (chain:Node {id: coalesce(kc.chain, '')}) "
        "WITH new_source, c0, new_claim, xb, shifts, collect(DISTINCT chain) AS chains "
        "FOREACH (t IN chains | SET t.tainted = true) "
        "FOREACH (_ IN CASE WHEN new_source THEN [1] ELSE [] END | "
        "CREATE (s:Node:Source " + _props("$result.source", result.get("source", {}), state="'IN'")
        + ") " + _CREATED.format(id="$result.source.id", kind="'Source'", after="'IN'") + ") "
        # a new claim a reading: fresh until this reading's end (the SET below, for one known)
        "FOREACH (_ IN CASE WHEN new_claim THEN [1] ELSE [] END | "
        "CREATE (nc:Node:Claim " + _props(
            "$result.claim", result.get("claim", {}), state="'IN'", fresh_until="$read.until",
            read_key="$read.key", read_tool="$read.tool",
            read_at="CASE WHEN $read.key IS NULL THEN NULL ELSE $now END",
            read_run="CASE WHEN $read.key IS NULL THEN NULL ELSE $run END",
            read_fresh_for="$read.fresh_for")
        + ") " + _CREATED.format(id="$result.claim.id", kind="'Claim'", after="'IN'") + ") "
        "WITH shifts, xb, new_claim, new_source "
        "MATCH (s:Node {id: $result.source.id}), (c:Node {id: $result.claim.id}) "
        # (a source made just now supports nothing yet: not looked for, a step between two new
        # nodes read the relation's recent changes, 2 ms at 10,000 turns)
        "OPTIONAL MATCH (s1:Node {id: CASE WHEN new_source THEN '' ELSE $result.source.id END})"
        "-[e:SUPPORTS]->(c) "
        "WITH s, c, shifts, xb, new_claim, e IS NULL AS unlinked "
        "FOREACH (_ IN CASE WHEN unlinked AND NOT shifts THEN [1] ELSE [] END | "
        "CREATE (s)-[:SUPPORTS {j: $result.source.id}]->(c)) "
        # a reading of a read tool: the claim is fresh until the latest end of its valid readings
        "FOREACH (_ IN CASE WHEN $read.key IS NULL OR new_claim THEN [] ELSE [1] END | "
        "SET c.fresh_until = CASE WHEN c.read_at IS NULL OR (c.fresh_until IS NOT NULL AND "
        "c.fresh_until <= $now) THEN $read.until WHEN c.fresh_until IS NULL OR $read.until IS NULL "
        "THEN NULL WHEN c.fresh_until > $read.until THEN c.fresh_until ELSE $read.until END, "
        "c.read_key = $read.key, c.read_tool = $read.tool, c.read_at = $now, c.read_run = $run, "
        "c.read_fresh_for = $read.fresh_for, c.superseded_by = NULL, c.superseded_at = NULL) "
        + _observed("c, unlinked, shifts, xb", "c", observation) +
        # an output that is the text another run of the scope wrote (an agent used as a tool)
        # carries what that text carried there
        # (a key that names nothing, not NULL, when the output is nobody's text: see `ended`)
        # (each step in the pattern of the lookup it starts from: a step from a node not found
        # reads the whole relation in FalkorDB, 3 ms at 10,000 turns)
        "WITH o, c, unlinked, shifts, xb "
        f"OPTIONAL MATCH (w:{OBSERVATION} {{key: coalesce($handed, '')}}) "
        "WHERE w.run <> $run "
        "WITH o, c, unlinked, shifts, xb, collect(DISTINCT w.bound) AS wb "
        f"OPTIONAL MATCH (w:{OBSERVATION} {{key: coalesce($handed, '')}})-[:{SAW}]->(wc:Claim) "
        "WHERE w.run <> $run "
        "WITH o, c, unlinked, shifts, xb, wb, collect(DISTINCT CASE WHEN wc IS NOT NULL "
        "THEN {carrier: w.id, run: w.run, ref: w.ref, claim: wc} END) AS wf "
        "OPTIONAL MATCH (wm:Decision {key: coalesce($handed, '')}) WHERE wm.run <> $run "
        "WITH o, c, unlinked, shifts, xb, wf, wb, collect(DISTINCT wm.bound) AS wmb "
        # (the label of the far end in the step made FalkorDB scan every decision instead)
        "OPTIONAL MATCH (wm:Decision {key: coalesce($handed, '')})<-[:SUPPORTS]-(wmc) "
        "WHERE wm.run <> $run "
        "WITH o, c, unlinked, shifts, xb, wf, wb, wmb, collect(DISTINCT CASE WHEN wmc:Claim "
        "THEN {carrier: wm.id, run: wm.run, ref: wm.turn, claim: wmc} END) AS wmf "
        # the bindings its call's turn held (the arguments were written from that input: a
        # delegation written after a veto), and those the text carried there (an agent vetoed,
        # then used as a tool)
        "WITH o, c, unlinked, shifts, wf + wmf AS foreign, "
        "reduce(acc = coalesce(xb, []), l IN wb + wmb | acc + [x IN l WHERE NOT x IN acc]) "
        "AS handed "
        "FOREACH (_ IN CASE WHEN size(handed) > 0 THEN [1] ELSE [] END | "
        "SET o.bound = handed) "
        + _handed("o, c, unlinked, shifts", "foreign")
        + f"FOREACH (h IN hs | MERGE (o)-[:{SAW}]->(h)) "
        # a reading that differs from the valid readings of the same read ends them, in every run
        # (one already stale is superseded too: a newer reading says what replaced it)
        "WITH c, unlinked, shifts OPTIONAL MATCH (y:Claim {read_key: $read.key}) "
        "WHERE $read.supersedes AND y.id <> c.id AND y.superseded_by IS NULL "
        "OPTIONAL MATCH (r:Source)-[:SUPPORTS]->(y) WHERE r.superseded_at IS NULL "
        "AND r.source_type = 'tool_result' "
        "SET r.superseded_at = $now, y.superseded_by = c.id, y.superseded_at = $now, "
        "y.fresh_until = CASE WHEN y.fresh_until IS NULL OR y.fresh_until > $now THEN $now "
        "ELSE y.fresh_until END "
        "WITH c, unlinked, shifts, collect(DISTINCT y.id) AS ended "
        # what rests on an ended reading is fresh until now at the latest (`reads_until`)
        # (an id that names nothing, not NULL, when none ended: the index answers at once, where
        # a NULL made it scan every entry)
        "UNWIND CASE WHEN size(ended) = 0 THEN [''] ELSE ended END AS yid "
        "OPTIONAL MATCH (z:Node) WHERE yid IN z.reads "
        "SET z.reads_until = CASE WHEN z.reads_until > $now THEN $now ELSE z.reads_until END "
        # and so is what rests on it through a chain of contexts (`reads_via`): every turn whose
        # context is at or after the one that added it
        f"WITH c, unlinked, shifts, ended, collect(DISTINCT CASE WHEN z:{CONTEXT} THEN z END) AS zs "
        "UNWIND zs + [NULL] AS zk "
        f"OPTIONAL MATCH (later:{CONTEXT} {{chain: coalesce(zk.chain, '')}})-[:{CARRIES}]->"
        "(zd:Decision) WHERE later.seq >= zk.seq "
        "WITH c, unlinked, shifts, ended, collect(DISTINCT zd) AS zds "
        "UNWIND [z IN zds | z.id] + [''] AS zid "
        "OPTIONAL MATCH (:Decision {id: zid})-[ze:DRIVES]->(zx:Action) "
        "WITH c, unlinked, shifts, ended, zds, collect(DISTINCT CASE WHEN "
        "ze.repeat IS NULL THEN zx END) AS zxs WITH c, unlinked, shifts, ended, zds + zxs AS through "
        "FOREACH (z IN [z IN through WHERE z.reads_via IS NOT NULL] | SET z.reads_until = "
        "CASE WHEN z.reads_until > $now THEN $now ELSE z.reads_until END) "
        "WITH c, unlinked, shifts, ended "
        "RETURN c.state, NOT (unlinked AND shifts), ended",
        {"run": run, "action": action_id, "result": result, "obs": observation, "now": now,
         "handed": handed, "read": read or {"key": None, "tool": None, "until": None,
                                            "fresh_for": None, "supersedes": False}})


def executed_plain(run: str, action_id: str, result: Mapping[str, Any],
                   observation: Mapping[str, Any], now: int, handed: str | None) -> Query:
    """`executed` for the common call, in a query a third of its size: not a read tool's reading
    (nothing to refresh or supersede), its result source new (not a retry), and its output not
    the text another run of the scope wrote (nothing handed over). It records exactly what
    `executed` would; for any other call it writes nothing and returns no row, and the caller
    sends `executed`."""
    return Query(
        "MATCH (x:Action {id: $action}) OPTIONAL MATCH (s0:Node {id: $result.source.id}) "
        f"OPTIONAL MATCH (w:{OBSERVATION} {{key: coalesce($handed, '')}}) WHERE w.run <> $run "
        "OPTIONAL MATCH (wm:Decision {key: coalesce($handed, '')}) WHERE wm.run <> $run "
        "WITH x, count(s0) + count(w) + count(wm) AS found WHERE found = 0 "
        "SET x.executed_at = $now, x.exec_status = $result.status, x.output = $result.digest "
        f"WITH x OPTIONAL MATCH (r:{RUN} {{id: $run}}) SET r.last_active = $now "
        "WITH x.bound AS xb OPTIONAL MATCH (c0:Node {id: $result.claim.id}) "
        "WITH xb, c0 IS NULL AS new_claim, "
        "(c0 IS NOT NULL AND c0.state <> 'IN' AND NOT coalesce(c0.retracted, false) "
        " AND coalesce(c0.pending, 0) = 0) AS shifts "
        "CREATE (s:Node:Source " + _props("$result.source", result.get("source", {}), state="'IN'")
        + ") " + _CREATED.format(id="$result.source.id", kind="'Source'", after="'IN'") + " "
        "FOREACH (_ IN CASE WHEN new_claim THEN [1] ELSE [] END | "
        "CREATE (nc:Node:Claim " + _props("$result.claim", result.get("claim", {}), state="'IN'")
        + ") " + _CREATED.format(id="$result.claim.id", kind="'Claim'", after="'IN'") + ") "
        "WITH s, shifts, xb MATCH (c:Node {id: $result.claim.id}) "
        "FOREACH (_ IN CASE WHEN shifts THEN [] ELSE [1] END | "
        "CREATE (s)-[:SUPPORTS {j: $result.source.id}]->(c)) "
        + _observed("c, shifts, xb", "c", observation, bound="xb")
        + "RETURN c.state, NOT shifts, [] AS ended",
        {"run": run, "action": action_id, "result": result, "obs": observation, "now": now,
         "handed": handed})


def _observed(keep: str, claim: str, observation: Mapping[str, Any], **more: str) -> str:
    """Cypher recording a tool result's observation (`$obs`: properties `observation` and `more`,
    given inline: `_props`) unless recorded already, seeing `claim` (one of `keep`). Ends with
    `keep` and `o`."""
    return (f"WITH {keep} OPTIONAL MATCH (o0:{OBSERVATION} {{id: $obs.id}}) "
            "FOREACH (_ IN CASE WHEN o0 IS NULL THEN [1] ELSE [] END | "
            f"CREATE (:{OBSERVATION} " + _props("$obs", observation, **more) + ")) "
            f"WITH {keep} MATCH (o:{OBSERVATION} {{id: $obs.id}}) MERGE (o)-[:{SAW}]->({claim}) ")


def mark_executed(action_id: str, at: int, digest: str | None) -> Query:
    """Mark any action executed (declared or captured): (id, kind, state)."""
    return Query("MATCH (a:Action {id: $id}) SET a.executed_at = $at, "
                 "a.output = coalesce($digest, a.output) RETURN a.id, a.kind, a.state",
                 {"id": action_id, "at": at, "digest": digest})


def register_tools(run: str, tools: Sequence[Mapping[str, str]], now: int) -> Query:
    """Keep each tool's input schema with the run (`tools`: {tool, schema (JSON text)}), replacing
    one registered before under the same name."""
    return Query(f"UNWIND $tools AS t MERGE (s:{TOOL_SCHEMA} {{run: $run, tool: t.tool}}) "
                 "SET s.schema = t.schema, s.registered_at = $now",
                 {"run": run, "tools": list(tools), "now": now})


def tool_schemas(run: str) -> Query:
    """The tools' input schemas registered with the run: (tool, schema as JSON text)."""
    return Query(f"MATCH (s:{TOOL_SCHEMA} {{run: $run}}) RETURN s.tool, s.schema",
                 {"run": run}, read_only=True)


def close(run: str, now: int) -> Query:
    return Query(f"MATCH (r:{RUN} {{id: $run}}) SET r.closed_at = coalesce(r.closed_at, $now) "
                 "RETURN r.id", {"run": run, "now": now})


# (an action that ran under an approved override is listed with the override, not here)

def stale_runs(before: int, include_open: bool) -> Query:
    """Runs closed before `before` (or, with include_open, last active before it), except those
    whose root claim is under review."""
    done = "r.closed_at < $before" + (" OR r.last_active < $before" if include_open else "")
    return Query(f"MATCH (r:{RUN}) WHERE {done} RETURN r.id ORDER BY r.id",
                 {"before": before}, read_only=True)


def prune(runs: Sequence[str]) -> Query:
    """Delete the capture of these runs: their observations, decisions, actions, result sources,
    root and run node, and the history of those nodes. Claims are left to `prune_claims`. A source
    or claim retracted or under review is kept (a pending review, one by provenance included, must
    still find what it covers)."""
    return Query(
        f"UNWIND $runs AS rid MATCH (r:{RUN} {{id: rid}}) "
        f"OPTIONAL MATCH (o:{OBSERVATION}) WHERE o.run = rid DETACH DELETE o "
        f"WITH DISTINCT r, rid OPTIONAL MATCH (ts:{TOOL_SCHEMA}) WHERE ts.run = rid DELETE ts "
        "WITH DISTINCT r, rid OPTIONAL MATCH (n:Node) WHERE n.run = rid "
        "AND NOT coalesce(n.retracted, false) AND coalesce(n.pending, 0) = 0 "
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


# ------------------------------------------------------------------------------------ reading runs

# A captured call was vetoed when a veto recorded what it named (`tell`); it is owed a
# compensation when it ran and what it rested on is retracted (as `EXECUTED_OUT`).
_VETOED = "a.told IS NOT NULL AND a.override IS NULL"
_OWED = ("a.executed_at IS NOT NULL AND a.state = 'OUT' AND a.override IS NULL "
         "AND NOT a.id IN resolved")
# the actions whose compensation a reviewer resolved (review/compensations.py writes these
# entries; capture sits beside review: the label is all they share)
_RESOLVED = ("OPTIONAL MATCH (ce:CompensationEntry) WHERE ce.kind = 'resolution' "
             "WITH collect(ce.action) AS resolved ")


def runs(agent: str | None, framework: str | None, since: int | None, until: int | None,
         open_only: bool) -> Query:
    """Every captured run matching the filters (agent, framework, active in [since, until], with
    open compensations), most recently active first: (properties, turns, calls, vetoes, owed)."""
    return Query(
        _RESOLVED + f"MATCH (r:{RUN}) WHERE ($agent IS NULL OR r.agent = $agent) "
        "AND ($framework IS NULL OR r.framework = $framework) "
        "AND ($since IS NULL OR r.last_active >= $since) "
        "AND ($until IS NULL OR r.started_at <= $until) "
        "OPTIONAL MATCH (d:Node) WHERE d.run = r.id AND d:Decision "
        "WITH resolved, r, count(DISTINCT d) AS turns "
        "OPTIONAL MATCH (a:Node) WHERE a.run = r.id AND a:Action "
        "WITH r, turns, count(a) AS calls, "
        f"sum(CASE WHEN {_VETOED} THEN 1 ELSE 0 END) AS vetoes, "
        f"sum(CASE WHEN {_OWED} THEN 1 ELSE 0 END) AS owed "
        "WHERE NOT $open OR owed > 0 "
        "RETURN properties(r), turns, calls, vetoes, owed ORDER BY r.last_active DESC, r.id",
        {"agent": agent, "framework": framework, "since": since, "until": until,
         "open": open_only}, read_only=True)


def run_trace(run: str) -> Query:
    """A run and its capture, in one query: (run properties, [[decision properties, [properties of
    each claim it rests on]]], [[action properties, its turn's decision id, [properties of its
    result claims], [the read claims it rests on: `causal_cypher.read_ids`]]], [ids of actions
    whose compensation a reviewer resolved]); no row when there is no such run."""
    return Query(
        _RESOLVED + f"MATCH (r:{RUN} {{id: $run}}) "
        "OPTIONAL MATCH (d:Node) WHERE d.run = $run AND d:Decision "
        f"OPTIONAL MATCH (c:Claim)-[:{CARRIES}*]->(d) "
        "WITH resolved, r, d, collect(CASE WHEN c IS NULL THEN NULL ELSE properties(c) END) AS rested "
        "WITH resolved, r, collect(CASE WHEN d IS NULL THEN NULL ELSE [properties(d), rested] END) "
        "AS turns "
        "OPTIONAL MATCH (a:Node) WHERE a.run = $run AND a:Action "
        "OPTIONAL MATCH (ad:Decision)-[e:DRIVES]->(a) WHERE e.repeat IS NULL "
        "OPTIONAL MATCH (s:Node)-[:SUPPORTS]->(rc:Claim) WHERE a.executed_at IS NOT NULL "
        "AND s.run = $run AND s:Source AND s.call_id = a.call_id "
        "WITH resolved, r, turns, a, ad, "
        "collect(CASE WHEN rc IS NULL THEN NULL ELSE properties(rc) END) AS results "
        + causal_cypher.read_ids("a", "resolved, r, turns, ad, results")
        + "WITH resolved, r, turns, a, ad, results, collect(DISTINCT rid) AS reads "
        "RETURN properties(r), turns, "
        "collect(CASE WHEN a IS NULL THEN NULL ELSE [properties(a), ad.id, results, reads] END), "
        "[x IN resolved WHERE x IS NOT NULL]",
        {"run": run}, read_only=True)


# Schema 15 (`capture.chains.backfill_contexts`): runs whose turns' decisions rest on their claims
# directly, as recorded before contexts, and regrouping them onto contexts.
def runs_without_contexts(limit: int) -> Query:
    """Runs with a captured decision that rests on no context: (run id)."""
    return Query(f"MATCH (d:Decision) WHERE d.run IS NOT NULL AND NOT ()-[:{CARRIES}]->(d) "
                 "RETURN DISTINCT d.run LIMIT $limit", {"limit": limit}, read_only=True)


def turns_without_contexts(run: str) -> Query:
    """The run's captured decisions that rest on no context, in the order it recorded them:
    (id, state, created_at, [ids of what it rests on], stored blockers)."""
    return Query(f"MATCH (d:Node) WHERE d.run = $run AND d:Decision AND NOT ()-[:{CARRIES}]->(d) "
                 "OPTIONAL MATCH (a:Node)-[:SUPPORTS]->(d) "
                 "WITH d, collect(a.id) AS ants "
                 "RETURN d.id, d.state, d.created_at, ants, d.blockers "
                 "ORDER BY d.created_at, d.id", {"run": run}, read_only=True)


def regroup_turns(run: str, rows: Sequence[Mapping[str, Any]], last: str | None) -> list[Query]:
    """Move turns onto their contexts (rows of {d, k, carries, state, at, chain, seq, size,
    blockers}: `capture.chains.regroup`): create each context, its edges and its status history
    (a copy of its decision's), replace each decision's edges from its claims by one from its
    context, and keep the run's latest context. Each step skips what is done already: two
    processes upgrading one graph at once regroup each run once."""
    params = {"rows": list(rows), "run": run}
    return [
        Query(f"UNWIND $rows AS r MATCH (d:Node {{id: r.d}}) WHERE NOT ()-[:{CARRIES}]->(d) "
              f"OPTIONAL MATCH (k0:Node {{id: r.k}}) WITH r, k0 WHERE k0 IS NULL "
              f"CREATE (k:Node:{CONTEXT}) SET k.id = r.k, k.kind = 'Decision', "
              "k.run = $run, k.state = r.state, k.created_at = r.at, k.retracted = false, "
              "k.pending = 0, k.chain = r.chain, k.seq = r.seq, k.size = r.size, "
              "k.blockers = r.blockers", params),
        Query(f"UNWIND $rows AS r MATCH (k:Node {{id: r.k}}) WHERE NOT ()-[:{CARRIES}]->(k) "
              f"UNWIND r.carries AS aid MATCH (a:Node {{id: aid}}) "
              f"CREATE (a)-[:{CARRIES} {{j: r.k}}]->(k)", params),
        Query("UNWIND $rows AS r MATCH (d:Node {id: r.d}) MATCH (:Node)-[e:SUPPORTS]->(d) DELETE e",
              params),
        Query(f"UNWIND $rows AS r MATCH (d:Node {{id: r.d}}) WHERE NOT ()-[:{CARRIES}]->(d) "
              f"MATCH (k:Node {{id: r.k}}) CREATE (k)-[:{CARRIES} {{j: r.d}}]->(d)", params),
        Query("UNWIND $rows AS r OPTIONAL MATCH (c0:Change {node: r.k}) "
              "WITH r, count(c0) AS had WHERE had = 0 MATCH (ch:Change {node: r.d}) "
              "CREATE (:Change {node: r.k, kind: ch.kind, before: ch.before, after: ch.after, "
              "valid_from: ch.valid_from, recorded_at: ch.recorded_at, cause: ch.cause, "
              "review: ch.review})", params),
        Query(f"MATCH (r:{RUN} {{id: $run}}) WHERE r.context IS NULL SET r.context = $last",
              {"run": run, "last": last}),
    ]
