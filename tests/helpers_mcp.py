"""Helpers for the MCP tests (no tests here): the README's client configuration, MCP sessions owned
by a background task, and an HTTP server process. The client is the installed SDK's, 1.x or 2.x
like the server; `wire` reads its models the same way under both."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, TextIO

import httpx
import pytest
from helpers_process import stop, wait_for_port
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared import exceptions
from mcp.types import CallToolResult
from pydantic import BaseModel

from rippl_core import Rippl

McpError: type[Exception] = getattr(exceptions, "MCPError", None) or exceptions.McpError  # 2.x, 1.x
REPO = Path(__file__).resolve().parents[1]
README_DB = "/path/to/rippl.db"
UVX_FROM = ["--from", "rippl-core[mcp]"]  # never plain `uvx rippl`: PyPI's `rippl` is another project


def readme_server_config() -> dict[str, Any]:
    """The `rippl` entry of the client configuration in the README's MCP section."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Use it from any MCP client", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```json\n(.*?)```", section, re.S)
    assert block, "the README's MCP section has no JSON client configuration"
    return dict(json.loads(block.group(1))["mcpServers"]["rippl"])


def readme_stdio_params(db: Path, *extra: str) -> StdioServerParameters:
    """The README's configuration with `db` filled in (extra args appended). uvx would fetch the
    published package; the same command line runs here with this environment's `rippl`."""
    config = readme_server_config()
    assert config["command"] == "uvx" and config["args"][:3] == [*UVX_FROM, "rippl"], config
    args = [a.replace(README_DB, str(db)) for a in config["args"][3:]]
    return StdioServerParameters(command=rippl_script(), args=[*args, *extra])


def module_stdio_params(db: Path, *extra: str) -> StdioServerParameters:
    """`python -m rippl_core.mcp --db DB`: the form for clients that start an interpreter."""
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "rippl_core.mcp", "--db", str(db), *extra], cwd=str(REPO))


def served_graph(folder: str) -> tuple[Any, Any]:
    """A module's two fixtures for the graph its server processes serve: `db`, a fresh database (in
    a temporary folder named after `folder`), and `direct`, the test's own handle on it (the
    monitor and the human reviewer). In the module: `db, direct = served_graph("mcp-...")`."""
    @pytest.fixture(scope="module")
    def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
        return tmp_path_factory.mktemp(folder) / "rippl.db"

    @pytest.fixture(scope="module")
    def direct(db: Path) -> Iterator[Rippl]:
        with Rippl.open(db) as handle:
            yield handle

    return db, direct


def wire(model: BaseModel) -> dict[str, Any]:
    """An SDK model as sent on the wire (camelCase keys: `isError`, `inputSchema`...): mcp 1.x names
    its attributes that way, mcp 2.x in snake_case with camelCase aliases."""
    return model.model_dump(mode="json", by_alias=True)


class Client:
    """An initialised `ClientSession` whose transport lives in its own task: anyio cancel scopes
    must be entered and left by one task, and pytest fixtures set up and tear down in different
    ones."""

    def __init__(self, transport: Callable[[], AbstractAsyncContextManager[Any]],
                 name: str = "rippl-tests") -> None:
        self._transport, self._name = transport, name
        self._ready: asyncio.Future[ClientSession] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.session: ClientSession
        self.instructions: str | None = None
        self.server_version: str = ""

    async def __aenter__(self) -> Client:
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run())
        self.session = await asyncio.wait_for(asyncio.shield(self._ready), 120)
        return self

    async def _run(self) -> None:
        from mcp.types import Implementation

        assert self._ready is not None
        try:
            async with self._transport() as streams, ClientSession(
                    streams[0], streams[1], client_info=Implementation(name=self._name, version="1")) as s:
                init = await s.initialize()
                self.instructions = init.instructions
                self.server_version = wire(init)["serverInfo"]["version"]
                self._ready.set_result(s)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            else:
                raise

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await asyncio.wait_for(self._task, 60)

    async def tools(self) -> dict[str, dict[str, Any]]:
        """The listed tools by name, as sent on the wire."""
        return {t.name: wire(t) for t in (await self.session.list_tools()).tools}

    async def raw(self, tool: str, arguments: dict[str, Any],
                  meta: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool (with `meta` as the request's `_meta`); its result as sent on the wire
        (`isError`, `structuredContent`, `content`)."""
        result: CallToolResult = await self.session.call_tool(tool, arguments, meta=meta)
        return wire(result)

    async def call(self, tool: str, /, *, _meta: dict[str, Any] | None = None,
                   **arguments: Any) -> dict[str, Any]:
        """Call a tool that must succeed; its structured result."""
        return succeeded(tool, await self.raw(tool, arguments, _meta))

    async def fail(self, tool: str, /, *, _meta: dict[str, Any] | None = None,
                   **arguments: Any) -> str:
        """Call a tool that must fail with a tool error; its message."""
        return failed(tool, await self.raw(tool, arguments, _meta))


def succeeded(tool: str, result: dict[str, Any]) -> dict[str, Any]:
    """The structured result of a tool call that must have succeeded."""
    text = result["content"][0]["text"] if result["content"] else ""
    assert not result["isError"], f"{tool} failed: {text}"
    assert result["structuredContent"] is not None
    return dict(result["structuredContent"])


def failed(tool: str, result: dict[str, Any]) -> str:
    """The message of a tool call that must have failed with a tool error."""
    assert result["isError"], f"{tool} should have failed but returned {result['structuredContent']}"
    return str(result["content"][0]["text"]) if result["content"] else ""


STATELESS_VERSION = "2026-07-28"


class StatelessClient:
    """A raw client of the MCP 2026-07-28 revision: each request is one HTTP POST carrying its own
    `_meta` envelope (protocol version, capabilities, client info), with no initialize and no
    session id. `run` (a run token) goes in `_meta.rippl_run` beside the protocol's keys."""

    def __init__(self, url: str, name: str = "raw-2026", run: str | None = None) -> None:
        self.url, self.name, self.run = url, name, run
        self._ids = iter(range(1, 1 << 30))

    def envelope(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": self.name, "version": "1"}}
        if self.run is not None:
            meta["rippl_run"] = self.run
        return meta

    async def post(self, tool: str, arguments: dict[str, Any]) -> httpx.Response:
        """The HTTP response to one tools/call request."""
        body = {"jsonrpc": "2.0", "id": next(self._ids), "method": "tools/call",
                "params": {"name": tool, "arguments": arguments, "_meta": self.envelope()}}
        headers = {"Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": STATELESS_VERSION, "Mcp-Method": "tools/call",
                   "Mcp-Name": tool}
        async with httpx.AsyncClient(timeout=60) as http:
            return await http.post(self.url, json=body, headers=headers)

    async def raw(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A tool's result as sent on the wire; no session is ever opened."""
        response = await self.post(tool, arguments)
        assert response.status_code == 200, response.text
        assert "mcp-session-id" not in response.headers
        reply = response.json()
        assert "result" in reply, reply
        return dict(reply["result"])

    async def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        return succeeded(tool, await self.raw(tool, arguments))

    async def fail(self, tool: str, /, **arguments: Any) -> str:
        return failed(tool, await self.raw(tool, arguments))


def stdio_client_for(params: StdioServerParameters, errlog: TextIO) -> Client:
    return Client(lambda: stdio_client(params, errlog=errlog))


def http_client_for(url: str, name: str = "rippl-tests") -> Client:
    return Client(lambda: streamable_http_client(url), name=name)


class MemoryTokens:
    """The SDK's token storage, in memory (what an agent keeps of its OAuth flow)."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None
        self.issued: list[str] = []  # every access token the flow stored, in order

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens
        self.issued.append(tokens.access_token)

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


def oauth_client_for(url: str, client_id: str, client_secret: str, *, storage: MemoryTokens,
                     issuer: str | None = None, name: str = "rippl-oauth-tests") -> Client:
    """A client of an MCP server that is an OAuth resource server, with the SDK's own OAuth
    support: on the first 401 it discovers the protected resource metadata and the issuer, and
    gets a token with the client credentials grant (again, with more scopes, on a 403
    insufficient_scope); credentials go only to `issuer` where the SDK can pin it. mcp 2.x's
    client runs on httpx2, 1.x's on httpx."""
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

    pinned = {"issuer": issuer} if issuer and "issuer" in inspect.signature(
        ClientCredentialsOAuthProvider).parameters else {}  # mcp 1.27 and later
    auth = ClientCredentialsOAuthProvider(server_url=url, storage=storage, client_id=client_id,
                                          client_secret=client_secret, **pinned)
    http = importlib.import_module("httpx2" if hasattr(exceptions, "MCPError") else "httpx")

    @contextlib.asynccontextmanager
    async def transport() -> AsyncIterator[Any]:
        async with http.AsyncClient(auth=auth, timeout=60, follow_redirects=True) as client, \
                streamable_http_client(url, http_client=client) as streams:
            yield streams

    return Client(transport, name=name)


@contextlib.asynccontextmanager
async def all_of(clients: list[Client]) -> AsyncIterator[list[Client]]:
    """Several clients open at once."""
    async with contextlib.AsyncExitStack() as exits:
        yield [await exits.enter_async_context(c) for c in clients]


def rippl_script() -> str:
    """The installed `rippl` command of this environment."""
    return str(Path(sys.executable).parent / "rippl")


@contextlib.contextmanager
def http_server(args: list[str], log: Path, env: dict[str, str] | None = None) -> Any:
    """`rippl [args]` started as a process (with an HTTP transport in args, and `env` as its
    environment when given); stopped on exit."""
    port = int(args[args.index("--port") + 1])
    with log.open("wb") as out:
        process = subprocess.Popen([rippl_script(), *args], stdout=out, stderr=subprocess.STDOUT,
                                   cwd=REPO, env=env)
        try:
            wait_for_port(port, process, log)
            yield process
        finally:
            stop(process)

