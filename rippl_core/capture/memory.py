"""A memory written in a captured run rests on what the run carried (docs/design.md, "Memory
written in a run").

Memory is the longest-lived carrier an agent has. While a captured run writes (a guarded tool
call executing, or an adapter writing for its run: a LangGraph node, CrewAI's own save of a task
output, an MCP session), each claim a belief adopts or a record states gets one more
justification: a node "run R wrote it (turn T, call C)" resting on what the writing rested on,
in the same commit as the write:

- a tool call: what its turn rested on (its decision's premises, after the told rule), and the
  bindings its turn held (a memory written after a veto hands the veto on);
- the run itself (no call): everything the run has carried, less what the vetoes it read named
  (as for a message Rippl cannot account for: `context=None`), and every binding it holds.

So the memory goes OUT by truth maintenance when what it was written from is retracted (another
justification that holds keeps it IN: a source someone named, another run's write), comes back
with a reinstatement, is no fresher than the readings it was written from (`reads`: a call
resting on it after they aged is denied as stale), and a call repeating an act vetoed before it
was written stays vetoed wherever it is recalled. A claim that was a premise before the write
began (someone stated it with no source) holds on its own: the write adds nothing to it; one the
run itself added (`stamped`: a claim created while it writes, e.g. by an MCP client's add_claim
before its record_belief) is the run's own statement. A call never recorded (fail closed) writes a
memory resting on a retracted claim that it was.

Who is writing is a context variable (`writing`), set by the adapters around a guarded call's
execution, so `believe` or a record store's `save` called from inside a tool finds its run; an
adapter writing for its run passes a `Writing` itself. A write outside any run keeps the sources
its caller names.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

from rippl_core._runtime.op import Op
from rippl_core._runtime.timeutil import now_ms
from rippl_core._runtime.validation import check_id
from rippl_core._runtime.wire import Query
from rippl_core.capture import cypher, ids
from rippl_core.capture.run import RunRef
from rippl_core.causal.spec import NodeSpec
from rippl_core.causal.write import justify
from rippl_core.vocabulary import Kind


@dataclass(frozen=True, slots=True)
class Writing:
    """Who writes: a run, the tool call of it that writes (None: the run itself), since when
    (epoch ms, default now: a claim created from then on is this write's own statement, one that
    existed before is someone else's), the graph the run is captured in (None: the graph written
    to), and, for the run itself, the vetoes it read."""

    run: RunRef
    call: str | None = None
    since: int = field(default_factory=now_ms)
    graph: str | None = None
    told: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.call is not None:
            check_id(self.call, what="call id")


_current: ContextVar[Writing | None] = ContextVar("rippl_writing", default=None)


def current(graph: str) -> Writing | None:
    """Who is writing now, for a write to `graph` (None outside a run, or for another graph)."""
    found = _current.get()
    return found if found is not None and found.graph in (None, graph) else None


@contextmanager
def writing(who: Writing | None) -> Iterator[None]:
    """Writes made inside this block (in this context) are `who`'s (None: nobody's)."""
    token = _current.set(who)
    try:
        yield
    finally:
        _current.reset(token)


class Justified:
    """What a memory write joins to its commit when a run writes it (a `causal.joined.Joined`):
    the writer node of each claim, resting on what the writing rested on, linked to the claim."""

    def __init__(self, who: Writing) -> None:
        self.who = who

    def queries(self, claims: Sequence[str], now: int) -> list[Query]:
        """The writer node of each claim (kept when the writing run is pruned: it holds the
        memory's support), linked to the claim, in one query."""
        who, run = self.who, self.who.run
        writer = ids.memory_writer(run.id, who.call)
        rows = [{"claim": c, "w": ids.memory_written(writer, c)} for c in dict.fromkeys(claims)]
        props = {"kind": Kind.CLAIM.value, "retracted": False, "pending": 0, "created_at": now,
                 "wrote_run": run.id, "wrote_call": who.call}
        if who.call is None:
            return [cypher.run_wrote_memory(run.props(now), rows, _dropped(props), who.told,
                                            who.since, now)]
        unrecorded = ids.unrecorded(run.id, who.call, "memory")
        claim = NodeSpec(Kind.CLAIM, f"call {who.call} of run {run.id}, which wrote a memory, was "
                         "recorded", unrecorded).validated().props(now)
        return [cypher.wrote_memory(
            cypher.call_ref(run.id, who.call), rows, _dropped(props),
            {"id": unrecorded, "props": {**claim, "run": run.id}},
            who.since, now)]

    def after(self, replies: Sequence[Sequence[Sequence[Any]]]) -> Op[None]:
        """Link, with a relabel, each writer whose link would change its claim's state."""
        for rows in replies:
            for claim, writer, done in rows:
                if not done:
                    yield from justify(claim, [writer], now=now_ms())


def justified(who: Writing | None) -> Justified | None:
    return None if who is None else Justified(who)


def stamped(spec: NodeSpec, who: Writing | None) -> NodeSpec:
    """A claim written while a run writes, marked as that run's own statement (`created_in`): a
    memory of it the run writes later rests on the run, even if the claim was added before."""
    return spec if who is None else replace(spec, created_in=who.run.id)


def _dropped(props: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if v is not None}
