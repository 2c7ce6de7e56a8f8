"""A clock a test moves by hand, for what decides by time (sessions, sign-ins, key refetches):
`clock.now += 60`. Tests never wait for wall-clock time to pass."""

from __future__ import annotations


class ManualClock:
    """Monotonic seconds, starting at 1000, moved only by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now
