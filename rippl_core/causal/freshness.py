"""What a reading's age means for a verdict: stale is not false.

A captured action records the read claims it rests on (`reads`); a claim is fresh until the latest
end of its valid readings (`fresh_until`; none: forever), and a newer reading of another output
ends it (`superseded_by`). A call that would be allowed is denied when one of those claims is no
longer fresh, saying which reading, how old, and what to do: read again. Nothing is retracted and
nothing binds: the next turn resting on a fresh reading is allowed.

As of a past time, freshness is computed from the readings themselves (their `observed_at`,
`expires_at` and `superseded_at`), like the rest of an as-of check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rippl_core._runtime.op import Op
from rippl_core._runtime.timeutil import from_ms
from rippl_core.causal import cypher
from rippl_core.models import Expired, Verdict

type Reads = Sequence[Sequence[Any]]  # [claim id, fresh_until (epoch ms, None: forever)]


def expired_at(reads: Reads | None, now: int) -> list[str]:
    """The read claims (of `reads`) that are not fresh at `now`, sorted."""
    return sorted({str(r[0]) for r in reads or () if r and r[0] is not None and r[1] is not None
                   and r[1] <= now})


def deny(verdict: Verdict, expired: Sequence[str], now: int) -> Op[Verdict]:
    """The verdict on a call that would be allowed but rests on readings no longer valid."""
    rows = yield cypher.readings(list(expired))
    found = [_expired(props, later, now) for props, later in rows]
    stale = [e for e in found if e.status == "stale"]
    superseded = [e for e in found if e.status == "superseded"]
    parts = []
    if superseded:
        parts.append("a newer reading superseded " + "; ".join(_said(e) for e in superseded))
    if stale:
        parts.append("; ".join(f"{_said(e)}{_age(e, now)}" for e in stale))
    what = "superseded" if superseded and not stale else "stale" if stale else "stale or superseded"
    reason = (f"{verdict.target} denied as {what} (not retracted: no review is needed): "
              + "; and ".join(parts) + ". Read it again, then decide on the new reading.")
    return verdict.model_copy(update={"allowed": False, "reason": reason, "expired": found})


def _expired(props: Mapping[str, Any], later: Mapping[str, Any] | None, now: int) -> Expired:
    superseded = props.get("superseded_by") is not None
    fresh_for = props.get("read_fresh_for")
    return Expired(
        premise=props["id"], text=props.get("text", ""),
        status="superseded" if superseded else "stale",
        read_at=from_ms(props.get("read_at")), fresh_for=fresh_for / 1000 if fresh_for else None,
        valid_until=from_ms(props.get("superseded_at") if superseded else props.get("fresh_until")),
        superseded_by=props.get("superseded_by"),
        superseded_text=later.get("text") if later else None,
        superseded_run=later.get("read_run") if later else None)


def _said(expired: Expired) -> str:
    if expired.status == "superseded":
        run = f" in run {expired.superseded_run}" if expired.superseded_run else ""
        return f"{expired.text} ({expired.premise}): {expired.superseded_text or 'another output'}{run}"
    return f"{expired.text} ({expired.premise})"


def _age(expired: Expired, now: int) -> str:
    if expired.read_at is None:
        return ""
    minutes = (now - round(expired.read_at.timestamp() * 1000)) / 60_000
    age = f"{minutes:.0f} min" if minutes >= 2 else f"{minutes * 60:.0f} s"
    fresh = f" and is fresh for {_span(expired.fresh_for)}" if expired.fresh_for else ""
    return f", read {age} ago{fresh}"


def _span(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 120 else f"{seconds:g} s"


def fresh_at(readings: Sequence[Mapping[str, Any]], t: int, known: int) -> bool:
    """Whether a claim was fresh at valid time `t`, as known at `known`, from its readings (each:
    observed_at, expires_at, superseded_at): one of them valid then."""
    for r in readings:
        observed = r.get("observed_at")
        if observed is None or observed > t or observed > known:
            continue
        expires, superseded = r.get("expires_at"), r.get("superseded_at")
        if expires is not None and expires <= t:
            continue
        if superseded is not None and superseded <= t and superseded <= known:
            continue
        return True
    return False


def expired_then(rows: Sequence[Sequence[Any]], t: int, known: int) -> list[Expired]:
    """The read claims (`cypher.reads_of` rows) that were not fresh at valid time `t`, as known
    at `known`: superseded when the latest reading of the claim then was ended by a newer reading
    of another output recorded by then, else stale (a reading superseded once and read again
    since, then aged, was stale then)."""
    found = []
    for props, readings in rows:
        if fresh_at(readings, t, known):
            continue
        then = [r for r in readings if r.get("observed_at") is not None
                and r["observed_at"] <= t and r["observed_at"] <= known]
        latest = max(then, key=lambda r: r["observed_at"], default=None)
        ended = latest.get("superseded_at") if latest is not None else None
        superseded = ended is not None and ended <= t and ended <= known
        expires = latest.get("expires_at") if latest is not None else None
        found.append(Expired(premise=props["id"], text=props.get("text", ""),
                             status="superseded" if superseded else "stale",
                             valid_until=from_ms(ended if superseded else expires)))
    return found
