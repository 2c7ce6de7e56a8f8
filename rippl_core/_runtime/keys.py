"""The names of the Redis keys and channels Rippl keeps beside a tenant's graph.

Every key that belongs to a tenant is named here and nowhere else.
"""

from __future__ import annotations


def version_key(graph: str) -> str:
    """The counter every commit to `graph` bumps: writers WATCH it (optimistic concurrency)."""
    return f"rippl:{graph}:version"


def schema_key(graph: str) -> str:
    """The marker recording which schema version `graph`'s indexes and constraints are at."""
    return f"{graph}:schema" if graph.startswith("rippl:") else f"rippl:{graph}:schema"


def events_channel(graph: str) -> str:
    """The pub/sub channel carrying the graph's status-change events."""
    return f"rippl:{graph}:events"


def companion_graph(graph: str, name: str) -> str:
    """A graph kept beside the tenant's graph for framework state (e.g. LangGraph checkpoints)."""
    return f"rippl:{graph}:{name}"


def tenant_pattern(graph: str) -> str:
    """The SCAN pattern of the plain keys Rippl keeps beside a graph (version, schema marker...)."""
    escaped = "".join(f"\\{c}" if c in "\\*?[]" else c for c in graph)
    return f"rippl:{escaped}:*"
