"""Declared premises and belief time travel: a plan written down in advance, a premise found false,
the review gate inside the graph, and what the agent believed at every step.

The incident graph (examples/incident.yaml) declares the billing migration and what it rests on:
ACT-001 "migrate billing to shard 09" <- DEC-001 <- CLM-001 "Shard 09 is healthy". The ops agent
keeps its beliefs in Rippl (`RipplStore`, LangGraph's long-term memory) and its checkpoints in
FalkorDB (`FalkorDBSaver`). It notes that it relies on CLM-001 and provisions shard 09 (allowed);
its health check then shows disk errors, so it flags CLM-001 for retraction (a review opens).
When it calls the migration, the graph pauses (`RipplMiddleware(review=True)`): a person sees the
pending review and its blast radius, and approves. The call is vetoed with the trail CLM-001 ->
DEC-001 -> ACT-001; the agent drops the belief and takes the pre-approved shard 07 fallback.
Last, for every checkpoint of the thread, what the agent believed then (`beliefs_at_checkpoint`).

    uv run python examples/langgraph/premises.py
    uv run python examples/langgraph/premises.py --live    # a real model (see helpers.py)
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.config import get_store
from langgraph.types import Command
from rippl_langgraph import FalkorDBSaver, RipplMiddleware, RipplStore, retraction_tool
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import Rippl

from helpers import ask, fleet, main

INCIDENT = Path(__file__).parents[1] / "incident.yaml"
AGENT = "ops-agent"
SYSTEM = ("You are the ops agent for the payments database. Record what you rely on with "
          "`remember` (topic, claim id) and drop it with `forget`. If a health check contradicts a "
          "claim, flag it with propose_retraction. If a call comes back VETOED, read the trail and "
          "choose an action that does not rest on the retracted premise (billing's pre-approved "
          "fallback home is shard 07, claim CLM-003).")


@tool
def remember(topic: str, claim_id: str) -> str:
    """Adopt a belief: on `topic` (e.g. shards/09-health) you rely on claim `claim_id`."""
    *path, key = topic.split("/")
    get_store().put((AGENT, *path), key, {"claim": claim_id})
    return f"noted: {topic} = {claim_id}"


@tool
def forget(topic: str) -> str:
    """Stop relying on what you believed about `topic`."""
    *path, key = topic.split("/")
    get_store().delete((AGENT, *path), key)
    return f"no longer relying on {topic}"


SCRIPT = [
    calls(tool_call("remember", {"topic": "shards/09-health", "claim_id": "CLM-001"}),
          tool_call("resize_volume", {"shard": "09", "iops": 16000, "max_wal_size_gb": 64})),
    calls(tool_call("get_shard_health", {"shard": "09"})),
    calls(tool_call("propose_retraction", {"claim_id": "CLM-001", "reason": "I/O errors on 09",
                                           "evidence": "312 I/O errors, replication lag 41 s"})),
    calls(tool_call("migrate_tables", {"table": "billing", "shard": "09"})),
    calls(tool_call("forget", {"topic": "shards/09-health"}),
          tool_call("remember", {"topic": "shards/07-health", "claim_id": "CLM-003"}),
          tool_call("migrate_tables", {"table": "billing", "shard": "07"}),
          content="Shard 09 is ruled out (CLM-001 retracted); using the shard 07 fallback."),
    AIMessage("Billing is moving to shard 07; shard 09 stays out until its disks are fixed."),
]


def story(rippl: Rippl, model: BaseChatModel | None = None) -> None:
    rippl.load(INCIDENT)
    saver = FalkorDBSaver(rippl)
    store = RipplStore(rippl, checkpointer=saver)
    fleet.reset({"09": "shard 09: 312 I/O errors on /dev/nvme1 in 10 min, replication lag 41 s"})
    tools = [tool(fleet.resize_volume), tool(fleet.migrate_tables), tool(fleet.get_shard_health),
             remember, forget, retraction_tool(rippl, by=AGENT)]
    agent = create_agent(model or ScriptedChatModel(script=SCRIPT), tools, system_prompt=SYSTEM,
                         middleware=[RipplMiddleware(rippl, review=True, reviewer="oncall-human",
                                                     agent=AGENT)],
                         checkpointer=saver, store=store)
    thread = {"configurable": {"thread_id": "inc-4471"}}

    ask(agent, "Move billing off shard 03. The plan is shard 09 (CLM-001 says it is healthy).",
        thread)
    while (paused := agent.get_state(thread)).interrupts:
        for review in paused.interrupts[0].value["reviews"]:
            print(f"  PAUSED for review {review['id']}: retract {review['claim']}? "
                  f"({review['reason']}, proposed by {review['proposed_by']}); "
                  f"{len(review['at_risk'])} nodes at risk: {', '.join(review['at_risk'][:6])} ...")
        print("  oncall-human: approve")
        ask(agent, Command(resume="approve"), thread)

    print("\nBelief time travel: at each checkpoint, what the agent believed (the claim's status then)")
    for snapshot in reversed(list(agent.get_state_history(thread))):
        taken = store.checkpoint_time(snapshot.config)
        held = [f"{b.topic}={b.claim} [{status(rippl, b.claim, taken)}]"
                for b in store.beliefs_at_checkpoint(snapshot.config, agent=AGENT)]
        print(f"  step {snapshot.metadata['step']:>2}  next {','.join(snapshot.next) or 'end':<22} "
              + (", ".join(held) or "-"))
    check = rippl.verify_receipts()
    print(f"Receipts: {check.count}, chain {'intact' if check.ok else 'BROKEN'}")


def status(rippl: Rippl, claim: str, when: datetime) -> str:
    """A claim's status as recorded at `when` (the node's bitemporal history)."""
    changes = rippl.history(claim, known_at=when)
    latest = max(changes, key=lambda c: (c.recorded_at, c.valid_from), default=None)
    return latest.after_status if latest else "unknown"


if __name__ == "__main__":
    main(story, __doc__, live=True)
