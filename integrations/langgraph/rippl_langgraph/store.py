"""`RipplStore`: LangGraph's long-term memory (`BaseStore`) over Rippl's bitemporal belief graph.

A namespace starts with the agent id; the rest of it and the key name the topic:

    store.put(("ops-agent", "shards"), "09-health", {"text": "Shard 09 is healthy", "sources": ["SRC-001"]})
    store.put(("ops-agent", "shards"), "09-health", {"claim": "CLM-001"})   # an existing claim
    store.get(("ops-agent", "shards"), "09-health")      # the belief held now, about topic shards/09-health
    store.search(("ops-agent",), filter={"as_of": "2026-10-08T09:00:00Z"})  # what it believed then
    store.delete(("ops-agent", "shards"), "09-health")   # the agent stops believing it (history kept)

A put adopts a belief (closing the previous interval on that topic, never deleting it); a delete
closes it. Reads return the beliefs held now, never one whose claim has been retracted; a search
whose filter names `as_of` (valid time) and/or `known_at` (transaction time) reads the past
instead: each item's `status` (and `rests_on_retracted`, `retracted_evidence`) is the claim's
status then, as Rippl knew it at `known_at`, and `status_now` its status now.
`beliefs_at_checkpoint(config)` reads the beliefs at the time a LangGraph checkpoint was taken
(with their status then), so a step of `graph.get_state_history()` and the belief memory agree on
what the agent believed then.

Inside a graph run with a thread, a read (`get`, and `search` of current beliefs) is an observation
of the run (see `rippl_langgraph.capture`): the claims it returned are in the run's context from
then on, so the turns after it rest on them and a retraction of one vetoes their calls. A read
that cannot be recorded fails (the run never sees what is not on record); outside a graph, or in a
graph run without a thread, nothing is recorded. `premises_at_checkpoint(config)` shows what the
turn of a checkpoint (its latest AI message with tool calls) rested on, as captured.

Every operation is written once as a generator of handle calls, run by a sync or an async driver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, overload

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from rippl_core import Belief, InvalidInputError, Node, NotFoundError, Rippl, RunTrace, State
from rippl_core.adapters import (
    Call,
    Calls,
    RunRef,
    Tick,
    Writing,
    arun_calls,
    check_id,
    current_writing,
    now_ms,
    rank,
    require_handle,
    run_calls,
    sync_handle,
    writing,
)
from rippl_langgraph.capture import current_config, run_id, thread_of, turn_id
from rippl_langgraph.checkpoint import AsyncFalkorDBSaver, FalkorDBSaver
from rippl_langgraph.checkpoint.saver import connection_options
from rippl_langgraph.guard import Memory

SEPARATOR = "/"  # joins the namespace after the agent, and the key, into a topic id
TIME_KEYS = ("as_of", "known_at")
WRITABLE = frozenset({"claim", "text", "sources", "derived_from", "evidence", "note", "valid_from"})
READ_ONLY = frozenset({"status", "status_now", "valid_to", "rests_on_retracted", "retracted_evidence",
                       "recorded_at", "topic", "agent"})




# ----------------------------------------------------------------------------- namespaces


def subject(namespace: Sequence[str], key: str) -> tuple[str, str]:
    """(agent, topic) of a namespace and key."""
    if not namespace:
        raise InvalidInputError("a RipplStore namespace starts with the agent id, e.g. ('ops-agent',) "
                                "or ('ops-agent', 'shards')")
    for label in (*namespace[1:], key):
        if not isinstance(label, str) or SEPARATOR in label:
            raise InvalidInputError(f"namespace labels and keys are strings without {SEPARATOR!r} "
                                    f"(it joins them into the topic id); got {label!r}")
    agent = check_id(namespace[0], what="agent (the first namespace label)")
    topic = check_id(SEPARATOR.join((*namespace[1:], key)), what="topic (namespace and key)")
    return agent, topic


def place(belief: Belief) -> tuple[tuple[str, ...], str]:
    """(namespace, key) of a belief: the inverse of `subject`."""
    *path, key = belief.topic.split(SEPARATOR)
    return (belief.agent, *path), key


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def value_of(belief: Belief) -> dict[str, Any]:
    """What an Item holds for a belief (JSON-friendly): its status at the time read (now, or
    as of), and its status now."""
    return {"claim": belief.claim, "text": belief.text, "status": belief.claim_status,
            "status_now": belief.claim_status_now or belief.claim_status,
            "valid_from": _iso(belief.valid_from), "valid_to": _iso(belief.valid_to),
            "evidence": list(belief.evidence), "note": belief.note,
            "rests_on_retracted": belief.rests_on_retracted,
            "retracted_evidence": list(belief.retracted_evidence)}


def current(belief: Belief) -> bool:
    """A belief served as current: its claim is not retracted."""
    return belief.claim_state is not State.OUT


@overload
def item_of(belief: Belief, score: float | None = None, *, search: Literal[True]) -> SearchItem: ...
@overload
def item_of(belief: Belief, score: float | None = None, *, search: Literal[False] = False) -> Item: ...
def item_of(belief: Belief, score: float | None = None, *, search: bool = False) -> Item:
    namespace, key = place(belief)
    created = belief.first_recorded_at or belief.recorded_at
    if search:
        return SearchItem(namespace, key, value_of(belief), created, belief.recorded_at, score)
    return Item(value=value_of(belief), key=key, namespace=namespace, created_at=created,
                updated_at=belief.recorded_at)


# ------------------------------------------------------------------------------ filtering


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping) and any(str(k).startswith("$") for k in wanted):
        return all(_operator(actual, op, operand) for op, operand in wanted.items())
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (isinstance(actual, list | tuple) and len(actual) == len(wanted)
                and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True)))
    return bool(actual == wanted)


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    if actual is None:
        return False
    try:
        if op == "$gt":
            return bool(actual > operand)
        if op == "$gte":
            return bool(actual >= operand)
        if op == "$lt":
            return bool(actual < operand)
        if op == "$lte":
            return bool(actual <= operand)
    except TypeError:
        return False
    raise InvalidInputError(f"unsupported filter operator {op!r}; use $eq $ne $gt $gte $lt $lte")


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (zip(namespace, path, strict=False) if condition.match_type == "prefix"
             else zip(reversed(namespace), reversed(path), strict=False))
    return all(p == "*" or n == p for n, p in pairs)


# ------------------------------------------------------------------------------ operations


def get_op(op: GetOp) -> Calls[Item | None]:
    agent, topic = subject(op.namespace, op.key)
    belief: Belief | None = yield Call("ask", (agent, topic))
    if belief is None or not current(belief):
        return None
    return item_of(belief)


def put_op(op: PutOp) -> Calls[None]:
    agent, topic = subject(op.namespace, op.key)
    started = now_ms()
    if op.value is None:
        yield Tick(started)
        yield Call("retract_belief", (agent, topic), {"reason": "deleted through the LangGraph store"})
        return None
    value = op.value
    if not isinstance(value, Mapping):
        raise InvalidInputError("a RipplStore value is a dict naming the belief: {'text': ...} or "
                                "{'claim': 'CLM-001'}")
    unknown = sorted(set(value) - WRITABLE - READ_ONLY)
    if unknown:
        raise InvalidInputError(f"RipplStore stores beliefs; it does not keep {', '.join(unknown)}. "
                                f"Give {', '.join(sorted(WRITABLE))}")
    sources = list(value.get("sources") or ())
    evidence = list(value.get("evidence") or sources)
    claim = value.get("claim")
    if claim is None:
        text = value.get("text")
        if not isinstance(text, str):
            raise InvalidInputError("a RipplStore value needs 'claim' (an existing claim id) or "
                                    "'text' (the statement believed)")
        node = yield Call("add_claim", (None, text),
                          {"sources": sources, "derived_from": list(value.get("derived_from") or ())})
        claim = node.id
    yield Tick(started)
    yield Call("believe", (agent, claim), {"topic": topic, "evidence": evidence,
                                           "note": value.get("note"), "valid_from": value.get("valid_from")})
    return None


def _times(filter: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(time arguments, value filter) of a search filter."""
    filter = dict(filter or {})
    times = {k: filter.pop(k) for k in TIME_KEYS if k in filter}
    return times, filter


def search_op(op: SearchOp) -> Calls[list[SearchItem]]:
    times, wanted = _times(op.filter)
    prefix = tuple(op.namespace_prefix)
    agents: list[str] = [prefix[0]] if prefix else (yield Call("agents"))
    found: list[Belief] = []
    for agent in agents:
        check_id(agent, what="agent (the first namespace label)")
        held: list[Belief] = yield Call("beliefs", (agent,), dict(times))
        found.extend(b for b in held if place(b)[0][:len(prefix)] == prefix)
    if not times:
        found = [b for b in found if current(b)]
    found = [b for b in found if all(_compare(value_of(b).get(k), v) for k, v in wanted.items())]
    found = sorted(found, key=place)
    scored = rank(op.query, found) if op.query else [(b, None) for b in found]
    window = scored[op.offset:op.offset + op.limit]
    return [item_of(b, s, search=True) for b, s in window]


def list_namespaces_op(op: ListNamespacesOp) -> Calls[list[tuple[str, ...]]]:
    agents: list[str] = yield Call("agents")
    namespaces: set[tuple[str, ...]] = set()
    for agent in agents:
        held: list[Belief] = yield Call("beliefs", (agent,))
        namespaces |= {place(b)[0] for b in held if current(b)}
    chosen = [ns for ns in namespaces if all(_matches(c, ns) for c in op.match_conditions or ())]
    if op.max_depth is not None:
        chosen = list({ns[:op.max_depth] for ns in chosen})
    return sorted(chosen)[op.offset:op.offset + op.limit]


def operation(op: Op) -> Calls[Result]:
    if isinstance(op, GetOp):
        return get_op(op)
    if isinstance(op, PutOp):
        return put_op(op)
    if isinstance(op, SearchOp):
        return search_op(op)
    if isinstance(op, ListNamespacesOp):
        return list_namespaces_op(op)
    raise InvalidInputError(f"RipplStore does not know the operation {type(op).__name__}")



class RipplStore(BaseStore):
    """LangGraph long-term memory over Rippl beliefs (see the module docstring).

    Args:
        memory: a `Rippl` handle (sync and async use) or an `AsyncRippl` (async use only).
        checkpointer: the graph's checkpointer, for `beliefs_at_checkpoint` (a FalkorDBSaver reads
            the time it linked to each checkpoint; any other saver, the checkpoint's timestamp).
    """

    memory: Memory

    supports_ttl = False

    def __init__(self, memory: Memory, *, checkpointer: BaseCheckpointSaver[Any] | None = None) -> None:
        self.memory = require_handle(memory, who="RipplStore")
        self.checkpointer = checkpointer

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, *, graph: str = "rippl",
                         checkpointer: BaseCheckpointSaver[Any] | None = None) -> Iterator[RipplStore]:
        """A store on its own `Rippl` handle (sync and async use), closed on exit, as with
        langgraph's Postgres store. `conn_string` is a FalkorDB URL, a database file path, or
        ":memory:":

            with RipplStore.from_conn_string("falkordb://localhost:6379") as store:
                store.setup()
                app = builder.compile(store=store)
        """
        with connection_options(conn_string) as options, Rippl.open(
                options.get("path"), url=options.get("url"), graph=graph) as memory:
            yield cls(memory, checkpointer=checkpointer)

    def setup(self) -> None:
        """Nothing to create (the belief memory's indexes come with the graph, created when it is
        opened); kept so that code written for LangGraph's stores, which calls `setup()` once,
        runs unchanged."""

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        memory = self._sync_memory()
        config = current_config()
        results = []
        for op in ops:
            with writing(self._writer(config, op)):
                result = run_calls(memory, operation(op))
            seen = observation(config, op, result)
            if seen is not None:
                run_calls(memory.run(seen[0], agent=seen[1], framework="langgraph"), observe(seen[2]))
            results.append(result)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        config = current_config()
        results = []
        for op in ops:
            with writing(self._writer(config, op)):
                result = await arun_calls(self.memory, operation(op))
            seen = observation(config, op, result)
            if seen is not None:
                await arun_calls(self.memory.run(seen[0], agent=seen[1], framework="langgraph"),
                                 observe(seen[2]))
            results.append(result)
        return results

    def _writer(self, config: RunnableConfig | None, op: Op) -> Writing | None:
        """Who writes a put: the tool call executing it (set by the capture wrapper), else, inside
        a graph run with a thread, the run itself (a node writing: it rests on everything the run
        carried); None outside a graph."""
        found = current_writing(self.memory.graph)
        if found is not None or not isinstance(op, PutOp) or op.value is None:
            return found
        if config is None or not (config.get("configurable") or {}).get("thread_id"):
            return None
        return Writing(RunRef(run_id(config), framework="langgraph", scope=thread_of(config)),
                       graph=self.memory.graph)

    def _sync_memory(self) -> Rippl:
        return sync_handle(self.memory, hint="this RipplStore has an AsyncRippl handle: use the "
                                             "async methods (aget/asearch/aput, ainvoke) or give "
                                             "it a Rippl handle")

    # -- time travel with the checkpoints ---------------------------------------------------
    def checkpoint_time(self, config: RunnableConfig) -> datetime:
        """When the checkpoint named by `config` was taken (the latest of the thread if it names
        none)."""
        saver = self._saver()
        if isinstance(saver, FalkorDBSaver | AsyncFalkorDBSaver):
            taken = saver.checkpoint_time(config)
        else:
            found = saver.get_tuple(config)
            taken = datetime.fromisoformat(found.checkpoint["ts"]) if found else None
        return _required(taken, config)

    async def acheckpoint_time(self, config: RunnableConfig) -> datetime:
        saver = self._saver()
        if isinstance(saver, AsyncFalkorDBSaver):
            taken = await saver.acheckpoint_time(config)
        elif isinstance(saver, FalkorDBSaver):
            taken = await asyncio.to_thread(saver.checkpoint_time, config)
        else:
            found = await saver.aget_tuple(config)
            taken = datetime.fromisoformat(found.checkpoint["ts"]) if found else None
        return _required(taken, config)

    def beliefs_at_checkpoint(self, config: RunnableConfig, *, agent: str | None = None) -> list[Belief]:
        """What the agent (every agent if None) believed when this checkpoint was taken, as known
        then: time travel in LangGraph and in belief memory agree."""
        taken = self.checkpoint_time(config)
        return run_calls(self._sync_memory(), _held_at(taken, agent))

    async def abeliefs_at_checkpoint(self, config: RunnableConfig, *,
                                     agent: str | None = None) -> list[Belief]:
        taken = await self.acheckpoint_time(config)
        return await arun_calls(self.memory, _held_at(taken, agent))

    # -- what each step rested on -------------------------------------------------------------
    def premises_at_checkpoint(self, config: RunnableConfig, *,
                               messages_key: str = "messages") -> StepPremises | None:
        """What the turn of this checkpoint (its latest AI message with tool calls) rested on, as
        captured: the premises of its decision, with their status now. None when the checkpoint
        has no such turn, or it was not captured. Calls are mapped as by a guard without a
        resolver."""
        found = self._saver().get_tuple(config)
        memory = self._sync_memory()
        return run_calls(memory, _premises(found, messages_key, memory))

    async def apremises_at_checkpoint(self, config: RunnableConfig, *,
                                      messages_key: str = "messages") -> StepPremises | None:
        saver = self._saver()
        if isinstance(saver, FalkorDBSaver) and not isinstance(saver, AsyncFalkorDBSaver):
            found = await asyncio.to_thread(saver.get_tuple, config)
        else:
            found = await saver.aget_tuple(config)
        return await arun_calls(self.memory, _premises(found, messages_key, self.memory))

    def _saver(self) -> BaseCheckpointSaver[Any]:
        if self.checkpointer is None:
            raise InvalidInputError("RipplStore(memory, checkpointer=saver) needs the graph's "
                                    "checkpointer to read checkpoint times")
        return self.checkpointer


@dataclass(frozen=True)
class StepPremises:
    """A checkpoint's turn and what it rested on, as captured."""

    run: str
    turn: str
    decision: str
    calls: list[dict[str, Any]]
    premises: list[Node]  # the run's root claim and what was in the model's context, with status

    def claims(self) -> dict[str, str]:
        """{claim id: status} of the premises."""
        return {node.id: node.status for node in self.premises}


def observation(config: RunnableConfig | None, op: Op,
                result: Result) -> tuple[str, str | None, list[str]] | None:
    """(run, agent, claims) a read made inside a graph run observed, or None."""
    if config is None or not (config.get("configurable") or {}).get("thread_id"):
        return None
    agent: str | None
    if isinstance(op, GetOp) and isinstance(result, Item):
        items, agent = [result], op.namespace[0]
    elif isinstance(op, SearchOp) and not _times(op.filter)[0] and isinstance(result, list):
        items, agent = [i for i in result if isinstance(i, Item)], op.namespace_prefix[0] \
            if op.namespace_prefix else None
    else:
        return None
    claims = list(dict.fromkeys(i.value["claim"] for i in items if i.value.get("claim")))
    if not claims:
        return None
    return run_id(config), agent, claims


def observe(claims: list[str]) -> Calls[list[str]]:
    recorded: list[str] = yield Call("observe", (claims,))
    return recorded


def _premises(found: Any, key: str, memory: Memory) -> Calls[StepPremises | None]:
    if found is None:
        return None
    messages = found.checkpoint.get("channel_values", {}).get(key) or []
    ai = next((m for m in reversed(messages) if isinstance(m, AIMessage) and m.tool_calls), None)
    if ai is None:
        return None
    run = run_id(found.config, node=False)
    calls = [dict(c) for c in ai.tool_calls]
    try:  # the turn as capture recorded it (its calls' arguments as the tools received them)
        trace: RunTrace = yield Call("run_trace", (run,))
    except NotFoundError:
        return None  # not captured (capture was off)
    turn = next((t for t in trace.turns if t.turn == turn_id(ai)), None)
    if turn is None:
        return None  # the turn was never decided
    premises: list[Node] = []
    for rested in turn.rested_on:
        premises.append((yield Call("get", (rested.id,))))
    return StepPremises(run, turn_id(ai), turn.decision, calls, premises)


def _required(taken: datetime | None, config: RunnableConfig) -> datetime:
    if taken is None:
        conf = config.get("configurable", {})
        raise InvalidInputError(f"no checkpoint {conf.get('checkpoint_id') or '(latest)'} in thread "
                                f"{conf.get('thread_id')!r}")
    return taken


def _held_at(taken: datetime, agent: str | None) -> Calls[list[Belief]]:
    agents: list[str] = [agent] if agent is not None else (yield Call("agents"))
    held: list[Belief] = []
    for name in agents:
        held += (yield Call("beliefs", (name,), {"as_of": taken, "known_at": taken}))
    return sorted(held, key=lambda b: (b.agent, b.topic))
