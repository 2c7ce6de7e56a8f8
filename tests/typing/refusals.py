"""Calls the type checker must refuse, and their accepted twins (checked by mypy in .ci/types,
never run). Each refusal names the error it expects: with `warn_unused_ignores` (strict), a call
that stops being refused fails the check."""

from collections.abc import Sequence

from rippl_core import AsyncRippl, Policy, Rippl
from rippl_core.adapters import Guard


def refused(rippl: Rippl) -> None:
    rippl.add_claim("CLM-1", "text", sources="SRC-1")  # type: ignore[arg-type]
    rippl.justify("DEC-1", "CLM-1")  # type: ignore[arg-type]
    rippl.nodes("CLM-1")  # type: ignore[arg-type]
    rippl.check("ACT-1", at_risk="maybe")  # type: ignore[arg-type]
    rippl.check("ACT-1", unknown="ignore")  # type: ignore[arg-type]
    rippl.check("ACT-1", on_error="retry")  # type: ignore[arg-type]
    rippl.reviews("open")  # type: ignore[arg-type]
    rippl.records().touch("REC-1")  # type: ignore[arg-type]
    Policy(at_risk="maybe")  # type: ignore[arg-type]
    Guard(rippl, unguarded="search")  # type: ignore[arg-type]


async def refused_async(rippl: AsyncRippl) -> None:
    await rippl.what_if_retracted("CLM-1")  # type: ignore[arg-type]
    await rippl.run("run-1").observe("CLM-1")  # type: ignore[arg-type]


def accepted(rippl: Rippl, ids: Sequence[str]) -> None:
    rippl.add_claim("CLM-1", "text", sources=["SRC-1"], derived_from=("CLM-0",))
    rippl.justify("DEC-1", ids)
    rippl.check("ACT-1", at_risk="allow", unknown="record", on_error="deny")
    rippl.reviews(None)
    Policy(at_risk="allow", unknown="record", on_error="allow")
    Guard(rippl, unguarded={"search"}, only=frozenset({"search", "send"}))
