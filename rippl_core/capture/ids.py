"""The names and texts of what capture writes: content-addressed, so that recording the same thing
twice (a replayed turn, a retried call, a resumed run) finds what is already there.

- a run's root: a source "run R started" and the claim "the instructions of run R hold", which
  every decision of the run rests on (no captured action rests on nothing; retracting that claim
  stops the whole run);
- a decision: (run, turn, its calls); an action: (run, call, tool, canonical args), so a call whose
  arguments a human edited before it ran is another action of the same decision;
- a tool result: a source per (run, call), and a claim per (tool, canonical args, output digest),
  so the same output read again, in any run, from any cache or replica, is the same claim.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rippl_core._runtime.validation import MAX_TEXT_LENGTH, call_key, canonical_args, check_id
from rippl_core.models import ToolCall

SUMMARY_CHARS = 500  # how much of an output a result claim quotes


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def run_source(run: str) -> str:
    return f"RUNSRC-{_hash('run', run)[:16]}"


def run_claim(run: str) -> str:
    return f"RUN-{_hash('run', run)[:16]}"


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call of a turn, as capture names it: `ref` is the framework's call id, or the
    turn and the call's position in it when the framework gives none."""

    ref: str
    tool: str
    args: str  # canonical JSON of the arguments ("{}" for none)

    @classmethod
    def of(cls, call: ToolCall, turn: str, index: int) -> Call:
        """A call of a turn: by its own id, else by its position in the turn."""
        if call.id is None:
            return cls._with(call, f"{turn}#{index}")
        return cls.identified(call)

    @classmethod
    def identified(cls, call: ToolCall) -> Call:
        """A call by its own id (one judged or executed: the caller made sure it has one)."""
        return cls._with(call, check_id(call.id, what="call id"))

    @classmethod
    def _with(cls, call: ToolCall, ref: str) -> Call:
        return cls(ref, check_id(call.name, what="tool name"), canonical_args(call.args) or "{}")

    @property
    def key(self) -> str:
        """The declared-action lookup key of this call (tool and canonical args)."""
        return call_key(self.tool, self.args)

    def title(self) -> str:
        return _cut(f"{self.tool}({self.args})")


def decision(run: str, turn: str, calls: Sequence[Call]) -> str:
    parts = [f"{c.ref}\x1e{c.tool}\x1e{c.args}" for c in calls]
    return f"DEC-{_hash('turn', run, turn, *parts)[:16]}"


def action(run: str, call: Call) -> str:
    return f"ACT-{_hash('call', run, call.ref, call.tool, call.args)[:16]}"


def result_source(run: str, ref: str) -> str:
    return f"OBS-{_hash('result', run, ref)[:16]}"


def result_claim(call: Call, output_digest: str) -> str:
    return f"CLM-{_hash('returned', call.tool, call.args, output_digest)[:16]}"


def observation(run: str, ref: str | None, claims: Sequence[str]) -> str:
    return f"SAW-{_hash('saw', run, ref or '', *sorted(claims))[:16]}"


def carrier(run: str, ref: str) -> str:
    """A message of the run recorded as carrying what its input carried (a model's text reply, a
    summary, a message Rippl could not account for)."""
    return f"SAW-{_hash('carries', run, ref)[:16]}"


def unrecorded(run: str, ref: str, digest: str | None) -> str:
    """The claim that a tool result in run `run`'s input, which Rippl never recorded, is genuine."""
    return f"UNR-{_hash('unrecorded', run, ref, digest or '')[:16]}"


def memory_writer(run: str, call: str | None) -> str:
    """The writer of a memory: a tool call of a run, or the run itself (`call` None)."""
    return f"{run}\x1f{call or ''}"


def memory_written(writer: str, claim: str) -> str:
    """The node "run R wrote it": what a memory a writer wrote rests on (capture.memory)."""
    return f"WRT-{_hash('wrote', writer, claim)[:16]}"


def text_ref(text: str) -> str:
    """The ref of a message known only by its text (a framework that gives its messages no ids): a
    digest of the text with its white space collapsed."""
    return f"text:{_hash('text', ' '.join(text.split()))[:32]}"


def output_text(output: Any) -> str:
    """A tool's output as text (strings as they are, anything else as JSON or its repr)."""
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(output)


def output_digest(output: Any) -> str:
    return hashlib.sha256(output_text(output).encode("utf-8", "replace")).hexdigest()


def result_text(call: Call, output: Any) -> str:
    """The claim a tool result states: "`tool(args)` returned …" (the output, quoted short)."""
    text = " ".join(output_text(output).split())
    quoted = text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS] + "…"
    return _cut(f"{call.tool}({call.args}) returned: {quoted or '(nothing)'}")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT_LENGTH else text[:MAX_TEXT_LENGTH - 1] + "…"
