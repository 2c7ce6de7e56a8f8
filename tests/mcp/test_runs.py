"""Whose run it is, over MCP: real client processes (the SDK's, 1.x or 2.x like the server, and a
raw MCP 2026-07-28 client of plain HTTP POSTs) against `rippl mcp --transport http` processes on
a real FalkorDB server.

A client's run is its connection's, or the one a run token it was given names; a run id, a name
or a forged token names nothing. What a client was told stays its own. A request without a
session must name its run, and is refused otherwise. The server holds a bounded number of runs;
one that left memory continues from the graph."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import textwrap
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from helpers_core import loopback_graph
from helpers_mcp import (
    REPO,
    Client,
    StatelessClient,
    http_client_for,
    http_server,
    rippl_script,
)

from rippl_core import Rippl
from rippl_core.mcp.sdk import MAJOR
from rippl_core.testing import FalkorDBServer, free_port

pytestmark = pytest.mark.asyncio(loop_scope="session")

CALL_ID = re.compile(r"call-[0-9a-f]{32}")
KEY = "k" * 40  # a RIPPL_MCP_RUN_KEY
stateless_only = pytest.mark.skipif(MAJOR == 1, reason="mcp 1.x does not serve the 2026-07-28 "
                                                       "revision (see the 1.x test below)")


@pytest.fixture(scope="module")
def graph(falkordb_server: FalkorDBServer) -> Iterator[Rippl]:
    """The served graph, opened by the test as the monitor and the human reviewer."""
    with loopback_graph(falkordb_server.url, "mcp-runs") as handle:
        yield handle


def serving(falkordb_server: FalkorDBServer, graph: Rippl, log: Path, *extra: str,
            env: dict[str, str] | None = None) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """`rippl --url URL --graph G mcp --transport http --port N [extra]` as a process."""
    port = free_port()
    args = ["--url", falkordb_server.url, "--graph", graph.graph, "mcp", "--transport", "http",
            "--port", str(port), *extra]
    process: AbstractContextManager[subprocess.Popen[bytes]] = http_server(args, log, env=env)
    return process


def endpoint_of(process: subprocess.Popen[bytes]) -> str:
    args = process.args
    assert isinstance(args, list)
    return f"http://127.0.0.1:{args[args.index('--port') + 1]}/mcp"


@pytest.fixture(scope="module")
def endpoint(falkordb_server: FalkorDBServer, graph: Rippl,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(falkordb_server, graph, tmp_path_factory.mktemp("runs") / "server.log") as process:
        yield endpoint_of(process)


@pytest_asyncio.fixture(loop_scope="session")
async def alice(endpoint: str) -> AsyncIterator[Client]:
    async with http_client_for(endpoint, name="alice") as client:
        yield client


@pytest_asyncio.fixture(loop_scope="session")
async def mallory(endpoint: str) -> AsyncIterator[Client]:
    async with http_client_for(endpoint, name="mallory") as client:
        yield client


def meta(run: object) -> dict[str, Any]:
    return {"rippl_run": run}


async def observe(client: Client | StatelessClient, tag: str, **named: Any) -> dict[str, Any]:
    """The client checks and runs get_health(tag): its output is an observation of its run."""
    check = await client.call("check_premises", tool="get_health", args={"shard": tag}, **named)
    assert check["safe"] is True
    seen = await client.call("record_execution", tool="get_health", args={"shard": tag},
                             call_id=check["call_id"], output=f"shard {tag}: healthy", **named)
    return {**seen, "check": check}


# ------------------------------------------------------------------------------ bound to its client


async def test_another_client_cannot_name_a_run_it_was_not_given(alice: Client, mallory: Client,
                                                                  graph: Rippl) -> None:
    tag = uuid.uuid4().hex[:6]
    seen = await observe(alice, tag)
    token, run_id, call_id = seen["run"], seen["run_id"], seen["call_id"]
    assert CALL_ID.fullmatch(call_id) and token.endswith(run_id) and token != run_id
    # the run's id is public (compensations and explanations show it): it names nothing
    message = await mallory.fail("check_premises", tool="migrate", args={"shard": tag},
                                 _meta=meta(run_id))
    assert "InvalidInputError" in message and "not a run token" in message and "start_run" in message
    forged = "rt1:" + "0" * 32 + ":" + run_id
    assert "not a token this server issued" in await mallory.fail(
        "record_execution", tool="get_health", args={"shard": tag}, call_id=call_id, output="x",
        _meta=meta(forged))
    for value in (tag, "", 7, {"run": token}):
        assert "InvalidInputError" in await mallory.fail("cite_claims", claims=[seen["result_claim"]],
                                                         _meta=meta(value))
    # in its own run, another client's call ids name no call
    theirs = await mallory.fail("record_execution", tool="get_health", args={"shard": tag},
                                call_id=call_id, output="forged output")
    assert "NotFoundError" in theirs and "never decided" in theirs
    announce = await alice.call("check_premises", tool="announce", args={"shard": tag})
    await alice.call("record_execution", tool="announce", args={"shard": tag}, output="announced")
    # the observation is retracted: alice's run rests on it, mallory's never read it
    graph.retract(seen["result_claim"], reason="stale replica", by="monitor")
    assert (await mallory.call("check_premises", tool="migrate", args={"shard": tag}))["safe"] is True
    vetoed = await alice.call("check_premises", tool="migrate", args={"shard": tag})
    assert vetoed["safe"] is False and vetoed["blockers"][0]["premise"] == seen["result_claim"]
    assert vetoed["run"] == token and vetoed["run_id"] == run_id
    # the graph names the run by its id; the token's signature is nowhere in it
    [owed] = [c for c in (await mallory.call("list_compensations"))["compensations"]
              if c["call_id"] == announce["call_id"]]
    assert owed["run"] == run_id and token.split(":")[1] not in repr(graph.nodes())


async def test_a_token_continues_a_run_on_another_connection(endpoint: str, graph: Rippl) -> None:
    tag = uuid.uuid4().hex[:6]
    async with http_client_for(endpoint, name="worker") as first:
        seen = await observe(first, tag)
        pending = await first.call("check_premises", tool="announce", args={"shard": tag})
    async with http_client_for(endpoint, name="worker") as second:  # reconnected: a new session
        own = await second.call("check_premises", tool="probe", args={"shard": tag})
        assert own["run_id"] != seen["run_id"]  # a connection's own run is new
        ran = await second.call("record_execution", tool="announce", args={"shard": tag},
                                call_id=pending["call_id"], output="announced",
                                _meta=meta(seen["run"]))
        assert ran["run_id"] == seen["run_id"] and ran["call_id"] == pending["call_id"]
        graph.retract(seen["result_claim"], reason="flapping probe", by="monitor")
        later = await second.call("check_premises", tool="migrate", args={"shard": tag},
                                  _meta=meta(seen["run"]))
        assert later["safe"] is False  # it rests on what the run observed on the first connection
        owed = {c["action"] for c in (await second.call("list_compensations"))["compensations"]}
        assert pending["target"] in owed


async def test_what_a_client_was_told_stays_its_own(endpoint: str, graph: Rippl) -> None:
    """Two connections in one run (its token shared): a veto one of them read takes its premise
    out of that connection's later calls only."""
    tag = uuid.uuid4().hex[:6]
    async with http_client_for(endpoint, name="lead") as lead, \
            http_client_for(endpoint, name="helper") as helper:
        started = await lead.call("start_run", name=f"incident-{tag}")
        assert started["run_id"].startswith(f"mcp:incident-{tag}:")
        shared = meta(started["run"])
        seen = await observe(lead, tag, _meta=shared)
        graph.retract(seen["result_claim"], reason="wrong replica", by="monitor")
        told = await helper.call("check_premises", tool="migrate", args={"shard": tag}, _meta=shared)
        assert told["safe"] is False
        replanned = await helper.call("check_premises", tool="migrate", args={"shard": f"{tag}-b"},
                                      _meta=shared)
        assert replanned["safe"] is True  # the helper read the veto: it re-plans without the premise
        untold = await lead.call("check_premises", tool="migrate", args={"shard": f"{tag}-c"},
                                 _meta=shared)
        assert untold["safe"] is False  # the lead never read it: its calls still rest on it


async def test_minted_call_ids_are_random(alice: Client) -> None:
    ids = [(await alice.call("check_premises", tool="noop", args={"i": i}))["call_id"]
           for i in range(4)]
    assert all(CALL_ID.fullmatch(i) for i in ids) and len(set(ids)) == 4
    assert not any(i.endswith(("-1", "-2", "-3", "-4")) for i in ids)


# ------------------------------------------------------------------------------ stateless requests


@stateless_only
async def test_a_stateless_request_that_names_no_run_is_refused(endpoint: str, graph: Rippl) -> None:
    raw = StatelessClient(endpoint)
    tag = uuid.uuid4().hex[:6]
    graph.add_claim(f"CLM-{tag}", f"shard {tag} is healthy")
    for tool, arguments in (("check_premises", {"tool": "migrate", "args": {"shard": tag}}),
                            ("record_execution", {"tool": "migrate", "output": "done"}),
                            ("cite_claims", {"claims": [f"CLM-{tag}"]}),
                            ("explain", {"node_id": f"CLM-{tag}"})):
        message = await raw.fail(tool, **arguments)
        assert "InvalidInputError" in message and "names no run" in message, tool
        assert "start_run" in message and "_meta.rippl_run" in message
    # what records nothing needs no run
    assert (await raw.call("check_premises", target=f"CLM-{tag}"))["safe"] is True
    assert (await raw.call("blast_radius", node_id=f"CLM-{tag}"))["count"] == 0


@stateless_only
async def test_a_stateless_client_names_its_run_in_every_request(endpoint: str, graph: Rippl) -> None:
    raw = StatelessClient(endpoint, name="jbt")
    tag = uuid.uuid4().hex[:6]
    started = await raw.call("start_run", name=f"task-{tag}")
    raw.run = started["run"]  # echoed in _meta beside the protocol's io.modelcontextprotocol keys
    check = await raw.call("check_premises", tool="get_health", args={"shard": tag})
    assert check["run"] == started["run"] and check["run_id"] == started["run_id"]
    seen = await raw.call("record_execution", tool="get_health", args={"shard": tag},
                          output=f"shard {tag}: healthy")  # found by tool and args, as checked
    assert seen["call_id"] == check["call_id"] and seen["run_id"] == started["run_id"]
    decision = graph.get(graph.get(check["target"]).justifications[0][0])
    assert "mcp:jbt" in decision.text  # the client's name labels its run (never proves it)
    assert (await raw.call("check_premises", tool="migrate", args={"shard": tag}))["safe"] is True
    graph.retract(seen["result_claim"], reason="served from a stale cache", by="monitor")
    vetoed = await raw.call("check_premises", tool="migrate", args={"shard": tag})
    assert vetoed["safe"] is False and vetoed["blockers"][0]["premise"] == seen["result_claim"]
    replanned = await raw.call("check_premises", tool="migrate", args={"shard": f"{tag}-07"})
    assert replanned["safe"] is True  # the veto it read named the premise: it re-plans without it
    other = StatelessClient(endpoint, name="jbt")  # the same name, its own run
    other.run = (await other.call("start_run", name=f"task-{tag}"))["run"]
    assert other.run != raw.run
    message = await other.fail("record_execution", tool="migrate", args={"shard": f"{tag}-07"},
                               call_id=replanned["call_id"], output="forged")
    assert "never decided" in message
    assert (await other.call("check_premises", tool="migrate", args={"shard": tag}))["safe"] is True


@pytest.mark.skipif(MAJOR == 2, reason="mcp 2.x serves the 2026-07-28 revision (tests above)")
async def test_the_1x_transport_refuses_a_stateless_request(endpoint: str) -> None:
    response = await StatelessClient(endpoint).post("check_premises", {"tool": "migrate"})
    assert response.status_code == 400 and "session" in response.text.lower()


# ------------------------------------------------------------------------------ the map of runs


async def test_the_map_of_runs_is_bounded_and_a_run_that_left_it_continues(
        falkordb_server: FalkorDBServer, graph: Rippl, tmp_path: Path) -> None:
    """`--max-runs 2`: a third and fourth run push the first out of memory. Used again, it
    continues from the graph (its calls, its observations); what its client was told is gone,
    so a re-plan that rested on the vetoed premise is vetoed again (fail closed)."""
    tag = uuid.uuid4().hex[:6]
    with serving(falkordb_server, graph, tmp_path / "server.log", "--max-runs", "2") as process:
        async with http_client_for(endpoint_of(process)) as client:
            first = meta((await client.call("start_run", name="first"))["run"])
            seen = await observe(client, tag, _meta=first)
            graph.retract(seen["result_claim"], reason="stale", by="monitor")
            vetoed = await client.call("check_premises", tool="migrate", args={"shard": tag},
                                       _meta=first)
            assert vetoed["safe"] is False
            replan = {"tool": "migrate", "args": {"shard": f"{tag}-b"}}
            assert (await client.call("check_premises", **replan, _meta=first))["safe"] is True
            second = meta((await client.call("start_run", name="second"))["run"])
            await client.call("check_premises", tool="probe", args={}, _meta=second)
            kept = await client.call("check_premises", **replan, _meta=first)
            assert kept["safe"] is True  # two runs fit: the first is still held, with what it was told
            for name in ("third", "fourth"):
                await client.call("start_run", name=name)
            again = await client.call("check_premises", **replan, _meta=first)
            assert again["safe"] is False and again["run_id"] == seen["run_id"]  # told: lost
            assert again["blockers"][0]["premise"] == seen["result_claim"]  # the run's observation
            ran = await client.call("record_execution", **replan, call_id=kept["call_id"],
                                    output="migrated", _meta=first)
            assert ran["run_id"] == seen["run_id"]  # its earlier call is found in the graph


async def test_run_tokens_outlive_a_restart_only_with_the_same_key(
        falkordb_server: FalkorDBServer, graph: Rippl, tmp_path: Path) -> None:
    keyed = {**os.environ, "RIPPL_MCP_RUN_KEY": KEY}
    with serving(falkordb_server, graph, tmp_path / "a.log", env=keyed) as process:
        async with http_client_for(endpoint_of(process)) as client:
            check = await client.call("check_premises", tool="deploy", args={"v": 1})
    with serving(falkordb_server, graph, tmp_path / "b.log", env=keyed) as process:
        async with http_client_for(endpoint_of(process)) as client:
            ran = await client.call("record_execution", tool="deploy", args={"v": 1},
                                    call_id=check["call_id"], output="deployed",
                                    _meta=meta(check["run"]))
            assert ran["run_id"] == check["run_id"]
    unkeyed = {k: v for k, v in os.environ.items() if k != "RIPPL_MCP_RUN_KEY"}
    with serving(falkordb_server, graph, tmp_path / "c.log", env=unkeyed) as process:
        async with http_client_for(endpoint_of(process)) as client:
            message = await client.fail("check_premises", tool="deploy", args={"v": 2},
                                        _meta=meta(check["run"]))
            assert "not a token this server issued" in message and "RIPPL_MCP_RUN_KEY" in message


async def test_a_short_run_key_is_refused_at_start(falkordb_server: FalkorDBServer,
                                                   graph: Rippl) -> None:
    args = [rippl_script(), "--url", falkordb_server.url, "--graph", graph.graph, "mcp",
            "--transport", "http", "--port", str(free_port())]
    done = await asyncio.to_thread(subprocess.run, args, capture_output=True, text=True, timeout=120,
                                   env={**os.environ, "RIPPL_MCP_RUN_KEY": "short"})
    assert done.returncode != 0
    assert "RIPPL_MCP_RUN_KEY is 5 characters" in done.stderr and "Traceback" not in done.stderr


@stateless_only
async def test_concurrent_stateless_clients_stay_apart(endpoint: str) -> None:
    clients = [StatelessClient(endpoint, name=f"agent-{i}") for i in range(6)]
    for client in clients:
        client.run = (await client.call("start_run"))["run"]
    checks = await asyncio.gather(*(c.call("check_premises", tool="step", args={"i": 1})
                                    for c in clients))
    assert len({c["run_id"] for c in checks}) == 6 and all(c["safe"] for c in checks)
    assert [c["run"] for c in checks] == [c.run for c in clients]


def documented_requests() -> list[tuple[dict[str, str], str]]:
    """The HTTP requests docs/mcp.md shows client authors: (headers, body)."""
    text = (REPO / "docs" / "mcp.md").read_text()
    requests = []
    for block in re.findall(r"```http\n(.*?)```", text, re.S):
        head, body = textwrap.dedent(block).split("\n\n", 1)
        lines = head.splitlines()
        assert lines[0] == "POST /mcp HTTP/1.1"
        requests.append((dict(line.split(": ", 1) for line in lines[1:]), body))
    return requests


@stateless_only
async def test_the_documented_stateless_requests_work(endpoint: str) -> None:
    start, check = documented_requests()
    async with httpx.AsyncClient(timeout=60) as http:
        started = (await http.post(endpoint, content=start[1], headers=start[0])).json()
        run = started["result"]["structuredContent"]["run"]
        assert started["result"]["structuredContent"]["run_id"].startswith("mcp:ticket-4711:")
        body = check[1].replace("<the run token>", run)
        checked = (await http.post(endpoint, content=body, headers=check[0])).json()
        assert checked["result"]["structuredContent"]["run"] == run
        assert checked["result"]["structuredContent"]["safe"] is True
        bare = check[1].replace(',\n    "rippl_run": "<the run token>"', "")
        assert json.loads(bare)["params"]["_meta"].keys() == json.loads(start[1])["params"]["_meta"].keys()
        refused = (await http.post(endpoint, content=bare, headers=check[0])).json()
        assert refused["result"]["isError"] and "names no run" in refused["result"]["content"][0]["text"]
