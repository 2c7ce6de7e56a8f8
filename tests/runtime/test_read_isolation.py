"""A read never sees a wave half-applied, although a commit is several statements (the flag, the
states in chunks of 5,000, the history, the receipt) and FalkorDB lets reads in between them."""

from __future__ import annotations

import threading
from collections.abc import Callable

from rippl_core import Rippl, State

DEPENDENTS = 6_000  # more than one chunk of state updates


def test_reads_see_whole_waves_or_none(open_rippl: Callable[..., Rippl]) -> None:
    writer = open_rippl()
    reader = open_rippl(graph=writer.graph)
    writer.load({"claims": [{"id": "C", "text": "shard 09 is healthy"}],
                 "decisions": [{"id": f"D{i}", "title": f"decision {i}", "premises": ["C"]}
                               for i in range(DEPENDENTS)]})
    done = threading.Event()

    def flip() -> None:
        try:
            for _ in range(3):
                writer.retract("C", reason="disk errors", by="monitor")
                writer.reinstate("C", reason="false alarm", by="oncall")
        finally:
            done.set()

    thread = threading.Thread(target=flip)
    thread.start()
    counts: set[int] = set()
    torn: list[str] = []
    while not done.is_set():
        statuses = reader.stats().statuses
        counts.add(statuses["Claim"].get("Retracted", 0) + statuses["Decision"].get("Premise Retracted", 0))
        claim = reader.get("C")
        if claim.retracted != (claim.state is State.OUT):
            torn.append(f"retracted={claim.retracted} state={claim.state}")
    thread.join()
    assert not torn, f"a read saw the claim's flag without its state: {torn[:3]}"
    assert counts <= {0, DEPENDENTS + 1}, f"a read saw a partial wave: {sorted(counts)}"
