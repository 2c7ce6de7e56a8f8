"""Keys the tests control and a loopback issuer that publishes them: an OpenID Connect discovery
document and a JWKS served over real HTTP on 127.0.0.1, whose published keys a test changes (a
rotation), that can fail on purpose, and that counts how often its keys were fetched. The tests
of `rippl_core.identity` verify tokens signed here with real keys and PyJWT; the end-to-end tests
(tests/mcp/test_oauth.py, tests/console/test_oidc*.py) use a real OpenID provider instead, and
sign only the deliberately bad tokens with these keys."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa


@dataclass(frozen=True)
class IssuerKey:
    """A private key with the id and algorithm its public JWK is published under."""

    kid: str
    alg: str
    private: Any

    def jwk(self, **extra: Any) -> dict[str, Any]:
        """The public JWK (with `alg` and `use: sig` unless `extra` overrides them; None drops)."""
        algorithm = jwt.get_algorithm_by_name(self.alg)
        public = json.loads(algorithm.to_jwk(self.private.public_key()))
        found = {**public, "kid": self.kid, "alg": self.alg, "use": "sig", **extra}
        return {k: v for k, v in found.items() if v is not None}

    def private_jwk(self) -> dict[str, Any]:
        """The private JWK (for a provider that signs with it)."""
        algorithm = jwt.get_algorithm_by_name(self.alg)
        return {**json.loads(algorithm.to_jwk(self.private)), "kid": self.kid, "alg": self.alg,
                "use": "sig"}

    def sign(self, claims: Mapping[str, Any], *, alg: str | None = None,
             headers: Mapping[str, Any] | None = None, kid: str | bool | None = True) -> str:
        """A JWT of `claims` signed with this key (under `alg`, default its own), its header
        naming this key's id unless `kid` says otherwise (False: no kid)."""
        header = {**({"kid": self.kid} if kid is True else {} if kid is False else {"kid": kid}),
                  **(headers or {})}
        return jwt.encode(dict(claims), self.private, algorithm=alg or self.alg, headers=header)


def new_key(alg: str = "ES256", kid: str | None = None) -> IssuerKey:
    if alg.startswith("ES"):
        curve = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}[alg]
        private: Any = ec.generate_private_key(curve)
    elif alg == "EdDSA":
        private = ed25519.Ed25519PrivateKey.generate()
    else:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return IssuerKey(kid or f"{alg.lower()}-{uuid.uuid4().hex[:8]}", alg, private)


def unsigned(claims: Mapping[str, Any]) -> str:
    """A JWT with `alg: none` (no signature), as an attacker sends it."""
    return jwt.encode(dict(claims), None, algorithm="none")


def hmac_signed(claims: Mapping[str, Any], secret: bytes, kid: str) -> str:
    """A JWT signed with HMAC-SHA256 under `kid`, as an attacker keys it with public material."""
    return jwt.encode(dict(claims), secret, algorithm="HS256", headers={"kid": kid})


@dataclass
class LoopbackIssuer:
    """An issuer on 127.0.0.1: discovery document and JWKS (see the module docstring)."""

    url: str = ""
    audience: str = "https://rippl.test/mcp"
    published: list[dict[str, Any]] = field(default_factory=list)
    jwks_fetches: int = 0
    failing: bool = False  # answer 500 to every request
    metadata_issuer: str | None = None  # the issuer the metadata names (default: its own url)
    oidc_discovery: bool = True  # serve /.well-known/openid-configuration (else only RFC 8414)
    metadata_extra: dict[str, Any] = field(default_factory=dict)  # more fields (None: removed)
    jwks_body: bytes | None = None  # the JWKS answer as these bytes instead
    jwks_redirect: str | None = None  # answer the JWKS with a redirect there instead

    def publish(self, *keys: IssuerKey | dict[str, Any]) -> None:
        """Publish exactly these keys (a IssuerKey's public JWK, or a JWK as given)."""
        self.published = [k.jwk() if isinstance(k, IssuerKey) else k for k in keys]

    def claims(self, **overrides: Any) -> dict[str, Any]:
        """Claims of a good access token (overrides replace them; None removes one)."""
        now = int(time.time())
        found = {"iss": self.url, "aud": self.audience, "sub": "agent-7", "client_id": "agent-7",
                 "scope": "rippl:check", "iat": now, "exp": now + 300, **overrides}
        return {k: v for k, v in found.items() if v is not None}

    def document(self, path: str) -> tuple[int, bytes, dict[str, str]]:
        """The status, body and headers of the answer to a GET of `path`."""
        if self.failing:
            return 500, b'{"error": "down"}', {}
        base = self.url.rstrip("/")
        metadata = {"issuer": self.metadata_issuer or self.url, "jwks_uri": f"{base}/jwks",
                    "token_endpoint": f"{base}/token", **self.metadata_extra}
        metadata = {k: v for k, v in metadata.items() if v is not None}
        if path == "/jwks":
            self.jwks_fetches += 1
            if self.jwks_redirect is not None:
                return 302, b"", {"Location": self.jwks_redirect}
            body = self.jwks_body if self.jwks_body is not None else \
                json.dumps({"keys": self.published}).encode()
            return 200, body, {}
        if (path == "/.well-known/openid-configuration" and self.oidc_discovery) or \
                path == "/.well-known/oauth-authorization-server":
            return 200, json.dumps(metadata).encode(), {}
        return 404, b'{"error": "not found"}', {}


@contextmanager
def loopback_issuer(**options: Any) -> Iterator[LoopbackIssuer]:
    """A LoopbackIssuer listening on a free port, stopped on exit."""
    issuer = LoopbackIssuer(**options)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, data, headers = issuer.document(self.path.split("?")[0])
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    issuer.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
