"""`ChatModelDetector`: the model-based contradiction detector, over any LangChain chat model
(OpenAI, Anthropic, Ollama, Groq through `langchain-groq`...), with `with_structured_output`, as
`ChatModelExtractor` extracts documents. Install with the `langchain` extra; langchain-core is
imported only when a detector is created.

The model is shown one new claim and its candidates (see `contradictions.candidates`), each with
its id, text, key, value and sources, and answers for each candidate whether the new claim
contradicts it and why. What it names is proposed for retraction, never applied.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rippl_core.errors import RipplError
from rippl_core.models import ClaimEvidence
from rippl_core.review.contradictions import NEAREST, Judgement

SYSTEM_PROMPT = """You check a knowledge base for contradictions.
You are given one NEW statement and a list of EARLIER statements, each with an id.
For every earlier statement, decide whether the new statement contradicts it: both cannot be true
of the same subject at the same time (a different state, value, count, owner, place or outcome of
the same thing). Statements that agree, that add detail, or that are about different things do not
contradict. Answer with one judgement per earlier statement: its id, contradicts (true or false),
and a one-sentence reason that names what differs."""


class _Answer(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="ignore")

    claim: str = Field(description="The id of the earlier statement.")
    contradicts: bool = Field(description="Whether the new statement contradicts it.")
    reason: str = Field(default="", description="One sentence: what differs, or why they agree.")


class Judgements(BaseModel):
    """The model's answer: one judgement per earlier statement."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="ignore")

    judgements: list[_Answer] = Field(default_factory=list)


class DetectorError(RipplError):
    """The contradiction detector's model failed or answered out of shape. The claim was written
    and the key detector's proposals made; call `detect_contradictions([...])` again later."""


def _base_chat_model() -> Any:
    try:
        from langchain_core.language_models import BaseChatModel
    except ImportError:  # pragma: no cover - depends on the installation
        raise DetectorError('langchain-core is not installed: pip install "rippl-core[langchain]"') \
            from None
    return BaseChatModel


def _side(claim: ClaimEvidence) -> dict[str, Any]:
    shown: dict[str, Any] = {"id": claim.id, "text": claim.text}
    if claim.key is not None:
        shown["key"] = claim.key
    if claim.value is not None:
        shown["value"] = claim.value
    shown["sources"] = [s.get("title") or s["id"] for s in claim.sources]
    return shown


def user_prompt(claim: ClaimEvidence, candidates: Sequence[ClaimEvidence]) -> str:
    """What the model is asked about one claim (JSON of the new claim and its candidates)."""
    return ("NEW statement:\n" + json.dumps(_side(claim), ensure_ascii=False)
            + "\n\nEARLIER statements:\n"
            + "\n".join(json.dumps(_side(c), ensure_ascii=False) for c in candidates))


class ChatModelDetector:
    """Judge contradictions with a LangChain `BaseChatModel`. `nearest`: how many claims nearest
    in text the model sees besides those sharing the key; `method` is passed to
    `with_structured_output` when given. A provider error or an answer out of shape raises
    DetectorError."""

    name = "langchain"
    chat_model: Any
    nearest: int
    model: str | None

    def __init__(self, chat_model: Any, *, nearest: int = NEAREST, method: str | None = None,
                 model: str | None = None) -> None:
        if not isinstance(chat_model, _base_chat_model()):
            raise DetectorError(f"ChatModelDetector needs a LangChain BaseChatModel, got "
                                f"{type(chat_model).__name__}")
        if not isinstance(nearest, int) or nearest < 0:
            raise DetectorError("nearest must be a whole number, 0 or more")
        self.chat_model, self.nearest = chat_model, nearest
        self.model = model or _model_name(chat_model)
        kwargs: dict[str, Any] = {"include_raw": True}
        if method is not None:
            kwargs["method"] = method
        try:
            self._runnable = chat_model.with_structured_output(Judgements, **kwargs)
        except NotImplementedError:
            raise DetectorError(f"{type(chat_model).__name__} does not support structured output "
                                "(with_structured_output)") from None

    def _input(self, claim: ClaimEvidence, candidates: Sequence[ClaimEvidence]) -> list[Any]:
        return [("system", SYSTEM_PROMPT), ("human", user_prompt(claim, candidates))]

    def judge(self, claim: ClaimEvidence, candidates: Sequence[ClaimEvidence]) -> list[Judgement]:
        try:
            result = self._runnable.invoke(self._input(claim, candidates))
        except Exception as exc:
            raise DetectorError(f"{claim.id}: the chat model failed: {type(exc).__name__}: "
                                f"{exc}") from exc
        return _judgements(result, claim)

    async def ajudge(self, claim: ClaimEvidence,
                     candidates: Sequence[ClaimEvidence]) -> list[Judgement]:
        try:
            result = await self._runnable.ainvoke(self._input(claim, candidates))
        except Exception as exc:
            raise DetectorError(f"{claim.id}: the chat model failed: {type(exc).__name__}: "
                                f"{exc}") from exc
        return _judgements(result, claim)


def _judgements(result: Any, claim: ClaimEvidence) -> list[Judgement]:
    parsed = result.get("parsed") if isinstance(result, dict) else result
    if isinstance(result, dict) and result.get("parsing_error") is not None:
        raise DetectorError(f"{claim.id}: the model's answer could not be parsed: "
                            f"{result['parsing_error']}")
    if parsed is None:
        raise DetectorError(f"{claim.id}: the model answered without judgements")
    try:
        answer = parsed if isinstance(parsed, Judgements) else Judgements.model_validate(
            parsed.model_dump() if hasattr(parsed, "model_dump") else parsed)
    except ValidationError as exc:
        raise DetectorError(f"{claim.id}: the model's judgements are out of shape: {exc}") from None
    return [Judgement(a.claim, a.contradicts, a.reason) for a in answer.judgements]


def _model_name(chat_model: Any) -> str | None:
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(chat_model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(chat_model).__name__
