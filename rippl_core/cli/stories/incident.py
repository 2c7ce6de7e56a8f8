"""`rippl demo`: the incident story, told in plain words against a real embedded FalkorDB.

An agent is about to migrate billing onto shard 09 because "Shard 09 is healthy". Telemetry then
shows disk errors; a monitor proposes retracting the claim, a human approves, and the agent's next
attempt is vetoed with the trail to the false premise, while a safe alternative stays allowed.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.panel import Panel

from rippl_core.adapters import throwaway_database
from rippl_core.cli import render
from rippl_core.cli.app import styled
from rippl_core.cli.stories import beliefs, capture, memory, notices
from rippl_core.client import Rippl
from rippl_core.errors import PremiseRetractedError
from rippl_core.models import ReviewItem, ToolCall

INCIDENT = Path(__file__).resolve().parents[3] / "examples" / "incident.yaml"
MIGRATE_09 = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "09"})
MIGRATE_07 = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "07"})
DEMO_SCRATCH = "rippl-demo-notices"  # the notices story's graph, in a throwaway database


def incident_file() -> Path:
    """The demo incident graph: from the source tree, or packaged data when installed."""
    if INCIDENT.is_file():
        return INCIDENT
    return Path(str(resources.files("rippl_core") / "data" / "incident.yaml"))


def step(console: Console, number: int, text: str) -> None:
    console.print(styled("\n[bold cyan]{}.[/bold cyan] {}", number, text))


def agent_tries(console: Console, rippl: Rippl, call: ToolCall) -> bool:
    """What an agent's guarded tool call does: guard first, run only if allowed."""
    label = f"{call.name}({', '.join(f'{k}={v}' for k, v in call.args.items())})"
    try:
        verdict = rippl.guard(call)
    except PremiseRetractedError as veto:
        console.print(styled("   agent calls [bold]{}[/bold] -> [bold red]VETOED[/bold red] before "
                             "it runs (PremiseRetractedError)", label))
        for line in veto.verdict.explain().splitlines():
            console.print(f"     {line}")
        return False
    console.print(styled("   agent calls [bold]{}[/bold] -> [green]allowed[/green]: {}", label,
                         verdict.reason))
    return True


def tell_incident_story(rippl: Rippl, console: Console) -> None:
    report = rippl.load(incident_file())
    stats = rippl.stats()
    step(console, 1, f"Loaded the incident graph into embedded FalkorDB: {sum(stats.nodes.values())} "
                     f"nodes ({', '.join(f'{n} {k}s' for k, n in sorted(stats.nodes.items()))}), "
                     f"{stats.edges} causal edges ({len(report.created)} new).")
    claim, action = rippl.get("CLM-001"), rippl.get("ACT-001")
    console.print(f"   {action.id} \"{action.text}\" rests on {claim.id} \"{claim.text}\".",
                  highlight=False)

    step(console, 2, "The agent wants to migrate billing onto shard 09. Pre-flight check:")
    agent_tries(console, rippl, MIGRATE_09)

    step(console, 3, "Telemetry shows disk errors on shard 09. A monitor proposes retracting the claim "
                     "(it cannot retract it alone: a human must approve).")
    item = rippl.propose_retraction("CLM-001", reason="SMART errors and 4% write failures on shard 09",
                                    by="monitor:disk-health", evidence="grafana: shard-09 io errors")
    console.print(f"   review {item.id} is pending; {len(item.at_risk)} nodes would be invalidated. "
                  "Meanwhile everything resting on the claim is at risk and blocked (fail closed):",
                  highlight=False)
    agent_tries(console, rippl, MIGRATE_09)

    step(console, 4, "The on-call engineer reviews the evidence and approves. The wave commits "
                     "atomically and a receipt is chained:")
    receipt = rippl.approve(item.id, by="alice@oncall", note="confirmed on the host")
    console.print(f"   receipt {receipt.id} sha256 {receipt.hash[:20]}… "
                  f"({len(receipt.body['affected'])} status changes)")

    step(console, 5, "The blast radius of the false premise:")
    reached = rippl.blast_radius("CLM-001")
    texts = {r.id: rippl.get(r.id).text for r in reached}
    console.print(render.tree(rippl.get("CLM-001"), reached, texts))
    out = sum(1 for r in reached if r.state == "OUT")
    console.print(f"   {len(reached)} nodes downstream, {out} now invalid; the rest keep another "
                  "justification.")

    step(console, 6, "The agent retries the migration:")
    agent_tries(console, rippl, MIGRATE_09)
    console.print("   It falls back to shard 07, which does not rest on the false claim:")
    agent_tries(console, rippl, MIGRATE_07)

    step(console, 7, "Anyone can verify the receipt chain (edits, deletions, reordering are detected):")
    check = rippl.verify_receipts()
    console.print(styled("   [green]chain intact[/green]: {} receipts verified" if check.ok else
                         "   [red]chain broken[/red]: {} receipts verified", check.count))

    step(console, 8, "The disk is replaced; the claim is reinstated, and everything that rested on "
                     "it comes back:")
    wave = rippl.reinstate("CLM-001", reason="disk replaced; 24h of clean telemetry",
                           by="alice@oncall")
    console.print(f"   {len(wave.transitions)} nodes restored.")
    agent_tries(console, rippl, MIGRATE_09)


def propose_again(rippl: Rippl) -> ReviewItem:
    """For the console: the disk errors come back; a monitor proposes retracting CLM-001 again."""
    return rippl.propose_retraction("CLM-001", reason="disk errors again on shard 09 after the swap",
                                    by="monitor:disk-health", evidence="grafana: shard-09 io errors")


def tell_notices_apart(console: Console) -> None:
    """The notices story lets twelve minutes pass on a demo clock, so what it records is stamped
    in the future: it is told on a throwaway database, never where the demo keeps its graph."""
    console.print(styled("\n[dim]The notices story runs on a throwaway database: its demo clock "
                         "runs twelve minutes ahead, and nothing of it is kept.[/dim]"))
    with throwaway_database(prefix="rippl-demo-") as db, Rippl.open(db, graph=DEMO_SCRATCH) as scratch:
        notices.tell_story(scratch, console)


def run(rippl: Rippl, console: Console, *, story: str = "all") -> None:
    """Tell the stories (`story`: all, incident, beliefs, capture, memory or notices)."""
    console.print(Panel.fit("Rippl demo: an agent's tool call is vetoed because the premise under "
                            "it was found false", style="bold"))
    rippl.drop()  # the demo graph starts empty; the stories then live in it side by side
    if story in ("all", "incident"):
        tell_incident_story(rippl, console)
    if story in ("all", "beliefs"):
        beliefs.tell_story(rippl, console)
    if story in ("all", "capture"):
        capture.tell_story(rippl, console)
    if story in ("all", "memory"):
        memory.tell_story(rippl, console)
    if story in ("all", "notices"):
        tell_notices_apart(console)
    graph = f"rippl --graph {rippl.graph}"
    console.print(styled("\n[bold green]Done.[/bold green] Explore it yourself:"))
    if story in ("all", "incident"):
        console.print(f"  {graph} show ACT-001 | {graph} blast-radius CLM-001 | {graph} receipts list")
    if story in ("all", "beliefs"):
        console.print(f"  {graph} timeline {beliefs.AGENT} {beliefs.TOPIC} | {graph} ask "
                      f"{beliefs.AGENT} {beliefs.TOPIC} --as-of 2026-10-08T00:00:00Z")
    if story in ("all", "capture"):
        console.print(f"  {graph} compensations")
    if story in ("all", "memory"):
        console.print(f"  {graph} ask ops {memory.TOPIC} | {graph} compensations")
