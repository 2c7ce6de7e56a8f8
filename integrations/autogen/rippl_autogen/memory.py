"""`RipplMemory`: an `autogen_core.memory.Memory` over Rippl's bitemporal belief graph.

    memory = RipplMemory(rippl, agent="planner")
    await memory.add(MemoryContent(content="Shard 07 is healthy", mime_type=MemoryMimeType.TEXT,
                                   metadata={"topic": "billing-home", "sources": ["SRC-013"]}))
    agent = AssistantAgent("planner", model_client=client, memory=[memory])

Before each model call, `update_context` adds one system message listing the agent's current
*verified* beliefs (as of now, or as of a fixed `as_of`): a belief whose claim was retracted, is
proposed for retraction, or rests on a retracted premise is never injected. `add` records a claim
(its id derived from its text, so the same statement is one claim) with its evidence sources, then
the agent's belief in it on a topic; adopting a new claim on a topic closes the previous interval.
`clear` ends every current belief of the agent (history is kept, never deleted).

What the memory puts in front of the model is an observation of the agent's run (provenance
capture): `update_context` records the injected message's claims under the message's handle (a
digest of its text), so a model turn rests on them exactly while the message is in the model's
input (trimmed away, it no longer counts); `query` records its results as observations of the
current run, for the rest of the run. The run is the one of the AutoGen agent whose handler is
running (inside a team), the one `register_rippl` bound for the agent, or, for `query` from a tool,
the run of the model turn that called it (see `rippl_autogen.runs`). Where no run is known (a solo
agent whose memory no hook was bound to) nothing is recorded here, and `RipplModelClient` records
the message for its run when it sees it. A memory read that cannot be recorded raises, like one
that cannot be read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar, Self

from autogen_core import CancellationToken, Component, ComponentType
from autogen_core.memory import (
    Memory,
    MemoryContent,
    MemoryMimeType,
    MemoryQueryResult,
    UpdateContextResult,
)
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage
from pydantic import BaseModel, ConfigDict, Field

from rippl_autogen.connection import Link, RipplConnection, Target
from rippl_autogen.runs import (
    Resolved,
    RunScope,
    current_turn,
    handler_agent,
    memory_messages,
    memory_ref,
    observe,
    record_memory,
)
from rippl_core import InvalidInputError, Kind, NotFoundError, State
from rippl_core.adapters import (
    check_id,
    check_text,
    content_words,
    from_ms,
    normalise_text,
    rank,
    to_ms,
)

type TimeLike = datetime | str


class RipplMemoryConfig(BaseModel):
    """Declarative config of a RipplMemory: where the graph is and whose beliefs it serves."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    connection: RipplConnection = Field(default_factory=RipplConnection)
    agent: str
    name: str | None = None
    as_of: str | None = None
    known_at: str | None = None
    limit: int | None = None


def _iso(value: TimeLike | None, name: str) -> str | None:
    """Validate a time now (naive ones are refused) and keep it as ISO-8601 with its offset."""
    if value is None:
        return None
    moment = from_ms(to_ms(value, name=name))
    assert moment is not None
    return moment.isoformat()



class RipplMemory(Memory, Component[RipplMemoryConfig]):
    """An agent's memory of what it believes, backed by the Rippl belief graph.

    Args:
        rippl: an `AsyncRippl` handle, a sync `Rippl` (run in a thread), or `RipplConnection`
            options (opened on first use, closed by `close()`).
        agent: the belief holder's id (usually the AutoGen agent's name).
        as_of: inject what the agent believed at this moment (aware datetime or ISO-8601 with an
            offset) instead of now.
        known_at: as the graph knew it at this moment (transaction time; default now).
        name: the memory's name (default `rippl:<agent>`).
        limit: inject at most this many beliefs (the most recently adopted first).
    """

    component_type: ClassVar[ComponentType] = "memory"
    component_config_schema = RipplMemoryConfig
    component_provider_override: ClassVar[str | None] = "rippl_autogen.RipplMemory"

    def __init__(self, rippl: Target | Link, agent: str, *, as_of: TimeLike | None = None,
                 known_at: TimeLike | None = None, name: str | None = None,
                 limit: int | None = None) -> None:
        self._agent = check_id(agent, what="agent")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise InvalidInputError("limit must be a positive integer (or None for every belief)")
        self._link = rippl if isinstance(rippl, Link) else Link(rippl)
        self._as_of = _iso(as_of, "as_of")
        self._known_at = _iso(known_at, "known_at")
        self._name = name or f"rippl:{self._agent}"
        self._limit = limit
        self._runs: dict[str, RunScope] = {}

    @property
    def name(self) -> str:
        return self._name

    @property
    def agent(self) -> str:
        return self._agent

    @property
    def link(self) -> Link:
        return self._link

    @property
    def as_of(self) -> str | None:
        return self._as_of

    def bind(self, scope: RunScope) -> None:
        """Record this memory's reads in the runs `scope` names, for the agent it names
        (`register_rippl` binds the scope of every agent it gives this memory to)."""
        if scope.agent is None:
            raise InvalidInputError("bind a RunScope that names its agent (RunScope('ops', ...))")
        self._runs[scope.agent] = scope

    def current_run(self, *, in_turn: bool = False) -> Resolved | None:
        """The run (id, agent name, scope) a read belongs to now, or None when no run is known.
        `in_turn`: a model turn running a tool counts (for reads made by tools)."""
        handler = handler_agent()
        if handler is not None:
            return (self._runs.get(handler[0]) or RunScope(handler[0])).resolve()
        turn = current_turn.get() if in_turn else None
        if turn is not None:
            return turn.who
        if len(self._runs) == 1:
            return next(iter(self._runs.values())).resolve()
        return None

    # -- reading ----------------------------------------------------------------------------
    async def verified_beliefs(self, *, as_of: TimeLike | None = None,
                               known_at: TimeLike | None = None) -> list[Any]:
        """The agent's beliefs holding at `as_of` (default: this memory's, else now) whose claim is
        Verified, then and now (never one retracted since), the most recently adopted first."""
        graph = await self._link.graph()
        held = await graph.beliefs(self._agent, as_of=_iso(as_of, "as_of") or self._as_of,
                                   known_at=_iso(known_at, "known_at") or self._known_at)
        verified = [b for b in held
                    if b.claim_state is State.IN and (b.claim_state_now or State.IN) is State.IN]
        return sorted(verified, key=lambda b: (b.valid_from, b.topic), reverse=True)

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Add one system message with the agent's current verified beliefs (none: no message)."""
        beliefs = await self.verified_beliefs()
        if self._limit is not None:
            beliefs = beliefs[: self._limit]
        if not beliefs:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        when = f"as of {self._as_of}" if self._as_of else "now"
        lines = [f"What {self._agent} believes {when}, per Rippl (verified claims only; retracted "
                 "or disputed claims are left out):"]
        for i, belief in enumerate(beliefs, 1):
            evidence = f"; evidence: {', '.join(belief.evidence)}" if belief.evidence else ""
            lines.append(f"{i}. [{belief.topic}] {belief.text} (claim {belief.claim}, since "
                         f"{belief.valid_from.isoformat()}{evidence})")
        text = "\n".join(lines)
        ref, claims = memory_ref(text), [b.claim for b in beliefs]
        memory_messages.carried(ref, claims)
        running = self.current_run()
        if running is not None:
            await record_memory(await self._link.handle(), running, ref, claims)
        await model_context.add_message(SystemMessage(content=text))
        return UpdateContextResult(memories=MemoryQueryResult(results=[_content(b) for b in beliefs]))

    async def query(self, query: str | MemoryContent = "",
                    cancellation_token: CancellationToken | None = None,
                    **kwargs: Any) -> MemoryQueryResult:
        """Verified beliefs matching `query` (words of the claim text or topic), best match first;
        an empty query returns them all. Keyword arguments: `topic` (exact topic), `as_of`,
        `known_at`, `limit`."""
        unknown = set(kwargs) - {"topic", "as_of", "known_at", "limit"}
        if unknown:
            raise InvalidInputError(f"unknown query options: {', '.join(sorted(unknown))}; use "
                                    "topic, as_of, known_at or limit")
        text = query if isinstance(query, str) else _text(query)
        beliefs = await self.verified_beliefs(as_of=kwargs.get("as_of"),
                                              known_at=kwargs.get("known_at"))
        if kwargs.get("topic") is not None:
            beliefs = [b for b in beliefs if b.topic == kwargs["topic"]]
        if content_words(text):
            beliefs = [b for b, score in rank(text, beliefs) if score > 0]
        found = beliefs[:kwargs.get("limit")]
        running = self.current_run(in_turn=True)
        if found and running is not None:
            await observe(await self._link.handle(), running, [b.claim for b in found], None)
        return MemoryQueryResult(results=[_content(b) for b in found])

    # -- writing ----------------------------------------------------------------------------
    async def add(self, content: MemoryContent,
                  cancellation_token: CancellationToken | None = None) -> None:
        """Record a belief of the agent. The content is the claim's text; metadata may give
        `topic` (default: the claim's id), `sources` (source ids, or {title, uri?, kind?, id?}
        dicts, created if new), `claim_id`, `valid_from` and `note`."""
        text = _text(content)
        meta = dict(content.metadata or {})
        unknown = set(meta) - {"topic", "sources", "evidence", "claim_id", "valid_from", "note"}
        if unknown:
            raise InvalidInputError(f"unknown metadata keys: {', '.join(sorted(unknown))}; use "
                                    "topic, sources, claim_id, valid_from or note")
        sources = meta.get("sources", meta.get("evidence", []))
        if isinstance(sources, (str, Mapping)) or not isinstance(sources, Sequence):
            raise InvalidInputError("metadata['sources'] must be a list of source ids or "
                                    "{title, uri, kind} objects")
        valid_from = _iso(meta.get("valid_from"), "valid_from")
        graph = await self._link.graph()
        source_ids = [await self._source(graph, s) for s in sources]
        claim_id, text = await self._claim_for(graph, text, meta.get("claim_id"))
        claim = await graph.add_claim(claim_id, text, sources=source_ids)
        topic = meta.get("topic") or claim.id
        await graph.believe(self._agent, claim.id, topic=topic, valid_from=valid_from,
                            evidence=source_ids, note=meta.get("note"))

    @staticmethod
    async def _claim_for(graph: Any, text: str, claim_id: Any) -> tuple[str | None, str]:
        """The claim a memory states: `claim_id` if given (keeping its stored wording when the
        text says the same in other words), else None: Rippl then takes the claim already
        stating this text, whatever its id, so retracting that claim reaches this memory too."""
        check_text(text, what="content")
        if claim_id is None:
            return None, text
        claim_id = check_id(claim_id, what="metadata['claim_id']")
        try:
            stored = await graph.get(claim_id)
            if stored.kind is Kind.CLAIM and normalise_text(stored.text) == normalise_text(text):
                return claim_id, stored.text
        except NotFoundError:
            pass
        return claim_id, text

    @staticmethod
    async def _source(graph: Any, source: Any) -> str:
        if isinstance(source, str):
            return check_id(source, what="source id")
        if isinstance(source, Mapping) and isinstance(source.get("title"), str):
            extra = set(source) - {"id", "title", "uri", "kind"}
            if extra:
                raise InvalidInputError(f"unknown source keys: {', '.join(sorted(extra))}")
            node = await graph.add_source(source.get("id"), source["title"], uri=source.get("uri"),
                                          kind=source.get("kind"))
            return str(node.id)
        raise InvalidInputError(f"a source is an id or a {{title, uri, kind}} object, got {source!r}")

    async def clear(self) -> None:
        """End every current belief of the agent now. The intervals stay in the history."""
        graph = await self._link.graph()
        for belief in await graph.beliefs(self._agent):
            await graph.retract_belief(self._agent, belief.topic, reason="memory cleared")

    async def close(self) -> None:
        """Close a graph handle this memory opened itself; a borrowed handle stays open."""
        await self._link.close()

    # -- component --------------------------------------------------------------------------
    def _to_config(self) -> RipplMemoryConfig:
        return RipplMemoryConfig(connection=self._link.connection, agent=self._agent,
                                 name=self._name, as_of=self._as_of, known_at=self._known_at,
                                 limit=self._limit)

    @classmethod
    def _from_config(cls, config: RipplMemoryConfig) -> Self:
        return cls(config.connection, config.agent, as_of=config.as_of, known_at=config.known_at,
                   name=config.name, limit=config.limit)


def _text(content: MemoryContent) -> str:
    if isinstance(content.content, str):
        return content.content
    if isinstance(content.content, dict):
        return json.dumps(content.content, sort_keys=True, ensure_ascii=False)
    mime = content.mime_type.value if isinstance(content.mime_type, MemoryMimeType) else content.mime_type
    raise InvalidInputError(f"RipplMemory stores claims as text; got {mime} content. Describe it in "
                            "words (content='...')")


def _content(belief: Any) -> MemoryContent:
    return MemoryContent(content=belief.text, mime_type=MemoryMimeType.TEXT, metadata={
        "agent": belief.agent, "topic": belief.topic, "claim": belief.claim,
        "status": belief.claim_status, "valid_from": belief.valid_from.isoformat(),
        "recorded_at": belief.recorded_at.isoformat(), "evidence": list(belief.evidence),
        "note": belief.note,
    })
