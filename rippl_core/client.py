"""`Rippl` and `AsyncRippl`: the public handles. Each method is one line over a shared operation."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import redis
import redis.asyncio

from rippl_core import operations as ops
from rippl_core import preflight
from rippl_core.connection import EmbeddedServer, Location, async_client, locate, sync_client
from rippl_core.driver import AsyncDriver, SyncDriver, graph_keys, translated_errors
from rippl_core.errors import DatabaseError, InvalidInputError, PremiseRetractedError
from rippl_core.explain import AsyncExplainMethods, ExplainMethods
from rippl_core.ingest.api import AsyncIngestMethods, IngestMethods
from rippl_core.models import LoadReport, Node, Policy, Reached, Stats, ToolCall, Verdict, Wave
from rippl_core.receipts import SigningKey
from rippl_core.records_api import AsyncRecordMethods, RecordMethods
from rippl_core.review_api import AsyncReviewMethods, ReviewMethods
from rippl_core.spec import (
    GraphSpec,
    action_spec,
    claim_spec,
    decision_spec,
    read_spec,
    source_spec,
)
from rippl_core.subjects import AsyncSubjectMethods, SubjectMethods
from rippl_core.temporal import check_at
from rippl_core.temporal_api import AsyncTemporalMethods, TemporalMethods
from rippl_core.timeutil import TimeLike
from rippl_core.validation import check_id

type Target = str | ToolCall
type PathLike = str | os.PathLike[str]


def _policy(base: Policy, at_risk: str | None, unknown: str | None,
            on_error: str | None) -> Policy:
    if not isinstance(base, Policy):
        raise InvalidInputError(f"policy must be a rippl_core.Policy, not {type(base).__name__}; "
                                "e.g. Policy(at_risk='allow')")
    overrides = {k: v for k, v in (("at_risk", at_risk), ("unknown", unknown),
                                   ("on_error", on_error)) if v is not None}
    try:
        return base.model_copy(update=overrides) if not overrides else Policy(
            **{**base.model_dump(), **overrides})
    except ValueError as exc:
        raise InvalidInputError(f"bad policy: {exc}") from None


def _graph_name(graph: str) -> str:
    return check_id(graph, what="graph")


def _prepare(location: Location) -> tuple[EmbeddedServer | None, redis.Redis]:
    """Start or join the embedded server if needed, and create the schema (idempotent)."""
    server = EmbeddedServer(location.path) if location.path else None
    return server, sync_client(location, server.socket_path if server else None)


class Rippl(ReviewMethods, ExplainMethods, IngestMethods, RecordMethods, TemporalMethods,
            SubjectMethods):
    """A handle on one graph (tenant) of a FalkorDB database. Thread-safe; close it when done.

    `policy` is the default pre-flight policy; `distinct_approver=True` refuses approval of a
    review by the identity that proposed it (separation of duties)."""

    def __init__(self, location: Location, graph: str, client: redis.Redis,
                 server: EmbeddedServer | None, policy: Policy, distinct_approver: bool = False) -> None:
        self.location, self.graph, self.policy = location, graph, policy
        self.distinct_approver = distinct_approver
        self._client, self._server = client, server
        self._driver = SyncDriver(client, graph, location.describe())

    @classmethod
    def open(cls, path: PathLike | None = None, *, url: str | None = None, graph: str = "rippl",
             policy: Policy | None = None, distinct_approver: bool = False) -> Rippl:
        """Open a graph: embedded (path, RIPPL_DB, ./.rippl/) or on a server (url=falkordb://...,
        RIPPL_FALKORDB_URL). Creates the schema on first use."""
        location = locate(path, url)
        server, client = _prepare(location)
        handle = cls(location, _graph_name(graph), client, server, policy or Policy(),
                     distinct_approver)
        try:
            handle._driver.ensure_schema()
        except BaseException:
            handle.close()
            raise
        return handle

    def close(self) -> None:
        self._client.close()
        if self._server is not None:
            self._server.close()
            self._server = None

    def drop(self) -> None:
        """Delete this graph and everything Rippl keeps for it, then recreate the empty schema."""
        with translated_errors(self.location.describe()):
            for key in self._client.scan_iter(match=graph_keys(self.graph)):
                self._client.delete(key)
            if self._client.exists(self.graph):
                self._client.execute_command("GRAPH.DELETE", self.graph)
        self._driver.ensure_schema()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def redis(self) -> redis.Redis:
        """The underlying redis client (for adapters that store their own keys)."""
        return self._client

    # -- writing ---------------------------------------------------------------------------
    def add_source(self, id: str | None, title: str, *, uri: str | None = None,
                   kind: str | None = None, replace: bool = False) -> Node:
        return self._driver.run(lambda: ops.add(source_spec(id, title, uri=uri, kind=kind),
                                                replace=replace), write=True)

    def add_claim(self, id: str | None, text: str, *, sources: Sequence[str] = (),
                  derived_from: Sequence[str] = (), replace: bool = False) -> Node:
        spec = claim_spec(id, text, sources=sources, derived_from=derived_from)
        return self._driver.run(lambda: ops.add(spec, replace=replace), write=True)

    def add_decision(self, id: str | None, title: str, *, premises: Sequence[str] = (),
                     depends_on: Sequence[str] = (), replace: bool = False) -> Node:
        spec = decision_spec(id, title, premises=premises, depends_on=depends_on)
        return self._driver.run(lambda: ops.add(spec, replace=replace), write=True)

    def add_action(self, id: str | None, title: str, *, decisions: Sequence[str] = (),
                   tool: str | None = None, args: Mapping[str, Any] | None = None,
                   triggers: Sequence[str] = (), replace: bool = False) -> Node:
        spec = action_spec(id, title, decisions=decisions, tool=tool, args=args, triggers=triggers)
        return self._driver.run(lambda: ops.add(spec, replace=replace), write=True)

    def justify(self, node_id: str, antecedents: Sequence[str]) -> bool:
        return self._driver.run(lambda: ops.add_justification(node_id, antecedents), write=True)

    def load(self, spec: Mapping[str, Any] | GraphSpec | PathLike, *,
             replace: bool = False) -> LoadReport:
        graph = read_spec(spec if not isinstance(spec, os.PathLike) else Path(spec))
        return self._driver.run(lambda: ops.load(graph, replace=replace), write=True)

    def retract(self, claim_id: str, *, reason: str, by: str, at: TimeLike | None = None,
                signing_key: SigningKey | None = None) -> Wave:
        """Retract a claim at once, bypassing review (receipted). `at` is when it stopped holding."""
        return self._driver.run(lambda: ops.retraction(claim_id, retracted=True, reason=reason, by=by,
                                                       at=at, signing_key=signing_key), write=True)

    def reinstate(self, claim_id: str, *, reason: str, by: str, at: TimeLike | None = None,
                  signing_key: SigningKey | None = None) -> Wave:
        """Undo a retraction: what rested on the claim comes back (receipted)."""
        return self._driver.run(lambda: ops.retraction(claim_id, retracted=False, reason=reason, by=by,
                                                       at=at, signing_key=signing_key), write=True)

    # -- reading ---------------------------------------------------------------------------
    def get(self, id: str) -> Node:
        return self._driver.run(lambda: ops.get(id))

    def blast_radius(self, node_id: str, *, max_depth: int | None = None) -> list[Reached]:
        return self._driver.run(lambda: ops.reach(node_id, down=True, max_depth=max_depth))

    def premises(self, node_id: str, *, max_depth: int | None = None) -> list[Reached]:
        return self._driver.run(lambda: ops.reach(node_id, down=False, max_depth=max_depth))

    def stats(self) -> Stats:
        return self._driver.run(ops.stats)

    def check(self, target: Target, *, at_risk: str | None = None, unknown: str | None = None,
              on_error: str | None = None, policy: Policy | None = None,
              as_of: TimeLike | None = None, known_at: TimeLike | None = None) -> Verdict:
        """Allow or deny an action, decision or tool call. Never raises for a database error:
        it denies (unless on_error='allow'). With `as_of`/`known_at`: was it allowed at that
        valid time, as known at that transaction time (from the recorded status history)?"""
        chosen = _policy(policy or self.policy, at_risk, unknown, on_error)
        try:
            if as_of is not None or known_at is not None:
                return self._driver.run(lambda: check_at(target, chosen, as_of=as_of,
                                                         known_at=known_at))
            return self._driver.run(lambda: preflight.check(target, chosen))
        except DatabaseError as exc:
            return preflight.error_verdict(target, exc, chosen)

    def guard(self, target: Target, **policy: Any) -> Verdict:
        """Like `check`, but raises PremiseRetractedError when denied."""
        verdict = self.check(target, **policy)
        if not verdict.allowed:
            raise PremiseRetractedError(verdict)
        return verdict


class AsyncRippl(AsyncReviewMethods, AsyncExplainMethods, AsyncIngestMethods,
                 AsyncRecordMethods, AsyncTemporalMethods, AsyncSubjectMethods):
    """The asyncio twin of `Rippl`: the same operations, awaited."""

    def __init__(self, location: Location, graph: str, client: redis.asyncio.Redis,
                 server: EmbeddedServer | None, policy: Policy, distinct_approver: bool = False) -> None:
        self.location, self.graph, self.policy = location, graph, policy
        self.distinct_approver = distinct_approver
        self._client, self._server = client, server
        self._driver = AsyncDriver(client, graph, location.describe())

    @classmethod
    async def open(cls, path: PathLike | None = None, *, url: str | None = None,
                   graph: str = "rippl", policy: Policy | None = None,
                   distinct_approver: bool = False) -> AsyncRippl:
        location = locate(path, url)
        graph = _graph_name(graph)

        def prepare() -> EmbeddedServer | None:
            server, client = _prepare(location)
            try:
                SyncDriver(client, graph, location.describe()).ensure_schema()
            finally:
                client.close()
            return server

        server = await asyncio.to_thread(prepare)
        client = async_client(location, server.socket_path if server else None)
        return cls(location, graph, client, server, policy or Policy(), distinct_approver)

    async def close(self) -> None:
        await self._client.aclose()
        if self._server is not None:
            server, self._server = self._server, None
            await asyncio.to_thread(server.close)

    async def drop(self) -> None:
        """Delete this graph and everything Rippl keeps for it, then recreate the empty schema."""
        with translated_errors(self.location.describe()):
            async for key in self._client.scan_iter(match=graph_keys(self.graph)):
                await self._client.delete(key)
            if await self._client.exists(self.graph):
                await self._client.execute_command("GRAPH.DELETE", self.graph)
        sync = sync_client(self.location, self._server.socket_path if self._server else None)
        try:
            await asyncio.to_thread(SyncDriver(sync, self.graph, self.location.describe()).ensure_schema)
        finally:
            sync.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    @property
    def redis(self) -> redis.asyncio.Redis:
        return self._client

    async def add_source(self, id: str | None, title: str, *, uri: str | None = None,
                         kind: str | None = None, replace: bool = False) -> Node:
        spec = source_spec(id, title, uri=uri, kind=kind)
        return await self._driver.run(lambda: ops.add(spec, replace=replace), write=True)

    async def add_claim(self, id: str | None, text: str, *, sources: Sequence[str] = (),
                        derived_from: Sequence[str] = (), replace: bool = False) -> Node:
        spec = claim_spec(id, text, sources=sources, derived_from=derived_from)
        return await self._driver.run(lambda: ops.add(spec, replace=replace), write=True)

    async def add_decision(self, id: str | None, title: str, *, premises: Sequence[str] = (),
                           depends_on: Sequence[str] = (), replace: bool = False) -> Node:
        spec = decision_spec(id, title, premises=premises, depends_on=depends_on)
        return await self._driver.run(lambda: ops.add(spec, replace=replace), write=True)

    async def add_action(self, id: str | None, title: str, *, decisions: Sequence[str] = (),
                         tool: str | None = None, args: Mapping[str, Any] | None = None,
                         triggers: Sequence[str] = (), replace: bool = False) -> Node:
        spec = action_spec(id, title, decisions=decisions, tool=tool, args=args, triggers=triggers)
        return await self._driver.run(lambda: ops.add(spec, replace=replace), write=True)

    async def justify(self, node_id: str, antecedents: Sequence[str]) -> bool:
        return await self._driver.run(lambda: ops.add_justification(node_id, antecedents),
                                      write=True)

    async def load(self, spec: Mapping[str, Any] | GraphSpec | PathLike, *,
                   replace: bool = False) -> LoadReport:
        graph = read_spec(spec if not isinstance(spec, os.PathLike) else Path(spec))
        return await self._driver.run(lambda: ops.load(graph, replace=replace), write=True)

    async def retract(self, claim_id: str, *, reason: str, by: str, at: TimeLike | None = None,
                      signing_key: SigningKey | None = None) -> Wave:
        return await self._driver.run(lambda: ops.retraction(
            claim_id, retracted=True, reason=reason, by=by, at=at, signing_key=signing_key), write=True)

    async def reinstate(self, claim_id: str, *, reason: str, by: str, at: TimeLike | None = None,
                        signing_key: SigningKey | None = None) -> Wave:
        return await self._driver.run(lambda: ops.retraction(
            claim_id, retracted=False, reason=reason, by=by, at=at, signing_key=signing_key), write=True)

    async def get(self, id: str) -> Node:
        return await self._driver.run(lambda: ops.get(id))

    async def blast_radius(self, node_id: str, *, max_depth: int | None = None) -> list[Reached]:
        return await self._driver.run(lambda: ops.reach(node_id, down=True, max_depth=max_depth))

    async def premises(self, node_id: str, *, max_depth: int | None = None) -> list[Reached]:
        return await self._driver.run(lambda: ops.reach(node_id, down=False, max_depth=max_depth))

    async def stats(self) -> Stats:
        return await self._driver.run(ops.stats)

    async def check(self, target: Target, *, at_risk: str | None = None,
                    unknown: str | None = None, on_error: str | None = None,
                    policy: Policy | None = None, as_of: TimeLike | None = None,
                    known_at: TimeLike | None = None) -> Verdict:
        chosen = _policy(policy or self.policy, at_risk, unknown, on_error)
        try:
            if as_of is not None or known_at is not None:
                return await self._driver.run(lambda: check_at(target, chosen, as_of=as_of,
                                                               known_at=known_at))
            return await self._driver.run(lambda: preflight.check(target, chosen))
        except DatabaseError as exc:
            return preflight.error_verdict(target, exc, chosen)

    async def guard(self, target: Target, **policy: Any) -> Verdict:
        verdict = await self.check(target, **policy)
        if not verdict.allowed:
            raise PremiseRetractedError(verdict)
        return verdict
