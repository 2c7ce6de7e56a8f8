"""`register_rippl`: put the guard and the memory on agents that already exist, in one line.

    register_rippl(team, rippl)          # every AssistantAgent of the team, nested teams included

AutoGen 0.4+ has no `register_hook` (the 0.2 idiom); its seams are the model client, the workbench
and the memory list. This wraps each AssistantAgent's model client in a `RipplModelClient` (it
records each model turn with tool calls, with exactly what the model saw) and each of its
workbenches in a `RipplWorkbench` (it judges each call as it runs and records its execution), all
through one `Guard` per agent, so they share the agent's run; it adds a `RipplMemory` (one per
agent, holding that agent's beliefs) and binds every RipplMemory of the agent to its run. It is
idempotent: running it twice changes nothing more. AssistantAgent has no public setter for any of
these, so this sets its `_model_client`, `_workbench` and `_memory` attributes (stable through
autogen-agentchat 0.7).

Handoff tools bypass workbenches in AssistantAgent: a handoff is recorded with its turn, never
vetoed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from autogen_agentchat.agents import AssistantAgent, SocietyOfMindAgent
from autogen_agentchat.teams import BaseGroupChat
from autogen_core.memory import Memory

from rippl_autogen.connection import Link, Target
from rippl_autogen.guard import Guard, Resolver
from rippl_autogen.memory import RipplMemory
from rippl_autogen.model import RipplModelClient
from rippl_autogen.workbench import RipplWorkbench
from rippl_core import CollectionNotStr, InvalidInputError, Policy
from rippl_core.adapters import ToolSettingsMap


def assistant_agents(target: Any) -> list[AssistantAgent]:
    """Every AssistantAgent in `target`: itself, or the participants of a team, recursively
    (nested teams and SocietyOfMindAgents included)."""
    found: list[AssistantAgent] = []
    seen: set[int] = set()

    def visit(node: Any) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, AssistantAgent):
            found.append(node)
        elif isinstance(node, BaseGroupChat):
            for participant in node._participants:
                visit(participant)
        elif isinstance(node, SocietyOfMindAgent):
            visit(node._team)

    visit(target)
    return found


def register_rippl(target: Any, rippl: Target | Link | RipplMemory, *,
                   memory: bool | Memory = True, guard: bool = True, capture: bool = True,
                   run: str | None = None, resolver: Resolver | None = None,
                   policy: Policy | None = None, unguarded: CollectionNotStr[str] = (),
                   as_of: datetime | str | None = None,
                   tool_settings: ToolSettingsMap | None = None) -> list[AssistantAgent]:
    """Guard and capture every tool call and add belief memory on an AssistantAgent or every
    AssistantAgent of a team. Returns the agents it changed.

    Args:
        target: an AssistantAgent, a team (RoundRobinGroupChat, SelectorGroupChat, Swarm...) or a
            SocietyOfMindAgent.
        rippl: an `AsyncRippl`/`Rippl` handle or `RipplConnection` options; or a `RipplMemory`,
            which is then the memory of every agent (a shared team memory) and whose graph guards.
        memory: True: one `RipplMemory` per agent, named after it (unless `rippl` is a memory);
            a Memory: add that one to every agent; False: no memory.
        guard: wrap the agents' workbenches in `RipplWorkbench`.
        capture: record each agent's run (its model turns, calls, executions and memory reads) and
            judge calls by it (default); False: check declared actions only.
        run: the application's conversation id; each agent's run is `<run>/<agent name>`. Without
            it the team's id (or, outside a team, an id per agent) is used, which does not survive
            `save_state`/`load_state` into new objects: give `run=` to continue a trace there.
            The agents of a nested team (a team participant, a SocietyOfMindAgent's team) share
            the outermost team's id, so what they hand to the others is traced.
        resolver, policy, unguarded, tool_settings: as for `RipplWorkbench`.
        as_of: the `as_of` of the per-agent memories.
    """
    shared: bool | Memory
    if isinstance(rippl, RipplMemory):
        link, shared = rippl.link, (rippl if memory is True else memory)
    else:
        link, shared = (rippl if isinstance(rippl, Link) else Link(rippl)), memory
    agents = assistant_agents(target)
    if not agents:
        raise InvalidInputError(f"no AssistantAgent found in {type(target).__name__}; pass an "
                                "AssistantAgent or a team of them")
    within = target._team_id if isinstance(target, BaseGroupChat) else None
    for agent in agents:
        hooks = Guard(link, resolver=resolver, policy=policy, unguarded=unguarded, capture=capture,
                      agent=agent.name, run=run, tool_settings=tool_settings, within=within)
        if capture and not isinstance(agent._model_client, RipplModelClient):
            agent._model_client = RipplModelClient(agent._model_client, hooks)
        if guard:
            agent._workbench = [wb if isinstance(wb, RipplWorkbench) else RipplWorkbench(wb, hooks)
                                for wb in agent._workbench]
        current: list[Memory] = list(agent._memory or [])
        if shared is not False:
            add = shared if isinstance(shared, Memory) else RipplMemory(link, agent.name, as_of=as_of)
            if not any(_same_memory(m, add) for m in current):
                current.append(add)
            agent._memory = current
        if capture:
            scope = _hooks_of(agent).scope
            for held in current:
                if isinstance(held, RipplMemory):
                    held.bind(scope)
    return agents


def _hooks_of(agent: AssistantAgent) -> Guard:
    """The guard of the agent's model-client wrapper (the one registered first)."""
    client = agent._model_client
    assert isinstance(client, RipplModelClient)
    return client.guard


def _same_memory(a: Memory, b: Memory) -> bool:
    if a is b:
        return True
    return (isinstance(a, RipplMemory) and isinstance(b, RipplMemory) and a.agent == b.agent
            and a.link.connection == b.link.connection)
