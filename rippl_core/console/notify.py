"""Webhook notifications: chosen events of the graph, posted as JSON to a URL while the console
serves (`rippl serve --notify URL`, or `create_app(..., webhooks=[Webhook(...)])`).

Each event is one POST whose body is `{"delivery": "<epoch>:<seq>", "graph": G, "event": {...}}`,
signed with HMAC-SHA256 over the exact body bytes with the webhook's secret, in the header
`X-Rippl-Signature: sha256=<hex>` (the delivery id is also `X-Rippl-Delivery`, the event type
`X-Rippl-Event`). A receiver recomputes the HMAC over the body it read and compares in constant
time.

Delivery follows the console's numbered event stream (console/stream.py), never a commit: a
commit publishes its events and returns; the notifier reads them from the stream's ring at its
own pace. Its position is the sequence number of the last event it handled; it moves on only
once the receiver answered 2xx, retrying with exponential backoff meanwhile. So a receiver that is
down for a while gets every chosen event, in order, once it is back, and none twice (unless it
fails after processing and before answering: the delivery id lets it drop a repeat). Events are
lost to it only if more than the ring holds arrive while it is down, or the subscription breaks:
that gap is counted and shown. Failures (the last error, attempts, the next retry) are visible in
the console (`GET /api/notifications`, and the header of the page).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel

from rippl_core.errors import InvalidInputError
from rippl_core.models import Event

if TYPE_CHECKING:
    from rippl_core.console.stream import EventHub

log: logging.Logger = logging.getLogger("rippl.console.notify")

DEFAULT_EVENTS: Final = frozenset({"compensation_needed", "compensation_resolved",
                                   "review_proposed", "review_approved", "review_rejected",
                                   "node_invalidated", "call_vetoed", "call_stale",
                                   "call_superseded"})
KNOWN_EVENTS: Final = frozenset(get_args(Event.model_fields["type"].annotation))
SIGNATURE_HEADER: Final = "X-Rippl-Signature"
DELIVERY_HEADER: Final = "X-Rippl-Delivery"
EVENT_HEADER: Final = "X-Rippl-Event"


def check_url(url: str) -> str:
    """A webhook URL: http(s), with a host, a valid port, no credentials, spaces or fragment."""
    def bad(why: str) -> InvalidInputError:
        return InvalidInputError(f"--notify {url!r} is not a usable webhook URL: {why} (e.g. "
                                 "https://hooks.example.com/rippl or http://127.0.0.1:9000/hook)")

    if not isinstance(url, str) or not url or any(c.isspace() for c in url):
        raise bad("it is empty or contains white space")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise bad("the scheme must be http or https")
    if not parts.hostname:
        raise bad("it names no host")
    try:
        parts.port  # noqa: B018 - parsing the port validates it
    except ValueError:
        raise bad("its port is not a number from 0 to 65535") from None
    if parts.username is not None or parts.password is not None:
        raise bad("put no credentials in the URL; the body is signed with --notify-secret")
    if parts.fragment:
        raise bad("a fragment is never sent to the server")
    return url


def check_events(names: Iterable[str]) -> frozenset[str]:
    chosen = frozenset(n.strip() for n in names if n.strip())
    unknown = sorted(chosen - KNOWN_EVENTS)
    if unknown or not chosen:
        raise InvalidInputError(f"unknown event types to notify: {', '.join(unknown) or '(none)'}; "
                                f"choose from {', '.join(sorted(KNOWN_EVENTS))}")
    return chosen


def sign(secret: bytes, body: bytes) -> str:
    """The signature header's value for a body."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def signature_valid(secret: bytes, body: bytes, header: str | None) -> bool:
    """What a receiver checks (constant-time)."""
    return header is not None and hmac.compare_digest(sign(secret, body), header)


@dataclass(frozen=True)
class Webhook:
    """Where to post which events, and the secret their signature is made with."""

    url: str
    secret: bytes
    events: frozenset[str] = DEFAULT_EVENTS
    timeout: float = 10.0
    retry_base: float = 0.5   # seconds before the first retry; doubled each time
    retry_max: float = 60.0   # the longest wait between retries

    def __post_init__(self) -> None:
        check_url(self.url)
        if not self.secret:
            raise InvalidInputError("a webhook needs a secret to sign its bodies with "
                                    "(--notify-secret, or RIPPL_NOTIFY_SECRET)")
        check_events(self.events)


class DeliveryStatus(BaseModel):
    """How deliveries to one webhook go (what the console shows)."""

    url: str
    events: list[str]
    delivered: int = 0
    failed_attempts: int = 0
    failing: bool = False
    last_error: str | None = None
    last_error_at: float | None = None
    last_delivered_at: float | None = None
    next_retry_in: float | None = None
    position: str | None = None  # the last event handled: "<epoch>:<seq>"
    pending: int = 0             # events after the position, not yet handled
    missed: int = 0              # events lost to a broken subscription or a full ring


@dataclass
class _Hook:
    webhook: Webhook
    status: DeliveryStatus
    task: asyncio.Task[None] | None = None


def _post(webhook: Webhook, body: bytes, delivery: str, kind: str) -> int:
    request = urllib.request.Request(webhook.url, data=body, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": "rippl-webhook/1",
        SIGNATURE_HEADER: sign(webhook.secret, body), DELIVERY_HEADER: delivery,
        EVENT_HEADER: kind})
    try:
        with urllib.request.urlopen(request, timeout=webhook.timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@dataclass
class Notifier:
    """Posts the chosen events of `hub` to each webhook, each on its own task and position."""

    hub: EventHub
    graph: str
    webhooks: list[Webhook]
    _hooks: list[_Hook] = field(default_factory=list)

    async def start(self) -> None:
        """Subscribe and start delivering events published from now on."""
        await self.hub.start()
        for webhook in self.webhooks:
            hook = _Hook(webhook, DeliveryStatus(url=webhook.url, events=sorted(webhook.events)))
            hook.status.position = f"{self.hub.epoch}:{self.hub.seq}"
            hook.task = asyncio.create_task(self._run(hook, self.hub.seq, self.hub.epoch),
                                            name=f"rippl-webhook-{webhook.url}")
            self._hooks.append(hook)

    async def close(self) -> None:
        for hook in self._hooks:
            if hook.task is not None:
                hook.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await hook.task

    def statuses(self) -> list[DeliveryStatus]:
        for hook in self._hooks:
            epoch, _, seq = (hook.status.position or ":0").partition(":")
            hook.status.pending = max(self.hub.seq - int(seq or 0), 0) \
                if epoch == self.hub.epoch else 0
        return [hook.status.model_copy() for hook in self._hooks]

    async def _run(self, hook: _Hook, cursor: int, epoch: str) -> None:
        while True:
            events, head, now_epoch = await self.hub.next_events(cursor, epoch)
            if events is None:  # the subscription broke or the ring moved past us: a gap
                hook.status.missed += max(head - cursor, 0) if now_epoch == epoch else 1
                hook.status.last_error = "events were missed (the event subscription broke, or " \
                                         "more arrived than the stream keeps while deliveries failed)"
                hook.status.last_error_at = time.time()
                cursor, epoch = head, now_epoch
                hook.status.position = f"{epoch}:{cursor}"
                continue
            for offset, event in enumerate(events, start=1):
                seq = cursor + offset
                if event.get("type") in hook.webhook.events:
                    await self._deliver(hook, f"{epoch}:{seq}", event)
                hook.status.position = f"{epoch}:{seq}"
            cursor += len(events)

    async def _deliver(self, hook: _Hook, delivery: str, event: dict[str, Any]) -> None:
        """Post until the receiver answers 2xx (backing off), then return."""
        webhook, status = hook.webhook, hook.status
        body = json.dumps({"delivery": delivery, "graph": self.graph, "event": event},
                          separators=(",", ":"), sort_keys=True).encode()
        wait = webhook.retry_base
        while True:
            try:
                code = await asyncio.to_thread(_post, webhook, body, delivery, str(event.get("type")))
                error = None if 200 <= code < 300 else f"the receiver answered HTTP {code}"
            except (OSError, ValueError) as exc:
                error = f"{type(exc).__name__}: {getattr(exc, 'reason', None) or exc}"
            if error is None:
                status.delivered += 1
                status.failing, status.next_retry_in = False, None
                status.last_delivered_at = time.time()
                return
            status.failed_attempts += 1
            status.failing, status.last_error, status.last_error_at = True, error, time.time()
            status.next_retry_in = wait
            log.warning("webhook %s: delivery %s failed (%s); retrying in %.1fs", webhook.url,
                        delivery, error, wait)
            await asyncio.sleep(wait)
            wait = min(wait * 2, webhook.retry_max)
