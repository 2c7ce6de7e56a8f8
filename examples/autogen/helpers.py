"""What the AutoGen stories share: the fleet they act on and the command line (both the same in
every framework, in ../common), a real model for `--live`, and how a story gives a task and prints
what the agents do, event by event.

The stories' models are scripted (`rippl_autogen.testing.ScriptedModel`): each turn is what a
tool-calling model would answer. `--live [MODEL]` puts a real model in their place: AutoGen's
OpenAI-compatible client on Groq (`pip install "autogen-ext[openai]"` and `GROQ_API_KEY`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from autogen_agentchat.base import TaskRunner
from autogen_agentchat.messages import (
    HandoffMessage,
    MemoryQueryEvent,
    TextMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)
from autogen_core.models import ChatCompletionClient, ModelFamily, ModelInfo

from rippl_core.adapters import VETO_PREFIX

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # the frameworks' shared part
import command
import fleet

__all__ = ["LIVE", "ask", "fleet", "follow", "live_model", "main", "options"]

LIVE = "llama-3.3-70b-versatile"  # --live without a model name: Groq's, through its OpenAI API
GROQ = "https://api.groq.com/openai/v1"
options = command.options


def live_model(name: str) -> ChatCompletionClient:
    """A real model on Groq, through AutoGen's OpenAI-compatible client; a clear exit saying what
    is missing otherwise."""
    key = os.environ.get("GROQ_API_KEY")
    if not key:
        raise SystemExit(f"--live {name}: set GROQ_API_KEY (a Groq key)")
    try:
        from autogen_ext.models.openai import OpenAIChatCompletionClient
    except ImportError as missing:
        raise SystemExit(f'--live {name}: pip install "autogen-ext[openai]" ({missing})') from None
    info = ModelInfo(vision=False, function_calling=True, json_output=True,
                     family=ModelFamily.UNKNOWN, structured_output=False)
    return OpenAIChatCompletionClient(model=name, base_url=GROQ, api_key=key, model_info=info,
                                      parallel_tool_calls=False)


def main(story: Callable[..., Coroutine[Any, Any, object]], doc: str | None,
         argv: Sequence[str] | None = None, *, live: bool = False) -> None:
    """Tell `story` from the command line (see ../common/command.py)."""
    command.main(story, doc, argv, live=LIVE if live else None, model=live_model)


async def ask(agents: TaskRunner, task: str | HandoffMessage) -> None:
    """Give an agent or a team `task` (the user's words, or a hand-off back to one of its agents)
    and print what the agents do with it, as it happens."""
    print(f"user: {task if isinstance(task, str) else task.content}")
    await follow(agents.run_stream(task=task))


async def follow(events: AsyncIterator[Any]) -> None:
    """Print what the agents do, as it happens (`run_stream`'s events): their calls, each call's
    result or veto (with its reason and trail: what the model reads), what their memory gave
    them, their messages and hand-offs."""
    async for event in events:
        if isinstance(event, ToolCallRequestEvent):
            for call in event.content:
                print(f"  {event.source} -> {call.name}({call.arguments})")
        elif isinstance(event, ToolCallExecutionEvent):
            for result in event.content:
                text = result.content
                if text.startswith(VETO_PREFIX):
                    text = text.replace("\n", "\n      ")
                print(f"  {result.name}: {text}")
        elif isinstance(event, MemoryQueryEvent):
            print(f"  {event.source} remembers: " + " | ".join(str(m.content) for m in event.content))
        elif isinstance(event, HandoffMessage):
            print(f"  {event.source} hands off to {event.target}")
        elif isinstance(event, TextMessage) and event.source != "user":
            print(f"  {event.source}: {event.content}")
