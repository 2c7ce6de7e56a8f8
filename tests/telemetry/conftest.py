"""The telemetry tests share the process's OpenTelemetry SDK (see helpers_telemetry)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers_telemetry import Telemetry, telemetry


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    """The SDK, with no span recorded yet."""
    installed = telemetry()
    installed.exporter.clear()
    yield installed
    installed.exporter.clear()
