"""Monitors propose, in process on a real FalkorDB server: a proposer's token (a monitor) proposes
by claim or by provenance and can never approve, reject or register a key; Alertmanager's webhook
(its documented payload, version 4) turns a firing alert into one pending review through the rules
file, once; a resolved alert changes nothing; a malformed or unauthenticated payload is refused
with a clear error and changes nothing."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from helpers_console import ALICE, client
from helpers_core import loopback_graph

from rippl_core import AsyncRippl, Rippl
from rippl_core.console.auth import AuthConfigError, load_proposers, parse_reviewers
from rippl_core.console.monitors import AlertRulesError, load_rules
from rippl_core.testing import Clock, FalkorDBServer
from tests.helpers_provenance import EVIL, START, Incident, seed

pytestmark = pytest.mark.asyncio(loop_scope="session")

WATCHER = "watcher-token-0123456789abcdef"
PROPOSERS = parse_reviewers([f"alertmanager: {WATCHER}"], where="test")
RULES = """\
rules:
  - name: poisoned-domain
    match: {alertname: PromptInjection}
    query:
      tool: fetch_url
      source_prefix: "https://{labels.domain}/"
    reason: "{annotations.summary}"
  - name: nothing-there
    match: {alertname: GhostTool}
    query: {tool: ghost}
"""

# The webhook payload as Alertmanager's documentation gives it (version 4).
FIRING: dict[str, Any] = {
    "version": "4",
    "groupKey": '{}:{alertname="PromptInjection"}',
    "truncatedAlerts": 0,
    "status": "firing",
    "receiver": "rippl",
    "groupLabels": {"alertname": "PromptInjection"},
    "commonLabels": {"alertname": "PromptInjection", "domain": "evil.example"},
    "commonAnnotations": {"summary": "evil.example serves a prompt injection"},
    "externalURL": "http://alertmanager.example:9093",
    "alerts": [{
        "status": "firing",
        "labels": {"alertname": "PromptInjection", "domain": "evil.example"},
        "annotations": {"summary": "evil.example serves a prompt injection"},
        "startsAt": "2026-12-01T10:05:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus.example:9090/graph?g0.expr=injection",
        "fingerprint": "c6b2a9f2d1e0a7b3",
    }],
}


@pytest.fixture(scope="module")
def sync(falkordb_server: FalkorDBServer) -> Iterator[Rippl]:
    with loopback_graph(falkordb_server.url, "monitors") as handle:
        yield handle


@pytest.fixture(scope="module")
def incident(sync: Rippl) -> Incident:
    with Clock(START) as clock:
        return seed(sync, clock)


@pytest_asyncio.fixture(loop_scope="session")
async def rippl(falkordb_server: FalkorDBServer, sync: Rippl,
                incident: Incident) -> AsyncIterator[AsyncRippl]:
    handle = await AsyncRippl.open(url=falkordb_server.url, graph=sync.graph)
    for item in await handle.reviews("pending"):  # each test starts from an empty queue
        await handle.reject(item.id, by="alice", note="reset")
    yield handle
    await handle.close()


def rules(tmp_path: Path) -> Any:
    path = tmp_path / "rules.yaml"
    path.write_text(RULES, encoding="utf-8")
    return load_rules(path)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_a_proposer_proposes_and_can_never_decide(rippl: AsyncRippl, incident: Incident) -> None:
    async with client(rippl, proposers=PROPOSERS) as http:
        proposed = await http.post("/api/reviews/where", headers=bearer(WATCHER), json={
            "tool": "fetch_url", "source_prefix": EVIL, "reason": "prompt injection"})
        assert proposed.status_code == 201, proposed.text
        item = proposed.json()
        assert item["kind"] == "provenance" and item["proposed_by"] == "alertmanager"
        assert item["monitor"] == "alertmanager" and len(item["claims"]) == 3
        for verb in ("approve", "reject"):
            refused = await http.post(f"/api/reviews/{item['id']}/{verb}", headers=bearer(WATCHER),
                                      json={"note": "looks right to me"})
            assert refused.status_code == 403 and "proposer's token" in refused.json()["detail"]
        keys = await http.post("/api/keys", headers=bearer(WATCHER),
                               json={"public_key": "0" * 64, "signature": "0" * 128})
        assert keys.status_code == 403
        assert (await rippl.review(item["id"])).status == "pending"
        single = await http.post("/api/reviews", headers=bearer(WATCHER), json={
            "claim": incident.good_claim, "reason": "the guide is outdated"})
        assert single.status_code == 201 and single.json()["monitor"] == "alertmanager"
        approved = await http.post(f"/api/reviews/{item['id']}/approve", headers=bearer(ALICE),
                                   json={"note": "confirmed"})
        assert approved.status_code == 200, approved.text
        assert approved.json()["body"]["monitor"] == "alertmanager"
        nothing = await http.post("/api/reviews/where", headers=bearer(WATCHER),
                                  json={"tool": "ghost", "reason": "x"})
        assert nothing.status_code == 404 and nothing.json()["error"] == "NoMatchError"
        await rippl.reject(single.json()["id"], by="alice")
        # undo for the other tests: reinstate the sources
        for source in item["claims"]:
            await rippl.reinstate(source, reason="test reset", by="alice")


async def test_proposals_need_a_token(rippl: AsyncRippl) -> None:
    async with client(rippl, proposers=PROPOSERS) as http:
        before = await rippl.reviews(None)
        anonymous = await http.post("/api/reviews/where", json={"tool": "fetch_url", "reason": "x"})
        assert anonymous.status_code == 401
        wrong = await http.post("/api/reviews/where", headers=bearer("not-a-token-0123456789"),
                                json={"tool": "fetch_url", "reason": "x"})
        assert wrong.status_code == 401
        assert await rippl.reviews(None) == before


async def test_alertmanager_firing_resent_resolved(rippl: AsyncRippl, incident: Incident,
                                                  tmp_path: Path) -> None:
    async with client(rippl, proposers=PROPOSERS, alert_rules=rules(tmp_path)) as http:
        first = await http.post("/api/alertmanager", headers=bearer(WATCHER), json=FIRING)
        assert first.status_code == 200, first.text
        [outcome] = first.json()["outcomes"]
        assert outcome["result"] == "proposed" and outcome["rule"] == "poisoned-domain"
        item = await rippl.review(outcome["review"])
        assert item.kind == "provenance" and item.status == "pending"
        assert item.reason == "evil.example serves a prompt injection"
        assert item.monitor == "alertmanager" and "c6b2a9f2d1e0a7b3" in (item.evidence or "")
        assert sorted(item.matched) == sorted(incident.evil_claims.values())
        again = await http.post("/api/alertmanager", headers=bearer(WATCHER), json=FIRING)
        assert again.json()["outcomes"][0] == {**outcome, "result": "pending",
                                               "detail": "already proposed; the review is still pending"}
        resolved = copy.deepcopy(FIRING)
        resolved["status"] = resolved["alerts"][0]["status"] = "resolved"
        resolved["alerts"][0]["endsAt"] = "2026-12-01T11:00:00Z"
        done = await http.post("/api/alertmanager", headers=bearer(WATCHER), json=resolved)
        assert done.json()["outcomes"][0]["result"] == "resolved"
        assert [r.id for r in await rippl.reviews("pending")] == [item.id]  # still pending
        other = copy.deepcopy(FIRING)
        other["alerts"] = [{**FIRING["alerts"][0], "fingerprint": "a1", "labels": {"alertname": "Other"}},
                           {**FIRING["alerts"][0], "fingerprint": "a2",
                            "labels": {"alertname": "GhostTool"}}]
        results = (await http.post("/api/alertmanager", headers=bearer(WATCHER), json=other)).json()
        assert [o["result"] for o in results["outcomes"]] == ["unmatched", "nothing_matched"]
        assert len(await rippl.reviews("pending")) == 1


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: p.update(version="3"), "version"),
    (lambda p: p.pop("alerts"), "alerts"),
    (lambda p: p.update(alerts=[]), "alerts"),
    (lambda p: p["alerts"][0].update(status="exploded"), "status"),
    (lambda p: p["alerts"][0].pop("fingerprint"), "fingerprint"),
    (lambda p: p["alerts"][0].update(labels="domain=evil.example"), "labels"),
])
async def test_malformed_payloads_are_refused_and_change_nothing(
        rippl: AsyncRippl, tmp_path: Path, change: Any, message: str) -> None:
    payload = copy.deepcopy(FIRING)
    change(payload)
    async with client(rippl, proposers=PROPOSERS, alert_rules=rules(tmp_path)) as http:
        before = await rippl.reviews(None)
        refused = await http.post("/api/alertmanager", headers=bearer(WATCHER), json=payload)
        assert refused.status_code == 422, refused.text
        detail = refused.json()["detail"]
        assert "not an Alertmanager webhook payload (version 4)" in detail and message in detail
        assert "nothing was proposed" in detail
        garbage = await http.post("/api/alertmanager", headers={**bearer(WATCHER),
                                  "content-type": "application/json"}, content=b"{not json")
        assert garbage.status_code == 422 and "not JSON" in garbage.json()["detail"]
        anonymous = await http.post("/api/alertmanager", json=FIRING)
        assert anonymous.status_code == 401
        assert await rippl.reviews(None) == before


async def test_no_rules_no_webhook(rippl: AsyncRippl) -> None:
    async with client(rippl, proposers=PROPOSERS) as http:
        missing = await http.post("/api/alertmanager", headers=bearer(WATCHER), json=FIRING)
        assert missing.status_code == 404 and "--alert-rules" in missing.json()["detail"]


async def test_rules_and_proposers_files_are_checked(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - name: x\n    match: {a: b}\n    query: {tool: t, colour: red}\n")
    with pytest.raises(AlertRulesError, match="unknown query field colour"):
        load_rules(bad)
    bad.write_text("rules: [\n")
    with pytest.raises(AlertRulesError, match="is not YAML"):
        load_rules(bad)
    with pytest.raises(AlertRulesError, match="cannot read"):
        load_rules(tmp_path / "missing.yaml")
    reviewers = parse_reviewers([f"alice: {ALICE}"], where="test")
    with pytest.raises(AuthConfigError, match="both a reviewer and a proposer"):
        load_proposers(None, f"alice: {WATCHER}", reviewers)
    with pytest.raises(AuthConfigError, match="both a reviewer and a proposer"):
        load_proposers(None, f"bot: {ALICE}", reviewers)
