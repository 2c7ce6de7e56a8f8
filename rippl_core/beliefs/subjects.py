"""Who holds beliefs, and about what: the agents and topics of the belief memory.

Sans-IO operations with their Cypher builders (`Rippl.agents`, `Rippl.topics`). Used by memory
adapters that must enumerate namespaces (LangGraph's `BaseStore.list_namespaces`, searches across agents).
"""

from __future__ import annotations

from rippl_core._runtime.op import Op
from rippl_core._runtime.validation import check_id
from rippl_core._runtime.wire import Query
from rippl_core.beliefs import cypher

AGENTS = Query("MATCH (a:Agent) RETURN a.id ORDER BY a.id", read_only=True)


def topics_query(agent: str) -> Query:
    """Every topic the agent ever recorded a belief about (the agent index of BELIEVES edges)."""
    return Query(f"MATCH ()-[r:{cypher.BELIEVES}]->() WHERE r.agent = $agent "
                 "RETURN DISTINCT r.topic ORDER BY r.topic", {"agent": agent}, read_only=True)


def agents() -> Op[list[str]]:
    """Every agent that ever recorded a belief, sorted."""
    rows = yield AGENTS
    return [row[0] for row in rows]


def topics(agent: str) -> Op[list[str]]:
    """Every topic `agent` ever recorded a belief about, sorted (current or not)."""
    agent = check_id(agent, what="agent")
    rows = yield topics_query(agent)
    return [row[0] for row in rows]
