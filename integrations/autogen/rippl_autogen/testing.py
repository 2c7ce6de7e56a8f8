"""A scripted tool-calling model client for offline examples, tests and benchmarks: no network, no
key, fully deterministic.

    model = ScriptedModel([calls(tool_call("get_shard_health", shard="09")),
                           "Shard 09 is healthy."])
    agent = AssistantAgent("ops", model_client=model, tools=[get_shard_health])

Each step is what the model answers on its next call: a text, a turn of tool calls (`calls`), or a
function of the messages it is shown returning one, so that a script can react to a veto the way a
real model would. It is autogen-ext's `ReplayChatCompletionClient` with function steps; `create_calls`
keeps what the model was shown on each call.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import CreateResult, LLMMessage, ModelFamily, ModelInfo, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

__all__ = ["MODEL_INFO", "ScriptedModel", "Step", "calls", "tool_call"]

MODEL_INFO = ModelInfo(vision=False, function_calling=True, json_output=False,
                       family=ModelFamily.UNKNOWN, structured_output=False)

type Step = str | CreateResult | Callable[[Sequence[LLMMessage]], str | CreateResult]


def tool_call(name: str, /, id: str | None = None, **args: Any) -> FunctionCall:
    """One tool call of a model turn (a fresh id unless given)."""
    return FunctionCall(id=id or f"call-{uuid.uuid4().hex[:8]}", name=name, arguments=json.dumps(args))


def calls(*function_calls: FunctionCall) -> CreateResult:
    """A model turn that asks for these tool calls."""
    return CreateResult(finish_reason="function_calls", content=list(function_calls),
                        usage=RequestUsage(prompt_tokens=0, completion_tokens=0), cached=False)


class ScriptedModel(ReplayChatCompletionClient):
    """Answers with the next step of `steps`; a step that is a function is called with the messages
    the model is shown, and its answer replayed."""

    def __init__(self, steps: Sequence[Step], *, model_info: ModelInfo | None = None) -> None:
        super().__init__(list(steps), model_info=model_info or MODEL_INFO)  # type: ignore[arg-type]

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        index = self._current_index
        if index < len(self.chat_completions):
            step: Any = self.chat_completions[index]
            if callable(step):
                self.chat_completions[index] = step(messages)
        return await super().create(messages, **kwargs)
