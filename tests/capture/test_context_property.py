"""Property: a captured decision rests exactly on the context set, whatever a run did before it.

Random runs interleave tool calls (each result an observation under its call id), memory reads
(observations under a message handle, or under none), vetoes the model reads (a retracted result
named by a veto whose message stays in context) and trims (refs leaving the model's input). After
each turn, the decision's premises must be the run's root claim plus exactly the claims a
reference model says are in context: those of observations still present, minus what a veto the
model read named. The reference is written here from the rule, independently of the code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import Rippl, ToolCall
from rippl_core.capture import ids
from rippl_core.capture.context import Observed, context_set, present


@dataclass
class Model:
    """What the test knows: each observation's ref and claims, and what each veto named."""

    observed: list[tuple[str | None, set[str]]] = field(default_factory=list)
    named: dict[str, set[str]] = field(default_factory=dict)

    def expected(self, refs: set[str] | None, told: set[str]) -> set[str]:
        false = set().union(*(self.named.get(c, set()) for c in told))
        return {claim for ref, claims in self.observed
                if refs is None or ref is None or ref in refs for claim in claims} - false


@given(ref=st.one_of(st.none(), st.text(min_size=1, max_size=3)),
       refs=st.one_of(st.none(), st.sets(st.text(min_size=1, max_size=3), max_size=4)))
def test_an_observation_is_present_when_its_ref_is_or_it_has_none(ref: str | None,
                                                                  refs: set[str] | None) -> None:
    assert present(Observed(ref, ("C",)), refs) == (refs is None or ref is None or ref in refs)


steps = st.lists(st.one_of(
    st.tuples(st.just("tool"), st.integers(0, 3)),            # a call of tool t, its result seen
    st.tuples(st.just("memory"), st.integers(0, 2)),          # a memory read of claim m
    st.tuples(st.just("veto"), st.integers(0, 50)),           # retract a seen result, read the veto
    st.tuples(st.just("turn"), st.integers(0, 2 ** 16)),      # a turn with a random context subset
), min_size=1, max_size=10)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=steps, with_none=st.booleans())
def test_decisions_rest_exactly_on_the_context_set(open_rippl: Callable[..., Rippl],
                                                   plan: list[tuple[str, int]], with_none: bool) -> None:
    rippl = open_rippl()
    for m in range(3):
        rippl.add_claim(f"MEM-{m}", f"memory fact {m}")
    run, model = rippl.run("prop"), Model()
    refs: list[str] = []     # every ref the run has used, in order
    results: dict[str, str] = {}  # call id -> result claim
    told: set[str] = set()
    for n, (kind, value) in enumerate(plan):
        if kind == "tool":
            call = ToolCall(name=f"tool{value}", args={"n": n}, id=f"call{n}")
            run.decide(f"t{n}", [call], context=[])
            results[call.id] = run.executed(call, f"output {n}")  # type: ignore[index]
            model.observed.append((call.id, {results[call.id]}))  # type: ignore[index]
            refs.append(call.id)  # type: ignore[arg-type]
        elif kind == "memory":
            ref = None if with_none and value == 0 else f"mem{n}"
            run.observe([f"MEM-{value}"], ref=ref)
            model.observed.append((ref, {f"MEM-{value}"}))
            if ref is not None:
                refs.append(ref)
        elif kind == "veto" and results:
            victim_call = sorted(results)[value % len(results)]
            claim = results[victim_call]
            if not rippl.get(claim).retracted:
                rippl.retract(claim, reason="found false", by="monitor")
            vetoed = ToolCall(name="act", args={"on": victim_call}, id=f"veto{n}")
            [verdict] = run.decide(f"t{n}", [vetoed], context=[victim_call])
            assert not verdict.allowed
            model.named[vetoed.id] = {node for b in verdict.blockers for node in b.trail}  # type: ignore[index]
            told.add(vetoed.id)  # type: ignore[arg-type]
            refs.append(vetoed.id)  # type: ignore[arg-type]
        elif kind == "turn":
            chosen = {r for i, r in enumerate(refs) if value >> (i % 16) & 1}
            context = None if value % 7 == 0 else chosen
            told_present = told if context is None else told & chosen
            call = ToolCall(name="act", args={"turn": n}, id=f"turn{n}")
            [verdict] = run.decide(f"t{n}", [call], context=None if context is None else sorted(context),
                                   told=sorted(told_present))
            decision = rippl.get(verdict.target).justifications[0][0]  # type: ignore[arg-type]
            rests_on = set(rippl.get(decision).justifications[0])
            assert rests_on == model.expected(context, told_present) | {ids.run_claim("prop")}
            assert set(context_set([Observed(r, tuple(c)) for r, c in model.observed], context,
                                   told_present, model.named)) == model.expected(context, told_present)
