"""Contradictions are proposed, never applied (docs/design.md, "Rippl notices").

Two detectors feed the review queue; neither approves anything.

- **The key detector** (always on). A claim may carry a key, a subject and a property
  (`shard-09/health`), and a value (`degraded`; none: the claim's normalised text is its value).
  Whenever a keyed claim is written (added, loaded, ingested, or stated again), every other claim
  of that key that is not retracted and has another value is proposed for retraction, with both
  texts and their sources as evidence: the older statement is the one in doubt, the reviewer
  decides.
- **The model detector** (optional: a `ContradictionDetector`, e.g. `ChatModelDetector` over any
  LangChain chat model). When a claim is added or ingested, the model is shown the claim and its
  candidates (every live claim sharing its key with another value, then the `nearest` claims the
  full-text index ranks highest for its words) and says which it contradicts and why; each one it
  names is proposed for retraction with the model's reason.

A pair (the claim proposed for retraction, the claim contradicting it) is proposed at most once,
whichever detector saw it, whatever the reviewer decided: each proposal re-checks that under the
write's optimistic concurrency, so concurrent writers cannot propose it twice. A proposal is its
own write, right after the claim's: if the process dies in between, writing the claim again (or
`detect_contradictions`) proposes it then.

The detection is a generator of steps (`Run` an operation on the graph, `Judge` with the model),
driven by the sync handle (`drive`) or the async one (`adrive`): the logic is shared, only the I/O
differs (see `rippl_core._runtime.steps`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from rippl_core._runtime.op import Batch, Op
from rippl_core._runtime.schema import Index, Schema
from rippl_core._runtime.steps import adrive as steps_adrive
from rippl_core._runtime.steps import drive as steps_drive
from rippl_core._runtime.timeutil import now_ms
from rippl_core._runtime.validation import SequenceNotStr, check_ids, normalise_text
from rippl_core._runtime.wire import Query
from rippl_core.errors import InvalidInputError
from rippl_core.models import ClaimEvidence, Contradiction, ReviewItem
from rippl_core.review import gate

KEY_DETECTOR = "rippl:key-detector"  # who proposes what the key detector finds
MODEL_DETECTOR = "rippl:model-detector"  # and what a model detector finds
NEAREST = 5  # how many claims nearest in text a model detector is shown, by default
PAIR_SEPARATOR = "\x1f"


class FullTextIndex(Index):
    """A full-text index on a node label's property (the nearest claims in text)."""

    __slots__ = ()

    def create(self) -> Query:
        return Query(f"CALL db.idx.fulltext.createNodeIndex('{self.label}', '{self.prop}')")


# A claim is found by its key; a proposal by the pair it is about; claims by their words.
SCHEMA = Schema("1", indexes=(Index("Claim", "key"), Index("ReviewItem", "pair"),
                              FullTextIndex("Claim", "text")))


# ------------------------------------------------------------------------------------- claims


def value_of(props: Mapping[str, Any]) -> str:
    """What a claim says of its key: its value, or (none given) its normalised text."""
    value = props.get("value")
    return str(value) if value is not None else normalise_text(str(props.get("text", "")))


def pair_key(old: str, new: str) -> str:
    """The id of a proposal's pair: `old` proposed for retraction because of `new`."""
    return f"{old}{PAIR_SEPARATOR}{new}"


_WITH_SOURCES = ("OPTIONAL MATCH (s:Source)-[:SUPPORTS]->(c) "
                 "RETURN properties(c), collect(CASE WHEN s IS NULL THEN NULL ELSE "
                 "{id: s.id, title: s.text, uri: s.uri} END)")


def claims_with_sources(ids: Sequence[str]) -> Query:
    """Claims and their sources: (properties, [{id, title, uri}])."""
    return Query(f"UNWIND $ids AS cid MATCH (c:Claim {{id: cid}}) {_WITH_SOURCES}",
                 {"ids": list(ids)}, read_only=True)


def key_mates(ids: Sequence[str]) -> Query:
    """For each keyed claim of `ids`, the other live claims of its key: (id, [properties])."""
    return Query("UNWIND $ids AS cid MATCH (c:Claim {id: cid}) WHERE c.key IS NOT NULL "
                 "MATCH (o:Claim {key: c.key}) WHERE o.id <> c.id AND NOT coalesce(o.retracted, false) "
                 "RETURN c.id, properties(c), collect(properties(o))", {"ids": list(ids)},
                 read_only=True)


def proposed_pairs(pairs: Sequence[str]) -> Query:
    return Query("UNWIND $pairs AS p MATCH (r:ReviewItem {pair: p}) RETURN DISTINCT r.pair",
                 {"pairs": list(pairs)}, read_only=True)


def nearest(claim_id: str, words: str, limit: int) -> Query:
    """The live claims the full-text index ranks highest for `words` (any of them), best first."""
    return Query("CALL db.idx.fulltext.queryNodes('Claim', $q) YIELD node, score "
                 "WHERE node.id <> $id AND NOT coalesce(node.retracted, false) "
                 "RETURN node.id ORDER BY score DESC, node.id LIMIT $limit",
                 {"q": words, "id": claim_id, "limit": limit}, read_only=True)


_WORD = re.compile(r"[^\W_]+")
# words too common to say what a claim is about (a full-text query of them ranks everything)
_STOP = frozenset(("a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "for", "from",
                   "has", "have", "in", "is", "it", "its", "of", "on", "or", "that", "the", "this",
                   "to", "was", "were", "will", "with", "not", "no"))


def words_of(text: str) -> str:
    """A full-text query matching any significant word of `text` ('' when it has none)."""
    words = dict.fromkeys(w for w in _WORD.findall(normalise_text(text))
                          if w not in _STOP and (len(w) > 1 or w.isdigit()))
    return "|".join(list(words)[:32])


def _evidence(props: Mapping[str, Any], sources: Sequence[Mapping[str, Any] | None]
              ) -> ClaimEvidence:
    found = [{k: str(v) for k, v in s.items() if v is not None} for s in sources if s]
    return ClaimEvidence(id=props["id"], text=props.get("text", ""), key=props.get("key"),
                         value=props.get("value"), sources=sorted(found, key=lambda s: s["id"]))


def _cited(side: ClaimEvidence) -> str:
    sources = ", ".join(s.get("title") or s["id"] for s in side.sources) or "no source"
    return f"{side.id} {side.text!r} ({sources})"


# --------------------------------------------------------------------------------- operations


def key_pairs(claim_ids: Sequence[str]) -> Op[list[tuple[str, str]]]:
    """(old, new) for every live claim `old` sharing the key of a claim `new` of `claim_ids` with
    another value, not proposed yet. One round trip, two when there are pairs."""
    rows = yield key_mates(claim_ids)
    pairs = [(other["id"], cid) for cid, props, others in rows for other in others
             if value_of(other) != value_of(props)]
    if not pairs:
        return []
    done = {row[0] for row in (yield proposed_pairs([pair_key(o, n) for o, n in pairs]))}
    return [(o, n) for o, n in pairs if pair_key(o, n) not in done]


def propose_pair(old: str, new: str, *, detector: str, reason: str | None = None,
                 model: str | None = None, now: int) -> Op[ReviewItem | None]:
    """Propose retracting `old` because `new` contradicts it, unless the pair was proposed before
    or `old` is retracted (None then). The key detector's pair is checked again here: same key,
    another value."""
    pair = pair_key(old, new)
    done, rows = yield Batch(proposed_pairs([pair]), claims_with_sources([old, new]))
    found = {props["id"]: _evidence(props, sources) for props, sources in rows}
    if done or old not in found or new not in found or old == new:
        return None
    before, after = found[old], found[new]
    stored = {props["id"]: props for props, _ in rows}
    if stored[old].get("retracted"):
        return None
    if detector == "key":
        if before.key is None or before.key != after.key \
                or value_of(stored[old]) == value_of(stored[new]):
            return None
        reason = (f"contradicted by {new}: {after.key} is {value_of(stored[new])!r} there, "
                  f"{value_of(stored[old])!r} here")
    assert reason is not None
    contradiction = Contradiction(detector="key" if detector == "key" else "model",
                                  key=after.key if detector == "key" else before.key or after.key,
                                  old=before, new=after, model=model, reason=reason)
    evidence = f"{_cited(after)} contradicts {_cited(before)}"
    by = KEY_DETECTOR if detector == "key" else MODEL_DETECTOR
    item = yield from gate.propose(
        old, reason=reason[:2000], by=by, evidence=evidence[:4000], now=now, detector=detector,
        extra={"pair": pair, "contradiction": contradiction.model_dump_json(exclude_none=True)})
    return item


def candidates(claim_id: str, limit: int) -> Op[tuple[ClaimEvidence | None, list[ClaimEvidence]]]:
    """What a model detector compares a claim with: the live claims of its key with another
    value, then the `limit` live claims nearest in text (full-text rank of its words)."""
    rows = yield claims_with_sources([claim_id])
    if not rows:
        return None, []
    props = rows[0][0]
    claim = _evidence(props, rows[0][1])
    ids: list[str] = []
    if props.get("key") is not None:
        mates = yield key_mates([claim_id])
        ids += [o["id"] for _, _, others in mates for o in others if value_of(o) != value_of(props)]
    query = words_of(claim.text)
    if query and limit > 0:
        ids += [row[0] for row in (yield nearest(claim_id, query, limit))]
    ids = list(dict.fromkeys(i for i in ids if i != claim_id))
    if not ids:
        return claim, []
    found = {p["id"]: _evidence(p, s) for p, s in (yield claims_with_sources(ids))}
    return claim, [found[i] for i in ids if i in found]


# ------------------------------------------------------------------------------ model detector


@dataclass(frozen=True)
class Judgement:
    """A model's answer about one candidate: does the new claim contradict it, and why."""

    claim: str
    contradicts: bool
    reason: str


@runtime_checkable
class ContradictionDetector(Protocol):
    """Compares a new claim with candidates and says which it contradicts (see
    `rippl_core.review.detectors.ChatModelDetector`). `name` and `model` go into the evidence;
    `nearest` is how many claims nearest in text it is shown besides those sharing the key."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str | None: ...

    @property
    def nearest(self) -> int: ...

    def judge(self, claim: ClaimEvidence, candidates: Sequence[ClaimEvidence]) -> list[Judgement]: ...


async def ajudge(detector: ContradictionDetector, claim: ClaimEvidence,
                 candidates: Sequence[ClaimEvidence]) -> list[Judgement]:
    """Run a detector from asyncio: its own `ajudge` when it has one, else in a thread."""
    native = getattr(detector, "ajudge", None)
    if native is not None:
        result: list[Judgement] = await native(claim, candidates)
        return result
    return await asyncio.to_thread(detector.judge, claim, candidates)


def checked_detector(detector: object) -> ContradictionDetector | None:
    if detector is not None and not isinstance(detector, ContradictionDetector):
        raise InvalidInputError("detector must have a name, a model, nearest and judge(claim, "
                                "candidates); use ChatModelDetector(chat_model)")
    return detector


# ---------------------------------------------------------------------------------- the steps


@dataclass(frozen=True)
class Run:
    """A step: run this operation on the graph (a write if `write`)."""

    make: Callable[[], Op[Any]]
    write: bool


@dataclass(frozen=True)
class Judge:
    """A step: ask the detector about a claim and its candidates."""

    detector: ContradictionDetector
    claim: ClaimEvidence
    candidates: tuple[ClaimEvidence, ...]


type Steps[T] = Generator[Run | Judge, Any, T]


def detection_steps(claim_ids: SequenceNotStr[str], detector: ContradictionDetector | None, *,
                    judged: SequenceNotStr[str] | None = None) -> Steps[list[ReviewItem]]:
    """Propose what the key detector finds for `claim_ids`, then (with a `detector`) what the
    model finds for `judged` (default: the same claims). Returns the proposals made."""
    ids = check_ids(claim_ids, what="claim ids")
    made: list[ReviewItem] = []
    pairs = (yield Run(lambda: key_pairs(ids), False)) if ids else []
    for old, new in pairs:
        item = yield Run(_proposal(old, new, "key", None, None), True)
        if item is not None:
            made.append(item)
    if detector is None:
        return made
    for cid in (ids if judged is None else check_ids(judged, what="claim ids")):
        claim, found = yield Run(_candidates(cid, detector.nearest), False)
        if claim is None or not found:
            continue
        answers = yield Judge(detector, claim, tuple(found))
        named = {c.id for c in found}
        for answer in answers:
            if answer.contradicts and answer.claim in named:
                reason = answer.reason.strip() or "the model judged them contradictory"
                item = yield Run(_proposal(answer.claim, cid, "model", reason, detector.model), True)
                if item is not None:
                    made.append(item)
    return made


def _candidates(claim_id: str, limit: int
                ) -> Callable[[], Op[tuple[ClaimEvidence | None, list[ClaimEvidence]]]]:
    return lambda: candidates(claim_id, limit)


def _proposal(old: str, new: str, detector: str, reason: str | None,
              model: str | None) -> Callable[[], Op[ReviewItem | None]]:
    return lambda: propose_pair(old, new, detector=detector, reason=reason, model=model,
                                now=now_ms())


def drive[T](steps: Steps[T], run: Callable[..., Any]) -> T:
    """Run the steps with a sync driver's `run`."""
    return steps_drive(steps, lambda step: step.detector.judge(step.claim, list(step.candidates))
                       if isinstance(step, Judge) else run(step.make, write=step.write))


async def adrive[T](steps: Steps[T], run: Callable[..., Awaitable[Any]]) -> T:
    """Run the steps with an async driver's `run` (a sync detector in a thread)."""

    async def do(step: Run | Judge) -> Any:
        if isinstance(step, Judge):
            return await ajudge(step.detector, step.claim, list(step.candidates))
        return await run(step.make, write=step.write)

    return await steps_adrive(steps, do)


def claims_of(nodes: Sequence[Any], *, changed_only: bool = False) -> list[str]:
    """The claims of an ingestion report's nodes (`changed_only`: those not unchanged)."""
    return [n.id for n in nodes if n.kind.value == "Claim"
            and (not changed_only or n.outcome != "unchanged")]



def after_claim(claim_id: str, keyed: bool,
                detector: ContradictionDetector | None) -> Steps[list[ReviewItem]]:
    """What follows writing one claim: the key detector if it is keyed, the model if given."""
    return detection_steps([claim_id] if keyed else [], detector,
                           judged=[claim_id] if detector is not None else [])


def after_load(node_ids: Sequence[str], keyed: bool) -> Steps[list[ReviewItem]]:
    """What follows a load: the key detector over the claims written, when any carries a key (a
    bulk load is not shown to a model)."""
    return detection_steps(node_ids if keyed else [], None)


def after_ingest(documents: Sequence[Any], detector: ContradictionDetector | None,
                 dry_run: bool) -> Steps[list[ReviewItem]]:
    """What follows an ingestion (not a dry run) of these documents' reports: the key detector
    over their claims, the model over those added or merged."""
    nodes = [] if dry_run else [n for d in documents for n in d.nodes]
    return detection_steps(claims_of(nodes), detector if nodes else None,
                           judged=claims_of(nodes, changed_only=True))
