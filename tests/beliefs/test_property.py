"""Property test: every bitemporal read equals a straightforward in-Python reference.

The reference keeps, after every transaction, a full snapshot of each (agent, topic) timeline as
an array of cells over a small discrete valid-time domain (cell i holds the belief at valid time i,
or None). Writes edit cells directly; a read at transaction time K uses the snapshot of the last
transaction recorded at or before K. It shares no code with Rippl's interval logic.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rippl_core import NotFoundError, Rippl

D = 10  # valid-time cells; the last one runs on forever
HOUR = timedelta(hours=1)
VALID0 = (datetime.now(UTC) - timedelta(days=4000)).replace(minute=0, second=0, microsecond=0)
# cell i starts at VALID0 + OFFSETS[i]: gaps from an hour to years, so reads find the interval
# holding at a time through every window the index lookup tries (a day, a month, ~3 years, any)
OFFSETS = [timedelta(hours=h) for h in (0, 1, 30, 31, 24 * 40, 24 * 41, 24 * 1200, 24 * 1201,
                                        24 * 3500, 24 * 3500 + 1)]
CELL = {VALID0 + offset: i for i, offset in enumerate(OFFSETS)}
TX0 = (datetime.now(UTC) - timedelta(days=30)).replace(minute=0, second=0, microsecond=0)
CLAIMS = ["C1", "C2", "C3"]
EVIDENCE = ["E1", "E2", "E3"]
# each claim rests on its own source; C3 also on C1's (either suffices)
CLAIM_SOURCES = {"C1": ["SC1"], "C2": ["SC2"], "C3": ["SC3", "SC1"]}
SOURCES = ["SC1", "SC2", "SC3"]


def valid(i: int) -> datetime:
    return VALID0 + OFFSETS[i] if i >= 0 else VALID0 + i * HOUR


def tx(r: int) -> datetime:
    return TX0 + r * HOUR


@dataclass(frozen=True)
class Seg:
    claim: str
    evidence: tuple[str, ...]
    note: str | None
    start: int


Cells = list[Seg | None]
Out = tuple[str, int, int | None, tuple[str, ...], str | None]  # claim, from, to (None: open), ...


def segments(cells: Cells) -> list[Out]:
    rows: list[Out] = []
    i = 0
    while i < D:
        seg = cells[i]
        if seg is None:
            i += 1
            continue
        j = i
        while j < D and cells[j] is not None and cells[j].start == seg.start:  # type: ignore[union-attr]
            j += 1
        rows.append((seg.claim, i, j if j < D else None, seg.evidence, seg.note))
        i = j
    return rows


def at(cells: Cells, t: int) -> Out | None:
    return next((row for row in segments(cells) if row[1] <= t and (row[2] is None or t < row[2])),
                None)


class Reference:
    """The snapshot model: history[key] = [(recorded r, cells after that transaction)]."""

    def __init__(self) -> None:
        self.history: dict[tuple[str, str], list[tuple[int, Cells]]] = {}

    def cells(self, key: tuple[str, str], known: int) -> Cells:
        current: Cells = [None] * D
        for r, cells in self.history.get(key, []):
            if r <= known:
                current = cells
        return current

    def _latest(self, key: tuple[str, str]) -> Cells:
        versions = self.history.get(key)
        return list(versions[-1][1]) if versions else [None] * D

    def _record(self, key: tuple[str, str], r: int, cells: Cells) -> None:
        self.history.setdefault(key, []).append((r, cells))

    def believe(self, key: tuple[str, str], r: int, claim: str, v: int,
                evidence: tuple[str, ...], note: str | None) -> None:
        cells = self._latest(key)
        cur = cells[v]
        same = cur is not None and cur.claim == claim
        if same and set(evidence) <= set(cur.evidence) and note in (None, cur.note):  # type: ignore[union-attr]
            return
        if same:
            evidence = tuple(dict.fromkeys([*cur.evidence, *evidence]))  # type: ignore[union-attr]
            note = note if note is not None else cur.note  # type: ignore[union-attr]
        nxt = next((i for i in range(v + 1, D) if cells[i] is not None
                    and cells[i].start == i), D)  # type: ignore[union-attr]
        for i in range(v, nxt):
            cells[i] = Seg(claim, evidence, note, v)
        self._record(key, r, cells)

    def retract(self, key: tuple[str, str], r: int, a: int) -> None:
        cells = self._latest(key)
        cur = cells[a]
        if cur is None:
            return
        i = a
        while i < D and cells[i] is not None and cells[i].start == cur.start:  # type: ignore[union-attr]
            cells[i] = None
            i += 1
        self._record(key, r, cells)

    def revise(self, key: tuple[str, str], r: int, claim: str, v: int, e: int | None,
               evidence: tuple[str, ...], note: str | None) -> None:
        cells = self._latest(key)
        end = D if e is None else e
        for i in range(v, end):
            cells[i] = Seg(claim, evidence, note, v)
        i = end
        while i < D and cells[i] is not None and cells[i].start < end:  # type: ignore[union-attr]
            cells[i] = replace(cells[i], start=end)  # type: ignore[type-var]
            i += 1
        self._record(key, r, cells)

    def why(self, key: tuple[str, str], t: int, known: int) -> tuple[int, Out | None, Out | None]:
        rows = segments(self.cells(key, known))
        if not rows:
            raise LookupError
        cells = self.cells(key, known)

        def sides(p: int) -> tuple[Out | None, Out | None]:
            return (at(cells, p - 1) if p > 0 else None), (at(cells, p) if p < D else None)

        def changes(p: int) -> bool:  # the same claim and evidence on both sides is no change
            before, after = sides(p)
            return not (before is not None and after is not None and before[0] == after[0]
                        and set(before[3]) == set(after[3]))

        points = {row[1] for row in rows} | {row[2] for row in rows if row[2] is not None}
        c = min((p for p in points if changes(p)), key=lambda p: (abs(valid(p) - valid(t)), p > t))
        return c, *sides(c)

    def what_if(self, key: tuple[str, str], t: int, known: int, without: set[str]) -> Out | None:
        cells = self.cells(key, known)
        lost = {c for c, sources in CLAIM_SOURCES.items() if set(sources) <= without}

        def dropped(seg: Seg) -> bool:
            return (bool(seg.evidence) and set(seg.evidence) <= without) or seg.claim in lost

        seg = cells[t]
        while seg is not None and dropped(seg):  # fall back to the adjacent earlier adoption
            seg = cells[seg.start - 1] if seg.start > 0 else None
        if seg is None:
            return None
        end = seg.start
        while end < D and cells[end] is not None and (cells[end].start == seg.start  # type: ignore[union-attr]
                                                      or dropped(cells[end])):  # type: ignore[arg-type]
            end += 1
        return (seg.claim, seg.start, end if end < D else None,
                tuple(e for e in seg.evidence if e not in without), seg.note)


def out(belief: Any) -> Out | None:
    if belief is None:
        return None
    to = None if belief.valid_to is None else CELL[belief.valid_to]
    return (belief.claim, CELL[belief.valid_from], to, tuple(belief.evidence), belief.note)


@pytest.fixture
def store(rippl: Rippl) -> Rippl:
    for source in [*EVIDENCE, *SOURCES]:
        rippl.add_source(source, f"source {source}")
    for claim in CLAIMS:
        rippl.add_claim(claim, f"claim {claim}", sources=CLAIM_SOURCES[claim])
    return rippl


cells_i = st.integers(0, D - 1)
believe_op = st.tuples(st.just("believe"), st.sampled_from(CLAIMS), cells_i,
                       st.lists(st.sampled_from(EVIDENCE), max_size=2, unique=True),
                       st.sampled_from([None, "n1", "n2"]))
op = st.one_of(
    believe_op, believe_op,  # adoptions twice as often as the explicit changes
    st.tuples(st.just("retract"), cells_i),
    st.tuples(st.just("revise"), st.sampled_from(CLAIMS), cells_i, st.integers(1, D),
              st.lists(st.sampled_from(EVIDENCE), max_size=2, unique=True),
              st.sampled_from([None, "n1"])),
)
step = st.tuples(st.sampled_from([("a1", "t1"), ("a1", "t2"), ("a2", "t1")]),
                 st.integers(0, 2), op)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=4, max_size=12),
       without=st.sets(st.sampled_from([*EVIDENCE, *SOURCES]), min_size=1,
                       max_size=3))
@example(  # believing the held claim again, with new evidence, splits the interval
    steps=[(("a1", "t1"), 0, ("believe", "C1", 2, ["E1"], "n1")),
           (("a1", "t1"), 1, ("believe", "C1", 4, ["E2"], None)),
           (("a1", "t1"), 0, ("believe", "C1", 5, ["E1"], None))], without={"E2"})
@example(  # late adoption between two, a correction inside an interval, a withdrawal at a start
    steps=[(("a1", "t1"), 1, ("believe", "C1", 1, ["E1"], None)),
           (("a1", "t1"), 1, ("believe", "C2", 6, [], None)),
           (("a1", "t1"), 2, ("believe", "C3", 3, ["E2", "E3"], None)),
           (("a1", "t1"), 0, ("revise", "C2", 4, 1, ["E3"], "n1")),
           (("a1", "t2"), 1, ("believe", "C1", 0, [], None)),
           (("a1", "t1"), 1, ("retract", 6)),
           (("a2", "t1"), 0, ("retract", 2))], without={"E2", "E3"})
@example(  # a retraction leaves a gap that a later adoption fills; dropped beliefs fall back
    steps=[(("a1", "t1"), 0, ("believe", "C1", 0, ["E1"], None)),
           (("a1", "t1"), 1, ("retract", 3)),
           (("a1", "t1"), 1, ("believe", "C2", 5, ["E2"], None)),
           (("a1", "t1"), 1, ("believe", "C3", 7, ["E1"], None)),
           (("a1", "t1"), 1, ("believe", "C1", 1, ["E3"], None))], without={"E1", "SC2", "SC1"})
@example(  # no-op boundaries: a split by a new note, a correction repeating what was held
    steps=[(("a1", "t1"), 0, ("believe", "C1", 1, ["E1"], None)),
           (("a1", "t1"), 1, ("believe", "C1", 3, [], "n1")),
           (("a1", "t1"), 1, ("revise", "C1", 5, 2, ["E1"], None)),
           (("a1", "t1"), 1, ("believe", "C2", 8, [], None)),
           (("a1", "t1"), 1, ("revise", "C2", 9, 1, [], "n1"))], without={"E1"})
def test_reads_match_the_reference(store: Rippl, steps: list[Any], without: set[str]) -> None:
    run = uuid.uuid4().hex[:8]  # fresh agents per example, on the same graph
    ref = Reference()
    r = 0
    keys = set()
    for (agent, topic), gap, (kind, *args) in steps:
        r += gap
        key = (f"{run}-{agent}", topic)
        keys.add(key)
        if kind == "believe":
            claim, v, evidence, note = args
            store.believe(key[0], claim, topic=topic, valid_from=valid(v), recorded_at=tx(r),
                          evidence=evidence, note=note)
            ref.believe(key, r, claim, v, tuple(evidence), note)
        elif kind == "retract":
            (a,) = args
            store.retract_belief(key[0], topic, at=valid(a), recorded_at=tx(r))
            ref.retract(key, r, a)
        else:
            claim, v, length, evidence, note = args
            e = v + length if v + length < D else None
            store.revise(key[0], topic, claim, valid_from=valid(v),
                         valid_to=valid(e) if e is not None else None, evidence=evidence,
                         note=note, recorded_at=tx(r))
            ref.revise(key, r, claim, v, e, tuple(evidence), note)

    knowns = sorted({-1, *range(r + 2)})
    for key in sorted(keys):
        agent, topic = key
        for known in knowns:
            got = [out(b) for b in store.timeline(agent, topic, known_at=tx(known))]
            assert got == segments(ref.cells(key, known)), (key, known)
            assert all(a[2] is not None and a[2] <= b[1] for a, b in itertools.pairwise(got))
            pages: list[Out] = []  # read back in pages of two, newest first: the same timeline
            before = None
            while page := store.timeline(agent, topic, known_at=tx(known), limit=2, before=before):
                pages[:0] = [out(b) for b in page]
                before = page[0].valid_from
            assert pages == got, (key, known)
        for known in (knowns[len(knowns) // 2], knowns[-1], None):  # None: known now
            cells = ref.cells(key, knowns[-1] if known is None else known)
            for t in range(D):  # at each start, and between it and the next (or long after)
                later = valid(t + 1) if t + 1 < D else valid(t) + timedelta(days=5000)
                for moment in (valid(t), valid(t) + (later - valid(t)) / 2):
                    got = store.ask(agent, topic, as_of=moment,
                                    known_at=None if known is None else tx(known))
                    assert out(got) == at(cells, t), (key, t, known, moment)
        known = knowns[-1]
        for t in range(D):
            try:
                expected = ref.why(key, t, known)
            except LookupError:
                with pytest.raises(NotFoundError):
                    store.why_changed(agent, topic, valid(t), known_at=tx(known))
                continue
            change = store.why_changed(agent, topic, valid(t), known_at=tx(known))
            assert (CELL[change.changed_at], out(change.before),
                    out(change.after)) == expected, (key, t)
            result = store.what_if(agent, topic, without=sorted(without), as_of=valid(t),
                                   known_at=tx(known))
            assert out(result.counterfactual) == ref.what_if(key, t, known, without), (key, t)
            assert out(result.actual) == at(ref.cells(key, known), t)
    for agent in {k[0] for k in keys}:
        for t in (0, D - 1):
            expected_beliefs = sorted(
                (topic, at(ref.cells((agent, topic), r), t)) for a, topic in keys if a == agent)
            got_beliefs = [(b.topic, out(b)) for b in store.beliefs(agent, as_of=valid(t),
                                                                    known_at=tx(r))]
            assert got_beliefs == [(tp, o) for tp, o in expected_beliefs if o is not None]


# ------------------------------------------------------------- status history and as-of checks

toggle_days = st.lists(st.integers(0, 20), min_size=1, max_size=7)
CHECK0 = VALID0 + timedelta(days=3000)


def check_day(d: int) -> datetime:
    return CHECK0 + timedelta(days=d)


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(days=toggle_days)
@example(days=[10, 3, 15, 3, 0])  # out-of-order valid times, the same one twice
def test_check_as_of_matches_the_reference(rippl: Rippl, days: list[int]) -> None:
    """Retract and reinstate a source at random valid times (recorded now, in that order); the
    action on top is allowed at (T, K) exactly when the reference says the source held at valid
    time T after the transactions recorded by K, each setting the source's state from its valid
    time on."""
    run = uuid.uuid4().hex[:8]
    src, claim, decision, action = (f"{run}-{x}" for x in ("S", "C", "D", "A"))
    rippl.add_source(src, "a report")
    rippl.add_claim(claim, "a claim", sources=[src])
    rippl.add_decision(decision, "a decision", premises=[claim])
    rippl.add_action(action, "an action", decisions=[decision])
    ops_done: list[tuple[int, bool]] = []  # (valid day, retracted after it), in transaction order
    for i, d in enumerate(days):
        retracted = i % 2 == 0
        if retracted:
            rippl.retract(src, reason="wrong", by="t", at=check_day(d))
        else:
            rippl.reinstate(src, reason="right", by="t", at=check_day(d))
        ops_done.append((d, retracted))
    history = rippl.history(action)
    created = next(h.recorded_at for h in history if h.before is None)
    recorded = sorted(h.recorded_at for h in history if h.before is not None)
    assert len(recorded) == len(days)  # every toggle moved the action, and was recorded
    for known in [created, *recorded]:
        included = [op for op, at in zip(ops_done, recorded, strict=True) if at <= known]
        for t in range(-1, 22):
            retracted = False
            for d, after in included:
                if d <= t:
                    retracted = after
            verdict = rippl.check(action, as_of=check_day(t), known_at=known)
            assert verdict.allowed is not retracted, (t, known, ops_done)
            if retracted:
                assert verdict.blockers[0].premise == src
                assert verdict.blockers[0].trail == [src, claim, decision, action]
    before = rippl.check(action, as_of=check_day(5), known_at=created - timedelta(milliseconds=1))
    assert not before.allowed and "no record" in before.reason
