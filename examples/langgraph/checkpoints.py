"""Checkpoints that notice tampering: a graph does not resume from a state nobody wrote.

The agent reads shard 09's health ("degraded") and, on that, plans to move billing to shard 07; the
migration waits for the change manager (LangChain's HumanInTheLoopMiddleware), the thread paused
in FalkorDB (`FalkorDBSaver`). While it waits, someone with write access to the database edits the
stored checkpoint, so that the reading the model will resume with says "healthy!" (a Cypher query
on the checkpoint graph, bypassing the saver: what an attacker holding the database does). Every
checkpoint is chained when written and every read verifies it: on resume, here with a fresh saver
as after a restart, the graph refuses with `CheckpointIntegrityError`, naming the thread, the
checkpoint and what was edited, and nothing runs. `saver.verify()` (`rippl checkpoints verify`)
finds the same for the whole store.

    uv run python examples/langgraph/checkpoints.py
"""

from __future__ import annotations

import base64

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.types import Command
from rippl_langgraph import FalkorDBSaver, RipplMiddleware
from rippl_langgraph.testing import ScriptedChatModel, calls, tool_call

from rippl_core import CheckpointIntegrityError, Rippl
from rippl_core.adapters import Query

from helpers import ask, fleet, main

SCRIPT = [calls(tool_call("get_shard_health", {"shard": "09"})),
          calls(tool_call("migrate_tables", {"table": "billing", "shard": "07"}),
                content="Shard 09 is degraded: billing goes to the shard 07 fallback."),
          AIMessage("Billing is on shard 07.")]


def agent(rippl: Rippl, saver: FalkorDBSaver) -> object:
    return create_agent(ScriptedChatModel(script=SCRIPT),
                        [tool(fleet.get_shard_health), tool(fleet.migrate_tables)],
                        middleware=[HumanInTheLoopMiddleware(interrupt_on={"migrate_tables": True}),
                                    RipplMiddleware(rippl)], checkpointer=saver)


def forge(rippl: Rippl, saver: FalkorDBSaver) -> int:
    """What an attacker with the database does: rewrite the stored reading in place ("degraded"
    -> "healthy!"), keeping its encoding valid. Returns how many stored values were edited."""
    query = rippl.redis.execute_command
    edited = 0
    for key, data in query("GRAPH.QUERY", saver.graph, "MATCH (b:CheckpointBlob) RETURN b.key, b.data")[1]:
        raw = base64.b64decode(data or "")
        if b"degraded" in raw:
            forged = base64.b64encode(raw.replace(b"degraded", b"healthy!")).decode()
            query("GRAPH.QUERY", saver.graph, Query("MATCH (b:CheckpointBlob {key: $k}) SET b.data = $d",
                                                    {"k": key, "d": forged}).command())
            edited += 1
    return edited


def story(rippl: Rippl) -> None:
    fleet.reset({"09": "shard 09: degraded, 14% I/O errors"})
    thread = {"configurable": {"thread_id": "inc-4474"}}
    ask(agent(rippl, FalkorDBSaver(rippl)), "Check shard 09, then move billing.", thread)
    print("  (paused: the migration waits for the change manager)")

    print(f"Someone with the database edits the paused thread: {forge(rippl, FalkorDBSaver(rippl))} "
          "stored values now say the shard is 'healthy!'.")
    saver = FalkorDBSaver(rippl)  # a fresh saver, as after a restart: nothing cached
    try:
        ask(agent(rippl, saver), Command(resume={"decisions": [{"type": "approve"}]}), thread)
    except CheckpointIntegrityError as refused:
        print(f"Refused to resume: thread {refused.thread_id}, checkpoint {refused.checkpoint_id}")
        for problem in refused.problems:
            print(f"  {problem}")
    print(f"What ran after the edit: {fleet.RAN or 'nothing'}")
    report = saver.verify()
    print(f"saver.verify(): ok={report.ok}, {report.checkpoints} checkpoints, "
          f"{len(report.problems)} problems")
    for found in report.problems:
        print(f"  {found.checkpoint_id}: {found.problem}")


if __name__ == "__main__":
    main(story, __doc__)
