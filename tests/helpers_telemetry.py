"""Helpers for the telemetry tests (no tests here): one OpenTelemetry SDK per test process, with
an in-memory span exporter and metric reader, and readers of what they hold.

The suite runs with OTEL_SDK_DISABLED=true (the root conftest sets it, as CI does, so that
CrewAI's own telemetry stays off). The SDK reads that variable only when a provider is
constructed, so the providers here are built with it removed for that moment and restored at once:
they record, while CrewAI's telemetry stays off through CREWAI_DISABLE_TELEMETRY and
CREWAI_TRACING_ENABLED (also set by the root conftest). A global provider can be set once per
process; each test clears the exporter and reads metrics as differences.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

SDK_DISABLED = "OTEL_SDK_DISABLED"


@contextmanager
def sdk_enabled() -> Iterator[None]:
    """OTEL_SDK_DISABLED removed while an SDK provider is constructed (restored after)."""
    saved = os.environ.pop(SDK_DISABLED, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[SDK_DISABLED] = saved


class Telemetry:
    """The process's SDK: every finished span, and the metrics collected so far."""

    def __init__(self) -> None:
        with sdk_enabled():
            self.exporter = InMemorySpanExporter()
            self.provider = TracerProvider()
            self.reader = InMemoryMetricReader()
            self.meters = MeterProvider(metric_readers=[self.reader])
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        trace.set_tracer_provider(self.provider)
        metrics.set_meter_provider(self.meters)
        assert trace.get_tracer_provider() is self.provider, "another tracer provider was set first"

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def rippl(self) -> list[ReadableSpan]:
        """Rippl's spans, in the order they ended."""
        return [s for s in self.spans() if s.instrumentation_scope is not None
                and s.instrumentation_scope.name == "rippl"]

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.rippl() if s.name.startswith(prefix)]

    def metric(self, name: str) -> dict[frozenset[tuple[str, Any]], float]:
        """Each data point of a metric: its attributes -> its value (a histogram's: its count)."""
        found: dict[frozenset[tuple[str, Any]], float] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != name:
                        continue
                    for point in metric.data.data_points:
                        key = frozenset((point.attributes or {}).items())
                        if isinstance(point, HistogramDataPoint):
                            found[key] = point.count
                        elif isinstance(point, NumberDataPoint):
                            found[key] = point.value
        return found


_INSTALLED: Telemetry | None = None


def telemetry() -> Telemetry:
    """The process's SDK, installed on first use."""
    global _INSTALLED
    if _INSTALLED is None:
        _INSTALLED = Telemetry()
    return _INSTALLED


def delta(before: Mapping[frozenset[tuple[str, Any]], float],
          after: Mapping[frozenset[tuple[str, Any]], float]) -> dict[frozenset[tuple[str, Any]], float]:
    """What a metric gained between two readings (the points that changed)."""
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def point(**attributes: Any) -> frozenset[tuple[str, Any]]:
    """The key of a data point (attribute names with dots written as `__`)."""
    return frozenset((k.replace("__", "."), v) for k, v in attributes.items())


def events(span: ReadableSpan, name: str = "rippl.veto") -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == name]


def ancestors(span: ReadableSpan, spans: Iterable[ReadableSpan]) -> list[ReadableSpan]:
    """The span's parent, its parent's parent... (those among `spans`)."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    found: list[ReadableSpan] = []
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        found.append(by_id[parent.span_id])
        parent = found[-1].parent
    return found


def every_attribute_value(spans: Iterable[ReadableSpan]) -> list[str]:
    """Every attribute value of every span and of its events, as text."""
    values: list[str] = []
    for span in spans:
        for attributes in [span.attributes or {}, *(e.attributes or {} for e in span.events)]:
            for value in attributes.values():
                values.extend(str(v) for v in (value if isinstance(value, tuple) else (value,)))
    return values
