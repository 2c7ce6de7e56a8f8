"""Record stores: text records (an agent's memories, notes) held as claims in the causal graph.

Each record states a claim: the claim derived from its content (the same statement is one claim,
whoever records it), supported by a `Source` for the record's provenance, or an existing claim of
the graph named explicitly. So the truth maintenance of the graph applies to memories: retract the
claim, or the source it came from, and the records stating it stop being recalled as current.

Records are versioned in valid time (`valid_from`, `valid_to`: when the record said this) and
transaction time (`recorded_at`, `closed_at`: when Rippl learned it, and when that version was
ended). Saving a changed record ends the open version and opens a new one; deleting ends it. Every
read can be asked `as_of` a valid time and `known_at` a transaction time; the claim's status is
then its status at that time too (from the graph's status history), next to its status now.

Similarity search is exact: cosine similarity computed inside FalkorDB over the versions that pass
the filters (scope, categories, time, claim status), best first. Nothing here knows CrewAI.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rippl_core._runtime import schema
from rippl_core._runtime.op import Commit, Op
from rippl_core._runtime.timeutil import TimeLike, from_ms, to_ms
from rippl_core._runtime.validation import SequenceNotStr, check_collection, check_id, check_text, semantic_id
from rippl_core.causal import cypher as causal_cypher
from rippl_core.causal import history
from rippl_core.causal.joined import Joined
from rippl_core.causal.nodes import fetch_justifications, fetch_nodes, stated_claims
from rippl_core.causal.relabel import Change, plan_change
from rippl_core.causal.spec import NodeSpec
from rippl_core.errors import ConflictError, InvalidInputError, NotFoundError
from rippl_core.records import cypher
from rippl_core.records.model import (
    Record,
    ScopeSummary,
    View,
    check_categories,
    check_importance,
    check_limit,
    check_metadata,
    check_store,
    check_vector,
    normalise_scope,
    record_ids,
    scope_prefix,
)
from rippl_core.vocabulary import Kind, State

# ---------------------------------------------------------------------------------- validation


def source_id(store: str, source: str | None) -> tuple[str, str]:
    """The id and title of the Source node for a record's provenance (the store's own source
    when the record names none)."""
    title = source if source is not None else f"record store {store}"
    return semantic_id(Kind.SOURCE, title), title


@dataclass
class _Prepared:
    rid: str
    claim: str | None  # the claim the caller named
    source: tuple[str, str]
    props: dict[str, Any]
    derived: str | None = None  # else: the claim stating its content (set when saving)


def _prepare(store: str, record: object, now: int) -> _Prepared:
    if not isinstance(record, Record):
        raise InvalidInputError(f"records must be rippl_core.records.Record, got "
                                f"{type(record).__name__}")
    rid = check_id(record.id, what="record id")
    content = check_text(record.content, what="record content")
    source = None if record.source is None else check_text(record.source, what="source")
    if not isinstance(record.private, bool):
        raise InvalidInputError("private must be true or false")
    created = to_ms(record.created_at, name="created_at", default=now)
    accessed = to_ms(record.last_accessed, name="last_accessed", default=created)
    props: dict[str, Any] = {
        "rid": rid, "content": content, "scope": normalise_scope(record.scope),
        "categories": check_categories(record.categories),
        "metadata": check_metadata(record.metadata),
        "importance": check_importance(record.importance),
        "embedding": None if record.embedding is None else check_vector(record.embedding),
        "source": source, "private": record.private, "created_at": created,
        "last_accessed": accessed,
    }
    claim = None if record.claim is None else check_id(record.claim, what="claim")
    return _Prepared(rid, claim, source_id(store, source), props)


# ------------------------------------------------------------------------------------ reading

_COMPARED = ("content", "scope", "categories", "metadata", "importance", "embedding", "source",
             "private", "created_at", "claim", "linked")


def _record(props: Mapping[str, Any], then: State | None, now: State | None) -> Record:
    embedding = props.get("embedding")
    return Record(
        id=props["rid"], content=props["content"], scope=props["scope"],
        categories=list(props.get("categories") or []),
        metadata=json.loads(props.get("metadata") or "{}"),
        importance=float(props.get("importance", 0.5)),
        embedding=[float(x) for x in embedding] if embedding is not None else None,
        source=props.get("source"), private=bool(props.get("private")),
        created_at=from_ms(props.get("created_at")),
        last_accessed=from_ms(props.get("last_accessed")), claim=props["claim"],
        version=int(props["version"]), claim_state=then, claim_state_now=now,
        valid_from=from_ms(props.get("valid_from")), valid_to=from_ms(props.get("valid_to")),
        recorded_at=from_ms(props.get("recorded_at")),
    )


def states_at(claims: Iterable[str], view: tuple[int, int]) -> Op[dict[str, State]]:
    """Each claim's status at valid time t as recorded by `known`, from the graph's status history
    (the same reading as the bitemporal API's)."""
    ids = sorted(set(claims))
    if not ids:
        return {}
    found = yield from history.states_at(ids, view[0], view[1])
    return {node: state for node, state in found.items() if state is not None}


def _rows_to_records(rows: Sequence[tuple[Any, ...]], view: View) -> Op[list[Record]]:
    if view is None:
        return [_record(props, State(state), State(state)) for props, state in rows]
    then = yield from states_at((props["claim"] for props, _ in rows), view)
    return [_record(props, then.get(props["claim"], State(state)), State(state))
            for props, state in rows]


def _metadata_matches(metadata_json: str | None, wanted: Mapping[str, Any] | None) -> bool:
    if not wanted:
        return True
    metadata = json.loads(metadata_json or "{}")
    return all(metadata.get(key) == value for key, value in wanted.items())


def _check_filter(metadata_filter: object) -> Mapping[str, Any] | None:
    if metadata_filter is None:
        return None
    if not isinstance(metadata_filter, Mapping):
        raise InvalidInputError("metadata_filter must be a dict of key: value pairs")
    check_metadata(metadata_filter)
    return metadata_filter


def get(store: str, record_id: str, *, view: View) -> Op[Record | None]:
    """One record (the version visible in `view`), or None."""
    store, rid = check_store(store), check_id(record_id, what="record id")
    rows = yield cypher.select(store, as_of=view, prefix=None, categories=None, ids=[rid], older=None,
                           embeddings=True)
    if not rows:
        return None
    latest = max(rows, key=lambda row: row[0]["version"])
    records = yield from _rows_to_records([latest], view)
    return records[0]


def find(store: str, *, view: View, prefix: str | None = None,
         categories: SequenceNotStr[str] | None = None, ids: SequenceNotStr[str] | None = None,
         older_than: TimeLike | None = None, metadata_filter: Mapping[str, Any] | None = None,
         limit: int | None = None, offset: int = 0, embeddings: bool = True) -> Op[list[Record]]:
    """Records matching every filter given, newest first (by creation time)."""
    store = check_store(store)
    cats = check_categories(categories, what="categories filter") if categories is not None else None
    rids = record_ids(ids) if ids is not None else None
    wanted = _check_filter(metadata_filter)
    offset = check_limit(offset, what="offset")
    if limit is not None:
        limit = check_limit(limit)
    older = to_ms(older_than, name="older_than") if older_than is not None else None
    rows = yield cypher.select(store, as_of=view, prefix=scope_prefix(prefix), categories=cats,
                           ids=rids, older=older, embeddings=embeddings)
    rows = [row for row in rows if _metadata_matches(row[0].get("metadata"), wanted)]
    rows.sort(key=lambda row: (-int(row[0]["created_at"]), row[0]["rid"]))
    rows = rows[offset:] if limit is None else rows[offset:offset + limit]
    records = yield from _rows_to_records(rows, view)
    return records


def search(store: str, vector: Sequence[float], *, view: View, prefix: str | None = None,
           categories: SequenceNotStr[str] | None = None,
           metadata_filter: Mapping[str, Any] | None = None, limit: int = 10,
           min_score: float = 0.0, include_at_risk: bool = True) -> Op[list[tuple[Record, float]]]:
    """The records most similar to `vector` (cosine), best first, among those whose claim holds
    (at the time asked): a retracted claim's records are never returned; a claim under a proposed
    retraction's are returned unless include_at_risk=False."""
    store = check_store(store)
    query = check_vector(vector, what="query embedding")
    limit = check_limit(limit)
    if isinstance(min_score, bool) or not isinstance(min_score, int | float) \
            or not math.isfinite(min_score):
        raise InvalidInputError(f"min_score must be a number, got {min_score!r}")
    cats = check_categories(categories, what="categories filter") if categories is not None else None
    wanted = _check_filter(metadata_filter)
    if limit == 0:
        return []
    dims = yield cypher.dimension(store)
    if dims and dims[0][0] != len(query):
        raise InvalidInputError(
            f"the query embedding has {len(query)} dimensions but store {store!r} holds "
            f"{dims[0][0]}-dimensional embeddings; embed with the same model, or reset the store")
    if not dims:
        return []
    blocked = [State.OUT.value] + ([] if include_at_risk else [State.AT_RISK.value])
    pushed = limit if view is None and not wanted else None
    rows = yield cypher.rank(store, query, as_of=view, prefix=scope_prefix(prefix), categories=cats,
                         min_score=float(min_score), exclude=blocked if view is None else [],
                         limit=pushed)
    rows = [row for row in rows if _metadata_matches(row[4], wanted)]
    if view is not None:
        then = yield from states_at((row[2] for row in rows), view)
        rows = [row for row in rows if then[row[2]].value not in blocked]
    rows = rows[:limit]
    if not rows:
        return []
    keys = [{"rid": row[0], "version": row[1]} for row in rows]
    full = yield cypher.versions(store, keys)
    records = yield from _rows_to_records(full, view)
    by_key = {(r.id, r.version): r for r in records}
    return [(by_key[(row[0], row[1])], float(row[5])) for row in rows
            if (row[0], row[1]) in by_key]


def summary(store: str, scope: str, *, view: View) -> Op[ScopeSummary]:
    """Count, categories, time range and immediate child scopes of `scope` (sub-scopes included)."""
    store = check_store(store)
    path = normalise_scope(scope)
    rows = yield cypher.overview(store, as_of=view, prefix=None if path == "/" else path)
    categories: dict[str, int] = {}
    children: set[str] = set()
    base = "" if path == "/" else path
    times = []
    for record_scope, cats, created in rows:
        for category in cats or []:
            categories[category] = categories.get(category, 0) + 1
        if record_scope.startswith(base + "/") and record_scope != path:
            head = record_scope[len(base) + 1:].split("/", 1)[0]
            if head:
                children.add(f"{base}/{head}")
        times.append(int(created))
    return ScopeSummary(path=path, count=len(rows), categories=categories,
                        oldest=from_ms(min(times)) if times else None,
                        newest=from_ms(max(times)) if times else None,
                        children=sorted(children))


# ------------------------------------------------------------------------------------ writing


def save(store: str, records: Sequence[Record], *, now: int,
         joined: Joined | None = None) -> Op[list[Record]]:
    """Insert or replace records, all or nothing. A record whose fields are unchanged keeps its
    version (only its last access time moves); a changed one gets a new version, the old one
    ended now. Claims and sources are created as needed. `joined`: what another feature records
    about the claims in the same commit (records saved in a captured run rest on what the run
    carried, `capture.memory`, instead of the store's own source)."""
    store = check_store(store)
    prepared = _prepare_all(store, records, now)
    if not prepared:
        return []
    ids = [p.rid for p in prepared]
    yield from _check_dimensions(store, prepared)
    existing = yield from _open_versions(store, prepared)
    last = yield cypher.latest_versions(store, ids)
    change = yield from _claims_change(store, prepared, now, written=joined is not None)
    commit = (yield from plan_change(change, cause="record", at=now, now=now)) if (
        change.new_nodes or change.new_justifications) else Commit()
    _version_queries(commit, store, prepared, existing, {rid: int(v) for rid, v in last}, now)
    extra = [] if joined is None else joined.queries(
        [p.claim or p.derived or semantic_id(Kind.CLAIM, p.props["content"]) for p in prepared], now)
    if commit.queries or extra:
        replies = yield Commit(commit.queries + extra, commit.events, blind=commit.blind)
        if joined is not None:
            yield from joined.after(replies[len(replies) - len(extra):])
    saved = yield from _current(store, ids)
    return saved


def _prepare_all(store: str, records: Sequence[Record] | Record, now: int) -> list[_Prepared]:
    """Validate every record before anything is read or written; ids must be distinct."""
    if isinstance(records, Record):
        records = [records]
    prepared = [_prepare(store, record, now)
                for record in check_collection(records, what="records", item="Record")]
    ids = [p.rid for p in prepared]
    if len(set(ids)) != len(ids):
        raise InvalidInputError("the same record id appears twice in one save; save it once")
    return prepared


def _open_versions(store: str, prepared: Sequence[_Prepared]) -> Op[dict[str, dict[str, Any]]]:
    """The open version of each record that exists. A record read back carries its derived
    claim: a record saved with that same claim derives it again."""
    rows = yield cypher.current(store, [p.rid for p in prepared])
    existing = {props["rid"]: props for (props,) in rows}
    for p in prepared:
        old = existing.get(p.rid)
        if old is not None and p.claim == old["claim"] and not old.get("linked"):
            p.claim = None
    return existing


def _version_queries(commit: Commit, store: str, prepared: Sequence[_Prepared],
                     existing: Mapping[str, Mapping[str, Any]], latest: Mapping[str, int],
                     now: int) -> None:
    """Add to `commit` what the save writes: new versions of changed records (ending the old
    ones) and access times of unchanged ones."""
    creates, closes, touched = [], [], []
    for p in prepared:
        claim = p.claim or p.derived or semantic_id(Kind.CLAIM, p.props["content"])
        props = {**p.props, "claim": claim, "linked": p.claim is not None}
        old = existing.get(p.rid)
        if old is not None and all(old.get(k) == props.get(k) for k in _COMPARED):
            if old.get("last_accessed") != props["last_accessed"]:
                touched.append(p)
            continue
        props.update(version=latest.get(p.rid, 0) + 1, recorded_at=now, valid_to=None,
                     closed_at=None, valid_from=min(now, props["created_at"]) if old is None else now)
        if old is not None:
            closes.append(p.rid)
        creates.append({"claim": claim, "props": {k: v for k, v in props.items() if v is not None}})
    if closes:
        commit.queries.append(cypher.close(store, closes, now))
    commit.queries.extend(cypher.create(store, chunk) for chunk in causal_cypher.chunks(creates, 200))
    commit.queries.extend(cypher.touch(store, [p.rid], p.props["last_accessed"]) for p in touched)


def _current(store: str, ids: Sequence[str]) -> Op[list[Record]]:
    """The open versions of `ids`, in that order, with their claims' states now."""
    rows = yield cypher.current(store, ids)
    saved = {props["rid"]: props for (props,) in rows}
    states = yield cypher.node_states(sorted({props["claim"] for props in saved.values()}))
    state = {node: State(s) for node, s in states}
    return [_record(saved[rid], state[saved[rid]["claim"]], state[saved[rid]["claim"]])
            for rid in ids]


def _check_dimensions(store: str, prepared: Sequence[_Prepared]) -> Op[None]:
    sizes = {len(p.props["embedding"]) for p in prepared if p.props["embedding"] is not None}
    if len(sizes) > 1:
        raise InvalidInputError(f"embeddings of different sizes in one save: {sorted(sizes)}")
    if sizes:
        rows = yield cypher.dimension(store)
        if rows and rows[0][0] not in sizes:
            raise InvalidInputError(
                f"store {store!r} holds {rows[0][0]}-dimensional embeddings; these have "
                f"{sizes.pop()}. Embed with the same model, or reset the store")


def _claims_change(store: str, prepared: Sequence[_Prepared], now: int, *,
                   written: bool = False) -> Op[Change]:
    """The causal-graph change that gives every record its claim: derived claims (and their
    sources) created or given the record's source as one more justification; named claims
    checked. `written` (a run writes them): a record naming no source gets no source of the
    store's own (what the run rested on justifies it instead)."""
    derived: dict[str, tuple[str, set[str]]] = {}  # claim -> (text, source ids)
    titles: dict[str, str] = {}
    named: set[str] = set()
    stated = yield from stated_claims([p.props["content"] for p in prepared if p.claim is None])
    for p in prepared:
        if p.claim is not None:
            named.add(p.claim)
            continue
        claim, text = stated.get(p.props["content"],
                                 (semantic_id(Kind.CLAIM, p.props["content"]), p.props["content"]))
        p.derived = claim
        text, sources = derived.setdefault(claim, (text, set()))
        if written and p.props["source"] is None:
            continue  # the run's write is its provenance (`joined`), not the store
        sources.add(p.source[0])
        titles[p.source[0]] = p.source[1]
    found = yield from fetch_nodes(sorted(named | set(derived) | set(titles)))
    for claim in sorted(named):
        if claim not in found:
            raise NotFoundError(f"claim {claim} not found; add it first, or leave the record's "
                                "claim empty to derive one from its content")
    for node in sorted(named | set(derived)):
        if node in found and found[node]["kind"] != Kind.CLAIM.value:
            raise ConflictError(f"{node} is a {found[node]['kind']}, not a claim")
    for node in titles:
        if node in found and found[node]["kind"] != Kind.SOURCE.value:
            raise ConflictError(f"{node} is a {found[node]['kind']}, not a source")

    change = Change.over(found)
    for node, title in titles.items():
        if node not in found:
            spec = NodeSpec(Kind.SOURCE, title, id=node, source_type="record-source").validated()
            change.new_nodes[node] = spec.props(now)
            change.kinds[node] = Kind.SOURCE
    existing = [c for c in derived if c in found]
    justs, _ = yield from fetch_justifications(existing)
    for claim, (text, sources) in derived.items():
        change.kinds[claim] = Kind.CLAIM
        if claim not in found:
            spec = NodeSpec(Kind.CLAIM, text, id=claim).validated()
            change.new_nodes[claim] = spec.props(now)
            change.new_justifications[claim] = [[s] for s in sorted(sources)]
            continue
        have = {frozenset(j) for j in justs.get(claim, [])}
        missing = [[s] for s in sorted(sources) if frozenset([s]) not in have]
        if missing:
            change.new_justifications[claim] = missing
    return change


def delete(store: str, *, now: int, prefix: str | None = None,
           categories: SequenceNotStr[str] | None = None, ids: SequenceNotStr[str] | None = None,
           older_than: TimeLike | None = None, metadata_filter: Mapping[str, Any] | None = None,
           purge: bool = False) -> Op[int]:
    """End (or, with purge=True, erase with their history) the records matching every filter
    given; no filter matches every record of the store. Returns how many records."""
    matched = yield from find(store, view=None, prefix=prefix, categories=categories, ids=ids,
                              older_than=older_than, metadata_filter=metadata_filter,
                              embeddings=False)
    rids = [record.id for record in matched]
    if not rids:
        return 0
    store = check_store(store)
    yield Commit(queries=[cypher.purge(store, rids) if purge else cypher.close(store, rids, now)])
    return len(rids)


def touch(store: str, ids: SequenceNotStr[str], *, now: int) -> Op[int]:
    """Record an access to the open versions of `ids` (no new version)."""
    store = check_store(store)
    rids = record_ids(ids)
    if not rids:
        return 0
    results = yield Commit(queries=[cypher.touch(store, rids, now)])
    return int(results[0][0][0]) if results and results[0] else 0


def ensure_schema() -> Op[None]:
    """Create the record indexes that are missing (idempotent)."""
    yield from schema.create_missing(cypher.INDEXES)
