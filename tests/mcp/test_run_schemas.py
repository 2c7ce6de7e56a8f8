"""The tools' schemas a client registers are read once per stay of the run in the server's
memory; a check reading them while another request of the run registers one never loses it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rippl_core import AsyncRippl
from rippl_core.mcp.session import ClientRun, RunState

SCHEMA = {"type": "object", "properties": {"rows": {"type": "integer", "default": 100}}}


@pytest.mark.asyncio(loop_scope="session")
async def test_a_slow_read_does_not_drop_a_schema_registered_meanwhile(arippl: AsyncRippl) -> None:
    run = arippl.run("mcp:schemas-race")
    client = ClientRun(RunState(run, "token"), [])
    read = run.tool_schemas
    first = True

    async def slow_first_read() -> dict[str, dict[str, Any]]:
        nonlocal first
        found = await read()  # read before the registration below is written
        if first:
            first = False
            await asyncio.sleep(0.2)  # and answered after it
        return found

    run.tool_schemas = slow_first_read  # type: ignore[method-assign]
    await asyncio.gather(client.received("migrate", {}),
                         client.register({"migrate": SCHEMA}))
    assert await client.received("migrate", {}) == {"rows": 100}
