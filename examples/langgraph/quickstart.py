"""Quickstart: a LangGraph agent's call is vetoed because what it read was found false.

A `create_agent` agent with `RipplMiddleware` is asked whether shard 09 is healthy, and reads
"healthy". Capture is on by default (nothing is declared in advance): the reading is what the
thread's next turns rest on. Between two messages of the thread, a monitor finds the reading came
from a replica six hours stale and proposes retracting it, and a person approves (the review
gate). Asked next to migrate billing onto shard 09, the agent calls the migration: vetoed before
it runs, and the model reads why, with the trail from the reading to the call.

    uv run python examples/langgraph/quickstart.py           # a scripted model, offline
    uv run python examples/langgraph/quickstart.py --live    # a real model (see helpers.py)
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from rippl_langgraph import FalkorDBSaver, RipplMiddleware
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import Rippl

from helpers import ask, fleet, main

TOOLS = [tool(fleet.get_shard_health), tool(fleet.migrate_tables)]
SCRIPT = [
    calls(tool_call("get_shard_health", {"shard": "09"})),
    AIMessage("Shard 09 is healthy."),
    calls(tool_call("migrate_tables", {"table": "billing", "shard": "09"})),
    AIMessage("Rippl vetoed the migration: the shard 09 reading was retracted. Billing stays."),
]


def story(rippl: Rippl, model: BaseChatModel | None = None) -> None:
    fleet.reset()
    agent = create_agent(model or ScriptedChatModel(script=SCRIPT), TOOLS,
                         middleware=[RipplMiddleware(rippl)], checkpointer=FalkorDBSaver(rippl))
    thread = {"configurable": {"thread_id": "quickstart"}}

    ask(agent, "Is shard 09 healthy?", thread)

    print("A replica monitor finds the reading stale; a person approves its retraction.")
    review = rippl.propose_retraction_where(tool="get_shard_health", args={"shard": "09"},
                                            reason="replica r3 lags its primary by 6 h",
                                            by="replica-monitor")
    rippl.approve(review.id, by="alice@oncall")

    ask(agent, "Then migrate billing onto it.", thread)


if __name__ == "__main__":
    main(story, __doc__, live=True)
