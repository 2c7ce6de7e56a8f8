"""Belief-time commands: believe, ask, beliefs, timeline, why, what-if, history."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from rippl_core.cli.app import (
    ChartFormat,
    ChartOutput,
    Output,
    OutputFormat,
    command,
    connection,
    console,
    print_json,
    styled,
    time_option,
)
from rippl_core.cli.render import STATE_STYLE, mermaid_text

if TYPE_CHECKING:
    from rich.table import Table

    from rippl_core.beliefs.models import Belief, BeliefChange, WhatIf
    from rippl_core.models import StatusChange

_AS_OF = typer.Option(None, "--as-of", callback=time_option,
                      help="Valid time: when (ISO-8601 with offset, e.g. 2026-10-08T00:00:00Z). "
                           "Default now.")
_KNOWN_AT = typer.Option(None, "--known-at", callback=time_option,
                         help="Transaction time: as Rippl knew it then. Default now.")


def when(value: datetime | None, *, open_end: str = "now") -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else open_end


def belief_line(belief: Belief | None) -> Text:
    """A belief in one styled line."""
    if belief is None:
        return styled("[dim]nothing[/dim]")
    style = STATE_STYLE[belief.claim_state]
    line = styled(f"[bold]{{}}[/bold] {{}} [{style}]({{}})[/]", belief.claim, belief.text,
                  belief.claim_status)
    if belief.claim_state_now is not None and belief.claim_state_now is not belief.claim_state:
        line += styled(f" [{STATE_STYLE[belief.claim_state_now]}](now {{}})[/]",
                       belief.claim_status_now)
    if belief.evidence:
        line += styled(" [dim]evidence: {}[/dim]", ", ".join(belief.evidence))
    if belief.retracted_evidence:
        line += styled(" [red]retracted evidence: {}[/red]", ", ".join(belief.retracted_evidence))
    return line


def timeline_table(beliefs: Sequence[Belief], title: str | None = None) -> Table:
    """A timeline as a table: valid interval, claim, status, evidence, when it was recorded."""
    from rich.table import Table

    table = Table("from", "until", "claim", "status", "evidence", "recorded", title=title,
                  title_justify="left")
    for b in beliefs:
        status = Text(b.claim_status, style=STATE_STYLE[b.claim_state])
        evidence = Text(", ").join(Text(e, style="red" if e in b.retracted_evidence else "")
                                   for e in b.evidence) if b.evidence else Text("-")
        table.add_row(when(b.valid_from), when(b.valid_to, open_end="…"),
                      f"{b.claim} {b.text}", status, evidence,
                      when(b.first_recorded_at or b.recorded_at))
    return table


def mermaid_timeline(agent: str, topic: str, beliefs: Sequence[Belief], *,
                     now: datetime) -> str:
    """A Mermaid gantt chart of a timeline; a belief resting on a retracted claim is marked crit,
    the belief still held is active."""
    lines = ["gantt", f"    title {mermaid_text(f'{agent} on {topic}')}",
             "    dateFormat YYYY-MM-DDTHH:mm", "    axisFormat %b %d", "    section beliefs"]
    fmt = "%Y-%m-%dT%H:%M"
    for i, b in enumerate(beliefs):
        tags = ["crit"] if b.rests_on_retracted else []
        if b.valid_to is None:
            tags.append("active")
        end = b.valid_to or max(now, b.valid_from)
        name = mermaid_text(f"{b.claim} {b.text}")
        lines.append(f"    {name} :{', '.join([*tags, f'b{i}'])}, {b.valid_from.strftime(fmt)}, "
                     f"{end.strftime(fmt)}")
    return "\n".join(lines)


def _dump(model: Any) -> None:
    if model is None:
        print_json(None)
    elif isinstance(model, list):
        print_json([m.model_dump(mode="json") for m in model])
    else:
        print_json(model.model_dump(mode="json"))


@command("believe")
def believe_cmd(ctx: typer.Context, agent: str, claim_id: str,
                topic: str = typer.Option(..., help="What the belief is about."),
                valid_from: str | None = typer.Option(None, "--valid-from", callback=time_option,
                                                      help="Since when it is held (default now)."),
                evidence: list[str] = typer.Option([], "--evidence", help="A source behind it "
                                                                          "(repeatable)."),
                note: str | None = typer.Option(None, help="A note kept with the belief.")) -> None:
    """Record that an agent adopts a claim about a topic (closing what it believed before)."""
    with connection(ctx).open() as rippl:
        belief = rippl.believe(agent, claim_id, topic=topic, valid_from=valid_from,
                               evidence=evidence, note=note)
    console.print(styled("{} believes {} since {}", agent, belief_line(belief),
                         when(belief.valid_from)))


@command("ask")
def ask_cmd(ctx: typer.Context, agent: str, topic: str, as_of: str | None = _AS_OF,
            known_at: str | None = _KNOWN_AT, format: OutputFormat = Output.table) -> None:
    """What AGENT believed about TOPIC (at --as-of, as known at --known-at)."""
    with connection(ctx).open() as rippl:
        belief = rippl.ask(agent, topic, as_of=as_of, known_at=known_at)
    if format is Output.json:
        _dump(belief)
        return
    if belief is None:
        console.print(f"{agent} believed nothing about {topic} then.")
        return
    until = f" until {when(belief.valid_to)}" if belief.valid_to else ""
    console.print(styled("{} believes {}", agent, belief_line(belief)))
    console.print(f"  since {when(belief.valid_from)}{until}; recorded {when(belief.recorded_at)}")
    if belief.note:
        console.print(f"  note: {belief.note}")
    if belief.rests_on_retracted:
        console.print(styled("  [red]rests on a retracted claim: {} is {}[/red]", belief.claim,
                             belief.claim_status))


@command("beliefs")
def beliefs_cmd(ctx: typer.Context, agent: str, as_of: str | None = _AS_OF,
                known_at: str | None = _KNOWN_AT, format: OutputFormat = Output.table) -> None:
    """Everything AGENT believed (one belief per topic)."""
    with connection(ctx).open() as rippl:
        beliefs = rippl.beliefs(agent, as_of=as_of, known_at=known_at)
    if format is Output.json:
        _dump(beliefs)
        return
    for belief in beliefs:
        console.print(styled("[bold]{}[/bold]: {}", belief.topic, belief_line(belief)))
    if not beliefs:
        console.print(f"{agent} believed nothing then.")


_LAST = typer.Option(None, "--last", min=1,
                     help="Only the latest N intervals (a long timeline reads faster). Default all.")
_BEFORE = typer.Option(None, "--before", callback=time_option,
                       help="With --last: the latest N intervals starting before this time "
                            "(page back with the first row's start).")


@command("timeline")
def timeline_cmd(ctx: typer.Context, agent: str, topic: str, known_at: str | None = _KNOWN_AT,
                 format: ChartFormat = ChartOutput.table, last: int | None = _LAST,
                 before: str | None = _BEFORE) -> None:
    """Every change of AGENT's belief about TOPIC, with its evidence."""
    if before is not None and last is None:
        raise typer.BadParameter("--before pages the timeline: give --last N too", param_hint="--before")
    with connection(ctx).open() as rippl:
        beliefs = rippl.timeline(agent, topic, known_at=known_at, limit=last, before=before)
    if format is ChartOutput.json:
        _dump(beliefs)
    elif format is ChartOutput.mermaid:
        print(mermaid_timeline(agent, topic, beliefs, now=datetime.now().astimezone()))
    else:
        console.print(timeline_table(beliefs, f"{agent} on {topic}"))


def print_change(change: BeliefChange) -> None:
    console.print(styled("On [bold]{}[/bold] {} changed its belief about {}:",
                         when(change.changed_at), change.agent, change.topic))
    console.print(styled("  before: {}", belief_line(change.before)))
    console.print(styled("  after:  {}", belief_line(change.after)))
    if change.new_evidence:
        console.print(f"  evidence that arrived then: {', '.join(change.new_evidence)}")
    if change.retracted_evidence:
        console.print(styled("  [red]retracted evidence: {}[/red]",
                             ", ".join(change.retracted_evidence)))


@command("why")
def why_cmd(ctx: typer.Context, agent: str, topic: str, at: str,
            known_at: str | None = _KNOWN_AT, format: OutputFormat = Output.table) -> None:
    """Why AGENT's belief about TOPIC changed: the change nearest AT."""
    time_option(at)
    with connection(ctx).open() as rippl:
        change = rippl.why_changed(agent, topic, at, known_at=known_at)
    if format is Output.json:
        _dump(change)
    else:
        print_change(change)


def print_what_if(result: WhatIf) -> None:
    console.print(f"As of {when(result.as_of)}:")
    console.print(styled("  {} believes       {}", result.agent, belief_line(result.actual)))
    console.print(styled("  without {}: {}", ", ".join(result.without),
                         belief_line(result.counterfactual)))
    for belief in result.dropped:
        console.print(styled("  [dim]would not have adopted {} (from {})[/dim]", belief.claim,
                             when(belief.valid_from)))
    if result.lost_claims:
        console.print(f"  claims that would lose all support: {', '.join(result.lost_claims)}")


@command("what-if")
def what_if_cmd(ctx: typer.Context, agent: str, topic: str,
                without: list[str] = typer.Option(..., "--without",
                                                  help="An evidence source to leave out "
                                                       "(repeatable, or comma-separated)."),
                as_of: str | None = _AS_OF, known_at: str | None = _KNOWN_AT,
                format: OutputFormat = Output.table) -> None:
    """What AGENT would believe about TOPIC had some evidence never existed (read-only)."""
    sources = [s.strip() for item in without for s in item.split(",") if s.strip()]
    with connection(ctx).open() as rippl:
        result = rippl.what_if(agent, topic, without=sources, as_of=as_of, known_at=known_at)
    if format is Output.json:
        _dump(result)
    else:
        print_what_if(result)


def history_table(changes: Sequence[StatusChange], title: str) -> Table:
    from rich.table import Table

    table = Table("valid from", "recorded", "change", "cause", title=title, title_justify="left")
    for c in changes:
        after = Text(c.after_status, style=STATE_STYLE[c.after])
        change = Text(f"{c.before_status} -> " if c.before is not None else "created ") + after
        table.add_row(when(c.valid_from), when(c.recorded_at), change,
                      (c.cause + (f" ({c.review})" if c.review else "")) if c.cause else "-")
    return table


@command("history")
def history_cmd(ctx: typer.Context, node_id: str, known_at: str | None = _KNOWN_AT,
                format: OutputFormat = Output.table) -> None:
    """Every status change of a node, with valid and transaction times."""
    with connection(ctx).open() as rippl:
        changes = rippl.history(node_id, known_at=known_at)
    if format is Output.json:
        print_json([c.model_dump(mode="json") | {"after_status": c.after_status} for c in changes])
    else:
        console.print(history_table(changes, f"history of {node_id}"))

