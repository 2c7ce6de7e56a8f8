"""Captured runs the tests tell again: the ops story (read the shard's health, act on it, the
reading retracted, the next act vetoed), as the trace, the console's runs page and the CLI's
overrides read it back."""

from __future__ import annotations

from rippl_core import Rippl, Run, ToolCall, Verdict

HEALTH = ToolCall(name="get_shard_health", args={"shard": "09"}, id="c1")
ANNOUNCE = ToolCall(name="announce_window", args={"shard": "09"}, id="c2")
MIGRATE = ToolCall(name="migrate_tables", args={"table": "billing", "shard": "09"}, id="c3")


def owed_and_vetoed(rippl: Rippl, run_id: str = "thread-1", *, read: str = "healthy",
                    announced: str = "announced", reason: str = "stale cache") -> str:
    """Read health (a reading fresh for an hour), announce on it, retract it, try to migrate:
    one executed call owed a compensation and one vetoed call. Returns the health claim."""
    run = rippl.run(run_id, agent="ops", framework="langgraph")
    run.decide("t1", [HEALTH])
    claim = run.executed(HEALTH, read, fresh_for=3600)
    run.decide("t2", [ANNOUNCE], context=["c1"])
    run.executed(ANNOUNCE, announced)
    rippl.retract(claim, reason=reason, by="monitor")
    [vetoed] = run.decide("t3", [MIGRATE], context=["c1"])
    assert not vetoed.allowed
    return claim


def vetoed_migrate(rippl: Rippl, run_id: str = "thread-1") -> tuple[Run, str, ToolCall, Verdict]:
    """`get_health(09)` read, the reading retracted, `migrate(09)` on it: the run, the reading's
    claim, the migrate call and its veto."""
    agent = rippl.run(run_id, agent="ops")
    health = ToolCall(name="get_health", args={"shard": "09"}, id="c1")
    agent.decide("t1", [health], context=[])
    claim = agent.executed(health, "shard 09: healthy")
    rippl.retract(claim, reason="stale cache", by="monitor")
    migrate = ToolCall(name="migrate", args={"shard": "09"}, id="c2")
    [veto] = agent.decide("t2", [migrate], context=["c1"])
    assert not veto.allowed
    return agent, claim, migrate, veto
