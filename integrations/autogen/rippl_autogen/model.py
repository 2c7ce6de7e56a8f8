"""`RipplModelClient`: the model turn, seen where it is exact. A delegating `ChatCompletionClient`
around an agent's model client (`register_rippl` installs it) that records each model turn that
emits tool calls as a decision of the agent's run, before any of its calls runs.

    agent = AssistantAgent("ops", model_client=RipplModelClient(client, rippl, run="conv-42"), ...)

`create(messages)` gets exactly what the model gets (system messages, the model context after any
trimming, the memory's system messages), so the turn rests on exactly what is in it. Premises flow
with the text that carries them: each message of the input is a carrier, by its ref:

- a tool result by its call id (`FunctionExecutionResult.call_id`): its result claim;
- the model's own messages: a turn with tool calls by its turn id (what the turn rested on), a
  text reply by a digest of its text (what its input carried: this wrapper records each text reply
  the model writes, from its input);
- another agent's message (a `UserMessage` from a team mate, the output of an agent used as a
  tool) by a digest of its text: what it carried in the run that wrote it (a hand-over); in an
  agent used as a tool, the task the calling model wrote (one of the call's string arguments) by
  the calling turn's id: what that turn rested on;
- a system message by a digest of its text (a `RipplMemory` message is an observation under that
  handle, recorded here for this run if the memory could not record it itself).

So a tool result trimmed away by the model context (`BufferedChatCompletionContext`,
`HeadAndTailChatCompletionContext`, whose "Skipped N messages." note carries nothing) leaves only
once every message that read it is gone too. A message Rippl cannot account for carries everything
the run and its scope carried (fail closed), except the user's new input: a system message or a
`UserMessage` from "user" at the new tail of the conversation (memory messages, which the memory
adds after it, are taken first). Told: the call ids of veto results present (the model read why
those calls were denied, so what the vetoes named leaves its later turns; a call that repeats a
vetoed one stays vetoed). Results: each successful result of a tool this guard runs, with the
digest of its text, so a result Rippl never recorded for the run (a forged or edited saved state)
makes the turn rest on a retracted claim that it is genuine. A result whose hand-over could not
be recorded (`Guard.unaccounted`) is a message Rippl cannot account for.

The turn's id is a content hash of the run and its call ids: the same turn seen again records
nothing new. Each call's verdict is left for the tool hooks (`rippl_autogen.runs.current_turn`),
which judge the call again when it runs and record its execution. A turn that cannot be recorded
has its calls denied when they are about to run. Streaming (`create_stream`) is recorded from its
final `CreateResult`. The inner client is otherwise untouched: usage, token counts, model info.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Collection, Mapping, Sequence
from typing import Any, ClassVar, Literal, Self

from autogen_core import CancellationToken, Component, ComponentModel, ComponentType, FunctionCall
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    ModelCapabilities,
    ModelInfo,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from rippl_autogen.connection import Link, Target
from rippl_autogen.guard import VETO_PREFIX, Guard, GuardConfig, Resolver, shared_guard
from rippl_autogen.runs import (
    Handing,
    Turn,
    current_turn,
    handing,
    memory_messages,
    memory_ref,
    record_memory,
    turn_id,
)
from rippl_core import CollectionNotStr, InvalidInputError, Policy, Verdict
from rippl_core.adapters import ToolSettingsMap, check_id, output_digest, text_ref


class RipplModelClientConfig(BaseModel):
    """Declarative config of a RipplModelClient: the inner model client and the guard."""

    inner: ComponentModel
    guard: GuardConfig


class Seen(BaseModel):
    """What a model turn's input holds, for capture (see the module docstring)."""

    context: list[str]  # the ref of each message, in order (memory messages first)
    told: list[str]  # call ids of veto results
    inputs: list[str]  # refs of the messages that may be the user's
    results: dict[str, str]  # call id -> digest of each result of a tool this guard runs
    memory: list[str]  # handles of RipplMemory messages


SKIPPED = re.compile(r"Skipped \d+ messages\.")  # HeadAndTailChatCompletionContext's note


def seen(messages: Sequence[LLMMessage], run: str, guard: Guard | None = None,
         calling: Handing | None = None) -> Seen:
    """The references in a model's input (see the module docstring); `run` names its turns,
    `guard` knows the tools whose results were recorded, `calling` is the call running this
    model's agent (an agent used as a tool), whose arguments are the calling model's text."""
    executes: Collection[str] = guard.executes if guard is not None else ()
    context: dict[str, None] = {}
    told: dict[str, None] = {}
    inputs: dict[str, None] = {}
    results: dict[str, str] = {}
    memory: dict[str, None] = {}
    for message in messages:
        if isinstance(message, FunctionExecutionResultMessage):
            for result in message.content:
                if _usable(result.call_id):
                    if guard is not None and not guard.accounted(result.call_id):
                        context[f"unaccounted:{result.call_id}"] = None  # carries everything
                        continue
                    context[result.call_id] = None
                    if result.is_error and VETO_PREFIX in result.content:
                        told[result.call_id] = None
                    elif not result.is_error and result.name in executes:
                        results[result.call_id] = output_digest(result.content)
        elif isinstance(message, AssistantMessage):
            if isinstance(message.content, str):
                context[text_ref(message.content)] = None
            else:
                context[turn_id(run, [c.id for c in message.content])] = None
        elif isinstance(message, SystemMessage):
            ref = memory_ref(message.content)
            if memory_messages.claims(ref) is not None:
                memory[ref] = None
            else:
                context[ref] = inputs[ref] = None
        elif isinstance(message, UserMessage):
            text = message.content if isinstance(message.content, str) else \
                "\n".join(part for part in message.content if isinstance(part, str))
            if message.source == "System" and SKIPPED.fullmatch(text):
                continue  # the model context's own note of what it trimmed: it carries nothing
            if message.source == "user" and calling is not None and text in calling.said:
                context[calling.said[text]] = None  # the calling model's text: its turn
                continue
            ref = text_ref(text)
            context[ref] = None
            if message.source == "user":
                inputs[ref] = None
    ordered = [*memory, *(ref for ref in context if ref not in memory)]
    return Seen(context=ordered, told=list(told), inputs=list(inputs), results=results,
                memory=list(memory))


def _usable(call_id: object) -> bool:
    try:
        check_id(call_id)
    except InvalidInputError:
        return False
    return True


class RipplModelClient(ChatCompletionClient, Component[RipplModelClientConfig]):
    """A model client that records each model turn with tool calls in the agent's run.

    Args:
        inner: the agent's model client (any ChatCompletionClient).
        rippl: an `AsyncRippl` or `Rippl` handle, `RipplConnection` options, or the `Guard` the
            agent's workbench uses (`register_rippl` shares one).
        resolver, policy, unguarded, agent, run, tool_settings: as for `RipplWorkbench`.
        capture: False makes this a plain pass-through.
    """

    component_type: ClassVar[ComponentType] = "model"
    component_config_schema = RipplModelClientConfig
    component_provider_override: ClassVar[str | None] = "rippl_autogen.RipplModelClient"

    def __init__(self, inner: ChatCompletionClient, rippl: Target | Link | Guard, *,
                 resolver: Resolver | None = None, policy: Policy | None = None,
                 unguarded: CollectionNotStr[str] = (), capture: bool = True, agent: str | None = None,
                 run: str | None = None, tool_settings: ToolSettingsMap | None = None) -> None:
        if not isinstance(inner, ChatCompletionClient):
            raise InvalidInputError(f"inner must be an autogen ChatCompletionClient, got "
                                    f"{type(inner).__name__}")
        self._inner = inner
        self._guard = shared_guard(rippl, resolver=resolver, policy=policy, unguarded=unguarded,
                                   capture=capture, agent=agent, run=run,
                                   tool_settings=tool_settings)

    @property
    def inner(self) -> ChatCompletionClient:
        return self._inner

    @property
    def guard(self) -> Guard:
        return self._guard

    async def create(self, messages: Sequence[LLMMessage], *,
                     tools: Sequence[Tool | ToolSchema] = [],
                     tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
                     json_output: bool | type[BaseModel] | None = None,
                     extra_create_args: Mapping[str, Any] = {},
                     cancellation_token: CancellationToken | None = None) -> CreateResult:
        result = await self._inner.create(messages, tools=tools, tool_choice=tool_choice,
                                          json_output=json_output,
                                          extra_create_args=extra_create_args,
                                          cancellation_token=cancellation_token)
        await self.decide(messages, result)
        return result

    async def create_stream(self, messages: Sequence[LLMMessage], *,
                            tools: Sequence[Tool | ToolSchema] = [],
                            tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
                            json_output: bool | type[BaseModel] | None = None,
                            extra_create_args: Mapping[str, Any] = {},
                            cancellation_token: CancellationToken | None = None
                            ) -> AsyncGenerator[str | CreateResult, None]:
        stream = self._inner.create_stream(messages, tools=tools, tool_choice=tool_choice,
                                           json_output=json_output,
                                           extra_create_args=extra_create_args,
                                           cancellation_token=cancellation_token)
        try:
            async for chunk in stream:
                if isinstance(chunk, CreateResult):
                    await self.decide(messages, chunk)
                yield chunk
        finally:
            await stream.aclose()

    async def decide(self, messages: Sequence[LLMMessage], result: CreateResult) -> Turn | None:
        """Record the turn `result` answers to `messages` in the agent's run (a text reply: as a
        message the model wrote from them), and leave a turn with tool calls for the tool hooks.
        Returns the turn (None: no tool call, or no capture)."""
        if not self._guard.capturing:
            return None
        calls = [c for c in result.content if isinstance(c, FunctionCall)] \
            if isinstance(result.content, list) else []
        if not calls and not isinstance(result.content, str):
            return None
        who = self._guard.scope.resolve()
        calling = handing.get()
        found = seen(messages, who.run, self._guard, calling)
        capture = self._guard.capture(who)
        verdicts: Sequence[Verdict | None]
        try:
            if found.memory:
                handle = await self._guard.ahandle()
                for ref in found.memory:
                    await record_memory(handle, who, ref, memory_messages.claims(ref) or ())
        except Exception as exc:
            if not calls:
                return None  # the reply is then a message Rippl cannot account for: fail closed
            verdicts = [_unrecorded(who.run, exc) for _ in calls]
        else:
            if not calls:
                assert isinstance(result.content, str)
                ref = text_ref(result.content)
                await capture.awrote(ref, context=found.context, told=found.told,
                                     inputs=found.inputs)
                if calling is not None:
                    calling.note(capture, [*found.context, ref], found.told)
                return None
            verdicts = await capture.adecide(
                turn_id(who.run, [c.id for c in calls]), [(c.name, c.arguments, c.id) for c in calls],
                context=found.context, told=found.told, inputs=found.inputs, results=found.results)
        made = turn_id(who.run, [c.id for c in calls])
        turn = Turn(who.run, who.agent, self._guard,
                    {c.id: v for c, v in zip(calls, verdicts, strict=True)}, who.scope, made)
        if calling is not None:
            calling.note(capture, [*found.context, made], found.told)
        current_turn.set(turn)
        return turn

    # -- the inner client, unchanged ----------------------------------------------------------
    async def close(self) -> None:
        """Close the inner client and a graph handle this wrapper opened itself."""
        try:
            await self._inner.close()
        finally:
            await self._guard.link.close()

    def actual_usage(self) -> RequestUsage:
        return self._inner.actual_usage()

    def total_usage(self) -> RequestUsage:
        return self._inner.total_usage()

    def count_tokens(self, messages: Sequence[LLMMessage], *,
                     tools: Sequence[Tool | ToolSchema] = []) -> int:
        return self._inner.count_tokens(messages, tools=tools)

    def remaining_tokens(self, messages: Sequence[LLMMessage], *,
                         tools: Sequence[Tool | ToolSchema] = []) -> int:
        return self._inner.remaining_tokens(messages, tools=tools)

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._inner.capabilities

    @property
    def model_info(self) -> ModelInfo:
        return self._inner.model_info

    # -- component ------------------------------------------------------------------------------
    def _to_config(self) -> RipplModelClientConfig:
        return RipplModelClientConfig(inner=self._inner.dump_component(),
                                      guard=self._guard.config())

    @classmethod
    def _from_config(cls, config: RipplModelClientConfig) -> Self:
        return cls(ChatCompletionClient.load_component(config.inner),
                   Guard.from_config(config.guard))


def _unrecorded(run: str, exc: Exception) -> Verdict:
    return Verdict(allowed=False, target=None, reason=(
        f"denied (fail closed): the memory the model read in run {run} could not be recorded: "
        f"{type(exc).__name__}: {exc}"))
