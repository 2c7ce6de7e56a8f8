"""The baselines Rippl is measured against, on the same data.

* The Rippl-article query: a variable-length Cypher match (`*1..N`) on the same FalkorDB graph,
  upstream from an action looking for a retracted claim, or downstream from a node for its blast
  radius. It enumerates paths, so it misses anything deeper than N and grows exponentially on
  diamonds. This is a benchmark baseline, not something Rippl runs: its text lives here, with the
  labels and relationship types of the fixed vocabulary and every value as a parameter.
* An in-process SQLite database with a recursive CTE (UNION, so each node is visited once).
* networkx (`ancestors` / `descendants`).

The structural baselines answer "is any claim upstream retracted?", which is not the same question
as Rippl's truth maintenance (a node with an alternative justification survives the retraction of
one premise), so the runner also counts how often each one agrees with Rippl's verdict.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from rippl_core._runtime.wire import Query, parse
from rippl_core.vocabulary import CAUSAL_RELS


class TimedOut(Exception):
    """A query ran past its time limit and was aborted by the server."""


def article_upstream(node_id: str, depth: int = 5) -> Query:
    """The article's check: a retracted claim within `depth` hops upstream of the node.

    The filter comes after a WITH so that FalkorDB starts from the node's id index and walks
    upstream (see `article_upstream_literal`)."""
    return Query(f"MATCH (c:Claim)-[:{CAUSAL_RELS}*1..{int(depth)}]->(:Node {{id: $id}}) "
                 "WITH c WHERE c.retracted = true RETURN c.id LIMIT 1", {"id": node_id},
                 read_only=True)


def article_upstream_literal(node_id: str, depth: int = 5) -> Query:
    """The same query with the filter inside the MATCH, as the article writes it: FalkorDB 4.22
    then plans a scan of every claim, so its cost grows with the graph."""
    return Query(f"MATCH (c:Claim)-[:{CAUSAL_RELS}*1..{int(depth)}]->(:Node {{id: $id}}) "
                 "WHERE c.retracted = true RETURN c.id LIMIT 1", {"id": node_id}, read_only=True)


def article_downstream(node_id: str, depth: int = 5) -> Query:
    """The article's blast radius: distinct nodes within `depth` hops downstream."""
    return Query(f"MATCH (:Node {{id: $id}})-[:{CAUSAL_RELS}*1..{int(depth)}]->(d:Node) "
                 "RETURN collect(DISTINCT d.id)", {"id": node_id}, read_only=True)


def run_query(client: redis.Redis, graph: str, query: Query, *, timeout_ms: int | None = None
              ) -> list[tuple[Any, ...]]:
    """Run a read-only query, aborted by the server after `timeout_ms` (raises TimedOut)."""
    args: list[Any] = ["GRAPH.RO_QUERY", graph, query.command(), "--compact"]
    if timeout_ms is not None:  # Rippl's clients wait RIPPL_QUERY_TIMEOUT (120 s) for a reply
        args += ["TIMEOUT", int(timeout_ms)]
    try:
        return parse(client.execute_command(*args))
    except redis.ResponseError as exc:
        if "timed out" in str(exc).lower() or "timeout" in str(exc).lower():
            raise TimedOut(str(exc)) from None
        raise


class SqliteGraph:
    """The same graph in an in-process SQLite database: nodes(id, kind, retracted), edges."""

    UP = ("WITH RECURSIVE up(id) AS (SELECT src FROM edges WHERE dst = ? "
          "UNION SELECT e.src FROM edges e JOIN up ON e.dst = up.id) "
          "SELECT n.id FROM up JOIN nodes n ON n.id = up.id WHERE n.retracted = 1 LIMIT 1")
    DOWN = ("WITH RECURSIVE down(id) AS (SELECT dst FROM edges WHERE src = ? "
            "UNION SELECT e.dst FROM edges e JOIN down ON e.src = down.id) SELECT id FROM down")

    def __init__(self, kinds: dict[str, str], edges: Iterable[tuple[str, str]]) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.executescript(
            "CREATE TABLE nodes (id TEXT PRIMARY KEY, kind TEXT NOT NULL, "
            "retracted INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
            "CREATE TABLE edges (src TEXT NOT NULL, dst TEXT NOT NULL);")
        self.db.executemany("INSERT INTO nodes (id, kind) VALUES (?, ?)", kinds.items())
        self.db.executemany("INSERT INTO edges VALUES (?, ?)", edges)
        self.db.executescript("CREATE INDEX edges_dst ON edges (dst, src);"
                              "CREATE INDEX edges_src ON edges (src, dst);")
        self.db.commit()

    def retract(self, ids: Sequence[str]) -> None:
        self.db.executemany("UPDATE nodes SET retracted = 1 WHERE id = ?", [(i,) for i in ids])
        self.db.commit()

    def blocked(self, node_id: str) -> bool:
        """Whether any node upstream (at any depth) is retracted."""
        return self.db.execute(self.UP, (node_id,)).fetchone() is not None

    def downstream(self, node_id: str) -> set[str]:
        return {row[0] for row in self.db.execute(self.DOWN, (node_id,))}

    def close(self) -> None:
        self.db.close()


@dataclass
class NetworkxGraph:
    """The same graph as a networkx DiGraph, with the retracted set beside it."""

    graph: Any
    retracted: set[str]

    @classmethod
    def build(cls, kinds: dict[str, str], edges: Iterable[tuple[str, str]]) -> NetworkxGraph:
        import networkx as nx

        graph = nx.DiGraph()
        graph.add_nodes_from(kinds)
        graph.add_edges_from(edges)
        return cls(graph, set())

    def blocked(self, node_id: str) -> bool:
        import networkx as nx

        return not self.retracted.isdisjoint(nx.ancestors(self.graph, node_id))

    def downstream(self, node_id: str) -> set[str]:
        import networkx as nx

        return set(nx.descendants(self.graph, node_id))
