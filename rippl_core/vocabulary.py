"""The fixed vocabulary of the graph: labels, edge types, states and their public names.

Labels and relationship types in queries come only from here, never from user input. Every causal
node also carries the label `Node` (one unique id across the four kinds, one index to find any).
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """The four kinds of causal node."""

    SOURCE = "Source"
    CLAIM = "Claim"
    DECISION = "Decision"
    ACTION = "Action"


class State(StrEnum):
    """The internal truth-maintenance state materialised on every causal node."""

    IN = "IN"
    AT_RISK = "AT_RISK"
    OUT = "OUT"


PUBLIC_STATUS: dict[Kind, dict[State, str]] = {
    Kind.SOURCE: {State.IN: "Active", State.AT_RISK: "Proposed Retraction", State.OUT: "Retracted"},
    Kind.CLAIM: {State.IN: "Verified", State.AT_RISK: "Proposed Retraction", State.OUT: "Retracted"},
    Kind.DECISION: {
        State.IN: "Holding",
        State.AT_RISK: "Premise At Risk",
        State.OUT: "Premise Retracted",
    },
    Kind.ACTION: {State.IN: "Pending", State.AT_RISK: "Blocked", State.OUT: "Premise Retracted"},
}
EXECUTED = "Executed"

# (antecedent kind, consequent kind) -> relationship type. Anything else is not allowed.
EDGE_TYPES: dict[tuple[Kind, Kind], str] = {
    (Kind.SOURCE, Kind.CLAIM): "SUPPORTS",
    (Kind.CLAIM, Kind.CLAIM): "SUPPORTS",
    (Kind.CLAIM, Kind.DECISION): "SUPPORTS",
    (Kind.DECISION, Kind.DECISION): "DEPENDS_ON",
    (Kind.DECISION, Kind.ACTION): "DRIVES",
    (Kind.ACTION, Kind.ACTION): "TRIGGERS",
}
# A turn's context (`capture.cypher`): the claims its input carried, shared with the turns
# before it. A context node rests on the context it extends and on the claims it adds (CARRIES),
# and a captured decision rests on its context; truth maintenance labels it like a decision (its
# `kind`), and every public read goes through it to the claims (`is_context`).
CONTEXT, CARRIES, CONTEXT_PREFIX = "Context", "CARRIES", "CTX-"
CAUSAL_RELS = "SUPPORTS|DEPENDS_ON|DRIVES|TRIGGERS|CARRIES"
RETRACTABLE = (Kind.SOURCE, Kind.CLAIM)
ID_PREFIX = {Kind.SOURCE: "SRC", Kind.CLAIM: "CLM", Kind.DECISION: "DEC", Kind.ACTION: "ACT"}


def public_status(kind: Kind, state: State, executed: bool = False) -> str:
    """The public status name of a node of `kind` in `state`."""
    if kind is Kind.ACTION and state is State.IN and executed:
        return EXECUTED
    return PUBLIC_STATUS[kind][state]


def is_context(node_id: str) -> bool:
    """Whether a node is a turn's context (internal: reads go through it to its claims)."""
    return node_id.startswith(CONTEXT_PREFIX)


def edge_type(antecedent: Kind, consequent: Kind) -> str | None:
    """The relationship type from `antecedent` to `consequent`, or None when the model forbids it."""
    return EDGE_TYPES.get((antecedent, consequent))
