"""Belief-time commands: believe, ask, beliefs, timeline, why, what-if, history."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

import typer
from rich.table import Table

from rippl_core.beliefs.models import Belief, BeliefChange, WhatIf
from rippl_core.cli.app import command, connection, console
from rippl_core.cli.render import STATE_STYLE
from rippl_core.models import StatusChange

_AS_OF = typer.Option(None, "--as-of", help="Valid time: when (ISO-8601 with offset, e.g. "
                                            "2026-10-08T00:00:00Z). Default now.")
_KNOWN_AT = typer.Option(None, "--known-at", help="Transaction time: as Rippl knew it then. "
                                                  "Default now.")
_JSON = typer.Option(False, "--json", help="Print JSON.")


def when(value: datetime | None, *, open_end: str = "now") -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else open_end


def belief_line(belief: Belief | None) -> str:
    """A belief in one line of console markup."""
    if belief is None:
        return "[dim]nothing[/dim]"
    style = STATE_STYLE[belief.claim_state]
    line = f"[bold]{belief.claim}[/bold] {belief.text} [{style}]({belief.claim_status})[/]"
    if belief.evidence:
        line += f" [dim]evidence: {', '.join(belief.evidence)}[/dim]"
    if belief.retracted_evidence:
        line += f" [red]retracted evidence: {', '.join(belief.retracted_evidence)}[/red]"
    return line


def timeline_table(beliefs: Sequence[Belief], title: str | None = None) -> Table:
    """A timeline as a table: valid interval, claim, status, evidence, when it was recorded."""
    table = Table("from", "until", "claim", "status", "evidence", "recorded", title=title,
                  title_justify="left")
    for b in beliefs:
        status = f"[{STATE_STYLE[b.claim_state]}]{b.claim_status}[/]"
        evidence = ", ".join(f"[red]{e}[/red]" if e in b.retracted_evidence else e
                             for e in b.evidence)
        table.add_row(when(b.valid_from), when(b.valid_to, open_end="…"),
                      f"{b.claim} {b.text}", status, evidence or "-",
                      when(b.first_recorded_at or b.recorded_at))
    return table


def _mermaid_text(text: str) -> str:
    """Gantt task names end at ':' and lines at ';' or '#': replace them."""
    for bad, good in ((":", " -"), (";", ","), ("#", "no. "), ("\n", " ")):
        text = text.replace(bad, good)
    return text.strip()


def mermaid_timeline(agent: str, topic: str, beliefs: Sequence[Belief], *,
                     now: datetime) -> str:
    """A Mermaid gantt chart of a timeline; a belief resting on a retracted claim is marked crit,
    the belief still held is active."""
    lines = ["gantt", f"    title {_mermaid_text(f'{agent} on {topic}')}",
             "    dateFormat YYYY-MM-DDTHH:mm", "    axisFormat %b %d", "    section beliefs"]
    fmt = "%Y-%m-%dT%H:%M"
    for i, b in enumerate(beliefs):
        tags = ["crit"] if b.rests_on_retracted else []
        if b.valid_to is None:
            tags.append("active")
        end = b.valid_to or max(now, b.valid_from)
        name = _mermaid_text(f"{b.claim} {b.text}")
        lines.append(f"    {name} :{', '.join([*tags, f'b{i}'])}, {b.valid_from.strftime(fmt)}, "
                     f"{end.strftime(fmt)}")
    return "\n".join(lines)


def _dump(model: object) -> None:
    if model is None:
        console.print_json("null")
    elif isinstance(model, list):
        console.print_json(json.dumps([m.model_dump(mode="json") for m in model]))
    else:
        console.print_json(model.model_dump_json())  # type: ignore[attr-defined]


@command("believe")
def believe_cmd(ctx: typer.Context, agent: str, claim_id: str,
                topic: str = typer.Option(..., help="What the belief is about."),
                valid_from: str | None = typer.Option(None, "--valid-from",
                                                      help="Since when it is held (default now)."),
                evidence: list[str] = typer.Option([], "--evidence", help="A source behind it "
                                                                          "(repeatable)."),
                note: str | None = typer.Option(None, help="A note kept with the belief.")) -> None:
    """Record that an agent adopts a claim about a topic (closing what it believed before)."""
    with connection(ctx).open() as rippl:
        belief = rippl.believe(agent, claim_id, topic=topic, valid_from=valid_from,
                               evidence=evidence, note=note)
    console.print(f"{agent} believes {belief_line(belief)} since {when(belief.valid_from)}",
                  highlight=False)


@command("ask")
def ask_cmd(ctx: typer.Context, agent: str, topic: str, as_of: str | None = _AS_OF,
            known_at: str | None = _KNOWN_AT, json_out: bool = _JSON) -> None:
    """What AGENT believed about TOPIC (at --as-of, as known at --known-at)."""
    with connection(ctx).open() as rippl:
        belief = rippl.ask(agent, topic, as_of=as_of, known_at=known_at)
    if json_out:
        _dump(belief)
        return
    if belief is None:
        console.print(f"{agent} believed nothing about {topic} then.", highlight=False)
        return
    until = f" until {when(belief.valid_to)}" if belief.valid_to else ""
    console.print(f"{agent} believes {belief_line(belief)}", highlight=False)
    console.print(f"  since {when(belief.valid_from)}{until}; recorded "
                  f"{when(belief.recorded_at)}", highlight=False)
    if belief.note:
        console.print(f"  note: {belief.note}", highlight=False)
    if belief.rests_on_retracted:
        console.print(f"  [red]rests on a retracted claim: {belief.claim} is "
                      f"{belief.claim_status}[/red]", highlight=False)


@command("beliefs")
def beliefs_cmd(ctx: typer.Context, agent: str, as_of: str | None = _AS_OF,
                known_at: str | None = _KNOWN_AT, json_out: bool = _JSON) -> None:
    """Everything AGENT believed (one belief per topic)."""
    with connection(ctx).open() as rippl:
        beliefs = rippl.beliefs(agent, as_of=as_of, known_at=known_at)
    if json_out:
        _dump(beliefs)
        return
    for belief in beliefs:
        console.print(f"[bold]{belief.topic}[/bold]: {belief_line(belief)}", highlight=False)
    if not beliefs:
        console.print(f"{agent} believed nothing then.", highlight=False)


@command("timeline")
def timeline_cmd(ctx: typer.Context, agent: str, topic: str, known_at: str | None = _KNOWN_AT,
                 format: str = typer.Option("table", help="table, json or mermaid.")) -> None:
    """Every change of AGENT's belief about TOPIC, with its evidence."""
    if format not in ("table", "json", "mermaid"):
        raise typer.BadParameter("format must be table, json or mermaid")
    with connection(ctx).open() as rippl:
        beliefs = rippl.timeline(agent, topic, known_at=known_at)
    if format == "json":
        _dump(beliefs)
    elif format == "mermaid":
        print(mermaid_timeline(agent, topic, beliefs, now=datetime.now().astimezone()))
    else:
        console.print(timeline_table(beliefs, f"{agent} on {topic}"))


def print_change(change: BeliefChange) -> None:
    console.print(f"On [bold]{when(change.changed_at)}[/bold] {change.agent} changed its belief "
                  f"about {change.topic}:", highlight=False)
    console.print(f"  before: {belief_line(change.before)}", highlight=False)
    console.print(f"  after:  {belief_line(change.after)}", highlight=False)
    if change.new_evidence:
        console.print(f"  evidence that arrived then: {', '.join(change.new_evidence)}",
                      highlight=False)
    if change.retracted_evidence:
        console.print(f"  [red]retracted evidence: {', '.join(change.retracted_evidence)}[/red]",
                      highlight=False)


@command("why")
def why_cmd(ctx: typer.Context, agent: str, topic: str, at: str,
            known_at: str | None = _KNOWN_AT, json_out: bool = _JSON) -> None:
    """Why AGENT's belief about TOPIC changed: the change nearest AT."""
    with connection(ctx).open() as rippl:
        change = rippl.why_changed(agent, topic, at, known_at=known_at)
    if json_out:
        _dump(change)
    else:
        print_change(change)


def print_what_if(result: WhatIf) -> None:
    console.print(f"As of {when(result.as_of)}:", highlight=False)
    console.print(f"  {result.agent} believes       {belief_line(result.actual)}", highlight=False)
    console.print(f"  without {', '.join(result.without)}: {belief_line(result.counterfactual)}",
                  highlight=False)
    for belief in result.dropped:
        console.print(f"  [dim]would not have adopted {belief.claim} (from "
                      f"{when(belief.valid_from)})[/dim]", highlight=False)
    if result.lost_claims:
        console.print(f"  claims that would lose all support: {', '.join(result.lost_claims)}",
                      highlight=False)


@command("what-if")
def what_if_cmd(ctx: typer.Context, agent: str, topic: str,
                without: list[str] = typer.Option(..., "--without",
                                                  help="An evidence source to leave out "
                                                       "(repeatable, or comma-separated)."),
                as_of: str | None = _AS_OF, known_at: str | None = _KNOWN_AT,
                json_out: bool = _JSON) -> None:
    """What AGENT would believe about TOPIC had some evidence never existed (read-only)."""
    sources = [s.strip() for item in without for s in item.split(",") if s.strip()]
    with connection(ctx).open() as rippl:
        result = rippl.what_if(agent, topic, without=sources, as_of=as_of, known_at=known_at)
    if json_out:
        _dump(result)
    else:
        print_what_if(result)


def history_table(changes: Sequence[StatusChange], title: str) -> Table:
    table = Table("valid from", "recorded", "change", "cause", title=title, title_justify="left")
    for c in changes:
        after = f"[{STATE_STYLE[c.after]}]{c.after_status}[/]"
        change = f"{c.before_status} -> {after}" if c.before is not None else f"created {after}"
        table.add_row(when(c.valid_from), when(c.recorded_at), change,
                      (c.cause + (f" ({c.review})" if c.review else "")) if c.cause else "-")
    return table


@command("history")
def history_cmd(ctx: typer.Context, node_id: str, known_at: str | None = _KNOWN_AT,
                json_out: bool = _JSON) -> None:
    """Every status change of a node, with valid and transaction times."""
    with connection(ctx).open() as rippl:
        changes = rippl.history(node_id, known_at=known_at)
    if json_out:
        console.print_json(json.dumps([c.model_dump(mode="json") | {"after_status": c.after_status}
                                       for c in changes]))
    else:
        console.print(history_table(changes, f"history of {node_id}"))

