"""What the console shows beyond the core's own models: the graph as nodes and edges (whole or
around a node), and the preview of a pending review (what would go OUT, what survives)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from rippl_core.client import AsyncRippl
from rippl_core.errors import ReviewError
from rippl_core.models import Node, ReviewItem
from rippl_core.vocabulary import State

PREVIEW_LIMIT = 500  # nodes listed per side of a preview (the counts are always exact)


class _Model(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)


class NodeBrief(_Model):
    """A node as the explorer draws it."""

    id: str
    kind: str
    text: str
    state: State
    status: str
    retracted: bool = False
    pending_reviews: int = 0
    executed: bool = False
    tool: str | None = None

    @classmethod
    def of(cls, node: Node) -> NodeBrief:
        return cls(id=node.id, kind=node.kind.value, text=node.text, state=node.state,
                   status=node.status, retracted=node.retracted,
                   pending_reviews=node.pending_reviews, executed=node.executed_at is not None,
                   tool=node.tool)


class Edge(_Model):
    """A support edge: `source` is a premise of `target` in its justification number `group`."""

    source: str
    target: str
    group: int


class GraphView(_Model):
    """Nodes and the edges among them. `truncated`: the graph has more than `limit` nodes (focus
    on a node to see its neighbourhood)."""

    nodes: list[NodeBrief]
    edges: list[Edge]
    total: int
    truncated: bool
    focus: str | None = None


def graph_view(nodes: Sequence[Node], *, total: int, limit: int, focus: str | None = None) -> GraphView:
    shown = list(nodes[:limit])
    ids = {n.id for n in shown}
    edges = [Edge(source=a, target=n.id, group=i) for n in shown
             for i, just in enumerate(n.justifications) for a in just if a in ids]
    return GraphView(nodes=[NodeBrief.of(n) for n in shown], edges=edges, total=total,
                     truncated=len(nodes) > limit, focus=focus)


async def whole_graph(rippl: AsyncRippl, limit: int) -> GraphView:
    stats = await rippl.stats()
    nodes = await rippl.nodes(limit=limit + 1)
    return graph_view(nodes, total=sum(stats.nodes.values()), limit=limit)


async def neighbourhood(rippl: AsyncRippl, node_id: str, depth: int, limit: int) -> GraphView:
    """The node, what it rests on and what rests on it, up to `depth` steps each way."""
    up = await rippl.premises(node_id, max_depth=depth)
    down = await rippl.blast_radius(node_id, max_depth=depth)
    ids = list(dict.fromkeys([node_id, *(r.id for r in up), *(r.id for r in down)]))
    nodes = await rippl.nodes(ids, limit=limit + 1)
    return graph_view(nodes, total=len(ids), limit=limit, focus=node_id)


class Survivor(_Model):
    """A node downstream of the claim that keeps a justification without it."""

    node: NodeBrief
    through: list[str] = Field(description="The antecedents of the justification that still holds.")


class Preview(_Model):
    """What approving a pending review would do: `out` would go OUT (the claim included);
    `survives` rest on the claim but keep another justification. For a retraction by provenance,
    `out` starts with the sources it covers and `survives` are the claims they support that
    another source keeps IN (the union is the whole preview). Approving an override changes no
    state: `overridden` lists the retracted premises its call runs despite, once."""

    review: ReviewItem
    downstream: int
    out_count: int
    survives_count: int
    out: list[NodeBrief]
    survives: list[Survivor]
    overridden: list[NodeBrief] = Field(
        default_factory=list,
        description="An override: the retracted premises the call would run despite, once.")


def _holding(node: Node, gone: set[str], states: dict[str, State]) -> list[str]:
    for just in node.justifications:
        if all(a not in gone and states.get(a, State.IN) is not State.OUT for a in just):
            return just
    return []


async def _briefs(rippl: AsyncRippl, ids: Iterable[str]) -> list[Node]:
    return await rippl.nodes(list(ids)[:PREVIEW_LIMIT])


async def preview(rippl: AsyncRippl, review_id: str) -> Preview:
    item = await rippl.review(review_id)
    if item.status != "pending":
        raise ReviewError(f"{review_id} was already {item.status}; its receipt says what it changed")
    if item.kind == "override":  # nothing changes state: one call runs despite its premises
        premises = await _briefs(rippl, item.claims or [item.claim])
        return Preview(review=item, downstream=0, out_count=0, survives_count=0, out=[],
                       survives=[], overridden=[NodeBrief.of(n) for n in premises])
    roots = item.claims if item.kind == "provenance" else [item.claim]
    what = await rippl.what_if_retracted(roots)
    gone = {t.id for t in what.transitions if t.after is State.OUT} | set(roots)
    if item.kind == "provenance":  # the sources, then what they take OUT; the matched claims kept
        out = [*roots, *sorted(gone - set(roots))]
        kept = [c for c in item.matched if c not in gone]
        below = len(gone - set(roots)) + len(kept)
    else:
        downstream = await rippl.blast_radius(item.claim)
        out = [item.claim, *sorted(gone - {item.claim})]
        kept = [r.id for r in downstream if r.id not in gone and r.state is not State.OUT]
        below = len(downstream)
    kept_nodes = await _briefs(rippl, kept)
    antecedents = {a for n in kept_nodes for just in n.justifications for a in just}
    states = {n.id: n.state for n in await rippl.nodes(sorted(antecedents))}
    return Preview(
        review=item, downstream=below, out_count=len(out), survives_count=len(kept),
        out=[NodeBrief.of(n) for n in await _briefs(rippl, out)],
        survives=[Survivor(node=NodeBrief.of(n), through=_holding(n, gone, states))
                  for n in kept_nodes])
