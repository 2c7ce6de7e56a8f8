"""Rippl for LangGraph: veto tool calls whose premises were retracted, checkpoint graphs in
FalkorDB, and give agents a belief memory that travels in time with their checkpoints.

Three ways to guard a graph:

- `add_preflight(builder, memory=rippl)` / `preflight_node(rippl)`: a node between the model and the
  ToolNode (partial vetoes, optional human review with `interrupt()`);
- `guarded_tool_node(tools, rippl)`: a ToolNode that checks each call itself;
- `RipplMiddleware(rippl)` for `langchain.agents.create_agent` (the `langchain` extra).

All three capture the run by default (`rippl_langgraph.capture`): the tool results and Rippl
memory reads of a thread are observations, each AI message with tool calls a decision resting on
those still in the model's input, each call an action judged again just before it runs, each
execution recorded; a retraction of anything the run read vetoes the calls resting on it, and
`Rippl.compensations()` lists those already executed.

Checkpoints: `FalkorDBSaver` / `AsyncFalkorDBSaver`. Long-term memory: `RipplStore` (beliefs with
valid and transaction time; `beliefs_at_checkpoint(config)` agrees with `get_state_history`;
`premises_at_checkpoint(config)` shows what each step's turn rested on).
"""

from __future__ import annotations

from importlib import metadata as _metadata
from typing import TYPE_CHECKING, Any

from rippl_langgraph.capture import GraphCapture, run_id
from rippl_langgraph.checkpoint import AsyncFalkorDBSaver, FalkorDBSaver
from rippl_langgraph.guard import VETO_PREFIX, Guard, Outcome, veto_message, veto_text
from rippl_langgraph.preflight import add_preflight, pending_calls, preflight_node
from rippl_langgraph.store import RipplStore, StepPremises
from rippl_langgraph.toolnode import guarded_tool_node, tool_call_wrappers
from rippl_langgraph.tools import retraction_tool

try:
    __version__ = _metadata.version("rippl-langgraph")
except _metadata.PackageNotFoundError:  # a source tree that is not installed
    __version__ = "0+unknown"

if TYPE_CHECKING:
    from rippl_langgraph.middleware import RipplMiddleware

__all__ = [
    "VETO_PREFIX",
    "AsyncFalkorDBSaver",
    "FalkorDBSaver",
    "GraphCapture",
    "Guard",
    "Outcome",
    "RipplMiddleware",
    "RipplStore",
    "StepPremises",
    "add_preflight",
    "guarded_tool_node",
    "pending_calls",
    "preflight_node",
    "retraction_tool",
    "run_id",
    "tool_call_wrappers",
    "veto_message",
    "veto_text",
]


def __getattr__(name: str) -> Any:
    if name == "RipplMiddleware":  # imported lazily: it needs the optional langchain package
        from rippl_langgraph.middleware import RipplMiddleware

        return RipplMiddleware
    raise AttributeError(f"module 'rippl_langgraph' has no attribute {name!r}")
