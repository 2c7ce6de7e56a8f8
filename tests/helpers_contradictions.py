"""Helpers of the contradiction tests: a scripted chat model answering as a contradiction judge
(for `--detector langchain:helpers_contradictions:scripted_judge`)."""

from __future__ import annotations

from typing import Any

from helpers_ingest import ScriptedChatModel, scripted, tool_call


def judgements(*items: tuple[str, bool, str]) -> Any:
    """The answer of a model judging each candidate (id, contradicts, reason)."""
    return tool_call({"judgements": [{"claim": c, "contradicts": x, "reason": r}
                                     for c, x, r in items]}, name="Judgements")


def scripted_judge(model: str | None = None) -> ScriptedChatModel:
    """A judge that finds "CLM-owner" contradicted, whatever it is asked."""
    made = scripted(judgements(("CLM-owner", True, "Sam, not Dana, owns billing now")))
    if model:
        made.model_name = model
    return made
