"""What the LangGraph stories share: the fleet they act on and the command line (both the same in
every framework, in ../common), a real model for `--live`, and how a story prints what the graph
does, step by step, and a scripted turn while which the world moves on.

The stories' models are scripted (`rippl_langgraph.testing.ScriptedChatModel`): each turn is what
a tool-calling model would answer. `--live [provider:model]` puts a real model in their place
(langchain's `init_chat_model`: the provider's package installed and its key in the environment,
e.g. `pip install langchain-groq` and `GROQ_API_KEY`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from rippl_core import Rippl
from rippl_core.adapters import VETO_PREFIX

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))  # the frameworks' shared part
import command
import fleet

__all__ = ["LIVE", "ask", "fleet", "live_model", "main", "options", "retracted_meanwhile", "say"]

LIVE = "groq:llama-3.3-70b-versatile"  # --live without a model name
options = command.options


def live_model(name: str) -> BaseChatModel:
    """A real chat model by its `provider:model` name, or a clear exit saying what it lacks."""
    try:
        return init_chat_model(name, temperature=0)
    except (ImportError, ValueError) as missing:
        raise SystemExit(f"--live {name}: {missing}") from None


def main(story: Callable[..., object], doc: str | None, argv: Sequence[str] | None = None, *,
         live: bool = False) -> None:
    """Tell `story` from the command line (see ../common/command.py)."""
    command.main(story, doc, argv, live=LIVE if live else None, model=live_model)


def ask(agent: Any, said: str | Command[Any] | None, thread: RunnableConfig, *,
        subgraphs: bool = False) -> None:
    """Send `said` to the agent on `thread`: the user's words, a `Command` resuming a pause, or
    None (go on after `interrupt_before`). Print each message the graph's steps add, as they
    happen, once (with `subgraphs`: the steps of the agents a graph runs as its nodes)."""
    known = {m.id for m in agent.get_state(thread).values.get("messages", [])}
    if isinstance(said, str):
        print(f"user: {said}")
    sent = {"messages": [("user", said)]} if isinstance(said, str) else said
    for chunk in agent.stream(sent, thread, stream_mode="updates", subgraphs=subgraphs):
        namespace, update = chunk if subgraphs else ((), chunk)
        if subgraphs and not namespace:
            continue  # the parent only hands on what its agents said
        for change in update.values():
            for message in change.get("messages", []) if isinstance(change, dict) else []:
                if message.id not in known:
                    known.add(message.id)
                    say(message)


def say(message: BaseMessage) -> None:
    """One message, as the story shows it: the model's calls and answers, each tool's result, and
    a veto with its reason and trail, which is what the model reads."""
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            print(f"  model -> {call['name']}({', '.join(f'{k}={v}' for k, v in call['args'].items())})")
        if message.content and not message.tool_calls:
            print(f"  model: {message.content}")
    elif isinstance(message, ToolMessage):
        text = str(message.content)
        if text.startswith(VETO_PREFIX):
            text = text.replace("\n", "\n      ")
        print(f"  {message.name}: {text}")


def retracted_meanwhile(rippl: Rippl, then: AIMessage) -> Callable[[object], AIMessage]:
    """A scripted turn: while the model thinks, the replica monitor finds the shard 09 reading
    stale and a person approves its retraction (`fleet.retract_stale_reading`); then the model
    answers `then`, not knowing."""
    def turn(_: object) -> AIMessage:
        fleet.retract_stale_reading(rippl)
        return then
    return turn
