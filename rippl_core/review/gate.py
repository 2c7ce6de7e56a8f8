"""Retraction waves: direct retraction, the human review gate, reinstatement, and their receipts.

A proposal raises the claim's count of pending reviews, which puts it and everything that would
lose support AT_RISK; approving turns the proposal into a retraction, rejecting withdraws it. Each
committed change appends a receipt to the chain in the same atomic commit.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from rippl_core._runtime import telemetry
from rippl_core._runtime.op import Batch, Commit, Op
from rippl_core._runtime.timeutil import TimeLike, from_ms, now_ms, to_ms
from rippl_core._runtime.validation import canonical_args, check_actor, check_id, check_text, repeat_key
from rippl_core.causal.nodes import require_nodes
from rippl_core.causal.preflight import find_blockers
from rippl_core.causal.relabel import Change, commit_labels, plan_change, read_region, would_invalidate
from rippl_core.causal.tms import Premise, Region, label
from rippl_core.errors import InvalidInputError, NoMatchError, NotFoundError, ReviewError
from rippl_core.models import (
    Override,
    ProvenanceQuery,
    Receipt,
    ReceiptCheck,
    ReviewItem,
    ToolCall,
    Transition,
    TreeHead,
    Wave,
)
from rippl_core.review import cypher, log, provenance
from rippl_core.review.heads import anchored_problems
from rippl_core.review.keys import REGISTERED, REVOKED, decision_statement, public_hex, registration_statement
from rippl_core.review.receipts import SigningKey, leaf_hash, private_key, receipt_model, verify_chain
from rippl_core.vocabulary import RETRACTABLE, Kind, State


def _retractable(claim_id: str) -> Op[tuple[str, dict[str, Any]]]:
    claim_id = check_id(claim_id, what="claim id")
    found = yield from require_nodes([claim_id], what="claim")
    props = found[claim_id]
    if Kind(props["kind"]) not in RETRACTABLE:
        raise InvalidInputError(
            f"{claim_id} is a {props['kind']}; only sources and claims are retracted. Retract the "
            "claim it rests on, and it follows."
        )
    return claim_id, props


def _transitions(commit: Commit) -> list[dict[str, Any]]:
    """The state changes a commit announces, once per node (an executed action that goes OUT is
    also announced as `compensation_needed`, with the same transition: not a second change)."""
    return [e for e in commit.events if "before" in e and e.get("type") != "compensation_needed"]


def wave_of(root: str, commit: Commit, at: int) -> Wave:
    """The transitions a commit applies, read back from its events."""
    transitions = [
        Transition(id=e["node"], kind=Kind(e["kind"]), before=State(e["before"]),
                   after=State(e["after"]))
        for e in _transitions(commit)
    ]
    return Wave(root=root, transitions=transitions, at=from_ms(at))


def _append_receipt(commit: Commit, *, kind: str, claim: str, actor: str, at: int,
                    review: str | None, details: Mapping[str, Any],
                    signing_key: SigningKey | None, statement: Mapping[str, Any] | None = None,
                    signature: str | None = None) -> Op[Receipt]:
    """Add the next receipt of the log to `commit`, covering the transitions it applies."""
    affected = sorted(({"id": e["node"], "before": e["before"], "after": e["after"]}
                       for e in _transitions(commit)), key=lambda a: a["id"])
    body = {"kind": kind, "review": review, "claim": claim, "actor": actor,
            "at": from_ms(at).isoformat(), "affected": affected,
            **{k: v for k, v in details.items() if v is not None}}
    receipt = yield from log.append(commit, body, signing_key=signing_key, statement=statement,
                                    signature=signature)
    return receipt


def set_retracted(claim_id: str, *, retracted: bool, reason: str, by: str, at: int, now: int,
                  signing_key: SigningKey | None = None) -> Op[Wave]:
    """Retract a claim at once (no review), or reinstate a retracted one; both are receipted."""
    claim_id, props = yield from _retractable(claim_id)
    reason, by = check_text(reason, what="reason"), check_actor(by)
    if bool(props.get("retracted")) == retracted:
        state = "already retracted" if retracted else "not retracted"
        raise InvalidInputError(f"{claim_id} is {state}; nothing to do")
    flags = ({"retracted": True, "reason": reason, "retracted_by": by, "retracted_at": at}
             if retracted else
             {"retracted": False, "reason": None, "retracted_by": None, "retracted_at": None})
    cause = "retract" if retracted else "reinstate"
    change = Change.over({claim_id: props}, set_props={claim_id: flags})
    commit = yield from plan_change(change, cause=cause, at=at, now=now)
    yield from _append_receipt(commit, kind="retraction" if retracted else "reinstatement",
                               claim=claim_id, actor=by, at=now, review=None,
                               details={"reason": reason}, signing_key=signing_key)
    yield commit
    return wave_of(claim_id, commit, at)


@telemetry.traced(telemetry.PROPOSE)
def propose(claim_id: str, *, reason: str, by: str, evidence: str | None, now: int,
            monitor: str | None = None, extra: Mapping[str, Any] | None = None,
            detector: str | None = None) -> Op[ReviewItem]:
    """Put a claim and everything that would lose support AT_RISK until a human decides
    (`monitor`: the monitor proposing, recorded with the item and its event). `extra`
    review properties and the `detector` that proposed it (named by the event) are what a
    contradiction detector adds (`rippl_core.review.contradictions`)."""
    claim_id, props = yield from _retractable(claim_id)
    reason, by = check_text(reason, what="reason"), check_actor(by)
    if evidence is not None:
        check_text(evidence, what="evidence")
    if monitor is not None:
        check_id(monitor, what="monitor")
    if props.get("retracted"):
        raise ReviewError(f"{claim_id} is already retracted; reinstate it before proposing again")
    pending = int(props.get("pending") or 0) + 1
    change = Change.over({claim_id: props}, set_props={claim_id: {"pending": pending}})
    region, old = yield from read_region(change)
    at_risk = would_invalidate(region, old, claim_id)
    review_id = f"REV-{uuid.uuid4().hex[:12]}"
    commit = commit_labels(change, region, label(region), old, cause="propose", at=now, now=now,
                           review=review_id)
    item = {"id": review_id, "claim": claim_id, "status": "pending", "reason": reason,
            "evidence": evidence, "proposed_by": by, "proposed_at": now, "at_risk": at_risk,
            "monitor": monitor, **(extra or {})}
    commit.queries.append(cypher.create_review({k: v for k, v in item.items() if v is not None}))
    event = _review_event("review_proposed", review_id, claim_id, by, now)
    if monitor is not None:
        event |= {"monitor": monitor}
    commit.events.append(event if detector is None else event | {"detector": detector})
    yield commit
    return review_model(item)


@telemetry.traced(telemetry.PROPOSE_WHERE)
def propose_where(query: ProvenanceQuery, *, reason: str, by: str, evidence: str | None,
                  monitor: str | None, now: int) -> Op[ReviewItem]:
    """One review of every source `query` matches (a retraction by provenance): they and what
    would lose support go AT_RISK together until a human decides. The item's preview names what
    would go OUT and which matched claims another source keeps IN."""
    reason, by = check_text(reason, what="reason"), check_actor(by)
    if evidence is not None:
        check_text(evidence, what="evidence")
    if monitor is not None:
        check_id(monitor, what="monitor")
    found = yield from provenance.match(query)
    if not found.sources:
        retracted = (f" ({found.already_retracted} matching source"
                     f"{' was' if found.already_retracted == 1 else 's were'} already retracted)"
                     if found.already_retracted else "")
        raise NoMatchError(f"no source matches the provenance query {query.describe()}"
                           f"{retracted}; nothing was proposed. Check the tool name, the arguments "
                           "and the time window")
    if len(found.sources) > provenance.MAX_SOURCES:
        raise InvalidInputError(
            f"the provenance query {query.describe()} matches {len(found.sources)} sources; one "
            f"review covers at most {provenance.MAX_SOURCES}. Narrow it (a tool, a time window, a "
            "run) and propose in parts")
    sources = list(found.sources)
    change = Change.over(found.sources, set_props={
        node: {"pending": int(props.get("pending") or 0) + 1}
        for node, props in found.sources.items()})
    region, old = yield from read_region(change)
    out, survives = _preview(region, old, sources, found.claims)
    review_id = f"REV-{uuid.uuid4().hex[:12]}"
    commit = commit_labels(change, region, label(region), old, cause="propose", at=now, now=now,
                           review=review_id)
    item = {"id": review_id, "kind": "provenance", "claim": sources[0], "claims": sources,
            "matched": found.claims, "survives": survives, "status": "pending", "reason": reason,
            "evidence": evidence, "proposed_by": by, "proposed_at": now, "at_risk": out,
            "query": json.dumps(query.given(), sort_keys=True), "monitor": monitor}
    commit.queries.append(cypher.create_reviews_of({k: v for k, v in item.items() if v is not None},
                                                   sources))
    commit.events.append(_review_event("review_proposed", review_id, sources[0], by, now)
                         | {"kind": "provenance", "sources": sources, "claims": found.claims,
                            "query": query.given(), "monitor": monitor})
    yield commit
    return review_model(item)


def _preview(region: Region, old: Mapping[str, State], sources: Sequence[str],
             claims: Sequence[str]) -> tuple[list[str], list[str]]:
    """(what would go OUT, the matched claims that would stay IN) if every source were retracted."""
    hypothetical = Region({**region.nodes, **{s: Premise(retracted=True) for s in sources}},
                          region.justifications, region.outside)
    labels = label(hypothetical)
    chosen = set(sources)
    out = sorted(n for n, state in labels.items()
                 if state is State.OUT and old.get(n) is not State.OUT and n not in chosen)
    return out, [c for c in claims if labels.get(c, old.get(c)) is not State.OUT]


@telemetry.traced(telemetry.DECIDE_REVIEW)
def decide(review_id: str, *, approve: bool, by: str, note: str | None, now: int,
           signing_key: SigningKey | None, distinct_approver: bool,
           signature: str | None = None, by_name: str | None = None) -> Op[Receipt]:
    """Approve (commit the wave) or reject (withdraw it) a pending review. With the reviewer's
    `signing_key`, or their `signature` of the decision's statement (made elsewhere, checked
    against their registered key), the receipt carries the signed statement. `by_name`, the
    reviewer's display name, is kept in the receipt (`actor_name`) beside their identity."""
    review_id = check_id(review_id, what="review id")
    by = check_actor(by)
    if by_name is not None:
        by_name = check_actor(by_name, what="by_name")
    if note is not None:
        check_text(note, what="note")
    item = yield from get_review(review_id)
    if item.status != "pending":
        raise ReviewError(f"{review_id} was already {item.status} by {item.decided_by} at "
                          f"{item.decided_at}; a review is decided once")
    if approve and distinct_approver and by == item.proposed_by:
        raise ReviewError(f"{by} proposed {review_id} and cannot also approve it (separation of "
                          "duties); ask another reviewer")
    if item.kind == "override":
        receipt = yield from _decide_override(item, approve=approve, by=by, note=note, now=now,
                                              signing_key=signing_key, signature=signature,
                                              by_name=by_name)
        return receipt
    if item.kind == "provenance":  # every source it covers, decided as one wave
        found = yield from require_nodes(item.claims, what="source")
        claim_id = item.claim
    else:
        claim_id, props = yield from _retractable(item.claim)
        found = {claim_id: props}
    flags: dict[str, dict[str, Any]] = {}
    for node, props in found.items():
        flags[node] = {"pending": max(int(props.get("pending") or 0) - 1, 0)}
        if approve and not props.get("retracted"):  # a direct retraction meanwhile keeps its record
            flags[node] |= {"retracted": True, "reason": item.reason, "retracted_by": by,
                            "retracted_at": now}
    change = Change.over(found, set_props=flags)
    cause = "approve" if approve else "reject"
    commit = yield from plan_change(change, cause=cause, at=now, now=now, review=review_id)
    status = "approved" if approve else "rejected"
    commit.queries.append(cypher.decide_review(review_id, {"status": status, "decided_by": by,
                                                       "decided_at": now, "note": note}))
    event = _review_event(f"review_{status}", review_id, claim_id, by, now)
    details: dict[str, Any] = {"reason": item.reason, "note": note, "proposed_by": item.proposed_by,
                               "actor_name": by_name}
    if item.kind == "provenance":  # the receipt names every source and every claim it covers
        event |= {"kind": "provenance", "sources": item.claims, "claims": item.matched}
        details |= {"sources": item.claims, "claims": item.matched, "monitor": item.monitor,
                    "query": item.query.given() if item.query is not None else None}
    commit.events.append(event)
    statement = decision_statement(kind=f"retraction_{status}", reviewer=by, review=review_id,
                                   claim=claim_id, proposed_by=item.proposed_by, note=note)
    signed = signing_key is not None or signature is not None
    receipt = yield from _append_receipt(
        commit, kind=f"retraction_{status}", claim=claim_id, actor=by, at=now, review=review_id,
        details=details, signing_key=signing_key, statement=statement if signed else None,
        signature=signature)
    yield commit
    return receipt


def propose_override(target: str | ToolCall, *, run: str | None, reason: str, by: str,
                     now: int) -> Op[ReviewItem]:
    """Propose a one-call override of a veto: `target` is the vetoed action (a captured call's
    action, or a declared action with the `run` it is for) or the call itself with its `run`. The
    premises it would override are what vetoed that call in that run, as they stand now."""
    reason, by = check_text(reason, what="reason"), check_actor(by)
    call, run, action = yield from _override_target(target, run)
    args = canonical_args(call.args) or "{}"
    rkey = repeat_key(run, call.name, args)
    rows = yield cypher.vetoed_calls(rkey)
    premises: set[str] = set()
    for _, binds in rows:
        for node in binds or ():
            found = yield from find_blockers(node)
            premises |= {b.premise for b in found}
    if not premises:
        raise ReviewError(f"no call {call.name}({args}) was vetoed by its premises in run {run}, "
                          "so there is no veto to override; check the run and the arguments")
    claims = sorted(premises)
    review_id = f"REV-{uuid.uuid4().hex[:12]}"
    item = {"id": review_id, "kind": "override", "claim": claims[0], "claims": claims,
            "status": "pending", "reason": reason, "proposed_by": by, "proposed_at": now,
            "action": action or rows[0][0], "run": run, "tool": call.name, "args": args,
            "rkey": rkey}
    event = _review_event("review_proposed", review_id, claims[0], by, now) | {"kind": "override"}
    yield Commit([cypher.create_reviews_of(item, claims)], [event])
    return review_model(item)


def _override_target(target: str | ToolCall, run: str | None) -> Op[tuple[ToolCall, str, str | None]]:
    """(the call, its run, the action named) of what an override is proposed for."""
    if run is not None:
        run = check_id(run, what="run")
    if isinstance(target, ToolCall):
        if run is None:
            raise InvalidInputError("an override of a tool call needs the run it is for (run=...)")
        check_id(target.name, what="tool name")
        return target, run, None
    action_id = check_id(target, what="action id")
    found = yield from require_nodes([action_id], what="action")
    props = found[action_id]
    if props["kind"] != Kind.ACTION.value or not props.get("tool"):
        raise InvalidInputError(f"{action_id} is not an action of a tool call; an override lets one "
                                "vetoed tool call run (give the vetoed action's id, or the call)")
    run = props.get("run") or run
    if run is None:
        raise InvalidInputError(f"{action_id} is a declared action; say which run's call the "
                                "override is for (run=...)")
    args = json.loads(props["args"]) if props.get("args") else {}
    return ToolCall(name=props["tool"], args=args), run, action_id


def _decide_override(item: ReviewItem, *, approve: bool, by: str, note: str | None, now: int,
                     signing_key: SigningKey | None, signature: str | None,
                     by_name: str | None) -> Op[Receipt]:
    """Approve (the override takes effect: one call may run) or reject an override proposal."""
    status = "approved" if approve else "rejected"
    props = (yield cypher.get_review(item.id))[0][0]
    commit = Commit([cypher.decide_review(item.id, {"status": status, "decided_by": by,
                                                    "decided_at": now, "note": note})])
    commit.events.append(_review_event(f"review_{status}", item.id, item.claim, by, now)
                         | {"kind": "override"})
    call = {"tool": props["tool"], "args": json.loads(props["args"]), "run": props["run"]}
    statement = decision_statement(kind=f"override_{status}", reviewer=by, review=item.id,
                                   claim=item.claim, proposed_by=item.proposed_by, note=note)
    signed = signing_key is not None or signature is not None
    receipt = yield from _append_receipt(
        commit, kind=f"override_{status}", claim=item.claim, actor=by, at=now, review=item.id,
        details={"reason": item.reason, "note": note, "proposed_by": item.proposed_by,
                 "actor_name": by_name, "call": call, "action": item.action,
                 "premises": item.claims},
        signing_key=signing_key, statement=statement if signed else None, signature=signature)
    if approve:
        commit.queries.append(cypher.create_override(
            {"id": item.id, "vkey": props["rkey"], "premises": item.claims, "run": props["run"],
             "tool": props["tool"], "args": props["args"], "action": item.action,
             "reason": item.reason, "proposed_by": item.proposed_by, "approved_by": by,
             "approved_at": now, "receipt": receipt.id}))
    yield commit
    return receipt


def list_overrides() -> Op[list[Override]]:
    """Every approved override, with the call that took it and when that call ran."""
    rows = yield cypher.LIST_OVERRIDES
    return [Override(id=p["id"], run=p.get("run"),
                     call=ToolCall(name=p["tool"], args=json.loads(p["args"])),
                     action=p.get("action"), premises=list(p.get("premises") or []),
                     reason=p["reason"], proposed_by=p["proposed_by"], approved_by=p["approved_by"],
                     approved_at=from_ms(p["approved_at"]), receipt=p.get("receipt"),
                     used_by=p.get("used_by"), executed_at=from_ms(executed))
            for p, executed in rows]


def _review_event(kind: str, review_id: str, claim: str, by: str, now: int) -> dict[str, Any]:
    return {"type": kind, "review": review_id, "claim": claim, "by": by,
            "at": from_ms(now).isoformat()}


def review_model(props: Mapping[str, Any]) -> ReviewItem:
    call = (ToolCall(name=props["tool"], args=json.loads(props["args"]))
            if props.get("tool") else None)
    return ReviewItem(
        id=props["id"], claim=props["claim"], status=props["status"], reason=props["reason"],
        evidence=props.get("evidence"), proposed_by=props["proposed_by"],
        proposed_at=from_ms(props["proposed_at"]), at_risk=list(props.get("at_risk") or []),
        decided_by=props.get("decided_by"), decided_at=from_ms(props.get("decided_at")),
        note=props.get("note"), kind=props.get("kind") or "retraction",
        claims=list(props.get("claims") or [props["claim"]]), action=props.get("action"),
        run=props.get("run"), call=call,
        query=ProvenanceQuery(**json.loads(props["query"])) if props.get("query") else None,
        matched=list(props.get("matched") or []), survives=list(props.get("survives") or []),
        monitor=props.get("monitor"),
        contradiction=json.loads(props["contradiction"]) if props.get("contradiction") else None,
    )


def get_review(review_id: str) -> Op[ReviewItem]:
    rows = yield cypher.get_review(check_id(review_id, what="review id"))
    if not rows:
        raise NotFoundError(f"no review {review_id}; list them with reviews()",
                            cli=f"no review {review_id}; list them with `rippl review list`")
    return review_model(rows[0][0])


_STATUSES = ("pending", "approved", "rejected")


def list_reviews(status: str | None) -> Op[list[ReviewItem]]:
    if status is not None and status not in _STATUSES:
        raise InvalidInputError(f"status must be one of {', '.join(_STATUSES)} or None for all")
    rows = yield cypher.list_reviews(status)
    return [review_model(row[0]) for row in rows]


def list_receipts() -> Op[list[Receipt]]:
    rows = yield cypher.list_receipts()
    return [receipt_model(row[0]) for row in rows]


def chain() -> Op[tuple[list[dict[str, Any]], tuple[int, str] | None]]:
    """The stored receipts, oldest first, and the chain's recorded head, read together."""
    rows = yield cypher.CHAIN
    records = [row[2] for row in rows if row[2] is not None]
    return records, ((rows[0][0], rows[0][1]) if rows and rows[0][0] is not None else None)


def verify(public_keys: Mapping[str, Any] | None, *, anchors: Sequence[TreeHead] = (),
           log_name: str | None = None, distinct_approver: bool = False) -> Op[ReceiptCheck]:
    """Re-walk the chain; check the stored tree head against the receipts, and the receipts
    against heads anchored outside the database (`anchors`, oldest first)."""
    chain_rows, tree_rows = yield Batch(cypher.CHAIN, cypher.TREE_HEAD)
    records = [row[2] for row in chain_rows if row[2] is not None]
    recorded = (chain_rows[0][0], chain_rows[0][1]) \
        if chain_rows and chain_rows[0][0] is not None else None
    check = verify_chain(records, head=recorded, public_keys=public_keys,
                         distinct_approver=distinct_approver)
    problems = []
    if records and recorded is None:
        problems.append("the chain's head record is missing: receipts were deleted or rewritten "
                        "outside Rippl")
    _, size, root = tree_rows[0] if tree_rows else (None, None, None)
    if records and (size, root) != (len(records), check.root):
        problems.append(f"the stored tree head ({size} receipts, root {str(root)[:16]}…) does not "
                        f"match the receipts ({len(records)}, root {str(check.root)[:16]}…)")
    if anchors:
        problems.extend(anchored_problems([leaf_hash(r) for r in records], list(anchors), log_name))
    update: dict[str, Any] = {"anchored": anchors[-1].size if anchors else None}
    if problems:
        update |= {"ok": False, "problems": [*check.problems, *problems]}
    return check.model_copy(update=update)


@telemetry.traced(telemetry.RETRACTION)
def retraction(node_id: str, *, retracted: bool, reason: str, by: str, at: TimeLike | None,
               signing_key: SigningKey | None = None) -> Op[Wave]:
    now = now_ms()
    wave = yield from set_retracted(node_id, retracted=retracted, reason=reason, by=by,
                                    at=to_ms(at, name="at", default=now), now=now,
                                    signing_key=signing_key)
    return wave


def register_key(reviewer: str, *, public_key: str | None, signing_key: SigningKey | None,
                 signature: str | None, current_key: SigningKey | None, now: int) -> Op[Receipt]:
    """Register (or rotate to) a reviewer's key: a `key_registered` receipt whose statement is
    signed by that key (with `signing_key`, or `signature` of the registration statement made
    elsewhere for `public_key`). A rotation is sealed with the `current_key`."""
    reviewer = check_actor(reviewer, what="reviewer")
    if (signing_key is None) == (signature is None):
        raise InvalidInputError("register a key with the reviewer's signing_key, or with its "
                                "public_key and the signature of the registration statement")
    key = private_key(signing_key) if signing_key is not None else None
    public = public_hex(key) if key is not None else _public_key(public_key)
    current = (yield from log.reviewer_keys()).get(reviewer)
    body = {"kind": REGISTERED, "actor": reviewer, "reviewer": reviewer, "public_key": public,
            "replaces": current, "at": from_ms(now).isoformat()}
    commit = Commit()
    receipt = yield from log.append(commit, {k: v for k, v in body.items() if v is not None},
                                    signing_key=current_key if current_key is not None else key,
                                    statement=registration_statement(reviewer, public),
                                    signature=signature, statement_key=key)
    yield commit
    return receipt


def revoke_key(reviewer: str, *, by: str, reason: str, now: int,
               signing_key: SigningKey | None) -> Op[Receipt]:
    """Revoke a reviewer's registered key: from this receipt on, nothing it signs is accepted."""
    reviewer, by = check_actor(reviewer, what="reviewer"), check_actor(by)
    reason = check_text(reason, what="reason")
    current = (yield from log.reviewer_keys()).get(reviewer)
    if current is None:
        raise NotFoundError(f"{reviewer} has no registered key; list them with reviewer_keys()",
                            cli=f"{reviewer} has no registered key; list them with `rippl keys list`")
    commit = Commit()
    receipt = yield from log.append(commit, {"kind": REVOKED, "actor": by, "reviewer": reviewer,
                                             "public_key": current, "reason": reason,
                                             "at": from_ms(now).isoformat()},
                                    signing_key=signing_key)
    yield commit
    return receipt


def _public_key(value: object) -> str:
    text = value.strip().lower() if isinstance(value, str) else ""
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise InvalidInputError("public_key must be an Ed25519 public key: 64 hex characters")
    return text
