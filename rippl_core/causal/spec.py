"""Nodes to write (`NodeSpec`, built by `source_spec`...`action_spec`), and the graph description
that `load` takes: a dict, or a JSON or YAML file.

```yaml
sources:   [{id, title, kind?, uri?}]
claims:    [{id, text, sources?: [ids], derived_from?: [claim ids]}]
decisions: [{id, title, premises?: [claim or decision ids], depends_on?: [decision ids]}]
actions:   [{id, title, decisions?: [ids], tool?, args?: {...}, triggers?: [action ids]}]
justifications: [{node, antecedents: [ids]}]   # alternative justifications of nodes above
```
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rippl_core._runtime.validation import (
    MAX_ARGS_BYTES,
    call_key,
    canonical_args,
    canonical_json,
    check_id,
    check_ids,
    check_text,
    normalise_text,
    plain_errors,
    semantic_id,
)
from rippl_core.errors import InvalidInputError
from rippl_core.vocabulary import Kind


@dataclass
class NodeSpec:
    """A node to write: its own content and the justifications it should have."""

    kind: Kind
    text: str
    id: str | None = None
    uri: str | None = None
    source_type: str | None = None
    tool: str | None = None
    args: Mapping[str, Any] | None = None
    justifications: list[list[str]] = field(default_factory=list)
    provenance: Mapping[str, Any] | None = None
    sources: list[str] = field(default_factory=list)  # antecedents that must be Source nodes

    def validated(self) -> NodeSpec:
        """A checked copy with its id filled in (derived from the content when not given)."""
        what = "title" if self.kind is not Kind.CLAIM else "text"
        text = check_text(self.text, what=f"{self.kind} {what}")
        node_id = check_id(self.id) if self.id is not None else semantic_id(self.kind, text)
        justs = [check_ids(j, what=f"antecedents of {node_id}") for j in self.justifications]
        if self.tool is not None:
            check_id(self.tool, what="tool")
        for key, value in (("uri", self.uri), ("source_type", self.source_type)):
            if value is not None:
                check_text(value, what=key)
        unique = list({frozenset(j): j for j in justs if j}.values())  # a repeat is one justification
        canonical_args(self.args)
        if self.provenance is not None:
            canonical_json(self.provenance, what="provenance", limit=MAX_ARGS_BYTES)
        return NodeSpec(self.kind, text, node_id, self.uri, self.source_type, self.tool,
                        self.args, unique, self.provenance, check_ids(self.sources, what="sources"))

    def props(self, now: int) -> dict[str, Any]:
        args = canonical_args(self.args)
        props: dict[str, Any] = {
            "id": self.id, "kind": self.kind.value, "text": self.text, "uri": self.uri,
            "source_type": self.source_type, "tool": self.tool, "args": args,
            "call_key": call_key(self.tool, args) if self.tool else None,
            "retracted": False, "pending": 0, "created_at": now,
            "provenance": json.dumps(self.provenance, sort_keys=True) if self.provenance else None,
        }
        # Under a semantic id (derived from the normalised text) the normalised text is the content:
        # re-adding the same statement written differently is a no-op, not a conflict.
        semantic = self.id == semantic_id(self.kind, self.text)
        props["digest"] = content_digest({**props, "text": normalise_text(self.text)} if semantic else props)
        if self.kind is Kind.CLAIM:  # found by what it states, whatever its id
            props["text_key"] = semantic_id(Kind.CLAIM, self.text)
        return {k: v for k, v in props.items() if v is not None}


def content_digest(props: Mapping[str, Any]) -> str:
    """A digest of a node's own content (not its support), to detect conflicting re-adds."""
    fields = {k: props.get(k) for k in ("kind", "text", "uri", "source_type", "tool", "args")}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()



class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | None = None
    provenance: dict[str, Any] | None = None


class SourceEntry(_Entry):
    title: str
    kind: str | None = None
    uri: str | None = None


class ClaimEntry(_Entry):
    text: str
    sources: list[str] = Field(default_factory=list)
    derived_from: list[str] = Field(default_factory=list)


class DecisionEntry(_Entry):
    title: str
    premises: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)


class ActionEntry(_Entry):
    title: str
    decisions: list[str] = Field(default_factory=list)
    tool: str | None = None
    args: dict[str, Any] | None = None
    triggers: list[str] = Field(default_factory=list)


class JustificationEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node: str
    antecedents: list[str]


class GraphSpec(BaseModel):
    """A whole graph to load."""

    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    description: str | None = None
    sources: list[SourceEntry] = Field(default_factory=list)
    claims: list[ClaimEntry] = Field(default_factory=list)
    decisions: list[DecisionEntry] = Field(default_factory=list)
    actions: list[ActionEntry] = Field(default_factory=list)
    justifications: list[JustificationEntry] = Field(default_factory=list)



def node_specs(graph: GraphSpec) -> list[NodeSpec]:
    """The nodes a graph description defines, with its extra justifications attached."""
    specs = [source_spec(e.id, e.title, uri=e.uri, kind=e.kind, provenance=e.provenance)
             for e in graph.sources]
    specs += [claim_spec(e.id, e.text, sources=e.sources, derived_from=e.derived_from,
                         provenance=e.provenance) for e in graph.claims]
    specs += [decision_spec(e.id, e.title, premises=e.premises, depends_on=e.depends_on,
                            provenance=e.provenance) for e in graph.decisions]
    specs += [action_spec(e.id, e.title, decisions=e.decisions, tool=e.tool, args=e.args,
                          triggers=e.triggers, provenance=e.provenance) for e in graph.actions]
    by_id = {s.id: s for s in specs if s.id is not None}
    for extra in graph.justifications:
        if extra.node not in by_id:
            missing = f"justifications: {extra.node} is not defined in this file"
            raise InvalidInputError(
                f"{missing}; use justify() to add support to a node already in the graph",
                cli=f"{missing}; define it in the file too (as it is in the graph) to add "
                    "support to it")
        by_id[extra.node].justifications.append(list(extra.antecedents))
    return specs


def source_spec(id: str | None, title: str, *, uri: str | None = None, kind: str | None = None,
                provenance: Mapping[str, Any] | None = None) -> NodeSpec:
    return NodeSpec(Kind.SOURCE, title, id, uri=uri, source_type=kind, provenance=provenance)


def claim_spec(id: str | None, text: str, *, sources: Any = (), derived_from: Any = (),
               provenance: Mapping[str, Any] | None = None) -> NodeSpec:
    """Each source is its own justification (any one suffices); derived_from is one more (all
    needed)."""
    source_ids = _ids(sources, "sources")
    justs = [[s] for s in source_ids]
    if derived_from:
        justs.append(_ids(derived_from, "derived_from"))
    return NodeSpec(Kind.CLAIM, text, id, justifications=justs, provenance=provenance,
                    sources=source_ids)


def decision_spec(id: str | None, title: str, *, premises: Any = (), depends_on: Any = (),
                  provenance: Mapping[str, Any] | None = None) -> NodeSpec:
    """All premises and depends_on together form one justification: every one is needed."""
    antecedents = [*_ids(premises, "premises"), *_ids(depends_on, "depends_on")]
    return NodeSpec(Kind.DECISION, title, id, justifications=[antecedents] if antecedents else [],
                    provenance=provenance)


def action_spec(id: str | None, title: str, *, decisions: Any = (), tool: str | None = None,
                args: Mapping[str, Any] | None = None, triggers: Any = (),
                provenance: Mapping[str, Any] | None = None) -> NodeSpec:
    """The decisions driving the action and the actions that must run before it form one
    justification."""
    antecedents = [*_ids(decisions, "decisions"), *_ids(triggers, "triggers")]
    return NodeSpec(Kind.ACTION, title, id, tool=tool, args=args,
                    justifications=[antecedents] if antecedents else [], provenance=provenance)


def _ids(values: Any, what: str) -> list[str]:
    return check_ids(values, what=what)


def read_spec(spec: Mapping[str, Any] | GraphSpec | str | Path) -> GraphSpec:
    """Parse a graph description from a dict, a GraphSpec, or a .json/.yaml/.yml file."""
    if isinstance(spec, GraphSpec):
        return spec
    if isinstance(spec, (str, Path)):
        path = Path(spec)
        if not path.is_file():
            raise InvalidInputError(f"{path} is not a file; give a .yaml or .json graph file")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InvalidInputError(f"{path} is not a graph file (not UTF-8 text); give a .yaml "
                                    "or .json graph file") from None
        except OSError as exc:
            raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from None
        try:
            data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            raise InvalidInputError(f"{path} is not valid {path.suffix[1:] or 'YAML'}: {exc}") \
                from None
    else:
        data = spec
    if not isinstance(data, Mapping):
        raise InvalidInputError("a graph description is a mapping with sources, claims, "
                                "decisions and actions")
    try:
        return GraphSpec.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError("the graph description is not valid:\n"
                                + plain_errors(exc.errors(include_url=False))) from None
