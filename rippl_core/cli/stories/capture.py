"""The capture story: nothing is declared in advance; Rippl records what an agent's calls rest on
as it runs, vetoes a call whose observation was found false while the agent paused, and lists
what already ran on it for compensation.

The agent here is scripted (no model): each turn is what a model would emit. The framework
adapters do the same recording from a real LangGraph, AutoGen or CrewAI run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from rippl_core.cli.app import styled
from rippl_core.cli.capture import compensation_lines
from rippl_core.models import ToolCall, Verdict

if TYPE_CHECKING:
    from rippl_core.client import Rippl

RUN = "ops-agent/thread-42"
HEALTH_09 = ToolCall(name="get_shard_health", args={"shard": "09"}, id="call-1")
ANNOUNCE = ToolCall(name="announce_window", args={"shard": "09", "at": "02:00Z"}, id="call-2")
MIGRATE_09 = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "09"}, id="call-3")
HEALTH_07 = ToolCall(name="get_shard_health", args={"shard": "07"}, id="call-4")
MIGRATE_07 = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "07"}, id="call-5")


def _step(console: Console, number: str, text: str) -> None:
    console.print(styled("\n[bold cyan]{}.[/bold cyan] {}", number, text))


def _label(call: ToolCall) -> str:
    return f"{call.name}({', '.join(f'{k}={v}' for k, v in call.args.items())})"


def _said(console: Console, call: ToolCall, verdict: Verdict) -> None:
    if verdict.allowed:
        console.print(styled("   {} -> [green]allowed[/green]", _label(call)))
        return
    console.print(styled("   {} -> [bold red]VETOED[/bold red] before it runs", _label(call)))
    for line in verdict.explain().splitlines():
        console.print(Text(f"     {line}"))


def tell_story(rippl: Rippl, console: Console) -> None:
    """The third story: provenance captured from the agent's own run."""
    run = rippl.run(RUN, agent="ops-agent", framework="demo")
    _step(console, "C1", "An ops agent starts a run. Nothing about it is declared in the graph: "
                         "Rippl records what each call rests on as it happens.")
    [verdict] = run.decide("turn-1", [HEALTH_09])
    _said(console, HEALTH_09, verdict)
    seen = run.executed(HEALTH_09, "shard 09: healthy, p99 4 ms (served from replica r3)")
    console.print(f"   its result is an observation of the run: {seen}", highlight=False)

    _step(console, "C2", "Resting on that observation, it announces a maintenance window (runs) and "
                         "decides to migrate billing onto shard 09:")
    announce, migrate = run.decide("turn-2", [ANNOUNCE, MIGRATE_09], context=[HEALTH_09.id or ""])
    _said(console, ANNOUNCE, announce)
    run.executed(ANNOUNCE, "window announced to #ops for 02:00Z")
    _said(console, MIGRATE_09, migrate)
    console.print("   The migration waits for a human's go-ahead (the run pauses).", highlight=False)

    _step(console, "C3", "Meanwhile a monitor finds the health read came from a stale cache and "
                         "proposes retracting that observation; a human approves:")
    review = rippl.propose_retraction(seen, reason="served from a stale cache (replica r3 lagged "
                                      "40 min)", by="monitor:replica-lag")
    rippl.approve(review.id, by="alice@oncall")
    console.print(f"   {review.id} approved by alice@oncall", highlight=False)

    _step(console, "C4", "The run resumes; the paused migration is checked again before it runs:")
    vetoed = run.judge(MIGRATE_09)
    _said(console, MIGRATE_09, vetoed)

    _step(console, "C5", "The model is told why. It re-plans without the false observation: it reads "
                         "shard 07's health from the primary, and migrates there:")
    [fresh] = run.decide("turn-3", [HEALTH_07], context=[MIGRATE_09.id or ""],
                         told=[MIGRATE_09.id or ""])
    _said(console, HEALTH_07, fresh)
    run.executed(HEALTH_07, "shard 07: healthy, p99 5 ms (primary)")
    [moved] = run.decide("turn-4", [MIGRATE_07], context=[MIGRATE_09.id or "", HEALTH_07.id or ""],
                         told=[MIGRATE_09.id or ""])
    _said(console, MIGRATE_07, moved)
    run.executed(MIGRATE_07, "billing migrated to shard 07")

    _step(console, "C6", "What already ran on the false observation, for compensation "
                         "(`rippl compensations`):")
    for line in compensation_lines(rippl.compensations()):
        console.print(Text("   ") + line)
