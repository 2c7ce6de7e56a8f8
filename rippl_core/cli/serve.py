"""`rippl serve`: the review console in the browser (the queue, the graph, receipts, beliefs)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from rippl_core.cli.app import Connection, command, connection, errors, signing_key_file
from rippl_core.errors import InvalidInputError
from rippl_core.identity.roles import (
    GROUPS_CLAIM,
    PROPOSER_GROUP,
    READER_GROUP,
    REVIEWER_GROUP,
    RoleMap,
)


def announce(url: str, names: list[str], graph: str, *, one_off: bool,
             provider: str | None = None) -> None:
    errors.print(f"rippl console for graph {graph!r} on {url}", highlight=False, soft_wrap=True)
    if provider is not None:
        errors.print(f"  people sign in with {provider}; monitors bring its tokens",
                     highlight=False)
    elif one_off:
        errors.print("  open that link to sign in as the one-off reviewer (the token is valid until "
                     "the server stops)", highlight=False)
    elif names:
        errors.print(f"  reviewers: {', '.join(names)}", highlight=False)
    else:
        errors.print("  read-only: no reviewers configured (--reviewers FILE, RIPPL_REVIEWERS or "
                     "--reviewer NAME)", highlight=False)


def run_console(conn: Connection, *, host: str, port: int, reviewers: Path | None,
                reviewer: str | None, allow_remote: bool, allowed_host: list[str],
                distinct_approver: bool, log_level: str, anchor: str | None = None,
                anchor_interval: float = 300.0, anchor_key: Path | None = None,
                anchor_by: str | None = None, proposers: Path | None = None,
                alert_rules: Path | None = None, webhooks: Sequence[Any] = (),
                oidc: Any = None) -> None:
    from rippl_core.console import serve  # FastAPI and uvicorn only when serving

    key = signing_key_file(anchor_key)
    if (key is None) != (anchor_by is None):
        raise InvalidInputError("--anchor-key and --anchor-by go together: who signs the heads, "
                                "with which key")
    serve(db=conn.db, url=conn.url, graph=conn.graph, host=host, port=port,
          reviewers_file=reviewers, reviewer=reviewer, allow_remote=allow_remote,
          allowed_hosts=allowed_host, distinct_approver=distinct_approver, log_level=log_level,
          announce=lambda url, known: announce(url, known.names, conn.graph,
                                               one_off=reviewer is not None,
                                               provider=oidc.issuer if oidc else None),
          anchor=anchor, anchor_interval=anchor_interval, anchor_key=key, anchor_by=anchor_by,
          report=lambda line: errors.print(line, highlight=False, soft_wrap=True),
          proposers_file=proposers, alert_rules=alert_rules,
          webhooks=webhooks, oidc=oidc)


def oidc_of(issuer: str | None, client_id: str | None, secret_file: Path | None,
            secret: str | None, scopes: list[str], roles: RoleMap, public_url: str | None) -> Any:
    """The identity provider's configuration, checked before anything is opened (None: people
    sign in with reviewer tokens)."""
    if issuer is None:
        if client_id is not None or secret_file is not None:
            raise InvalidInputError("--oidc-client-id and --oidc-client-secret-file go with "
                                    "--oidc-issuer (the identity provider people sign in with)")
        return None
    if client_id is None:
        raise InvalidInputError("--oidc-issuer needs --oidc-client-id (or RIPPL_OIDC_CLIENT_ID): "
                                "the console's client at the identity provider")
    if secret_file is not None:
        try:
            secret = secret_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise InvalidInputError(f"cannot read the client secret file {secret_file}: "
                                    f"{exc.strerror or exc}") from None
    from rippl_core.console.provider import OidcConfig

    chosen = tuple(s for scope in scopes for s in scope.split()) or ("openid", "profile", "email")
    return OidcConfig(issuer=issuer, client_id=client_id, client_secret=secret or None,
                      scopes=chosen, roles=roles, public_url=public_url)


def webhooks_of(urls: list[str], secret: str | None, events: str | None) -> list[Any]:
    """The --notify webhooks, checked before anything is opened: a bad URL, no secret or an
    unknown event type is a usage error that says what is wrong."""
    if not urls:
        return []
    from rippl_core.console.notify import DEFAULT_EVENTS, Webhook, check_events, check_url

    try:
        for url in urls:
            check_url(url)
        chosen = check_events(events.split(",")) if events else DEFAULT_EVENTS
        if not secret:
            raise InvalidInputError("--notify needs --notify-secret (or RIPPL_NOTIFY_SECRET): the "
                                    "key each body is signed with (HMAC-SHA256, X-Rippl-Signature)")
        return [Webhook(url, secret.encode(), chosen) for url in urls]
    except InvalidInputError as exc:
        raise typer.BadParameter(exc.for_cli(), param_hint="--notify") from None


@command("serve")
def serve_cmd(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to bind. Anything but loopback needs "
                                           "--allow-remote and reviewers.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8765,
    reviewers: Annotated[Path | None, typer.Option(
        help="File of reviewers, one 'name: token' (or 'name: sha256:<hex>') per line; also "
             "RIPPL_REVIEWERS.")] = None,
    reviewer: Annotated[str | None, typer.Option(
        help="A one-off reviewer: a fresh token is made and printed in the sign-in link.")] = None,
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Allow a non-loopback --host (reads then need a reviewer too).")] = False,
    allowed_host: Annotated[list[str], typer.Option(
        help="A host name clients use to reach the console (the Host header is checked); "
             "repeatable.")] = [],  # noqa: B006 - typer needs a list default
    distinct_approver: Annotated[bool, typer.Option(
        "--distinct-approver", help="Whoever proposed a retraction may not approve it.")] = False,
    log_level: Annotated[str, typer.Option(help="Server log level.")] = "warning",
    anchor: Annotated[str | None, typer.Option(
        help="Anchor the receipt log's head at this witness (file:PATH, git:PATH or an http(s) "
             "URL) periodically while serving.")] = None,
    anchor_interval: Annotated[float, typer.Option(
        help="Seconds between anchorings (only when the log grew).")] = 300.0,
    anchor_key: Annotated[Path | None, typer.Option(
        help="Sign the anchored heads with this key file (hex).")] = None,
    anchor_by: Annotated[str | None, typer.Option(help="With --anchor-key: who signs.")] = None,
    proposers: Annotated[Path | None, typer.Option(
        help="File of proposers (monitors), one 'name: token' per line; also RIPPL_PROPOSERS. "
             "They may propose retractions with their bearer token, never decide.")] = None,
    alert_rules: Annotated[Path | None, typer.Option(
        help="Rules (YAML) mapping Alertmanager alert labels to provenance queries: serves the "
             "webhook POST /api/alertmanager (see docs/monitors.md).")] = None,
    notify: Annotated[list[str], typer.Option(
        help="Post chosen events as JSON to this webhook URL, signed (HMAC-SHA256 of the body, "
             "X-Rippl-Signature), retried with backoff; repeatable.")] = [],  # noqa: B006
    notify_secret: Annotated[str | None, typer.Option(
        envvar="RIPPL_NOTIFY_SECRET", help="The webhook signing secret (or RIPPL_NOTIFY_SECRET).",
        show_envvar=False)] = None,
    notify_events: Annotated[str | None, typer.Option(
        help="Comma-separated event types to post (default: compensation_needed, "
             "compensation_resolved, review_proposed, review_approved, review_rejected, "
             "node_invalidated, call_vetoed, call_stale, call_superseded).")] = None,
    oidc_issuer: Annotated[str | None, typer.Option(
        envvar="RIPPL_OIDC_ISSUER", show_envvar=False,
        help="Sign people in with this OpenID Connect provider instead of reviewer tokens (also "
             "RIPPL_OIDC_ISSUER); roles come from its groups. See docs/identity.md.")] = None,
    oidc_client_id: Annotated[str | None, typer.Option(
        envvar="RIPPL_OIDC_CLIENT_ID", show_envvar=False,
        help="The console's client id at the provider (also RIPPL_OIDC_CLIENT_ID).")] = None,
    oidc_client_secret_file: Annotated[Path | None, typer.Option(
        help="A file holding the client's secret (or RIPPL_OIDC_CLIENT_SECRET; none: a public "
             "client, PKCE alone).")] = None,
    oidc_scope: Annotated[list[str], typer.Option(
        help="A scope the sign-in asks for (repeatable; default: openid profile email).")] = [],  # noqa: B006
    oidc_roles_claim: Annotated[str, typer.Option(
        help="The claim holding a person's groups (a dotted path for a nested one, e.g. "
             "realm_access.roles).")] = GROUPS_CLAIM,
    oidc_reviewer_group: Annotated[str, typer.Option(
        help="The group whose people approve and reject.")] = REVIEWER_GROUP,
    oidc_proposer_group: Annotated[str, typer.Option(
        help="The group whose people propose retractions (and read).")] = PROPOSER_GROUP,
    oidc_reader_group: Annotated[str, typer.Option(
        help="The group whose people read.")] = READER_GROUP,
    public_url: Annotated[str | None, typer.Option(
        help="With --oidc-issuer: the console's address as browsers see it (the sign-in's "
             "redirect URI is PUBLIC_URL/api/oidc/callback; monitors' tokens name it as their "
             "audience). Default http://HOST:PORT/; required, in https, beyond loopback.")] = None,
) -> None:
    """Serve the review console: the review queue, the live graph explorer, receipts and beliefs,
    on http://127.0.0.1:8765/. Needs FastAPI and uvicorn (the console extra of rippl-core)."""
    webhooks = webhooks_of(notify, notify_secret, notify_events)
    oidc = oidc_of(oidc_issuer, oidc_client_id, oidc_client_secret_file,
                   os.environ.get("RIPPL_OIDC_CLIENT_SECRET"),
                   oidc_scope, RoleMap(claim=oidc_roles_claim, reviewer=oidc_reviewer_group,
                                       proposer=oidc_proposer_group, reader=oidc_reader_group),
                   public_url)
    run_console(connection(ctx), host=host, port=port, reviewers=reviewers, reviewer=reviewer,
                allow_remote=allow_remote, allowed_host=allowed_host,
                distinct_approver=distinct_approver, log_level=log_level, anchor=anchor,
                anchor_interval=anchor_interval, anchor_key=anchor_key, anchor_by=anchor_by,
                proposers=proposers, alert_rules=alert_rules, webhooks=webhooks, oidc=oidc)
