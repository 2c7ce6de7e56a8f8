"""Fixtures of the AutoGen adapter tests. The graph fixtures (`rippl`, `arippl`, `incident`,
`backend`) come from the root conftest and run against embedded FalkorDB and a FalkorDB server."""

from __future__ import annotations

import pytest
from autogen_helpers import Ops


@pytest.fixture
def ops() -> Ops:
    return Ops()
