"""A real trace backend: Arize Phoenix on loopback, a captured LangGraph agent exporting OTLP to
it, and the trace read back with Phoenix's own client: Rippl's spans sit under the agent's, the
veto event with its trail is there. `pytest -m phoenix` (its own CI step: Phoenix takes minutes to
start on two busy cores). The server runs from its own environment (tools/phoenix, built by
`uv sync --project tools/phoenix --frozen`), offline: no telemetry, nothing fetched.

With chromium at /usr/bin/chromium it also takes a screenshot of the trace in Phoenix's UI (headless,
no background networking); RIPPL_PHOENIX_SCREENSHOT=path keeps it (the README's picture:
docs/img/phoenix-trace.png)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers_process import stop
from helpers_telemetry import telemetry
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from phoenix.client import Client
from rippl_langgraph import RipplMiddleware
from rippl_langgraph.testing import ScriptedChatModel, calls
from test_nesting_langgraph import HEALTH, MIGRATE, declare, tools

from rippl_core import Rippl
from rippl_core.testing import free_port

pytestmark = pytest.mark.phoenix

REPO = Path(__file__).resolve().parents[2]
PHOENIX = REPO / "tools" / "phoenix" / ".venv" / "bin" / "phoenix"
CHROMIUM = Path("/usr/bin/chromium")
START_TIMEOUT = 600  # seconds: its first start migrates a fresh database, on two shared cores


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server on loopback, stopped afterwards; its base URL."""
    if not PHOENIX.exists():
        pytest.fail("Phoenix's environment is missing: uv sync --project tools/phoenix --frozen")
    home = tmp_path_factory.mktemp("phoenix")
    port, grpc = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))}
    env |= {"PHOENIX_WORKING_DIR": str(home), "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc),
            "PHOENIX_TELEMETRY_ENABLED": "false",  # no usage reports
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",  # the UI loads nothing from outside
            "HF_HUB_OFFLINE": "1", "DO_NOT_TRACK": "1"}
    log = (home / "server.log").open("w")
    server = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if server.poll() is not None:
                pytest.fail(f"Phoenix exited: {(home / 'server.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"Phoenix did not start in {START_TIMEOUT} s")
            time.sleep(2)
        yield url
    finally:
        stop(server)
        log.close()


def test_the_veto_is_in_phoenix_under_the_agents_spans(rippl: Rippl, phoenix: str,
                                                        tmp_path: Path) -> None:
    otel = telemetry()
    exporter = OTLPSpanExporter(endpoint=f"{phoenix}/v1/traces")
    otel.provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=otel.provider)
    try:
        declare(rippl)
        thread = f"T-phoenix-{uuid.uuid4().hex[:8]}"
        ran: list[str] = []
        model = ScriptedChatModel(script=[calls(HEALTH, MIGRATE), "done"])
        agent = create_agent(model, tools(ran), middleware=[RipplMiddleware(rippl, agent="mover")])
        agent.invoke({"messages": [HumanMessage("move billing to shard 09")]},
                     {"configurable": {"thread_id": thread}})
        assert ran == ["get_shard_health"]
    finally:
        instrumentor.uninstrument()
        exporter.shutdown()  # later spans of this process are not sent
    client = Client(base_url=phoenix)
    spans = read_back(client, thread)
    by_id = {s["context"]["span_id"]: s for s in spans}
    judged = [s for s in spans if s["name"] == JUDGE
              and (s.get("attributes") or {}).get("rippl.run.id") == thread]
    assert len(judged) == 1
    [veto] = [e for e in judged[0].get("events", []) if e["name"] == "rippl.veto"]
    attributes = veto.get("attributes", {})
    assert attributes["rippl.veto.reason"] == "retracted"
    assert list(attributes["rippl.veto.trails"]) == ["C-09 -> D-move -> A-move"]
    chain = []
    parent = judged[0].get("parent_id")
    while parent in by_id:
        chain.append(by_id[parent])
        parent = by_id[parent].get("parent_id")
    assert next(s["name"] for s in chain) == "tools" and chain[-1]["name"] == "LangGraph"
    assert {s["context"]["trace_id"] for s in [judged[0], *chain]} == \
        {judged[0]["context"]["trace_id"]}
    assert (judged[0].get("attributes") or {}).get("rippl.verdict") == "deny"
    if CHROMIUM.exists():
        shot = screenshot(client, phoenix, judged[0]["context"]["trace_id"], tmp_path / "trace.png")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
        keep = os.environ.get("RIPPL_PHOENIX_SCREENSHOT")
        if keep:
            shutil.copyfile(shot, keep)


JUDGE = "rippl.capture.judge migrate_tables"


def read_back(client: Client, run: str, attempts: int = 30) -> list[Any]:
    """The project's spans, once this run's judge span and every span above it, up to its root,
    are there (OTLP ingestion is asynchronous, and the project also holds earlier tests' spans:
    a count of spans says nothing about this run's)."""
    names: set[str] = set()
    for _ in range(attempts):
        spans = list(client.spans.get_spans(project_identifier="default", limit=1000))
        names = {s["name"] for s in spans}
        by_id = {s["context"]["span_id"]: s for s in spans}
        judged = [s for s in spans if s["name"] == JUDGE
                  and (s.get("attributes") or {}).get("rippl.run.id") == run]
        if judged and _rooted(judged[0], by_id):
            return spans
        time.sleep(1)
    pytest.fail(f"the trace of {run} did not arrive in Phoenix whole; it has {sorted(names)}")


def _rooted(span: Any, by_id: dict[str, Any]) -> bool:
    """Whether every ancestor of `span` is in `by_id` (the chain ends at a span with no parent)."""
    while (parent := span.get("parent_id")) is not None:
        if parent not in by_id:
            return False
        span = by_id[parent]
    return True


def screenshot(client: Client, phoenix: str, trace_id: str, out: Path) -> Path:
    """The trace in Phoenix's UI, taken by Debian's headless chromium (loopback only)."""
    project = client.projects.get(project_name="default")
    url = f"{phoenix}/projects/{project['id']}/traces/{trace_id}"
    profile = out.parent / "chromium-profile"
    subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--disable-default-apps", "--no-first-run",
                    "--disable-extensions", "--metrics-recording-only", "--mute-audio",
                    f"--user-data-dir={profile}", "--hide-scrollbars", "--window-size=1600,1000",
                    "--virtual-time-budget=20000", f"--screenshot={out}", url],
                   check=True, capture_output=True, timeout=180)
    return out
