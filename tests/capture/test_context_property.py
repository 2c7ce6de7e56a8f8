"""Property: what capture records agrees with a plain reference of its two rules, on random runs.

Three runs of one scope (`A`, `B`, `C`) interleave tool calls (each result an observation under
its call id), messages the model writes from a chosen input (`wrote`), hand-overs written right
after reading the vetoes shown (a lead delegating), turns whose input is a random subset of what
the runs have shown (its own messages, the others': a hand-over or a veto in a shared history, and
refs nobody recorded: a summary or rewrite Rippl could not account for), vetoes the model reads or
never sees, repeats of vetoed acts in their run or another, spelt another way, re-plans,
reinstatements and one-call overrides. After every turn the decision's premises must be exactly
what the reference says the messages of its input carry, and every verdict must be what the
reference says: a veto binds its act in every run whose input holds a carrier of it. The
reference is written here from the rule (docs/design.md, "What a turn rests on", "why a veto binds
the action" and "a veto binds the team"), independently of the code; only the names of what
capture writes (ids) come from it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rippl_core import Rippl, ToolCall
from rippl_core.capture import ids
from rippl_core.capture.context import Carried, Observed, context_set, present

RUNS = ("A", "B", "C")
SCOPE = "S"


@given(ref=st.one_of(st.none(), st.text(min_size=1, max_size=3)),
       refs=st.one_of(st.none(), st.sets(st.text(min_size=1, max_size=3), max_size=4)))
def test_an_observation_is_present_when_its_ref_is_or_it_has_none(ref: str | None,
                                                                  refs: set[str] | None) -> None:
    assert present(Observed(ref, ("C",)), refs) == (refs is None or ref is None or ref in refs)


@given(carriers=st.dictionaries(st.sampled_from("abcd"), st.frozensets(st.sampled_from("XYZ")),
                                max_size=4),
       scope=st.dictionaries(st.sampled_from("cdef"), st.frozensets(st.sampled_from("XYZW")),
                             max_size=3),
       refs=st.one_of(st.none(), st.lists(st.sampled_from("abcdefg"), max_size=5, unique=True)),
       told=st.sets(st.sampled_from("abv"), max_size=2),
       inputs=st.sets(st.sampled_from("efg"), max_size=3))
def test_the_executable_rule_matches_its_statement(carriers: dict[str, frozenset[str]],
                                                   scope: dict[str, frozenset[str]],
                                                   refs: list[str] | None, told: set[str],
                                                   inputs: set[str]) -> None:
    run = Carried()
    for ref, claims in carriers.items():
        run.observe(Observed(ref, tuple(claims)))
    vetoes = {"a": {"X"}, "v": {"Y"}}
    got, recorded = context_set(run, refs, told, vetoes, scope, inputs)
    false = {n for t in told for n in vetoes.get(t, ())}
    everything = set().union(*carriers.values()) if carriers else set()
    if refs is None:
        assert set(got) == everything - false and recorded == {}
        return
    want: set[str] = set()
    present = [r for r in refs if r not in told]
    for i, ref in enumerate(present):
        if ref in carriers:
            want |= carriers[ref]
        if ref in scope:
            want |= scope[ref]
            assert recorded[ref] == scope[ref]
        elif ref not in carriers:
            later = [r in carriers or r in scope for r in present[i + 1:]]
            earlier = [r in carriers or r in scope for r in present[:i]]
            users = ref in inputs and not any(later) and (any(earlier) or not everything)
            want |= set() if users else everything
            assert recorded[ref] == (frozenset() if users else everything)
    assert set(got) == want - false


# ------------------------------------------------------------------------------------ the graph

# A binding: (the vetoed act's key, the decision that vetoed it, the run it was vetoed in).
type Bind = tuple[str, str, str]


@dataclass
class Reference:
    """The rule, plainly: what each carrier of each run carries (node ids, and bindings), what
    each veto named and binds, which claims are retracted, the vetoed calls and overrides."""

    carriers: dict[str, dict[str, tuple[str, set[str], set[Bind]]]] = field(
        default_factory=lambda: {r: {} for r in RUNS})  # run -> ref -> (carrier id, nodes, binds)
    everything: dict[str, set[str]] = field(default_factory=lambda: {r: set() for r in RUNS})
    named: dict[str, set[str]] = field(default_factory=dict)  # vetoed call id -> trail nodes
    binds: dict[str, set[Bind]] = field(default_factory=dict)  # vetoed call id -> its bindings
    retracted: set[str] = field(default_factory=set)
    decisions: dict[str, set[str]] = field(default_factory=dict)  # decision -> premises
    vetoed: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (run, key) -> decisions
    overrides: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # unused ones

    def carry(self, run: str, ref: str, carrier: str, nodes: set[str],
              binds: set[Bind] = frozenset()) -> None:  # type: ignore[assignment]
        self.carriers[run].setdefault(ref, (carrier, set(nodes), set(binds)))
        self.everything[run] |= nodes

    def out(self, node: str) -> bool:
        """Whether a premise node does not hold: a retracted claim, a hand-over of one, or a
        decision resting on one."""
        if node in self.retracted:
            return True
        if node.startswith("HND-"):
            return self.out(node.rsplit("-", 2)[-2] + "-" + node.rsplit("-", 1)[-1])
        return any(self.out(p) for p in self.decisions.get(node, ()))

    def others(self, run: str) -> list[str]:
        return [r for r in RUNS if r != run]

    def context(self, run: str, refs: list[str], told: list[str],
                inputs: set[str]) -> tuple[set[str], set[Bind]]:
        """The claims a turn (or a message written) rests on, and the bindings it holds."""
        known = {n for t in told for n in self.named.get(t, ())}
        present = list(dict.fromkeys(r for r in refs if r not in told))  # a veto carries nothing
        found = [r in self.carriers[run] or any(r in self.carriers[o] for o in self.others(run))
                 for r in present]
        nodes: set[str] = set()
        # the bindings of the vetoes it read, in its run or another's (a shared history)
        binds: set[Bind] = {b for t in told for b in self.binds.get(t, ())}
        unknown = []
        for position, ref in enumerate(present):
            own = self.carriers[run].get(ref)
            if own is not None:
                nodes |= own[1]
                binds |= own[2]
            for other in self.others(run):
                theirs = self.carriers[other].get(ref)
                if theirs is not None:
                    carrier, carried, bound = theirs
                    nodes |= {f"HND-{carrier}-{origin(n)}" for n in carried}
                    binds |= bound
            if own is None and not found[position]:
                unknown.append((ref, position))
        # a message Rippl cannot account for may come from any run of the scope: it carries
        # everything this run carried, and what the other runs carried, through hand-overs, and
        # every binding any of them holds, and those of this run's own vetoes
        everything = set(self.everything[run]) | {
            f"HND-{carrier}-{origin(n)}" for other in self.others(run)
            for carrier, carried, _ in self.carriers[other].values() for n in carried}
        all_binds = {b for r in RUNS for _, _, bound in self.carriers[r].values() for b in bound} \
            | {b for bound in self.binds.values() for b in bound if b[2] == run}
        for ref, position in unknown:
            # the user's new input: after every known message and after one of them (or in a
            # scope that has carried nothing); anything else unknown is a rewrite
            users = ref in inputs and not any(found[position + 1:]) and (
                any(found[:position]) or not everything)
            carried = set() if users else everything
            self.carry(run, ref, ids.carrier(run, ref), carried, set() if users else all_binds)
            nodes |= carried
            if not users:
                binds |= all_binds
        # what a veto named leaves the context, and so does a hand-over of it; bindings stay
        return {n for n in nodes if n not in known and origin(n) not in known}, binds


def origin(node: str) -> str:
    """The claim a hand-over claim stands for (a claim stands for itself)."""
    return node[-20:] if node.startswith("HND-") else node


steps = st.lists(st.one_of(
    st.tuples(st.just("read"), st.sampled_from(RUNS), st.integers(0, 2)),
    st.tuples(st.just("write"), st.sampled_from(RUNS), st.integers(0, 2 ** 12)),
    st.tuples(st.just("turn"), st.sampled_from(RUNS), st.integers(0, 2 ** 12)),
    st.tuples(st.just("veto"), st.sampled_from(RUNS), st.integers(0, 2 ** 12)),
    st.tuples(st.just("repeat"), st.sampled_from(RUNS), st.integers(0, 2 ** 12)),
    st.tuples(st.just("delegate"), st.sampled_from(RUNS), st.integers(0, 2 ** 12)),
    st.tuples(st.just("reinstate"), st.sampled_from(RUNS), st.integers(0, 50)),
    st.tuples(st.just("override"), st.sampled_from(RUNS), st.integers(0, 50)),
), min_size=2, max_size=14)


@settings(max_examples=int(os.environ.get("RIPPL_EXAMPLES", "50")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=steps)
def test_decisions_and_verdicts_agree_with_the_reference(open_rippl: Callable[..., Rippl],
                                                         plan: list[tuple[str, str, int]]) -> None:
    rippl = open_rippl()
    ref = Reference()
    shown: dict[str, list[str]] = {r: [] for r in RUNS}  # refs each run has had in its input
    results: list[tuple[str, str]] = []  # every result: (the ref it was read under, its claim)
    vetoes: list[str] = []  # call ids of the veto messages (any run's: a shared history)
    calls: list[tuple[str, str, int | str]] = []  # (run, call id, shard) of vetoed calls

    def pick(run: str, bits: int, n: int) -> tuple[list[str], set[str]]:
        """A model input: a subset of what the runs have shown (its own messages, and the others':
        hand-overs, their vetoes), and maybe a message nobody recorded, marked as possibly the
        user's or not, before or after the rest (the user's new message, or a summary or
        rewrite Rippl did not see written)."""
        pool = shown[run] + [r for o in ref.others(run) for r in shown[o]]
        chosen = [r for i, r in enumerate(pool) if bits >> (i % 10) & 1]
        if bits >> 10 & 1:
            chosen = [f"u{n}", *chosen] if bits >> 11 & 1 else [*chosen, f"u{n}"]
        return chosen, ({f"u{n}"} if bits & 3 == 3 else set())

    def turn(run: str, n: int, call: ToolCall, context: list[str], told: list[str],
             inputs: set[str] = frozenset()) -> bool:  # type: ignore[assignment]
        handle = rippl.run(run, scope=SCOPE)
        expected, binds = ref.context(run, context, told, inputs)
        expected |= {ids.run_claim(run)}
        [verdict] = handle.decide(f"t{n}", [call], context=context, told=told, inputs=sorted(inputs))
        decision = ids.decision(run, f"t{n}", [ids.Call.of(call, f"t{n}", 0)])
        assert set(rippl.get(decision).justifications[0]) == expected
        ref.decisions[decision] = expected
        ref.carry(run, f"t{n}", decision, expected, binds)
        shown[run].append(f"t{n}")
        act = ids.Call.of(call, "x", 0).key
        key = (run, act)
        own_out = any(ref.out(p) for p in expected)
        # bound: the calls vetoed in its run, and the acts handed over to it after a veto
        bound = ref.vetoed.get(key, []) + sorted({d for a, d, r in binds if a == act and r != run})
        blockers_out = own_out or any(ref.out(d) for d in bound)
        if not own_out and any(r != run and a == act and ref.out(d) for a, d, r in binds):
            event("a veto handed over from another run decides")
        allowed = not blockers_out
        retracted = {origin(p) for p in expected if ref.out(p)} | {
            origin(p) for d in bound for p in ref.decisions[d] if ref.out(p)}
        if not allowed and key in ref.overrides and retracted <= ref.overrides[key]:
            allowed = True  # its only blockers are premises an approved override covers
            del ref.overrides[key]
        assert verdict.allowed == allowed, (verdict.reason, expected, bound)
        if not verdict.allowed:
            ref.named[call.id] = {n for b in verdict.blockers if b.state.value == "OUT"  # type: ignore[misc]
                                  for n in b.trail}
            if own_out:
                ref.vetoed.setdefault(key, []).append(decision)
                ref.binds[call.id] = {(act, decision, run)}  # type: ignore[index]
            if any(r != run for _, _, r in binds if _ == act) and not own_out:
                assert "handed over from run" in verdict.reason \
                    or "whose veto message is in this run's input" in verdict.reason
            vetoes.append(call.id)  # type: ignore[arg-type]
            shown[run].append(call.id)  # type: ignore[arg-type]  # the veto message
        return verdict.allowed

    for n, (kind, run, value) in enumerate(plan):
        handle = rippl.run(run, scope=SCOPE)
        if kind == "read":
            call = ToolCall(name="read", args={"shard": value}, id=f"c{n}")
            turn(run, n, call, [], [])
            claim = handle.executed(call, f"shard {value}: healthy (step {n})")
            results.append((f"c{n}", claim))
            ref.carry(run, f"c{n}", ids.observation(run, f"c{n}", [claim]), {claim})
            shown[run].append(f"c{n}")
        elif kind in ("write", "delegate"):
            context, inputs = pick(run, value, n)
            if kind == "delegate":  # a hand-over written right after reading every veto shown
                context += [v for v in vetoes if v in shown[run] and v not in context]
            told = [t for t in vetoes if t in context]
            expected, binds = ref.context(run, context, told, inputs)
            carried = handle.wrote(f"m{n}", context=context, told=told, inputs=sorted(inputs))
            assert set(carried) == expected
            ref.carry(run, f"m{n}", ids.carrier(run, f"m{n}"), expected, binds)
            shown[run].append(f"m{n}")
        elif kind in ("turn", "veto"):
            context, inputs = pick(run, value, n)
            told = [t for t in vetoes if t in context]
            shard: int | str = 9 if kind == "veto" else f"x{n}"
            if kind == "veto" and results:
                carrier, victim = results[value % len(results)]
                context.append(carrier)  # its result, in this run's input or handed over
                if victim not in ref.retracted:
                    rippl.retract(victim, reason="found false", by="monitor")
                    ref.retracted.add(victim)
            call = ToolCall(name="migrate", args={"shard": shard}, id=f"c{n}")
            if not turn(run, n, call, context, told, inputs):
                calls.append((run, f"c{n}", shard))
        elif kind == "repeat" and calls:
            # the same act, in its run or another's, whatever the model read, however it spells
            # it (9 or 9.0)
            _, _, shard = calls[value % len(calls)]
            context, inputs = pick(run, value, n)
            told = [t for t in vetoes if t in context]
            spelt = {"shard": float(shard) if isinstance(shard, int) and value % 2 else shard}
            turn(run, n, ToolCall(name="migrate", args=spelt, id=f"c{n}"), context, told, inputs)
        elif kind == "reinstate" and ref.retracted:
            claim = sorted(ref.retracted)[value % len(ref.retracted)]
            rippl.reinstate(claim, reason="it was right", by="alice")
            ref.retracted.discard(claim)
        elif kind == "override" and any(r == run for r, _, _ in calls):
            _, _call_id, shard = [c for c in calls if c[0] == run][value % len([c for c in calls
                                                                            if c[0] == run])]
            key = (run, ids.Call.of(ToolCall(name="migrate", args={"shard": shard}), "x", 0).key)
            if not any(ref.out(d) for d in ref.vetoed.get(key, [])) or key in ref.overrides:
                continue  # nothing to override (reinstated meanwhile), or one waits already
            proposal = rippl.override(ToolCall(name="migrate", args={"shard": shard}), run=run,
                                      reason="checked by hand", by=f"agent:{run}")
            rippl.approve(proposal.id, by="alice")
            ref.overrides[key] = set(proposal.claims)
    assert rippl.verify_receipts().ok


def test_the_users_new_input_is_told_apart_from_a_rewrite() -> None:
    """An unknown ref after a known one, with only unknown messages after it, is the user's input
    and carries nothing; followed by a message Rippl knows (a ref only another run of the scope
    carried counts), it is a rewrite and carries everything the run carried."""
    run = Carried(carriers={"a": frozenset({"C1"})}, everything={"C1", "R"})
    claims, recorded = context_set(run, ["a", "u"], (), {}, inputs={"u"})
    assert claims == ["C1"] and recorded == {"u": frozenset()}
    claims, recorded = context_set(run, ["a", "u", "b"], (), {}, scope={}, inputs={"u"})
    assert recorded == {"u": frozenset(), "b": frozenset({"C1", "R"})} and claims == ["C1", "R"]
    claims, recorded = context_set(run, ["u", "s"], (), {}, scope={"s": {"S"}}, inputs={"u"})
    assert recorded == {"u": frozenset({"C1", "R"}), "s": frozenset({"S"})}


def test_repeat_keys_name_the_tool_only_under_repeat_scope_tool() -> None:
    from rippl_core.capture.context import repeat_keys, tool_key

    assert repeat_keys("r1", "migrate", "{}", "tool")[1] == tool_key("r1", "migrate")
    assert repeat_keys("r1", "migrate", "{}", "args")[1] is None
