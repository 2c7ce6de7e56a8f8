"""Rippl: causal and temporal memory for agents, on FalkorDB.

Open a graph, record what each decision rests on, and check a tool call before it runs:

    >>> from rippl_core import Rippl
    >>> with Rippl.open() as rippl:
    ...     rippl.guard("ACT-001")   # raises PremiseRetractedError if a premise was retracted
"""

from rippl_core.client import AsyncRippl, Rippl
from rippl_core.errors import (
    ConflictError,
    DatabaseError,
    InvalidInputError,
    NotFoundError,
    PremiseRetractedError,
    ReviewError,
    RipplError,
    UnavailableError,
)
from rippl_core.models import (
    Blocker,
    LoadReport,
    Node,
    Policy,
    Reached,
    Stats,
    ToolCall,
    Transition,
    Verdict,
    Wave,
)
from rippl_core.temporal_models import Belief, BeliefChange, StatusChange, WhatIf, WhatIfRetracted
from rippl_core.vocabulary import Kind, State

__all__ = [
    "AsyncRippl",
    "Belief",
    "BeliefChange",
    "Blocker",
    "ConflictError",
    "DatabaseError",
    "InvalidInputError",
    "Kind",
    "LoadReport",
    "Node",
    "NotFoundError",
    "Policy",
    "PremiseRetractedError",
    "Reached",
    "ReviewError",
    "Rippl",
    "RipplError",
    "State",
    "Stats",
    "StatusChange",
    "ToolCall",
    "Transition",
    "UnavailableError",
    "Verdict",
    "Wave",
    "WhatIf",
    "WhatIfRetracted",
]
