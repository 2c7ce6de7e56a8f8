"""Webhook notifications against a real local HTTP receiver that checks every signature: chosen
events only, signed over the body, retried with backoff while the receiver is down (answering 503,
then not listening at all), and every event after it returns delivered in order, none twice; the
failures are visible in the console's API; a commit never waits for a delivery; malformed URLs
are refused at the start with a clear error."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers_console import client
from typer.testing import CliRunner

from rippl_core import AsyncRippl, InvalidInputError
from rippl_core.cli import app as cli
from rippl_core.console.notify import Webhook, check_url, sign, signature_valid
from rippl_core.testing import free_port

SECRET = b"webhook-secret-0123456789"


class Receiver:
    """A webhook receiver on loopback: verifies the signature of each POST and records it;
    `down` makes it answer 503; `stop()`/`start()` close and reopen its port."""

    def __init__(self, port: int) -> None:
        self.port, self.down, self.bad = port, False, 0
        self.received: list[dict[str, Any]] = []
        self.attempts = 0
        self.server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.attempts += 1
                if not signature_valid(SECRET, body, self.headers.get("X-Rippl-Signature")):
                    receiver.bad += 1
                    self.send_response(401)
                elif receiver.down:
                    self.send_response(503)
                else:
                    payload = json.loads(body)
                    assert payload["delivery"] == self.headers["X-Rippl-Delivery"]
                    assert payload["event"]["type"] == self.headers["X-Rippl-Event"]
                    receiver.received.append(payload)
                    self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.allow_reuse_address = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver(free_port())
    found.start()
    yield found
    found.stop()


async def until(condition: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def settled(http: Any, condition: Any, timeout: float = 20.0) -> dict[str, Any]:
    """The webhook's status from the console API, once `condition` holds of it."""
    deadline = time.monotonic() + timeout
    while True:
        [status] = (await http.get("/api/notifications")).json()
        if condition(status):
            return dict(status)
        assert time.monotonic() < deadline, f"timed out; the status is {status}"
        await asyncio.sleep(0.05)


@pytest.mark.asyncio(loop_scope="session")
async def test_a_receiver_down_for_a_while_gets_every_event_once(rippl: AsyncRippl,
                                                                receiver: Receiver) -> None:
    hook = Webhook(receiver.url, SECRET, events=frozenset({"review_proposed", "compensation_needed"}),
                   retry_base=0.05, retry_max=0.4)
    async with client(rippl, webhooks=[hook]) as http:
        await rippl.mark_executed("ACT-001")
        first = await rippl.propose_retraction("CLM-001", reason="disk errors", by="monitor")
        await until(lambda: len(receiver.received) == 1)
        [got] = receiver.received
        assert got["event"]["type"] == "review_proposed" and got["event"]["review"] == first.id
        assert got["graph"] == rippl.graph
        # the receiver counts a request when it arrives, the notifier once it has read the reply
        status = await settled(http, lambda s: s["delivered"] == 1)
        assert not status["failing"]

        # the receiver goes down (503): commits do not wait, deliveries fail and are retried
        receiver.down = True
        started = time.monotonic()
        await rippl.approve(first.id, by="alice")  # ACT-001 ran: compensation_needed
        later = [await rippl.propose_retraction(c, reason="checking", by="monitor")
                 for c in ("CLM-002", "CLM-003")]
        assert time.monotonic() - started < 10  # never blocked on the receiver
        await until(lambda: receiver.attempts >= 3)
        # the receiver counts a request when it arrives; the notifier records the failure once it
        # has read the 503, a moment later: the status is read once it has
        status = await settled(http, lambda s: s["failed_attempts"] >= 2)
        assert status["failing"] and "HTTP 503" in status["last_error"]
        assert status["pending"] >= 1 and status["failed_attempts"] >= 2

        # ... then stops listening at all (connection refused), while more happens
        receiver.stop()
        fourth = await rippl.propose_retraction("CLM-004", reason="checking", by="monitor")
        status = await settled(http, lambda s: "refused" in (s["last_error"] or "").lower())
        assert status["failing"], status
        page = await http.get("/")
        assert page.status_code == 200

        # back: every chosen event since, in order, none twice
        receiver.down = False
        receiver.start()
        expected = 1 + 1 + 3  # the first proposal, compensation_needed, three proposals
        await until(lambda: len(receiver.received) >= expected)
        await asyncio.sleep(0.5)  # nothing more, nothing twice
        kinds = [r["event"]["type"] for r in receiver.received]
        assert kinds.count("compensation_needed") == 1
        reviews = [r["event"]["review"] for r in receiver.received if r["event"]["type"] == "review_proposed"]
        assert reviews == [first.id, *(r.id for r in later), fourth.id]
        deliveries = [r["delivery"] for r in receiver.received]
        assert len(deliveries) == len(set(deliveries)) == expected
        seqs = [int(d.split(":")[1]) for d in deliveries]
        assert seqs == sorted(seqs)
        assert receiver.bad == 0  # every body carried a valid signature
        status = await settled(http, lambda s: s["delivered"] == expected)
        assert not status["failing"] and status["pending"] == 0


def test_the_signature_covers_the_body() -> None:
    body = b'{"delivery":"e:1","event":{"type":"review_proposed"},"graph":"g"}'
    header = sign(SECRET, body)
    assert header.startswith("sha256=") and len(header) == 7 + 64
    assert signature_valid(SECRET, body, header)
    assert not signature_valid(SECRET, body.replace(b"g\"}", b"h\"}"), header)
    assert not signature_valid(b"another secret", body, header)
    assert not signature_valid(SECRET, body, None)


@pytest.mark.parametrize("url", ["", "ftp://example.com/hook", "http://", "hooks.example.com/x",
                                 "http://example.com:99999/", "https://user:pw@example.com/",
                                 "http://exa mple.com/", "http://example.com/#frag"])
def test_malformed_urls_are_refused(url: str) -> None:
    with pytest.raises(InvalidInputError, match="not a usable webhook URL"):
        check_url(url)


def test_serve_refuses_a_malformed_notify_url_at_start(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(cli, ["--db", str(tmp_path / "r.db"), "serve", "--notify", "ftp://x/y",
                              "--notify-secret", "s3cret"])
    assert bad.exit_code == 2, bad.output
    assert "not a usable webhook URL: the scheme must be http or https" in " ".join(bad.output.split())
    assert not (tmp_path / "r.db").exists()  # refused before opening anything
    nosecret = runner.invoke(cli, ["--db", str(tmp_path / "r.db"), "serve", "--notify",
                                   "http://127.0.0.1:9/hook"], env={"RIPPL_NOTIFY_SECRET": ""})
    assert nosecret.exit_code == 2 and "secret" in nosecret.output, nosecret.output
    unknown = runner.invoke(cli, ["--db", str(tmp_path / "r.db"), "serve", "--notify",
                                  "http://127.0.0.1:9/hook", "--notify-secret", "s",
                                  "--notify-events", "review_proposed,nope"])
    assert unknown.exit_code == 2 and "nope" in unknown.output, unknown.output


def test_stale_and_superseded_denials_reach_a_subscriber(tmp_path: Path) -> None:
    """The events of a call denied as stale or superseded, and of a superseded reading, parse (a
    subscriber, the console's stream and so the webhooks, received them as errors before)."""
    from rippl_core import Rippl, ToolCall
    from rippl_core.testing import Clock

    with Clock("2026-12-01T10:00:00Z") as clock, Rippl.open(tmp_path / "r.db") as rippl:
        events = rippl.subscribe()
        run = rippl.run("r1")
        health = ToolCall(name="get_health", args={"shard": "09"}, id="h1")
        run.decide("t1", [health], context=[])
        run.executed(health, "shard 09: healthy", fresh_for=300)
        clock.advance(minutes=12)
        [stale] = run.decide("t2", [ToolCall(name="migrate", args={"shard": "09"}, id="m1")],
                             context=["h1"])
        assert not stale.allowed
        again = health.model_copy(update={"id": "h2"})
        run.decide("t3", [again], context=[])
        run.executed(again, "shard 09: degraded", fresh_for=300)
        seen = []
        while (event := events.get(timeout=2)) is not None:
            seen.append(event.type)
        events.close()
        assert "call_stale" in seen and "reading_superseded" in seen, seen
