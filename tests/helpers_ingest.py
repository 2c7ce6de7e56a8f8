"""Helpers of the ingestion tests: a full dump of a graph (every node and edge with every property,
bookkeeping included, and the graph's version counter) to prove that something wrote nothing, and a
scripted LangChain chat model that goes through `with_structured_output` for real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field

from rippl_core import Rippl
from rippl_core._runtime.wire import Query

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "examples" / "docs"
PROSE = DOCS / "prose"
EXAMPLES = sorted(DOCS.glob("*.md"))

_NODES = Query("MATCH (n) RETURN labels(n), properties(n)", read_only=True)
_EDGES = Query("MATCH (a)-[e]->(b) RETURN a.id, type(e), properties(e), b.id", read_only=True)


def dump(rippl: Rippl) -> dict[str, Any]:
    """Everything in the graph, order-independent, plus the version counter (bumped by every
    commit)."""
    nodes = sorted(json.dumps([sorted(labels), props], sort_keys=True)
                   for labels, props in rippl._driver.query(_NODES))
    edges = sorted(json.dumps(list(row), sort_keys=True) for row in rippl._driver.query(_EDGES))
    return {"nodes": nodes, "edges": edges, "version": rippl.redis.get(rippl.keys.version)}


def causal(rippl: Rippl) -> dict[str, Any]:
    """The causal graph without timestamps: id -> (kind, text, state, justifications)."""
    out = {}
    for labels, props in rippl._driver.query(_NODES):
        if "Node" not in labels:
            continue
        node = rippl.get(props["id"])
        out[node.id] = (node.kind.value, node.text, node.state.value, node.uri, node.tool,
                        node.args, sorted(sorted(j) for j in node.justifications))
    return out


class ScriptedChatModel(GenericFakeChatModel):
    """Answers from a script, records what it was sent and how it was bound to tools."""

    model_name: str = "scripted-1"
    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[tuple[list[Any], Any]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        self.bound.append((list(tools), tool_choice))
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def tool_call(args: Any, name: str = "Extraction") -> AIMessage:
    """The answer of a model calling the structured-output tool with `args`."""
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": "call_1", "type": "tool_call"}])


def scripted(*answers: AIMessage) -> ScriptedChatModel:
    return ScriptedChatModel(messages=iter(answers))


def scripted_claims_model(model: str | None = None) -> ScriptedChatModel:
    """A factory for `--extractor langchain:helpers_ingest:scripted_claims_model`."""
    answer = tool_call({"claims": [{"ref": "c1", "text": "Shard 09 is healthy",
                                    "quote": "Shard 09 is healthy"}],
                        "decisions": [{"ref": "d1", "title": "Move billing to shard 09",
                                       "premises": ["c1"]}]})
    made = scripted(answer)
    if model:
        made.model_name = model
    return made
