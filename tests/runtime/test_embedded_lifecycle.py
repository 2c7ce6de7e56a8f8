"""The embedded server's lifecycle, with real processes: it goes away when the last process using it
is gone, however that process ended; a later open works; a dead server, even an unreaped zombie,
is replaced by a fresh one; the last handle's close() returns once the server has stopped (so its
folder can go at once), and never waits long on a frozen one."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psutil
import pytest

from rippl_core import AsyncRippl, Rippl
from rippl_core._runtime import connection

ROOT = Path(__file__).parents[2]

# A process that opens the database, writes, reports its server's pid, then ends as told.
CLIENT = textwrap.dedent("""
    import json, os, sys, time
    from rippl_core import Rippl
    path, how, claim = sys.argv[1:4]
    rippl = Rippl.open(path)
    rippl.add_claim(claim, "written by a process that ends: " + how)
    print(json.dumps({"server": rippl._server.pid}), flush=True)
    if how == "exit":          # a normal exit, without close()
        sys.exit(0)
    if how == "exception":     # an uncaught exception
        raise RuntimeError("the agent crashed")
    if how == "os-exit":       # no atexit handlers, no finalizers
        os._exit(3)
    time.sleep(600)            # "sigkill": the test kills it
""")


def run_client(path: Path, how: str, claim: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen([sys.executable, "-c", CLIENT, str(path), how, claim], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, process.stderr.read() if process.stderr else "no output"
    return process, int(json.loads(line)["server"])


def assert_gone(pid: int, timeout: float = 60.0) -> None:
    """The process exits (and is reaped by its parent) within `timeout` seconds."""
    try:
        process = psutil.Process(pid)
        process.wait(timeout=timeout)
    except psutil.NoSuchProcess:
        return
    except psutil.TimeoutExpired:
        raise AssertionError(f"process {pid} is still running") from None


@pytest.mark.parametrize("how", ["exit", "exception", "os-exit", "sigkill"])
def test_the_server_goes_away_with_its_last_process_however_it_ended(tmp_path: Path,
                                                                      how: str) -> None:
    db = tmp_path / "db" / "rippl.db"
    process, server = run_client(db, how, "CLM-1")
    if how == "sigkill":
        process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    process.communicate()
    assert_gone(server)
    with Rippl.open(db) as again:  # a later open starts a fresh server and finds the data
        assert again.get("CLM-1").text.endswith(how)
        assert again._server is not None and again._server.pid != server
        again.add_claim("CLM-2", "written after the restart")


def test_the_server_stays_while_any_process_uses_it(tmp_path: Path) -> None:
    db = tmp_path / "rippl.db"
    process, server = run_client(db, "sigkill", "CLM-1")
    try:
        with Rippl.open(db) as mine:
            assert mine._server is not None and mine._server.pid == server  # joined, not started
            mine.add_claim("CLM-2", "second process")
        mine.close()  # twice is fine
        with Rippl.open(db) as again:  # the other process still holds it: the same server
            assert again._server is not None and again._server.pid == server
            assert {again.get("CLM-1").id, again.get("CLM-2").id} == {"CLM-1", "CLM-2"}
        assert psutil.Process(server).is_running()
    finally:
        process.kill()
        process.communicate()
    assert_gone(server)


def test_an_unclosed_handle_in_this_process_lets_the_server_go_when_collected(tmp_path: Path) -> None:
    db = tmp_path / "rippl.db"
    handle = Rippl.open(db)
    assert handle._server is not None
    server = handle._server.pid
    del handle  # never closed: its finalizer leaves the server once it is collected
    gc.collect()
    assert_gone(server)


# A process that never reaps its children, like a container whose PID 1 is the Python app: a
# server killed under it stays a zombie, which must not pass for a running server.
NO_REAPER = textwrap.dedent("""
    import ctypes, json, os, signal, sys, time
    import psutil
    from rippl_core import Rippl
    PR_SET_CHILD_SUBREAPER = 36
    assert ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    path, victim = sys.argv[1:3]
    rippl = Rippl.open(path)
    rippl.add_claim("CLM-1", "acknowledged before the kill")
    server = rippl._server.pid
    running = json.loads(open(path + ".server").read()) if victim != "server" else {}
    pids = {"server": [server], "watchdog": [running.get("watchdog")],
            "both": [running.get("watchdog"), server]}[victim]
    def dead(pid):
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True
    for pid in pids:  # each one dead before the next: a dying watchdog could still reap its server
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while not dead(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
    deadline = time.monotonic() + 60
    while not dead(server) and time.monotonic() < deadline:
        time.sleep(0.01)
    rippl.close()
    with Rippl.open(path) as again:
        print(json.dumps({"old": server, "new": again._server.pid,
                          "zombie": psutil.pid_exists(server)
                          and psutil.Process(server).status() == psutil.STATUS_ZOMBIE,
                          "text": again.get("CLM-1").text}), flush=True)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux")
@pytest.mark.parametrize("victim", ["server", "watchdog", "both"])
def test_a_killed_server_is_replaced_even_when_nobody_reaps_it(tmp_path: Path, victim: str) -> None:
    db = tmp_path / "rippl.db"
    done = subprocess.run([sys.executable, "-c", NO_REAPER, str(db), victim], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "permission" not in done.stderr.lower()
    report = json.loads(done.stdout)
    assert report["new"] != report["old"]
    if victim != "server":  # the server outlived its watchdog and nobody reaped it
        assert report["zombie"]
    assert report["text"] == "acknowledged before the kill"


def test_close_never_waits_long_on_a_frozen_server(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The last close() waits for the server to stop, for STOP_WAIT_S at most: it returns even
    while the server is frozen (and cannot stop)."""
    monkeypatch.setattr(connection, "STOP_WAIT_S", 1.0)
    handle = Rippl.open(tmp_path / "rippl.db")
    assert handle._server is not None
    server = psutil.Process(handle._server.pid)
    server.suspend()
    try:
        closer = threading.Thread(target=handle.close)
        closer.start()
        closer.join(timeout=30)
        assert not closer.is_alive(), "close() waited on a frozen server beyond STOP_WAIT_S"
    finally:
        server.resume()
    assert_gone(server.pid)


@pytest.mark.parametrize("handle_kind", ["sync", "async"])
async def test_close_after_the_server_died_is_silent(tmp_path: Path, handle_kind: str) -> None:
    db = tmp_path / "rippl.db"
    handle = Rippl.open(db) if handle_kind == "sync" else await AsyncRippl.open(db)
    handle_server = handle._server
    assert handle_server is not None
    server = psutil.Process(handle_server.pid)
    server.send_signal(signal.SIGKILL)
    assert_gone(server.pid)
    if isinstance(handle, Rippl):
        handle.close()
    else:
        await handle.close()
    with Rippl.open(db) as again:
        assert again.stats().nodes == {}


@pytest.mark.parametrize("name", ['with space/rip pl.db', 'quote"and\\back/db', 'ünïcode/ø.db',
                                  "semi;colon/#hash.db"])
def test_any_database_path_works(tmp_path: Path, name: str) -> None:
    db = tmp_path / name
    with Rippl.open(db) as rippl:
        rippl.add_claim("CLM-1", "stored under an awkward path")
    with Rippl.open(db) as rippl:
        assert rippl.get("CLM-1").text == "stored under an awkward path"
    assert (db.parent / f"{db.name}.aof").is_dir()


def test_a_database_path_under_a_file_is_a_rippl_error(tmp_path: Path) -> None:
    from rippl_core import RipplError

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(RipplError, match="folder"):
        Rippl.open(blocker / "rippl.db")
    assert os.path.isfile(blocker)


def test_the_embedded_server_fsyncs_every_write_before_acknowledging_it(tmp_path: Path) -> None:
    """A retraction or approval that returned is on disk: power loss cannot lift a veto."""
    db = tmp_path / "rippl.db"
    with Rippl.open(db) as first, Rippl.open(db) as joined:  # the starter and a process joining
        for handle in (first, joined):
            config = handle.redis.config_get("append*")
            assert config["appendonly"] == "yes"
            assert config["appendfsync"] == "always"


def test_the_embedded_server_folds_a_graphs_recent_changes_in_often(tmp_path: Path) -> None:
    """FalkorDB folds a graph's recent changes into its matrices once there are 1,000 of them,
    not 10,000: a turn of a long conversation costs what a short one's does
    (docs/benchmarks.md, "Capture at scale")."""
    with Rippl.open(tmp_path / "rippl.db") as rippl:
        assert rippl.redis.execute_command(
            "GRAPH.CONFIG", "GET", "DELTA_MAX_PENDING_CHANGES") == ["DELTA_MAX_PENDING_CHANGES", 1000]


def test_a_throwaway_database_is_deleted_once_its_server_stopped() -> None:
    """The folder of a ":memory:" store goes when the store closes, without racing the server,
    which writes its files until it has stopped (a CI run once failed on "Directory not empty")."""
    from rippl_core.adapters import throwaway_database

    for _ in range(5):
        with throwaway_database() as db, Rippl.open(db, graph="scratch") as rippl:
            rippl.add_claim("C1", "written just before the close")
            server = psutil.Process(rippl._server.pid)  # type: ignore[union-attr]
        assert not db.parent.exists()
        with contextlib.suppress(psutil.NoSuchProcess):  # gone, or exited and not yet reaped
            assert server.status() == psutil.STATUS_ZOMBIE


@pytest.mark.parametrize("handle_kind", ["sync", "async"])
async def test_a_folder_deleted_right_after_the_last_close_goes(tmp_path: Path,
                                                                handle_kind: str) -> None:
    """A script that deletes its embedded database's folder right after close() (an example's
    temporary database): the server has stopped, its last file written, when close() returns, so
    the deletion never meets "Directory not empty" and no server is left behind."""
    for n in range(4):
        folder = tmp_path / f"scratch-{n}"
        handle = Rippl.open(folder / "rippl.db") if handle_kind == "sync" \
            else await AsyncRippl.open(folder / "rippl.db")
        assert handle._server is not None
        server = psutil.Process(handle._server.pid)
        if isinstance(handle, Rippl):
            handle.add_claim("C1", "written just before the close")
            handle.close()
        else:
            await handle.add_claim("C1", "written just before the close")
            await handle.close()
        assert not connection._alive(server.pid, server.create_time()), "still running"
        shutil.rmtree(folder)  # no ignore_errors: it raises if the server still writes there


def test_a_close_that_is_not_the_last_leaves_the_server_serving(tmp_path: Path) -> None:
    db = tmp_path / "rippl.db"
    with Rippl.open(db) as first:
        second = Rippl.open(db)
        assert first._server is not None and second._server is not None
        assert second._server.pid == first._server.pid
        second.close()  # another handle still uses the server: it stays, and close() returns
        first.add_claim("C1", "served after the other handle left")
        assert first.get("C1").text == "served after the other handle left"
        server = first._server.pid
    assert_gone(server)
