"""What an AutoGen agent knows leaves its run by two more doors, and its premises go with it (real
agents and teams, scripted models, both backends):

- **memory**: agent `scout` (run conv-1) reads shard 09's health and saves what it read with a
  tool that calls `RipplMemory.add`; agent `operator` (run conv-2) is shown the memory before its
  model call and migrates after the reading was retracted: vetoed, the trail through the memory;
  a memory written from a reading that aged is denied as stale; one a person also stated holds.
- **team mates**: a lead vetoed on `migrate(shard="09")` hands the task on (Swarm
  `HandoffMessage`, `SelectorGroupChat`, an agent used as a tool): the next agent's identical call,
  defaults spelled out or a number quoted, stays vetoed naming the original veto; its different
  act runs; a reinstatement lifts it for the team.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import SelectorGroupChat, Swarm
from autogen_agentchat.tools import AgentTool
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import CreateResult
from autogen_core.tools import FunctionTool
from autogen_helpers import VETO, Scripted, agent, calls, fc, health_claim, retract_health, then, vetoes
from rippl_autogen import RipplMemory, register_rippl

from rippl_core import AsyncRippl, Rippl, State
from rippl_core.testing import Clock

pytestmark = pytest.mark.asyncio(loop_scope="session")

TEXT = "Shard 09 is healthy"


@dataclass
class Ops:
    """The agents' tools; every migration that ran is recorded."""

    ran: list[dict[str, Any]] = field(default_factory=list)

    def get_health(self) -> FunctionTool:
        async def get_health(shard: str) -> str:
            """Read a shard's health."""
            return f"shard {shard}: healthy"
        return FunctionTool(get_health, description="Read a shard's health.")

    def migrate(self) -> FunctionTool:
        async def migrate(shard: str, rows: int = 100, dry_run: bool = False) -> str:
            """Migrate billing onto a shard, `rows` at a time."""
            self.ran.append({"shard": shard, "rows": rows, "dry_run": dry_run})
            return f"migrated to {shard}"
        return FunctionTool(migrate, description="Migrate billing onto a shard.")

    def save_note(self, memory: RipplMemory) -> FunctionTool:
        async def save_note(text: str) -> str:
            """Save a fact to the team's memory."""
            await memory.add(MemoryContent(content=text, mime_type=MemoryMimeType.TEXT,
                                           metadata={"topic": "shard-09-health"}))
            return "saved"
        return FunctionTool(save_note, description="Save a fact to memory.")

    def shards(self) -> list[str]:
        return [r["shard"] for r in self.ran]


# ------------------------------------------------------------------------------ memory


async def scout_saves(rippl: Rippl, arippl: AsyncRippl, ops: Ops, memory: RipplMemory) -> None:
    scout = agent("scout", Scripted(calls(fc("get_health", shard="09")),
                                    calls(fc("save_note", text=TEXT)), "noted"),
                  [ops.get_health(), ops.save_note(memory)])
    register_rippl(scout, arippl, run="conv-1", memory=False)
    await scout.run(task="check shard 09 and note it")


async def operator_migrates(rippl: Rippl, arippl: AsyncRippl, ops: Ops, memory: RipplMemory,
                            before: Callable[[], None]) -> tuple[Any, Scripted]:
    model = Scripted(then(before, calls(fc("migrate", shard="09"))), "stopped")
    operator = agent("operator", model, [ops.migrate()], memory=[memory])
    register_rippl(operator, arippl, run="conv-2", memory=False)
    return await operator.run(task="move billing to shard 09"), model


async def test_a_memory_saved_from_a_reading_is_vetoed_with_it(rippl: Rippl,
                                                               arippl: AsyncRippl) -> None:
    ops, memory = Ops(), RipplMemory(arippl, agent="ops")
    await scout_saves(rippl, arippl, ops, memory)
    result, model = await operator_migrates(rippl, arippl, ops, memory, retract_health(rippl))
    assert TEXT in str(model.create_calls[0]["messages"])  # it was shown the memory
    assert ops.ran == []
    [veto] = vetoes(result.messages)
    assert health_claim(rippl) in veto
    belief = rippl.ask("ops", "shard-09-health")
    assert belief is not None and belief.claim_state is State.OUT and belief.claim in veto
    writer = next(w for w in rippl.get(belief.claim).justifications[0])
    assert rippl.get(writer).text.startswith("run conv-1/scout wrote it (turn ")
    # shown again now, the retracted memory is left out of the model's context
    later = Scripted("nothing to do")
    reader = agent("reader", later, [], memory=[memory])
    register_rippl(reader, arippl, run="conv-3", memory=False)
    await reader.run(task="what do we know?")
    assert TEXT not in str(later.create_calls[0]["messages"])


async def test_a_memory_someone_also_stated_holds(rippl: Rippl, arippl: AsyncRippl) -> None:
    ops, memory = Ops(), RipplMemory(arippl, agent="ops")
    await scout_saves(rippl, arippl, ops, memory)
    await memory.add(MemoryContent(content=TEXT, mime_type=MemoryMimeType.TEXT, metadata={
        "topic": "shard-09-health", "sources": [{"title": "on-call checked shard 09 by hand"}]}))
    await operator_migrates(rippl, arippl, ops, memory, retract_health(rippl))
    assert ops.shards() == ["09"]


async def test_a_memory_saved_from_a_reading_that_aged_is_denied_as_stale(
        rippl: Rippl, arippl: AsyncRippl) -> None:
    ops, memory = Ops(), RipplMemory(arippl, agent="ops")
    with Clock("2026-12-01T10:00:00Z", ticking=True) as clock:
        scout = agent("scout", Scripted(calls(fc("get_health", shard="09")),
                                        calls(fc("save_note", text=TEXT)), "noted"),
                      [ops.get_health(), ops.save_note(memory)])
        register_rippl(scout, arippl, run="conv-1", memory=False,
                       tool_settings={"get_health": {"fresh_for": 300}})
        await scout.run(task="check shard 09 and note it")
        result, _ = await operator_migrates(rippl, arippl, ops, memory,
                                            lambda: clock.advance(minutes=12))
    [veto] = vetoes(result.messages)
    assert "denied as stale" in veto and ops.ran == []


# ------------------------------------------------------------------------------ team mates

SPELLINGS = [{"shard": "09"}, {"shard": "09", "dry_run": False},
             {"shard": "09", "rows": 100, "dry_run": False}, {"shard": "09", "rows": "100"}]


def lead_steps(rippl: Rippl, hand_on: CreateResult | str) -> list[Any]:
    return [calls(fc("get_health", shard="09")),
            then(retract_health(rippl), calls(fc("migrate", shard="09"))), hand_on]


def helper_steps(final: str = "done. TERMINATE") -> list[Any]:
    return [*(calls(fc("migrate", **args)) for args in SPELLINGS),
            calls(fc("migrate", shard="07")), final]


def check_held(ops: Ops, messages: Sequence[Any], lead_run: str) -> None:
    said = vetoes(messages)
    helper = said[-len(SPELLINGS):]
    assert len(helper) == len(SPELLINGS), said
    assert all(f"of run {lead_run}" in v and "vetoed at turn" in v for v in helper), helper
    assert ops.shards() == ["07"]


async def test_a_swarm_handoff_after_the_veto_does_not_lift_it(rippl: Rippl,
                                                               arippl: AsyncRippl) -> None:
    ops = Ops()
    lead = agent("lead", Scripted(*lead_steps(rippl, calls(fc("transfer_to_operator")))),
                 [ops.get_health(), ops.migrate()], handoffs=["operator"])
    operator = agent("operator", Scripted(*helper_steps()), [ops.migrate()])
    team = Swarm([lead, operator], termination_condition=(
        TextMentionTermination("TERMINATE") | MaxMessageTermination(30)))
    register_rippl(team, arippl, run="SW", memory=False)
    result = await team.run(task="move billing to shard 09")
    check_held(ops, result.messages, "SW/lead")


async def test_a_selector_group_chat_handing_on_does_not_lift_it(rippl: Rippl,
                                                                  arippl: AsyncRippl) -> None:
    ops = Ops()
    lead = agent("lead", Scripted(*lead_steps(rippl, "I was vetoed; operator, please migrate.")),
                 [ops.get_health(), ops.migrate()])
    operator = agent("operator", Scripted(*helper_steps()), [ops.migrate()])
    order = iter(["lead", "operator"])
    team = SelectorGroupChat([lead, operator], model_client=Scripted("operator"),
                             selector_func=lambda _: next(order, "operator"),
                             termination_condition=(TextMentionTermination("TERMINATE")
                                                    | MaxMessageTermination(30)))
    register_rippl(team, arippl, run="SG", memory=False)
    result = await team.run(task="move billing to shard 09")
    check_held(ops, result.messages, "SG/lead")


async def test_an_agent_used_as_a_tool_after_the_veto_does_not_lift_it(
        rippl: Rippl, arippl: AsyncRippl) -> None:
    ops = Ops()
    operator = agent("operator", Scripted(*helper_steps("done")), [ops.migrate()])
    register_rippl(operator, arippl, memory=False)  # its run: the calling run's scope
    lead = agent("lead", Scripted(*lead_steps(rippl, calls(fc(
        "operator", task="Migrate billing to shard 09."))), "done"),
        [ops.get_health(), ops.migrate(), AgentTool(operator)])
    register_rippl(lead, arippl, run="AT", memory=False)
    result = await lead.run(task="move billing to shard 09")
    assert ops.shards() == ["07"]
    events = [m for m in result.messages if VETO in str(getattr(m, "content", ""))]
    assert any("of run AT/lead" in str(m.content) for m in events), events


async def test_one_agent_spelling_its_vetoed_call_another_way_stays_vetoed(
        rippl: Rippl, arippl: AsyncRippl) -> None:
    ops = Ops()
    one = agent("ops", Scripted(*lead_steps(rippl, calls(fc("migrate", **SPELLINGS[1]))),
                                *helper_steps()[2:]), [ops.get_health(), ops.migrate()])
    register_rippl(one, arippl, run="SP", memory=False)
    result = await one.run(task="move billing")
    said = vetoes(result.messages)
    assert len(said) == 1 + len(SPELLINGS) - 1 and all("repeats the call vetoed at turn" in v
                                                       for v in said[1:])
    assert ops.shards() == ["07"]
