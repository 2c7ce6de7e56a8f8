"""The review gate on the handles: `Rippl` gets `ReviewMethods`, `AsyncRippl` the async twin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rippl_core import review
from rippl_core.events import AsyncEventStream, EventStream
from rippl_core.models import Receipt, ReceiptCheck, ReviewItem
from rippl_core.receipts import SigningKey
from rippl_core.timeutil import now_ms

if TYPE_CHECKING:
    import redis
    import redis.asyncio

    from rippl_core.driver import AsyncDriver, SyncDriver


class ReviewMethods:
    """Propose, approve, reject; receipts and live events."""

    _driver: SyncDriver
    _client: redis.Redis
    graph: str
    distinct_approver: bool

    def propose_retraction(self, claim_id: str, *, reason: str, by: str,
                           evidence: str | None = None) -> ReviewItem:
        """Flag a claim as false: it and what rests on it go AT_RISK until a human decides."""
        return self._driver.run(lambda: review.propose(claim_id, reason=reason, by=by,
                                                       evidence=evidence, now=now_ms()), write=True)

    def approve(self, review_id: str, *, by: str, note: str | None = None,
                signing_key: SigningKey | None = None) -> Receipt:
        """Commit the wave: what has no remaining support goes OUT. Returns the receipt."""
        return self._driver.run(lambda: review.decide(
            review_id, approve=True, by=by, note=note, now=now_ms(), signing_key=signing_key,
            distinct_approver=self.distinct_approver), write=True)

    def reject(self, review_id: str, *, by: str, note: str | None = None,
               signing_key: SigningKey | None = None) -> Receipt:
        """Withdraw the proposal: the at-risk nodes return to the state they had."""
        return self._driver.run(lambda: review.decide(
            review_id, approve=False, by=by, note=note, now=now_ms(), signing_key=signing_key,
            distinct_approver=self.distinct_approver), write=True)

    def review(self, review_id: str) -> ReviewItem:
        return self._driver.run(lambda: review.get_review(review_id))

    def reviews(self, status: str | None = "pending") -> list[ReviewItem]:
        return self._driver.run(lambda: review.list_reviews(status))

    def receipts(self) -> list[Receipt]:
        return self._driver.run(review.list_receipts)

    def verify_receipts(self, public_keys: Mapping[str, Any] | None = None) -> ReceiptCheck:
        """Re-walk the chain; report every edited, deleted, inserted or reordered receipt."""
        return self._driver.run(lambda: review.verify(public_keys))

    def subscribe(self) -> EventStream:
        """Live events of this graph (status changes, review decisions), from now on."""
        return EventStream(self._client, self.graph)


class AsyncReviewMethods:
    """The asyncio twin of `ReviewMethods`."""

    _driver: AsyncDriver
    _client: redis.asyncio.Redis
    graph: str
    distinct_approver: bool

    async def propose_retraction(self, claim_id: str, *, reason: str, by: str,
                                 evidence: str | None = None) -> ReviewItem:
        return await self._driver.run(lambda: review.propose(
            claim_id, reason=reason, by=by, evidence=evidence, now=now_ms()), write=True)

    async def approve(self, review_id: str, *, by: str, note: str | None = None,
                      signing_key: SigningKey | None = None) -> Receipt:
        return await self._driver.run(lambda: review.decide(
            review_id, approve=True, by=by, note=note, now=now_ms(), signing_key=signing_key,
            distinct_approver=self.distinct_approver), write=True)

    async def reject(self, review_id: str, *, by: str, note: str | None = None,
                     signing_key: SigningKey | None = None) -> Receipt:
        return await self._driver.run(lambda: review.decide(
            review_id, approve=False, by=by, note=note, now=now_ms(), signing_key=signing_key,
            distinct_approver=self.distinct_approver), write=True)

    async def review(self, review_id: str) -> ReviewItem:
        return await self._driver.run(lambda: review.get_review(review_id))

    async def reviews(self, status: str | None = "pending") -> list[ReviewItem]:
        return await self._driver.run(lambda: review.list_reviews(status))

    async def receipts(self) -> list[Receipt]:
        return await self._driver.run(review.list_receipts)

    async def verify_receipts(self, public_keys: Mapping[str, Any] | None = None) -> ReceiptCheck:
        return await self._driver.run(lambda: review.verify(public_keys))

    async def subscribe(self) -> AsyncEventStream:
        return await AsyncEventStream(self._client, self.graph).start()
