"""Capture and a repeat: a call rests on what the agent read, and asking again does not lift a veto.

Nothing is declared in advance: Rippl records the agent's run as it happens (capture, the default).
The ops agent reads shard 09's health ("healthy", answered by a replica that, unknown to anyone
yet, is six hours stale), announces a maintenance window (it runs) and decides to migrate billing
onto shard 09. Migrations wait for the change manager's approval (LangChain's
HumanInTheLoopMiddleware). Meanwhile a replica monitor finds the reading stale and proposes
retracting it; the on-call engineer approves. Approved by the change manager too, the migration is
judged again just before it runs: vetoed, with the trail reading -> turn -> call. The model simply
asks again (the same call, its arguments in another order): vetoed again, naming the first veto.
It re-plans on shard 07, which runs. `rippl.compensations()` lists the announcement, which ran on a
reading since retracted; `premises_at_checkpoint` shows what each step rested on.

    uv run python examples/langgraph/capture.py
    uv run python examples/langgraph/capture.py --live    # a real model (see helpers.py)
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.types import Command
from rippl_langgraph import FalkorDBSaver, RipplMiddleware, RipplStore
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import Rippl

from helpers import ask, fleet, main

TOOLS = [tool(fleet.get_shard_health), tool(fleet.announce_window), tool(fleet.migrate_tables)]
SCRIPT = [
    calls(tool_call("get_shard_health", {"shard": "09"})),
    calls(tool_call("announce_window", {"shard": "09", "at": "02:00Z"})),
    calls(tool_call("migrate_tables", {"table": "billing", "shard": "09"})),
    calls(tool_call("migrate_tables", {"shard": "09", "table": "billing"}),  # the same call again
          content="Retrying the migration."),
    calls(tool_call("get_shard_health", {"shard": "07"}),
          content="Shard 09's reading was retracted; checking shard 07 instead."),
    calls(tool_call("migrate_tables", {"table": "billing", "shard": "07"})),
    AIMessage("Billing is on shard 07. The shard 09 window was announced on a retracted reading: "
              "withdraw it."),
]


def story(rippl: Rippl, model: BaseChatModel | None = None) -> None:
    saver = FalkorDBSaver(rippl)
    store = RipplStore(rippl, checkpointer=saver)
    approval = HumanInTheLoopMiddleware(interrupt_on={"migrate_tables": True})
    fleet.reset()
    agent = create_agent(model or ScriptedChatModel(script=SCRIPT), TOOLS,
                         middleware=[approval, RipplMiddleware(rippl, agent="ops-agent")],
                         checkpointer=saver, store=store)
    thread = {"configurable": {"thread_id": "inc-4472"}}

    ask(agent, "Move billing off shard 03 (the plan: shard 09). Announce a window first.", thread)
    while (paused := agent.get_state(thread)).interrupts:
        [request] = paused.interrupts[0].value["action_requests"]
        print(f"  PAUSED: {request['name']}({request['args']}) waits for the change manager")
        step = store.premises_at_checkpoint(paused.config)
        stale = [p for p in step.premises if "replica r3" in p.text] if step else []
        for reading in stale:  # the replica monitor: what the waiting turn rests on came from r3
            print(f"  replica monitor: {reading.text[:50]}... was {fleet.STALE}")
            review = rippl.propose_retraction(reading.id, reason=fleet.STALE, by="replica-monitor")
            rippl.approve(review.id, by="oncall-engineer")
            print(f"  oncall-engineer approves the retraction ({review.id})")
        print("  change manager: approve")
        ask(agent, Command(resume={"decisions": [{"type": "approve"}]}), thread)

    print("\nExecuted on a premise since retracted (rippl.compensations()):")
    for owed in rippl.compensations():
        print("  " + owed.explain().replace("\n", "\n  "))
    print("\nWhat each step's turn rested on (premises_at_checkpoint), status now:")
    for snapshot in reversed(list(agent.get_state_history(thread))):
        step = store.premises_at_checkpoint(snapshot.config)
        if step is not None and snapshot.next == ("tools",):
            rested = ", ".join(f"{p.text[:36]}... [{p.status}]" for p in step.premises
                               if not p.id.startswith("RUN-")) or "nothing yet"
            print(f"  {', '.join(c['name'] for c in step.calls):<17} rests on: {rested}")


if __name__ == "__main__":
    main(story, __doc__, live=True)
