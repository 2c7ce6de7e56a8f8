"""The batch checks of the write path against the per-node checks they stand in for: whatever a
batch of nodes, `validated_all` returns what validating each spec returns (or raises the same
error), `props` writes what it wrote before the rewrite (a copy of that code is the reference
here), and the content digest is `json.dumps` hashed. No database: `load` itself is checked on a
real FalkorDB against the reference labelling in test_tms_graph.py."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rippl_core._runtime import validation
from rippl_core._runtime.validation import (
    MAX_ID_LENGTH,
    MAX_TEXT_LENGTH,
    call_key,
    canonical_args,
    check_id,
    check_text,
    normalise_text,
    plain_ids,
    plain_texts,
    semantic_id,
)
from rippl_core.causal.spec import NodeSpec, content_digest, validated_all
from rippl_core.causal.write import _check_support, _plain_support
from rippl_core.errors import InvalidInputError
from rippl_core.vocabulary import Kind

# Ids and texts that pass and that fail each check (white space, control characters, NUL, lone
# surrogates, length limits, wrong types), mixed with ordinary ones.
GOOD_IDS = st.sampled_from(["C1", "S1", "D1", "A1", "x y", "CLM-0123456789ab", "é", "a\"b'c`"])
BAD_IDS = st.sampled_from(["", " C1", "C1 ", "a\nb", "\u200b", "x" * (MAX_ID_LENGTH + 1), 5, None,
                          "\ud800", "tab\t"])
IDS = st.one_of(GOOD_IDS, GOOD_IDS, GOOD_IDS, BAD_IDS)
GOOD_TEXTS = st.one_of(st.sampled_from(["shard 09 is healthy", "é ü 中文", "line\nbreak", " pad "]),
                       st.text(min_size=1).filter(str.strip))
BAD_TEXTS = st.sampled_from(["", "   ", "nul\x00", "\ud800", "x" * (MAX_TEXT_LENGTH + 1), 7, None])
TEXTS = st.one_of(GOOD_TEXTS, GOOD_TEXTS, GOOD_TEXTS, BAD_TEXTS)


def outcome(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return ("ok", fn(*args, **kwargs))
    except InvalidInputError as exc:
        return ("error", str(exc))


@settings(max_examples=500)
@given(st.lists(IDS, max_size=6))
def test_plain_ids_says_whether_check_id_passes_every_id(values: list[Any]) -> None:
    assert plain_ids(values) == all(outcome(check_id, v)[0] == "ok" for v in values)


@settings(max_examples=500)
@given(st.lists(TEXTS, max_size=6))
def test_plain_texts_says_whether_check_text_passes_every_text(values: list[Any]) -> None:
    assert plain_texts(values) == all(outcome(check_text, v)[0] == "ok" for v in values)


def reference_check_id(value: object) -> str:
    """check_id before its one-test fast path."""
    if not isinstance(value, str):
        raise InvalidInputError(f"id must be a string, got {type(value).__name__}")
    if not value:
        raise InvalidInputError("id is empty; give a non-empty id such as 'CLM-001'")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidInputError(f"id is {len(value)} characters; the limit is {MAX_ID_LENGTH}")
    if value != value.strip():
        raise InvalidInputError(f"id={value!r} has leading or trailing white space")
    if not value.isprintable():
        raise InvalidInputError(f"id={value!r} contains control or non-printable characters")
    return value


def reference_check_text(value: object) -> str:
    """check_text (required) before its one-test fast path."""
    if not isinstance(value, str):
        raise InvalidInputError(f"text must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError("text is empty; say what it is in plain words")
    if len(value) > MAX_TEXT_LENGTH:
        raise InvalidInputError(f"text is {len(value)} characters; the limit is {MAX_TEXT_LENGTH}")
    if "\x00" in value:
        raise InvalidInputError("text contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("text is not valid Unicode text (it contains a lone surrogate)"
                                ) from None
    return value


@settings(max_examples=500)
@given(st.one_of(IDS, TEXTS))
def test_the_fast_paths_of_check_id_and_check_text_change_no_answer(value: Any) -> None:
    assert outcome(check_id, value) == outcome(reference_check_id, value)
    assert outcome(check_text, value) == outcome(reference_check_text, value)


KINDS = st.sampled_from(list(Kind))
ARGS = st.one_of(st.none(), st.dictionaries(st.text(max_size=4), st.one_of(
    st.integers(), st.text(max_size=8), st.booleans(), st.none()), max_size=3))


@st.composite
def specs(draw: st.DrawFn) -> NodeSpec:
    kind = draw(KINDS)
    text = draw(TEXTS)
    node_id = draw(st.one_of(IDS, st.just(None)))  # None: a semantic id, derived from the text
    justs = draw(st.lists(st.lists(IDS, max_size=3), max_size=3))
    return NodeSpec(kind, text, node_id,
                    uri=draw(st.one_of(st.none(), TEXTS)),
                    source_type=draw(st.one_of(st.none(), TEXTS)),
                    tool=draw(st.one_of(st.none(), IDS)), args=draw(ARGS), justifications=justs,
                    provenance=draw(st.one_of(st.none(), st.just({"doc": "a", "n": 1}))),
                    sources=draw(st.lists(IDS, max_size=2)))


def validate_each(batch: list[NodeSpec]) -> list[NodeSpec]:
    return [spec.validated() for spec in batch]


@settings(max_examples=400)
@given(st.lists(specs(), max_size=5))
def test_validated_all_returns_or_raises_what_validating_each_spec_does(batch: list[NodeSpec]
                                                                        ) -> None:
    assert outcome(validated_all, batch) == outcome(validate_each, batch)


def reference_props(spec: NodeSpec, now: int) -> dict[str, Any]:
    """NodeSpec.props before the rewrite."""
    args = canonical_args(spec.args)
    props: dict[str, Any] = {
        "id": spec.id, "kind": spec.kind.value, "text": spec.text, "uri": spec.uri,
        "source_type": spec.source_type, "tool": spec.tool, "args": args,
        "call_key": call_key(spec.tool, args) if spec.tool else None,
        "retracted": False, "pending": 0, "created_at": now,
        "provenance": json.dumps(spec.provenance, sort_keys=True) if spec.provenance else None,
    }
    semantic = spec.id == semantic_id(spec.kind, spec.text)
    content = {**props, "text": normalise_text(spec.text)} if semantic else props
    fields = {k: content.get(k) for k in ("kind", "text", "uri", "source_type", "tool", "args")}
    props["digest"] = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()
    if spec.kind is Kind.CLAIM:  # found by what it states, whatever its id
        props["text_key"] = semantic_id(Kind.CLAIM, spec.text)
    return {k: v for k, v in props.items() if v is not None}


@settings(max_examples=400)
@given(specs(), st.integers(0, 2**45), st.booleans())
def test_props_are_what_they_were(spec: NodeSpec, now: int, semantic: bool) -> None:
    try:
        checked = spec.validated()
    except InvalidInputError:
        return
    if semantic:  # the same node under its semantic id: the normalised text is the content
        checked.id = semantic_id(checked.kind, checked.text)
    assert outcome(checked.props, now) == outcome(reference_props, checked, now)
    assert list(checked.props(now)) == list(reference_props(checked, now))  # same key order


@given(st.dictionaries(st.sampled_from(["kind", "text", "uri", "source_type", "tool", "args",
                                        "other"]),
                       st.one_of(st.none(), st.text(), st.integers(), st.booleans())))
def test_content_digest_is_json_dumps_hashed(props: dict[str, Any]) -> None:
    fields = {k: props.get(k) for k in ("kind", "text", "uri", "source_type", "tool", "args")}
    assert content_digest(props) == hashlib.sha256(
        json.dumps(fields, sort_keys=True).encode()).hexdigest()


NODES = ["S1", "S2", "C1", "C2", "D1", "A1", "A2"]
KIND_OF = {"S": Kind.SOURCE, "C": Kind.CLAIM, "D": Kind.DECISION, "A": Kind.ACTION}


@settings(max_examples=500)
@given(st.dictionaries(st.sampled_from(NODES), st.tuples(
    st.lists(st.lists(st.sampled_from(NODES), min_size=1, max_size=3), max_size=2),
    st.lists(st.sampled_from(NODES), max_size=2)), max_size=4))
def test_the_batch_edge_check_agrees_with_the_per_node_check(
        plan: dict[str, tuple[list[list[str]], list[str]]]) -> None:
    kinds = {n: KIND_OF[n[0]] for n in NODES}
    by_id = {node: NodeSpec(kinds[node], "t", node, justifications=justs, sources=sources)
             for node, (justs, sources) in plan.items()}

    def per_node() -> bool:
        for node, spec in by_id.items():
            _check_support(node, spec, kinds)
        return True

    assert _plain_support(by_id, kinds) == (outcome(per_node)[0] == "ok")


def test_canonical_args_is_json_dumps_sorted_and_compact() -> None:
    args = {"b": [1, 2.5, None], "a": {"z": "é\n", "y": True}}
    assert canonical_args(args) == json.dumps(args, sort_keys=True, separators=(",", ":"),
                                              ensure_ascii=False, allow_nan=False)
    with pytest.raises(InvalidInputError):
        canonical_args({"x": float("nan")})
    with pytest.raises(InvalidInputError):
        canonical_args({"x": "\ud800"})
    with pytest.raises(InvalidInputError):
        canonical_args({"x": "é" * (validation.MAX_ARGS_BYTES // 2)})
