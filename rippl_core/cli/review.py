"""Review-gate commands: propose, override, overrides, review list|show|approve|reject, receipts
list|verify|export, watch."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from rippl_core.cli.app import (
    EXIT_ERROR,
    Output,
    OutputFormat,
    app,
    command,
    connection,
    console,
    errors,
    print_json,
    public_keys_file,
    signing_key_file,
    styled,
    time_option,
)
from rippl_core.cli.render import STATE_STYLE
from rippl_core.errors import InvalidInputError
from rippl_core.vocabulary import State

if TYPE_CHECKING:
    from rippl_core.models import (
        Contradiction,
        Receipt,
        ReceiptCheck,
        ReviewItem,
        ReviewStatus,
        TreeHead,
    )

review_app = typer.Typer(help="The human review queue: proposed retractions and overrides.",
                         no_args_is_help=True)
receipts_app = typer.Typer(help="The tamper-evident receipt chain.", no_args_is_help=True)
app.add_typer(review_app, name="review")
app.add_typer(receipts_app, name="receipts")


KEY = Annotated[Path | None, typer.Option(
    help="File holding a raw 32-byte Ed25519 private key in hex, to sign.")]


def print_review(item: ReviewItem) -> None:
    colour = {"pending": "yellow", "approved": "red", "rejected": "green"}[item.status]
    if item.kind == "override":
        call = item.call
        shown = f"{call.name}({json.dumps(call.args)})" if call else item.action or "?"
        console.print(styled(f"[bold]{{}}[/bold] [{colour}]{{}}[/]: override the veto of {{}} in run "
                             "{} (one call) — {}", item.id, item.status, shown, item.run or "?",
                             item.reason))
        console.print(f"  despite the retracted premises: {', '.join(item.claims)}")
    elif item.kind == "provenance":
        query = item.query.describe() if item.query is not None else "?"
        console.print(styled(f"[bold]{{}}[/bold] [{colour}]{{}}[/]: retract by provenance ({{}}) — {{}}",
                             item.id, item.status, query, item.reason))
        console.print(f"  {_count(item.claims, 'source')}: {', '.join(item.claims)}")
        console.print(f"  {_count(item.matched, 'claim')} they support: {', '.join(item.matched) or '-'}")
    else:
        console.print(styled(f"[bold]{{}}[/bold] [{colour}]{{}}[/]: retract {{}} — {{}}",
                             item.id, item.status, item.claim, item.reason))
    monitor = f" (monitor {item.monitor})" if item.monitor else ""
    console.print(f"  proposed by {item.proposed_by}{monitor} at "
                  f"{item.proposed_at:%Y-%m-%d %H:%M:%S} UTC")
    if item.contradiction is not None:
        for line in contradiction_lines(item.contradiction):
            console.print(line)
    elif item.evidence:
        console.print(f"  evidence: {item.evidence}")
    if item.kind != "override":
        console.print(f"  would invalidate {len(item.at_risk)} nodes: {', '.join(item.at_risk) or '-'}")
    if item.kind == "provenance":
        console.print(f"  survive through another source: {', '.join(item.survives) or '-'}")
    if item.decided_by and item.decided_at:
        console.print(f"  {item.status} by {item.decided_by} at {item.decided_at:%Y-%m-%d %H:%M:%S} UTC"
                      + (f": {item.note}" if item.note else ""))


def contradiction_lines(found: Contradiction) -> list[Text]:
    """The evidence of a contradiction: who found it, both claims with their sources."""
    by = f"the model {found.model}" if found.detector == "model" and found.model else \
        f"the {found.detector} detector"
    lines = [Text(f"  contradiction found by {by}" + (f" on key {found.key}" if found.key else ""))]
    for label, side in (("old (proposed for retraction)", found.old), ("new", found.new)):
        value = f" [{side.key} = {side.value}]" if side.value is not None else ""
        lines.append(Text(f"    {label}: {side.id} {side.text!r}{value}"))
        sources = "; ".join(f"{s['id']} {s.get('title', '')}".strip()
                            + (f" <{s['uri']}>" if s.get("uri") else "") for s in side.sources)
        lines.append(Text(f"      sources: {sources or 'none'}"))
    return lines


def print_receipt(receipt: Receipt) -> None:
    signed = " signed" if receipt.signature or receipt.body.get("statement") else ""
    console.print(styled("[bold]{}[/bold] {} of {} by {} ({} changes){}  sha256 {}…", receipt.id,
                         receipt.kind, receipt.claim or receipt.body.get("reviewer"), receipt.actor,
                         len(receipt.body.get("affected", [])), signed, receipt.hash[:16]))


def _count(items: list[str], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _args_json(value: str | None) -> dict[str, object] | None:
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not JSON ({exc.msg}); give an object such as "
                                 "'{\"url\": \"https://evil.example/a\"}'") from None
    if not isinstance(parsed, dict):
        raise typer.BadParameter("give a JSON object of argument names to values (a subset of "
                                 "the call's arguments)")
    return parsed


def _query(help: str, *names: str, callback: Any = None) -> Any:
    """An option of `rippl propose`'s provenance query."""
    return typer.Option(None, *names, show_default=False, callback=callback,
                        help=f"Provenance: {help}")


@command("propose")
def propose_cmd(
        ctx: typer.Context,
        claim_id: Annotated[str | None, typer.Argument(
            help="The claim to retract; or none, and a provenance query with the options below.",
            show_default=False)] = None,
        reason: str = typer.Option(..., help="Why the claim (or what the query matches) is "
                                             "believed false."),
        by: str = typer.Option(..., help="Who (or which monitor) proposes it."),
        evidence: str | None = typer.Option(None, help="A pointer to the evidence."),
        tool: str | None = _query("readings of this tool."),
        args_json: str | None = _query("readings whose arguments include these (a JSON object).",
                                       "--args-json"),
        since: str | None = _query("read at or after this time (ISO 8601 with an offset).",
                                   callback=time_option),
        until: str | None = _query("read before this time.", callback=time_option),
        run: str | None = _query("read by this run."),
        agent: str | None = _query("read by a run of this agent."),
        framework: str | None = _query("read by a run of this framework."),
        source_kind: str | None = _query("sources of this kind (tool_result for readings; run for "
                                         "a run's own root)."),
        source_prefix: str | None = _query("sources whose id or uri, or a reading one of whose "
                                           "arguments, starts with this (https://evil.example/)."),
        monitor: str | None = typer.Option(None, show_default=False, help="The monitor proposing "
                                           "(recorded with the review and its events)."),
        format: OutputFormat = Output.table) -> None:
    """Propose retracting a claim, or every source a provenance query matches (one review): it and
    what rests on it go at risk until a human decides."""
    args = _args_json(args_json)
    query = {"tool": tool, "args": args, "since": since, "until": until, "run": run,
             "agent": agent, "framework": framework, "source_kind": source_kind,
             "source_prefix": source_prefix}
    given = sorted(k for k, v in query.items() if v is not None)
    if claim_id is not None and given:
        raise InvalidInputError("give a claim id or a provenance query, not both",
                                cli="give a CLAIM_ID or provenance options (--tool, --since...), "
                                    "not both")
    if claim_id is None and not given:
        raise InvalidInputError("give a claim id or a provenance query",
                                cli="give the CLAIM_ID to retract, or a provenance query (--tool, "
                                    "--args-json, --since, --until, --run, --agent, --framework, "
                                    "--source-kind, --source-prefix)")
    with connection(ctx).open() as rippl:
        if claim_id is not None:
            item = rippl.propose_retraction(claim_id, reason=reason, by=by, evidence=evidence)
        else:
            if format is Output.table:
                errors.print(f"matching sources ({', '.join(given)})…")
            item = rippl.propose_retraction_where(
                reason=reason, by=by, evidence=evidence, monitor=monitor, tool=tool, args=args,
                since=since, until=until, run=run, agent=agent, framework=framework,
                source_kind=source_kind, source_prefix=source_prefix)
    if format is Output.json:
        print_json(item.model_dump(mode="json"))
        return
    print_review(item)
    console.print(f"approve with: rippl review approve {item.id} --by NAME")


@command("override")
def override_cmd(ctx: typer.Context, action: str,
                 reason: str = typer.Option(..., help="Why this one call may run anyway."),
                 by: str = typer.Option(..., help="Who proposes it (an agent may; a reviewer "
                                                  "approves)."),
                 run: str | None = typer.Option(None, help="The run whose call it is (for a "
                                                           "declared action).")) -> None:
    """Propose a one-call override of a veto: once a reviewer approves it, the next call of that
    run with the vetoed action's tool and arguments runs despite its retracted premises, once."""
    with connection(ctx).open() as rippl:
        item = rippl.override(action, reason=reason, by=by, run=run)
    print_review(item)
    console.print(f"approve with: rippl review approve {item.id} --by NAME")


@command("overrides")
def overrides_cmd(ctx: typer.Context, format: OutputFormat = Output.table) -> None:
    """Approved overrides: the call each let run, who proposed and approved it, its receipt."""
    with connection(ctx).open() as rippl:
        found = rippl.overrides()
    if format is Output.json:
        print_json([o.model_dump(mode="json") for o in found])
        return
    for o in found:
        call = f"{o.call.name}({json.dumps(o.call.args)})" if o.call else "?"
        used = (f"ran as {o.used_by} at {o.executed_at:%Y-%m-%d %H:%M:%S} UTC" if o.executed_at
                else f"taken by {o.used_by}, not run yet" if o.used_by else "not used yet")
        console.print(styled("[bold]{}[/bold] {} in run {}: proposed by {}, approved by {} "
                             "(receipt {}); {}", o.id, call, o.run or "?", o.proposed_by,
                             o.approved_by, o.receipt or "-", used))
    console.print(f"{len(found)} override{'s' if len(found) != 1 else ''}")


class Status(StrEnum):
    """Which review items to list."""

    pending = "pending"
    approved = "approved"
    rejected = "rejected"
    all = "all"


_STATUS: dict[Status, ReviewStatus | None] = {Status.pending: "pending", Status.approved: "approved",
                                              Status.rejected: "rejected", Status.all: None}


@command("list", on=review_app)
def review_list(ctx: typer.Context,
                status: Annotated[Status, typer.Option(help="Which items.")] = Status.pending,
                format: OutputFormat = Output.table) -> None:
    """List review items (pending by default)."""
    from rich.table import Table

    with connection(ctx).open() as rippl:
        items = rippl.reviews(_STATUS[status])
    if format is Output.json:
        print_json([item.model_dump(mode="json") for item in items])
        return
    if not items:
        console.print(f"no {status} reviews")
        return
    table = Table("review", "kind", "status", "claims", "reason", "proposed by", "at risk")
    for item in items:
        claims = _count(item.claims, "source") if item.kind == "provenance" else ", ".join(item.claims)
        reason = item.reason if item.contradiction is None else _evidence(item)
        table.add_row(item.id, _kind(item), item.status, claims, reason,
                      item.proposed_by, str(len(item.at_risk)) if item.kind != "override" else "-")
    console.print(table)


def _kind(item: ReviewItem) -> str:
    found = item.contradiction
    return item.kind if found is None else f"{item.kind} ({found.detector} contradiction)"


def _evidence(item: ReviewItem) -> str:
    """A contradiction's reason and evidence in one cell: both claims with their sources."""
    found = item.contradiction
    assert found is not None

    def side(label: str, c: Any) -> str:
        sources = ", ".join(s.get("title") or s["id"] for s in c.sources) or "no source"
        return f"{label} {c.id} {c.text!r} ({sources})"

    return f"{item.reason}\n{side('old:', found.old)}\n{side('new:', found.new)}"


@command("contradictions")
def contradictions_cmd(
        ctx: typer.Context,
        claim_ids: Annotated[list[str], typer.Argument(help="Claims to check now.")],
        detector: Annotated[str | None, typer.Option(
            help="Also ask a model: langchain:<package.module:name> (a LangChain chat model, its "
                 "class or a factory).")] = None,
        model: Annotated[str | None, typer.Option(help="Model name for the detector.")] = None
) -> None:
    """Run the contradiction detectors over claims now (the key detector; with --detector, a
    model too) and list the retractions proposed. Nothing is approved: review them."""
    chosen = model_detector(detector, model)
    with connection(ctx).open() as rippl:
        made = rippl.detect_contradictions(claim_ids, detector=chosen)
    for item in made:
        print_review(item)
    console.print(f"{len(made)} retraction{'s' if len(made) != 1 else ''} proposed"
                  + (": review them with `rippl review list`" if made else ""))


def model_detector(spec: str | None, model: str | None) -> Any:
    """A `ChatModelDetector` from `langchain:<package.module:name>` (None: none)."""
    if spec is None:
        return None
    from rippl_core.ingest.extractors.langchain_extractor import load_chat_model
    from rippl_core.review.detectors import ChatModelDetector

    kind, _, path = spec.partition(":")
    if kind != "langchain" or not path:
        raise InvalidInputError(f"--detector {spec}: write it as langchain:<package.module:name>")
    return ChatModelDetector(load_chat_model(path, model=model), model=model)


@command("show", on=review_app)
def review_show(ctx: typer.Context, review_id: str, format: OutputFormat = Output.table) -> None:
    """Show one review item and what it would invalidate."""
    with connection(ctx).open() as rippl:
        item = rippl.review(review_id)
    if format is Output.json:
        print_json(item.model_dump(mode="json"))
    else:
        print_review(item)


@command("approve", on=review_app)
def review_approve(ctx: typer.Context, review_id: str,
                   by: str = typer.Option(..., help="The reviewer's identity."),
                   note: str | None = typer.Option(None, help="A note for the receipt."),
                   key: KEY = None) -> None:
    """Approve a proposed retraction: commit the wave (receipted)."""
    signing_key = signing_key_file(key)
    with connection(ctx).open() as rippl:
        receipt = rippl.approve(review_id, by=by, note=note, signing_key=signing_key)
    print_receipt(receipt)
    for change in receipt.body.get("affected", []):
        style = STATE_STYLE.get(State(change["after"]), "white")
        console.print(styled(f"  {{}}: {{}} -> [{style}]{{}}[/]", change["id"], change["before"],
                             change["after"]))


@command("reject", on=review_app)
def review_reject(ctx: typer.Context, review_id: str,
                  by: str = typer.Option(..., help="The reviewer's identity."),
                  note: str | None = typer.Option(None, help="A note for the receipt."),
                  key: KEY = None) -> None:
    """Reject a proposed retraction: the at-risk nodes return (receipted)."""
    signing_key = signing_key_file(key)
    with connection(ctx).open() as rippl:
        print_receipt(rippl.reject(review_id, by=by, note=note, signing_key=signing_key))


@command("list", on=receipts_app)
def receipts_list(ctx: typer.Context, format: OutputFormat = Output.table) -> None:
    """List the receipts of committed waves, oldest first."""
    with connection(ctx).open() as rippl:
        receipts = rippl.receipts()
    if format is Output.json:
        print_json([receipt.model_dump(mode="json") for receipt in receipts])
        return
    for receipt in receipts:
        print_receipt(receipt)
    console.print(f"{len(receipts)} receipts")


def print_check(check: ReceiptCheck) -> None:
    if check.ok:
        console.print(styled("[green]chain intact[/]: {} receipts verified", check.count))
        return
    console.print(styled("[red]chain broken[/]: {} problems in {} receipts", len(check.problems),
                         check.count))
    for problem in check.problems:
        console.print(f"  {problem}")


ANCHOR = Annotated[str | None, typer.Option(
    help="A witness of anchored tree heads: file:PATH, git:PATH or an http(s) URL.")]


@command("verify", on=receipts_app)
def receipts_verify(ctx: typer.Context,
                    file: Annotated[Path | None, typer.Option(
                        "--file", help="Verify an exported JSONL chain (its head included) "
                                       "instead of the database.")] = None,
                    keys: Annotated[Path | None, typer.Option(
                        help="JSON file mapping actor -> trusted Ed25519 public key (hex). With "
                             "--file, the export's head must then be signed by one of them.")
                    ] = None,
                    anchor: Annotated[str | None, typer.Option(
                        help="Also check the log extends every head anchored at this witness "
                             "(file:PATH, git:PATH or an http(s) URL): a cut tail or a rewritten "
                             "history fails without any trusted key. With --file, the heads of "
                             "the log the export names (else of --graph).")] = None,
                    distinct_approver: Annotated[bool, typer.Option(
                        "--distinct-approver",
                        help="Report approvals by the identity that proposed them.")] = False,
                    format: OutputFormat = Output.table) -> None:
    """Re-walk the chain, the reviewer keys and the anchored heads; exit 1 on any problem."""
    from rippl_core.review.verify import verify_file

    public_keys = public_keys_file(keys)
    if file is not None:
        check = verify_file(file, anchor=anchor, log=connection(ctx).graph if anchor else None,
                            public_keys=public_keys, distinct_approver=distinct_approver)
    else:
        with connection(ctx).open() as rippl:
            check = rippl.verify_receipts(public_keys, anchor=anchor,
                                          distinct_approver=distinct_approver)
    if format is Output.json:
        print_json(check.model_dump(mode="json"))
    else:
        print_check(check)
    if not check.ok:
        raise typer.Exit(EXIT_ERROR)


def print_head(head: TreeHead, format: Output) -> None:
    from rippl_core.review.heads import head_json

    if format is Output.json:
        print_json(head_json(head))
        return
    signed = f", signed by {head.by}" if head.signature else ""
    console.print(styled("[bold]{}[/bold]: {} receipts, root {} at {}{}", head.log, head.size,
                         head.root, head.at.isoformat(), signed))


BY = Annotated[str | None, typer.Option(help="With --key: who signs the head.")]


@command("head", on=receipts_app)
def receipts_head(ctx: typer.Context, key: KEY = None, by: BY = None,
                  format: OutputFormat = Output.table) -> None:
    """The log's signed tree head (RFC 9162): its size and Merkle root now. Keep it (--format
    json > head.json) to check later that the log only grew (`rippl receipts consistency`)."""
    signing_key = signing_key_file(key)
    with connection(ctx).open() as rippl:
        head = rippl.tree_head(signing_key=signing_key, by=by)
    print_head(head, format)


@command("prove", on=receipts_app)
def receipts_prove(ctx: typer.Context, receipt: str,
                   size: Annotated[int | None, typer.Option(
                       help="Prove against the tree of this many receipts (default: all).")] = None,
                   format: OutputFormat = Output.table) -> None:
    """The inclusion proof of a receipt (RCP-…): its leaf and the audit path to the root."""
    from rippl_core.review import merkle

    with connection(ctx).open() as rippl:
        proof = rippl.prove(receipt, tree_size=size)
    ok = merkle.verify_inclusion(proof.index, proof.tree_size, bytes.fromhex(proof.leaf_hash),
                                 [bytes.fromhex(p) for p in proof.proof], bytes.fromhex(proof.root))
    if format is Output.json:
        print_json(proof.model_dump(mode="json"))
    else:
        console.print(styled("[bold]{}[/bold] is leaf {} of {} receipts, root {}", proof.receipt,
                             proof.index, proof.tree_size, proof.root))
        console.print(f"  leaf {proof.leaf_hash}")
        for step in proof.proof:
            console.print(f"  path {step}")
        console.print(styled("[green]proof verifies[/]" if ok else "[red]proof does not verify[/]"))
    if not ok:
        raise typer.Exit(EXIT_ERROR)


def _old_head(value: str) -> tuple[int, str | None]:
    from rippl_core.review.heads import head_model

    if value.isdigit():
        return int(value), None
    try:
        data = json.loads(Path(value).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidInputError(f"OLD_HEAD must be a tree size or a head file (rippl receipts head "
                                f"--format json > head.json); {value}: {exc}") from None
    head = head_model(data.get("head", data) if isinstance(data, dict) else data)
    return head.size, head.root


@command("consistency", on=receipts_app)
def receipts_consistency(ctx: typer.Context, old_head: Annotated[str, typer.Argument(
                             help="A head kept earlier (a JSON file) or a tree size.")],
                         format: OutputFormat = Output.table) -> None:
    """The consistency proof from an earlier head to the log now: that the log only grew. With a
    head file, its root must match: exit 1 if the log's history changed since."""
    from rippl_core.review import merkle

    size, root = _old_head(old_head)
    with connection(ctx).open() as rippl:
        proof = rippl.consistency(size)
    old_root = bytes.fromhex(root if root is not None else proof.old_root)
    ok = merkle.verify_consistency(size, proof.new_size, old_root, bytes.fromhex(proof.new_root),
                                   [bytes.fromhex(p) for p in proof.proof]) if size else \
        old_root == merkle.EMPTY_ROOT
    if format is Output.json:
        print_json(proof.model_dump(mode="json") | {"verified": ok})
    else:
        console.print(styled("from {} receipts (root {}) to {} (root {})", size, old_root.hex(),
                             proof.new_size, proof.new_root))
        for step in proof.proof:
            console.print(f"  path {step}")
        console.print(styled("[green]consistent: the log only grew[/]" if ok else
                             "[red]not consistent: the log's history changed since that head[/]"))
    if not ok:
        raise typer.Exit(EXIT_ERROR)


@command("anchor", on=receipts_app)
def receipts_anchor(ctx: typer.Context,
                    to: Annotated[str, typer.Option(
                        "--to", help="The witness: file:PATH (append-only JSON Lines), git:PATH "
                                     "(a commit per head) or an http(s) URL (JSON POST).")],
                    key: KEY = None, by: BY = None, format: OutputFormat = Output.table) -> None:
    """Write the log's current signed tree head to a witness outside the database (refused if
    the log does not extend the witness's latest head)."""
    signing_key = signing_key_file(key)
    with connection(ctx).open() as rippl:
        head = rippl.anchor(to, signing_key=signing_key, by=by)
    print_head(head, format)


@command("export", on=receipts_app)
def receipts_export(ctx: typer.Context, file: Path, key: KEY = None,
                    by: Annotated[str | None, typer.Option(
                        help="With --key: who signs the export's head.")] = None) -> None:
    """Write the chain as JSON Lines, headed by its count and last hash (signed with --key), to
    keep and verify elsewhere with `rippl receipts verify --file`."""
    signing_key = signing_key_file(key)
    with connection(ctx).open() as rippl:
        lines = rippl.export_receipts(signing_key=signing_key, by=by)
    file.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    console.print(f"wrote {len(lines) - 1} receipts to {file}")


@command("watch")
def watch_cmd(ctx: typer.Context,
              count: int | None = typer.Option(None, help="Stop after this many events."),
              format: OutputFormat = Output.table) -> None:
    """Print status-change and review events live as they happen (Ctrl-C to stop). With
    --format json, one JSON object per line."""
    with connection(ctx).open() as rippl, rippl.subscribe() as stream:
        if format is Output.table:
            console.print(f"watching graph {rippl.graph!r}…")
        seen = 0
        try:
            for event in stream:
                if format is Output.json:
                    print(json.dumps(event.model_dump(mode="json") | {
                        "before_status": event.before_status, "after_status": event.after_status}),
                        flush=True)
                else:
                    what = (event.node or event.review or (f"{event.count} nodes" if event.count
                                                            else f"{event.agent} on {event.topic}"))
                    change = (f"{event.before_status} -> {event.after_status}" if event.before
                              else f"created {event.after_status}" if event.after
                              else (event.claim or ""))
                    at = f"{event.at:%H:%M:%S}" if event.at else "--:--:--"
                    found = f" (found by the {event.detector} detector)" if event.detector else ""
                    console.print(f"{at} {event.type:<19} {what} {change}{found}")
                seen += 1
                if count is not None and seen >= count:
                    break
        except KeyboardInterrupt:
            pass
