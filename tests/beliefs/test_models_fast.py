"""Beliefs are built from stored rows without pydantic's per-field loop, and stored times are read
by a fast path: both must give exactly what the plain construction gives."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from rippl_core._runtime.timeutil import EARLIEST, END_OF_TIME
from rippl_core.beliefs import cypher
from rippl_core.beliefs.memory import Row, _timeline_models, belief_model, belief_models
from rippl_core.beliefs.models import Belief
from rippl_core.vocabulary import Kind, State, public_status

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
times = st.one_of(st.integers(EARLIEST, END_OF_TIME - 1), st.just(cypher.OPEN),
                  st.integers(1_600_000_000_000, 1_600_000_100_000))
ids = st.sampled_from(["a", "b", "S1", "S2", "S3", "C-1"])
rows = st.builds(
    Row, agent=ids, topic=ids, claim=ids, valid_from=times, valid_to=times, recorded_at=times,
    superseded_at=times, evidence=st.lists(ids, max_size=3).map(tuple),
    note=st.none() | st.text(max_size=5), cause=st.sampled_from(["believe", "revise"]),
    reason=st.none() | st.text(max_size=5), first_recorded=st.none() | times,
    text=st.text(max_size=5), claim_state=st.sampled_from([s.value for s in State]),
    claim_retracted=st.booleans())
states = st.dictionaries(ids, st.sampled_from([s.value for s in State]), max_size=4)


def reference(row: Row, evidence_states: dict[str, str]) -> Belief:
    """The plain construction (pydantic's model_construct, the exact time arithmetic)."""
    def at(ms: int) -> datetime:
        return EPOCH + timedelta(milliseconds=min(max(ms, EARLIEST), END_OF_TIME - 1))

    state = State(row.claim_state)
    return Belief.model_construct(
        agent=row.agent, topic=row.topic, claim=row.claim, text=row.text,
        valid_from=at(row.valid_from),
        valid_to=None if row.valid_to >= cypher.OPEN else at(row.valid_to),
        recorded_at=at(row.recorded_at),
        first_recorded_at=at(row.first_recorded if row.first_recorded is not None
                             else row.recorded_at),
        superseded_at=None if row.superseded_at >= cypher.OPEN else at(row.superseded_at),
        evidence=list(row.evidence), note=row.note, claim_state=state,
        claim_status=public_status(Kind.CLAIM, state), claim_state_now=state,
        claim_status_now=public_status(Kind.CLAIM, state), rests_on_retracted=state is State.OUT,
        retracted_evidence=[e for e in row.evidence if evidence_states.get(e) == State.OUT.value],
        cause=row.cause, reason=row.reason, claim_retracted=row.claim_retracted)


def same(mine: Belief, theirs: Belief) -> None:
    assert list(mine.__dict__.items()) == list(theirs.__dict__.items())  # values and field order
    assert mine.model_fields_set == theirs.model_fields_set
    assert mine == theirs
    assert mine.model_dump_json() == theirs.model_dump_json() and repr(mine) == repr(theirs)


@settings(max_examples=300, deadline=None)
@given(st.lists(rows, max_size=8), states)
def test_belief_models_are_the_plain_construction(many: list[Row], evidence: dict[str, str]) -> None:
    built = belief_models(many, evidence)
    assert len(built) == len(many)
    for row, model in zip(many, built, strict=True):
        same(model, reference(row, evidence))
        same(belief_model(row, evidence), model)


def test_a_constructed_belief_is_frozen_and_validates_again() -> None:
    row = Row("a", "t", "C-1", 1_600_000_000_000, cypher.OPEN, 1_600_000_000_000,
              evidence=("S1",), text="x")
    model = belief_models([row], {"S1": State.OUT.value})[0]
    assert model.retracted_evidence == ["S1"] and model.valid_to is None
    assert Belief.model_validate(model.model_dump()) == model
    try:
        model.claim = "other"  # type: ignore[misc]
    except Exception as exc:  # pydantic's frozen-instance error
        assert "frozen" in str(exc).lower()
    else:
        raise AssertionError("a constructed belief must stay frozen")


nodes = st.dictionaries(ids, st.tuples(st.text(max_size=5),
                                       st.sampled_from([s.value for s in State]), st.booleans()),
                        max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(rows, max_size=8), nodes)
def test_timeline_models_are_belief_models(many: list[Row],
                                           known: dict[str, tuple[str, str, bool]]) -> None:
    """A timeline's rows arrive plain (`cypher.timeline`: no agent, topic, claim text or state;
    the evidence joined) and are built in one pass: the same Beliefs as `belief_models` of the
    full rows, the claim's text and state and the evidence's states being those of its node."""
    many = [replace(r, agent="ag", topic="tp", text=known.get(r.claim, ("", "", False))[0],
                    claim_state=known.get(r.claim, ("", State.IN.value, False))[1],
                    claim_retracted=known.get(r.claim, ("", "", False))[2]) for r in many]
    records = [[r.claim, r.valid_from, r.valid_to, r.recorded_at, r.superseded_at,
                cypher.ID_SEPARATOR.join(r.evidence), r.note,
                None if r.cause == "believe" else r.cause, r.reason, r.first_recorded]
               for r in many]
    evidence = {rec[5]: tuple(rec[5].split(cypher.ID_SEPARATOR)) if rec[5] else ()
                for rec in records}
    built = _timeline_models("ag", "tp", records, evidence, known)
    expected = belief_models(many, {node: state for node, (_, state, _) in known.items()})
    assert len(built) == len(expected)
    for mine, theirs in zip(built, expected, strict=True):
        same(mine, theirs)
    if built:  # no list is shared between models
        assert built[0].evidence is not expected[0].evidence
        assert len({id(b.evidence) for b in built}) == len(built)
