"""The embedded server's watchdog: it runs redis-server as its child and stops it when the last
process using the database is gone, however that process ended.

Every process that uses the server holds a shared `flock` on the server's lifeline file. The kernel
releases a process's locks when it closes the file or ends in any way (`close()`, a normal exit
without `close()`, an exception, SIGKILL), so the watchdog's request for an exclusive lock is granted
exactly when no process uses the server any more; it then stops the server (SIGTERM: the append-only
file is flushed and fsynced) and exits, releasing the lock only once the server is gone. A process
that opens the database meanwhile waits for that, then starts a fresh server.

The server is the watchdog's child, so the watchdog reaps it (no zombie, even where PID 1 never
reaps), and on Linux the server gets SIGTERM if the watchdog itself dies (PR_SET_PDEATHSIG).

Run by path with the standard library only (`python -I -S watchdog.py LIFELINE SOCKET TIMEOUT --
redis-server ...`): it never imports rippl_core. It forks once so that it is nobody's child to wait
for, prints `ready <server pid> <watchdog pid>` (or `failed <why>`) on stdout, and closes stdout.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

STOP_GRACE_S = 60.0  # how long a stopping server may take to flush before it is killed


def _die_with_parent() -> None:  # pragma: no cover - runs in the forked child before exec
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


def _answers(path: str) -> bool:
    """Whether the server on the unix socket answers PING (not while it is loading its data)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(5)
            conn.connect(path)
            conn.sendall(b"*1\r\n$4\r\nPING\r\n")
            return conn.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _log_tail(folder: Path, lines: int = 8) -> str:
    try:
        text = (folder / "redis.log").read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no server log"
    return " | ".join(line.strip() for line in text[-lines:]) or "empty server log"


def _report(message: str) -> None:
    with contextlib.suppress(OSError):
        os.write(1, (message.replace("\n", " ") + "\n").encode())
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    os.close(devnull)


def _start(command: list[str], socket_path: str, timeout: float) -> subprocess.Popen[bytes] | str:
    """Start the server and wait until it answers; the process, or why it did not start."""
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            return f"redis-server exited with code {server.returncode}"
        if os.path.exists(socket_path) and _answers(socket_path):
            return server
        time.sleep(0.005)
    server.kill()
    server.wait()
    return f"redis-server did not answer within {timeout:.0f} s"


def _stop_when_unused(lifeline: int, server: subprocess.Popen[bytes]) -> None:
    fcntl.flock(lifeline, fcntl.LOCK_EX)  # granted when no process holds the lifeline any more
    with contextlib.suppress(ProcessLookupError):
        server.terminate()
    try:
        server.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        server.kill()


def main(argv: list[str]) -> int:
    lifeline_path, socket_path, timeout, separator, *command = argv
    if separator != "--" or not command:
        print("usage: watchdog.py LIFELINE SOCKET TIMEOUT -- redis-server ...", file=sys.stderr)
        return 2
    if os.fork():  # the caller waits for this process only; the watchdog runs on, unparented
        return 0
    folder = Path(lifeline_path).parent
    lifeline = os.open(lifeline_path, os.O_RDWR)
    started = _start(command, socket_path, float(timeout))
    if isinstance(started, str):
        _report(f"failed {started}: {_log_tail(folder)}")
        shutil.rmtree(folder, ignore_errors=True)
        return 1
    _report(f"ready {started.pid} {os.getpid()}")
    threading.Thread(target=_stop_when_unused, args=(lifeline, started), daemon=True).start()
    started.wait()  # stopped by the thread above, or it crashed or was killed
    # The lifeline stays locked (by this process, or by the processes still using a server that
    # crashed) until the folder is gone: a new server never shares it.
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
