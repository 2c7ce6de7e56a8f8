"""Receipt bodies are RFC 8785 (JCS) canonical: the fast path equals the reference encoder."""

from __future__ import annotations

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from rippl_core.review.receipts import canonical

ascii_keys = st.text(alphabet=st.characters(max_codepoint=127))
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ascii_keys, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(ascii_keys, values))
def test_fast_canonical_form_equals_rfc8785(body: dict[str, object]) -> None:
    assert canonical(body) == rfc8785.dumps(body)


@given(st.floats(allow_nan=False, allow_infinity=False), st.text(min_size=1))
def test_values_outside_the_fast_domain_use_the_reference_encoder(number: float, key: str) -> None:
    body = {"x": number, key: 1}
    assert canonical(body) == rfc8785.dumps(body)
