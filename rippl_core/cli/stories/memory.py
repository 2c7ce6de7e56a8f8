"""The memory story: premises flow through memory, and a veto binds the team. An agent saves
what it read to its belief memory; the reading is found false; another run that recalled the
memory and acts on it is vetoed, the trail running through the memory; and the act it was refused
does not become a fresh act in a team mate's hands.

The agents here are scripted (no model): each turn is what a model would emit. The framework
adapters record the same from LangGraph's `RipplStore`, AutoGen's `RipplMemory`, CrewAI's
`RipplStorage` and the MCP belief tools (examples/<framework>/memory.py and delegation.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from rippl_core.capture.memory import Writing, writing
from rippl_core.cli.stories.capture import said, step
from rippl_core.models import ToolCall

if TYPE_CHECKING:
    from rippl_core.client import Rippl

SCOUT, OPERATOR, HELPER = "scout/thread-7", "operator/thread-8", "helper/thread-8"
TEAM = "thread-8"  # the operator and its team mate hand messages to one another
HEALTH = ToolCall(name="get_shard_health", args={"shard": "09"}, id="m-call-1")
REMEMBER = ToolCall(name="remember", args={"fact": "Shard 09 is healthy"}, id="m-call-2")
MIGRATE = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "09"}, id="m-call-3")
HANDED = ToolCall(name="migrate_tables", args={"shard": "09", "table": "billing"}, id="m-call-4")
OTHER = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "07"}, id="m-call-5")
TOPIC = "shards/09-health"


def tell_story(rippl: Rippl, console: Console) -> None:
    """The fourth story: a memory written in a run rests on what the run read."""
    scout = rippl.run(SCOUT, agent="scout", framework="demo")
    step(console, "M1", "A scout reads shard 09's health (answered by a replica that, unknown to "
                        "anyone yet, is six hours stale).")
    [verdict] = scout.decide("m-turn-1", [HEALTH], context=[])
    said(console, HEALTH, verdict)
    reading = scout.executed(HEALTH, "shard 09: healthy, 0 I/O errors")
    step(console, "M2", "It saves what it read with a `remember` tool: the memory rests on the "
                        "reading it was written from (the tool's write is the run's).")
    [verdict] = scout.decide("m-turn-2", [REMEMBER], context=["m-turn-1", "m-call-1"])
    said(console, REMEMBER, verdict)
    with writing(Writing(scout.ref, call=REMEMBER.id)):  # what the adapters do while a tool runs
        memory = rippl.add_claim(None, "Shard 09 is healthy").id
        rippl.believe("ops", memory, topic=TOPIC)
    scout.executed(REMEMBER, "saved")
    writer = rippl.get(memory).justifications[0][0]
    console.print(Text(f"   {memory} 'Shard 09 is healthy' <- {writer}: "
                       f"{rippl.get(writer).text[:60]}..."))

    operator = rippl.run(OPERATOR, agent="operator", framework="demo", scope=TEAM)
    step(console, "M3", "A day later, another thread: the operator recalls the memory and plans "
                        "to migrate billing onto shard 09.")
    operator.observe([memory], ref="m-recall")
    [verdict] = operator.decide("m-turn-3", [MIGRATE], context=["m-recall"])
    said(console, MIGRATE, verdict)
    step(console, "M4", "While it waits, a replica monitor finds the reading stale; the on-call "
                        "engineer approves its retraction. The memory goes OUT with it.")
    review = rippl.propose_retraction(reading, reason="replica r3 lags its primary by 6 h",
                                      by="replica-monitor")
    rippl.approve(review.id, by="oncall-engineer")
    belief = rippl.ask("ops", TOPIC)
    if belief is not None:
        console.print(Text(f"   {belief.describe()}"))
    step(console, "M5", "The operator's call, judged again before it runs:")
    veto = operator.judge(MIGRATE)
    said(console, MIGRATE, veto)

    step(console, "M6", "Having read the veto, the operator hands the task to a team mate, who "
                        "never read the health check. The same act stays vetoed:")
    operator.wrote("m-handover", context=["m-recall", "m-turn-3", "m-call-3"], told=["m-call-3"])
    helper = rippl.run(HELPER, agent="helper", framework="demo", scope=TEAM)
    [verdict] = helper.decide("m-turn-4", [HANDED], context=["m-handover"])
    said(console, HANDED, verdict)
    [verdict] = helper.decide("m-turn-5", [OTHER], context=["m-handover"])
    said(console, OTHER, verdict)
    console.print(Text("   A different plan runs; only a person lifts the veto, for the whole "
                       "team (reinstate the reading, or a one-call override)."))
