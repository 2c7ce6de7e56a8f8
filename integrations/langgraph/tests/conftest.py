"""Fixtures of the LangGraph adapter tests. The graph fixtures (`rippl`, `arippl`, `incident`,
`backend`) come from the root conftest and run against embedded FalkorDB and a FalkorDB server;
the savers here store checkpoints beside them and drop their checkpoint graph afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from langgraph_helpers import Ops
from rippl_langgraph import AsyncFalkorDBSaver, FalkorDBSaver

from rippl_core import AsyncRippl, Rippl


@pytest.fixture
def ops() -> Ops:
    return Ops()


@pytest.fixture
def saver(rippl: Rippl) -> Iterator[FalkorDBSaver]:
    checkpointer = FalkorDBSaver(rippl)
    yield checkpointer
    checkpointer.drop()


@pytest_asyncio.fixture(loop_scope="session")
async def asaver(arippl: AsyncRippl) -> AsyncIterator[AsyncFalkorDBSaver]:
    checkpointer = AsyncFalkorDBSaver(arippl)
    await checkpointer.setup()
    yield checkpointer
    await checkpointer.adrop()
