"""The MCP server over streamable HTTP as an OAuth resource server, against a real OpenID provider
on loopback (oidc-provider, tests/helpers_oidc.py) and a real FalkorDB: `rippl mcp --transport
http --issuer URL --allow-review` as a process.

An agent with the SDK's own OAuth client (client credentials) runs a captured story; its run's
agent is its token's subject, and it gets a wider token by itself when a call needs one (step-up).
Every refusal has its status, says why, and records nothing: no token, expired, not yet valid,
another issuer, another audience, alg none, a bad signature, a key the JWKS rotated out, a
missing scope, another agent's run token, another agent's name, a machine or a non-reviewer at
the review tools. A person the provider marks as a reviewer approves, and the receipt names
them."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from helpers_console import incident_graph
from helpers_mcp import Client, MemoryTokens, http_server, oauth_client_for
from helpers_oidc import Client as OidcClient
from helpers_oidc import OidcProvider

from rippl_core import Rippl
from rippl_core.testing import FalkorDBServer, free_port

pytestmark = pytest.mark.asyncio(loop_scope="session")

CHECK, PROPOSE, REVIEW = "rippl:check", "rippl:propose", "rippl:review"


class Mcp:
    """The running server: its endpoint (the resource URL tokens must name) and the clients the
    provider registered for it."""

    def __init__(self, url: str, provider: OidcProvider) -> None:
        self.url, self.provider = url, provider
        self.metadata = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        self.agent_a = provider.register("agent-a", scope=f"{CHECK} {PROPOSE}")
        self.agent_b = provider.register("agent-b", scope=CHECK)
        self.bot = provider.register("review-bot", scope=f"{CHECK} {PROPOSE} {REVIEW}")
        self.people = provider.register("people", scope=f"openid profile {CHECK} {REVIEW}",
                                        redirect_uris=["http://127.0.0.1:9/callback"])

    def token(self, client: OidcClient, scope: str | None = None) -> str:
        return self.provider.client_credentials(client, self.url, scope)

    def post(self, token: str | None, body: dict[str, Any] | list[Any]) -> httpx.Response:
        headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.post(self.url, json=body, headers=headers, timeout=60)


def call(name: str, /, **arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}


@pytest.fixture(scope="module")
def graph(falkordb_server: FalkorDBServer) -> Iterator[Rippl]:
    with incident_graph(falkordb_server.url, "oauth") as handle:
        yield handle


@pytest.fixture(scope="module")
def mcp(falkordb_server: FalkorDBServer, graph: Rippl, oidc_provider: OidcProvider,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mcp]:
    """`rippl --url URL --graph G mcp --transport http --port P --issuer ISSUER --allow-review`."""
    port = free_port()
    args = ["--url", falkordb_server.url, "--graph", graph.graph, "mcp", "--transport", "http",
            "--port", str(port), "--issuer", oidc_provider.issuer, "--allow-review"]
    with http_server(args, tmp_path_factory.mktemp("mcp-oauth") / "server.log"):
        yield Mcp(f"http://127.0.0.1:{port}/mcp", oidc_provider)


def unchanged(graph: Rippl) -> tuple[int, int, str, int]:
    """What a refused request must leave as it was: runs, reviews, CLM-001, receipts."""
    return (len(graph.runs()), len(graph.reviews(None)), graph.get("CLM-001").status,
            len(graph.receipts()))


# -- the good path: the SDK's OAuth client ---------------------------------------------------------
async def test_an_agent_with_the_sdk_oauth_client_runs_a_captured_story(mcp: Mcp, graph: Rippl) -> None:
    tokens = MemoryTokens()
    agent = mcp.agent_a.client_id  # a client credentials token's subject is its client
    tag = uuid.uuid4().hex[:6]
    async with oauth_client_for(mcp.url, mcp.agent_a.client_id, mcp.agent_a.client_secret,
                                storage=tokens, issuer=mcp.provider.issuer) as client:
        health = {"tool": "get_shard_health", "args": {"shard": tag}}
        first = await client.call("check_premises", **health)
        assert first["safe"] is True
        seen = await client.call("record_execution", **health, output=f"shard {tag}: healthy",
                                 call_id=first["call_id"])
        migrate = {"tool": "migrate_tables", "args": {"shard": tag}}
        assert (await client.call("check_premises", **migrate))["safe"] is True
        graph.retract(seen["result_claim"], reason="stale cache", by="monitor")
        vetoed = await client.call("check_premises", **migrate)
        assert vetoed["safe"] is False and seen["result_claim"] in vetoed["explanation"]
        run = graph.run_trace(vetoed["run_id"]).run
        assert (run.agent, run.framework) == (agent, "mcp")
        assert len(tokens.issued) == 1  # rippl:check, as the server's metadata advertises
        # proposing needs rippl:propose: the 403 names it, the SDK asks for it and retries
        review = await client.call("propose_retraction", claim_id="CLM-002", reason="seen wrong")
        assert review["proposed_by"] == agent
        assert len(tokens.issued) == 2 and CHECK in tokens.tokens.scope and PROPOSE in tokens.tokens.scope
    graph.reject(review["id"], by="alice")


async def test_the_protected_resource_metadata(mcp: Mcp, oidc_provider: OidcProvider) -> None:
    found = httpx.get(mcp.metadata, timeout=30)
    assert found.status_code == 200
    document = found.json()
    assert document["resource"] == mcp.url
    assert [s.rstrip("/") for s in document["authorization_servers"]] == [oidc_provider.issuer]
    assert document["scopes_supported"] == [CHECK]


# -- refusals: each with its status, and nothing recorded ------------------------------------------
async def test_no_token_is_401_with_the_resource_metadata(mcp: Mcp, graph: Rippl) -> None:
    before = unchanged(graph)
    for body in (INITIALIZE, call("propose_retraction", claim_id="CLM-001", reason="no token")):
        refused = mcp.post(None, body)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == f'Bearer resource_metadata="{mcp.metadata}"'
        assert "needs a bearer token" in refused.json()["error_description"]
    assert unchanged(graph) == before


def bad_tokens(mcp: Mcp) -> dict[str, tuple[str, str]]:
    """Tokens refused with 401, and the words of each refusal."""
    provider, now = mcp.provider, int(time.time())
    good = mcp.token(mcp.agent_b)
    head, _body, signature = good.split(".")
    other = mcp.token(mcp.agent_b).split(".")[1]
    claims = provider.claims(mcp.url)
    from helpers_identity import unsigned

    return {
        "expired": (provider.sign(claims | {"exp": now - 60, "iat": now - 400}), "expired at"),
        "not yet valid": (provider.sign(claims | {"nbf": now + 3600}), "not valid yet"),
        "another issuer": (provider.sign(claims | {"iss": "http://127.0.0.1:1/other"}), "issued by"),
        "another audience": (provider.client_credentials(mcp.agent_b, "http://127.0.0.1:1/other/mcp"),
                             "another audience"),
        "alg none": (unsigned(claims), "unsigned (alg none)"),
        "bad signature": (".".join([head, other, signature]), "does not verify"),
        "not a JWT": ("opaque-token-0123456789", "not a JWT"),
    }


async def test_bad_tokens_are_401_saying_why(mcp: Mcp, graph: Rippl) -> None:
    before = unchanged(graph)
    for what, (token, why) in bad_tokens(mcp).items():
        refused = mcp.post(token, call("propose_retraction", claim_id="CLM-001", reason=what))
        assert refused.status_code == 401, what
        challenge = refused.headers["www-authenticate"]
        assert challenge.startswith('Bearer error="invalid_token", error_description="'), what
        assert f'resource_metadata="{mcp.metadata}"' in challenge, what
        assert why in refused.json()["error_description"], (what, refused.json())
    assert unchanged(graph) == before


async def test_a_key_the_jwks_rotated_out_is_refused(mcp: Mcp, graph: Rippl) -> None:
    provider = mcp.provider
    claims = provider.claims(mcp.url)
    assert mcp.post(provider.sign(claims), INITIALIZE).status_code == 200  # the old key, held
    provider.rotate(publish=provider.new.kid, retire=provider.old.kid)
    try:
        await asyncio.sleep(1.1)  # the server refetches keys at most once a second
        assert mcp.post(provider.sign(claims, key=provider.new), INITIALIZE).status_code == 200
        before = unchanged(graph)
        refused = mcp.post(provider.sign(claims), call("propose_retraction", claim_id="CLM-001",
                                                       reason="an old key"))
        assert refused.status_code == 401
        assert "does not publish (a key it rotated out" in refused.json()["error_description"]
        assert unchanged(graph) == before
    finally:
        provider.rotate(publish=provider.old.kid, retire=provider.new.kid)
        await asyncio.sleep(1.1)


async def test_a_missing_scope_is_403_naming_it(mcp: Mcp, graph: Rippl) -> None:
    before = unchanged(graph)
    check_only = mcp.token(mcp.agent_b)
    refused = mcp.post(check_only, call("propose_retraction", claim_id="CLM-001", reason="x"))
    assert refused.status_code == 403
    challenge = refused.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="rippl:check rippl:propose"' in challenge
    assert "needs the scope rippl:propose" in refused.json()["error_description"]
    batch = mcp.post(check_only, [call("list_reviews"), call("propose_override", tool="t", reason="r")])
    assert batch.status_code == 403  # one message of a batch suffices
    no_scope = mcp.token(mcp.agent_a, scope="")
    assert mcp.post(no_scope, INITIALIZE).status_code == 403
    assert unchanged(graph) == before


@pytest_asyncio.fixture(loop_scope="session")
async def agents(mcp: Mcp) -> AsyncIterator[tuple[Client, Client]]:
    issuer = mcp.provider.issuer
    async with oauth_client_for(mcp.url, mcp.agent_a.client_id, mcp.agent_a.client_secret,
                                storage=MemoryTokens(), issuer=issuer) as a, \
            oauth_client_for(mcp.url, mcp.agent_b.client_id, mcp.agent_b.client_secret,
                             storage=MemoryTokens(), issuer=issuer) as b:
        yield a, b


async def test_one_agents_token_cannot_act_in_anothers_run(mcp: Mcp, graph: Rippl,
                                                            agents: tuple[Client, Client]) -> None:
    a, b = agents
    started = await b.call("start_run", name="b-task")
    before = unchanged(graph)
    for tool, arguments in (("check_premises", {"tool": "deploy", "args": {"v": 1}}),
                            ("record_execution", {"tool": "deploy", "output": "done"}),
                            ("cite_claims", {"claims": ["CLM-001"]})):
        refused = await a.fail(tool, _meta={"rippl_run": started["run"]}, **arguments)
        assert f"not a run token this server issued to {mcp.agent_a.client_id}" in refused
    assert unchanged(graph) == before
    assert started["run_id"] not in {r.id for r in graph.runs()}
    # the owner uses it: its turn is the run's only one, and the run is B's
    allowed = await b.call("check_premises", _meta={"rippl_run": started["run"]}, tool="deploy",
                           args={"v": 1})
    assert allowed["run_id"] == started["run_id"]
    trace = graph.run_trace(started["run_id"])
    assert trace.run.agent == mcp.agent_b.client_id and len(trace.turns) == 1


async def test_a_request_naming_another_agent_is_refused(mcp: Mcp, graph: Rippl,
                                                         agents: tuple[Client, Client]) -> None:
    a, _ = agents
    before = unchanged(graph)
    refused = await a.fail("propose_retraction", claim_id="CLM-001", reason="x",
                           by=mcp.agent_b.client_id)
    assert "acts only as the agent its token names" in refused
    assert unchanged(graph) == before
    named = await a.call("propose_retraction", claim_id="CLM-003", reason="x", by=mcp.agent_a.client_id)
    assert named["proposed_by"] == mcp.agent_a.client_id
    graph.reject(named["id"], by="alice")


async def test_review_tools_only_for_a_person_marked_reviewer(mcp: Mcp, graph: Rippl) -> None:
    review = graph.propose_retraction("CLM-005", reason="disk errors", by="monitor")
    before = unchanged(graph)
    machine = mcp.post(mcp.token(mcp.bot), call("approve_review", review_id=review.id))
    assert machine.status_code == 403 and 'error="access_denied"' in machine.headers["www-authenticate"]
    assert "a machine's token" in machine.json()["error_description"]
    reader = mcp.provider.person_token(mcp.people, "rui", mcp.url, f"openid {CHECK} {REVIEW}")
    refused = mcp.post(reader, call("approve_review", review_id=review.id))
    assert refused.status_code == 403 and "does not mark rui as a reviewer" in refused.text
    assert unchanged(graph) == before
    # Ana is a reviewer: her own token approves, and the receipt names her
    ana = mcp.provider.person_token(mcp.people, "ana", mcp.url, f"openid {CHECK} {REVIEW}")
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {ana}"}
    with httpx.Client(timeout=60, headers=headers) as http:
        opened = http.post(mcp.url, json=INITIALIZE)
        assert opened.status_code == 200, opened.text
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
        http.post(mcp.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        decided = http.post(mcp.url, json=call("approve_review", review_id=review.id, note="checked"),
                            headers=session)
        assert decided.status_code == 200, decided.text
    receipt = graph.receipts()[-1]
    assert (receipt.kind, receipt.actor, receipt.review) == ("retraction_approved", "ana", review.id)
    assert receipt.body["actor_name"] == "Ana Lima"
    graph.reinstate("CLM-005", reason="false alarm", by="ana")
