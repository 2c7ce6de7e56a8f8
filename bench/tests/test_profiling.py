"""The profile-by-package helper the adapter benchmarks use to say where added time goes."""

from __future__ import annotations

import time

from rippl_bench.measure import after_work
from rippl_bench.profiling import WAITING, by_package, difference, package


def test_package_groups_functions_by_what_they_are() -> None:
    site = "/x/.venv/lib/python3.12/site-packages"
    assert package(f"{site}/langgraph/pregel/main.py", "invoke") == "langgraph"
    assert package(f"{site}/typing_extensions.py", "f") == "typing_extensions"
    assert package("/repo/rippl_core/client.py", "check") == "rippl_core"
    assert package("/repo/integrations/crewai/rippl_crewai/hooks.py", "before") == "rippl_crewai"
    assert package("~", "<method 'recv_into' of '_socket.socket' objects>") == "socket I/O"
    assert package("~", "<method 'acquire' of '_thread.lock' objects>") == WAITING
    assert package("~", "<built-in method builtins.isinstance>") == "builtins"
    assert package("/usr/lib/python3.12/asyncio/base_events.py", "_run_once") == \
        "stdlib (asyncio, threads)"


def test_by_package_attributes_each_steps_own_time() -> None:
    def python(n: int) -> None:
        sum(i * i for i in range(20_000))

    def sleeping(n: int) -> None:
        time.sleep(0.002)

    found = by_package({"python": python, "sleeping": sleeping}, 5)
    assert found["python"]["total"] > 0 and found["sleeping"].get(WAITING, 0) >= 1500
    assert found["sleeping"]["total"] < found["sleeping"][WAITING]  # waiting is not in the total
    added = difference(found["python"], found["sleeping"])
    assert added["total"] == round(found["python"]["total"] - found["sleeping"]["total"], 1)
    assert all(abs(v) >= 5 for k, v in added.items() if k != "total")


def test_after_work_times_the_call_alone() -> None:
    inside: list[float] = []

    def call() -> None:
        start = time.perf_counter()
        time.sleep(0.001)
        inside.append(time.perf_counter() - start)

    started = time.perf_counter()
    took = after_work(call, 5)
    total = time.perf_counter() - started
    assert took >= inside[0] and took <= total - 0.005  # the call, not the work before it
