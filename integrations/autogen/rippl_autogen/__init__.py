"""Rippl for AutoGen 0.7: veto tool calls whose premises were retracted, and give agents a memory
of what they believe, when, and why.

- `RipplWorkbench(inner, rippl)`: AgentChat, wraps any Workbench (`AssistantAgent(workbench=...)`).
- `guard_tools(tools, rippl)` / `GuardedTool`: for code passing `tools=[...]`.
- `RipplInterventionHandler(rippl)`: Core API, vetoes `FunctionCall`s sent to tool agents.
- `RipplMemory(rippl, agent=...)`: an `autogen_core.memory.Memory` over the belief graph.
- `register_rippl(agent_or_team, rippl)`: all of the above on existing agents, in one line.
"""

from rippl_autogen.connection import RipplConnection
from rippl_autogen.guard import Guard, GuardConfig
from rippl_autogen.intervention import RipplInterventionHandler, ToolVetoedException
from rippl_autogen.memory import RipplMemory, RipplMemoryConfig
from rippl_autogen.register import assistant_agents, register_rippl
from rippl_autogen.tools import GuardedStreamTool, GuardedTool, ToolVetoedError, guard_tools
from rippl_autogen.workbench import RipplStreamWorkbench, RipplWorkbench

__all__ = [
    "Guard",
    "GuardConfig",
    "GuardedStreamTool",
    "GuardedTool",
    "RipplConnection",
    "RipplInterventionHandler",
    "RipplMemory",
    "RipplMemoryConfig",
    "RipplStreamWorkbench",
    "RipplWorkbench",
    "ToolVetoedError",
    "ToolVetoedException",
    "assistant_agents",
    "guard_tools",
    "register_rippl",
]
