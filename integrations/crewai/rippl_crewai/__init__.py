"""Rippl for CrewAI: record what every tool call of a crew rests on (provenance capture), veto a call
whose premises were retracted, and keep a crew's memory in the claim graph.

- `register_rippl_hooks(rippl)` / `with rippl_guard(rippl): crew.kickoff()`: each task of a
  kickoff is a run (the kickoff their scope: a task's output quoted by a later task hands its
  premises over); each model turn with tool calls a decision resting on what the messages of the
  model's input carry, each call an action, each execution and its output recorded
  (`capture=False`: declared actions only); a fail-closed `PRE_TOOL_CALL` guard, with the veto's
  reason and trail shown to the agent; a repeat of a vetoed call stays vetoed; `tool_settings=`
  (repeat scope, freshness, reads) per tool.
- `GuardedTool` / `guard_tools(tools, rippl)`: the same check inside the tool's own run, for the
  paths that bypass hooks (direct `tool.run()`, flow tool actions).
- `CheckPremisesTool(rippl)`: a tool the agent calls to ask whether an action is still safe.
- `RipplStorage(rippl)`: CrewAI's memory `StorageBackend` over the claim graph; retracted claims
  are never recalled, a recall in a task is an observation of its run, and `storage.as_of(t)`
  recalls the past.
"""

from importlib import metadata as _metadata

from rippl_crewai._guard import VETO_PREFIX, check_call, veto_text
from rippl_crewai.hooks import Execution, RipplHooks, register_rippl_hooks, rippl_guard
from rippl_crewai.runs import run_id
from rippl_crewai.storage import RipplStorage, to_memory, to_record
from rippl_crewai.tools import CheckPremisesTool, GuardedTool, guard_tools

try:
    __version__ = _metadata.version("rippl-crewai")
except _metadata.PackageNotFoundError:  # a source tree that is not installed
    __version__ = "0+unknown"

__all__ = [
    "VETO_PREFIX",
    "CheckPremisesTool",
    "Execution",
    "GuardedTool",
    "RipplHooks",
    "RipplStorage",
    "check_call",
    "guard_tools",
    "register_rippl_hooks",
    "rippl_guard",
    "run_id",
    "to_memory",
    "to_record",
    "veto_text",
]
