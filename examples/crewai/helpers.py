"""What the CrewAI stories share: the fleet they act on and the command line (both the same in
every framework, in ../common), a real model for `--live`, how a story prints what a crew did:
each call with Rippl's verdict, and a scripted turn while which the world moves on.

The stories' models are scripted (`rippl_crewai.testing.ScriptedLLM`, native function calling):
each turn is what a tool-calling model would answer. `--live [MODEL]` puts a real model in their
place: CrewAI's `LLM` on Groq's OpenAI-compatible API (`GROQ_API_KEY`). CrewAI's telemetry and
tracing are off (they are read when a crew runs, and need the network).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crewai import LLM, BaseLLM
from crewai.events.event_listener import event_listener
from rippl_crewai import RipplHooks

from rippl_core import Rippl, Verdict

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # the frameworks' shared part
import command
import fleet

__all__ = ["LIVE", "Follow", "fleet", "live_model", "main", "options", "retracted_meanwhile", "say"]

for _name, _value in (("CREWAI_DISABLE_TELEMETRY", "true"), ("OTEL_SDK_DISABLED", "true"),
                      ("CREWAI_TRACING_ENABLED", "false")):
    os.environ.setdefault(_name, _value)

event_listener.formatter.verbose = False  # the stories print themselves
# a task's callback is a closure here, as in most crews: nothing is checkpointed
warnings.filterwarnings("ignore", message=".* callbacks cannot be serialized")

LIVE = "llama-3.3-70b-versatile"  # --live without a model name: Groq's, through its OpenAI API
GROQ = "https://api.groq.com/openai/v1"
options = command.options


def live_model(name: str) -> BaseLLM:
    """A real model on Groq, through CrewAI's LLM; a clear exit if the key is missing."""
    key = os.environ.get("GROQ_API_KEY")
    if not key:
        raise SystemExit(f"--live {name}: set GROQ_API_KEY (a Groq key)")
    return LLM(model=f"openai/{name}", base_url=GROQ, api_key=key, temperature=0)


def main(story: Callable[..., object], doc: str | None, argv: Sequence[str] | None = None, *,
         live: bool = False) -> None:
    """Tell `story` from the command line (see ../common/command.py)."""
    command.main(story, doc, argv, live=LIVE if live else None, model=live_model)


class Follow:
    """Prints each call the crew made since it was last called, with Rippl's verdict (a veto with
    its reason and trail: what the model reads). Give it as an agent's `step_callback` to follow
    the agent step by step."""

    def __init__(self, hooks: RipplHooks) -> None:
        self.hooks, self.shown = hooks, 0

    def __call__(self, *_: object) -> None:
        for verdict in list(self.hooks.verdicts)[self.shown:]:
            say(verdict)
        self.shown = len(self.hooks.verdicts)


def say(verdict: Verdict) -> None:
    """One call and its verdict, as the story shows it."""
    call = verdict.tool_call
    label = f"{call.name}({', '.join(f'{k}={v}' for k, v in call.args.items())})" if call \
        else str(verdict.target)
    if verdict.allowed:
        print(f"  {label}: allowed")
    else:
        print(f"  {label}: VETOED\n      " + verdict.explain().replace("\n", "\n      "))


def retracted_meanwhile(rippl: Rippl, then: list[dict[str, Any]]) -> Callable[[object], object]:
    """A scripted turn: while the model thinks, the replica monitor finds the shard 09 reading
    stale and a person approves its retraction (`fleet.retract_stale_reading`); then the model
    answers `then` (a `native_call`), not knowing."""
    def turn(_: object) -> object:
        fleet.retract_stale_reading(rippl)
        return then
    return turn
