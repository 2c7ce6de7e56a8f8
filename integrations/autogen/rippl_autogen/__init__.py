"""Rippl for AutoGen 0.7: record what every agent call rests on as it happens (provenance
capture), veto tool calls whose premises were retracted, and give agents a memory of what they
believe, when, and why.

- `RipplModelClient(client, rippl)`: wraps an agent's model client; records each model turn with
  tool calls as a decision resting on exactly what the model saw.
- `RipplWorkbench(inner, rippl)`: AgentChat, wraps any Workbench (`AssistantAgent(workbench=...)`);
  judges each call as it runs and records its execution and output.
- `guard_tools(tools, rippl)` / `GuardedTool`: for code passing `tools=[...]`.
- `RipplInterventionHandler(rippl)`: Core API, for `FunctionCall`s sent to tool agents.
- `RipplMemory(rippl, agent=...)`: an `autogen_core.memory.Memory` over the belief graph; what it
  injects is an observation of the run.
- `register_rippl(agent_or_team, rippl, run=...)`: all of the above on existing agents, in one line.
- `RunScope`: how a run is named, and which runs share a scope (a team, its nested teams, the
  agents a guarded call runs as a tool): what one hands another carries its premises with it.
- `tool_settings=` (every hook): per tool `ToolSettings` (`repeat_scope`, `fresh_for`, `reads`),
  also read from a tool object's `metadata` under "rippl".
"""

from importlib import metadata as _metadata

from rippl_autogen.connection import RipplConnection
from rippl_autogen.guard import Guard, GuardConfig
from rippl_autogen.intervention import RipplInterventionHandler, ToolVetoedException
from rippl_autogen.memory import RipplMemory, RipplMemoryConfig
from rippl_autogen.model import RipplModelClient, RipplModelClientConfig
from rippl_autogen.register import assistant_agents, register_rippl
from rippl_autogen.runs import RunScope
from rippl_autogen.tools import GuardedStreamTool, GuardedTool, ToolVetoedError, guard_tools
from rippl_autogen.workbench import RipplStreamWorkbench, RipplWorkbench

try:
    __version__ = _metadata.version("rippl-autogen")
except _metadata.PackageNotFoundError:  # a source tree that is not installed
    __version__ = "0+unknown"

__all__ = [
    "Guard",
    "GuardConfig",
    "GuardedStreamTool",
    "GuardedTool",
    "RipplConnection",
    "RipplInterventionHandler",
    "RipplMemory",
    "RipplMemoryConfig",
    "RipplModelClient",
    "RipplModelClientConfig",
    "RipplStreamWorkbench",
    "RipplWorkbench",
    "RunScope",
    "ToolVetoedError",
    "ToolVetoedException",
    "assistant_agents",
    "guard_tools",
    "register_rippl",
]
