"""Pictures of the graph: a blast radius as a rich tree, Mermaid or Graphviz DOT.

Ids and texts are data: in DOT they appear only inside labels (the node names are n0, n1, ...),
escaped by `dot_text`; in Mermaid every character outside a small safe set becomes an entity code
(`mermaid_text`), so any id gives a valid diagram that shows it as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rippl_core.cli.app import styled
from rippl_core.vocabulary import State

if TYPE_CHECKING:
    from rich.text import Text
    from rich.tree import Tree

    from rippl_core.models import Node, Reached

STATE_STYLE = {State.IN: "green", State.AT_RISK: "yellow", State.OUT: "red"}
_MERMAID_CLASS = {State.IN: "in", State.AT_RISK: "risk", State.OUT: "out"}
_DOT_COLOR = {State.IN: "palegreen", State.AT_RISK: "gold", State.OUT: "salmon"}

# Characters a Mermaid label, task name or title may hold as they are: none of them opens,
# closes or separates anything in any diagram type (no quotes, brackets, colon, semicolon, hash,
# ampersand, angle brackets, pipe, backtick or backslash).
_MERMAID_SAFE = re.compile(r"[A-Za-z0-9 \-_.,/]")


def mermaid_text(text: str) -> str:
    """`text` for a Mermaid diagram: every other character as an entity code (`#35;` for `#`),
    which Mermaid shows as the character itself. Line breaks become spaces."""
    return "".join(c if _MERMAID_SAFE.fullmatch(c) else " " if c in "\r\n" else f"#{ord(c)};"
                   for c in text)


def dot_text(text: str) -> str:
    """`text` inside a double-quoted DOT label: backslashes and quotes escaped (so `\\N`, `\\G`
    and a trailing backslash stay literal), `&` as `&amp;` (Graphviz decodes entities in labels),
    line breaks as `\\n`, other control characters as spaces."""
    escaped = text.replace("&", "&amp;").replace("\\", "\\\\").replace('"', '\\"')
    return "".join("\\n" if c == "\n" else " " if ord(c) < 32 or ord(c) == 127 else c
                   for c in escaped)


def _edges(reached: Sequence[Reached]) -> list[tuple[str, str]]:
    return sorted({(r.trail[-2], r.id) for r in reached if len(r.trail) > 1})


def _nodes(root: Node, reached: Sequence[Reached]) -> list[tuple[str, str, str, State]]:
    return [(root.id, root.kind, root.status, root.state),
            *[(r.id, r.kind, r.status, r.state) for r in reached]]


def tree(root: Node, reached: Sequence[Reached], texts: dict[str, str] | None = None) -> Tree:
    """The blast radius as a tree along each node's trail from the root."""
    from rich.tree import Tree

    texts = texts or {}

    def title(node_id: str, kind: str, status: str, state: State) -> Text:
        text = texts.get(node_id, "")
        if text:
            return styled(f"[bold]{{}}[/bold] {{}} [{STATE_STYLE[state]}]{{}}[/] [dim]{{}}[/dim]",
                          node_id, kind, status, text[:70])
        return styled(f"[bold]{{}}[/bold] {{}} [{STATE_STYLE[state]}]{{}}[/]", node_id, kind, status)

    top = Tree(title(root.id, root.kind, root.status, root.state))
    branches = {root.id: top}
    for r in sorted(reached, key=lambda r: (r.depth, r.id)):
        parent = branches.get(r.trail[-2], top)
        branches[r.id] = parent.add(title(r.id, r.kind, r.status, r.state))
    return top


def mermaid(root: Node, reached: Sequence[Reached]) -> str:
    """A Mermaid flowchart of the blast radius, coloured by state."""
    lines = ["flowchart TD"]
    nodes = _nodes(root, reached)
    names = {node_id: f"n{i}" for i, (node_id, *_) in enumerate(nodes)}
    for node_id, kind, status, state in nodes:
        label = f"{mermaid_text(node_id)}<br/>{mermaid_text(f'{kind} - {status}')}"
        lines.append(f'    {names[node_id]}["{label}"]:::{_MERMAID_CLASS[state]}')
    lines += [f"    {names[a]} --> {names[b]}" for a, b in _edges(reached)]
    lines += ["    classDef in fill:#d4f7d4,stroke:#2a7a2a",
              "    classDef risk fill:#fff3c4,stroke:#b58900",
              "    classDef out fill:#f8d0d0,stroke:#b22222"]
    return "\n".join(lines)


def dot(root: Node, reached: Sequence[Reached]) -> str:
    """A Graphviz DOT digraph of the blast radius, coloured by state."""
    lines = ["digraph blast_radius {", "  rankdir=TB; node [shape=box, style=filled];"]
    nodes = _nodes(root, reached)
    names = {node_id: f"n{i}" for i, (node_id, *_) in enumerate(nodes)}
    for node_id, kind, status, state in nodes:
        label = f"{dot_text(node_id)}\\n{dot_text(f'{kind}: {status}')}"
        lines.append(f'  {names[node_id]} [label="{label}", fillcolor={_DOT_COLOR[state]}];')
    lines += [f"  {names[a]} -> {names[b]};" for a, b in _edges(reached)]
    lines.append("}")
    return "\n".join(lines)
