"""Who holds beliefs, and about what: the agents and topics of the belief memory.

Sans-IO operations with their Cypher builders, and the one-line mixins `SubjectMethods` /
`AsyncSubjectMethods` on the handles. Used by memory adapters that must enumerate namespaces
(LangGraph's `BaseStore.list_namespaces`, searches across agents).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rippl_core import temporal_queries as tq
from rippl_core.engine import Op
from rippl_core.validation import check_id
from rippl_core.wire import Query

if TYPE_CHECKING:
    from rippl_core.driver import AsyncDriver, SyncDriver

AGENTS = Query("MATCH (a:Agent) RETURN a.id ORDER BY a.id", read_only=True)


def topics_query(agent: str) -> Query:
    """Every topic the agent ever recorded a belief about (the agent index of BELIEVES edges)."""
    return Query(f"MATCH ()-[r:{tq.BELIEVES}]->() WHERE r.agent = $agent "
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


class SubjectMethods:
    """`agents()` and `topics(agent)` on `Rippl`."""

    _driver: SyncDriver

    def agents(self) -> list[str]:
        """Every agent that ever recorded a belief, sorted."""
        return self._driver.run(agents)

    def topics(self, agent: str) -> list[str]:
        """Every topic the agent ever recorded a belief about, sorted."""
        return self._driver.run(lambda: topics(agent))


class AsyncSubjectMethods:
    """The asyncio twin of `SubjectMethods`."""

    _driver: AsyncDriver

    async def agents(self) -> list[str]:
        return await self._driver.run(agents)

    async def topics(self, agent: str) -> list[str]:
        return await self._driver.run(lambda: topics(agent))
