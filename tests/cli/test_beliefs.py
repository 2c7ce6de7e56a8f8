"""The belief-time CLI commands and the checkout-outage story, on both backends."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from helpers_core import snapshot
from rich.console import Console
from typer.testing import CliRunner

from rippl_core import Rippl, State
from rippl_core.cli import app
from rippl_core.cli.beliefs import mermaid_timeline
from rippl_core.cli.stories.beliefs import AGENT, RESIZE, TOPIC, oct, tell_story
from rippl_core.testing import drop_graph

runner = CliRunner()
BASE = (datetime.now(UTC) - timedelta(days=30)).replace(hour=0, minute=0, second=0, microsecond=0)


def day(n: float) -> datetime:
    return BASE + timedelta(days=n)


def cli(rippl: Rippl, backend: dict[str, Any], *args: str) -> Any:
    where = ["--db", str(backend["path"])] if "path" in backend else ["--url", str(backend["url"])]
    return runner.invoke(app, [*where, "--graph", rippl.graph, *args])


def seed(rippl: Rippl) -> None:
    for source in ("S1", "S2", "S3"):
        rippl.add_source(source, f"source {source}")
    rippl.add_claim("C1", "cache: misconfigured", sources=["S1"])
    rippl.add_claim("C2", "pool exhaustion; #1 suspect", sources=["S2"])
    rippl.add_claim("C3", "bad deploy", sources=["S3"])
    rippl.believe("ag", "C1", topic="rc", valid_from=day(1), recorded_at=day(1), evidence=["S1"])
    rippl.believe("ag", "C2", topic="rc", valid_from=day(3), recorded_at=day(3), evidence=["S2"])
    rippl.believe("ag", "C3", topic="rc", valid_from=day(5), recorded_at=day(5), evidence=["S3"])


def test_ask_timeline_why_what_if_history(rippl: Rippl, backend: dict[str, Any]) -> None:
    seed(rippl)
    result = cli(rippl, backend, "ask", "ag", "rc", "--as-of", day(4).isoformat(), "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["claim"] == "C2"
    result = cli(rippl, backend, "ask", "ag", "rc", "--as-of", day(4).isoformat(),
                 "--known-at", day(2).isoformat(), "--format", "json")
    assert json.loads(result.output)["claim"] == "C1"
    result = cli(rippl, backend, "ask", "ag", "rc")
    assert result.exit_code == 0 and "C3" in result.output and "bad deploy" in result.output
    result = cli(rippl, backend, "ask", "ag", "rc", "--as-of", day(0).isoformat())
    assert "believed nothing" in result.output

    result = cli(rippl, backend, "timeline", "ag", "rc", "--format", "json")
    assert [b["claim"] for b in json.loads(result.output)] == ["C1", "C2", "C3"]
    result = cli(rippl, backend, "timeline", "ag", "rc")
    assert result.exit_code == 0 and all(c in result.output for c in ("C1", "C2", "C3"))
    result = cli(rippl, backend, "timeline", "ag", "rc", "--format", "mermaid")
    assert result.output.startswith("gantt") and result.output.count(":") >= 3
    result = cli(rippl, backend, "timeline", "ag", "rc", "--format", "svg")
    assert result.exit_code == 2
    result = cli(rippl, backend, "timeline", "ag", "rc", "--last", "2", "--format", "json")
    assert [b["claim"] for b in json.loads(result.output)] == ["C2", "C3"]
    result = cli(rippl, backend, "timeline", "ag", "rc", "--last", "2", "--before",
                 day(3).isoformat(), "--format", "json")
    assert [b["claim"] for b in json.loads(result.output)] == ["C1"]
    result = cli(rippl, backend, "timeline", "ag", "rc", "--before", day(3).isoformat())
    assert result.exit_code == 2 and "give --last N too" in result.output
    assert cli(rippl, backend, "timeline", "ag", "rc", "--last", "0").exit_code == 2

    result = cli(rippl, backend, "why", "ag", "rc", day(3.2).isoformat(), "--format", "json")
    change = json.loads(result.output)
    assert change["before"]["claim"] == "C1" and change["after"]["claim"] == "C2"
    assert change["new_evidence"] == ["S2"]
    assert "C1" in cli(rippl, backend, "why", "ag", "rc", day(3).isoformat()).output

    result = cli(rippl, backend, "what-if", "ag", "rc", "--without", "S3", "--format", "json")
    answer = json.loads(result.output)
    assert answer["actual"]["claim"] == "C3" and answer["counterfactual"]["claim"] == "C2"
    result = cli(rippl, backend, "what-if", "ag", "rc", "--without", "S3,S2")
    assert result.exit_code == 0 and "C1" in result.output

    rippl.retract("S2", reason="staging data", by="me", at=day(3))
    result = cli(rippl, backend, "history", "C2", "--format", "json")
    assert [(h["before"], h["after"]) for h in json.loads(result.output)] == [("IN", "OUT"),
                                                                            (None, "IN")]
    assert "Retracted" in cli(rippl, backend, "history", "C2").output
    result = cli(rippl, backend, "beliefs", "ag", "--as-of", day(4).isoformat(), "--format", "json")
    [belief] = json.loads(result.output)
    assert belief["claim"] == "C2" and belief["rests_on_retracted"] is True
    # as known before the retraction was recorded: Verified then, Retracted now
    recorded = max(h.recorded_at for h in rippl.history("S2") if h.after is State.OUT) \
        - timedelta(milliseconds=1)
    result = cli(rippl, backend, "ask", "ag", "rc", "--as-of", day(4).isoformat(),
                 "--known-at", recorded.isoformat())
    assert "(Verified)" in result.output and "(now Retracted)" in result.output


def test_believe_and_errors(rippl: Rippl, backend: dict[str, Any]) -> None:
    seed(rippl)
    result = cli(rippl, backend, "believe", "ag2", "C1", "--topic", "rc", "--evidence", "S1",
                 "--valid-from", day(2).isoformat())
    assert result.exit_code == 0, result.output
    assert rippl.ask("ag2", "rc").evidence == ["S1"]
    result = cli(rippl, backend, "ask", "ag", "rc", "--as-of", "2026-10-09T14:00:00")
    assert result.exit_code == 2 and "time zone" in result.output  # a usage error
    result = cli(rippl, backend, "why", "nobody", "rc", day(1).isoformat())
    assert result.exit_code == 1 and "no recorded belief" in result.output
    result = cli(rippl, backend, "what-if", "ag", "rc", "--without", "C1")
    assert result.exit_code == 2 and "source" in result.output


def test_mermaid_escapes_what_would_break_the_chart() -> None:
    from rippl_core.beliefs.models import Belief

    belief = Belief(agent="a", topic="t", claim="C:1", text="x: y; #z", valid_from=day(1),
                    recorded_at=day(1), claim_state=State.OUT, claim_status="Retracted",
                    rests_on_retracted=True)
    chart = mermaid_timeline("a", "t", [belief], now=day(2))
    task = chart.splitlines()[-1]
    name, _, rest = task.partition(" :")
    # only safe characters and entity codes: nothing that ends the name or the line
    assert re.fullmatch(r"(?:[A-Za-z0-9 \-_.,/]|#\d+;)*", name.strip()), name
    assert rest.startswith("crit, active, b0, ")


def test_the_checkout_outage_story(rippl: Rippl) -> None:
    console = Console(record=True, width=200)
    tell_story(rippl, console)
    text = console.export_text()
    assert rippl.ask(AGENT, TOPIC).claim == "CLM-CO-04"                       # today
    assert rippl.ask(AGENT, TOPIC, as_of=oct(8, 12)).claim == "CLM-CO-02"     # as of Oct 8
    assert rippl.ask(AGENT, TOPIC, as_of=oct(5, 12)).claim == "CLM-CO-01"     # as of Oct 5
    assert rippl.ask(AGENT, TOPIC, as_of=oct(4, 12), known_at=oct(4, 12)) is None  # late
    change = rippl.why_changed(AGENT, TOPIC, oct(10, 0))
    assert (change.before.claim, change.after.claim) == ("CLM-CO-02", "CLM-CO-03")
    assert change.retracted_evidence == ["SRC-CO-02"]
    assert rippl.what_if(AGENT, TOPIC, without=["SRC-CO-05"]).counterfactual.claim == "CLM-CO-03"
    assert not rippl.check(RESIZE, as_of=oct(9, 10)).allowed
    for expected in ("today", "as of Oct 8", "as of Oct 5", "CLM-CO-04", "CLM-CO-02", "CLM-CO-01",
                     "evidence that arrived then: SRC-CO-03, SRC-CO-04", "SRC-CO-02", "gantt",
                     "without SRC-CO-05: CLM-CO-03", "as Rippl knew it before the retraction was "
                     "recorded: allowed", "knowing what we know now: denied"):
        assert expected in text, expected
    # telling it again on the same graph reuses what is recorded
    again = Console(record=True, width=200)
    tell_story(rippl, again)
    assert "already recorded" in again.export_text()
    assert len(rippl.timeline(AGENT, TOPIC)) == 4


def test_rippl_demo_temporal_writes_only_its_own_graph(rippl: Rippl, backend: dict[str, Any]) -> None:
    rippl.add_claim("MINE", "the user's own claim")
    before = snapshot(rippl)
    result = cli(rippl, backend, "demo", "--temporal")  # with --graph <the user's graph>
    assert result.exit_code == 0, result.output
    assert "CLM-CO-03" in result.output and "gantt" in result.output
    assert snapshot(rippl) == before  # the demo empties its own graph, never the one named
    with Rippl.open(graph="rippl-demo", **backend) as demo:
        assert len(demo.timeline(AGENT, TOPIC)) == 4
        drop_graph(demo)
