"""The belief-time story: two weeks of a checkout outage, as an SRE agent lived it.

Oct 4 the agent blames a cache misconfiguration, Oct 7 connection-pool exhaustion, Oct 10 the bad
deploy of checkout-api v2.4, Oct 14 a traffic spike. Every belief was recorded when the agent
adopted it, with the evidence behind it. Then Rippl answers the same question today, as of Oct 8
and as of Oct 5; says why it changed on Oct 10 (including the pool metrics found to be from the
wrong cluster); draws the timeline; and answers what the agent would believe without the traffic
report. Finally the causal graph and time meet: the pool resize ran on Oct 9; was its premise
already false then, and did Rippl know?
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from rippl_core.cli.app import styled
from rippl_core.cli.beliefs import belief_line, mermaid_timeline, timeline_table
from rippl_core.vocabulary import State

if TYPE_CHECKING:
    from rippl_core.client import Rippl

AGENT = "sre-agent"
TOPIC = "checkout-outage/root-cause"
RESIZE = "ACT-CO-01"


def oct(day: int, hour: int = 9, minute: int = 0) -> datetime:
    return datetime(2026, 10, day, hour, minute, tzinfo=UTC)


SOURCES = [
    ("SRC-CO-01", "Grafana: checkout 5xx rate and pricing-cache hit ratio, Oct 4", "telemetry"),
    ("SRC-CO-02", "PgBouncer SHOW POOLS export for pgbouncer-checkout, Oct 7", "telemetry"),
    ("SRC-CO-03", "Argo CD deploy log: checkout-api v2.4.0 rolled out Oct 9 23:40", "telemetry"),
    ("SRC-CO-04", "Sentry: v2.4 regression, N+1 query on cart_line_prices", "telemetry"),
    ("SRC-CO-05", "CDN traffic report: 3.2x checkout requests from a partner campaign", "report"),
]
CLAIMS = [
    ("CLM-CO-01", "A cache misconfiguration (pricing-cache TTL cut to 30 s) causes the outage",
     ["SRC-CO-01"]),
    ("CLM-CO-02", "Connection pool exhaustion in pgbouncer-checkout causes the outage",
     ["SRC-CO-02"]),
    ("CLM-CO-03", "The bad deploy of checkout-api v2.4 causes the outage",
     ["SRC-CO-03", "SRC-CO-04"]),
    ("CLM-CO-04", "A traffic spike from a partner campaign overwhelms checkout", ["SRC-CO-05"]),
]
# (claim, valid from, evidence, note): each recorded a few minutes after the agent adopted it,
# except the first: the agent's memory write failed and it was backfilled from its logs on Oct 5.
ADOPTIONS = [
    ("CLM-CO-01", oct(4, 9), ["SRC-CO-01"], "cache hit ratio fell from 94% to 61%"),
    ("CLM-CO-02", oct(7, 14), ["SRC-CO-02"], "200/200 server connections, 340 clients waiting"),
    ("CLM-CO-03", oct(10, 11), ["SRC-CO-03", "SRC-CO-04"], "errors began right after the deploy"),
    ("CLM-CO-04", oct(14, 16), ["SRC-CO-05"], "request volume tripled at 15:50"),
]


BACKFILLED = oct(5, 8, 30)


def _when(value: datetime | None) -> str:
    return value.strftime("%b %d %H:%M") if value is not None else "now"


def load_story(rippl: Rippl) -> bool:
    """Write the story into the handle's graph. Returns False when it was already there."""
    if rippl.timeline(AGENT, TOPIC):
        return False
    for source_id, title, kind in SOURCES:
        rippl.add_source(source_id, title, kind=kind)
    for claim_id, text, sources in CLAIMS:
        rippl.add_claim(claim_id, text, sources=sources)
    rippl.add_decision("DEC-CO-01", "Raise the pgbouncer-checkout pool to absorb the exhaustion",
                       premises=["CLM-CO-02"])
    rippl.add_action(RESIZE, "Resize pgbouncer-checkout default_pool_size from 200 to 400",
                     decisions=["DEC-CO-01"], tool="scale_pool",
                     args={"pool": "pgbouncer-checkout", "default_pool_size": 400})
    for claim_id, valid_from, evidence, note in ADOPTIONS:
        recorded = BACKFILLED if claim_id == "CLM-CO-01" else valid_from + timedelta(minutes=5)
        rippl.believe(AGENT, claim_id, topic=TOPIC, valid_from=valid_from, recorded_at=recorded,
                      evidence=evidence, note=note)
    return True


def step(console: Console, number: int, text: str) -> None:
    console.print(styled("\n[bold cyan]{}.[/bold cyan] {}", number, text))


def allowed(yes: bool) -> Text:
    return styled("[green]allowed[/green]") if yes else styled("[red]denied[/red]")


def tell_story(rippl: Rippl, console: Console) -> None:
    """Tell the checkout-outage story on `rippl`'s graph (loading its own data)."""
    console.print(Panel.fit("Belief time travel: what did the agent believe, when, and why?",
                            style="bold"))
    fresh = load_story(rippl)
    step(console, 1, f"Two weeks of a checkout outage, as {AGENT} lived it "
                     f"({'recorded' if fresh else 'already recorded'} with valid and transaction "
                     "times):")
    for claim_id, valid_from, _, _ in ADOPTIONS:
        text = next(text for cid, text, _ in CLAIMS if cid == claim_id)
        console.print(f"   {_when(valid_from)}  adopts {claim_id}: {text}")

    if rippl.get("SRC-CO-02").state is State.IN:
        rippl.retract("SRC-CO-02", reason="the export came from the staging cluster, not production",
                      by="postmortem", at=oct(7, 14))
    step(console, 2, "The postmortem finds the PgBouncer export came from the staging cluster. The "
                     "source is retracted (valid from Oct 7, recorded today); truth maintenance "
                     "takes the pool-exhaustion claim and what rests on it OUT.")

    step(console, 3, 'The same question, "what is the root cause?", asked of the agent\'s memory '
                     "at three moments:")
    for label, as_of in (("today", None), ("as of Oct 8", oct(8, 12)), ("as of Oct 5", oct(5, 12))):
        belief = rippl.ask(AGENT, TOPIC, as_of=as_of)
        console.print(styled("   {} {}", f"{label:<12}", belief_line(belief)))
    console.print("   Late knowledge: the Oct 4 belief was only written down on Oct 5 (backfilled "
                  "from the agent's logs). As of Oct 4 noon:")
    for label, known_at in (("as known then", oct(4, 12)), ("as known now", None)):
        belief = rippl.ask(AGENT, TOPIC, as_of=oct(4, 12), known_at=known_at)
        console.print(styled("   {} {}", f"{label:<14}", belief_line(belief)))

    step(console, 4, "Why did the belief change on Oct 10?")
    change = rippl.why_changed(AGENT, TOPIC, oct(10, 0))
    console.print(styled("   on {}: {}", _when(change.changed_at), belief_line(change.before)))
    console.print(styled("   became {}", belief_line(change.after)))
    console.print(f"   evidence that arrived then: {', '.join(change.new_evidence)}")
    if change.retracted_evidence:
        console.print(styled("   [red]the belief it replaced rested on retracted evidence: {}[/red]",
                             ", ".join(change.retracted_evidence)))

    step(console, 5, "The timeline (every change, with its evidence):")
    beliefs = rippl.timeline(AGENT, TOPIC)
    console.print(timeline_table(beliefs))
    console.print("   As a Mermaid chart (rippl timeline ... --format mermaid):")
    chart = mermaid_timeline(AGENT, TOPIC, beliefs, now=datetime.now(UTC))
    for line in chart.splitlines():
        console.print(styled("   [dim]{}[/dim]", line))

    step(console, 6, "What would the agent believe without the traffic report (SRC-CO-05)? "
                     "Computed from reads only; the live graph is not written.")
    result = rippl.what_if(AGENT, TOPIC, without=["SRC-CO-05"])
    console.print(styled("   it believes:      {}", belief_line(result.actual)))
    console.print(styled("   without SRC-CO-05: {}", belief_line(result.counterfactual)))

    step(console, 7, f"The pool resize {RESIZE} ran on Oct 9. Was it allowed then?")
    resize_day = oct(9, 10)
    retraction = next(c for c in rippl.history("SRC-CO-02") if c.cause == "retract")
    before = rippl.check(RESIZE, as_of=resize_day,
                         known_at=retraction.recorded_at - timedelta(milliseconds=1))
    now = rippl.check(RESIZE, as_of=resize_day)
    console.print(styled("   as Rippl knew it before the retraction was recorded: {}",
                         allowed(before.allowed)))
    console.print(styled("   knowing what we know now: {}", allowed(now.allowed)))
    for line in now.explain().splitlines():
        console.print(f"     {line}")
