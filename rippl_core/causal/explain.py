"""Why a node is IN, AT_RISK or OUT: its justifications, each antecedent's status, which one holds,
and (when it does not hold) the retracted or at-risk premises underneath with their trails.

`explain(node_id)` is a read-only operation like the others (`Rippl.explain` runs it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from rippl_core._runtime.op import Op
from rippl_core._runtime.timeutil import from_ms
from rippl_core._runtime.validation import check_id
from rippl_core.causal.nodes import fetch_justifications, fetch_nodes, require_nodes
from rippl_core.causal.preflight import find_blockers
from rippl_core.models import Blocker
from rippl_core.vocabulary import Kind, State, public_status

type Standing = Literal["holds", "at_risk", "broken"]


class _Model(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)


class Antecedent(_Model):
    """One premise of a justification, with its current status."""

    id: str
    kind: Kind
    state: State
    status: str
    text: str


class Justification(_Model):
    """One way a node is supported: every antecedent is needed.

    `standing` is `holds` when every antecedent is IN, `at_risk` when none is OUT but one is
    AT_RISK (a retraction awaits review), `broken` when one is OUT."""

    antecedents: list[Antecedent]
    standing: Standing


class Explanation(_Model):
    """Why a node has its status."""

    id: str
    kind: Kind
    state: State
    status: str
    text: str
    premise: bool = Field(description="True when nothing supports the node but itself.")
    retracted: bool
    retracted_by: str | None = None
    retracted_reason: str | None = None
    retracted_at: str | None = None
    pending_reviews: int = 0
    justifications: list[Justification] = Field(default_factory=list)
    holding: list[int] = Field(default_factory=list,
                               description="Indexes (0-based) of the justifications that hold.")
    blockers: list[Blocker] = Field(default_factory=list,
                                    description="Retracted or at-risk premises underneath, each "
                                                "with its trail up to this node.")
    summary: str = Field(description="The explanation in plain words.")


def _standing(antecedents: list[Antecedent]) -> Standing:
    states = {a.state for a in antecedents}
    if State.OUT in states:
        return "broken"
    return "at_risk" if State.AT_RISK in states else "holds"


def _status(props: Mapping[str, Any]) -> str:
    return public_status(Kind(props["kind"]), State(props["state"]), props.get("executed_at") is not None)


def explain(node_id: str) -> Op[Explanation]:
    """Why `node_id` is IN, AT_RISK or OUT (read-only)."""
    node_id = check_id(node_id, what="node id")
    found = yield from require_nodes([node_id], what="node")
    props = found[node_id]
    justs, _ = yield from fetch_justifications([node_id], public=True)
    groups = justs.get(node_id, [])
    antecedent_ids = sorted({a for group in groups for a in group})
    stored = yield from fetch_nodes(antecedent_ids)
    justifications = []
    for group in groups:
        antecedents = [Antecedent(id=a, kind=Kind(stored[a]["kind"]), state=State(stored[a]["state"]),
                                  status=_status(stored[a]), text=stored[a].get("text", ""))
                       for a in group if a in stored]
        justifications.append(Justification(antecedents=antecedents, standing=_standing(antecedents)))
    state = State(props["state"])
    blockers = [] if state is State.IN else (yield from find_blockers(node_id))
    retracted_at = from_ms(props.get("retracted_at")) if props.get("retracted") else None
    explanation = Explanation(
        id=node_id, kind=Kind(props["kind"]), state=state, status=_status(props),
        text=props.get("text", ""), premise=not groups, retracted=bool(props.get("retracted")),
        retracted_by=props.get("retracted_by") if props.get("retracted") else None,
        retracted_reason=props.get("reason") if props.get("retracted") else None,
        retracted_at=retracted_at.isoformat() if retracted_at else None,
        pending_reviews=int(props.get("pending") or 0), justifications=justifications,
        holding=[i for i, j in enumerate(justifications) if j.standing == "holds"],
        blockers=blockers, summary="",
    )
    return explanation.model_copy(update={"summary": summarise(explanation)})


def _names(antecedents: list[Antecedent], *, not_in: bool = False) -> str:
    chosen = [a for a in antecedents if a.state is not State.IN] if not_in else antecedents
    return " + ".join(f"{a.id} ({a.status})" for a in chosen)


def summarise(e: Explanation) -> str:
    """The explanation in plain words, one line per reason."""
    lines = [f"{e.id} ({e.kind}) is {e.status}."]
    if e.retracted:
        who = f" by {e.retracted_by}" if e.retracted_by else ""
        why = f": {e.retracted_reason}" if e.retracted_reason else ""
        lines.append(f"It was retracted{who}{why}. Reinstate it if that was wrong.")
    elif e.pending_reviews:
        lines.append(f"A retraction of {e.id} is proposed and awaits human review "
                     f"({e.pending_reviews} pending).")
    if e.premise:
        if not e.retracted:
            lines.append("It is a premise: nothing supports it but itself, so it holds until it is "
                         "retracted.")
    else:
        for i, j in enumerate(e.justifications, 1):
            if j.standing == "holds":
                lines.append(f"Justification {i} holds: {_names(j.antecedents)}.")
            elif j.standing == "at_risk":
                lines.append(f"Justification {i} is at risk: {_names(j.antecedents, not_in=True)}.")
            else:
                lines.append(f"Justification {i} is broken: {_names(j.antecedents, not_in=True)}.")
        if e.state is State.IN and e.holding:
            lines.append(f"It holds because justification {e.holding[0] + 1} holds."
                         if len(e.holding) == 1 else
                         f"It holds because {len(e.holding)} of its justifications hold.")
        elif e.state is State.AT_RISK and not e.retracted:
            lines.append("No justification is sure to hold: if the pending retractions are approved "
                         "it goes OUT.")
        elif not e.retracted:
            lines.append("No justification holds: each rests on something retracted.")
    for b in e.blockers:
        if b.premise != e.id:
            lines.append(f"Root cause: {b.premise} is {b.status}"
                         + (f" ({b.reason})" if b.reason else "") + ": " + " -> ".join(b.trail))
    return "\n".join(lines)
