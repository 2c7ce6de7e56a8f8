"""Servers the tests start as processes on loopback: wait until one listens, stop it whole."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from pathlib import Path


def wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    """Return once `process` listens on `port`; fail, with its log, if it exits or never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}:\n{log.read_text()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the server did not listen on {port}:\n{log.read_text()}")


def stop(process: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float = 30) -> None:
    """Terminate `process`, and kill it if it has not exited within `timeout` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)
