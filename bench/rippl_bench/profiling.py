"""Where a code path spends its time, by package: a cProfile of many runs, each function's own
time (tottime) summed per package and divided by the runs. Two paths profiled alike (a guarded run
and its unguarded twin) differ by what the guard adds, package by package: the database round trip
(socket I/O), Rippl's Python, the framework's hook machinery, threads.

cProfile slows Python code more than it slows waiting on a socket, so the figures are for
comparison within one profile, not absolute latencies. A thread waiting for another counts apart
(`waiting`), outside the total."""

from __future__ import annotations

import cProfile
import pstats
import random
from collections import defaultdict
from collections.abc import Callable
from typing import Any

OWN = ("rippl_core", "rippl_langgraph", "rippl_autogen", "rippl_crewai")
IO = ("recv", "send", "select", "poll", "epoll", "connect", "sendmsg")
WAITS = ("acquire", "wait", "sleep")
WAITING = "waiting (locks, threads)"  # a thread waiting on another: not in the total (the other
# thread's own time is, since Python 3.12 profiles every thread)


def package(filename: str, function: str) -> str:
    """The group a profiled function's own time counts in."""
    if filename == "~":  # a builtin: by what it does
        if any(word in function for word in IO):
            return "socket I/O"
        if any(word in function for word in WAITS):
            return WAITING
        return "builtins"
    for own in OWN:
        if f"/{own}/" in filename:
            return own
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if any(part in filename for part in ("/asyncio/", "/concurrent/", "threading.py", "queue.py",
                                         "selectors.py")):  # an event loop waiting: its select
        return "stdlib (asyncio, threads)"
    return "stdlib (other)" if "/lib/python3" in filename else "other"


def by_package(steps: dict[str, Callable[[int], Any]], runs: int) -> dict[str, dict[str, float]]:
    """Microseconds of own time per run of each `steps[name](n)`, by package, largest first (and
    `total`). The steps are profiled in turns (one run of each, then the next round), each into
    its own profile, so that what changes over time (load, caches, the graph growing) hits every
    step alike (in a new random order each round)."""
    profilers = {name: cProfile.Profile() for name in steps}
    order = random.Random(5)
    for n in range(runs):
        for name in order.sample(list(steps), len(steps)):
            profilers[name].enable()
            steps[name](n)
            profilers[name].disable()
    return {name: _per_package(profiler, runs) for name, profiler in profilers.items()}


def _per_package(profiler: cProfile.Profile, runs: int) -> dict[str, float]:
    spent: dict[str, float] = defaultdict(float)
    for (filename, _line, function), row in pstats.Stats(profiler).stats.items():  # type: ignore[attr-defined]
        spent[package(filename, function)] += row[2]
    per_run = {name: round(seconds / runs * 1e6, 1)
               for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1])}
    per_run["total"] = round(sum(v for k, v in spent.items() if k != WAITING) / runs * 1e6, 1)
    return per_run


def difference(path: dict[str, float], base: dict[str, float], *, at_least: float = 5.0
               ) -> dict[str, float]:
    """What `path` spends beyond `base`, per package (µs per run; changes under `at_least` left
    out, the total kept)."""
    names = [n for n in {*path, *base} if n != "total"]
    found = {n: round(path.get(n, 0.0) - base.get(n, 0.0), 1) for n in names}
    kept = {n: v for n, v in sorted(found.items(), key=lambda kv: -abs(kv[1])) if abs(v) >= at_least}
    kept["total"] = round(path.get("total", 0.0) - base.get("total", 0.0), 1)
    return kept
