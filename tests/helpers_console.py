"""Shared by the console tests: reviewers, an in-process client, a graph with beliefs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from helpers_core import loopback_graph
from helpers_process import stop, wait_for_port

from rippl_core import AsyncRippl, Rippl
from rippl_core.console.app import create_app
from rippl_core.console.auth import parse_reviewers
from rippl_core.testing import free_port

REPO = Path(__file__).resolve().parents[1]
INCIDENT = REPO / "examples" / "incident.yaml"
ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
REVIEWERS = parse_reviewers([f"alice: {ALICE}", f"bob: {BOB}"], where="test")
BASE = "http://127.0.0.1:8765"


@asynccontextmanager
async def client(rippl: AsyncRippl, **options: Any):  # type: ignore[no-untyped-def]
    options.setdefault("reviewers", REVIEWERS)
    app = create_app(rippl, **options)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url=BASE) as http:
        yield http


@contextmanager
def incident_graph(url: str, prefix: str) -> Iterator[Rippl]:
    """`loopback_graph` with the example incident loaded."""
    with loopback_graph(url, prefix) as handle:
        handle.load(INCIDENT)
        yield handle


@contextmanager
def serving(url: str, graph: str, log: Path, *options: str,
            env: Mapping[str, str] | None = None, port: int | None = None) -> Iterator[str]:
    """`rippl --url URL --graph G serve --port P [options]` as a process on a loopback port (a
    free one unless given), stopped afterwards (its output in `log`): the console's address."""
    port = port or free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "rippl_core.cli", "--url", url, "--graph", graph, "serve",
             "--port", str(port), *options], stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
            env={**os.environ, **(env or {})})
        try:
            wait_for_port(port, process, log)
            yield f"http://127.0.0.1:{port}/"
        finally:
            stop(process, timeout=20)


async def sign_in(http: httpx.AsyncClient, token: str = ALICE) -> str:
    """Sign in; returns the CSRF token (the session cookie stays in the client)."""
    response = await http.post("/api/session", json={"token": token})
    assert response.status_code == 200, response.text
    return str(response.json()["csrf"])


def oct(day: int, hour: int = 9) -> datetime:
    return datetime(2026, 10, day, hour, tzinfo=UTC)


async def add_beliefs(rippl: AsyncRippl) -> None:
    await rippl.add_source("SRC-B1", "cache dashboard")
    await rippl.add_source("SRC-B2", "pool export")
    await rippl.add_claim("CLM-B1", "the cache is misconfigured", sources=["SRC-B1"])
    await rippl.add_claim("CLM-B2", "the pool is exhausted", sources=["SRC-B2"])
    await rippl.believe("sre-agent", "CLM-B1", topic="outage/root-cause", valid_from=oct(4),
                        evidence=["SRC-B1"])
    await rippl.believe("sre-agent", "CLM-B2", topic="outage/root-cause", valid_from=oct(7),
                        evidence=["SRC-B2"])
