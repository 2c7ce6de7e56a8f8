"""Nodes to write (`NodeSpec`, built by `source_spec`...`action_spec`), and the graph description
that `load` takes: a dict, or a JSON or YAML file.

```yaml
sources:   [{id, title, kind?, uri?}]
claims:    [{id, text, sources?: [ids], derived_from?: [claim ids], key?, value?}]
decisions: [{id, title, premises?: [claim or decision ids], depends_on?: [decision ids]}]
actions:   [{id, title, decisions?: [ids], tool?, args?: {...}, triggers?: [action ids]}]
justifications: [{node, antecedents: [ids]}]   # alternative justifications of nodes above
```
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any, ClassVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rippl_core._runtime.collector import held_off
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
    plain_ids,
    plain_texts,
    semantic_id,
)
from rippl_core.errors import InvalidInputError
from rippl_core.vocabulary import ID_PREFIX, Kind

_json_string = json.encoder.encode_basestring_ascii  # what json.dumps writes for a str


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
    key: str | None = None  # a claim's subject and property ("shard-09/health"), normalised
    value: str | None = None  # what it says of them ("healthy"), normalised; None: its text
    created_in: str | None = None  # the captured run that wrote it, if one did (capture.memory)

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
        fact_key, fact_value = claim_key(self.key), claim_value(self.value)
        if self.kind is not Kind.CLAIM and (fact_key is not None or fact_value is not None):
            raise InvalidInputError(f"only claims carry a key and a value, not a {self.kind}")
        if fact_value is not None and fact_key is None:
            raise InvalidInputError(f"{node_id} has a value but no key; give the key it is the "
                                    "value of (a subject and a property, e.g. 'shard-09/health')")
        return NodeSpec(self.kind, text, node_id, self.uri, self.source_type, self.tool,
                        self.args, unique, self.provenance, check_ids(self.sources, what="sources"),
                        fact_key, fact_value, self.created_in)

    def _checked_copy(self) -> NodeSpec:
        """`validated()` of a spec whose every field already passed the checks (see
        `validated_all`): only the repeats are dropped."""
        justs = [list(dict.fromkeys(j)) for j in self.justifications]
        unique = list({frozenset(j): j for j in justs if j}.values())
        return NodeSpec(self.kind, self.text, self.id, self.uri, self.source_type, self.tool,
                        self.args, unique, self.provenance, list(dict.fromkeys(self.sources)),
                        self.key, self.value, self.created_in)

    def props(self, now: int) -> dict[str, Any]:
        """The properties to store (None left out), with the content digest."""
        args = canonical_args(self.args)
        kind, text, tool, uri, source_type = _VALUE[self.kind], self.text, self.tool, self.uri, \
            self.source_type
        props: dict[str, Any] = {"id": self.id, "kind": kind, "text": text}
        if uri is not None:
            props["uri"] = uri
        if source_type is not None:
            props["source_type"] = source_type
        if tool is not None:
            props["tool"] = tool
        if args is not None:
            props["args"] = args
        if tool:
            props["call_key"] = call_key(tool, args)
        props["retracted"], props["pending"], props["created_at"] = False, 0, now
        if self.created_in is not None:  # not part of the digest: who wrote it, not what it says
            props["created_in"] = self.created_in
        if self.provenance:
            props["provenance"] = json.dumps(self.provenance, sort_keys=True)
        props["digest"] = _digest(args, kind, source_type, digested_text(self.id, self.kind, text),
                                  tool, uri)
        if self.kind is Kind.CLAIM:  # found by what it states, whatever its id
            props["text_key"] = semantic_id(Kind.CLAIM, self.text)
        if self.key is not None:  # not part of the digest: a key may be given to a claim later
            props["key"] = self.key
            if self.value is not None:
                props["value"] = self.value
        return props


_VALUE = {kind: kind.value for kind in Kind}


def validated_all(specs: Sequence[NodeSpec]) -> list[NodeSpec]:
    """`[spec.validated() for spec in specs]`: each kind of field is checked for the whole batch at
    once, and only a batch that fails is checked spec by spec, to raise the same error."""
    if not all(type(spec) is NodeSpec and spec.id is not None and spec.key is None
               and spec.value is None for spec in specs):
        return [spec.validated() for spec in specs]
    justifications = [j for spec in specs for j in spec.justifications]
    optional_ids = [spec.tool for spec in specs if spec.tool is not None]
    optional_texts = [v for spec in specs for v in (spec.uri, spec.source_type) if v is not None]
    if (all(type(j) is list for j in justifications)
            and all(type(spec.sources) is list for spec in specs)
            and plain_ids([spec.id for spec in specs]) and plain_ids(optional_ids)
            and plain_ids(list(chain.from_iterable(justifications)))
            and plain_ids([a for spec in specs for a in spec.sources])
            and plain_texts([spec.text for spec in specs]) and plain_texts(optional_texts)):
        return [spec._checked_copy() for spec in specs]
    return [spec.validated() for spec in specs]


def digested_text(node_id: str | None, kind: Kind, text: str) -> str:
    """The text a node's content digest covers: under a semantic id (derived from the normalised
    text) the normalised text is the content, so re-adding the same statement written differently
    is a no-op, not a conflict."""
    if _may_be_semantic(node_id, kind) and node_id == semantic_id(kind, text):
        return normalise_text(text)
    return text


def action_digest(props: Mapping[str, Any], args: str | None) -> str:
    """The content digest of a stored action with these canonical args."""
    text = digested_text(props["id"], Kind.ACTION, props["text"])
    return _digest(args, props.get("kind"), props.get("source_type"), text, props.get("tool"),
                   props.get("uri"))


def _may_be_semantic(node_id: str | None, kind: Kind) -> bool:
    """Whether `node_id` has the shape of a semantic id (prefix, dash, 12 hex digits), the only
    ids worth hashing the text to compare with."""
    prefix = ID_PREFIX[kind]
    return node_id is not None and len(node_id) == len(prefix) + 13 and node_id.startswith(prefix)


_DIGESTED = ("args", "kind", "source_type", "text", "tool", "uri")  # sorted, as json sorts them
_DIGEST_JSON = "{" + ", ".join(f'"{k}": %s' for k in _DIGESTED) + "}"


def content_digest(props: Mapping[str, Any]) -> str:
    """A digest of a node's own content (not its support), to detect conflicting re-adds: SHA-256
    of `json.dumps` of the content fields with sorted keys."""
    return _digest(*map(props.get, _DIGESTED))


def _digest(args: Any, kind: Any, source_type: Any, text: Any, tool: Any, uri: Any) -> str:
    """`content_digest` of these fields, written out directly when every one is a string or
    missing (the text `json.dumps` writes, without its per-call overhead)."""
    values = (args, kind, source_type, text, tool, uri)
    if set(map(type, values)) <= _STR_OR_NONE:
        encoded = (_NULL if v is None else _json_string(v) for v in values)
        return hashlib.sha256((_DIGEST_JSON % tuple(encoded)).encode()).hexdigest()
    return hashlib.sha256(json.dumps(dict(zip(_DIGESTED, values, strict=True)),
                                     sort_keys=True).encode()).hexdigest()


_STR_OR_NONE = {str, type(None)}
_NULL = "null"



class _Entry(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid")
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
    key: str | None = None
    value: str | None = None


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
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid")
    node: str
    antecedents: list[str]


class GraphSpec(BaseModel):
    """A whole graph to load."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid")
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
                         provenance=e.provenance, key=e.key, value=e.value) for e in graph.claims]
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
               provenance: Mapping[str, Any] | None = None, key: str | None = None,
               value: str | None = None) -> NodeSpec:
    """Each source is its own justification (any one suffices); derived_from is one more (all
    needed). `key` (a subject and a property) and `value` say what the claim is about."""
    source_ids = _ids(sources, "sources")
    justs = [[s] for s in source_ids]
    if derived_from:
        justs.append(_ids(derived_from, "derived_from"))
    return NodeSpec(Kind.CLAIM, text, id, justifications=justs, provenance=provenance,
                    sources=source_ids, key=key, value=value)


def claim_key(key: object) -> str | None:
    """A claim's key, normalised: a subject and a property joined by '/' ("shard-09/health"),
    case-folded and single-spaced, so "Shard-09 / Health" is the same key. None stays None."""
    if key is None:
        return None
    text = check_text(key, what="key")
    subject, slash, prop = text.rpartition("/")
    if not slash or not subject.strip() or not prop.strip():
        raise InvalidInputError(f"key {text!r} is not a subject and a property; write it as "
                                "SUBJECT/PROPERTY, e.g. 'shard-09/health'")
    return f"{normalise_text(subject).strip()}/{normalise_text(prop).strip()}"


def claim_value(value: object) -> str | None:
    """A claim's value, normalised as texts are for ids (case, spacing, a final period)."""
    return None if value is None else normalise_text(check_text(value, what="value"))


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
    entries = sum(len(v) for v in data.values() if isinstance(v, list))
    try:
        with held_off(entries):  # CPU only (see rippl_core._runtime.collector)
            return GraphSpec.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError("the graph description is not valid:\n"
                                + plain_errors(exc.errors(include_url=False))) from None
