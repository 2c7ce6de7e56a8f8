"""The capture story: nothing is declared in advance; Rippl records what an agent's calls rest on
as it runs, vetoes a call whose observation was found false while the agent paused, keeps it vetoed
when the agent simply asks again, follows the observation through a report into a second agent's
run, lets a person (not the agent) lift one veto with an override, and lists what already ran on it
for compensation.

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

SCOPE = "thread-42"  # the runs that hand messages to one another
RUN = "ops-agent/thread-42"
DBA = "dba-agent/thread-42"
REPORT = "msg-report-1"  # the ops agent's status report, which the DBA agent reads
HEALTH_09 = ToolCall(name="get_shard_health", args={"shard": "09"}, id="call-1")
ANNOUNCE = ToolCall(name="announce_window", args={"shard": "09", "at": "02:00Z"}, id="call-2")
MIGRATE_09 = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "09"}, id="call-3")
HEALTH_07 = ToolCall(name="get_shard_health", args={"shard": "07"}, id="call-4")
MIGRATE_07 = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "07"}, id="call-5")
RETRY_09 = ToolCall(name="migrate_tables", args={"shard": "09", "table": "billing"}, id="call-6")
RESIZE_09 = ToolCall(name="resize_replicas", args={"shard": "09", "replicas": 3}, id="dba-call-1")


def step(console: Console, number: str, text: str) -> None:
    console.print(styled("\n[bold cyan]{}.[/bold cyan] {}", number, text))


def label(call: ToolCall) -> str:
    return f"{call.name}({', '.join(f'{k}={v}' for k, v in call.args.items())})"


def said(console: Console, call: ToolCall, verdict: Verdict) -> None:
    if verdict.allowed:
        console.print(styled("   {} -> [green]allowed[/green]", label(call)))
        return
    console.print(styled("   {} -> [bold red]VETOED[/bold red] before it runs", label(call)))
    for line in verdict.explain().splitlines():
        console.print(Text(f"     {line}"))


def tell_story(rippl: Rippl, console: Console) -> None:
    """The third story: provenance captured from the agents' own runs."""
    run = rippl.run(RUN, agent="ops-agent", framework="demo", scope=SCOPE)
    dba = rippl.run(DBA, agent="dba-agent", framework="demo", scope=SCOPE)
    step(console, "C1", "An ops agent starts a run. Nothing about it is declared in the graph: "
                         "Rippl records what each call rests on as it happens.")
    [verdict] = run.decide("turn-1", [HEALTH_09])
    said(console, HEALTH_09, verdict)
    seen = run.executed(HEALTH_09, "shard 09: healthy, p99 4 ms (served from replica r3)")
    console.print(f"   its result is an observation of the run: {seen}", highlight=False)

    step(console, "C2", "Resting on that observation, it announces a maintenance window (runs) and "
                         "decides to migrate billing onto shard 09:")
    announce, migrate = run.decide("turn-2", [ANNOUNCE, MIGRATE_09], context=[HEALTH_09.id or ""])
    said(console, ANNOUNCE, announce)
    run.executed(ANNOUNCE, "window announced to #ops for 02:00Z")
    said(console, MIGRATE_09, migrate)
    console.print("   The migration waits for a human's go-ahead (the run pauses).", highlight=False)

    step(console, "C3", "The ops agent posts a status report ('shard 09 is healthy; billing moves "
                         "there at 02:00Z'). A DBA agent reads it in its own run and plans to resize "
                         "shard 09's replicas:")
    run.wrote(REPORT, context=[HEALTH_09.id or "", "turn-2"])
    [resize] = dba.decide("dba-turn-1", [RESIZE_09], context=[REPORT])
    said(console, RESIZE_09, resize)
    console.print("   The report carries the health reading into the DBA agent's run.",
                  highlight=False)

    step(console, "C4", "Meanwhile a monitor finds the health read came from a stale cache and "
                         "proposes retracting that observation; a human approves:")
    review = rippl.propose_retraction(seen, reason="served from a stale cache (replica r3 lagged "
                                      "40 min)", by="monitor:replica-lag")
    rippl.approve(review.id, by="alice@oncall")
    console.print(f"   {review.id} approved by alice@oncall", highlight=False)

    step(console, "C5", "The run resumes; the paused migration is checked again before it runs:")
    vetoed = run.judge(MIGRATE_09)
    said(console, MIGRATE_09, vetoed)

    step(console, "C6", "The model reads the veto and simply asks again, the arguments in another "
                         "order. A veto binds the action, not the message:")
    [retried] = run.decide("turn-3", [RETRY_09], context=[MIGRATE_09.id or ""],
                           told=[MIGRATE_09.id or ""])
    said(console, RETRY_09, retried)

    step(console, "C7", "It re-plans without the false observation: it reads shard 07's health "
                         "from the primary, and migrates there:")
    [fresh] = run.decide("turn-4", [HEALTH_07], context=[MIGRATE_09.id or "", RETRY_09.id or ""],
                         told=[MIGRATE_09.id or "", RETRY_09.id or ""])
    said(console, HEALTH_07, fresh)
    run.executed(HEALTH_07, "shard 07: healthy, p99 5 ms (primary)")
    [moved] = run.decide("turn-5", [MIGRATE_07], context=[MIGRATE_09.id or "", HEALTH_07.id or ""],
                         told=[MIGRATE_09.id or ""])
    said(console, MIGRATE_07, moved)
    run.executed(MIGRATE_07, "billing migrated to shard 07")

    step(console, "C8", "The DBA agent's resize comes up. It never read the health check itself, "
                         "but the report it acts on carried it across:")
    blocked = dba.judge(RESIZE_09)
    said(console, RESIZE_09, blocked)

    step(console, "C9", "Only a person lifts a veto. The on-call engineer checks shard 09's "
                         "replicas by hand; the DBA agent proposes a one-call override and bob "
                         "approves it (`rippl override`, `rippl review approve`):")
    proposal = rippl.override(RESIZE_09, run=DBA, reason="replica count verified by hand on the "
                              "primary", by="dba-agent")
    receipt = rippl.approve(proposal.id, by="bob@oncall")
    console.print(f"   {proposal.id} approved by bob@oncall (receipt {receipt.id})",
                  highlight=False)
    once = RESIZE_09.model_copy(update={"id": "dba-call-2"})
    [allowed] = dba.decide("dba-turn-2", [once], context=[REPORT, RESIZE_09.id or ""],
                           told=[RESIZE_09.id or ""])
    said(console, once, allowed)
    dba.executed(once, "shard 09 resized to 3 replicas")
    twice = RESIZE_09.model_copy(update={"id": "dba-call-3"})
    [again] = dba.decide("dba-turn-3", [twice], context=[REPORT, RESIZE_09.id or ""],
                         told=[RESIZE_09.id or ""])
    console.print("   and the same call once more: the override was for one call.",
                  highlight=False)
    said(console, twice, again)

    step(console, "C10", "What already ran on the false observation, for compensation "
                          "(`rippl compensations`; the overridden resize is listed with its "
                          "override, `rippl overrides`):")
    for line in compensation_lines(rippl.compensations()):
        console.print(Text("   ") + line)
