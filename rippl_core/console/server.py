"""`rippl serve`: open the graph and serve the console with uvicorn, bound to 127.0.0.1 unless
told otherwise (and then only with reviewer authentication)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import uvicorn

from rippl_core.client import AsyncRippl
from rippl_core.console.app import create_app
from rippl_core.console.auth import (
    ENV_VAR,
    PROPOSERS_ENV_VAR,
    AuthConfigError,
    Reviewers,
    check_bind,
    is_loopback,
    load_proposers,
    load_reviewers,
    new_token,
    parse_reviewers,
)
from rippl_core.console.monitors import load_rules
from rippl_core.console.notify import Webhook
from rippl_core.console.provider import IdentityProvider, OidcConfig
from rippl_core.errors import RipplError

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


def reviewers_for(file: Path | None, one_off: str | None,
                  env: Mapping[str, str]) -> tuple[Reviewers, str | None]:
    """The reviewers of a run: from the file, from RIPPL_REVIEWERS, and a one-off reviewer with a
    fresh token (returned, to print once)."""
    reviewers = load_reviewers(file, env.get(ENV_VAR))
    if one_off is None:
        return reviewers, None
    token = new_token()
    return reviewers.merged(parse_reviewers([f"{one_off}: {token}"], where="--reviewer")), token


async def anchor_periodically(rippl: AsyncRippl, witness: str, interval: float, *,
                              signing_key: bytes | None = None, by: str | None = None,
                              report: Callable[[str], None] = lambda _: None,
                      webhooks: Sequence[Webhook] = ()) -> None:
    """Anchor the log's head at `witness` now and every `interval` seconds when it has grown
    (until cancelled). A failure (a witness down, a log that no longer extends the anchored head)
    is reported and tried again at the next tick; the console keeps serving."""
    last: tuple[int, str] | None = None
    while True:
        try:
            head = await rippl.tree_head()
            if (head.size, head.root) != last:
                anchored = await rippl.anchor(witness, signing_key=signing_key, by=by)
                last = (anchored.size, anchored.root)
                report(f"anchored {anchored.size} receipts (root {anchored.root[:16]}…) at {witness}")
        except RipplError as exc:
            report(f"anchoring at {witness} failed: {exc}")
        await asyncio.sleep(interval)


async def check_provider(oidc: OidcConfig, host: str, *, reviewers: Reviewers,
                         proposers: Reviewers) -> None:
    """Refuse what cannot work with an identity provider, before anything is served: reviewer or
    proposer tokens beside it, a console beyond loopback without its https address (the session
    cookie is Secure there, and a browser drops it over plain http), a provider whose metadata
    cannot be read."""
    if reviewers or proposers:
        raise AuthConfigError("with --oidc-issuer, reviewers and proposers come from the identity "
                              "provider (its groups, its tokens): leave out --reviewers, "
                              "--reviewer, --proposers, RIPPL_REVIEWERS and RIPPL_PROPOSERS")
    public = urlsplit(oidc.public_url or "")
    if not is_loopback(host) and public.scheme != "https":
        raise AuthConfigError(f"a console on {host} signs people in only over https: serve it "
                              "behind TLS and give its address with --public-url https://...")
    await IdentityProvider(oidc).metadata()


def url_of(host: str, port: int, token: str | None = None) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"#token={token}" if token else "")


async def serve_async(*, db: str | os.PathLike[str] | None = None, url: str | None = None,
                      graph: str = "rippl", host: str = "127.0.0.1", port: int = 8765,
                      reviewers_file: Path | None = None, reviewer: str | None = None,
                      allow_remote: bool = False, allowed_hosts: Sequence[str] = (),
                      distinct_approver: bool = False, log_level: str = "warning",
                      announce: Callable[[str, Reviewers], None] | None = None,
                      env: Mapping[str, str] | None = None, anchor: str | None = None,
                      anchor_interval: float = 300.0, anchor_key: bytes | None = None,
                      anchor_by: str | None = None,
                      report: Callable[[str], None] = lambda _: None,
                      proposers_file: Path | None = None, alert_rules: Path | None = None,
                      webhooks: Sequence[Webhook] = (), oidc: OidcConfig | None = None) -> None:
    """Serve until stopped. Refuses (AuthConfigError) a non-loopback `host` without
    `allow_remote` and reviewers. `announce(url, reviewers)` is called once listening; with a
    one-off `reviewer`, the URL carries its token (in the fragment, which is never sent). With
    `anchor` (a witness), the log's head is anchored there every `anchor_interval` seconds when
    it grew (signed by `anchor_by` with `anchor_key` if given); `report` hears how it went.
    `proposers_file` (and RIPPL_PROPOSERS): monitors that may propose, never decide;
    `alert_rules`: the rules file of the Alertmanager webhook (POST /api/alertmanager).
    `oidc`: people sign in with that identity provider instead (its metadata is fetched first:
    a wrong or unreachable provider is refused before anything is served)."""
    if log_level.lower() not in LOG_LEVELS:
        raise AuthConfigError(f"log level must be one of {', '.join(LOG_LEVELS)}")
    if anchor is not None and not anchor_interval > 0:
        raise AuthConfigError("the anchoring interval must be a positive number of seconds")
    environ = os.environ if env is None else env
    reviewers, token = reviewers_for(reviewers_file, reviewer, environ)
    proposers = load_proposers(proposers_file, environ.get(PROPOSERS_ENV_VAR), reviewers)
    rules = load_rules(alert_rules) if alert_rules is not None else None
    allowed = check_bind(host, allow_remote=allow_remote, reviewers=reviewers,
                         extra_hosts=allowed_hosts, provider=oidc is not None)
    if oidc is not None:
        await check_provider(oidc, host, reviewers=reviewers, proposers=proposers)
    rippl = await AsyncRippl.open(Path(db) if db is not None else None, url=url, graph=graph,
                                  distinct_approver=distinct_approver)
    try:
        app = create_app(rippl, reviewers=reviewers, read_open=is_loopback(host),
                         allowed_hosts=allowed, proposers=proposers, alert_rules=rules,
                         webhooks=webhooks, oidc=oidc)
        config = uvicorn.Config(app, host=host, port=port, log_level=log_level.lower(),
                                lifespan="on", server_header=False, timeout_graceful_shutdown=2)
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve())
        while not server.started and not serving.done():
            await asyncio.sleep(0.02)
        if server.started and announce is not None:
            announce(url_of(host, port, token), reviewers)
        anchoring = asyncio.create_task(anchor_periodically(
            rippl, anchor, anchor_interval, signing_key=anchor_key, by=anchor_by,
            report=report)) if anchor is not None else None
        try:
            await serving
        finally:
            if anchoring is not None:
                anchoring.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await anchoring
    finally:
        await rippl.close()


def serve(**options: Any) -> None:
    """Blocking `serve_async` (see there for the options)."""
    asyncio.run(serve_async(**options))
