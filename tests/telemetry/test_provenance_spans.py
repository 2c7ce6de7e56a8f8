"""A retraction by provenance is one span (`rippl.review.propose_where`) with its proposer, review
and how much it puts at risk; a query that matches nothing is a span with an error status."""

from __future__ import annotations

import pytest
from helpers_telemetry import Telemetry
from opentelemetry.trace import StatusCode

from rippl_core import NoMatchError, Rippl
from rippl_core.testing import Clock
from tests.helpers_provenance import EVIL, START, seed


def test_propose_where_is_one_span(rippl: Rippl, otel: Telemetry) -> None:
    with Clock(START) as clock:
        seed(rippl, clock)
    otel.exporter.clear()
    item = rippl.propose_retraction_where(source_prefix=EVIL, reason="injection", by="monitor")
    [span] = [s for s in otel.rippl() if s.name == "rippl.review.propose_where"]
    attributes = dict(span.attributes or {})
    assert attributes["rippl.actor"] == "monitor" and attributes["rippl.review.id"] == item.id
    assert attributes["rippl.review.at_risk.count"] == len(item.at_risk)
    with pytest.raises(NoMatchError):
        rippl.propose_retraction_where(tool="nope", reason="x", by="monitor")
    failed = [s for s in otel.rippl() if s.name == "rippl.review.propose_where"][-1]
    assert failed.status.status_code is StatusCode.ERROR
