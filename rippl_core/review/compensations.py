"""The compensation lifecycle: an action executed on a premise since retracted is owed a
compensation, open until a reviewer resolves it.

- `listing`: every compensation owed (as of a time, as known then), each `open`, `compensated` or
  `not needed`, with the attempts reported for it by then.
- `report_attempt`: an agent or a script says what it did about an open compensation, with its
  output. It resolves nothing: a person confirms it by resolving the compensation as
  `compensated`, naming the attempt.
- `resolve`: a reviewer resolves an open compensation (`compensated` or `not needed`, with a note)
  in a receipt of the chain, written in the same commit as the resolution (so
  `rippl receipts verify` covers it). A compensation is resolved once.

Bitemporal like the rest: a resolution takes effect when it is made and is known from then on, so
`listing(as_of=t, known_at=k)` shows open what was open at t as known at k: a resolution made
after either time does not count. Every operation is a generator of graph steps, run by the sync
and the async driver alike (`_runtime/op.py`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any, Final

from rippl_core._runtime.op import Commit, Op
from rippl_core._runtime.timeutil import TimeLike, from_ms, read_times
from rippl_core._runtime.validation import check_actor, check_id, check_text
from rippl_core.causal import history, preflight
from rippl_core.errors import InvalidInputError, NotFoundError, ReviewError
from rippl_core.models import Compensation, CompensationAttempt, CompensationResolution, Receipt
from rippl_core.review import cypher, log
from rippl_core.review.receipts import SigningKey
from rippl_core.vocabulary import State

RESOLUTIONS: Final = ("compensated", "not needed")
RECEIPT_KIND: Final = "compensation_resolved"
OUTPUT_LIMIT: Final = 10_000  # characters of an attempt's output kept (a text's limit)


def listing(*, as_of: TimeLike | None, known_at: TimeLike | None,
            include_resolved: bool = False) -> Op[list[Compensation]]:
    """Actions executed on a premise since retracted, each with the trail to what failed and its
    lifecycle; only the open ones unless `include_resolved`. As of a past time: those executed by
    then whose status then was Premise Retracted, open unless resolved by then (as known then)."""
    if as_of is None and known_at is None:
        rows = yield cypher.EXECUTED_OUT
        found = [row[0] for row in rows]
        states = {props["id"]: State.OUT for props in found}
        t = k = None
    else:
        t, k = read_times(as_of, known_at)
        rows = yield cypher.EXECUTED
        found = [row[0] for row in rows if row[0]["executed_at"] <= t]
        at_t = yield from history.states_at([p["id"] for p in found], t, k)
        states = {node: state for node, state in at_t.items() if state is State.OUT}
        found = [p for p in found if p["id"] in states]
    entries = yield cypher.COMPENSATION_ENTRIES
    by_action: dict[str, list[dict[str, Any]]] = {}
    for (props,) in entries:
        if (t is None or props["at"] <= t) and (k is None or props["recorded"] <= k):
            by_action.setdefault(props["action"], []).append(props)
    listed = []
    for props in found:
        attempts, resolution = _lifecycle(by_action.get(props["id"], []))
        if resolution is not None and not include_resolved:
            continue
        blockers = yield from preflight.find_blockers(props["id"])
        listed.append(Compensation(
            action=props["id"], title=props.get("text", ""), tool=props.get("tool"),
            args=_args(props.get("args")), run=props.get("run"), call_id=props.get("call_id"),
            executed_at=from_ms(props["executed_at"]), state=states[props["id"]], blockers=blockers,
            status=resolution.resolution if resolution is not None else "open",
            resolution=resolution, attempts=attempts))
    return listed


def _args(raw: Any) -> dict[str, Any] | None:
    return json.loads(raw) if raw else None


def _lifecycle(entries: list[dict[str, Any]]) -> tuple[list[CompensationAttempt],
                                                        CompensationResolution | None]:
    attempts = [_attempt(e) for e in entries if e["kind"] == "attempt"]
    resolved = [e for e in entries if e["kind"] == "resolution"]
    return attempts, _resolution(resolved[-1]) if resolved else None


def _attempt(props: Mapping[str, Any]) -> CompensationAttempt:
    return CompensationAttempt(id=props["id"], action=props["action"], what=props["what"],
                               output=props.get("output"), by=props["by"], at=from_ms(props["at"]))


def _resolution(props: Mapping[str, Any]) -> CompensationResolution:
    return CompensationResolution(id=props["id"], action=props["action"],
                                  resolution=props["resolution"], note=props["note"],
                                  by=props["by"], at=from_ms(props["at"]),
                                  attempt=props.get("attempt"), receipt=props["receipt"])


def _open(action: str) -> Op[Compensation]:
    """The compensation owed for `action` now, refusing one that is not owed or is resolved."""
    action = check_id(action, what="action id")
    owed = yield from listing(as_of=None, known_at=None, include_resolved=True)
    found = next((c for c in owed if c.action == action), None)
    if found is None:
        raise NotFoundError(f"no compensation is owed for {action}: it is not an action executed "
                            "on a premise since retracted (see `rippl compensations`)")
    if found.resolution is not None:
        r = found.resolution
        raise ReviewError(f"the compensation of {action} was already resolved as {r.resolution} by "
                          f"{r.by} at {r.at.isoformat()} ({r.receipt}); a compensation is "
                          "resolved once")
    return found


def report_attempt(action: str, *, what: str, output: str | None, by: str,
                   now: int) -> Op[CompensationAttempt]:
    """Record what an agent or a script did to compensate an open compensation (and its output),
    for a person to confirm; it resolves nothing."""
    what, by = check_text(what, what="what"), check_actor(by)
    if output is not None and output != "":
        output = check_text(output[:OUTPUT_LIMIT] if isinstance(output, str) else output,
                            what="output")
    owed = yield from _open(action)
    props = {"id": f"ATT-{uuid.uuid4().hex[:12]}", "kind": "attempt", "action": owed.action,
             "what": what, "output": output, "by": by, "at": now, "recorded": now}
    commit = Commit([cypher.create_compensation_entry({k: v for k, v in props.items()
                                                       if v is not None})],
                    [{"type": "compensation_attempted", "node": owed.action, "kind": "Action",
                      "by": by, "at": from_ms(now).isoformat(), "attempt": props["id"],
                      "what": what}])
    yield commit
    return _attempt(props)


def resolve(action: str, *, resolution: str, note: str, by: str, now: int,
            attempt: str | None = None, signing_key: SigningKey | None = None) -> Op[Receipt]:
    """Resolve an open compensation as `compensated` or `not needed`, with a note, confirming an
    reported `attempt` if named; receipted in the same commit. Returns the receipt."""
    if resolution not in RESOLUTIONS:
        raise InvalidInputError(f"a compensation is resolved as one of {', '.join(RESOLUTIONS)}, "
                                f"not {resolution!r}")
    note, by = check_text(note, what="note"), check_actor(by)
    owed = yield from _open(action)
    if attempt is not None and attempt not in {a.id for a in owed.attempts}:
        raise NotFoundError(f"{attempt} is not an attempt reported for {owed.action}")
    entry_id = f"CMP-{uuid.uuid4().hex[:12]}"
    when = from_ms(now).isoformat()
    commit = Commit(events=[{"type": "compensation_resolved", "node": owed.action, "kind": "Action",
                             "by": by, "at": when, "resolution": resolution, "attempt": attempt}])
    body: dict[str, Any] = {
        "kind": RECEIPT_KIND, "review": None,
        "claim": owed.blockers[0].premise if owed.blockers else None, "actor": by, "at": when,
        "affected": [], "action": owed.action, "resolution": resolution, "note": note,
        "compensation": entry_id, "run": owed.run, "tool": owed.tool,
        **({"attempt": attempt} if attempt is not None else {})}
    receipt = yield from log.append(commit, {k: v for k, v in body.items()
                                             if v is not None or k in ("review", "claim")},
                                    signing_key=signing_key)
    props = {"id": entry_id, "kind": "resolution", "action": owed.action,
             "resolution": resolution, "note": note, "by": by, "at": now, "recorded": now,
             "attempt": attempt, "receipt": receipt.id}
    commit.queries.insert(0, cypher.create_compensation_entry({k: v for k, v in props.items()
                                                               if v is not None}))
    yield commit
    return receipt
