"""The MCP server's HTTP gate, in process: the app `rippl mcp --transport http --issuer` serves
(the SDK's streamable HTTP app with its bearer middleware, the gate in front of /mcp, the
protected resource metadata), driven over ASGI, with tokens of a loopback issuer whose keys the
test holds (tests/helpers_identity.py). Each refusal's status, challenge and reason; what passes
reaches the SDK. (tests/mcp/test_oauth.py does the same end to end with a real OpenID provider.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers_identity import LoopbackIssuer, loopback_issuer, new_key
from starlette.applications import Starlette

from rippl_core import AsyncRippl
from rippl_core.mcp.gate import MAX_BODY, challenge, messages
from rippl_core.mcp.options import OAuthOptions
from rippl_core.mcp.server import build_server

pytestmark = pytest.mark.asyncio(loop_scope="session")

KEY = new_key("ES256")
RESOURCE = "http://127.0.0.1:8000/mcp"
METADATA = "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}


def call(name: str, /, **arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


@pytest.fixture
def issuer() -> Iterator[LoopbackIssuer]:
    with loopback_issuer(audience=RESOURCE) as running:
        running.publish(KEY)
        yield running


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """The app's lifespan (the SDK's session manager) in a task of its own: anyio's cancel scopes
    are left by the task that entered them, and a fixture's teardown runs in another."""
    ready, stop = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        async with app.router.lifespan_context(app):
            ready.set()
            await stop.wait()

    task = asyncio.create_task(run())
    await ready.wait()
    try:
        yield
    finally:
        stop.set()
        await task


@pytest.fixture
async def graph(embedded_db: Path) -> AsyncIterator[AsyncRippl]:
    """A graph of its own on the session's embedded database (the gate never reads it: one
    backend is enough)."""
    handle = await AsyncRippl.open(embedded_db, graph=f"gate-{uuid.uuid4().hex[:8]}")
    yield handle
    await handle.close()


@pytest.fixture
async def http(graph: AsyncRippl, issuer: LoopbackIssuer) -> AsyncIterator[httpx.AsyncClient]:
    server = build_server(graph, allow_review=True, oauth=OAuthOptions(
        issuer=issuer.url, required_scopes=("tenant:acme",)))
    app = server.http_asgi_app()
    async with lifespan(app), httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                                base_url="http://127.0.0.1:8000") as client:
        yield client


def bearer(issuer: LoopbackIssuer, **claims: Any) -> dict[str, str]:
    scope = claims.pop("scope", "rippl:check tenant:acme")
    return {"Authorization": f"Bearer {KEY.sign(issuer.claims(scope=scope, **claims))}"}


async def post(http: httpx.AsyncClient, body: Any, headers: dict[str, str] | None = None,
               content: bytes | None = None) -> httpx.Response:
    return await http.post("/mcp", headers={**ACCEPT, **(headers or {})},
                           content=content if content is not None else json.dumps(body).encode())


def challenge_of(response: httpx.Response) -> str:
    return response.headers["www-authenticate"]


async def test_the_protected_resource_metadata_advertises_what_to_ask_for(
        http: httpx.AsyncClient, issuer: LoopbackIssuer) -> None:
    found = await http.get("/.well-known/oauth-protected-resource/mcp")
    assert found.status_code == 200
    document = found.json()
    assert document["resource"] == RESOURCE
    assert [s.rstrip("/") for s in document["authorization_servers"]] == [issuer.url]
    assert document["scopes_supported"] == ["rippl:check", "tenant:acme"]


@pytest.mark.parametrize("authorization", [None, "Basic YWxpY2U6c2VjcmV0", "Bearer"])
async def test_no_bearer_token_is_401_pointing_at_the_metadata(
        http: httpx.AsyncClient, issuer: LoopbackIssuer, authorization: str | None) -> None:
    refused = await post(http, INITIALIZE, {"Authorization": authorization} if authorization else {})
    assert refused.status_code == 401
    assert challenge_of(refused) == f'Bearer resource_metadata="{METADATA}"'
    assert refused.json()["error"] == "unauthorized"
    why = refused.json()["error_description"]
    assert f"issued by {issuer.url} for {RESOURCE}" in why and "Nothing was done" in why


async def test_a_refused_token_is_401_saying_why(http: httpx.AsyncClient,
                                                 issuer: LoopbackIssuer) -> None:
    refused = await post(http, INITIALIZE, bearer(issuer, aud="https://elsewhere.test/mcp"))
    assert refused.status_code == 401
    assert challenge_of(refused).startswith('Bearer error="invalid_token", error_description="the '
                                            "token was issued for another audience ('https://")
    assert challenge_of(refused).endswith(f'resource_metadata="{METADATA}"')
    assert refused.json()["error"] == "invalid_token"
    assert refused.json()["error_description"].endswith("Nothing was done.")


async def test_an_unreachable_issuer_is_503(http: httpx.AsyncClient, issuer: LoopbackIssuer) -> None:
    issuer.failing = True
    refused = await post(http, INITIALIZE, bearer(issuer))
    assert refused.status_code == 503
    assert 'error="temporarily_unavailable"' in challenge_of(refused)
    assert "no metadata for the issuer" in refused.json()["error_description"]


async def test_a_good_token_reaches_the_sdk(http: httpx.AsyncClient, issuer: LoopbackIssuer) -> None:
    opened = await post(http, INITIALIZE, bearer(issuer))
    assert opened.status_code == 200, opened.text
    assert "mcp-session-id" in opened.headers


async def test_the_scopes_every_request_needs_are_the_sdks_to_check(
        http: httpx.AsyncClient, issuer: LoopbackIssuer) -> None:
    refused = await post(http, INITIALIZE, bearer(issuer, scope="rippl:check"))
    assert refused.status_code == 403 and "tenant:acme" in refused.text


async def test_a_missing_scope_is_403_naming_it(http: httpx.AsyncClient, issuer: LoopbackIssuer) -> None:
    refused = await post(http, call("propose_retraction", claim_id="CLM-1", reason="x"), bearer(issuer))
    assert refused.status_code == 403
    assert challenge_of(refused).startswith('Bearer error="insufficient_scope"')
    assert 'scope="rippl:check rippl:propose"' in challenge_of(refused)
    none = await post(http, INITIALIZE, bearer(issuer, scope="openid tenant:acme"))
    assert none.status_code == 403 and 'scope="rippl:check"' in challenge_of(none)


async def test_one_forbidden_message_of_a_batch_refuses_the_batch(
        http: httpx.AsyncClient, issuer: LoopbackIssuer) -> None:
    batch = [call("list_reviews"), call("propose_override", tool="t", reason="r"), "junk"]
    assert (await post(http, batch, bearer(issuer))).status_code == 403
    assert list(messages(json.dumps([{"method": "a"}, 7, {"method": "b"}]).encode())) == [
        {"method": "a"}, {"method": "b"}]
    assert list(messages(b"{not json")) == [] and list(messages(b'"text"')) == []


async def test_review_tools_refuse_machines_and_people_who_are_not_reviewers(
        http: httpx.AsyncClient, issuer: LoopbackIssuer) -> None:
    review = call("approve_review", review_id="REV-000000000000")
    scope = "rippl:review tenant:acme"
    machine = await post(http, review, bearer(issuer, scope=scope, groups=["rippl-reviewers"]))
    assert machine.status_code == 403 and 'error="access_denied"' in challenge_of(machine)
    reader = await post(http, review, bearer(issuer, scope=scope, sub="rui", groups=["rippl-readers"]))
    assert reader.status_code == 403 and "does not mark rui as a reviewer" in reader.text
    person = await post(http, review, bearer(issuer, scope=scope, sub="ana", groups=["rippl-reviewers"]))
    assert person.status_code not in (401, 403)  # through the gate: the SDK answers (no session)


async def test_what_the_gate_does_not_judge_reaches_the_sdk(http: httpx.AsyncClient,
                                                            issuer: LoopbackIssuer) -> None:
    garbled = await post(http, None, bearer(issuer), content=b"{not json")
    assert garbled.status_code == 400  # the SDK's parse error
    stream = await http.get("/mcp", headers={**ACCEPT, **bearer(issuer)})
    assert stream.status_code not in (401, 403)
    anonymous = await http.get("/mcp", headers=ACCEPT)
    assert anonymous.status_code == 401


async def test_a_body_too_large_is_413(http: httpx.AsyncClient, issuer: LoopbackIssuer) -> None:
    assert MAX_BODY == 4 << 20
    refused = await post(http, None, bearer(issuer), content=b" " * (MAX_BODY + 1))
    assert refused.status_code == 413
    fits = await post(http, None, bearer(issuer), content=json.dumps(INITIALIZE).encode().ljust(MAX_BODY))
    assert fits.status_code == 200


async def test_challenges_quote_safely() -> None:
    headers, body = challenge(403, "https://x.test/m", error="insufficient_scope",
                              reason='a "quoted" \\ reason\nwith é', scope="rippl:check")
    found = dict(headers)
    assert found[b"www-authenticate"] == (b'Bearer error="insufficient_scope", error_description="a '
                                          b"'quoted' ' reason'with '\", scope=\"rippl:check\", "
                                          b'resource_metadata="https://x.test/m"')
    assert json.loads(body) == {"error": "insufficient_scope",
                                "error_description": 'a "quoted" \\ reason\nwith é'}
    assert found[b"content-length"] == str(len(body)).encode()
    long = dict(challenge(401, "m", error="invalid_token", reason="x" * 900)[0])[b"www-authenticate"]
    assert long.count(b"x") == 500


async def test_the_verifier_gives_the_sdk_the_tokens_access(issuer: LoopbackIssuer) -> None:
    from rippl_core.mcp.auth import REFUSAL, ResourceServer, principal_of_token

    server = ResourceServer(OAuthOptions(issuer=issuer.url), host="127.0.0.1", port=8000)
    assert server.resource == RESOURCE and server.metadata_url == METADATA
    claims = issuer.claims(sub="ana", client_id="console", scope="rippl:review rippl:check")
    token = KEY.sign(claims)
    access = await server.verify_token(token)
    assert access is not None and REFUSAL.get() is None
    assert (access.token, access.client_id, access.scopes, access.resource) == (
        token, "console", ["rippl:check", "rippl:review"], RESOURCE)
    assert access.expires_at == claims["exp"]
    principal = principal_of_token(access)
    assert principal is not None and principal.subject == "ana" and not principal.machine
    no_client = await server.verify_token(KEY.sign(issuer.claims(sub="svc", client_id=None)))
    assert no_client is not None and no_client.client_id == "svc"
    assert await server.verify_token("nonsense") is None
    refused = REFUSAL.get()
    assert refused is not None and "not a JWT" in str(refused)
    assert principal_of_token(object()) is None


async def test_a_body_in_chunks_is_read_whole_and_handed_on_unchanged() -> None:
    from rippl_core.mcp.gate import _body, _replay

    def feed(*messages: dict[str, Any]) -> Any:
        pending = list(messages)

        async def receive() -> dict[str, Any]:
            return pending.pop(0)

        return receive

    chunked = feed({"type": "http.request", "body": b'{"a":', "more_body": True},
                   {"type": "http.request", "body": b" 1}"})  # no more_body: the last
    assert await _body(chunked) == b'{"a": 1}'
    assert await _body(feed({"type": "http.disconnect"})) == b""
    handed = _replay(b'{"a": 1}', feed({"type": "http.disconnect"}))
    assert await handed() == {"type": "http.request", "body": b'{"a": 1}', "more_body": False}
    assert await handed() == {"type": "http.disconnect"}  # then what the client sends next


async def test_the_sdks_resource_metadata_route_is_replaced(graph: AsyncRippl,
                                                            issuer: LoopbackIssuer) -> None:
    from rippl_core.mcp.gate import METADATA_PATH

    app = build_server(graph, oauth=OAuthOptions(issuer=issuer.url)).http_asgi_app()
    paths = [str(getattr(r, "path", "")) for r in app.router.routes]
    assert [p for p in paths if p.startswith(METADATA_PATH)] == [f"{METADATA_PATH}/mcp"]
    assert paths.count("/mcp") == 1
