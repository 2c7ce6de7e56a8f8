"""A scripted tool-calling chat model, for offline examples, tests and benchmarks.

LangChain's fake chat models do not implement `bind_tools`, which every agent calls; this one does
(it ignores the tools), and each step of its script is either a fixed `AIMessage` or a function of
the conversation so far, so a script can react to a veto the way a real model would.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

type Step = AIMessage | str | Callable[[list[BaseMessage]], AIMessage | str]


def tool_call(name: str, args: dict[str, Any] | None = None, id: str | None = None) -> dict[str, Any]:
    """A LangChain tool call dict (what a model's `AIMessage.tool_calls` holds)."""
    return {"name": name, "args": dict(args or {}), "id": id or f"call_{uuid.uuid4().hex[:10]}",
            "type": "tool_call"}


def calls(*tool_calls: dict[str, Any], content: str = "") -> AIMessage:
    """An AI turn making these tool calls."""
    return AIMessage(content=content, tool_calls=list(tool_calls))


class ScriptedChatModel(BaseChatModel):
    """Answers with the next step of `script`; with `loop=True` it starts over when done,
    otherwise running past the end raises an error naming the turn."""

    model_config: ClassVar[ConfigDict] = ConfigDict(arbitrary_types_allowed=True)

    script: Sequence[Any] = Field(default_factory=list)
    loop: bool = False
    record: bool = True
    _position: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    seen: list[list[BaseMessage]] = Field(default_factory=list, exclude=True)

    @property
    def _llm_type(self) -> str:
        return "rippl-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    @property
    def turns(self) -> int:
        """How many times the model was called."""
        return self._position

    def _next(self) -> Any:
        with self._lock:
            position = self._position
            if position >= len(self.script) and not self.loop:
                raise RuntimeError(f"the scripted model has {len(self.script)} turns and was asked "
                                   f"for turn {position + 1}")
            self._position += 1
            return self.script[position % len(self.script)]

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        if self.record:
            self.seen.append(list(messages))
        step = self._next()
        reply = step(list(messages)) if callable(step) else step
        if isinstance(reply, str):
            reply = AIMessage(content=reply)
        if not reply.id:
            reply = reply.model_copy(update={"id": f"lc_run-{uuid.uuid4().hex[:12]}"})
        return ChatResult(generations=[ChatGeneration(message=reply)])
