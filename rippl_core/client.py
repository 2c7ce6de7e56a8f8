"""`Rippl` and `AsyncRippl`: the public handles, side by side.

Every method is one line over an operation of a feature folder (a generator of queries and
commits, see `rippl_core._runtime.op`), run by the sync or the async driver: the twins share
every line of logic and differ only in `await`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import redis
import redis.asyncio
from pydantic import ValidationError

from rippl_core._runtime import schema
from rippl_core._runtime.connection import (
    EmbeddedServer,
    Location,
    acknowledging,
    async_client,
    locate,
    primaries,
    sync_client,
)
from rippl_core._runtime.driver import AsyncDriver, SyncDriver, translated_errors
from rippl_core._runtime.keys import Keys, tenant_of
from rippl_core._runtime.op import Op
from rippl_core._runtime.timeutil import TimeLike, now_ms
from rippl_core._runtime.validation import SequenceNotStr, check_id, plain_errors
from rippl_core.beliefs import cypher as beliefs_cypher
from rippl_core.beliefs import memory, subjects, whatif
from rippl_core.beliefs.models import Belief, BeliefChange, WhatIf
from rippl_core.capture import chains
from rippl_core.capture import cypher as capture_cypher
from rippl_core.capture import memory as capture_memory
from rippl_core.capture import run as capture
from rippl_core.capture import trace as capture_trace
from rippl_core.capture.handle import AsyncRun, Run
from rippl_core.capture.run import RunRef
from rippl_core.capture.trace import RunSummary, RunTrace
from rippl_core.causal import counterfactual, explain, history, nodes, preflight, write
from rippl_core.causal import cypher as causal_cypher
from rippl_core.causal.explain import Explanation
from rippl_core.causal.spec import (
    GraphSpec,
    NodeSpec,
    action_spec,
    claim_spec,
    decision_spec,
    read_spec,
    source_spec,
)
from rippl_core.causal.write import LoadProgress
from rippl_core.errors import DatabaseError, InvalidInputError, NotFoundError, PremiseRetractedError
from rippl_core.ingest import pipeline
from rippl_core.ingest.document import Document
from rippl_core.ingest.extractors.base import Extractor
from rippl_core.ingest.pipeline import DocumentLike, Errors, Progress
from rippl_core.ingest.schema import Extraction
from rippl_core.ingest.validate import OnConflict
from rippl_core.ingest.writer import DocumentReport, IngestReport
from rippl_core.models import (
    AtRiskPolicy,
    Compensation,
    CompensationAttempt,
    ConsistencyProof,
    InclusionProof,
    LoadReport,
    Node,
    OnErrorPolicy,
    Override,
    Policy,
    Reached,
    Receipt,
    ReceiptCheck,
    RepeatScopes,
    ReviewItem,
    ReviewStatus,
    Stats,
    StatusChange,
    ToolCall,
    TreeHead,
    UnknownPolicy,
    Verdict,
    Wave,
    WhatIfRetracted,
)
from rippl_core.records.store import AsyncRecordStore, RecordStore
from rippl_core.review import anchor as anchors
from rippl_core.review import compensations, contradictions, gate, log, provenance
from rippl_core.review import cypher as review_cypher
from rippl_core.review.contradictions import ContradictionDetector
from rippl_core.review.events import AsyncEventStream, EventStream
from rippl_core.review.receipts import SigningKey, export_lines

type Target = str | ToolCall
type PathLike = str | os.PathLike[str]

# Everything a tenant's graph needs: the causal graph, beliefs, reviews and receipts, capture.
# Version 4: capture's indexes.
GRAPH_SCHEMA = dataclasses.replace(
    causal_cypher.SCHEMA + beliefs_cypher.SCHEMA + review_cypher.SCHEMA + capture_cypher.SCHEMA
    + contradictions.SCHEMA,
    # 5: Claim.text_key, 6: own retraction records (:Retraction), 7: arguments re-canonicalised,
    # 8: the receipt log's Merkle tree, 9: tool-result observations keep their output's digest,
    # 10: sources found by provenance (tool, reading time, run, kind, uri, a reading's URL host;
    # a run's agent, framework), readings given the host of their URL arguments; 11: claims'
    # keys, proposals' pairs, claims' words (full text): contradictions; 12: what rests on a
    # reading, found by it (the index of `reads`: a superseded reading lowers their `reads_until`);
    # 13: captured calls keyed in their run's scope (a veto read in another run of the scope);
    # 14: tools' input schemas registered with a run (:ToolSchema, by run); 15: a turn's
    # decision rests on its context, shared with the turns before it (`capture.chains`)
    version="15", backfills=(nodes.backfill_text_keys, history.backfill_own_changes,
                            nodes.backfill_call_keys, log.backfill_tree,
                            capture.backfill_result_digests, capture.backfill_reading_hosts,
                            capture.backfill_scoped_calls, chains.backfill_contexts))


def _policy(base: Policy, at_risk: AtRiskPolicy | None, unknown: UnknownPolicy | None,
            on_error: OnErrorPolicy | None) -> Policy:
    if not isinstance(base, Policy):
        raise InvalidInputError(f"policy must be a rippl_core.Policy, not {type(base).__name__}; "
                                "e.g. Policy(at_risk='allow')")
    overrides = {k: v for k, v in (("at_risk", at_risk), ("unknown", unknown),
                                   ("on_error", on_error)) if v is not None}
    if not overrides:
        return base  # a Policy is immutable: the same one serves every check
    try:
        return Policy(**{**base.model_dump(), **overrides})
    except ValidationError as exc:
        raise InvalidInputError(f"bad policy: {plain_errors(exc.errors())}") from None


def _prepare(location: Location, keys: Keys,
             create: bool = True) -> tuple[EmbeddedServer | None, redis.Redis, Location]:
    """Start or join the embedded server if needed, learn how many replicas acknowledge a write,
    and create the schema (idempotent; moving a graph of the layout before tagged keys). With
    `create=False` a database or graph that does not exist yet is refused, not created."""
    if not create and location.missing():
        raise NotFoundError(
            f"no database at {location.path}; check the path (or RIPPL_DB), or open it with "
            "create=True to create it",
            cli=f"no database at {location.path}: check --db (or RIPPL_DB); `rippl load FILE` "
                "creates one")
    server = EmbeddedServer(location.path) if location.path else None
    client = sync_client(location, keys, server.socket_path if server else None)
    try:
        with translated_errors(location):
            location = acknowledging(location, client)
        driver = SyncDriver(client, keys, location)
        graph = keys.name
        if not create and not driver.run(lambda: schema.exists(keys)):
            raise NotFoundError(
                f"no graph {graph!r} in {location.describe()}; check the graph name, or open it "
                "with create=True to create it",
                cli=f"no graph {graph!r} in {location.describe()}: check --graph; `rippl --graph "
                    f"{graph} load FILE` creates it")
        migrate = location.topology != "cluster"  # no cluster ever held the old layout
        driver.run(lambda: schema.ensure(GRAPH_SCHEMA, keys, migrate_legacy=migrate))
    except BaseException:
        client.close()
        if server is not None:
            server.close()
        raise
    return server, client, location


def _graph_names(path: PathLike | None, url: str | None) -> list[str]:
    """The tenants of a database, from the graphs of every primary (every shard of a cluster);
    a graph of the layout before tagged keys (moved when first opened) is listed too."""
    location = locate(path, url)
    server = EmbeddedServer(location.path) if location.path else None
    clients = primaries(location, server.socket_path if server else None)
    try:
        names: set[str] = set()
        with translated_errors(location):
            for client in clients:
                for key in client.execute_command("GRAPH.LIST"):
                    tenant = tenant_of(key)
                    if tenant is not None and tenant[1] == "graph":
                        names.add(tenant[0])
                    elif tenant is None and client.exists(Keys(key).legacy.schema):
                        names.add(key)
        return sorted(names)
    finally:
        for client in clients:
            client.close()
        if server is not None:
            server.close()


def _check(target: Target, policy: Policy, as_of: TimeLike | None,
           known_at: TimeLike | None) -> Callable[[], Op[Verdict]]:
    """The operation answering a check: now (one indexed read), or as of a past time."""
    if as_of is not None or known_at is not None:
        return lambda: history.check_at(target, policy, as_of=as_of, known_at=known_at)
    return lambda: preflight.check(target, policy)


def _written(report: LoadReport) -> list[str]:
    return [*report.created, *report.unchanged, *report.replaced]


def _keyed(graph: GraphSpec) -> bool:
    return any(claim.key is not None for claim in graph.claims)


def _spec(spec: Mapping[str, Any] | GraphSpec | PathLike,
          progress: LoadProgress | None = None) -> GraphSpec:
    if progress is not None:
        progress("read", 0, 1)
    graph = read_spec(spec if not isinstance(spec, os.PathLike) else Path(spec))
    if progress is not None:
        progress("read", 1, 1)
    return graph


class _Handle:
    """What the sync and asyncio handles share: the graph they are on and its settings, and who is
    writing in it now (a captured run: `capture.memory`)."""

    location: Location
    graph: str
    policy: Policy
    keys: Keys
    distinct_approver: bool
    detector: ContradictionDetector | None = None  # the model detector of contradictions, if any

    def __init__(self, location: Location, graph: str, policy: Policy,
                 distinct_approver: bool) -> None:
        self.location, self.graph, self.policy = location, graph, policy
        self.keys = Keys(graph)
        self.distinct_approver = distinct_approver

    def _written(self) -> capture_memory.Justified | None:
        """What a memory write made now joins to its commit: the captured run writing, if any
        (`capture.memory`)."""
        return capture_memory.justified(capture_memory.current(self.graph))

    def _written_by(self, spec: NodeSpec) -> NodeSpec:
        """A claim a captured run writes (a tool adding what it will remember) says so: a belief
        or record of it written by that run later rests on the run (`capture.memory`)."""
        return capture_memory.stamped(spec, capture_memory.current(self.graph))


class Rippl(_Handle):
    """A handle on one graph (tenant) of a FalkorDB database. Thread-safe; close it when done
    (or use it as a context manager).

    `policy` is the default pre-flight policy; `distinct_approver=True` refuses approval of a
    review by the identity that proposed it (separation of duties)."""

    def __init__(self, location: Location, graph: str, client: redis.Redis,
                 server: EmbeddedServer | None, policy: Policy, distinct_approver: bool = False) -> None:
        super().__init__(location, graph, policy, distinct_approver)
        self._client, self._server = client, server
        self._driver = SyncDriver(client, self.keys, location)

    # -- lifecycle ---------------------------------------------------------------------------
    @classmethod
    def open(cls, path: PathLike | None = None, *, url: str | None = None, graph: str = "rippl",
             policy: Policy | None = None, distinct_approver: bool = False,
             create: bool = True, detector: ContradictionDetector | None = None) -> Rippl:
        """Open a graph: embedded (path, RIPPL_DB, ./.rippl/) or on a server, replica set or
        cluster (url=falkordb://..., falkordb+sentinel://..., falkordb+cluster://...,
        RIPPL_FALKORDB_URL). Creates the database and the graph's schema on first use; with
        `create=False`, a database or graph that does not exist raises NotFoundError instead.
        `detector` (e.g. `ChatModelDetector(chat_model)`) judges each claim added or ingested
        against those it may contradict, and proposes retractions (see `detect_contradictions`)."""
        location, graph = locate(path, url), check_id(graph, what="graph")
        chosen = contradictions.checked_detector(detector)
        server, client, location = _prepare(location, Keys(graph), create)
        handle = cls(location, graph, client, server, policy or Policy(), distinct_approver)
        handle.detector = chosen
        return handle

    @classmethod
    def list_graphs(cls, path: PathLike | None = None, *, url: str | None = None) -> list[str]:
        """The graphs (tenants) of a database, sorted: every shard of a cluster is asked."""
        return _graph_names(path, url)

    def close(self) -> None:
        """Close the connection; the embedded server stops when its last user leaves."""
        self._client.close()
        if self._server is not None:
            self._server.close()
            self._server = None

    def drop(self) -> None:
        """Delete this graph and every key Rippl keeps for it (companion graphs such as LangGraph
        checkpoints included, no other graph's), then recreate the empty schema."""
        with translated_errors(self.location):
            doomed = list(self._client.scan_iter(match=self.keys.pattern, count=1000))
            if doomed:
                self._client.delete(*doomed)
        self._driver.run(lambda: schema.ensure(GRAPH_SCHEMA, self.keys))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def redis(self) -> redis.Redis:
        """The underlying redis client (for adapters that store their own keys)."""
        return self._client

    # -- writing the causal graph ------------------------------------------------------------
    def add_source(self, id: str | None, title: str, *, uri: str | None = None,
                   kind: str | None = None, replace: bool = False) -> Node:
        """Add a source (evidence: a dashboard, a ticket, a document). `id` None: derived from
        the title. Re-adding the same content is a no-op; different content needs `replace`."""
        spec = source_spec(id, title, uri=uri, kind=kind)
        return self._driver.run(lambda: write.add(spec, replace=replace), write=True)

    def add_claim(self, id: str | None, text: str, *, sources: SequenceNotStr[str] = (),
                  derived_from: SequenceNotStr[str] = (), replace: bool = False,
                  key: str | None = None, value: str | None = None) -> Node:
        """Add a claim. Each source is its own justification (any one suffices); `derived_from`
        claims form one more justification (all needed). `key` (a subject and a property,
        "shard-09/health") and `value` ("degraded"; default: the text): every other live claim of
        the key with another value is then proposed for retraction (see `detect_contradictions`)."""
        spec = self._written_by(claim_spec(id, text, sources=sources, derived_from=derived_from,
                                           key=key, value=value))
        node = self._driver.run(lambda: write.add(spec, replace=replace), write=True)
        contradictions.drive(contradictions.after_claim(node.id, node.key is not None,
                                                        self.detector), self._driver.run)
        return node

    def add_decision(self, id: str | None, title: str, *, premises: SequenceNotStr[str] = (),
                     depends_on: SequenceNotStr[str] = (), replace: bool = False) -> Node:
        """Add a decision resting on claims (`premises`) and other decisions (`depends_on`): all
        of them together form one justification."""
        spec = decision_spec(id, title, premises=premises, depends_on=depends_on)
        return self._driver.run(lambda: write.add(spec, replace=replace), write=True)

    def add_action(self, id: str | None, title: str, *, decisions: SequenceNotStr[str] = (),
                   tool: str | None = None, args: Mapping[str, Any] | None = None,
                   triggers: SequenceNotStr[str] = (), replace: bool = False) -> Node:
        """Add an action driven by `decisions`, after the actions in `triggers`. With `tool` (and
        `args`), tool calls of that tool (with those canonical args) are checked against it."""
        spec = action_spec(id, title, decisions=decisions, tool=tool, args=args, triggers=triggers)
        return self._driver.run(lambda: write.add(spec, replace=replace), write=True)

    def justify(self, node_id: str, antecedents: SequenceNotStr[str]) -> bool:
        """Add an alternative justification (all `antecedents` needed); False if it existed."""
        return self._driver.run(lambda: write.add_justification(node_id, antecedents), write=True)

    def load(self, spec: Mapping[str, Any] | GraphSpec | PathLike, *, replace: bool = False,
             progress: LoadProgress | None = None) -> LoadReport:
        """Load a whole graph (a dict, a GraphSpec, or a .yaml/.json file), all or nothing.
        `progress(stage, done, total)` follows a long load: "read", "check" (nodes), "write"."""
        graph = _spec(spec, progress)
        report = self._driver.run(lambda: write.load(graph, replace=replace, progress=progress),
                                  write=True)
        contradictions.drive(contradictions.after_load(_written(report), _keyed(graph)),
                             self._driver.run)
        return report

    def retract(self, claim_id: str, *, reason: str, by: str, at: TimeLike | None = None,
                signing_key: SigningKey | None = None) -> Wave:
        """Retract a claim at once, bypassing review (receipted). `at` is when it stopped holding."""
        return self._driver.run(lambda: gate.retraction(claim_id, retracted=True, reason=reason, by=by,
                                                        at=at, signing_key=signing_key), write=True)

    def reinstate(self, claim_id: str, *, reason: str, by: str, at: TimeLike | None = None,
                  signing_key: SigningKey | None = None) -> Wave:
        """Undo a retraction: what rested on the claim comes back (receipted)."""
        return self._driver.run(lambda: gate.retraction(claim_id, retracted=False, reason=reason,
                                                        by=by, at=at, signing_key=signing_key),
                                write=True)

    # -- reading the causal graph ------------------------------------------------------------
    def get(self, id: str) -> Node:
        """A node as stored, with its status and justifications."""
        return self._driver.run(lambda: nodes.get(id))

    def claims_stating(self, text: str) -> list[Node]:
        """The claims that state `text` (equal once case, spacing and a final period are
        normalised), whatever their ids: how to find the claim a statement already is."""
        return self._driver.run(lambda: nodes.claims_stating(text))

    def blast_radius(self, node_id: str, *, max_depth: int | None = None) -> list[Reached]:
        """Everything downstream of a node, at any depth, each with one trail from the node."""
        return self._driver.run(lambda: nodes.reach(node_id, down=True, max_depth=max_depth))

    def premises(self, node_id: str, *, max_depth: int | None = None) -> list[Reached]:
        """Everything upstream of a node: what it rests on, each with one trail to the node."""
        return self._driver.run(lambda: nodes.reach(node_id, down=False, max_depth=max_depth))

    def stats(self) -> Stats:
        """Counts of nodes by kind and by public status, and of edges."""
        return self._driver.run(nodes.stats)

    def nodes(self, ids: SequenceNotStr[str] | None = None, *, limit: int | None = None) -> list[Node]:
        """Nodes with their justifications (the edges into them): these `ids` (those that exist,
        in order), or every node in creation order; at most `limit` of them."""
        return self._driver.run(lambda: nodes.list_nodes(ids, limit=limit))

    def explain(self, node_id: str) -> Explanation:
        """Why a node is IN, AT_RISK or OUT: its justifications and the premises underneath."""
        return self._driver.run(lambda: explain.explain(node_id))

    # -- the pre-flight check ----------------------------------------------------------------
    def check(self, target: Target, *, at_risk: AtRiskPolicy | None = None,
              unknown: UnknownPolicy | None = None, on_error: OnErrorPolicy | None = None,
              policy: Policy | None = None, as_of: TimeLike | None = None,
              known_at: TimeLike | None = None) -> Verdict:
        """Allow or deny an action, decision or tool call. Never raises for a database error:
        it denies (unless on_error='allow'). With `as_of`/`known_at`: was it allowed at that
        valid time, as known at that transaction time (from the recorded status history)?"""
        chosen = _policy(policy or self.policy, at_risk, unknown, on_error)
        try:
            return self._driver.run(_check(target, chosen, as_of, known_at))
        except DatabaseError as exc:
            return preflight.error_verdict(target, exc, chosen)

    def guard(self, target: Target, **policy: Any) -> Verdict:
        """Like `check`, but raises PremiseRetractedError when denied."""
        verdict = self.check(target, **policy)
        if not verdict.allowed:
            raise PremiseRetractedError(verdict)
        return verdict

    # -- provenance capture ------------------------------------------------------------------
    def run(self, run_id: str, *, agent: str | None = None, framework: str | None = None,
            scope: str | None = None, policy: Policy | None = None,
            repeat_scope: RepeatScopes = "args") -> Run:
        """A captured run (no I/O until it records something): what the agent observes, each
        model turn with tool calls, each call and its execution. The same id continues the same
        trace (a resumed run). `scope` names the runs that hand messages to one another (a thread
        and its subgraphs, a crew's tasks): a message one of them wrote carries into another
        what it carried in its own run. `repeat_scope`: what counts as repeating a vetoed call
        ("args": the same tool and arguments; "tool": any call of the tool; per tool by mapping)."""
        return Run(self._driver, RunRef(run_id, agent, framework, scope), policy or self.policy,
                     repeat_scope)

    def mark_executed(self, action_id: str, *, at: TimeLike | None = None,
                      output: Any | None = None) -> None:
        """Mark an action executed (any action, declared or captured): a retraction that later
        reaches it lists it among the compensations."""
        self._driver.run(lambda: capture.mark_executed(action_id, at=at, output=output))

    def compensations(self, *, as_of: TimeLike | None = None, known_at: TimeLike | None = None,
                      include_resolved: bool = False) -> list[Compensation]:
        """Actions already executed on a premise since retracted (as of a time, as known then),
        each with the trail to what failed: what may need undoing. Only the open ones (not yet
        resolved by a reviewer, as of that time) unless `include_resolved`."""
        return self._driver.run(lambda: compensations.listing(
            as_of=as_of, known_at=known_at, include_resolved=include_resolved))

    def report_compensation_attempt(self, action_id: str, *, what: str, by: str,
                                    output: str | None = None) -> CompensationAttempt:
        """Report what an agent or a script did to compensate an open compensation (and its
        output). It resolves nothing: a person confirms it with `resolve_compensation`."""
        return self._driver.run(lambda: compensations.report_attempt(
            action_id, what=what, output=output, by=by, now=now_ms()), write=True)

    def resolve_compensation(self, action_id: str, *, resolution: str, note: str, by: str,
                             attempt: str | None = None,
                             signing_key: SigningKey | None = None) -> Receipt:
        """Resolve an open compensation as "compensated" or "not needed", with a note (naming the
        reported `attempt` it confirms, if any): a receipt in the chain, returned. A reviewer's
        act: call it for a person, never for an agent."""
        return self._driver.run(lambda: compensations.resolve(
            action_id, resolution=resolution, note=note, by=by, now=now_ms(), attempt=attempt,
            signing_key=signing_key), write=True)

    def runs(self, *, agent: str | None = None, framework: str | None = None,
             since: TimeLike | None = None, until: TimeLike | None = None,
             open_compensations: bool = False) -> list[RunSummary]:
        """Every captured run (by agent, framework, active since, started until, with open
        compensations), most recently active first, with its turns, calls, vetoes and open
        compensations counted."""
        return self._driver.run(lambda: capture_trace.runs(
            agent=agent, framework=framework, since=since, until=until,
            open_compensations=open_compensations))

    def run_trace(self, run_id: str) -> RunTrace:
        """A captured run's turns in order, what each rested on (with its status, and its age
        for a reading), and its calls with their verdicts and executions."""
        return self._driver.run(lambda: capture_trace.run_trace(run_id))

    def prune_runs(self, *, older_than: TimeLike, include_open: bool = False) -> list[str]:
        """Remove the capture of runs closed before `older_than` (include_open: also runs idle
        since before it), keeping receipts and anything retracted or under review. Returns the
        runs removed."""
        return self._driver.run(lambda: capture.prune_runs(older_than=older_than,
                                                           include_open=include_open), write=True)

    # -- the review gate and receipts --------------------------------------------------------
    def propose_retraction(self, claim_id: str, *, reason: str, by: str,
                           evidence: str | None = None, monitor: str | None = None) -> ReviewItem:
        """Flag a claim as false: it and what rests on it go AT_RISK until a human decides
        (`monitor`: the monitor proposing, recorded with the review and its event)."""
        return self._driver.run(lambda: gate.propose(claim_id, reason=reason, by=by,
                                                     evidence=evidence, now=now_ms(),
                                                     monitor=monitor), write=True)

    def propose_retraction_where(
            self, *, reason: str, by: str, tool: str | None = None,
            args: Mapping[str, Any] | None = None, since: TimeLike | None = None,
            until: TimeLike | None = None, run: str | None = None, agent: str | None = None,
            framework: str | None = None, source_kind: str | None = None,
            source_prefix: str | None = None, evidence: str | None = None,
            monitor: str | None = None) -> ReviewItem:
        """Flag every source a provenance query matches as false, in one review (a tool's
        readings over an interval, what a run or an agent read, a poisoned page's readings): they
        and what rests on them go AT_RISK until a human decides, as one wave. Every field given
        must match (see `ProvenanceQuery`); `monitor` names the monitor proposing. A query that
        matches nothing raises `NoMatchError` and proposes nothing."""
        return self._driver.run(lambda: gate.propose_where(provenance.query_of(
            tool=tool, args=args, since=since, until=until, run=run, agent=agent,
            framework=framework, source_kind=source_kind, source_prefix=source_prefix),
            reason=reason, by=by, evidence=evidence, monitor=monitor, now=now_ms()), write=True)

    def approve(self, review_id: str, *, by: str, note: str | None = None,
                signing_key: SigningKey | None = None, signature: str | None = None,
                by_name: str | None = None) -> Receipt:
        """Commit the wave: what has no remaining support goes OUT. Returns the receipt. With
        the reviewer's `signing_key` (or their `signature` of the decision's statement, made
        elsewhere and checked against their registered key) the receipt carries their signed
        statement; a reviewer with a registered key must sign. `by_name`: the reviewer's display
        name (when `by` is an identity provider's subject), kept in the receipt beside it."""
        return self._driver.run(lambda: gate.decide(
            review_id, approve=True, by=by, note=note, now=now_ms(), signing_key=signing_key,
            distinct_approver=self.distinct_approver, signature=signature, by_name=by_name),
            write=True)

    def reject(self, review_id: str, *, by: str, note: str | None = None,
               signing_key: SigningKey | None = None, signature: str | None = None,
               by_name: str | None = None) -> Receipt:
        """Withdraw the proposal: the at-risk nodes return to the state they had (signed, and
        naming the reviewer, as `approve` does)."""
        return self._driver.run(lambda: gate.decide(
            review_id, approve=False, by=by, note=note, now=now_ms(), signing_key=signing_key,
            distinct_approver=self.distinct_approver, signature=signature, by_name=by_name),
            write=True)

    def override(self, target: str | ToolCall, *, reason: str, by: str,
                 run: str | None = None) -> ReviewItem:
        """Propose a one-call override of a veto (`target`: the vetoed action, or the call with its
        `run`): once a reviewer approves it, the next call of that run with that tool and
        arguments runs despite the retracted premises it names, once. An agent may propose it;
        only a reviewer approves (`approve`)."""
        return self._driver.run(lambda: gate.propose_override(target, run=run, reason=reason, by=by,
                                                              now=now_ms()), write=True)

    def overrides(self) -> list[Override]:
        """Every approved override: the call it let run, who proposed and approved it, its receipt,
        and whether a call took it."""
        return self._driver.run(gate.list_overrides)

    def review(self, review_id: str) -> ReviewItem:
        """One review item, pending or decided."""
        return self._driver.run(lambda: gate.get_review(review_id))

    def reviews(self, status: ReviewStatus | None = "pending") -> list[ReviewItem]:
        """The review queue: items with this status (None: all), oldest first."""
        return self._driver.run(lambda: gate.list_reviews(status))

    def receipts(self) -> list[Receipt]:
        """The receipt chain, in order."""
        return self._driver.run(gate.list_receipts)

    def verify_receipts(self, public_keys: Mapping[str, Any] | None = None, *,
                        anchor: PathLike | None = None,
                        distinct_approver: bool = False) -> ReceiptCheck:
        """Re-walk the chain; report every edited, deleted, inserted or reordered receipt, and
        every misuse of a reviewer key. With `anchor` (a witness: file:PATH, git:PATH, an
        http(s) URL), also check the log against the heads anchored there: a cut tail or a
        rewritten history is caught without trusting any key."""
        heads = anchors.anchored_heads(anchor, self.graph)
        return self._driver.run(lambda: gate.verify(public_keys, anchors=heads, log_name=self.graph,
                                                    distinct_approver=distinct_approver))

    def tree_head(self, *, signing_key: SigningKey | None = None, by: str | None = None) -> TreeHead:
        """The log's current signed tree head (RFC 9162): its size and Merkle root, now; signed
        by `by` with `signing_key` if given."""
        head = self._driver.run(lambda: log.tree_head(self.graph, now_ms()))
        return anchors.signed(head, signing_key, by)

    def prove(self, receipt: str | int, *, tree_size: int | None = None) -> InclusionProof:
        """The inclusion proof of a receipt (`RCP-…` or its seq) in the tree of `tree_size`
        receipts (default: the whole log)."""
        return self._driver.run(lambda: log.inclusion(receipt, tree_size))

    def consistency(self, old_size: int, *, new_size: int | None = None) -> ConsistencyProof:
        """The proof that the log of `new_size` receipts (default: now) extends the log of
        `old_size`: nothing in it was changed or removed since."""
        return self._driver.run(lambda: log.consistency(old_size, new_size))

    def anchor(self, witness: PathLike, *, signing_key: SigningKey | None = None,
               by: str | None = None) -> TreeHead:
        """Write the current tree head to a witness outside the database (file:PATH, git:PATH,
        an http(s) URL), after checking that the log extends the witness's latest head and that
        the receipts added since hash to the tree's leaves (a rewritten history is refused, never
        anchored). Returns the head anchored."""
        target = anchors.witness(witness)
        head = self.tree_head(signing_key=signing_key, by=by)
        previous = target.heads(self.graph)
        proof = self.consistency(previous[-1].size, new_size=head.size) \
            if previous and previous[-1].size <= head.size else None
        anchors.check_extends(previous[-1] if previous else None, head, proof)
        self._driver.run(lambda: log.check_leaves(previous[-1].size if previous else 0, head.size))
        target.publish(head)
        return head

    def register_key(self, reviewer: str, *, signing_key: SigningKey | None = None,
                     public_key: str | None = None, signature: str | None = None,
                     current_key: SigningKey | None = None) -> Receipt:
        """Register a reviewer's Ed25519 key (receipted): with their `signing_key`, or with their
        `public_key` and the `signature` of the registration statement made where the key is
        kept. Rotating to a new key needs the `current_key`. From then on, what the reviewer
        approves or rejects must be signed with it."""
        return self._driver.run(lambda: gate.register_key(
            reviewer, public_key=public_key, signing_key=signing_key, signature=signature,
            current_key=current_key, now=now_ms()), write=True)

    def revoke_key(self, reviewer: str, *, by: str, reason: str,
                   signing_key: SigningKey | None = None) -> Receipt:
        """Revoke a reviewer's registered key (receipted): nothing it signs later is accepted."""
        return self._driver.run(lambda: gate.revoke_key(reviewer, by=by, reason=reason,
                                                        now=now_ms(), signing_key=signing_key),
                                write=True)

    def reviewer_keys(self) -> dict[str, str]:
        """Each reviewer's registered public key (hex)."""
        return self._driver.run(log.reviewer_keys)

    def export_receipts(self, *, signing_key: SigningKey | None = None,
                        by: str | None = None) -> list[str]:
        """The receipt chain as JSON Lines (no newlines), to keep and verify elsewhere with
        `rippl receipts verify --file`: first its head (how many receipts, the last hash; signed
        by `by` with `signing_key` if given), which makes a cut tail detectable, then each
        receipt as stored."""
        records, head = self._driver.run(gate.chain)
        return export_lines(records, head=head, signing_key=signing_key, by=by, log=self.graph)

    def subscribe(self) -> EventStream:
        """Live events of this graph (status changes, review decisions), from now on."""
        return EventStream(self._client, self.graph)

    # -- beliefs in time ---------------------------------------------------------------------
    def believe(self, agent: str, claim_id: str, *, topic: str, valid_from: TimeLike | None = None,
                recorded_at: TimeLike | None = None, evidence: SequenceNotStr[str] = (),
                note: str | None = None) -> Belief:
        """The agent adopts a claim about a topic from `valid_from` (default: now). The interval
        it held before is closed there, never deleted. A past `valid_from` records late knowledge."""
        joined = self._written()  # believed while a captured run writes: it rests on the run
        return self._driver.run(lambda: memory.believe(
            agent, claim_id, topic=topic, valid_from=valid_from, recorded_at=recorded_at,
            evidence=evidence, note=note, joined=joined), write=True)

    def retract_belief(self, agent: str, topic: str, *, at: TimeLike | None = None,
                       reason: str | None = None,
                       recorded_at: TimeLike | None = None) -> Belief | None:
        """The agent stops believing what it held about the topic at `at` (default: now). Returns
        the closed interval, or None if it believed nothing then."""
        return self._driver.run(lambda: memory.retract_belief(
            agent, topic, at=at, reason=reason, recorded_at=recorded_at), write=True)

    def revise(self, agent: str, topic: str, claim_id: str, *, valid_from: TimeLike,
               valid_to: TimeLike | None = None, evidence: SequenceNotStr[str] = (),
               note: str | None = None, recorded_at: TimeLike | None = None) -> Belief:
        """Correct history: over [valid_from, valid_to) the agent held this claim. The rows it
        replaces are superseded (still readable with an earlier `known_at`), never rewritten."""
        return self._driver.run(lambda: memory.revise(
            agent, topic, claim_id, valid_from=valid_from, valid_to=valid_to, evidence=evidence,
            note=note, recorded_at=recorded_at), write=True)

    def ask(self, agent: str, topic: str, *, as_of: TimeLike | None = None,
            known_at: TimeLike | None = None) -> Belief | None:
        """The belief held about the topic at `as_of`, as recorded at `known_at` (None: none)."""
        return self._driver.run(lambda: memory.ask(agent, topic, as_of=as_of, known_at=known_at))

    def beliefs(self, agent: str, *, as_of: TimeLike | None = None,
                known_at: TimeLike | None = None) -> list[Belief]:
        """Every belief the agent held at `as_of`, one per topic."""
        return self._driver.run(lambda: memory.beliefs(agent, as_of=as_of, known_at=known_at))

    def timeline(self, agent: str, topic: str, *, known_at: TimeLike | None = None,
                 limit: int | None = None, before: TimeLike | None = None) -> list[Belief]:
        """Every interval of the agent's belief about the topic, oldest first, with its evidence;
        with `limit`, the latest `limit` intervals starting before `before` (default: all), oldest
        first: page back with `before=page[0].valid_from`."""
        return self._driver.run(lambda: memory.timeline(agent, topic, known_at=known_at,
                                                        limit=limit, before=before))

    def why_changed(self, agent: str, topic: str, at: TimeLike, *,
                    known_at: TimeLike | None = None) -> BeliefChange:
        """The change nearest `at`: the belief before and after, and the evidence that arrived."""
        return self._driver.run(lambda: memory.why_changed(agent, topic, at, known_at=known_at))

    def history(self, node_id: str, *, known_at: TimeLike | None = None) -> list[StatusChange]:
        """Every status change of a causal node, with valid and transaction times."""
        return self._driver.run(lambda: history.history(node_id, known_at=known_at))

    def what_if(self, agent: str, topic: str, *, without: SequenceNotStr[str],
                as_of: TimeLike | None = None, known_at: TimeLike | None = None) -> WhatIf:
        """What the agent would believe had these evidence sources never existed, next to what it
        does believe. Read-only: the live graph is never written."""
        return self._driver.run(lambda: whatif.what_if(agent, topic, without=without,
                                                       as_of=as_of, known_at=known_at))

    def what_if_retracted(self, claim_ids: SequenceNotStr[str]) -> WhatIfRetracted:
        """Which decisions and actions would be blocked if these claims were retracted. Read-only."""
        return self._driver.run(lambda: counterfactual.what_if_retracted(claim_ids))

    def agents(self) -> list[str]:
        """Every agent that ever recorded a belief, sorted."""
        return self._driver.run(subjects.agents)

    def topics(self, agent: str) -> list[str]:
        """Every topic the agent ever recorded a belief about, sorted."""
        return self._driver.run(lambda: subjects.topics(agent))

    # -- record stores and ingestion ---------------------------------------------------------
    def records(self, store: str = "default") -> RecordStore:
        """A named store of text records (memories) held as claims of this graph."""
        return RecordStore(self._driver, store, self._written)

    def ingest(self, documents: DocumentLike | Iterable[DocumentLike], *,
               extractor: Extractor | None = None, dry_run: bool = False,
               on_conflict: OnConflict = "justify", errors: Errors = "raise",
               progress: Progress | None = None) -> IngestReport:
        """Extract each document (default: the structured Markdown format, no model), validate it
        and write it in one atomic commit. A rejected document raises ExtractionRejected (with
        every problem) unless errors="report", which records it and goes on. `progress` is called
        with (name, None) when a document starts and (name, report) when it is done."""
        chosen = pipeline.default_extractor(extractor)
        steps = pipeline.ingest_steps(documents, chosen, dry_run=dry_run, on_conflict=on_conflict,
                                      errors=errors, progress=progress)
        report = pipeline.drive(steps, chosen, self._driver.run)
        contradictions.drive(contradictions.after_ingest(report.documents, self.detector, dry_run),
                             self._driver.run)
        return report

    def ingest_extraction(self, extraction: Extraction | dict[str, Any], *,
                          document: Document | str | None = None, extractor: str = "manual",
                          model: str | None = None, dry_run: bool = False,
                          on_conflict: OnConflict = "justify") -> DocumentReport:
        """Write an extraction you already have (from your own pipeline), with the same validation.
        `document` (a Document, for spans and sections, or just a name) goes into provenance."""
        steps = pipeline.extraction_steps(extraction, document=document, extractor=extractor,
                                          model=model, dry_run=dry_run, on_conflict=on_conflict)
        report = pipeline.drive(steps, pipeline.default_extractor(None), self._driver.run)
        contradictions.drive(contradictions.after_ingest([report], self.detector, dry_run),
                             self._driver.run)
        return report

    def detect_contradictions(self, claim_ids: SequenceNotStr[str], *,
                              detector: ContradictionDetector | None = None) -> list[ReviewItem]:
        """Run the contradiction detectors over these claims now: the key detector, and the model
        (`detector`, default the handle's). Returns the retractions proposed (each pair once:
        what was proposed before is not proposed again). Nothing is ever approved."""
        chosen = contradictions.checked_detector(detector) or self.detector
        return contradictions.drive(contradictions.detection_steps(claim_ids, chosen),
                                    self._driver.run)


class AsyncRippl(_Handle):
    """The asyncio twin of `Rippl`: the same methods, awaited. Close it (or `async with` it)."""

    def __init__(self, location: Location, graph: str, client: redis.asyncio.Redis,
                 server: EmbeddedServer | None, policy: Policy, distinct_approver: bool = False) -> None:
        super().__init__(location, graph, policy, distinct_approver)
        self._client, self._server = client, server
        self._driver = AsyncDriver(client, self.keys, location)

    # -- lifecycle ---------------------------------------------------------------------------
    @classmethod
    async def open(cls, path: PathLike | None = None, *, url: str | None = None,
                   graph: str = "rippl", policy: Policy | None = None,
                   distinct_approver: bool = False, create: bool = True,
                   detector: ContradictionDetector | None = None) -> AsyncRippl:
        """Open a graph (see `Rippl.open`)."""
        location, graph = locate(path, url), check_id(graph, what="graph")
        chosen = contradictions.checked_detector(detector)
        server, sync, location = await asyncio.to_thread(_prepare, location, Keys(graph), create)
        sync.close()
        client = async_client(location, Keys(graph), server.socket_path if server else None)
        handle = cls(location, graph, client, server, policy or Policy(), distinct_approver)
        handle.detector = chosen
        return handle

    @classmethod
    async def list_graphs(cls, path: PathLike | None = None, *, url: str | None = None) -> list[str]:
        """The graphs (tenants) of a database, sorted: every shard of a cluster is asked."""
        return await asyncio.to_thread(_graph_names, path, url)

    async def close(self) -> None:
        """Close the connection; the embedded server stops when its last user leaves."""
        await self._client.aclose()
        if self._server is not None:
            server, self._server = self._server, None
            await asyncio.to_thread(server.close)

    async def drop(self) -> None:
        """Delete this graph and every key Rippl keeps for it (companion graphs such as LangGraph
        checkpoints included, no other graph's), then recreate the empty schema."""
        with translated_errors(self.location):
            doomed = [key async for key in self._client.scan_iter(match=self.keys.pattern, count=1000)]
            if doomed:
                await self._client.delete(*doomed)
        await self._driver.run(lambda: schema.ensure(GRAPH_SCHEMA, self.keys))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    @property
    def redis(self) -> redis.asyncio.Redis:
        """The underlying asyncio redis client (for adapters that store their own keys)."""
        return self._client

    # -- writing the causal graph ------------------------------------------------------------
    async def add_source(self, id: str | None, title: str, *, uri: str | None = None,
                         kind: str | None = None, replace: bool = False) -> Node:
        """Add a source (evidence: a dashboard, a ticket, a document). `id` None: derived from
        the title. Re-adding the same content is a no-op; different content needs `replace`."""
        spec = source_spec(id, title, uri=uri, kind=kind)
        return await self._driver.run(lambda: write.add(spec, replace=replace), write=True)

    async def add_claim(self, id: str | None, text: str, *, sources: SequenceNotStr[str] = (),
                        derived_from: SequenceNotStr[str] = (), replace: bool = False,
                        key: str | None = None, value: str | None = None) -> Node:
        """Add a claim, with its `key` and `value` (see the sync twin)."""
        spec = self._written_by(claim_spec(id, text, sources=sources, derived_from=derived_from,
                                           key=key, value=value))
        node = await self._driver.run(lambda: write.add(spec, replace=replace), write=True)
        await contradictions.adrive(contradictions.after_claim(node.id, node.key is not None,
                                                               self.detector), self._driver.run)
        return node

    async def add_decision(self, id: str | None, title: str, *, premises: SequenceNotStr[str] = (),
                           depends_on: SequenceNotStr[str] = (), replace: bool = False) -> Node:
        """Add a decision resting on claims (`premises`) and other decisions (`depends_on`): all
        of them together form one justification."""
        spec = decision_spec(id, title, premises=premises, depends_on=depends_on)
        return await self._driver.run(lambda: write.add(spec, replace=replace), write=True)

    async def add_action(self, id: str | None, title: str, *, decisions: SequenceNotStr[str] = (),
                         tool: str | None = None, args: Mapping[str, Any] | None = None,
                         triggers: SequenceNotStr[str] = (), replace: bool = False) -> Node:
        """Add an action driven by `decisions`, after the actions in `triggers`. With `tool` (and
        `args`), tool calls of that tool (with those canonical args) are checked against it."""
        spec = action_spec(id, title, decisions=decisions, tool=tool, args=args, triggers=triggers)
        return await self._driver.run(lambda: write.add(spec, replace=replace), write=True)

    async def justify(self, node_id: str, antecedents: SequenceNotStr[str]) -> bool:
        """Add an alternative justification (all `antecedents` needed); False if it existed."""
        return await self._driver.run(lambda: write.add_justification(node_id, antecedents),
                                      write=True)

    async def load(self, spec: Mapping[str, Any] | GraphSpec | PathLike, *, replace: bool = False,
                   progress: LoadProgress | None = None) -> LoadReport:
        """Load a whole graph (a dict, a GraphSpec, or a .yaml/.json file), all or nothing."""
        graph = await asyncio.to_thread(_spec, spec, progress)
        report = await self._driver.run(lambda: write.load(graph, replace=replace,
                                                           progress=progress), write=True)
        await contradictions.adrive(contradictions.after_load(_written(report), _keyed(graph)),
                                    self._driver.run)
        return report

    async def retract(self, claim_id: str, *, reason: str, by: str, at: TimeLike | None = None,
                      signing_key: SigningKey | None = None) -> Wave:
        """Retract a claim at once, bypassing review (receipted). `at` is when it stopped holding."""
        return await self._driver.run(lambda: gate.retraction(
            claim_id, retracted=True, reason=reason, by=by, at=at, signing_key=signing_key),
            write=True)

    async def reinstate(self, claim_id: str, *, reason: str, by: str, at: TimeLike | None = None,
                        signing_key: SigningKey | None = None) -> Wave:
        """Undo a retraction: what rested on the claim comes back (receipted)."""
        return await self._driver.run(lambda: gate.retraction(
            claim_id, retracted=False, reason=reason, by=by, at=at, signing_key=signing_key),
            write=True)

    # -- reading the causal graph ------------------------------------------------------------
    async def get(self, id: str) -> Node:
        """A node as stored, with its status and justifications."""
        return await self._driver.run(lambda: nodes.get(id))

    async def claims_stating(self, text: str) -> list[Node]:
        """The claims that state `text`, whatever their ids (see the sync twin)."""
        return await self._driver.run(lambda: nodes.claims_stating(text))

    async def blast_radius(self, node_id: str, *, max_depth: int | None = None) -> list[Reached]:
        """Everything downstream of a node, at any depth, each with one trail from the node."""
        return await self._driver.run(lambda: nodes.reach(node_id, down=True, max_depth=max_depth))

    async def premises(self, node_id: str, *, max_depth: int | None = None) -> list[Reached]:
        """Everything upstream of a node: what it rests on, each with one trail to the node."""
        return await self._driver.run(lambda: nodes.reach(node_id, down=False, max_depth=max_depth))

    async def stats(self) -> Stats:
        """Counts of nodes by kind and by public status, and of edges."""
        return await self._driver.run(nodes.stats)

    async def nodes(self, ids: SequenceNotStr[str] | None = None, *,
                    limit: int | None = None) -> list[Node]:
        """Nodes with their justifications (the edges into them): these `ids` (those that exist,
        in order), or every node in creation order; at most `limit` of them."""
        return await self._driver.run(lambda: nodes.list_nodes(ids, limit=limit))

    async def explain(self, node_id: str) -> Explanation:
        """Why a node is IN, AT_RISK or OUT: its justifications and the premises underneath."""
        return await self._driver.run(lambda: explain.explain(node_id))

    # -- the pre-flight check ----------------------------------------------------------------
    async def check(self, target: Target, *, at_risk: AtRiskPolicy | None = None,
                    unknown: UnknownPolicy | None = None, on_error: OnErrorPolicy | None = None,
                    policy: Policy | None = None, as_of: TimeLike | None = None,
                    known_at: TimeLike | None = None) -> Verdict:
        """Allow or deny an action, decision or tool call. Never raises for a database error:
        it denies (unless on_error='allow'). With `as_of`/`known_at`: was it allowed at that
        valid time, as known at that transaction time (from the recorded status history)?"""
        chosen = _policy(policy or self.policy, at_risk, unknown, on_error)
        try:
            return await self._driver.run(_check(target, chosen, as_of, known_at))
        except DatabaseError as exc:
            return preflight.error_verdict(target, exc, chosen)

    async def guard(self, target: Target, **policy: Any) -> Verdict:
        """Like `check`, but raises PremiseRetractedError when denied."""
        verdict = await self.check(target, **policy)
        if not verdict.allowed:
            raise PremiseRetractedError(verdict)
        return verdict

    # -- provenance capture ------------------------------------------------------------------
    def run(self, run_id: str, *, agent: str | None = None, framework: str | None = None,
            scope: str | None = None, policy: Policy | None = None,
            repeat_scope: RepeatScopes = "args") -> AsyncRun:
        """A captured run (no I/O until it records something): what the agent observes, each
        model turn with tool calls, each call and its execution. The same id continues the same
        trace (a resumed run). `scope` names the runs that hand messages to one another (a thread
        and its subgraphs, a crew's tasks): a message one of them wrote carries into another
        what it carried in its own run. `repeat_scope`: what counts as repeating a vetoed call
        ("args": the same tool and arguments; "tool": any call of the tool; per tool by mapping)."""
        return AsyncRun(self._driver, RunRef(run_id, agent, framework, scope), policy or self.policy,
                     repeat_scope)

    async def mark_executed(self, action_id: str, *, at: TimeLike | None = None,
                            output: Any | None = None) -> None:
        """Mark an action executed (any action, declared or captured): a retraction that later
        reaches it lists it among the compensations."""
        await self._driver.run(lambda: capture.mark_executed(action_id, at=at, output=output))

    async def compensations(self, *, as_of: TimeLike | None = None,
                            known_at: TimeLike | None = None,
                            include_resolved: bool = False) -> list[Compensation]:
        """Actions already executed on a premise since retracted (see the sync twin)."""
        return await self._driver.run(lambda: compensations.listing(
            as_of=as_of, known_at=known_at, include_resolved=include_resolved))

    async def report_compensation_attempt(self, action_id: str, *, what: str, by: str,
                                          output: str | None = None) -> CompensationAttempt:
        """Report what was done to compensate an open compensation (see the sync twin)."""
        return await self._driver.run(lambda: compensations.report_attempt(
            action_id, what=what, output=output, by=by, now=now_ms()), write=True)

    async def resolve_compensation(self, action_id: str, *, resolution: str, note: str, by: str,
                                   attempt: str | None = None,
                                   signing_key: SigningKey | None = None) -> Receipt:
        """Resolve an open compensation, receipted (see the sync twin)."""
        return await self._driver.run(lambda: compensations.resolve(
            action_id, resolution=resolution, note=note, by=by, now=now_ms(), attempt=attempt,
            signing_key=signing_key), write=True)

    async def runs(self, *, agent: str | None = None, framework: str | None = None,
                   since: TimeLike | None = None, until: TimeLike | None = None,
                   open_compensations: bool = False) -> list[RunSummary]:
        """Every captured run (by agent, framework, active since, started until, with open
        compensations), most recently active first, with its turns, calls, vetoes and open
        compensations counted."""
        return await self._driver.run(lambda: capture_trace.runs(
            agent=agent, framework=framework, since=since, until=until,
            open_compensations=open_compensations))

    async def run_trace(self, run_id: str) -> RunTrace:
        """A captured run's turns in order, what each rested on (with its status, and its age
        for a reading), and its calls with their verdicts and executions."""
        return await self._driver.run(lambda: capture_trace.run_trace(run_id))

    async def prune_runs(self, *, older_than: TimeLike, include_open: bool = False) -> list[str]:
        """Remove the capture of runs closed before `older_than` (include_open: also runs idle
        since before it), keeping receipts and anything retracted or under review. Returns the
        runs removed."""
        return await self._driver.run(lambda: capture.prune_runs(
            older_than=older_than, include_open=include_open), write=True)

    # -- the review gate and receipts --------------------------------------------------------
    async def propose_retraction(self, claim_id: str, *, reason: str, by: str,
                                 evidence: str | None = None,
                                 monitor: str | None = None) -> ReviewItem:
        """Flag a claim as false: it and what rests on it go AT_RISK until a human decides
        (`monitor`: the monitor proposing, recorded with the review and its event)."""
        return await self._driver.run(lambda: gate.propose(
            claim_id, reason=reason, by=by, evidence=evidence, now=now_ms(), monitor=monitor),
            write=True)

    async def propose_retraction_where(
            self, *, reason: str, by: str, tool: str | None = None,
            args: Mapping[str, Any] | None = None, since: TimeLike | None = None,
            until: TimeLike | None = None, run: str | None = None, agent: str | None = None,
            framework: str | None = None, source_kind: str | None = None,
            source_prefix: str | None = None, evidence: str | None = None,
            monitor: str | None = None) -> ReviewItem:
        """Flag every source a provenance query matches as false, in one review (see
        `Rippl.propose_retraction_where`)."""
        return await self._driver.run(lambda: gate.propose_where(provenance.query_of(
            tool=tool, args=args, since=since, until=until, run=run, agent=agent,
            framework=framework, source_kind=source_kind, source_prefix=source_prefix),
            reason=reason, by=by, evidence=evidence, monitor=monitor, now=now_ms()), write=True)

    async def approve(self, review_id: str, *, by: str, note: str | None = None,
                      signing_key: SigningKey | None = None, signature: str | None = None,
                      by_name: str | None = None) -> Receipt:
        """Commit the wave: what has no remaining support goes OUT (see the sync twin)."""
        return await self._driver.run(lambda: gate.decide(
            review_id, approve=True, by=by, note=note, now=now_ms(), signing_key=signing_key,
            distinct_approver=self.distinct_approver, signature=signature, by_name=by_name),
            write=True)

    async def reject(self, review_id: str, *, by: str, note: str | None = None,
                     signing_key: SigningKey | None = None, signature: str | None = None,
                     by_name: str | None = None) -> Receipt:
        """Withdraw the proposal: the at-risk nodes return to the state they had."""
        return await self._driver.run(lambda: gate.decide(
            review_id, approve=False, by=by, note=note, now=now_ms(), signing_key=signing_key,
            distinct_approver=self.distinct_approver, signature=signature, by_name=by_name),
            write=True)

    async def override(self, target: str | ToolCall, *, reason: str, by: str,
                       run: str | None = None) -> ReviewItem:
        """Propose a one-call override of a veto (`target`: the vetoed action, or the call with its
        `run`): once a reviewer approves it, the next call of that run with that tool and
        arguments runs despite the retracted premises it names, once. An agent may propose it;
        only a reviewer approves (`approve`)."""
        return await self._driver.run(lambda: gate.propose_override(
            target, run=run, reason=reason, by=by, now=now_ms()), write=True)

    async def overrides(self) -> list[Override]:
        """Every approved override: the call it let run, who proposed and approved it, its receipt,
        and whether a call took it."""
        return await self._driver.run(gate.list_overrides)

    async def review(self, review_id: str) -> ReviewItem:
        """One review item, pending or decided."""
        return await self._driver.run(lambda: gate.get_review(review_id))

    async def reviews(self, status: ReviewStatus | None = "pending") -> list[ReviewItem]:
        """The review queue: items with this status (None: all), oldest first."""
        return await self._driver.run(lambda: gate.list_reviews(status))

    async def receipts(self) -> list[Receipt]:
        """The receipt chain, in order."""
        return await self._driver.run(gate.list_receipts)

    async def verify_receipts(self, public_keys: Mapping[str, Any] | None = None, *,
                              anchor: PathLike | None = None,
                              distinct_approver: bool = False) -> ReceiptCheck:
        """Re-walk the chain, and check it against the heads anchored at `anchor` (see the sync
        twin)."""
        heads = await asyncio.to_thread(anchors.anchored_heads, anchor, self.graph)
        return await self._driver.run(lambda: gate.verify(
            public_keys, anchors=heads, log_name=self.graph, distinct_approver=distinct_approver))

    async def tree_head(self, *, signing_key: SigningKey | None = None,
                        by: str | None = None) -> TreeHead:
        """The log's current signed tree head (RFC 9162)."""
        head = await self._driver.run(lambda: log.tree_head(self.graph, now_ms()))
        return anchors.signed(head, signing_key, by)

    async def prove(self, receipt: str | int, *, tree_size: int | None = None) -> InclusionProof:
        """The inclusion proof of a receipt in the tree of `tree_size` receipts."""
        return await self._driver.run(lambda: log.inclusion(receipt, tree_size))

    async def consistency(self, old_size: int, *, new_size: int | None = None) -> ConsistencyProof:
        """The proof that the log of `new_size` receipts extends the log of `old_size`."""
        return await self._driver.run(lambda: log.consistency(old_size, new_size))

    async def anchor(self, witness: PathLike, *, signing_key: SigningKey | None = None,
                     by: str | None = None) -> TreeHead:
        """Write the current tree head to a witness (see the sync twin)."""
        target = anchors.witness(witness)
        head = await self.tree_head(signing_key=signing_key, by=by)
        previous = await asyncio.to_thread(target.heads, self.graph)
        proof = await self.consistency(previous[-1].size, new_size=head.size) \
            if previous and previous[-1].size <= head.size else None
        anchors.check_extends(previous[-1] if previous else None, head, proof)
        await self._driver.run(lambda: log.check_leaves(previous[-1].size if previous else 0,
                                                        head.size))
        await asyncio.to_thread(target.publish, head)
        return head

    async def register_key(self, reviewer: str, *, signing_key: SigningKey | None = None,
                           public_key: str | None = None, signature: str | None = None,
                           current_key: SigningKey | None = None) -> Receipt:
        """Register a reviewer's Ed25519 key (see the sync twin)."""
        return await self._driver.run(lambda: gate.register_key(
            reviewer, public_key=public_key, signing_key=signing_key, signature=signature,
            current_key=current_key, now=now_ms()), write=True)

    async def revoke_key(self, reviewer: str, *, by: str, reason: str,
                         signing_key: SigningKey | None = None) -> Receipt:
        """Revoke a reviewer's registered key (receipted)."""
        return await self._driver.run(lambda: gate.revoke_key(
            reviewer, by=by, reason=reason, now=now_ms(), signing_key=signing_key), write=True)

    async def reviewer_keys(self) -> dict[str, str]:
        """Each reviewer's registered public key (hex)."""
        return await self._driver.run(log.reviewer_keys)

    async def export_receipts(self, *, signing_key: SigningKey | None = None,
                              by: str | None = None) -> list[str]:
        """The receipt chain as JSON Lines, headed by its count and last hash (see the sync
        twin)."""
        records, head = await self._driver.run(gate.chain)
        return export_lines(records, head=head, signing_key=signing_key, by=by, log=self.graph)

    async def subscribe(self) -> AsyncEventStream:
        """Live events of this graph (status changes, review decisions), from now on."""
        return await AsyncEventStream(self._client, self.graph).start()

    # -- beliefs in time ---------------------------------------------------------------------
    async def believe(self, agent: str, claim_id: str, *, topic: str,
                      valid_from: TimeLike | None = None, recorded_at: TimeLike | None = None,
                      evidence: SequenceNotStr[str] = (), note: str | None = None) -> Belief:
        """The agent adopts a claim about a topic from `valid_from` (default: now). The interval
        it held before is closed there, never deleted. A past `valid_from` records late knowledge."""
        joined = self._written()  # believed while a captured run writes: it rests on the run
        return await self._driver.run(lambda: memory.believe(
            agent, claim_id, topic=topic, valid_from=valid_from, recorded_at=recorded_at,
            evidence=evidence, note=note, joined=joined), write=True)

    async def retract_belief(self, agent: str, topic: str, *, at: TimeLike | None = None,
                             reason: str | None = None,
                             recorded_at: TimeLike | None = None) -> Belief | None:
        """The agent stops believing what it held about the topic at `at` (default: now). Returns
        the closed interval, or None if it believed nothing then."""
        return await self._driver.run(lambda: memory.retract_belief(
            agent, topic, at=at, reason=reason, recorded_at=recorded_at), write=True)

    async def revise(self, agent: str, topic: str, claim_id: str, *, valid_from: TimeLike,
                     valid_to: TimeLike | None = None, evidence: SequenceNotStr[str] = (),
                     note: str | None = None, recorded_at: TimeLike | None = None) -> Belief:
        """Correct history: over [valid_from, valid_to) the agent held this claim. The rows it
        replaces are superseded (still readable with an earlier `known_at`), never rewritten."""
        return await self._driver.run(lambda: memory.revise(
            agent, topic, claim_id, valid_from=valid_from, valid_to=valid_to, evidence=evidence,
            note=note, recorded_at=recorded_at), write=True)

    async def ask(self, agent: str, topic: str, *, as_of: TimeLike | None = None,
                  known_at: TimeLike | None = None) -> Belief | None:
        """The belief held about the topic at `as_of`, as recorded at `known_at` (None: none)."""
        return await self._driver.run(lambda: memory.ask(agent, topic, as_of=as_of,
                                                         known_at=known_at))

    async def beliefs(self, agent: str, *, as_of: TimeLike | None = None,
                      known_at: TimeLike | None = None) -> list[Belief]:
        """Every belief the agent held at `as_of`, one per topic."""
        return await self._driver.run(lambda: memory.beliefs(agent, as_of=as_of, known_at=known_at))

    async def timeline(self, agent: str, topic: str, *, known_at: TimeLike | None = None,
                       limit: int | None = None, before: TimeLike | None = None) -> list[Belief]:
        """Every interval of the agent's belief about the topic, oldest first, with its evidence;
        with `limit`, the latest `limit` intervals starting before `before` (default: all), oldest
        first: page back with `before=page[0].valid_from`."""
        return await self._driver.run(lambda: memory.timeline(agent, topic, known_at=known_at,
                                                              limit=limit, before=before))

    async def why_changed(self, agent: str, topic: str, at: TimeLike, *,
                          known_at: TimeLike | None = None) -> BeliefChange:
        """The change nearest `at`: the belief before and after, and the evidence that arrived."""
        return await self._driver.run(lambda: memory.why_changed(agent, topic, at,
                                                                 known_at=known_at))

    async def history(self, node_id: str, *, known_at: TimeLike | None = None) -> list[StatusChange]:
        """Every status change of a causal node, with valid and transaction times."""
        return await self._driver.run(lambda: history.history(node_id, known_at=known_at))

    async def what_if(self, agent: str, topic: str, *, without: SequenceNotStr[str],
                      as_of: TimeLike | None = None, known_at: TimeLike | None = None) -> WhatIf:
        """What the agent would believe had these evidence sources never existed, next to what it
        does believe. Read-only: the live graph is never written."""
        return await self._driver.run(lambda: whatif.what_if(agent, topic, without=without,
                                                             as_of=as_of, known_at=known_at))

    async def what_if_retracted(self, claim_ids: SequenceNotStr[str]) -> WhatIfRetracted:
        """Which decisions and actions would be blocked if these claims were retracted. Read-only."""
        return await self._driver.run(lambda: counterfactual.what_if_retracted(claim_ids))

    async def agents(self) -> list[str]:
        """Every agent that ever recorded a belief, sorted."""
        return await self._driver.run(subjects.agents)

    async def topics(self, agent: str) -> list[str]:
        """Every topic the agent ever recorded a belief about, sorted."""
        return await self._driver.run(lambda: subjects.topics(agent))

    # -- record stores and ingestion ---------------------------------------------------------
    def records(self, store: str = "default") -> AsyncRecordStore:
        """A named store of text records (memories) held as claims of this graph."""
        return AsyncRecordStore(self._driver, store, self._written)

    async def ingest(self, documents: DocumentLike | Iterable[DocumentLike], *,
                     extractor: Extractor | None = None, dry_run: bool = False,
                     on_conflict: OnConflict = "justify", errors: Errors = "raise",
                     progress: Progress | None = None) -> IngestReport:
        """Extract each document (default: the structured Markdown format, no model), validate it
        and write it in one atomic commit. A rejected document raises ExtractionRejected (with
        every problem) unless errors="report", which records it and goes on. `progress` is called
        with (name, None) when a document starts and (name, report) when it is done."""
        chosen = pipeline.default_extractor(extractor)
        steps = pipeline.ingest_steps(documents, chosen, dry_run=dry_run, on_conflict=on_conflict,
                                      errors=errors, progress=progress)
        report = await pipeline.adrive(steps, chosen, self._driver.run)
        await contradictions.adrive(contradictions.after_ingest(report.documents, self.detector,
                                                                dry_run), self._driver.run)
        return report

    async def ingest_extraction(self, extraction: Extraction | dict[str, Any], *,
                                document: Document | str | None = None, extractor: str = "manual",
                                model: str | None = None, dry_run: bool = False,
                                on_conflict: OnConflict = "justify") -> DocumentReport:
        """Write an extraction you already have (from your own pipeline), with the same validation.
        `document` (a Document, for spans and sections, or just a name) goes into provenance."""
        steps = pipeline.extraction_steps(extraction, document=document, extractor=extractor,
                                          model=model, dry_run=dry_run, on_conflict=on_conflict)
        report = await pipeline.adrive(steps, pipeline.default_extractor(None), self._driver.run)
        await contradictions.adrive(contradictions.after_ingest([report], self.detector,
                                                                dry_run), self._driver.run)
        return report

    async def detect_contradictions(self, claim_ids: SequenceNotStr[str], *,
                                    detector: ContradictionDetector | None = None
                                    ) -> list[ReviewItem]:
        """Run the contradiction detectors over these claims now (see the sync twin)."""
        chosen = contradictions.checked_detector(detector) or self.detector
        return await contradictions.adrive(contradictions.detection_steps(claim_ids, chosen),
                                           self._driver.run)
