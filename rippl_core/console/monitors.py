"""Monitors propose: an Alertmanager-compatible webhook whose alerts become retractions by provenance.

Alertmanager's webhook receiver POSTs its documented JSON payload (`version` "4": a group of
alerts, each `firing` or `resolved`, with `labels`, `annotations`, `startsAt`, `endsAt`,
`generatorURL` and `fingerprint`). A small rules file (YAML) maps an alert's labels to a provenance
query:

    rules:
      - name: poisoned-domain
        match: {alertname: PromptInjection}          # every label given must be equal
        query:                                       # ProvenanceQuery fields; {labels.X},
          tool: fetch_url                            # {annotations.X}, {startsAt}, {endsAt}
          source_prefix: "https://{labels.domain}/"  # are filled in from the alert
        reason: "{annotations.summary}"              # optional

A firing alert that a rule matches becomes one pending review (proposed by the monitor whose token
sent it, once: a re-sent alert with a review still pending proposes nothing again); a resolved alert
changes nothing (a person decides what was proposed). A payload that is not the documented format
is refused whole, before anything is proposed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rippl_core._runtime.validation import plain_errors
from rippl_core.client import AsyncRippl
from rippl_core.errors import InvalidInputError, NoMatchError, ReviewError
from rippl_core.models import ProvenanceQuery

_FIELD = re.compile(r"\{(labels|annotations)\.([A-Za-z_][A-Za-z0-9_]*)\}|\{(startsAt|endsAt)\}")
_QUERY_FIELDS = frozenset(ProvenanceQuery.model_fields)


class AlertRulesError(InvalidInputError):
    """The alert rules file is refused; the message says where and why."""


# -- the payload (https://prometheus.io/docs/alerting/latest/configuration/#webhook_config) --------


class _Payload(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="allow", populate_by_name=True)


class Alert(_Payload):
    status: Literal["firing", "resolved"]
    labels: dict[str, str]
    annotations: dict[str, str] = Field(default_factory=dict)
    starts_at: datetime = Field(alias="startsAt")
    ends_at: datetime | None = Field(default=None, alias="endsAt")
    generator_url: str | None = Field(default=None, alias="generatorURL")
    fingerprint: str = Field(min_length=1, max_length=128)


class Notification(_Payload):
    """Alertmanager's webhook payload, version 4."""

    version: Literal["4"]
    group_key: str = Field(alias="groupKey")
    truncated_alerts: int = Field(default=0, alias="truncatedAlerts")
    status: Literal["firing", "resolved"]
    receiver: str
    group_labels: dict[str, str] = Field(default_factory=dict, alias="groupLabels")
    common_labels: dict[str, str] = Field(default_factory=dict, alias="commonLabels")
    common_annotations: dict[str, str] = Field(default_factory=dict, alias="commonAnnotations")
    external_url: str | None = Field(default=None, alias="externalURL")
    alerts: list[Alert] = Field(min_length=1, max_length=1000)


def parse_notification(body: Any) -> Notification:
    """The payload, or InvalidInputError naming every field that is not the documented format."""
    try:
        return Notification.model_validate(body)
    except ValidationError as exc:
        raise InvalidInputError("not an Alertmanager webhook payload (version 4): "
                                f"{plain_errors(exc.errors(include_url=False))}; nothing was "
                                "proposed") from None


# -- the rules ---------------------------------------------------------------------------------


class Rule(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=128)
    match: dict[str, str] = Field(min_length=1)
    query: dict[str, Any] = Field(min_length=1)
    reason: str | None = None

    @field_validator("query")
    @classmethod
    def _known_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - _QUERY_FIELDS)
        if unknown:
            raise ValueError(f"unknown query field {', '.join(unknown)}; the fields are "
                             f"{', '.join(sorted(_QUERY_FIELDS))}")
        return value

    def matches(self, alert: Alert) -> bool:
        return all(alert.labels.get(k) == v for k, v in self.match.items())

    def query_for(self, alert: Alert) -> dict[str, Any]:
        """The provenance query for this alert (placeholders filled in); KeyError names a label
        or annotation the alert lacks."""
        return {k: _fill(v, alert) for k, v in self.query.items()}

    def reason_for(self, alert: Alert) -> str:
        name = alert.labels.get("alertname", "an alert")
        reason = _fill(self.reason, alert) if self.reason else None
        return reason or f"alert {name} fired (rule {self.name})"


class AlertRules(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid", frozen=True)

    rules: list[Rule] = Field(min_length=1)

    def first(self, alert: Alert) -> Rule | None:
        return next((rule for rule in self.rules if rule.matches(alert)), None)


def _fill(value: Any, alert: Alert) -> Any:
    if isinstance(value, Mapping):
        return {k: _fill(v, alert) for k, v in value.items()}
    if not isinstance(value, str):
        return value

    def field(found: re.Match[str]) -> str:
        if found.group(3):
            when = alert.starts_at if found.group(3) == "startsAt" else alert.ends_at
            if when is None or when.year < 1971:  # Alertmanager sends 0001-01-01 for "not yet"
                raise KeyError(found.group(3))
            return when.isoformat()
        source = alert.labels if found.group(1) == "labels" else alert.annotations
        return source[found.group(2)]

    return _FIELD.sub(field, value)


def load_rules(path: Path) -> AlertRules:
    """Read and check a rules file; AlertRulesError says what is wrong."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AlertRulesError(f"cannot read the alert rules file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise AlertRulesError(f"{path} is not YAML: {exc}") from None
    try:
        return AlertRules.model_validate(data)
    except ValidationError as exc:
        raise AlertRulesError(f"{path}: {plain_errors(exc.errors(include_url=False))} (expected "
                              "rules: a list of {name, match: {label: value}, query: {...}, "
                              "reason})") from None


# -- handling a notification -------------------------------------------------------------------


class Outcome(BaseModel):
    """What became of one alert of a notification."""

    fingerprint: str
    status: Literal["firing", "resolved"]
    rule: str | None = None
    review: str | None = Field(default=None, description="The review it proposed (or the one "
                                                         "still pending for it).")
    result: Literal["proposed", "pending", "resolved", "unmatched", "nothing_matched", "refused"]
    detail: str


class Handled(BaseModel):
    """The answer to a notification: one outcome per alert."""

    monitor: str
    outcomes: list[Outcome]


def _evidence(alert: Alert, rule: Rule) -> str:
    where = f" {alert.generator_url}" if alert.generator_url else ""
    return (f"alertmanager alert {alert.fingerprint} ({alert.labels.get('alertname', '?')}, rule "
            f"{rule.name}) firing since {alert.starts_at.isoformat()}{where}")


async def handle(rippl: AsyncRippl, notification: Notification, rules: AlertRules,
                 monitor: str) -> Handled:
    """Turn each firing alert a rule matches into a pending review proposed by `monitor`."""
    outcomes = []
    pending = {item.evidence: item.id for item in await rippl.reviews("pending")
               if item.monitor == monitor and item.evidence}
    for alert in notification.alerts:
        rule = rules.first(alert)
        outcome = functools.partial(Outcome, fingerprint=alert.fingerprint, status=alert.status,
                                    rule=rule.name if rule else None)
        if alert.status == "resolved":
            outcomes.append(outcome(result="resolved", detail="a resolved alert changes nothing: "
                                    "a person decides what its firing proposed"))
            continue
        if rule is None:
            outcomes.append(outcome(result="unmatched", detail="no rule matches its labels"))
            continue
        evidence = _evidence(alert, rule)
        if evidence in pending:
            outcomes.append(outcome(review=pending[evidence], result="pending",
                                    detail="already proposed; the review is still pending"))
            continue
        try:
            query = rule.query_for(alert)
        except KeyError as missing:
            outcomes.append(outcome(result="refused", detail=f"rule {rule.name} needs "
                                    f"{missing.args[0]}, which the alert does not carry"))
            continue
        try:
            item = await rippl.propose_retraction_where(reason=rule.reason_for(alert), by=monitor,
                                                        evidence=evidence, monitor=monitor, **query)
        except NoMatchError as exc:
            outcomes.append(outcome(result="nothing_matched", detail=str(exc)))
            continue
        except (InvalidInputError, ReviewError) as exc:
            outcomes.append(outcome(result="refused", detail=str(exc)))
            continue
        pending[evidence] = item.id
        outcomes.append(outcome(review=item.id, result="proposed",
                                detail=f"{len(item.claims)} sources, {len(item.at_risk)} nodes at risk"))
    return Handled(monitor=monitor, outcomes=outcomes)
