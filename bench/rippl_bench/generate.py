"""Generated causal graphs for the benchmarks, as `load` specs (plain dicts), deterministic per seed.

* `causal_graph(n)`: an operations memory of `n` nodes made of incident "blocks" of about 100 nodes
  (10% sources, 35% claims, 20% decisions, 35% actions). Support stays mostly inside a block, with
  a few links to earlier blocks, so chains run several levels deep and blast radii vary from one
  node to a few hundred. Some decisions carry an alternative justification. Texts are templated
  from a shared pool of services, shards and regions, so unrelated blocks share words (as real
  operations memory does); half the decisions quote one of their premises as a rationale ("...
  since shard 42 in eu-west-1 is healthy") and half the actions name the decision they carry out,
  so text similarity has a fair chance; every action has a unique tool call.
* `diamond_lattice(depth)`: a chain of diamonds, two nodes per level, each resting on both nodes
  of the level above: 2 + 2*depth nodes but 2^depth paths from the root to the bottom.
* `fan_out(dependents)`: one claim with exactly `dependents` nodes downstream of it.

Blocks are emitted in order and every reference points backwards, so a spec can be cut into
batches (`batches`) that load one after another.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SERVICES = ("billing", "payments", "checkout", "search", "auth", "ledger", "invoicing", "catalog",
            "pricing", "inventory", "shipping", "notifications", "fraud", "refunds", "accounts",
            "reporting", "gateway", "sessions", "recommendations", "tax")
REGIONS = ("eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-south-1", "ap-northeast-1")
TABLES = ("invoices", "ledger_entries", "orders", "customers", "payouts", "refunds", "sessions",
          "events")
TOOLS = ("migrate_tables", "scale_service", "rollback_deploy", "failover_region", "rotate_keys",
         "flush_cache", "resize_pool", "page_oncall", "update_runbook", "notify_finance",
         "pause_jobs", "run_backfill")

CLAIM_TEMPLATES = (
    "Shard {shard} in {region} is healthy",
    "Disk usage on shard {shard} is at {pct}%",
    "{service} p99 latency is under {ms} ms",
    "Replica lag for {service} in {region} is below {sec} seconds",
    "The error budget of {service} is {pct}% spent",
    "Connection pool of {service} is saturated at {n} connections",
    "The {table} table on shard {shard} holds {n} million rows",
    "Deploy {version} of {service} passed canary checks",
    "Cache hit rate of {service} is {pct}%",
    "Backups of shard {shard} completed at {time} UTC",
    "{region} has spare capacity for {n} more {service} pods",
    "Month-end close for {service} starts on day {day}",
)
DECISION_TEMPLATES = (
    "Move the {table} tables to shard {shard}",
    "Scale {service} to {n} replicas",
    "Roll back {service} to the previous release",
    "Fail {service} over to {region}",
    "Freeze deploys of {service} until close",
    "Raise the pool size of {service} to {n}",
    "Keep {service} traffic in {region}",
    "Run the backfill of {table} tonight",
    "Decommission the old partitions on shard {shard}",
    "Page the on-call owner of {service}",
)
ACTION_TEMPLATES = (
    "Migrate {table} from shard {shard} to shard {shard2}",
    "Scale the {service} deployment in {region} to {n} pods",
    "Roll back {service} deploy {version}",
    "Shift {pct}% of {service} traffic to {region}",
    "Update the runbook for {service}",
    "Notify finance about {service} close timing",
    "Flush the {service} cache in {region}",
    "Resize the {service} connection pool to {n}",
    "Pause the {table} jobs on shard {shard}",
    "Cut {service} over to shard {shard2}",
)


@dataclass
class _Block:
    """The entities an incident block talks about: a few services, shards, regions and tables,
    one of each picked per sentence, so a block's texts overlap without repeating each other."""

    services: tuple[str, ...]
    regions: tuple[str, ...]
    shards: tuple[str, ...]
    tables: tuple[str, ...]
    version: str

    @property
    def service(self) -> str:
        return self.services[0]

    def fill(self, template: str, rng: random.Random) -> str:
        shard, shard2 = rng.sample(self.shards, 2)
        return template.format(
            service=rng.choice(self.services), region=rng.choice(self.regions), shard=shard,
            shard2=shard2, table=rng.choice(self.tables), version=self.version,
            pct=rng.randint(5, 98), ms=rng.choice((50, 80, 120, 200, 300, 450)),
            sec=rng.randint(1, 30), n=rng.randint(2, 64),
            time=f"{rng.randint(0, 23):02d}:{rng.choice(('00', '15', '30', '45'))}",
            day=rng.randint(25, 31))


@dataclass
class Generated:
    """A generated graph: the `load` spec, and its edges as (antecedent, consequent) pairs."""

    spec: dict[str, list[dict[str, Any]]]
    edges: list[tuple[str, str]] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    blocks: list[list[str]] = field(default_factory=list)  # node ids per block, in load order

    @property
    def nodes(self) -> int:
        return len(self.kinds)

    def ids(self, kind: str) -> list[str]:
        return [n for n, k in self.kinds.items() if k == kind]


def _block(rng: random.Random) -> _Block:
    return _Block(tuple(rng.sample(SERVICES, 3)), tuple(rng.sample(REGIONS, 2)),
                  tuple(f"{n:02d}" for n in rng.sample(range(1, 100), 4)),
                  tuple(rng.sample(TABLES, 2)), f"v{rng.randint(1, 9)}.{rng.randint(0, 20)}")


KIND_OF = {"sources": "Source", "claims": "Claim", "decisions": "Decision", "actions": "Action"}


def causal_graph(n: int, *, seed: int = 7, block_size: int = 100, cross: float = 0.05,
                 alternatives: float = 0.05, rationale: float = 0.5) -> Generated:
    """An operations memory of exactly `n` nodes (see the module docstring)."""
    if n < 10:
        raise ValueError("a generated graph needs at least 10 nodes")
    rng = random.Random(seed)
    out = Generated(spec={"sources": [], "claims": [], "decisions": [], "actions": [],
                          "justifications": []})
    prev: dict[str, list[str]] = {"claims": [], "decisions": [], "actions": []}
    counters = {"S": 0, "C": 0, "D": 0, "A": 0}
    remaining = n

    def new_id(prefix: str) -> str:
        counters[prefix] += 1
        return f"{prefix}{counters[prefix]:07d}"

    def place(section: str, node: str, text: str, entry: dict[str, Any], into: list[str], *,
              rests_on: Sequence[str] = (), **optional: list[str]) -> None:
        """Add a node: its spec entry (with each optional list that is not empty), its kind and
        text, its edges from what it rests on, in that order; `into` collects the block's nodes
        of its kind."""
        entry.update({key: value for key, value in optional.items() if value})
        out.spec[section].append(entry)
        out.kinds[node], out.texts[node] = KIND_OF[section], text
        out.edges.extend((a, node) for a in rests_on)
        into.append(node)

    while remaining > 0:
        size = min(block_size, remaining)
        if 0 < remaining - size < 10:  # never leave a block too small to hold every kind
            size = remaining
        remaining -= size
        entity = _block(rng)
        counts = _kind_counts(size)
        sources: list[str] = []
        for _ in range(counts["S"]):
            node = new_id("S")
            title = f"{rng.choice(('Grafana', 'Datadog', 'PagerDuty', 'Runbook', 'Postmortem'))}: " \
                    f"{entity.service} {rng.choice(('dashboard', 'alert', 'ticket', 'report'))} " \
                    f"{node[-4:]}"
            place("sources", node, title, {"id": node, "title": title, "kind": "telemetry"}, sources)
        claims: list[str] = []
        for _ in range(counts["C"]):
            node = new_id("C")
            text = entity.fill(rng.choice(CLAIM_TEMPLATES), rng)
            derived = []
            if claims and rng.random() < 0.3:
                derived = [rng.choice(claims)]
            elif prev["claims"] and rng.random() < cross:
                derived = [rng.choice(prev["claims"])]
            # a derived claim rests on its premise alone; an observed one on one or two sources
            srcs = [] if derived else rng.sample(sources, 2 if rng.random() < 0.2 and len(sources) > 1
                                                 else 1)
            place("claims", node, text, {"id": node, "text": text}, claims, rests_on=srcs + derived,
                  sources=srcs, derived_from=derived)
        decisions: list[str] = []
        for _ in range(counts["D"]):
            node = new_id("D")
            text = entity.fill(rng.choice(DECISION_TEMPLATES), rng)
            premises = rng.sample(claims, min(len(claims), rng.choice((1, 1, 2, 2, 3))))
            if rng.random() < rationale:  # a rationale quoting one premise, as agents often write
                text += " since " + _lower_first(out.texts[rng.choice(premises)])
            depends = []
            if decisions and rng.random() < 0.25:
                depends = [rng.choice(decisions)]
            elif prev["decisions"] and rng.random() < cross:
                depends = [rng.choice(prev["decisions"])]
            place("decisions", node, text, {"id": node, "title": text, "premises": premises},
                  decisions, rests_on=premises + depends, depends_on=depends)
            if rng.random() < alternatives and len(claims) > len(premises):
                other = [c for c in claims if c not in premises]
                alt = rng.sample(other, min(len(other), 2))
                out.spec["justifications"].append({"node": node, "antecedents": alt})
                out.edges.extend((a, node) for a in alt)
        actions: list[str] = []
        for _ in range(counts["A"]):
            node = new_id("A")
            text = entity.fill(rng.choice(ACTION_TEMPLATES), rng)
            drivers = rng.sample(decisions, 2 if rng.random() < 0.15 and len(decisions) > 1 else 1)
            if rng.random() < rationale:  # the decision it carries out, without its own rationale
                text += " to " + _lower_first(out.texts[drivers[0]].split(" since ")[0])
            triggers = []
            if actions and rng.random() < 0.25:
                triggers = [rng.choice(actions)]
            elif prev["actions"] and rng.random() < cross:
                triggers = [rng.choice(prev["actions"])]
            place("actions", node, text, {"id": node, "title": text, "decisions": drivers,
                                          "tool": TOOLS[int(node[1:]) % len(TOOLS)],
                                          "args": {"target": entity.service, "ref": node}},
                  actions, rests_on=drivers + triggers, triggers=triggers)
        prev = {"claims": claims, "decisions": decisions, "actions": actions}
        out.blocks.append([*sources, *claims, *decisions, *actions])
    return out


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _kind_counts(size: int) -> dict[str, int]:
    sources = max(1, round(size * 0.10))
    claims = max(1, round(size * 0.35))
    decisions = max(1, round(size * 0.20))
    return {"S": sources, "C": claims, "D": decisions, "A": size - sources - claims - decisions}


def batches(generated: Generated, batch_nodes: int) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """The spec cut into `load` batches of about `batch_nodes` nodes (whole blocks, in order)."""
    where: dict[str, tuple[str, int]] = {}
    for kind in ("sources", "claims", "decisions", "actions"):
        for i, entry in enumerate(generated.spec[kind]):
            where[entry["id"]] = (kind, i)
    extra: dict[str, list[dict[str, Any]]] = {}
    for entry in generated.spec.get("justifications", []):
        extra.setdefault(entry["node"], []).append(entry)
    batch: dict[str, list[dict[str, Any]]] = _empty()
    count = 0
    for block in generated.blocks:
        for node in block:
            kind, i = where[node]
            batch[kind].append(generated.spec[kind][i])
            batch["justifications"].extend(extra.get(node, ()))
        count += len(block)
        if count >= batch_nodes:
            yield batch
            batch, count = _empty(), 0
    if count:
        yield batch


def _empty() -> dict[str, list[dict[str, Any]]]:
    return {"sources": [], "claims": [], "decisions": [], "actions": [], "justifications": []}


_LEVEL_KINDS = ("claims", "decisions", "actions")


def diamond_lattice(depth: int, *, prefix: str = "L") -> Generated:
    """A root claim and `depth` levels of two nodes, each resting on both nodes above it.

    Levels are claims for the first third, decisions for the second and actions for the last, so
    every causal edge type appears. There are 2^depth root-to-bottom paths."""
    if depth < 1:
        raise ValueError("depth must be at least 1")
    root = f"{prefix}-root"
    out = Generated(spec=_empty())
    out.spec["sources"].append({"id": f"{prefix}-src", "title": "Lattice source"})
    out.kinds[f"{prefix}-src"] = "Source"
    out.spec["claims"].append({"id": root, "text": "Lattice root claim", "sources": [f"{prefix}-src"]})
    out.kinds[root] = "Claim"
    out.edges.append((f"{prefix}-src", root))
    above = [root]
    for level in range(1, depth + 1):
        kind = _LEVEL_KINDS[min(2, (level - 1) * 3 // depth)]
        here = [f"{prefix}-{level:02d}{side}" for side in "ab"]
        for node in here:
            text = f"Lattice level {level} node {node[-1]}"
            entry: dict[str, Any] = {"id": node}
            if kind == "claims":
                entry |= {"text": text, "derived_from": above}
            elif kind == "decisions":
                key = "premises" if out.kinds[above[0]] == "Claim" else "depends_on"
                entry |= {"title": text, key: above}
            else:
                key = "decisions" if out.kinds[above[0]] == "Decision" else "triggers"
                entry |= {"title": text, key: above}
            out.spec[kind].append(entry)
            out.kinds[node] = {"claims": "Claim", "decisions": "Decision", "actions": "Action"}[kind]
            out.edges.extend((a, node) for a in above)
        above = here
    return out


def fan_out(dependents: int, *, prefix: str = "F") -> Generated:
    """One claim (`{prefix}-root`) with exactly `dependents` nodes downstream of it.

    About 10% derived claims, 10% decisions resting on them, the rest actions driven by those
    decisions, some triggered by other actions, so the wave runs four to five levels deep."""
    if dependents < 3:
        raise ValueError("fan_out needs at least 3 dependents")
    root = f"{prefix}-root"
    out = Generated(spec=_empty())
    out.spec["sources"].append({"id": f"{prefix}-src", "title": "Fan-out source"})
    out.spec["claims"].append({"id": root, "text": "Fan-out root claim", "sources": [f"{prefix}-src"]})
    out.kinds |= {f"{prefix}-src": "Source", root: "Claim"}
    out.edges.append((f"{prefix}-src", root))
    n_claims = max(1, dependents // 10)
    n_decisions = max(1, dependents // 10)
    n_actions = dependents - n_claims - n_decisions
    claims = [f"{prefix}-C{i:06d}" for i in range(n_claims)]
    for node in claims:
        out.spec["claims"].append({"id": node, "text": f"Derived claim {node}", "derived_from": [root]})
        out.kinds[node] = "Claim"
        out.edges.append((root, node))
    decisions = [f"{prefix}-D{i:06d}" for i in range(n_decisions)]
    for i, node in enumerate(decisions):
        premise = claims[i % n_claims]
        out.spec["decisions"].append({"id": node, "title": f"Decision {node}", "premises": [premise]})
        out.kinds[node] = "Decision"
        out.edges.append((premise, node))
    for i in range(n_actions):
        node = f"{prefix}-A{i:06d}"
        driver = decisions[i % n_decisions]
        entry: dict[str, Any] = {"id": node, "title": f"Action {node}", "decisions": [driver]}
        antecedents = [driver]
        if i >= n_decisions and i % 3 == 0:
            trigger = f"{prefix}-A{i - n_decisions:06d}"
            entry["triggers"] = [trigger]
            antecedents.append(trigger)
        out.spec["actions"].append(entry)
        out.kinds[node] = "Action"
        out.edges.extend((a, node) for a in antecedents)
    return out


def descendants(edges: list[tuple[str, str]]) -> Mapping[str, list[str]]:
    """Adjacency (antecedent -> consequents) of an edge list."""
    down: dict[str, list[str]] = {}
    for a, b in edges:
        down.setdefault(a, []).append(b)
    return down
