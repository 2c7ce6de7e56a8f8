"""Bitemporal beliefs on the handles: `Rippl` gets `TemporalMethods`, `AsyncRippl` the async twin.

Times are aware datetimes or ISO-8601 strings with an offset (naive ones are refused); `as_of` is
valid time (when it held) and `known_at` transaction time (what Rippl knew then), both default now.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rippl_core import temporal, whatif
from rippl_core.temporal_models import Belief, BeliefChange, StatusChange, WhatIf, WhatIfRetracted
from rippl_core.timeutil import TimeLike

if TYPE_CHECKING:
    from rippl_core.driver import AsyncDriver, SyncDriver


class TemporalMethods:
    """Beliefs with valid and transaction time, their history, and counterfactuals."""

    _driver: SyncDriver

    def believe(self, agent: str, claim_id: str, *, topic: str, valid_from: TimeLike | None = None,
                recorded_at: TimeLike | None = None, evidence: Sequence[str] = (),
                note: str | None = None) -> Belief:
        """The agent adopts a claim about a topic from `valid_from` (default: now). The interval
        it held before is closed there, never deleted. A past `valid_from` records late knowledge."""
        return self._driver.run(lambda: temporal.believe(
            agent, claim_id, topic=topic, valid_from=valid_from, recorded_at=recorded_at,
            evidence=evidence, note=note), write=True)

    def retract_belief(self, agent: str, topic: str, *, at: TimeLike | None = None,
                       reason: str | None = None,
                       recorded_at: TimeLike | None = None) -> Belief | None:
        """The agent stops believing what it held about the topic at `at` (default: now). Returns
        the closed interval, or None if it believed nothing then."""
        return self._driver.run(lambda: temporal.retract_belief(
            agent, topic, at=at, reason=reason, recorded_at=recorded_at), write=True)

    def revise(self, agent: str, topic: str, claim_id: str, *, valid_from: TimeLike,
               valid_to: TimeLike | None = None, evidence: Sequence[str] = (),
               note: str | None = None, recorded_at: TimeLike | None = None) -> Belief:
        """Correct history: over [valid_from, valid_to) the agent held this claim. The rows it
        replaces are superseded (still readable with an earlier `known_at`), never rewritten."""
        return self._driver.run(lambda: temporal.revise(
            agent, topic, claim_id, valid_from=valid_from, valid_to=valid_to, evidence=evidence,
            note=note, recorded_at=recorded_at), write=True)

    def ask(self, agent: str, topic: str, *, as_of: TimeLike | None = None,
            known_at: TimeLike | None = None) -> Belief | None:
        """The belief held about the topic at `as_of`, as recorded at `known_at` (None: none)."""
        return self._driver.run(lambda: temporal.ask(agent, topic, as_of=as_of, known_at=known_at))

    def beliefs(self, agent: str, *, as_of: TimeLike | None = None,
                known_at: TimeLike | None = None) -> list[Belief]:
        """Every belief the agent held at `as_of`, one per topic."""
        return self._driver.run(lambda: temporal.beliefs(agent, as_of=as_of, known_at=known_at))

    def timeline(self, agent: str, topic: str, *, known_at: TimeLike | None = None) -> list[Belief]:
        """Every interval of the agent's belief about the topic, oldest first, with its evidence."""
        return self._driver.run(lambda: temporal.timeline(agent, topic, known_at=known_at))

    def why_changed(self, agent: str, topic: str, at: TimeLike, *,
                    known_at: TimeLike | None = None) -> BeliefChange:
        """The change nearest `at`: the belief before and after, and the evidence that arrived."""
        return self._driver.run(lambda: temporal.why_changed(agent, topic, at, known_at=known_at))

    def history(self, node_id: str, *, known_at: TimeLike | None = None) -> list[StatusChange]:
        """Every status change of a causal node, with valid and transaction times."""
        return self._driver.run(lambda: temporal.history(node_id, known_at=known_at))

    def what_if(self, agent: str, topic: str, *, without: Sequence[str],
                as_of: TimeLike | None = None, known_at: TimeLike | None = None) -> WhatIf:
        """What the agent would believe had these evidence sources never existed, next to what it
        does believe. Read-only: the live graph is never written."""
        return self._driver.run(lambda: whatif.what_if(agent, topic, without=without,
                                                         as_of=as_of, known_at=known_at))

    def what_if_retracted(self, claim_ids: Sequence[str]) -> WhatIfRetracted:
        """Which decisions and actions would be blocked if these claims were retracted. Read-only."""
        return self._driver.run(lambda: whatif.what_if_retracted(claim_ids))


class AsyncTemporalMethods:
    """The asyncio twin of `TemporalMethods`."""

    _driver: AsyncDriver

    async def believe(self, agent: str, claim_id: str, *, topic: str,
                      valid_from: TimeLike | None = None, recorded_at: TimeLike | None = None,
                      evidence: Sequence[str] = (), note: str | None = None) -> Belief:
        return await self._driver.run(lambda: temporal.believe(
            agent, claim_id, topic=topic, valid_from=valid_from, recorded_at=recorded_at,
            evidence=evidence, note=note), write=True)

    async def retract_belief(self, agent: str, topic: str, *, at: TimeLike | None = None,
                             reason: str | None = None,
                             recorded_at: TimeLike | None = None) -> Belief | None:
        return await self._driver.run(lambda: temporal.retract_belief(
            agent, topic, at=at, reason=reason, recorded_at=recorded_at), write=True)

    async def revise(self, agent: str, topic: str, claim_id: str, *, valid_from: TimeLike,
                     valid_to: TimeLike | None = None, evidence: Sequence[str] = (),
                     note: str | None = None, recorded_at: TimeLike | None = None) -> Belief:
        return await self._driver.run(lambda: temporal.revise(
            agent, topic, claim_id, valid_from=valid_from, valid_to=valid_to, evidence=evidence,
            note=note, recorded_at=recorded_at), write=True)

    async def ask(self, agent: str, topic: str, *, as_of: TimeLike | None = None,
                  known_at: TimeLike | None = None) -> Belief | None:
        return await self._driver.run(lambda: temporal.ask(agent, topic, as_of=as_of,
                                                           known_at=known_at))

    async def beliefs(self, agent: str, *, as_of: TimeLike | None = None,
                      known_at: TimeLike | None = None) -> list[Belief]:
        return await self._driver.run(lambda: temporal.beliefs(agent, as_of=as_of,
                                                               known_at=known_at))

    async def timeline(self, agent: str, topic: str, *,
                       known_at: TimeLike | None = None) -> list[Belief]:
        return await self._driver.run(lambda: temporal.timeline(agent, topic, known_at=known_at))

    async def why_changed(self, agent: str, topic: str, at: TimeLike, *,
                          known_at: TimeLike | None = None) -> BeliefChange:
        return await self._driver.run(lambda: temporal.why_changed(agent, topic, at,
                                                                   known_at=known_at))

    async def history(self, node_id: str, *, known_at: TimeLike | None = None) -> list[StatusChange]:
        return await self._driver.run(lambda: temporal.history(node_id, known_at=known_at))

    async def what_if(self, agent: str, topic: str, *, without: Sequence[str],
                      as_of: TimeLike | None = None, known_at: TimeLike | None = None) -> WhatIf:
        return await self._driver.run(lambda: whatif.what_if(agent, topic, without=without,
                                                               as_of=as_of, known_at=known_at))

    async def what_if_retracted(self, claim_ids: Sequence[str]) -> WhatIfRetracted:
        return await self._driver.run(lambda: whatif.what_if_retracted(claim_ids))
