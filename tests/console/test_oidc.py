"""The console signs people in with a real OpenID provider (oidc-provider on loopback,
tests/helpers_oidc.py), driven over HTTP as a browser would (tests/console/test_browser_oidc.py
does it in chromium): the authorization code with PKCE, state and nonce; roles from the
provider's groups; the session cookie; monitors' client credentials tokens; every refusal saying
why, with nothing signed in or recorded. The console runs in process (ASGI) on a real graph."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from helpers_console import BASE, INCIDENT, REVIEWERS, client
from helpers_oidc import Client as OidcClient
from helpers_oidc import OidcProvider

from rippl_core import AsyncRippl
from rippl_core.console.auth import AuthConfigError
from rippl_core.console.provider import OidcConfig

pytestmark = pytest.mark.asyncio(loop_scope="session")

CALLBACK = f"{BASE}/api/oidc/callback"


@pytest.fixture(scope="module")
def console_client(oidc_provider: OidcProvider) -> OidcClient:
    return oidc_provider.register("rippl-console", scope="openid profile email",
                                  redirect_uris=[CALLBACK])


@pytest.fixture
async def arippl(embedded_db: Path) -> AsyncIterator[AsyncRippl]:
    """The incident graph, of its own, on the session's embedded database (sign-in does not
    depend on the backend: one is enough)."""
    handle = await AsyncRippl.open(embedded_db, graph=f"oidc-{uuid.uuid4().hex[:8]}")
    await handle.load(INCIDENT)
    yield handle
    await handle.drop()
    await handle.close()


@pytest.fixture
async def http(arippl: AsyncRippl, oidc_provider: OidcProvider,
               console_client: OidcClient) -> AsyncIterator[httpx.AsyncClient]:
    config = OidcConfig(issuer=oidc_provider.issuer, client_id=console_client.client_id,
                        client_secret=console_client.client_secret)
    async with client(arippl, reviewers=None, oidc=config) as browser:
        yield browser


async def sign_in(http: httpx.AsyncClient, provider: OidcProvider, login: str,
                  next_: str = "#queue") -> httpx.Response:
    """Sign in as `login` through the provider; the console's answer to the callback."""
    begun = await http.get("/api/oidc/login", params={"next": next_})
    assert begun.status_code == 303, begun.text
    back = provider.authorize(begun.headers["location"], login, redirect_uri=CALLBACK)
    return await http.get(back.removeprefix(BASE))


async def csrf(http: httpx.AsyncClient) -> str:
    return str((await http.get("/api/session")).json()["csrf"])


async def test_a_reviewer_signs_in_and_the_receipt_names_them(
        http: httpx.AsyncClient, arippl: AsyncRippl, oidc_provider: OidcProvider,
        console_client: OidcClient) -> None:
    begun = await http.get("/api/oidc/login", params={"next": "#runs/r-1"})
    request = urlsplit(begun.headers["location"])
    query = {k: v[0] for k, v in parse_qs(request.query).items()}
    assert f"{request.scheme}://{request.netloc}{request.path}" == f"{oidc_provider.issuer}/auth"
    assert (query["client_id"], query["redirect_uri"], query["response_type"], query["scope"],
            query["code_challenge_method"]) == (console_client.client_id, CALLBACK, "code",
                                                "openid profile email", "S256")
    assert len(query["state"]) >= 40 and len(query["nonce"]) >= 40 and len(query["code_challenge"]) == 43
    login_cookie = begun.headers["set-cookie"]
    assert login_cookie.startswith(f"rippl_oidc={query['state']};")
    assert "HttpOnly" in login_cookie and "SameSite=lax" in login_cookie
    assert "Path=/api/oidc/" in login_cookie and "Secure" not in login_cookie  # loopback
    back = oidc_provider.authorize(begun.headers["location"], "ana", redirect_uri=CALLBACK)
    done = await http.get(back.removeprefix(BASE))
    assert done.status_code == 303 and done.headers["location"] == f"{BASE}/#runs/r-1"
    cookie = next(c for c in done.headers.get_list("set-cookie") if c.startswith("rippl_session="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Max-Age=43200" in cookie
    assert "Secure" not in cookie  # plain http on loopback
    me = (await http.get("/api/session")).json()
    assert (me["reviewer"], me["who"], me["role"], me["name"]) == ("ana", "ana", "reviewer", "Ana Lima")
    assert (await http.get("/api/info")).json()["sign_in"] == "provider"
    review = await arippl.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    approved = await http.post(f"/api/reviews/{review.id}/approve", json={"note": "confirmed"},
                               headers={"X-CSRF-Token": me["csrf"]})
    assert approved.status_code == 200, approved.text
    receipt = approved.json()
    assert (receipt["actor"], receipt["body"]["actor_name"]) == ("ana", "Ana Lima")
    # the callback cannot be replayed: its login cookie is gone, and its state was used
    again = await http.get(back.removeprefix(BASE))
    assert again.status_code == 400 and "not begun in this browser" in again.text
    http.cookies.set("rippl_oidc", query["state"], domain="127.0.0.1", path="/api/oidc/")
    replayed = await http.get(back.removeprefix(BASE))
    assert replayed.status_code == 400 and "already used" in replayed.text


async def test_a_reader_reads_and_cannot_propose_or_approve(
        http: httpx.AsyncClient, arippl: AsyncRippl, oidc_provider: OidcProvider) -> None:
    assert (await sign_in(http, oidc_provider, "rui")).status_code == 303
    me = (await http.get("/api/session")).json()
    assert (me["reviewer"], me["role"], me["name"]) == (None, "reader", "Rui Costa")
    review = await arippl.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    headers = {"X-CSRF-Token": me["csrf"]}
    approve = await http.post(f"/api/reviews/{review.id}/approve", json={"note": "x"}, headers=headers)
    assert approve.status_code == 403 and "Rui Costa is signed in as a reader" in approve.text
    propose = await http.post("/api/reviews", json={"claim": "CLM-002", "reason": "x"}, headers=headers)
    assert propose.status_code == 403
    assert (await arippl.review(review.id)).status == "pending"
    assert [r.id for r in await arippl.reviews("pending")] == [review.id]
    assert (await http.get(f"/api/reviews/{review.id}")).status_code == 200


async def test_a_proposer_proposes_and_never_approves(
        http: httpx.AsyncClient, arippl: AsyncRippl, oidc_provider: OidcProvider) -> None:
    await sign_in(http, oidc_provider, "pia")
    headers = {"X-CSRF-Token": await csrf(http)}
    proposed = await http.post("/api/reviews", json={"claim": "CLM-001", "reason": "seen failing"},
                               headers=headers)
    assert proposed.status_code == 201, proposed.text
    item = proposed.json()
    assert (item["proposed_by"], item["monitor"]) == ("pia", None)
    refused = await http.post(f"/api/reviews/{item['id']}/approve", json={"note": "mine"},
                              headers=headers)
    assert refused.status_code == 403 and "only a reviewer decides" in refused.text
    assert (await arippl.review(item["id"])).status == "pending"


async def test_someone_in_none_of_the_groups_is_not_signed_in(
        http: httpx.AsyncClient, oidc_provider: OidcProvider) -> None:
    refused = await sign_in(http, oidc_provider, "eve")
    assert refused.status_code == 403
    why = re.search(r'<p id="why">(.*?)</p>', refused.text)
    assert why and "Eve Stone (eve) is in none of the console&#x27;s groups" in why.group(1)
    assert "rippl_session" not in refused.headers.get("set-cookie", "")
    assert (await http.get("/api/session")).json()["who"] is None


async def test_a_callback_not_begun_in_this_browser_is_refused(
        http: httpx.AsyncClient, oidc_provider: OidcProvider) -> None:
    begun = await http.get("/api/oidc/login")
    back = oidc_provider.authorize(begun.headers["location"], "ana", redirect_uri=CALLBACK)
    http.cookies.delete("rippl_oidc")  # another browser: it has the link, not the cookie
    refused = await http.get(back.removeprefix(BASE))
    assert refused.status_code == 400 and "not begun in this browser" in refused.text
    forged = await http.get("/api/oidc/callback", params={"state": "made-up", "code": "x"})
    assert forged.status_code == 400
    assert (await http.get("/api/session")).json()["who"] is None


async def test_the_providers_refusal_is_shown(http: httpx.AsyncClient) -> None:
    begun = await http.get("/api/oidc/login")
    state = parse_qs(urlsplit(begun.headers["location"]).query)["state"][0]
    refused = await http.get("/api/oidc/callback", params={
        "state": state, "error": "access_denied", "error_description": "End-User aborted"})
    assert refused.status_code == 403
    assert "the identity provider refused the sign-in (access_denied: End-User aborted)" in refused.text
    assert (await http.get("/api/session")).json()["who"] is None


async def test_sign_out_ends_the_session(http: httpx.AsyncClient, oidc_provider: OidcProvider,
                                         arippl: AsyncRippl) -> None:
    await sign_in(http, oidc_provider, "rui")
    token = await csrf(http)
    wrong = await http.request("DELETE", "/api/session", json={}, headers={"X-CSRF-Token": "wrong"})
    assert wrong.status_code == 403
    out = await http.request("DELETE", "/api/session", json={}, headers={"X-CSRF-Token": token})
    assert out.status_code == 200
    assert (await http.get("/api/session")).json()["who"] is None
    review = await arippl.propose_retraction("CLM-001", reason="x", by="monitor")
    after = await http.post(f"/api/reviews/{review.id}/reject", json={"note": "x"},
                            headers={"X-CSRF-Token": token})
    assert after.status_code == 401


async def test_a_monitors_token_proposes_and_never_decides(
        http: httpx.AsyncClient, arippl: AsyncRippl, oidc_provider: OidcProvider) -> None:
    monitor = oidc_provider.register("disk-monitor", scope="rippl:propose")
    token = oidc_provider.client_credentials(monitor, f"{BASE}/")
    bearer = {"Authorization": f"Bearer {token}"}
    proposed = await http.post("/api/reviews", json={"claim": "CLM-001", "reason": "SMART errors"},
                               headers=bearer)
    assert proposed.status_code == 201, proposed.text
    item = proposed.json()
    assert item["proposed_by"] == item["monitor"] == monitor.client_id
    refused = await http.post(f"/api/reviews/{item['id']}/approve", json={"note": "x"}, headers=bearer)
    assert refused.status_code == 403 and "never approve" in refused.text
    assert (await arippl.review(item["id"])).status == "pending"
    elsewhere = oidc_provider.client_credentials(monitor, "http://127.0.0.1:1/")
    wrong = await http.post("/api/reviews", json={"claim": "CLM-002", "reason": "x"},
                            headers={"Authorization": f"Bearer {elsewhere}"})
    assert wrong.status_code == 401 and "another audience" in wrong.text
    assert len(await arippl.reviews("pending")) == 1
    reader = oidc_provider.register("dashboard", scope="rippl:check")
    looking = {"Authorization": f"Bearer {oidc_provider.client_credentials(reader, f'{BASE}/')}"}
    assert (await http.post("/api/reviews", json={"claim": "CLM-002", "reason": "x"},
                            headers=looking)).status_code == 403


async def test_token_sign_in_is_not_offered(http: httpx.AsyncClient) -> None:
    refused = await http.post("/api/session", json={"token": "alice-token-0123456789abcdef"})
    assert refused.status_code == 404 and "api/oidc/login" in refused.text


async def test_reviewer_tokens_and_a_provider_do_not_mix(arippl: AsyncRippl,
                                                         oidc_provider: OidcProvider) -> None:
    config = OidcConfig(issuer=oidc_provider.issuer, client_id="x")
    with pytest.raises(AuthConfigError, match="leave out --reviewers"):
        async with client(arippl, reviewers=REVIEWERS, oidc=config):
            pass


async def test_a_reviewer_whose_key_the_log_registered_decides_only_signed(
        http: httpx.AsyncClient, arippl: AsyncRippl, oidc_provider: OidcProvider) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from rippl_core.review.keys import public_hex

    key = Ed25519PrivateKey.generate()
    await arippl.register_key("ana", signing_key=key)
    await sign_in(http, oidc_provider, "ana")
    me = (await http.get("/api/session")).json()
    assert me["public_key"] == public_hex(key)  # the page asks for the key before a decision
    review = await arippl.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    unsigned = await http.post(f"/api/reviews/{review.id}/approve", json={"note": "unsigned"},
                               headers={"X-CSRF-Token": me["csrf"]})
    assert unsigned.status_code == 422 and "ana has a reviewer key: sign the decision" in unsigned.text
    assert (await arippl.review(review.id)).status == "pending"
