"""A scripted CrewAI model for offline tests and demos: no network, no key, fully deterministic.

    llm = ScriptedLLM(script=[react_call("migrate_tables", {"table": "billing", "shard": "09"}),
                              react_final("done")])

Each step is a reply, or a function of the messages received that returns one. With native=True
the model says it supports function calling and replies with `native_call(...)` tool calls (the
native path); otherwise CrewAI drives it with ReAct text. `received` keeps every message list it
was given, so a test can assert on what the model was shown.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from crewai import BaseLLM
from pydantic import Field, PrivateAttr

type Step = str | list[dict[str, Any]] | Callable[[list[dict[str, Any]]], Any]


def react_call(tool: str, args: Mapping[str, Any], thought: str = "I should use a tool.") -> str:
    """A ReAct reply that calls `tool` with `args`."""
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {json.dumps(dict(args))}"


def react_final(answer: str) -> str:
    """A ReAct reply that ends the task."""
    return f"Thought: I now know the final answer\nFinal Answer: {answer}"


def native_call(tool: str, args: Mapping[str, Any], call_id: str | None = None) -> list[dict[str, Any]]:
    """A native (OpenAI-style) function-calling reply that calls `tool` with `args` (a fresh call id
    unless given: a provider never reuses one)."""
    return [{"id": call_id or f"call_{uuid.uuid4().hex[:10]}", "type": "function",
             "function": {"name": tool, "arguments": json.dumps(dict(args))}}]


def text_of(messages: Sequence[Mapping[str, Any]] | str) -> str:
    """Every message's content joined: what the model was shown."""
    if isinstance(messages, str):
        return messages
    return "\n".join(str(m.get("content") or "") for m in messages)


class ScriptedLLM(BaseLLM):
    """A BaseLLM that replies from a script (the last step repeats once the script runs out)."""

    script: list[Any] = Field(default_factory=list)
    native: bool = False
    _received: list[list[dict[str, Any]]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, script: Sequence[Step] = (), *, native: bool = False,
                 model: str = "scripted", **data: Any) -> None:
        data.update(script=list(script), native=native)  # this class's fields, unknown to BaseLLM's
        super().__init__(model=model, **data)

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> Any:
        shown = ([{"role": "user", "content": messages}] if isinstance(messages, str)
                 else [dict(m) for m in messages])
        with self._lock:
            self._received.append(shown)
            step = self.script[min(len(self._received), len(self.script)) - 1] if self.script \
                else "Thought: I now know the final answer\nFinal Answer: (empty script)"
        return step(shown) if callable(step) else step

    async def acall(self, messages: Any, tools: Any = None, callbacks: Any = None,
                    available_functions: Any = None, from_task: Any = None,
                    from_agent: Any = None, response_model: Any = None) -> Any:
        return self.call(messages, tools, callbacks, available_functions, from_task, from_agent,
                         response_model)

    def supports_function_calling(self) -> bool:
        return self.native

    @property
    def received(self) -> list[list[dict[str, Any]]]:
        """Every message list the model was called with, in order."""
        return list(self._received)

    def shown(self, call: int = -1) -> str:
        """The text of the messages of one call (default: the last)."""
        return text_of(self._received[call]) if self._received else ""


class HashEmbedder:
    """A deterministic bag-of-words embedder for offline memory (`Memory(embedder=HashEmbedder())`):
    each word is hashed to a dimension, so texts sharing words are similar. Not a language model."""

    def __init__(self, dimensions: int = 64) -> None:
        self.dimensions = dimensions

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed(text) for text in texts]

    def embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            digest = hashlib.sha256(word.encode()).digest()
            vector[int.from_bytes(digest[:4], "big") % self.dimensions] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]
