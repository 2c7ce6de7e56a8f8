"""What a captured decision rests on (pure, no I/O): the rule's executable specification.

**Premises flow with the text that carries them.** Every message of a run that can carry
observations into a model's input has a reference (`ref`) and carries a set of claims, recorded
once, when Rippl first sees it:

- a tool result (its call id) carries its result claim; a memory read (its handle) the claims it
  returned; an observation with no ref (a citation, a read whose message the adapter cannot see)
  is in context for the rest of the run;
- a model turn with tool calls (its turn id) carries what the turn rested on;
- a message the model wrote without tool calls, or a summary a model wrote (`Run.wrote`), carries
  what its input carried;
- a ref that no carrier of the run has is looked up among the carriers of the run's scope (the
  runs that hand messages to one another): found there, it carries what it carried in its own
  run (a hand-over);
- a ref found nowhere is *unaccounted* (a rewrite of the history Rippl did not see written): it
  carries everything the run has carried so far, and is recorded so (fail closed); except a
  message the adapter marks as possibly the user's (a human or system message: `inputs`) that
  comes after every message Rippl knows in this input, and after at least one of them (or the run
  has carried nothing yet): the new tail of the conversation, the user's own input, which carries
  nothing (recorded so). A new message *before* a known one, or an input whose known messages are
  all gone, is a rewrite of the history.

A turn rests on what the messages in its input carry (`refs`; None when the adapter cannot tell:
everything the run has carried), less every node named by a veto the model read (`told`: the call
ids of veto messages in its input; a veto message itself carries nothing), wherever it came from (a
claim handed over from another run is that claim here; the graph keeps it as a hand-over claim,
which leaves with it).

**A veto binds the action.** A call that repeats a call vetoed in its run (the same repeat key:
tool and canonical arguments, or the tool alone under `repeat_scope="tool"`) is also driven by the
vetoed call's decision: whatever the model was told, it stays vetoed while that decision's
premises do not hold.

**A veto flows with its carriers.** A veto holds *bindings*: its act (tool and canonical
arguments), and each node that vetoed it (its decision, a declared action). A turn holds the
bindings of the vetoes it read (`told`, in its run or, in a shared history, another run of its
scope) and of every message and carried claim of its input (each message records, once, the
bindings of the input it was written from; a message Rippl cannot account for, those of every
veto of the run as well: `bindings`). Telling removes claims, never bindings. A call of a turn
that repeats a binding's act handed over from another run (the same act; or, under
`repeat_scope="tool"`, its tool) is also driven by the node that vetoed it: vetoed while that node
does not hold, naming the veto and the message that brought it. A run's own vetoes bind its own
repeats through their repeat keys (above).

The decide query (`capture.cypher.decide`) computes the same thing inside the one round trip that
records the turn; the property test (tests/capture/test_context_property.py) holds what it writes
to an independent reference of this rule on random runs.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rippl_core._runtime.validation import repeat_key
from rippl_core.models import RepeatScope

REPEAT_SCOPES: tuple[RepeatScope, ...] = ("args", "tool")
# A binding as the nodes that carry it store it (`bound`): the vetoed act (its tool and canonical
# arguments: the call's declared-action key), its tool, the node that vetoed it, the vetoed action
# and its run, joined by BIND_SEP (ids and keys are printable: it is free).
BIND_SEP = "\x1e"


@dataclass(frozen=True, slots=True)
class Observed:
    """One observation of a run: the claims it brought into context, under a reference."""

    ref: str | None
    claims: tuple[str, ...]


def present(observation: Observed, refs: Collection[str] | None) -> bool:
    """Whether an observation is in the model's input (always, for one without a ref)."""
    return refs is None or observation.ref is None or observation.ref in refs


@dataclass
class Carried:
    """What one run has recorded, as the rule sees it: its carriers by ref, the claims in context
    for the whole run (observations with no ref), and everything it has carried so far."""

    carriers: dict[str, frozenset[str]] = field(default_factory=dict)
    always: set[str] = field(default_factory=set)
    everything: set[str] = field(default_factory=set)

    def observe(self, observation: Observed) -> None:
        claims = frozenset(observation.claims)
        if observation.ref is None:
            self.always |= claims
        else:
            self.carriers[observation.ref] = self.carriers.get(observation.ref, frozenset()) | claims
        self.everything |= claims

    def record(self, ref: str, claims: Iterable[str]) -> None:
        """A message recorded as carrying `claims` (its first recording stands)."""
        found = frozenset(claims)
        self.carriers.setdefault(ref, found)
        self.everything |= found


def context_set(run: Carried, refs: Sequence[str] | None, told: Collection[str],
                vetoes: Mapping[str, Collection[str]],
                scope: Mapping[str, Collection[str]] | None = None,
                inputs: Collection[str] = ()) -> tuple[list[str], dict[str, frozenset[str]]]:
    """The claims a turn rests on, sorted, and the carriers this turn records for the refs it
    looked up elsewhere (`scope`: what the refs carried in the other runs of the scope) or could
    not account for (`inputs`: refs that may be the user's, see `user_input`). `vetoes` maps a
    vetoed call's id to the nodes its veto named. `refs` is the input in order."""
    known_false = {node for call in told for node in vetoes.get(call, ())}
    if refs is None:
        return sorted(run.everything - known_false), {}
    claims = set(run.always)
    recorded: dict[str, frozenset[str]] = {}
    present = [r for r in refs if r not in told]  # a veto message carries nothing
    known = [r in run.carriers or (scope is not None and r in scope) for r in present]
    for position, ref in enumerate(present):
        if ref in run.carriers:
            claims |= run.carriers[ref]
        if scope is not None and ref in scope:
            recorded[ref] = frozenset(scope[ref])
        elif ref not in run.carriers:
            fresh = ref in inputs and user_input(known, position, not run.everything)
            recorded[ref] = frozenset() if fresh else frozenset(run.everything)
    claims.update(*recorded.values())
    return sorted(claims - known_false), recorded


def user_input(known: Sequence[bool], position: int, new_run: bool) -> bool:
    """Whether an unknown message at `position` of an input (`known`: which of its messages Rippl
    has a carrier for) is the user's new input rather than a rewrite: every message after it is
    unknown too, and a known one comes before it (or the run has carried nothing yet)."""
    return not any(known[position + 1:]) and (any(known[:position]) or new_run)


def repeat_keys(run: str, tool: str, args: str, scope: RepeatScope) -> tuple[str, str | None]:
    """The keys a call is found by as a repeat: its run, tool and canonical arguments; and, under
    `repeat_scope="tool"`, its run and tool (None otherwise)."""
    return repeat_key(run, tool, args), (tool_key(run, tool) if scope == "tool" else None)


def tool_key(run: str, tool: str) -> str:
    """The key every vetoed call of `tool` in `run` is found by (for `repeat_scope="tool"`)."""
    return f"{run}\x1f{tool}"


def bound(keys: tuple[str, str | None], vetoed: Mapping[str, Collection[str]],
          by_tool: Mapping[str, Collection[str]]) -> set[str]:
    """The decisions of the calls vetoed earlier in the run that a call with these repeat keys
    repeats (`vetoed`: exact key -> decisions; `by_tool`: run and tool -> decisions)."""
    exact, tool = keys
    found = set(vetoed.get(exact, ()))
    if tool is not None:
        found |= set(by_tool.get(tool, ()))
    return found
