"""Concurrent writers: threads (sharing a handle and with their own), an asyncio handle and another
process race retract / reinstate / add / justify / propose / approve / reject on one graph. Every
commit is all-or-nothing: a transactional reader never sees a half-applied wave, the final labels
equal the reference, and the receipt chain holds one receipt per committed decision. Both backends."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers_core import Snapshot, assert_consistent, pending_counts_match_reviews, snapshot

from rippl_core import AsyncRippl, ConflictError, InvalidInputError, ReviewError, Rippl

ROOT = Path(__file__).parents[2]
CLAIMS = ["CLM-001", "CLM-002", "CLM-004", "CLM-006", "CLM-016", "SRC-001", "SRC-002", "SRC-005"]
DECISIONS = ["DEC-001", "DEC-003", "DEC-005", "DEC-012", "DEC-002"]
EXPECTED = (InvalidInputError, ReviewError)  # already retracted, not retracted, already decided...


class Tally:
    """What the workers committed, counted under a lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.receipts = 0
        self.added: list[str] = []
        self.ops: Counter[str] = Counter()

    def record(self, op: str, *, receipt: bool = False, added: str | None = None) -> None:
        with self.lock:
            self.ops[op] += 1
            self.receipts += int(receipt)
            if added:
                self.added.append(added)


def sync_worker(handle: Rippl, seed: int, steps: int, tally: Tally) -> None:
    rnd = random.Random(seed)
    for i in range(steps):
        op = rnd.choice(["retract", "reinstate", "propose", "decide", "add", "justify"])
        claim = rnd.choice(CLAIMS)
        try:
            if op == "retract":
                handle.retract(claim, reason=f"worker {seed}", by=f"w{seed}")
                tally.record(op, receipt=True)
            elif op == "reinstate":
                handle.reinstate(claim, reason=f"worker {seed}", by=f"w{seed}")
                tally.record(op, receipt=True)
            elif op == "propose":
                handle.propose_retraction(claim, reason=f"worker {seed}", by=f"w{seed}")
                tally.record(op)
            elif op == "decide":
                pending = handle.reviews()
                if pending:
                    item = rnd.choice(pending)
                    (handle.approve if rnd.random() < 0.5 else handle.reject)(item.id, by=f"w{seed}")
                    tally.record(op, receipt=True)
            elif op == "add" and not claim.startswith("SRC"):
                node = f"X-{seed}-{i}"
                handle.add_claim(node, f"derived by worker {seed}", derived_from=[claim])
                tally.record(op, added=node)
            elif op == "justify" and not claim.startswith("SRC"):
                handle.justify(rnd.choice(DECISIONS), [claim])
                tally.record(op)
        except EXPECTED:
            pass


def async_worker(backend: dict[str, object], graph: str, seed: int, steps: int, tally: Tally) -> None:
    async def main() -> None:
        handle = await AsyncRippl.open(graph=graph, **backend)
        rnd = random.Random(seed)
        try:
            for i in range(steps):
                claim = rnd.choice(CLAIMS)
                try:
                    if i % 3 == 0:
                        await handle.retract(claim, reason="async", by="async")
                        tally.record("retract", receipt=True)
                    elif i % 3 == 1:
                        await handle.reinstate(claim, reason="async", by="async")
                        tally.record("reinstate", receipt=True)
                    else:
                        await handle.propose_retraction(claim, reason="async", by="async")
                        tally.record("propose")
                except EXPECTED:
                    pass
        finally:
            await handle.close()

    asyncio.run(main())


PROCESS_WRITER = """
import json, sys
from rippl_core import Rippl, InvalidInputError
options, graph, steps = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
done = 0
with Rippl.open(graph=graph, **options) as handle:
    for i in range(steps):
        try:
            (handle.retract if i % 2 == 0 else handle.reinstate)("CLM-003", reason="process", by="proc")
            done += 1
        except InvalidInputError:
            pass
print(done)
"""


def reader(handle: Rippl, stop: threading.Event, seen: list[Snapshot], bad: list[dict[str, Any]]) -> None:
    while not stop.is_set():
        snap = snapshot(handle)  # one MULTI/EXEC: a consistent view
        seen.append(snap)
        wrong = snap.inconsistent()
        if wrong:
            bad.append(wrong)


def test_racing_writers_never_leave_a_half_applied_wave(
        incident: Rippl, open_rippl: Callable[..., Rippl], backend: dict[str, object]) -> None:
    graph = incident.graph
    tally = Tally()
    stop = threading.Event()
    seen: list[Snapshot] = []
    bad: list[dict[str, Any]] = []
    watcher = threading.Thread(target=reader, args=(open_rippl(graph=graph), stop, seen, bad))
    options = {k: str(v) for k, v in backend.items()}
    process = subprocess.Popen([sys.executable, "-c", PROCESS_WRITER, json.dumps(options), graph, "20"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers = [
        threading.Thread(target=sync_worker, args=(incident, 1, 25, tally)),
        threading.Thread(target=sync_worker, args=(incident, 2, 25, tally)),  # the same handle
        threading.Thread(target=sync_worker, args=(open_rippl(graph=graph), 3, 25, tally)),
        threading.Thread(target=sync_worker, args=(open_rippl(graph=graph), 4, 25, tally)),
        threading.Thread(target=async_worker, args=(backend, graph, 5, 25, tally)),
    ]
    watcher.start()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    out, err = process.communicate(timeout=120)
    stop.set()
    watcher.join()
    assert process.returncode == 0, err
    process_receipts = int(out.strip())

    assert not bad, f"a reader saw a half-applied wave: {bad[:3]}"
    assert len(seen) > 1
    final = snapshot(incident)
    assert_consistent(final)
    pending_counts_match_reviews(final)
    assert set(tally.added) <= set(final.nodes)
    receipts = incident.receipts()
    assert len(receipts) == tally.receipts + process_receipts > 0
    assert [r.seq for r in receipts] == list(range(1, len(receipts) + 1))
    assert incident.verify_receipts().ok
    assert tally.ops["retract"] and tally.ops["reinstate"] and tally.ops["propose"]


def test_verifying_while_receipts_are_appended_sees_a_whole_chain(
        incident: Rippl, open_rippl: Callable[..., Rippl]) -> None:
    writer_handle = open_rippl(graph=incident.graph)
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            (writer_handle.retract if i % 2 == 0 else writer_handle.reinstate)(
                "CLM-002", reason="churn", by="writer")
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    checks = [incident.verify_receipts()]
    try:  # verify until the chain has grown under us a few times (however slow the machine is)
        while len(checks) < 5000 and checks[-1].count < checks[0].count + 5:
            checks.append(incident.verify_receipts())
    finally:
        stop.set()
        thread.join()
    assert checks[-1].count > checks[0].count  # the chain grew while we verified it
    assert [c.problems for c in checks if not c.ok] == []


def test_racing_adds_of_one_id_create_it_once(rippl: Rippl, open_rippl: Callable[..., Rippl]) -> None:
    handles = [rippl] + [open_rippl(graph=rippl.graph) for _ in range(3)]
    rippl.add_source("S", "source")
    results: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def add(index: int) -> None:
        text = "the same statement" if index % 2 == 0 else f"a different statement {index}"
        barrier.wait()
        try:
            handles[index % 4].add_claim("C", text, sources=["S"])
            outcome = "ok"
        except ConflictError:
            outcome = "conflict"
        with lock:
            results.append(f"{index % 2}:{outcome}")

    threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = snapshot(rippl)
    assert set(snap.nodes) == {"S", "C"}
    assert len(snap.edges) == 1
    winner_same = snap.nodes["C"]["text"] == "the same statement"
    oks = Counter(r for r in results if r.endswith("ok"))
    if winner_same:  # every writer of the same text succeeded (a no-op after the first)
        assert oks == Counter({"0:ok": 4})
    else:  # one different text won; everyone else conflicted
        assert sum(oks.values()) == 1 and "1:ok" in oks
