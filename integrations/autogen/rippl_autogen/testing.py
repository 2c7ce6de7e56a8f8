"""A scripted tool-calling model client for offline examples, tests and benchmarks: no network, no
key, fully deterministic.

    model = ScriptedModel([calls(tool_call("get_shard_health", shard="09")),
                           "Shard 09 is healthy."])
    agent = AssistantAgent("ops", model_client=model, tools=[get_shard_health])

Each step is what the model answers on its next call: a text, a turn of tool calls (`calls`), or a
function of the messages it is shown returning one, so that a script can react to a veto the way a
real model would. `create_calls` keeps what the model was shown on each call. Running past the
end of the script raises an error naming the call. It needs autogen-core only.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelFamily,
    ModelInfo,
    RequestUsage,
)

__all__ = ["MODEL_INFO", "ScriptedModel", "Step", "calls", "tool_call"]

MODEL_INFO = ModelInfo(vision=False, function_calling=True, json_output=False,
                       family=ModelFamily.UNKNOWN, structured_output=False)
NO_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)

type Step = str | CreateResult | Callable[[Sequence[LLMMessage]], str | CreateResult]


def tool_call(name: str, /, id: str | None = None, **args: Any) -> FunctionCall:
    """One tool call of a model turn (a fresh id unless given, as a provider's)."""
    return FunctionCall(id=id or f"call-{uuid.uuid4().hex[:8]}", name=name, arguments=json.dumps(args))


def calls(*function_calls: FunctionCall) -> CreateResult:
    """A model turn that asks for these tool calls."""
    return CreateResult(finish_reason="function_calls", content=list(function_calls),
                        usage=NO_USAGE, cached=False)


class ScriptedModel(ChatCompletionClient):
    """Answers each call with the next step of `steps`; a step that is a function is called with
    the messages the model is shown."""

    def __init__(self, steps: Sequence[Step], *, model_info: ModelInfo | None = None) -> None:
        self.steps = list(steps)
        self.create_calls: list[dict[str, Any]] = []
        self._info = model_info or MODEL_INFO

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        self.create_calls.append({"messages": messages, **kwargs})
        turn = len(self.create_calls)
        if turn > len(self.steps):
            raise RuntimeError(f"the scripted model has {len(self.steps)} steps and was asked for "
                               f"step {turn}")
        step = self.steps[turn - 1]
        reply = step(messages) if callable(step) else step
        if isinstance(reply, str):
            return CreateResult(finish_reason="stop", content=reply, usage=NO_USAGE, cached=False)
        return reply

    async def create_stream(self, messages: Sequence[LLMMessage],
                            **kwargs: Any) -> AsyncGenerator[str | CreateResult, None]:
        yield await self.create(messages, **kwargs)

    async def close(self) -> None:
        return None

    def actual_usage(self) -> RequestUsage:
        return NO_USAGE

    def total_usage(self) -> RequestUsage:
        return NO_USAGE

    def count_tokens(self, messages: Sequence[LLMMessage], **kwargs: Any) -> int:
        return 0

    def remaining_tokens(self, messages: Sequence[LLMMessage], **kwargs: Any) -> int:
        return 1 << 20

    @property
    def capabilities(self) -> ModelCapabilities:  # deprecated in autogen-core, still abstract
        return ModelCapabilities(vision=False, function_calling=True, json_output=False)

    @property
    def model_info(self) -> ModelInfo:
        return self._info
