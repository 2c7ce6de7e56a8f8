"""Belief search shared by the memory adapters: the share of a query's content words a belief holds."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rippl_core.beliefs.models import Belief

_WORD = re.compile(r"\w+")
_STOP = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "how",
    "in", "is", "it", "its", "of", "on", "or", "so", "that", "the", "there", "this", "to", "was",
    "we", "were", "what", "when", "which", "who", "why", "will", "with", "you",
])


def content_words(text: str) -> set[str]:
    """The content words of `text` (case-folded, without the commonest English words)."""
    return {w for w in _WORD.findall(text.casefold()) if len(w) > 1 and w not in _STOP}


def score(query: str, belief: Belief) -> float:
    """The share of the query's content words found in the belief's claim text and topic (0 to 1;
    0 for a query with no content words)."""
    wanted = content_words(query)
    if not wanted:
        return 0.0
    return len(wanted & content_words(f"{belief.text} {belief.topic}")) / len(wanted)


def rank(query: str, beliefs: Sequence[Belief]) -> list[tuple[Belief, float]]:
    """Beliefs with their scores, best first (ties keep the given order). An empty query (no
    content words) keeps every belief, scored 0, in the given order."""
    scored = [(b, score(query, b)) for b in beliefs]
    return [pair for _, pair in sorted(enumerate(scored), key=lambda ip: (-ip[1][1], ip[0]))]
