"""Which sources a provenance query matches: the sources a retraction by provenance covers.

The indexed part of the query (tool, reading time, run, agent and framework through the run's node,
source kind, an id or uri prefix) is one Cypher read (`cypher.provenance_sources`); what Cypher
cannot test on a stored JSON text (a subset of the arguments, a prefix of an argument's value) is
tested here on the rows it returns. `matches` is the plain rule both follow, one source at a time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from rippl_core._runtime.op import Batch, Op
from rippl_core._runtime.timeutil import TimeLike, from_ms, to_ms
from rippl_core._runtime.validation import canonical_args, check_id, plain_errors, url_host
from rippl_core.errors import InvalidInputError
from rippl_core.models import ProvenanceQuery
from rippl_core.review import cypher

RUN_SOURCE = "run"  # the kind of a run's own root source: matched only when asked for by kind
MAX_SOURCES = 10_000  # what one review may cover: one commit, one receipt, one event


def query_of(*, tool: str | None = None, args: Mapping[str, Any] | None = None,
             since: TimeLike | None = None, until: TimeLike | None = None, run: str | None = None,
             agent: str | None = None, framework: str | None = None,
             source_kind: str | None = None, source_prefix: str | None = None) -> ProvenanceQuery:
    """A validated provenance query; at least one field must be given."""
    for value, what in ((tool, "tool"), (run, "run"), (agent, "agent"), (framework, "framework"),
                        (source_kind, "source_kind"), (source_prefix, "source_prefix")):
        if value is not None:
            check_id(value, what=what)
    if args is not None and not isinstance(args, Mapping):
        raise InvalidInputError(f"args must be a mapping of argument names to values (a subset of "
                                f"a call's arguments), got {type(args).__name__}")
    normal = json.loads(canonical_args(args) or "{}") if args is not None else None
    times = {name: None if value is None else to_ms(value, name=name)
             for name, value in (("since", since), ("until", until))}
    if times["since"] is not None and times["until"] is not None and times["since"] >= times["until"]:
        raise InvalidInputError("since must be before until (the window is since <= observed_at "
                                "< until)")
    try:
        query = ProvenanceQuery(tool=tool, args=normal, since=_dt(times["since"]),
                                until=_dt(times["until"]), run=run, agent=agent,
                                framework=framework, source_kind=source_kind,
                                source_prefix=source_prefix)
    except ValidationError as exc:
        raise InvalidInputError(f"bad provenance query: {plain_errors(exc.errors())}") from None
    if not query.given() or query.given() == {"args": {}}:
        raise InvalidInputError(
            "a provenance query needs at least one of tool, args, since, until, run, agent, "
            "framework, source_kind, source_prefix; retracting every source is not a query",
            cli="give at least one of --tool, --args-json, --since, --until, --run, --agent, "
                "--framework, --source-kind, --source-prefix")
    return query


def _dt(ms: int | None) -> datetime | None:
    return from_ms(ms) if ms is not None else None


def _ms(value: datetime | None) -> int | None:
    return None if value is None else to_ms(value)


@dataclass
class Matched:
    """The sources a query matched that can still be retracted (props by id), the claims they
    support directly, and how many matched sources were already retracted."""

    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    claims: list[str] = field(default_factory=list)
    already_retracted: int = 0


def matches(query: ProvenanceQuery, source: Mapping[str, Any], run: Mapping[str, Any] | None) -> bool:
    """The plain rule, for one source (its stored properties) and its run's node (None: none)."""
    kind = source.get("source_type")
    if query.source_kind is not None:
        if kind != query.source_kind:
            return False
    elif kind == RUN_SOURCE:
        return False
    if query.tool is not None and source.get("tool") != query.tool:
        return False
    observed = source.get("observed_at")
    if query.since is not None and (observed is None or observed < _ms(query.since)):
        return False
    if query.until is not None and (observed is None or observed >= _ms(query.until)):
        return False
    if query.run is not None and source.get("run") != query.run:
        return False
    for name in ("agent", "framework"):
        wanted = getattr(query, name)
        if wanted is not None and (run is None or run.get(name) != wanted):
            return False
    stored = _args(source.get("args"))
    if query.args and (stored is None or any(k not in stored or stored[k] != v
                                              for k, v in query.args.items())):
        return False
    if query.source_prefix is not None:
        prefix = query.source_prefix
        texts = [source.get("id"), source.get("uri"),
                 *(v for v in (stored or {}).values() if isinstance(v, str))]
        if not any(isinstance(t, str) and t.startswith(prefix) for t in texts):
            return False
    return True


def _args(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def prefix_host(prefix: str) -> str | None:
    """The host every string starting with `prefix` names, if `prefix` is an http(s) URL whose
    host is complete (followed by `/`, `?` or `#`): `https://evil.example/` names evil.example,
    `https://evil.example` does not (evil.example.com starts with it too)."""
    _, sep, rest = prefix.partition("://")
    return url_host(prefix) if sep and any(c in rest for c in "/?#") else None


def match(query: ProvenanceQuery) -> Op[Matched]:
    """The sources `query` matches (one round trip), and the claims they support. A URL prefix
    whose host is complete is looked up by the readings' indexed host, beside the ids and uris
    that start with it (two reads in one batch); any other prefix scans the arguments' text."""
    common: dict[str, Any] = {"tool": query.tool, "since": _ms(query.since), "until": _ms(query.until),
              "run": query.run, "agent": query.agent, "framework": query.framework,
              "kind": query.source_kind, "with_run_sources": query.source_kind == RUN_SOURCE,
              "fragments": [(canonical_args({k: v}) or "")[1:-1]
                            for k, v in (query.args or {}).items()]}
    host = prefix_host(query.source_prefix) if query.source_prefix is not None else None
    if host is None:
        rows = yield cypher.provenance_sources(prefix=query.source_prefix, **common)
    else:
        named, hosted = yield Batch(
            cypher.provenance_sources(prefix=query.source_prefix, prefix_on="names", **common),
            cypher.provenance_sources(prefix=host, prefix_on="host", **common))
        rows = list({row[0]["id"]: row for row in [*named, *hosted]}.values())
    found = Matched()
    claims: dict[str, None] = {}
    for props, agent, framework, supported in rows:
        if not matches(query, props, {"agent": agent, "framework": framework}):
            continue
        if props.get("retracted"):
            found.already_retracted += 1
            continue
        found.sources[props["id"]] = props
        claims.update(dict.fromkeys(c for c in supported or () if c is not None))
    found.claims = sorted(claims)
    found.sources = dict(sorted(found.sources.items()))
    return found
