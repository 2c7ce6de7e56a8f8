"""The chain rule of `capture.chains`, against a plain reference: each turn's context holds
exactly its claims, counts them, and stores only what the context before it lacked."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from rippl_core.capture.chains import Turn, chain, context_id

CLAIMS = st.frozensets(st.sampled_from([f"CLM-{i}" for i in range(8)]), max_size=6)


def _leaves(links: dict[str, tuple[str, ...]], context: str) -> set[str]:
    out: set[str] = set()
    for item in links[context]:
        out |= _leaves(links, item) if item in links else {item}
    return out


@settings(max_examples=int(os.environ.get("RIPPL_EXAMPLES", "200")), deadline=None)
@given(st.lists(CLAIMS, max_size=12))
def test_each_context_holds_its_turns_claims_and_stores_what_is_new(sets: list[frozenset[str]]
                                                                   ) -> None:
    turns = [Turn(f"DEC-{i}", "IN", i, claims) for i, claims in enumerate(sets)]
    links = chain(turns)
    carries = {link.context: link.carries for link in links}
    for i, link in enumerate(links):
        assert link.context == context_id(turns[i].decision)
        assert _leaves(carries, link.context) == set(turns[i].claims)
        assert link.size == len(turns[i].claims)
        extends = i > 0 and sets[i - 1] <= sets[i]
        if extends:  # the one before it, and the claims it lacked
            base = links[i - 1]
            assert link.carries == (*sorted(sets[i] - sets[i - 1]), base.context)
            assert (link.chain, link.seq) == (base.chain, base.seq + 1)
        else:
            assert link.carries == tuple(sorted(sets[i])) and (link.chain, link.seq) == (link.context, 1)


def test_a_growing_conversation_stores_each_claim_once() -> None:
    sets = [frozenset(f"CLM-{j}" for j in range(i + 1)) for i in range(100)]
    links = chain([Turn(f"DEC-{i}", "IN", i, s) for i, s in enumerate(sets)])
    assert sum(len(link.carries) for link in links) == 100 + 99  # a claim each, and the link back
    assert {link.chain for link in links} == {links[0].context}
