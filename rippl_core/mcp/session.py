"""Each MCP client's captured run, and whose run it is.

A client's requests are recorded in a run: what it read through Rippl is an observation, each
`check_premises` of a tool call records and judges that call, and `record_execution` marks it run.

Whose run it is (the threat model is in docs/mcp.md):

- A client on a connection (stdio, or HTTP with an `Mcp-Session-Id`) has a run of its own, made
  on its first request and bound to that connection. Its id is minted (`mcp:<hex>`), never the
  HTTP session id (run ids are visible in the graph; a session id is a credential).
- A request names another run of its client's in `params._meta.rippl_run`, by the run's *token*:
  `rt1:<mac>:<run id>`, the run id signed with the server's key (HMAC-SHA256, 128 bits). The
  server gives a run's token only to the client whose run it is (`start_run`, and the `run` of
  each capture tool's answer), so it proves the run is the caller's. A run id alone names nothing
  (ids are visible in compensations and explanations); a value the server did not sign is refused
  with an error, never taken as a new run.
- With OAuth (HTTP with an issuer), a run belongs to the agent the bearer token names (its
  subject), who is the run's agent in the graph; its token is signed for that agent too, so
  another agent's bearer token cannot act in it, by its token or through its connection.
- A request on no connection (the 2026-07-28 revision's stateless HTTP, where each POST stands
  alone) has no run unless it names one: every tool that records (check_premises of a call,
  record_execution, cite_claims, and the reads that are observations) refuses it, saying how to
  get a token. No request ever gets a throwaway run.

What a client was told (the calls whose veto it received, whose named premises leave the context
of its later calls) is kept per client: per connection, or, for stateless requests, per run (only
the token's holder sends them). Call ids the server mints are random (`call-<32 hex>`).

The server keeps at most `max_runs` runs in memory, the least recently used leaving first. The
graph keeps a run's record, and the tools' schemas its clients registered, so a run that left
continues when its client comes back: only what its client was told is lost, and its later calls
then rest on everything the run observed, which can veto more, never less (fail closed).
"""

# No `from __future__ import annotations` here: the MCP server reads the signatures of tools
# that take what this module defines.

import hashlib
import hmac
import os
import secrets
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from rippl_core._runtime.validation import canonical_args
from rippl_core.capture.arguments import received
from rippl_core.capture.handle import AsyncRun
from rippl_core.capture.memory import Writing
from rippl_core.client import AsyncRippl
from rippl_core.errors import InvalidInputError
from rippl_core.mcp.common import caller, client_identity
from rippl_core.mcp.options import DEFAULT_MAX_RUNS
from rippl_core.mcp.sdk import Context, connection_of, request_meta
from rippl_core.models import RepeatScope, ToolCall, Verdict

RUN_META = "rippl_run"
TOKEN_PREFIX = "rt1:"
MAC_CHARS = 32  # hex: 128 bits
KEY_ENV = "RIPPL_MCP_RUN_KEY"
MIN_KEY_LENGTH = 32
MAX_TOLD = 256  # per client and run: the oldest leave first (their premises come back: fail closed)
MAX_CALLS = 256  # (tool, args) -> last call id, for record_execution without a call_id
MAX_LABEL = 48

HOW_TO_NAME = (f"send the `run` token that start_run (or check_premises) returned as "
               f"params._meta.{RUN_META}")
NO_RUN = (f"this request names no run, and it came on no connection (a stateless 2026-07-28 HTTP "
          f"request): nothing it reads or checks could be recorded, so it is refused. Call start_run "
          f"once, then {HOW_TO_NAME} in every request. Nothing was recorded.")
NOT_A_TOKEN = (f"_meta.{RUN_META} is not a run token: a run is named only by the token its client "
               f"was given, never by its id or a name of your choosing. To begin a run call "
               f"start_run; to continue one, {HOW_TO_NAME}. Nothing was recorded.")
NOT_SIGNED = (f"_meta.{RUN_META} is not a token this server issued (its signature does not match; a "
              f"server restarted without {KEY_ENV} issues new ones). Call start_run to begin a new "
              f"run, then read again (or cite_claims) what your next calls rely on: the new run has "
              f"observed nothing yet. Nothing was recorded.")
NOT_YOURS = ("this request's token names {agent}, and the run {run} is another agent's: a run is "
             "acted in only with the token of the agent it belongs to. Call start_run to begin a "
             "run of your own. Nothing was recorded.")


def not_issued(agent: str | None) -> str:
    """Why a run token does not verify (for this agent, with OAuth)."""
    if agent is None:
        return NOT_SIGNED
    return (f"_meta.{RUN_META} is not a run token this server issued to {agent}: a run token "
            f"works only with the bearer token of the agent whose run it is (another agent's, "
            f"or one from before a restart without {KEY_ENV}, is refused). Call start_run to "
            f"begin a run of your own. Nothing was recorded.")


SCOPED = "mcp-scope:"  # a run in a scope: its id is mcp-scope:<scope>/mcp:<label>:<hex>
SCOPE_CHARS = 64


def _scope_label(scope: str) -> str:
    label = scope.strip()
    if not label or len(label) > SCOPE_CHARS or any(
            not ch.isprintable() or ch.isspace() or ch in "/:" for ch in label):
        raise InvalidInputError(f"a scope is a label of 1 to {SCOPE_CHARS} printable characters, "
                                f"without spaces, '/' or ':' (e.g. billing-team), got {scope!r}")
    return label


def scope_of(run_id: str) -> str | None:
    """The scope a run was begun in (kept in its id, so a run that left memory keeps it)."""
    if not run_id.startswith(SCOPED) or "/" not in run_id:
        return None
    return run_id.split("/", 1)[0]


def run_key(environ: dict[str, str] | None = None) -> bytes:
    """The key that signs run tokens: `RIPPL_MCP_RUN_KEY` when set (at least 32 characters; give
    every server that should accept the same tokens the same key), else random for this process
    (tokens then die with it)."""
    value = (os.environ if environ is None else environ).get(KEY_ENV)
    if value is None:
        return secrets.token_bytes(32)
    if len(value.strip()) < MIN_KEY_LENGTH:
        raise InvalidInputError(f"{KEY_ENV} is {len(value.strip())} characters; a run key needs at "
                                f"least {MIN_KEY_LENGTH} (e.g. the output of `openssl rand -hex 32`)")
    return value.strip().encode()


class Recent[K, V]:
    """A mapping that keeps at most `limit` entries, dropping the least recently used."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise InvalidInputError(f"the limit must be at least 1, got {limit}")
        self.limit = limit
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.limit:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items


class _Stateless:
    """The told key of a run's stateless requests (whoever holds the token)."""


STATELESS = _Stateless()


def _call_key(tool: str, args: dict[str, Any] | None) -> tuple[str, str]:
    return tool, canonical_args(args or {}) or "{}"


@dataclass
class RunState:
    """A run the server holds in memory: its handle, its token, the last call id of each (tool,
    args) checked in it, what each of its clients was told, and the input schemas of the tools
    its clients registered (their calls are compared on the arguments the tool receives; the
    graph keeps them with the run)."""

    run: AsyncRun
    token: str
    agent: str | None = None  # with OAuth: the subject of the tokens that may act in it
    calls: Recent[tuple[str, str], str] = field(default_factory=lambda: Recent(MAX_CALLS))
    told: weakref.WeakKeyDictionary[object, list[str]] = field(
        default_factory=weakref.WeakKeyDictionary)
    schemas: dict[str, dict[str, Any]] | None = None  # None: not read from the graph yet


@dataclass(frozen=True)
class ClientRun:
    """The run a request acts in, and what the client making it has been told there."""

    state: RunState
    told: list[str]

    @property
    def run(self) -> AsyncRun:
        return self.state.run

    @property
    def token(self) -> str:
        return self.state.token

    @staticmethod
    def next_call_id() -> str:
        """A fresh call id nobody can guess (128 random bits)."""
        return f"call-{secrets.token_hex(16)}"

    def remember(self, tool: str, args: dict[str, Any] | None, call_id: str) -> None:
        self.state.calls.put(_call_key(tool, args), call_id)

    def last_call(self, tool: str, args: dict[str, Any] | None) -> str | None:
        return self.state.calls.get(_call_key(tool, args))

    def shown_veto(self, call_id: str) -> None:
        """The client received the veto of this call: its model knows what the veto named."""
        if call_id not in self.told:
            self.told.append(call_id)
            del self.told[:-MAX_TOLD]

    async def schemas(self) -> dict[str, dict[str, Any]]:
        """The tools' schemas registered with the run: kept in the graph with it, read once per
        stay in the server's memory (so a run that left it, or a server that restarted, compares
        its calls as before)."""
        if self.state.schemas is None:
            found = await self.run.tool_schemas()
            if self.state.schemas is None:  # a concurrent request may have read (and added) first
                self.state.schemas = found
        return self.state.schemas

    async def register(self, schemas: dict[str, dict[str, Any]]) -> None:
        """Register tools' input schemas with the run (in the graph, then here)."""
        await self.run.register_tools(schemas)
        (await self.schemas()).update(schemas)

    async def received(self, tool: str, args: dict[str, Any] | None) -> dict[str, Any]:
        """The arguments `tool` receives for `args`, under the schema registered for it (as sent
        when none was)."""
        return received(args or {}, (await self.schemas()).get(tool))

    async def decide(self, call: ToolCall, repeat_scope: RepeatScope) -> Verdict:
        """Record the call as a turn of its own (resting on everything the run observed, less
        what this client was told) and judge it: a call repeating one vetoed in the run (within
        `repeat_scope`), or one handed over to it after a veto, stays vetoed."""
        assert call.id is not None
        [verdict] = await self.run.decide(call.id, [call], context=None, told=list(self.told),
                                          repeat_scope=repeat_scope)
        return verdict

    def writing(self) -> Writing:
        """This run writing a memory (it rests on everything the run carried, less what this
        client was told: `capture.memory`)."""
        return Writing(self.run.ref, told=tuple(self.told))


def _agent(ctx: Context) -> str | None:
    """The agent a request's bearer token names (None without OAuth)."""
    principal = caller(ctx)
    return principal.subject if principal is not None else None


class Sessions:
    """The runs of one server's clients (see the module docstring)."""

    def __init__(self, rippl: AsyncRippl, *, max_runs: int = DEFAULT_MAX_RUNS,
                 key: bytes | None = None) -> None:
        if max_runs < 1:
            raise InvalidInputError(f"max_runs must be at least 1, got {max_runs}")
        self.rippl = rippl
        self._key = key if key is not None else run_key()
        self._runs: Recent[str, RunState] = Recent(max_runs)
        # each connection's own run, and the agent it belongs to (with OAuth)
        self._default: weakref.WeakKeyDictionary[object, tuple[str, str | None]] = \
            weakref.WeakKeyDictionary()

    def __len__(self) -> int:
        """How many runs are held in memory."""
        return len(self._runs)

    def of(self, ctx: Context) -> ClientRun:
        """The run of the request: the one its `_meta.rippl_run` token names, else its
        connection's own; refused for a request on no connection that names none, and (with
        OAuth) for a run of another agent than the request's token names."""
        client = connection_of(ctx)
        agent = _agent(ctx)
        named = request_meta(ctx, RUN_META)
        if named is not None:
            run_id = self.verified(named, agent)
        elif client is None:
            raise InvalidInputError(NO_RUN)
        else:
            found = self._default.get(client)
            if found is None:
                found = self._default[client] = (self._mint(None), agent)
            run_id, owner = found
            if owner != agent:  # a session taken over by another agent's token
                raise InvalidInputError(NOT_YOURS.format(agent=agent, run=run_id))
        return self._client_run(run_id, client, ctx, agent)

    def writer(self, ctx: Context) -> Writing | None:
        """The request's run, writing (what it writes rests on what the run carried), or None for
        a request on no connection that names no run (it writes outside any run, with the
        sources it names)."""
        if connection_of(ctx) is None and request_meta(ctx, RUN_META) is None:
            return None
        return self.of(ctx).writing()

    def start(self, ctx: Context, name: str | None = None, scope: str | None = None) -> ClientRun:
        """A new run for the requesting client (`name` only labels its id), in `scope` (runs of
        one scope hand messages to one another: `hand_over`, `receive`) or alone."""
        return self._client_run(self._mint(name, scope), connection_of(ctx), ctx, _agent(ctx))

    def token(self, run_id: str, agent: str | None = None) -> str:
        """The run's token: its id signed for the agent whose run it is (None: without OAuth)."""
        return f"{TOKEN_PREFIX}{self._mac(run_id, agent)}:{run_id}"

    def verified(self, value: object, agent: str | None = None) -> str:
        """The run id a token names, if this server signed it (for `agent`, with OAuth); else an
        InvalidInputError."""
        if not isinstance(value, str):
            raise InvalidInputError(f"_meta.{RUN_META} must be a string (a run token), got "
                                    f"{type(value).__name__}. {NOT_A_TOKEN}")
        head = len(TOKEN_PREFIX) + MAC_CHARS
        if not value.startswith(TOKEN_PREFIX) or len(value) <= head + 1 or value[head] != ":":
            raise InvalidInputError(NOT_A_TOKEN)
        mac, run_id = value[len(TOKEN_PREFIX):head], value[head + 1:]
        if not hmac.compare_digest(mac, self._mac(run_id, agent)):
            raise InvalidInputError(not_issued(agent))
        return run_id

    def _mac(self, run_id: str, agent: str | None) -> str:
        message = b"rippl-mcp-run\x00" + run_id.encode("utf-8", "replace")
        if agent is not None:  # bound to the agent: another agent's token cannot use it
            message += b"\x00agent\x00" + agent.encode("utf-8", "replace")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()[:MAC_CHARS]

    @staticmethod
    def _mint(name: str | None, scope: str | None = None) -> str:
        label = "".join(ch for ch in name or "" if ch.isprintable()).strip()[:MAX_LABEL].strip()
        suffix = secrets.token_hex(8)
        found = f"mcp:{label}:{suffix}" if label else f"mcp:{suffix}"
        return found if scope is None else f"{SCOPED}{_scope_label(scope)}/{found}"

    def _client_run(self, run_id: str, client: object | None, ctx: Context,
                    agent: str | None) -> ClientRun:
        state = self._runs.get(run_id)
        if state is not None and state.agent != agent:  # a session taken over by another token
            raise InvalidInputError(NOT_YOURS.format(agent=agent, run=run_id))
        if state is None:  # new, or back after leaving memory: the graph has its record
            state = RunState(self.rippl.run(run_id, agent=client_identity(ctx), framework="mcp",
                                            scope=scope_of(run_id)), self.token(run_id, agent), agent)
            self._runs.put(run_id, state)
        told = state.told.setdefault(STATELESS if client is None else client, [])
        return ClientRun(state, told)
