"""Review-gate commands: propose, review list|show|approve|reject, receipts list|verify|export,
watch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from rippl_core.cli.app import EXIT_ERROR, app, command, connection, console
from rippl_core.cli.render import STATE_STYLE
from rippl_core.models import Receipt, ReceiptCheck, ReviewItem
from rippl_core.review.receipts import export_jsonl, read_jsonl, verify_chain

review_app = typer.Typer(help="The human review queue of proposed retractions.", no_args_is_help=True)
receipts_app = typer.Typer(help="The tamper-evident receipt chain.", no_args_is_help=True)
app.add_typer(review_app, name="review")
app.add_typer(receipts_app, name="receipts")


def print_review(item: ReviewItem) -> None:
    colour = {"pending": "yellow", "approved": "red", "rejected": "green"}[item.status]
    console.print(f"[bold]{item.id}[/bold] [{colour}]{item.status}[/]: retract {item.claim} — "
                  f"{item.reason}", highlight=False)
    console.print(f"  proposed by {item.proposed_by} at {item.proposed_at:%Y-%m-%d %H:%M:%S} UTC")
    if item.evidence:
        console.print(f"  evidence: {item.evidence}", highlight=False)
    console.print(f"  would invalidate {len(item.at_risk)} nodes: {', '.join(item.at_risk) or '-'}")
    if item.decided_by:
        console.print(f"  {item.status} by {item.decided_by} at {item.decided_at:%Y-%m-%d %H:%M:%S} UTC"
                      + (f": {item.note}" if item.note else ""), highlight=False)


def print_receipt(receipt: Receipt) -> None:
    signed = " signed" if receipt.signature else ""
    console.print(f"[bold]{receipt.id}[/bold] {receipt.kind} of {receipt.claim} by {receipt.actor}"
                  f" ({len(receipt.body.get('affected', []))} changes){signed}  sha256 {receipt.hash[:16]}…",
                  highlight=False)


@command("propose")
def propose_cmd(ctx: typer.Context, claim_id: str,
                reason: str = typer.Option(..., help="Why the claim is believed false."),
                by: str = typer.Option(..., help="Who (or which monitor) proposes it."),
                evidence: str | None = typer.Option(None, help="A pointer to the evidence.")) -> None:
    """Propose retracting a claim: it and what rests on it go at risk until a human decides."""
    with connection(ctx).open() as rippl:
        item = rippl.propose_retraction(claim_id, reason=reason, by=by, evidence=evidence)
    print_review(item)
    console.print(f"approve with: rippl review approve {item.id} --by NAME")


@command("list", on=review_app)
def review_list(ctx: typer.Context,
                status: str = typer.Option("pending", help="pending, approved, rejected or all.")) -> None:
    """List review items (pending by default)."""
    with connection(ctx).open() as rippl:
        items = rippl.reviews(None if status == "all" else status)
    if not items:
        console.print(f"no {status} reviews")
        return
    table = Table("review", "status", "claim", "reason", "proposed by", "at risk")
    for item in items:
        table.add_row(item.id, item.status, item.claim, item.reason, item.proposed_by,
                      str(len(item.at_risk)))
    console.print(table)


@command("show", on=review_app)
def review_show(ctx: typer.Context, review_id: str) -> None:
    """Show one review item and what it would invalidate."""
    with connection(ctx).open() as rippl:
        print_review(rippl.review(review_id))


@command("approve", on=review_app)
def review_approve(ctx: typer.Context, review_id: str,
                   by: str = typer.Option(..., help="The reviewer's identity."),
                   note: str | None = typer.Option(None, help="A note for the receipt."),
                   key: Path | None = typer.Option(None, help="File holding a raw 32-byte Ed25519 "
                                                              "private key in hex, to sign.")) -> None:
    """Approve a proposed retraction: commit the wave (receipted)."""
    signing_key = bytes.fromhex(key.read_text().strip()) if key else None
    with connection(ctx).open() as rippl:
        receipt = rippl.approve(review_id, by=by, note=note, signing_key=signing_key)
    print_receipt(receipt)
    for change in receipt.body.get("affected", []):
        console.print(f"  {change['id']}: {change['before']} -> "
                      f"[{STATE_STYLE.get(change['after'], 'white')}]{change['after']}[/]")


@command("reject", on=review_app)
def review_reject(ctx: typer.Context, review_id: str,
                  by: str = typer.Option(..., help="The reviewer's identity."),
                  note: str | None = typer.Option(None, help="A note for the receipt.")) -> None:
    """Reject a proposed retraction: the at-risk nodes return (receipted)."""
    with connection(ctx).open() as rippl:
        print_receipt(rippl.reject(review_id, by=by, note=note))


@command("list", on=receipts_app)
def receipts_list(ctx: typer.Context) -> None:
    """List the receipts of committed waves, oldest first."""
    with connection(ctx).open() as rippl:
        receipts = rippl.receipts()
    for receipt in receipts:
        print_receipt(receipt)
    console.print(f"{len(receipts)} receipts")


def print_check(check: ReceiptCheck) -> None:
    if check.ok:
        console.print(f"[green]chain intact[/]: {check.count} receipts verified")
        return
    console.print(f"[red]chain broken[/]: {len(check.problems)} problems in {check.count} receipts")
    for problem in check.problems:
        console.print(f"  {problem}", highlight=False)


@command("verify", on=receipts_app)
def receipts_verify(ctx: typer.Context,
                    file: Annotated[Path | None, typer.Option("--file", help="Verify an exported JSONL "
                                                              "chain instead of the database.")] = None,
                    keys: Annotated[Path | None, typer.Option(help="JSON file mapping actor -> trusted "
                                                              "Ed25519 public key (hex).")] = None) -> None:
    """Re-walk the chain; exit 1 on any broken link."""
    public_keys = json.loads(keys.read_text()) if keys else None
    if file is not None:
        check = verify_chain(read_jsonl(file), public_keys=public_keys)
    else:
        with connection(ctx).open() as rippl:
            check = rippl.verify_receipts(public_keys)
    print_check(check)
    if not check.ok:
        raise typer.Exit(EXIT_ERROR)


@command("export", on=receipts_app)
def receipts_export(ctx: typer.Context, file: Path) -> None:
    """Write the chain as JSON Lines, to keep and verify elsewhere."""
    with connection(ctx).open() as rippl:
        count = export_jsonl(rippl.receipts(), file)
    console.print(f"wrote {count} receipts to {file}")


@command("watch")
def watch_cmd(ctx: typer.Context,
              count: int | None = typer.Option(None, help="Stop after this many events.")) -> None:
    """Print status-change and review events live as they happen (Ctrl-C to stop)."""
    with connection(ctx).open() as rippl, rippl.subscribe() as stream:
        console.print(f"watching graph {rippl.graph!r}…")
        seen = 0
        try:
            for event in stream:
                what = event.node or event.review or f"{event.agent} on {event.topic}"
                change = f"{event.before} -> {event.after}" if event.before else (event.claim or "")
                console.print(f"{event.at:%H:%M:%S} {event.type:<17} {what} {change}", highlight=False)
                seen += 1
                if count is not None and seen >= count:
                    break
        except KeyboardInterrupt:
            pass
