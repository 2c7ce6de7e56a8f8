"""Timing helpers: run a call many times, keep every sample, summarise as medians and percentiles."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any


def percentile(sorted_samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) of already sorted samples, nearest-rank."""
    if not sorted_samples:
        return math.nan
    rank = max(1, int(-(-q * len(sorted_samples) // 100)))  # ceil(q% of n), exact for an int q
    return sorted_samples[min(rank, len(sorted_samples)) - 1]


def summary(samples_s: Iterable[float]) -> dict[str, Any]:
    """p50/p90/p99/mean/min/max in milliseconds, and the sample count."""
    ordered = sorted(samples_s)
    if not ordered:
        return {"n": 0}
    ms = [s * 1000 for s in ordered]
    return {"n": len(ms), "p50_ms": percentile(ms, 50), "p90_ms": percentile(ms, 90),
            "p99_ms": percentile(ms, 99), "mean_ms": sum(ms) / len(ms), "min_ms": ms[0],
            "max_ms": ms[-1]}


def summary_ms(samples_s: Iterable[float], quantiles: Sequence[int] = (50, 99), *,
               mean: bool = True) -> dict[str, Any]:
    """The sample count, the given percentiles (`p50_ms`, ...) and the mean, in milliseconds
    rounded to 0.1 µs: the compact summary the standalone scripts record."""
    ms = sorted(s * 1000 for s in samples_s)
    if not ms:
        return {"n": 0}
    found: dict[str, Any] = {"n": len(ms)}
    found.update({f"p{q}_ms": round(percentile(ms, q), 4) for q in quantiles})
    if mean:
        found["mean_ms"] = round(statistics.fmean(ms), 4)
    return found


def clock[T](fn: Callable[[], T]) -> tuple[float, T]:
    """(seconds, result) of one call."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def sample[T, R](fn: Callable[[T], R], items: Sequence[T], *, warmup: int = 20,
                 rounds: int = 1) -> tuple[list[float], list[R]]:
    """Time `fn(item)` for every item (after `warmup` untimed calls); returns the samples in
    seconds and the results of the last round."""
    for item in list(items)[:warmup]:
        fn(item)
    samples: list[float] = []
    results: list[R] = []
    for _ in range(rounds):
        results = []
        for item in items:
            start = time.perf_counter()
            results.append(fn(item))
            samples.append(time.perf_counter() - start)
    return samples, results


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def after_work[T](fn: Callable[[], T], work_ms: float) -> float:
    """Seconds `fn()` takes right after `work_ms` of busy Python work in this thread: a call as
    an agent framework makes it, between its own steps, rather than back to back. A round trip
    to a server that has gone idle meanwhile costs more (its thread sleeps, caches go cold)."""
    end = time.perf_counter() + work_ms / 1000
    spins = 0
    while time.perf_counter() < end:
        spins += 1
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
