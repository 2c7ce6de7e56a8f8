"""CrewAI's tool cache under capture: a cached result is replayed only if Rippl recorded it and what
it states still holds.

CrewAI's cache (`Crew(cache=True)`, `Agent(cache=True)`) keeps each tool's output by tool and
arguments for the crew's whole life (across kickoffs) and serves a repeated call from it without
running the tool (and without `GuardedTool._run`). `PRE_TOOL_CALL` runs before every cache read, so
a vetoed call is never replayed. What remains is an allowed call whose cached output is an
observation since retracted ("shard 09 is healthy", read from a stale replica): replaying it would
put a result known to be false back into the model's context. So just before the read, in the
hook: a cached output is replayed only if it is the very output whose execution Rippl recorded
and the claim stating it still holds, and the replay is then recorded as an observation of the
current run; any other entry is evicted, and the tool really runs (its new output is recorded).

The eviction reaches into CrewAI's `CacheHandler` (its `_cache` and `_lock`); a cache that cannot
be evicted vetoes the call instead (fail closed).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from rippl_core import Rippl, State
from rippl_crewai.runs import FRAMEWORK

LIMIT = 4096  # cached outputs whose claim is remembered (the least recently used let go)


class Replays:
    """The result claim of each cached output Rippl recorded, by cache and key. The output object
    itself is kept and compared by identity, so an entry replaced or re-added since (or a cache
    object whose id was reused) never passes for the recorded one."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._entries: OrderedDict[tuple[int, str], tuple[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, cache: Any, name: str, args: Mapping[str, Any], output: Any,
                 claim: str) -> None:
        with self._lock:
            self._entries[(id(cache), cache_key(name, args))] = (claim, output)
            while len(self._entries) > self.limit:
                self._entries.popitem(last=False)

    def claim_of(self, cache: Any, name: str, args: Mapping[str, Any], cached: Any) -> str | None:
        with self._lock:
            entry = self._entries.get((id(cache), cache_key(name, args)))
        return entry[0] if entry is not None and entry[1] is cached else None


REPLAYS = Replays()  # process-wide: CrewAI's cache outlives hooks and kickoffs


def cache_of(agent: object | None) -> Any | None:
    """The tool cache the agent's calls are served from (None: no caching)."""
    return getattr(getattr(agent, "tools_handler", None), "cache", None)


def input_text(args: Mapping[str, Any] | None) -> str:
    """CrewAI's cache input for these arguments (as both its ReAct and native paths build it)."""
    return json.dumps(args) if args else ""


def cache_key(name: str, args: Mapping[str, Any] | None) -> str:
    return f"{name}-{input_text(args)}"


def vet_replay(cache: Any, rippl: Rippl, run: str, call: tuple[str, Mapping[str, Any], str],
               agent: str | None = None, scope: str | None = None) -> str | None:
    """Before CrewAI reads its cache for `call` in `run`: the claim replayed if the cached output
    may be (it is recorded as an observation of the run, under the call's id), else None (nothing
    cached, or the entry was evicted so that the tool runs). Raises if the cache holds an entry
    that may not be replayed and cannot be evicted."""
    name, args, call_id = call
    cached = cache.read(tool=name, input=input_text(args))
    if cached is None:
        return None
    claim = REPLAYS.claim_of(cache, name, args, cached)
    try:
        if claim is not None and rippl.get(claim).state is State.IN:
            rippl.run(run, agent=agent, framework=FRAMEWORK, scope=scope).observe([claim],
                                                                                   ref=call_id)
            return claim
    except Exception:  # not verified or not recorded: the tool runs instead
        pass
    evict(cache, name, args)
    return None


def evict(cache: Any, name: str, args: Mapping[str, Any] | None) -> None:
    """Remove the cached output of a call (CrewAI's handler has no public way to)."""
    with cache._lock.w_locked():
        cache._cache.pop(cache_key(name, args), None)
