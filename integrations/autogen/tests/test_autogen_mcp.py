"""RipplWorkbench around a real McpWorkbench (an MCP server over stdio, in a subprocess)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_core.tools import Workbench
from autogen_ext.tools.mcp import McpWorkbench, StdioServerParams
from autogen_helpers import call, calls, replay, results_of
from rippl_autogen import RipplWorkbench

from rippl_core import AsyncRippl, Rippl

pytestmark = pytest.mark.asyncio(loop_scope="session")

SERVER = textwrap.dedent('''
    import sys
    from rippl_core.mcp.sdk import Server  # the installed SDK's server, mcp 2.x or 1.x

    LOG = sys.argv[1]
    mcp = Server("ops")

    @mcp.tool()
    def migrate_tables(table: str, shard: str) -> str:
        """Copy a table onto a database shard."""
        with open(LOG, "a") as log:
            log.write(f"{table}->{shard}\\n")
        return f"mcp migrated {table} to shard {shard}"

    if __name__ == "__main__":
        mcp.run()
''')


def mcp_server(folder: Path) -> tuple[StdioServerParams, Path]:
    script, log = folder / "ops_server.py", folder / "calls.log"
    script.write_text(SERVER)
    log.touch()
    # AutoGen waits 5 s by default for each reply, the initialize handshake included. A server
    # started from a fresh environment (no bytecode compiled yet: `uv pip install` does not
    # compile) on a busy machine takes longer than that just to import the SDK; the client then
    # gives up and closes its stream, and the SDK's reader fails with BrokenResourceError when the
    # late reply arrives (seen in .ci/extremes). The timeout is a ceiling, not a measurement.
    return StdioServerParams(command=sys.executable, args=[str(script), str(log)],
                             read_timeout_seconds=60), log


async def test_mcp_tool_calls_are_guarded(incident: Rippl, arippl: AsyncRippl, tmp_path: Path) -> None:
    params, log = mcp_server(tmp_path)
    incident.retract("CLM-001", reason="I/O errors on shard 09", by="grafana")
    async with RipplWorkbench(McpWorkbench(params), arippl) as wb:
        agent = AssistantAgent("ops", model_client=replay(calls(
            call("migrate_tables", table="billing", shard="09"),
            call("migrate_tables", table="billing", shard="07"))), workbench=wb)
        outcomes = results_of((await agent.run(task="move billing")).messages)
        assert [o.is_error for o in outcomes] == [True, False]
        assert "CLM-001 -> DEC-001 -> ACT-001" in outcomes[0].content
        assert outcomes[1].content == "mcp migrated billing to shard 07"

        loaded = Workbench.load_component(wb.dump_component())  # the MCP config round-trips too
        assert isinstance(loaded, RipplWorkbench) and isinstance(loaded.inner, McpWorkbench)
        async with loaded:
            assert (await loaded.call_tool("migrate_tables", {"table": "billing",
                                                              "shard": "09"})).is_error
    assert log.read_text() == "billing->07\n"  # the vetoed call never reached the server
