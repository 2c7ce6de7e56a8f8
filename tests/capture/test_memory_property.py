"""Property: premises flow through memory, against a plain reference of the rule (docs/design.md,
"Memory written in a run"), on random runs of several threads (each run alone in its scope).

Runs read shard healths (readings that age, re-read with the same or another output: refreshed,
or superseding the others), write memories from inside a `remember` call (a belief of the claim
"fact k", stated by the run), recall memories another thread wrote, and act; readings are
retracted and reinstated; the clock advances. After every step the verdict on each act, each
memory's status and `compensations()` must be what the reference says:

- a reading's claim holds unless retracted; it is fresh until its latest reading's end, and a
  reading of another output of the same read ends it (superseded) until it is read again;
- a memory holds while one of its writes holds: a write rests on what the writing turn rested on
  (the claims the run had read and recalled), and is no fresher than those readings (the
  readings under a recalled memory, as recorded when it was written);
- an act is allowed when every premise under it holds and every reading it rests on is fresh;
  executed acts whose premises no longer hold are compensations (an aged reading makes none).

The reference is written from the rule, independently of the code; only ids come from it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rippl_core import Rippl, State, ToolCall
from rippl_core.capture import ids
from rippl_core.capture.memory import Writing, writing
from rippl_core.capture.run import RunRef
from rippl_core.testing import Clock

RUNS = ("T1", "T2", "T3")
FRESH = 300  # seconds a reading holds
OUTPUTS = ("healthy", "degraded")


@dataclass
class Reading:
    until: int  # the end of its latest reading (ms)
    superseded: bool = False


@dataclass
class Reference:
    readings: dict[str, Reading] = field(default_factory=dict)  # claim -> freshness
    keys: dict[str, str] = field(default_factory=dict)  # claim -> the read it is a reading of
    retracted: set[str] = field(default_factory=set)
    writes: dict[str, list[tuple[frozenset[str], frozenset[str]]]] = field(default_factory=dict)
    # memory claim -> [(premises of the writing turn, readings under it then)]
    memory_reads: dict[str, set[str]] = field(default_factory=dict)  # memory -> its `reads`
    context: dict[str, set[str]] = field(default_factory=lambda: {r: set() for r in RUNS})
    decisions: dict[str, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)
    executed: set[str] = field(default_factory=set)  # decisions of calls that ran

    def holds(self) -> set[str]:
        """Every claim that holds now: readings not retracted, and (least fixpoint) memories with
        a write whose premises all hold."""
        held = {c for c in self.readings if c not in self.retracted} | {
            ids.run_claim(r) for r in RUNS}  # a run's instructions hold: never retracted here
        changed = True
        while changed:
            changed = False
            for memory, writes in self.writes.items():
                if memory not in held and memory not in self.retracted and any(
                        premises <= held for premises, _ in writes):
                    held.add(memory)
                    changed = True
        return held

    def reads_of(self, premises: set[str]) -> frozenset[str]:
        """The readings a node resting on `premises` rests on (as recorded now)."""
        found: set[str] = set()
        for p in premises:
            found |= {p} if p in self.readings else self.memory_reads.get(p, set())
        return frozenset(found)

    def fresh(self, claim: str, now: int) -> bool:
        reading = self.readings[claim]
        return not reading.superseded and reading.until > now

    def verdict(self, decision: str, now: int) -> str:
        premises, reads = self.decisions[decision]
        if not premises <= self.holds():
            return "vetoed"
        if any(not self.fresh(r, now) for r in reads):
            return "stale"
        return "allowed"

    def read(self, claim: str, key: str, now: int) -> None:
        for other, other_key in self.keys.items():
            if other_key == key and other != claim and not self.readings[other].superseded:
                self.readings[other].superseded = True
                self.readings[other].until = min(self.readings[other].until, now)
        self.keys[claim] = key
        previous = self.readings.get(claim)
        until = now + FRESH * 1000
        if previous is not None and previous.until > now and not previous.superseded:
            until = max(until, previous.until)
        self.readings[claim] = Reading(until)

    def compensations(self) -> set[str]:
        held = self.holds()
        return {d for d in self.executed if not self.decisions[d][0] <= held}


steps = st.lists(st.one_of(
    st.tuples(st.just("read"), st.sampled_from(RUNS), st.integers(0, 3)),
    st.tuples(st.just("remember"), st.sampled_from(RUNS), st.integers(0, 2)),
    st.tuples(st.just("recall"), st.sampled_from(RUNS), st.integers(0, 2)),
    st.tuples(st.just("act"), st.sampled_from(RUNS), st.integers(0, 0)),
    st.tuples(st.just("retract"), st.sampled_from(RUNS), st.integers(0, 9)),
    st.tuples(st.just("reinstate"), st.sampled_from(RUNS), st.integers(0, 9)),
    st.tuples(st.just("advance"), st.sampled_from(RUNS), st.integers(1, 4)),
), min_size=3, max_size=14)


@settings(max_examples=int(os.environ.get("RIPPL_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=steps)
def test_memories_verdicts_and_compensations_agree_with_the_reference(
        open_rippl: Callable[..., Rippl], plan: list[tuple[str, str, int]]) -> None:
    rippl = open_rippl()
    ref = Reference()
    shown: dict[str, list[str]] = {r: [] for r in RUNS}  # refs in each run's input
    memories: dict[int, str] = {}  # fact k -> its claim, once written
    acts: list[tuple[str, ToolCall, str]] = []  # (run, call, decision) of every act decided
    actions: dict[str, str] = {}  # decision -> the action of its call

    with Clock("2026-12-01T10:00:00Z", ticking=True) as clock:
        def decide(run: str, n: int, call: ToolCall) -> tuple[str, str]:
            """Decide a call on everything the run has in its input: (verdict, decision)."""
            premises = set(ref.context[run]) | {ids.run_claim(run)}
            named = ids.Call.of(call, f"t{n}", 0)
            decision = ids.decision(run, f"t{n}", [named])
            actions[decision] = ids.action(run, named)
            ref.decisions[decision] = (frozenset(premises), ref.reads_of(premises))
            [verdict] = rippl.run(run).decide(f"t{n}", [call], context=list(shown[run]))
            assert set(rippl.get(decision).justifications[0]) == premises
            want = ref.verdict(decision, clock.now)
            if call.name == "get_health" and want == "stale":
                want = "allowed"  # a read is how the agent reads again
            got = "allowed" if verdict.allowed else "stale" if verdict.expired and \
                not verdict.blockers else "vetoed"
            assert got == want, (call, verdict.reason)
            return got, decision

        def run_it(run: str, call: ToolCall, decision: str, output: str, **kw: object) -> str:
            claim = rippl.run(run).executed(call, output, **kw)  # type: ignore[arg-type]
            ref.executed.add(decision)
            return claim

        for n, (kind, run, value) in enumerate(plan):
            if kind == "read":
                call = ToolCall(name="get_health", args={"shard": value % 2}, id=f"c{n}")
                got, decision = decide(run, n, call)
                output = OUTPUTS[value // 2]
                claim = run_it(run, call, decision, f"shard {value % 2}: {output}",
                               fresh_for=FRESH)
                ref.read(claim, f"shard-{value % 2}", clock.now)
                ref.context[run].add(claim)
                shown[run].append(f"c{n}")
            elif kind == "remember":
                call = ToolCall(name="remember", args={"fact": value}, id=f"c{n}")
                got, decision = decide(run, n, call)
                if got != "allowed":
                    continue  # the tool never ran: nothing was written
                with writing(Writing(RunRef(run), call=f"c{n}")):
                    claim = rippl.add_claim(None, f"fact {value}").id
                    rippl.believe(run, claim, topic=f"fact-{value}")
                run_it(run, call, decision, "saved")
                premises, reads = ref.decisions[decision]
                ref.writes.setdefault(claim, []).append((premises, reads))
                ref.memory_reads[claim] = ref.memory_reads.get(claim, set()) | set(reads)
                memories[value] = claim
            elif kind == "recall" and value in memories:
                claim = memories[value]
                rippl.run(run).observe([claim], ref=f"r{n}")
                ref.context[run].add(claim)
                shown[run].append(f"r{n}")
                if claim not in ref.holds():
                    event("a run recalls a memory that no longer holds")
            elif kind == "act":
                call = ToolCall(name="migrate", args={"step": n}, id=f"c{n}")
                got, decision = decide(run, n, call)
                acts.append((run, call, decision))
                if got == "allowed":
                    run_it(run, call, decision, "migrated")
                if got != "allowed" and any(p in ref.writes for p in ref.decisions[decision][0]):
                    event(f"an act resting on a memory is {got}")
            elif kind == "retract" and ref.readings:
                claim = sorted(ref.readings)[value % len(ref.readings)]
                if claim not in ref.retracted:
                    rippl.retract(claim, reason="found false", by="monitor")
                    ref.retracted.add(claim)
            elif kind == "reinstate" and ref.retracted:
                claim = sorted(ref.retracted)[value % len(ref.retracted)]
                rippl.reinstate(claim, reason="it was right", by="alice")
                ref.retracted.discard(claim)
            elif kind == "advance":
                clock.advance(minutes=2 * value)
            # after every step: each memory's status, each act judged again, the compensations
            held = ref.holds()
            for claim in memories.values():
                want = State.IN if claim in held else State.OUT
                assert rippl.get(claim).state is want, claim
            for act_run, call, decision in acts:
                verdict = rippl.run(act_run).judge(call)
                want = ref.verdict(decision, clock.now)
                got = "allowed" if verdict.allowed else "stale" if verdict.expired and \
                    not verdict.blockers else "vetoed"
                assert got == want, (call, verdict.reason)
            owed = {c.action for c in rippl.compensations()}
            assert owed == {actions[d] for d in ref.compensations()}
