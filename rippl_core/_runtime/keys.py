"""The Redis keys and channels of a tenant, all derived from its graph name by one function.

Every key of tenant `name` is `rippl:{<tag>}:<role>`, where `<tag>` is the name percent-encoded
(`quote(name, safe="")`: only `A-Z a-z 0-9 _ . - ~` and `%XX` remain) and `<role>` comes from the
fixed vocabulary below, never from user input. So:

- injective: the tag decodes back to the name and contains neither `{` nor `}`, so every key names
  exactly one (tenant, role) pair, and no graph name, however chosen, produces another tenant's
  key (a name is never a key by itself);
- one slot: `{<tag>}` is a Redis Cluster hash tag, so all of a tenant's keys (its graph, version
  counter, schema marker, events channel, companion graphs) hash to one slot, and each of its
  transactions stays on one shard; different tenants spread over the slots;
- exact deletion: `rippl:{<tag>}:*` matches the tenant's keys and nobody else's (the tag has no
  glob character and no `}`), so `drop()` of `acme` leaves `acme:eu` and `acme*` alone.

`Legacy` names the keys of the layout before this one (graph key = the name itself), which a
graph is migrated from when it is first opened (see `rippl_core._runtime.schema.migrate`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote, unquote

PREFIX = "rippl"
type Role = Literal["graph", "version", "schema", "events"]
# Graphs kept beside a tenant's graph for framework state, in the tenant's slot.
type Companion = Literal["checkpoints"]
COMPANIONS: tuple[Companion, ...] = ("checkpoints",)

_TENANT_KEY = re.compile(r"rippl:\{([A-Za-z0-9_.~%-]+)\}:(.+)")


def tag(name: str) -> str:
    """The hash tag of a graph name: its percent-encoding (injective; no `{`, `}`, `:`, glob)."""
    return quote(name, safe="")


@dataclass(frozen=True, slots=True)
class Keys:
    """Every key of one tenant's graph, or of one of its companion graphs (`companion`)."""

    name: str
    companion: Companion | None = None

    def key(self, role: Role) -> str:
        scope = f"{self.companion}:" if self.companion else ""
        return f"{PREFIX}:{{{tag(self.name)}}}:{scope}{role}"

    @property
    def graph(self) -> str:
        """The FalkorDB graph."""
        return self.key("graph")

    @property
    def version(self) -> str:
        """The counter every commit bumps: writers WATCH it (optimistic concurrency)."""
        return self.key("version")

    @property
    def schema(self) -> str:
        """The marker recording which schema version the graph's indexes are at."""
        return self.key("schema")

    @property
    def events(self) -> str:
        """The (sharded) pub/sub channel of the graph's status-change events."""
        return self.key("events")

    def of(self, companion: Companion) -> Keys:
        """The keys of a companion graph of this tenant (same slot, dropped with the tenant)."""
        if companion not in COMPANIONS:
            raise ValueError(f"unknown companion graph {companion!r}; known: {COMPANIONS}")
        return Keys(self.name, companion)

    @property
    def pattern(self) -> str:
        """The SCAN pattern of every key of the tenant (companions included) and of no other."""
        return f"{PREFIX}:{{{tag(self.name)}}}:*"

    @property
    def legacy(self) -> Legacy:
        return Legacy(self.name)


def tenant_of(key: str) -> tuple[str, str] | None:
    """(graph name, role) of a tenant key, or None for any other key."""
    match = _TENANT_KEY.fullmatch(key)
    if match is None:
        return None
    name = unquote(match.group(1))
    return (name, match.group(2)) if tag(name) == match.group(1) else None


@dataclass(frozen=True, slots=True)
class Legacy:
    """The keys graph `name` had before tenant keys were tagged: the graph key was the name
    itself, the others `rippl:<name>:<role>`, checkpoints in graph `rippl:<name>:checkpoints`."""

    name: str

    @property
    def graph(self) -> str:
        return self.name

    @property
    def schema(self) -> str:
        return f"{PREFIX}:{self.name}:schema"

    def companion_graph(self, companion: Companion) -> str:
        return f"{PREFIX}:{self.name}:{companion}"

    def plain_keys(self) -> list[str]:
        """The version counters and schema markers of the graph and its companions."""
        graphs = [self.name, *(self.companion_graph(c) for c in COMPANIONS)]
        markers = [self.schema, *(f"{self.companion_graph(c)}:schema" for c in COMPANIONS)]
        return [*(f"{PREFIX}:{g}:version" for g in graphs), *markers]
