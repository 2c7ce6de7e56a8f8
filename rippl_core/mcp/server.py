"""The MCP server over one `AsyncRippl` handle (on mcp 2.x or 1.x, see `rippl_core.mcp.sdk`).

Every tool is a thin call into the core API; a Rippl error becomes an MCP tool error (the client
sees `isError` with the message) and nothing is written, because every core write is atomic.
Approving and rejecting reviews are tools only when the server is started with `allow_review=True`
and a `reviewer` identity: by default that decision belongs to a human, outside the agent's reach.
"""

# No `from __future__ import annotations` here: the server reads the tool signatures at registration.

import contextlib
import functools
import importlib.metadata
import os
import sys
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, cast, get_args

import anyio
from starlette.applications import Starlette

from rippl_core._runtime.validation import MAX_ID_LENGTH, check_actor
from rippl_core.client import AsyncRippl
from rippl_core.errors import InvalidInputError
from rippl_core.identity.issuer import Issuer
from rippl_core.mcp import resources, scopes, sdk
from rippl_core.mcp.auth import ResourceServer
from rippl_core.mcp.common import keep_text, registrar
from rippl_core.mcp.gate import protect
from rippl_core.mcp.options import DEFAULT_MAX_RUNS, LogLevel, OAuthOptions
from rippl_core.mcp.sdk import ToolError
from rippl_core.mcp.session import Sessions, run_key
from rippl_core.mcp.tools import beliefs, capture, reasoning, review, safety
from rippl_core.models import Policy

REVIEW_TOOLS = ("approve_review", "reject_review")
LOG_LEVELS: tuple[str, ...] = get_args(LogLevel.__value__)


class Transport(StrEnum):
    STDIO = "stdio"
    HTTP = "http"


INSTRUCTIONS = """\
Rippl is a causal memory: it records what each decision and action rests on (sources -> claims ->
decisions -> actions) and vetoes an action when a premise under it has been retracted.
Before any tool call that changes something (deleting, migrating, deploying, paying, notifying
people), call check_premises with the tool name and the exact arguments you will pass: Rippl records
the call as resting on what this session read through it and judges it. If it answers safe=false, do
not make the call: read `explanation`, tell the user which premise failed, and choose an action that
does not rest on it. After a checked call ran, call record_execution with its output: later calls
rest on it, and if it is found false they are vetoed. If you learn that a claim is false, call
propose_retraction; a human approves or rejects it. A call that repeats a vetoed one stays vetoed:
never retry it hoping it passes (propose_override asks a person to let that one call run).
explain says why a node holds or not; blast_radius says what rests on a node; cite_claims names
what your plan relies on. record_belief / ask_belief / timeline / why_changed / what_if keep what
an agent believed about a topic and when (times are ISO-8601 with a time zone)."""


class RipplMCP(sdk.Server[Any]):
    """The SDK's server with a clear refusal for the review tools when they are not enabled, and for
    arguments a tool does not take (a misspelt `source` must not silently record a claim without
    its source)."""

    review_enabled: bool
    http_address: tuple[str, int]
    resource_server: ResourceServer | None

    def __init__(self, *, allow_review: bool = False, host: str = "127.0.0.1", port: int = 8000,
                 log_level: LogLevel = "WARNING", oauth: OAuthOptions | None = None) -> None:
        version = _rippl_version()
        auth = ResourceServer(oauth, host=host, port=port) if oauth is not None else None
        hooks: dict[str, Any] = {"auth": auth.settings(), "token_verifier": auth} if auth else {}
        super().__init__(name="rippl", instructions=INSTRUCTIONS, log_level=log_level,
                         **sdk.server_options(version=version, host=host, port=port), **hooks)
        sdk.set_version(self, version)  # the SDK would report its own version
        self.review_enabled = allow_review
        self.http_address = (host, port)
        self.resource_server = auth
        self._log_level = log_level

    def http_asgi_app(self) -> Starlette:
        """The streamable HTTP app (the endpoint is /mcp), behind the OAuth gate when the server
        is a resource server."""
        app = sdk.http_app(self, host=self.http_address[0])
        return protect(app, self.resource_server) if self.resource_server is not None else app

    async def serve_http(self) -> None:
        """Serve streamable HTTP on `http_address` (the endpoint is /mcp) until cancelled."""
        host, port = self.http_address
        await sdk.serve_app(self.http_asgi_app(), host=host, port=port, log_level=self._log_level)

    async def call_tool(self, name: str, arguments: dict[str, Any], *context: Any) -> Any:
        if name in REVIEW_TOOLS and not self.review_enabled:
            raise ToolError(
                f"{name} is not available: approving or rejecting a proposed retraction is a human "
                "decision. A person runs `rippl review approve REVIEW_ID --by NAME` (or reject), or "
                "starts this server with --allow-review --reviewer NAME."
            )
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            known = tool.parameters.get("properties", {})
            unknown = sorted(str(k)[:MAX_ID_LENGTH] for k in arguments if k not in known)
            if unknown:
                raise ToolError(f"{name} takes no argument {', '.join(map(repr, unknown))}; its "
                                f"arguments are: {', '.join(known)}. Nothing was done.")
        return await super().call_tool(name, arguments, *context)  # mcp 2.x passes the context


def _rippl_version() -> str:
    try:
        return importlib.metadata.version("rippl-core")
    except importlib.metadata.PackageNotFoundError:
        return "0"


def check_review_options(allow_review: bool, reviewer: str | None, *, oauth: bool = False,
                         reviewer_key: bytes | None = None) -> str | None:
    """The reviewer identity when review tools are enabled; refuses inconsistent options. With
    OAuth, the reviewer is whoever's token approves (a person the issuer marks as a reviewer)."""
    if oauth:
        if reviewer is not None or reviewer_key is not None:
            raise InvalidInputError("with --issuer, the reviewer of each decision is the person "
                                    "whose token makes it: leave out --reviewer and "
                                    "--reviewer-key (a reviewer with a key decides in the console "
                                    "or with `rippl review approve --key`)")
        return None
    if allow_review and reviewer is None:
        raise InvalidInputError("--allow-review needs --reviewer NAME: every approval's receipt "
                                "names the person who decided it")
    if reviewer is not None and not allow_review:
        raise InvalidInputError("--reviewer only applies with --allow-review (the review tools are "
                                "off by default)")
    return check_actor(reviewer, what="reviewer") if reviewer is not None else None


def build_server(rippl: AsyncRippl, *, allow_review: bool = False, reviewer: str | None = None,
                 host: str = "127.0.0.1", port: int = 8000, log_level: LogLevel = "WARNING",
                 max_runs: int = DEFAULT_MAX_RUNS, reviewer_key: bytes | None = None,
                 oauth: OAuthOptions | None = None) -> RipplMCP:
    """An MCP server whose tools run on `rippl`; `host` and `port` are where `serve_http` listens.
    The review tools exist only with `allow_review=True` and a `reviewer` (or `oauth`). At most
    `max_runs` clients' runs are held in memory (the least recently used leave; the graph keeps
    them). Run tokens are signed with `RIPPL_MCP_RUN_KEY` when it is set, else with a key of this
    process. With `oauth`, its HTTP transport is an OAuth resource server (`rippl_core.mcp.auth`)."""
    reviewer = check_review_options(allow_review, reviewer, oauth=oauth is not None,
                                    reviewer_key=reviewer_key)
    server = RipplMCP(allow_review=allow_review, host=host, port=port, log_level=log_level,
                      oauth=oauth)
    tool, sessions = registrar(server), Sessions(rippl, max_runs=max_runs)
    safety.register(rippl, tool, sessions)
    review.register(rippl, tool, sessions, allow_review=allow_review, reviewer=reviewer,
                    reviewer_key=reviewer_key)
    beliefs.register(rippl, tool, sessions)
    reasoning.register(rippl, tool, sessions)
    capture.register(rippl, tool, sessions)
    resources.register(server, rippl, sessions)
    keep_text(server)
    unscoped = sorted({t.name for t in server._tool_manager.list_tools()} - scopes.TOOLS)
    if unscoped:  # every tool needs a scope over OAuth: a new one must be given one (scopes.py)
        raise RuntimeError(f"tools without a scope in rippl_core/mcp/scopes.py: {unscoped}")
    return server


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send file descriptor 1 to stderr for the duration: on stdio, stdout is the protocol stream,
    and starting the embedded database must never write to it."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


async def serve_async(*, db: str | os.PathLike[str] | None = None, url: str | None = None,
                      graph: str = "rippl",
                      transport: Transport | Literal["stdio", "http"] = Transport.STDIO,
                      host: str = "127.0.0.1", port: int = 8000, allow_review: bool = False,
                      reviewer: str | None = None, log_level: str = "WARNING",
                      policy: Policy | None = None, max_runs: int = DEFAULT_MAX_RUNS,
                      reviewer_key: bytes | None = None, oauth: OAuthOptions | None = None) -> None:
    """Open the graph, serve it over stdio or streamable HTTP until the client leaves or the
    process is stopped, then close the graph. With `oauth` (HTTP only), the issuer's metadata is
    fetched first: a wrong or unreachable issuer is refused before the graph is opened."""
    transport = Transport(transport)
    check_review_options(allow_review, reviewer, oauth=oauth is not None, reviewer_key=reviewer_key)
    if oauth is not None:
        if transport is not Transport.HTTP:
            raise InvalidInputError("--issuer applies to --transport http: over stdio, the only "
                                    "client is the process that started the server")
        await Issuer(oauth.issuer).metadata()
    if max_runs < 1:
        raise InvalidInputError(f"--max-runs must be at least 1, got {max_runs}")
    run_key()  # a RIPPL_MCP_RUN_KEY too short is refused before the graph is opened
    level = log_level.upper()
    if level not in LOG_LEVELS:
        raise InvalidInputError(f"log level must be one of {', '.join(LOG_LEVELS)}")
    guard = stdout_to_stderr() if transport is Transport.STDIO else contextlib.nullcontext()
    with guard:
        rippl = await AsyncRippl.open(Path(db) if db is not None else None, url=url, graph=graph,
                                      policy=policy)
    try:
        server = build_server(rippl, allow_review=allow_review, reviewer=reviewer, host=host,
                              port=port, log_level=cast(LogLevel, level), max_runs=max_runs,
                              reviewer_key=reviewer_key, oauth=oauth)
        if transport is Transport.STDIO:
            await server.run_stdio_async()
        else:
            await server.serve_http()
    finally:
        await rippl.close()


def serve(**options: Any) -> None:
    """Blocking `serve_async` (see there for the options)."""
    anyio.run(functools.partial(serve_async, **options))
