"""Crash safety of the embedded database: SIGKILL the FalkorDB server right after acknowledged writes
(and in the middle of a stream of them), reopen the same file, and find every acknowledged write,
with no commit half-applied. Also: restarting after a graph was deleted keeps the database openable."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import psutil
from helpers_core import Snapshot, assert_consistent, snapshot

from rippl_core import Rippl, UnavailableError

INCIDENT = Path(__file__).parents[2] / "examples" / "incident.yaml"


def kill_server(handle: Rippl) -> None:
    """SIGKILL the embedded server process and wait until it is gone."""
    assert handle._server is not None
    process = psutil.Process(handle._server.pid)
    os.kill(handle._server.pid, signal.SIGKILL)
    process.wait(timeout=30)
    verdict = handle.check("ACT-001")  # the guard fails closed while the database is down
    assert not verdict.allowed and "could not be checked" in verdict.reason
    handle.close()  # leaving a dead server must not raise


def everything(snap: Snapshot) -> tuple[object, ...]:
    return snap.nodes, snap.edges, snap.other_nodes, snap.other_edges


def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    handle = Rippl.open(db, graph="ops")
    handle.load(INCIDENT)
    handle.add_claim("CLM-100", "written just before the crash", sources=["SRC-001"])
    handle.justify("DEC-002", ["CLM-100"])
    handle.retract("CLM-002", reason="stale", by="telemetry")
    item = handle.propose_retraction("CLM-001", reason="disk errors", by="monitor")
    handle.approve(item.id, by="alice")
    pending = handle.propose_retraction("CLM-004", reason="maybe", by="monitor")
    last = handle.add_decision("DEC-100", "the very last acknowledged write", premises=["CLM-100"])
    expected = snapshot(handle)
    receipts = handle.receipts()
    kill_server(handle)

    with Rippl.open(db, graph="ops") as reopened:
        assert reopened._server is not None and reopened._server.pid != 0
        after = snapshot(reopened)
        assert everything(after) == everything(expected)
        assert reopened.get(last.id) == last
        assert reopened.reviews() == [reopened.review(pending.id)]
        assert reopened.receipts() == receipts and reopened.verify_receipts().ok
        assert not reopened.check("ACT-001").allowed
        assert_consistent(after)
        reopened.reject(pending.id, by="bob")  # and the graph is writable again


def test_a_stream_of_writes_killed_midway_loses_nothing_acknowledged(tmp_path: Path) -> None:
    db = tmp_path / "stream.db"
    handle = Rippl.open(db, graph="ops")
    handle.load(INCIDENT)
    acked: list[str] = []
    waves: list[str] = []
    enough = threading.Event()
    failure: list[BaseException] = []

    def writer() -> None:
        i = 0
        try:
            while True:
                node = f"CLM-S{i}"
                handle.add_claim(node, f"streamed claim {i}", derived_from=["CLM-001"])
                acked.append(node)
                # A wave over everything under CLM-001 every few writes: many states per commit.
                (handle.retract if len(waves) % 2 == 0 else handle.reinstate)(
                    "CLM-001", reason="churn", by="writer")
                waves.append(node)
                i += 1
                if i >= 25:
                    enough.set()
        except UnavailableError:
            return
        except BaseException as exc:  # pragma: no cover - reported below
            failure.append(exc)
            enough.set()

    thread = threading.Thread(target=writer)
    thread.start()
    enough.wait(timeout=120)
    assert handle._server is not None
    process = psutil.Process(handle._server.pid)
    os.kill(handle._server.pid, signal.SIGKILL)
    process.wait(timeout=30)
    thread.join(timeout=60)
    assert not failure, failure
    handle.close()

    with Rippl.open(db, graph="ops") as reopened:
        after = snapshot(reopened)
        assert set(acked) <= set(after.nodes), "an acknowledged node was lost"
        retracted = bool(after.nodes["CLM-001"].get("retracted"))
        # Every acknowledged wave is there; at most the one in flight went further.
        assert retracted == (len(waves) % 2 == 1) or len(acked) > len(waves)
        assert_consistent(after)  # no commit was half-applied
        assert reopened.verify_receipts().ok
        assert len(reopened.receipts()) >= len(waves)


def test_restarting_after_deleting_a_graph_keeps_the_database_openable(tmp_path: Path) -> None:
    """FalkorDB re-logs the constraints of deleted graphs while replaying its append-only file;
    left there, they crashed the next start. Rippl compacts the file on each cold start."""
    db = tmp_path / "deleted.db"
    with Rippl.open(db, graph="kept") as kept:
        kept.add_claim("C", "kept across restarts")
        doomed = Rippl.open(db, graph="doomed")
        doomed.add_claim("D", "deleted")
        doomed.redis.execute_command("GRAPH.DELETE", doomed.keys.graph)
        other = Rippl.open(db, graph="dropped")
        other.add_claim("E", "deleted by key")
        other.redis.delete(other.keys.graph)
        doomed.close()
        other.close()
    for restart in range(2):  # the second start after the deletion is the one that crashed
        with Rippl.open(db, graph="kept") as handle:
            assert handle.get("C").text == "kept across restarts"
            handle.add_claim(f"R{restart}", f"restart {restart}")
            assert not handle.redis.exists("doomed")


def test_a_cold_start_rewrites_the_log_it_replayed_and_a_new_database_has_none(tmp_path: Path) -> None:
    """The log a start replays is folded into a snapshot before the handle is returned, with
    nothing logged after it (the constraints the replay re-logged); a new database replays
    nothing and is not rewritten."""
    db = tmp_path / "log.db"
    with Rippl.open(db) as new:
        assert new.redis.info("persistence")["aof_rewrites"] == 0
        new.add_claim("C", "written before the restart")
    with Rippl.open(db) as reopened:
        persistence = reopened.redis.info("persistence")
        assert persistence["aof_rewrites"] >= 1
        assert persistence["aof_current_size"] == persistence["aof_base_size"]
        assert reopened.get("C").text == "written before the restart"
