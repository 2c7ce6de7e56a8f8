"""What every MCP tool family shares: argument types with limits, the caller's identity, the
registrar that turns a Rippl error into a tool error, and the SDK's argument parsing fixed to keep
text as sent."""

# No `from __future__ import annotations` here: the server reads the tool signatures at registration.

import functools
from collections.abc import Awaitable, Callable
from types import UnionType
from typing import Annotated, Any, Self, Union, get_args, get_origin

from mcp.types import ToolAnnotations
from pydantic import Field

from rippl_core._runtime.validation import MAX_ID_LENGTH, MAX_TEXT_LENGTH
from rippl_core.errors import InvalidInputError, RipplError
from rippl_core.identity.roles import Principal
from rippl_core.mcp.auth import principal_of_token
from rippl_core.mcp.sdk import Context, FuncMetadata, Server, ToolError, access_token, client_name

MAX_IDS = 1000

Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)]
Ids = Annotated[list[Id], Field(max_length=MAX_IDS)]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_LENGTH)]
Time = Annotated[str, Field(min_length=1, max_length=64,
                            description="ISO-8601 with a time zone, e.g. 2026-10-08T09:00:00Z.")]


type Registrar = Callable[..., Callable[[Callable[..., Awaitable[Any]]], Any]]


def caller(ctx: Context) -> Principal | None:
    """Who the request's bearer token names (None: no token, over stdio or without OAuth)."""
    return principal_of_token(access_token(ctx))


def client_identity(ctx: Context, agent: str | None = None) -> str:
    """Who is calling. With OAuth, the subject of the request's token: an agent name the request
    gives must be that one (a request never acts as another agent). Without, `mcp:<client name>`
    from the client's initialize handshake, never from a tool's arguments; an agent name the
    caller gives only qualifies it: `mcp:<client>/<agent>`, so a caller can name itself but never
    pass for someone else (a person, another client)."""
    principal = caller(ctx)
    if principal is not None:
        if agent is not None and agent.strip() and agent.strip() != principal.subject:
            raise InvalidInputError(
                f"this request's token is {principal.subject}'s, and a request acts only as the "
                f"agent its token names, never as {agent.strip()[:MAX_ID_LENGTH]!r}: leave the "
                "agent out (the token says who you are). Nothing was done.")
        return principal.subject
    clean = "".join(ch for ch in client_name(ctx) if ch.isprintable()).strip()[:100]
    identity = f"mcp:{clean}" if clean else "mcp:client"
    if agent is None or not agent.strip():
        return identity
    return f"{identity}/{agent.strip()}"[:MAX_ID_LENGTH].rstrip()


def reported_as[R](error: type[Exception], fn: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """Turn a Rippl error into `error` (the SDK's ToolError or ResourceError, which the client sees
    with its message) naming its type; the message says what to do."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> R:
        try:
            return await fn(*args, **kwargs)
        except RipplError as exc:
            raise error(f"{type(exc).__name__}: {exc}") from exc

    return wrapper


def accepts_text(annotation: Any) -> bool:
    """Whether a parameter annotation takes a string (str, an Annotated str, or a union with one)."""
    if get_origin(annotation) is Annotated:
        return accepts_text(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        return any(accepts_text(a) for a in get_args(annotation))
    return annotation is str


class KeepText(FuncMetadata):
    """The SDK decodes string arguments that look like JSON when the parameter is not exactly `str`
    (for clients that send lists as JSON text), so an optional id or note "null" became None and
    "[1]" a list. Strings given to parameters that take text are kept as sent."""

    @classmethod
    def of(cls, meta: FuncMetadata) -> Self:
        return cls(arg_model=meta.arg_model, output_schema=meta.output_schema,
                   output_model=meta.output_model, wrap_output=meta.wrap_output)

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = super().pre_parse_json(data)
        fields = self.arg_model.model_fields
        for key, value in data.items():
            if isinstance(value, str) and key in fields and accepts_text(fields[key].annotation):
                parsed[key] = value
        return parsed


def registrar(server: Server[Any]) -> Registrar:
    """The `@tool(read_only=..., title=...)` decorator that registers a tool on `server` with its
    MCP annotations and Rippl's error handling."""

    def tool(*, read_only: bool, title: str, idempotent: bool = False,
             destructive: bool = False) -> Callable[[Callable[..., Awaitable[Any]]], Any]:
        # The wire (camelCase) names: the field names of mcp 1.x and the aliases of mcp 2.x.
        hints = ToolAnnotations.model_validate({
            "title": title, "readOnlyHint": read_only, "idempotentHint": idempotent,
            "destructiveHint": destructive, "openWorldHint": False})

        def register(fn: Callable[..., Awaitable[Any]]) -> Any:
            server.add_tool(reported_as(ToolError, fn), title=title, annotations=hints,
                            structured_output=True)
            return fn

        return register

    return tool


def keep_text(server: Server[Any]) -> None:
    """Make every registered tool keep text arguments as sent (see `KeepText`)."""
    for registered in server._tool_manager.list_tools():
        registered.fn_metadata = KeepText.of(registered.fn_metadata)
