"""Pictures of the graph: a blast radius as a rich tree, Mermaid or Graphviz DOT."""

from __future__ import annotations

from collections.abc import Sequence

from rich.tree import Tree

from rippl_core.models import Node, Reached
from rippl_core.vocabulary import State

STATE_STYLE = {State.IN: "green", State.AT_RISK: "yellow", State.OUT: "red"}
_MERMAID_CLASS = {State.IN: "in", State.AT_RISK: "risk", State.OUT: "out"}
_DOT_COLOR = {State.IN: "palegreen", State.AT_RISK: "gold", State.OUT: "salmon"}


def _edges(reached: Sequence[Reached]) -> list[tuple[str, str]]:
    return sorted({(r.trail[-2], r.id) for r in reached if len(r.trail) > 1})


def tree(root: Node, reached: Sequence[Reached], texts: dict[str, str] | None = None) -> Tree:
    """The blast radius as a tree along each node's trail from the root."""
    texts = texts or {}

    def title(node_id: str, kind: str, status: str, state: State) -> str:
        text = texts.get(node_id, "")
        text = f" [dim]{text[:70]}[/dim]" if text else ""
        return f"[bold]{node_id}[/bold] {kind} [{STATE_STYLE[state]}]{status}[/]{text}"

    top = Tree(title(root.id, root.kind, root.status, root.state))
    branches = {root.id: top}
    for r in sorted(reached, key=lambda r: (r.depth, r.id)):
        parent = branches.get(r.trail[-2], top)
        branches[r.id] = parent.add(title(r.id, r.kind, r.status, r.state))
    return top


def mermaid(root: Node, reached: Sequence[Reached]) -> str:
    """A Mermaid flowchart of the blast radius, coloured by state."""
    lines = ["flowchart TD"]
    nodes = [(root.id, root.kind, root.status, root.state)]
    nodes += [(r.id, r.kind, r.status, r.state) for r in reached]
    names = {node_id: f"n{i}" for i, (node_id, *_) in enumerate(nodes)}
    for node_id, kind, status, state in nodes:
        label = f"{node_id}<br/>{kind}: {status}".replace('"', "'")
        lines.append(f'    {names[node_id]}["{label}"]:::{_MERMAID_CLASS[state]}')
    lines += [f"    {names[a]} --> {names[b]}" for a, b in _edges(reached)]
    lines += ["    classDef in fill:#d4f7d4,stroke:#2a7a2a",
              "    classDef risk fill:#fff3c4,stroke:#b58900",
              "    classDef out fill:#f8d0d0,stroke:#b22222"]
    return "\n".join(lines)


def dot(root: Node, reached: Sequence[Reached]) -> str:
    """A Graphviz DOT digraph of the blast radius, coloured by state."""
    lines = ["digraph blast_radius {", "  rankdir=TB; node [shape=box, style=filled];"]
    nodes = [(root.id, root.kind, root.status, root.state)]
    nodes += [(r.id, r.kind, r.status, r.state) for r in reached]
    for node_id, kind, status, state in nodes:
        label = f"{node_id}\\n{kind}: {status}".replace('"', '\\"')
        quoted = node_id.replace('"', '\\"')
        lines.append(f'  "{quoted}" [label="{label}", fillcolor={_DOT_COLOR[state]}];')
    for a, b in _edges(reached):
        lines.append('  "{}" -> "{}";'.format(a.replace('"', '\\"'), b.replace('"', '\\"')))
    lines.append("}")
    return "\n".join(lines)
