"""A real OpenID provider on loopback for the identity tests: panva's oidc-provider (OpenID
Certified), run by node from tests/tools/oidc (its package.json and package-lock.json pin it;
`npm ci --prefix tests/tools/oidc` installs it, and the fixture does so itself when node is
here and the folder is not installed yet). Tokens for the good paths come from it through its own
endpoints: dynamic client registration, the client credentials grant, the authorization code
grant with PKCE through its login and consent pages. Two test keys of its keystore (which it never
signs with) let a test sign deliberately bad tokens that its JWKS vouches for, and rotate one out.

The root conftest's `oidc_provider` fixture starts one per test session (per xdist worker) and
stops it; where node is missing it skips, saying so."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
from helpers_identity import IssuerKey, new_key
from helpers_process import stop as stop_process

from rippl_core.testing import free_port

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tests" / "tools" / "oidc"
ACCOUNTS = {
    "ana": {"name": "Ana Lima", "email": "ana@example.com", "groups": ["rippl-reviewers", "staff"]},
    "pia": {"name": "Pia Berg", "email": "pia@example.com", "groups": ["rippl-proposers"]},
    "rui": {"name": "Rui Costa", "email": "rui@example.com", "groups": ["rippl-readers"]},
    "eve": {"name": "Eve Stone", "email": "eve@example.com", "groups": ["contractors"]},
}
REDIRECT = "http://127.0.0.1:9/callback"  # never fetched: the code is read off the redirect


def missing() -> str | None:
    """Why no provider can run here (None: it can)."""
    return None if shutil.which("node") else "node is not installed: the identity tests run a " \
        "real OpenID provider (oidc-provider) with it (apt-get install -y nodejs npm)"


def installed() -> None:
    """tests/tools/oidc's node_modules, installed from its lock (once, whichever worker comes
    first) when they are not yet."""
    if (TOOL / "node_modules" / "oidc-provider").is_dir():
        return
    with (TOOL / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (TOOL / "node_modules" / "oidc-provider").is_dir():
            done = subprocess.run(["npm", "ci", "--silent", "--no-audit", "--no-fund", "--prefix",
                                   str(TOOL)], capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                raise RuntimeError(f"npm ci --prefix {TOOL} failed (the identity tests need the "
                                   f"OpenID provider it installs):\n{done.stderr[-2000:]}")


@dataclass(frozen=True)
class Client:
    """A client registered with the provider."""

    client_id: str
    client_secret: str
    scope: str


@dataclass
class OidcProvider:
    """A running provider (see the module docstring)."""

    issuer: str
    process: subprocess.Popen[bytes]
    log: Path
    old: IssuerKey  # published from the start
    new: IssuerKey  # published only once a test rotates to it
    clients: dict[str, Client] = field(default_factory=dict)

    def register(self, name: str, *, scope: str = "", redirect_uris: list[str] | None = None,
                 grant_types: list[str] | None = None, public: bool = False) -> Client:
        """A new client (RFC 7591 dynamic registration): client credentials by default, or the
        authorization code grant with `redirect_uris`."""
        code = redirect_uris is not None
        metadata: dict[str, Any] = {
            "client_name": name, "scope": scope,
            "grant_types": grant_types or (["authorization_code"] if code else ["client_credentials"]),
            "response_types": ["code"] if code else [], "redirect_uris": redirect_uris or [],
            "token_endpoint_auth_method": "none" if public else "client_secret_basic"}
        answer = httpx.post(f"{self.issuer}/reg", json=metadata, timeout=30)
        assert answer.status_code == 201, answer.text
        found = answer.json()
        return Client(found["client_id"], found.get("client_secret", ""), scope)

    def client_credentials(self, client: Client, resource: str, scope: str | None = None) -> str:
        """An access token (a JWT) the client gets for itself, for `resource`."""
        answer = httpx.post(f"{self.issuer}/token", auth=(client.client_id, client.client_secret),
                            data={"grant_type": "client_credentials", "resource": resource,
                                  "scope": client.scope if scope is None else scope}, timeout=30)
        assert answer.status_code == 200, answer.text
        return str(answer.json()["access_token"])

    def authorize(self, url: str, login: str, redirect_uri: str = REDIRECT) -> str:
        """Follow an authorization request through the provider's own login and consent pages
        (driven by HTTP, as a browser would, signing in as `login`): the URL it redirects back
        to (not fetched), with the code and state."""
        with httpx.Client(timeout=30, follow_redirects=False) as browser:
            for _ in range(12):
                answer = browser.get(url)
                if answer.is_redirect:
                    url = urljoin(url, answer.headers["location"])
                    if url.startswith(redirect_uri):
                        return url
                    continue
                form = re.search(r'<form[^>]*action="([^"]+)"', answer.text)
                assert form, answer.text[:500]
                fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"',
                                         answer.text))
                if 'name="login"' in answer.text:
                    fields |= {"login": login, "password": "any"}
                posted = browser.post(urljoin(url, unescape(form.group(1))), data=fields)
                assert posted.is_redirect, posted.text[:500]
                url = urljoin(url, posted.headers["location"])
                if url.startswith(redirect_uri):
                    return url
        raise AssertionError(f"the provider never redirected to {redirect_uri}")

    def person_token(self, client: Client, login: str, resource: str, scope: str) -> str:
        """An access token for a person: the authorization code grant with PKCE, through the
        provider's own login and consent pages."""
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
        query = {"client_id": client.client_id, "response_type": "code", "redirect_uri": REDIRECT,
                 "scope": scope, "state": secrets.token_urlsafe(8), "resource": resource,
                 "code_challenge": challenge.decode(), "code_challenge_method": "S256",
                 "prompt": "consent"}
        back = self.authorize(f"{self.issuer}/auth?{urlencode(query)}", login)
        code = parse_qs(urlsplit(back).query)["code"][0]
        answer = httpx.post(f"{self.issuer}/token", auth=(client.client_id, client.client_secret),
                            data={"grant_type": "authorization_code", "code": code,
                                  "redirect_uri": REDIRECT, "code_verifier": verifier,
                                  "resource": resource}, timeout=30)
        assert answer.status_code == 200, answer.text
        return str(answer.json()["access_token"])

    def sign(self, claims: Mapping[str, Any], *, key: IssuerKey | None = None, **options: Any) -> str:
        """A token signed with a test key the provider publishes (`old` by default)."""
        return (key or self.old).sign(claims, **options)

    def claims(self, audience: str, **overrides: Any) -> dict[str, Any]:
        """Claims of a good access token of this provider for `audience` (None removes one)."""
        now = int(time.time())
        found = {"iss": self.issuer, "aud": audience, "sub": "agent-test", "client_id": "agent-test",
                 "scope": "rippl:check", "iat": now, "exp": now + 300, **overrides}
        return {k: v for k, v in found.items() if v is not None}

    def rotate(self, *, publish: str | None = None, retire: str | None = None) -> None:
        """Change which test keys /jwks lists."""
        query = {k: v for k, v in (("publish", publish), ("retire", retire)) if v}
        answer = httpx.post(f"{self.issuer}/__test__/jwks?{urlencode(query)}", timeout=30)
        assert answer.status_code == 200, answer.text

    def stop(self) -> None:
        stop_process(self.process, timeout=20)


@contextlib.contextmanager
def running_provider(folder: Path) -> Iterator[OidcProvider]:
    """The provider as a node process on a free loopback port, stopped on exit."""
    installed()
    old, new = new_key("ES384", kid=f"test-old-{uuid.uuid4().hex[:6]}"), \
        new_key("ES512", kid=f"test-new-{uuid.uuid4().hex[:6]}")
    port = free_port()
    config = folder / "provider.json"
    config.write_text(json.dumps({"port": port, "accounts": ACCOUNTS,
                                  "test_keys": [old.private_jwk(), new.private_jwk()],
                                  "unpublished": [new.kid]}), encoding="utf-8")
    log = folder / "provider.log"
    with log.open("wb") as out:
        process = subprocess.Popen(["node", str(TOOL / "provider.mjs"), str(config)], stdout=out,
                                   stderr=subprocess.STDOUT, cwd=TOOL,
                                   env={**os.environ, "NODE_ENV": "test"})
    provider = OidcProvider(f"http://127.0.0.1:{port}", process, log, old, new)
    try:
        deadline = time.monotonic() + 60
        while "listening" not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the OpenID provider did not start:\n{log.read_text()}")
            time.sleep(0.05)
        yield provider
    finally:
        provider.stop()
