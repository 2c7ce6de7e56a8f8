"""The console's JSON API, in process (httpx ASGI transport) on a real FalkorDB server: every
endpoint, and every refusal (Host, Origin, content type, authentication, CSRF, bad input,
decided reviews, separation of duties, an unreachable graph)."""

from __future__ import annotations

import json

import pytest
from helpers_console import ALICE, BOB, add_beliefs, client, sign_in

from rippl_core import AsyncRippl, ToolCall
from rippl_core.capture import ids
from rippl_core.console.auth import Reviewers, parse_reviewers
from rippl_core.review.receipts import verify_export
from rippl_core.testing import FalkorDBServer, start_falkordb_server

pytestmark = pytest.mark.asyncio(loop_scope="session")


# -- reads -------------------------------------------------------------------------------------
async def test_info_stats_graph_and_the_ui(rippl: AsyncRippl) -> None:
    async with client(rippl) as http:
        info = (await http.get("/api/info")).json()
        assert info == {"graph": rippl.graph, "distinct_approver": False, "read_open": True,
                        "reviewers": True, "sign_in": "token", "graph_limit": 2500}
        stats = (await http.get("/api/stats")).json()
        assert sum(stats["nodes"].values()) == 71
        graph = (await http.get("/api/graph")).json()
        assert len(graph["nodes"]) == 71 and graph["total"] == 71 and not graph["truncated"]
        assert len(graph["edges"]) == stats["edges"]
        assert {"source": "CLM-001", "target": "DEC-001", "group": 0} in graph["edges"]
        small = (await http.get("/api/graph", params={"limit": 10})).json()
        assert len(small["nodes"]) == 10 and small["truncated"] and small["total"] == 71
        assert all(e["source"] in {n["id"] for n in small["nodes"]} for e in small["edges"])
        page = await http.get("/")
        assert page.status_code == 200 and "Rippl review console" in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"
        script = await http.get("/js/explorer.js")
        assert script.status_code == 200 and "javascript" in script.headers["content-type"]
        spec = (await http.get("/api/openapi.json")).json()
        assert "/api/reviews/{review_id}/approve" in spec["paths"] and "/api/events" in spec["paths"]
        assert (await http.get("/docs")).status_code == 404  # no CDN-hosted docs page


async def test_focus_on_a_neighbourhood(rippl: AsyncRippl) -> None:
    async with client(rippl) as http:
        near = (await http.get("/api/graph/focus", params={"node": "DEC-001", "depth": 1})).json()
        ids = {n["id"] for n in near["nodes"]}
        assert near["focus"] == "DEC-001" and "DEC-001" in ids and "CLM-001" in ids
        assert "SRC-001" not in ids  # two steps up
        deep = (await http.get("/api/graph/focus", params={"node": "DEC-001", "depth": 10})).json()
        assert {"SRC-001", "ACT-010"} <= {n["id"] for n in deep["nodes"]}
        capped = (await http.get("/api/graph/focus", params={"node": "CLM-001", "depth": 10,
                                                             "limit": 3})).json()
        assert len(capped["nodes"]) == 3 and capped["truncated"] and capped["nodes"][0]["id"] == "CLM-001"
        assert (await http.get("/api/graph/focus", params={"node": "NOPE"})).status_code == 404
        assert (await http.get("/api/graph/focus", params={"node": "X", "depth": 0})).status_code == 422


async def test_node_reads(rippl: AsyncRippl) -> None:
    async with client(rippl) as http:
        node = (await http.get("/api/nodes/DEC-012")).json()
        assert node["kind"] == "Decision" and len(node["justifications"]) == 2
        down = (await http.get("/api/nodes/CLM-001/blast-radius")).json()
        assert len(down) == 19 and down[0]["trail"][0] == "CLM-001"
        page = await http.get("/api/nodes/CLM-001/blast-radius", params={"limit": 5})
        assert page.json() == down[:5] and page.headers["X-Total-Count"] == "19"  # nearest first
        whole = await http.get("/api/nodes/ACT-001/premises", params={"limit": 500})
        assert len(whole.json()) == int(whole.headers["X-Total-Count"]) > 0
        assert (await http.get("/api/nodes/CLM-001/blast-radius", params={"limit": 0})).status_code == 422
        one = (await http.get("/api/nodes/CLM-001/blast-radius", params={"max_depth": 1})).json()
        assert all(r["depth"] == 1 for r in one)
        up = (await http.get("/api/nodes/ACT-001/premises")).json()
        assert "CLM-001" in {r["id"] for r in up}
        why = (await http.get("/api/nodes/DEC-012/explain")).json()
        assert why["status"] == "Holding" and why["holding"] == [0, 1]
        history = (await http.get("/api/nodes/CLM-001/history")).json()
        assert history[0]["before"] is None and history[0]["after"] == "IN"
        verdict = (await http.get("/api/nodes/ACT-001/check")).json()
        assert verdict["allowed"] is True
        what = (await http.get("/api/what-if-retracted", params={"claim": ["CLM-001"]})).json()
        assert "ACT-001" in what["blocked_actions"]
        for path in ("/api/nodes/NOPE", "/api/nodes/NOPE/explain", "/api/nodes/NOPE/history",
                     "/api/nodes/NOPE/blast-radius", "/api/nodes/NOPE/premises"):
            response = await http.get(path)
            assert response.status_code == 404, path
            assert response.json()["error"] == "NotFoundError"
        assert (await http.get("/api/nodes/ACT-001/blast-radius", params={"max_depth": 0})).status_code == 422
        assert (await http.get("/api/what-if-retracted")).status_code == 422
        bad = await http.get("/api/what-if-retracted", params={"claim": ["DEC-001"]})
        assert bad.status_code == 422 and "claim ids must be" in bad.json()["detail"]


async def test_ids_with_slashes_and_odd_characters_reach_their_node(rippl: AsyncRippl) -> None:
    await rippl.add_claim("team/claim #1?", "an id with a slash, a hash and a question mark")
    async with client(rippl) as http:
        response = await http.get("/api/nodes/team%2Fclaim%20%231%3F/explain")
        assert response.status_code == 200 and response.json()["id"] == "team/claim #1?"


# -- the review gate ---------------------------------------------------------------------------
async def test_propose_preview_approve_with_the_signed_in_reviewer(rippl: AsyncRippl) -> None:
    async with client(rippl) as http:
        csrf = await sign_in(http, ALICE)
        assert (await http.get("/api/session")).json() == {
            "reviewer": "alice", "csrf": csrf, "public_key": None, "who": "alice",
            "role": "reviewer", "name": None}
        proposed = await http.post("/api/reviews", headers={"x-csrf-token": csrf},
                                   json={"claim": "CLM-001", "reason": "disk errors", "evidence": "grafana"})
        assert proposed.status_code == 201, proposed.text
        item = proposed.json()
        assert item["proposed_by"] == "alice" and item["status"] == "pending"
        queue = (await http.get("/api/reviews")).json()
        assert [q["id"] for q in queue] == [item["id"]]
        assert (await http.get(f"/api/reviews/{item['id']}")).json()["claim"] == "CLM-001"
        preview = (await http.get(f"/api/reviews/{item['id']}/preview")).json()
        out = {n["id"] for n in preview["out"]}
        assert out == {"CLM-001", *item["at_risk"]} and preview["out_count"] == 18
        assert preview["out"][0]["id"] == "CLM-001"
        survivors = {s["node"]["id"]: s["through"] for s in preview["survives"]}
        assert survivors == {"DEC-012": ["CLM-006", "CLM-016"], "ACT-016": ["DEC-012"]}
        assert preview["downstream"] == 19
        approved = await http.post(f"/api/reviews/{item['id']}/approve",
                                   headers={"x-csrf-token": csrf}, json={"note": "confirmed on the host"})
        assert approved.status_code == 200, approved.text
        receipt = approved.json()
        assert receipt["actor"] == "alice" and receipt["body"]["note"] == "confirmed on the host"
        assert (await http.get("/api/nodes/ACT-001")).json()["state"] == "OUT"
        assert (await http.get("/api/reviews")).json() == []
        approved = (await http.get("/api/reviews", params={"status": "approved"})).json()
        approved_ids = [r["id"] for r in approved]
        assert approved_ids == [item["id"]]
        assert len((await http.get("/api/reviews", params={"status": "all"})).json()) == 1
        assert (await http.get("/api/reviews", params={"status": "maybe"})).status_code == 422
        again = await http.post(f"/api/reviews/{item['id']}/reject", headers={"x-csrf-token": csrf},
                                json={"note": "too late"})
        assert again.status_code == 409 and "decided once" in again.json()["detail"]
        decided = await http.get(f"/api/reviews/{item['id']}/preview")
        assert decided.status_code == 409
        assert (await http.get("/api/reviews/REV-nope")).status_code == 404


async def test_reject_by_bearer_token_and_receipts(rippl: AsyncRippl) -> None:
    item = await rippl.propose_retraction("CLM-002", reason="stale", by="monitor")
    async with client(rippl) as http:
        rejected = await http.post(f"/api/reviews/{item.id}/reject",
                                   headers={"authorization": f"Bearer {BOB}"}, json={"note": "not stale"})
        assert rejected.status_code == 200, rejected.text
        assert rejected.json()["actor"] == "bob" and rejected.json()["kind"] == "retraction_rejected"
        chain = (await http.get("/api/receipts")).json()
        assert [r["actor"] for r in chain][-1] == "bob"
        check = (await http.get("/api/receipts/verify")).json()
        head = (await http.get("/api/log/head")).json()
        assert check == {"ok": True, "count": len(chain), "problems": [], "root": head["root"],
                         "anchored": None}
        assert head["size"] == len(chain) and head["log"] == rippl.graph
        export = await http.get("/api/receipts/export")
        assert export.headers["content-type"].startswith("application/x-ndjson")
        assert "attachment" in export.headers["content-disposition"]
        records = [json.loads(line) for line in export.text.splitlines()]
        assert records[0]["head"]["count"] == len(chain)  # the head makes a cut tail detectable
        assert len(records) == len(chain) + 1 and verify_export(records).ok


async def test_a_name_in_the_request_never_becomes_the_actor(rippl: AsyncRippl) -> None:
    item = await rippl.propose_retraction("CLM-003", reason="x", by="monitor")
    async with client(rippl) as http:
        csrf = await sign_in(http, BOB)
        forged = await http.post(f"/api/reviews/{item.id}/approve", headers={"x-csrf-token": csrf},
                                 json={"note": "ok", "by": "mallory"})
        assert forged.status_code == 422  # unknown fields are refused, not ignored
        proposal = await http.post("/api/reviews", headers={"x-csrf-token": csrf},
                                   json={"claim": "CLM-004", "reason": "x", "proposed_by": "mallory"})
        assert proposal.status_code == 422
        assert (await rippl.review(item.id)).status == "pending"


async def test_separation_of_duties(rippl: AsyncRippl, falkordb_server: FalkorDBServer) -> None:
    strict = await AsyncRippl.open(url=falkordb_server.url, graph=rippl.graph, distinct_approver=True)
    try:
        async with client(strict) as http:
            assert (await http.get("/api/info")).json()["distinct_approver"] is True
            csrf = await sign_in(http, ALICE)
            item = (await http.post("/api/reviews", headers={"x-csrf-token": csrf},
                                    json={"claim": "CLM-005", "reason": "wrong"})).json()
            own = await http.post(f"/api/reviews/{item['id']}/approve",
                                  headers={"x-csrf-token": csrf}, json={"note": "mine"})
            assert own.status_code == 409 and "separation of duties" in own.json()["detail"]
            other = await http.post(f"/api/reviews/{item['id']}/approve",
                                    headers={"authorization": f"Bearer {BOB}"}, json={"note": "checked"})
            assert other.status_code == 200 and other.json()["actor"] == "bob"
    finally:
        await strict.close()


# -- refusals ----------------------------------------------------------------------------------
async def test_changes_need_an_authenticated_reviewer_and_csrf(rippl: AsyncRippl) -> None:
    item = await rippl.propose_retraction("CLM-006", reason="x", by="monitor")
    approve = f"/api/reviews/{item.id}/approve"
    async with client(rippl) as http:
        anonymous = await http.post(approve, json={"note": "n"})
        assert anonymous.status_code == 401 and "sign in" in anonymous.json()["detail"]
        wrong = await http.post(approve, headers={"authorization": "Bearer not-a-reviewer-token"},
                                json={"note": "n"})
        assert wrong.status_code == 401
        basic = await http.post(approve, headers={"authorization": f"Basic {ALICE}"}, json={"note": "n"})
        assert basic.status_code == 401
        assert (await http.post("/api/session", json={"token": "guess-guess-guess"})).status_code == 401
        assert (await http.post("/api/session", json={"token": ""})).status_code == 422
        csrf = await sign_in(http, ALICE)
        no_csrf = await http.post(approve, json={"note": "n"})
        assert no_csrf.status_code == 403 and "CSRF" in no_csrf.json()["detail"]
        bad_csrf = await http.post(approve, headers={"x-csrf-token": csrf + "x"}, json={"note": "n"})
        assert bad_csrf.status_code == 403
        no_note = await http.post(approve, headers={"x-csrf-token": csrf}, json={"note": "  "})
        assert no_note.status_code == 422 and "say why" in no_note.json()["detail"]
        missing = await http.post(approve, headers={"x-csrf-token": csrf}, json={})
        assert missing.status_code == 422
        bad_claim = await http.post("/api/reviews", headers={"x-csrf-token": csrf},
                                    json={"claim": "DEC-001", "reason": "x"})
        assert bad_claim.status_code == 422 and "only sources and claims" in bad_claim.json()["detail"]
        signed_out = await http.request("DELETE", "/api/session", headers={"x-csrf-token": csrf}, json={})
        assert signed_out.status_code == 200 and signed_out.json()["reviewer"] is None
        after = await http.post(approve, headers={"x-csrf-token": csrf}, json={"note": "n"})
        assert after.status_code == 401
        assert (await http.request("DELETE", "/api/session", json={})).status_code == 401
    assert (await rippl.review(item.id)).status == "pending"  # nothing above decided it


async def test_without_reviewers_the_console_is_read_only(rippl: AsyncRippl) -> None:
    item = await rippl.propose_retraction("CLM-008", reason="x", by="monitor")
    async with client(rippl, reviewers=Reviewers()) as http:
        assert (await http.get("/api/info")).json()["reviewers"] is False
        refused = await http.post(f"/api/reviews/{item.id}/approve",
                                  headers={"authorization": f"Bearer {ALICE}"}, json={"note": "n"})
        assert refused.status_code == 403 and "no reviewers" in refused.json()["detail"]
        assert (await http.post("/api/session", json={"token": ALICE})).status_code == 401


async def test_host_origin_and_content_type_checks(rippl: AsyncRippl) -> None:
    async with client(rippl) as http:
        rebinding = await http.get("/api/stats", headers={"host": "evil.example:8765"})
        assert rebinding.status_code == 421
        assert "content-security-policy" in rebinding.headers
        assert (await http.get("/", headers={"host": "evil.example"})).status_code == 421
        cross = await http.get("/api/stats", headers={"origin": "http://evil.example"})
        assert cross.status_code == 403
        same = await http.get("/api/stats", headers={"origin": "http://127.0.0.1:8765"})
        assert same.status_code == 200
        form = await http.post("/api/session", content=f'{{"token": "{ALICE}"}}',
                               headers={"content-type": "text/plain"})
        assert form.status_code == 415
        cross_login = await http.post("/api/session", json={"token": ALICE},
                                      headers={"origin": "http://evil.example"})
        assert cross_login.status_code == 403
        assert "set-cookie" not in cross_login.headers
        login = await http.post("/api/session", json={"token": ALICE})
        cookie = login.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie


async def test_closed_reads_need_a_reviewer(rippl: AsyncRippl) -> None:
    async with client(rippl, read_open=False, allowed_hosts=frozenset({"127.0.0.1"})) as http:
        assert (await http.get("/api/stats")).status_code == 401
        assert (await http.get("/api/events")).status_code == 401
        assert (await http.get("/api/stats", headers={"authorization": f"Bearer {ALICE}"})).status_code == 200
        await sign_in(http, BOB)
        assert (await http.get("/api/stats")).status_code == 200
        assert (await http.get("/")).status_code == 200  # the page itself (to sign in) is open


async def test_an_unreachable_graph_is_a_503_with_the_reason() -> None:
    server = start_falkordb_server()
    handle = await AsyncRippl.open(url=server.url, graph="gone")
    try:
        server.stop()
        async with client(handle) as http:
            response = await http.get("/api/stats")
            assert response.status_code == 503 and "cannot reach" in response.json()["detail"]
            refused = await http.post("/api/reviews/REV-1/approve",
                                      headers={"authorization": f"Bearer {ALICE}"}, json={"note": "n"})
            assert refused.status_code == 503
    finally:
        await handle.close()
        server.stop()


# -- beliefs -----------------------------------------------------------------------------------
async def test_belief_reads(rippl: AsyncRippl) -> None:
    await add_beliefs(rippl)
    topic = {"agent": "sre-agent", "topic": "outage/root-cause"}
    async with client(rippl) as http:
        assert (await http.get("/api/agents")).json() == ["sre-agent"]
        assert (await http.get("/api/topics", params={"agent": "sre-agent"})).json() == ["outage/root-cause"]
        timeline = (await http.get("/api/beliefs/timeline", params=topic)).json()
        assert [b["claim"] for b in timeline] == ["CLM-B1", "CLM-B2"]
        then = (await http.get("/api/beliefs/ask", params={**topic, "as_of": "2026-10-05T00:00:00Z"})).json()
        assert then["claim"] == "CLM-B1"
        before = (await http.get("/api/beliefs/ask", params={**topic, "as_of": "2026-10-01T00:00:00Z"}))
        assert before.status_code == 200 and before.json() is None
        at = "2026-10-07T09:00:00Z"
        why = (await http.get("/api/beliefs/why-changed", params={**topic, "at": at})).json()
        assert (why["before"]["claim"], why["after"]["claim"]) == ("CLM-B1", "CLM-B2")
        assert why["new_evidence"] == ["SRC-B2"]
        what = (await http.get("/api/beliefs/what-if", params={**topic, "without": ["SRC-B2"]})).json()
        assert what["actual"]["claim"] == "CLM-B2" and what["counterfactual"]["claim"] == "CLM-B1"
        assert (await http.get("/api/beliefs/what-if", params=topic)).status_code == 422
        naive = await http.get("/api/beliefs/ask", params={**topic, "as_of": "2026-10-05T00:00:00"})
        assert naive.status_code == 422
        nothing = await http.get("/api/beliefs/why-changed", params={"agent": "nobody", "topic": "t",
                                                                       "at": "2026-10-07T09:00:00Z"})
        assert nothing.status_code == 404


async def test_compensations_lists_what_ran_on_a_retracted_premise(rippl: AsyncRippl) -> None:
    run = rippl.run("console-run")
    call = ToolCall(name="announce_window", args={"shard": "09"}, id="c1")
    [allowed] = await run.decide("t1", [call])
    await run.executed(call, "announced")
    await rippl.retract("CLM-001", reason="disk errors", by="monitor")  # unrelated: nothing owed
    async with client(rippl) as http:
        assert (await http.get("/api/compensations")).json() == []
        await rippl.retract(ids.run_claim("console-run"), reason="the run was compromised", by="sec")
        owed = (await http.get("/api/compensations")).json()
        assert [c["action"] for c in owed] == [allowed.target]
        assert owed[0]["blockers"][0]["premise"] == ids.run_claim("console-run")
        assert (await http.get("/api/compensations", params={"as_of": "2000-01-01T00:00:00Z"})).json() == []


async def test_the_log_and_reviewer_keys_over_the_api(rippl: AsyncRippl) -> None:
    """Tree head, proofs and consistency are reads; a reviewer registers their own key (signed with
    it) and, when the reviewers file names it, decides only with it."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from rippl_core.review import merkle
    from rippl_core.review.keys import canonical_statement, public_hex

    key, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    reviewers = parse_reviewers([f"alice: {ALICE} ed25519:{public_hex(key)}", f"bob: {BOB}"],
                                where="test")
    first = await rippl.propose_retraction("CLM-002", reason="stale", by="monitor")
    await rippl.reject(first.id, by="carol", note="no")
    item = await rippl.propose_retraction("CLM-001", reason="disk", by="monitor")
    async with client(rippl, reviewers=reviewers) as http:
        head = (await http.get("/api/log/head")).json()
        proof = (await http.get("/api/receipts/RCP-00000001/proof")).json()
        assert merkle.verify_inclusion(proof["index"], proof["tree_size"],
                                       bytes.fromhex(proof["leaf_hash"]), [], bytes.fromhex(head["root"]))
        assert (await http.get("/api/receipts/RCP-00000009/proof")).status_code == 404
        consistency = (await http.get("/api/log/consistency", params={"old_size": 1})).json()
        assert consistency["new_root"] == head["root"] and consistency["proof"] == []
        csrf = await sign_in(http)
        assert (await http.get("/api/session")).json()["public_key"] == public_hex(key)
        headers = {"x-csrf-token": csrf}
        url = f"/api/reviews/{item.id}/approve"
        unsigned = await http.post(url, headers=headers, json={"note": "ok"})
        assert unsigned.status_code == 422 and "sign the decision" in unsigned.json()["detail"]
        statement = {"kind": "retraction_approved", "reviewer": "alice", "review": item.id,
                     "claim": "CLM-001", "proposed_by": "monitor", "note": "ok"}
        signature = key.sign(canonical_statement(statement)).hex()
        early = await http.post(url, headers=headers, json={"note": "ok", "signature": signature})
        assert early.status_code == 409 and "not registered" in early.json()["detail"]
        registration = {"kind": "key_registered", "reviewer": "alice", "public_key": public_hex(other)}
        wrong = await http.post("/api/keys", headers=headers, json={
            "public_key": public_hex(other),
            "signature": other.sign(canonical_statement(registration)).hex()})
        assert wrong.status_code == 403
        registration["public_key"] = public_hex(key)
        bad = await http.post("/api/keys", headers=headers, json={
            "public_key": public_hex(key), "signature": other.sign(canonical_statement(registration)).hex()})
        assert bad.status_code == 422 and "does not verify" in bad.json()["detail"]
        registered = await http.post("/api/keys", headers=headers, json={
            "public_key": public_hex(key), "signature": key.sign(canonical_statement(registration)).hex()})
        assert registered.status_code == 201, registered.text
        assert (await http.get("/api/keys")).json() == {"alice": public_hex(key)}
        forged = other.sign(canonical_statement(statement)).hex()
        refused = await http.post(url, headers=headers, json={"note": "ok", "signature": forged})
        assert refused.status_code == 422 and (await rippl.review(item.id)).status == "pending"
        approved = await http.post(url, headers=headers, json={"note": "ok", "signature": signature})
        assert approved.status_code == 200, approved.text
        assert approved.json()["body"]["statement"] == statement
        revoked = await http.post("/api/keys/revoke", headers=headers, json={"reason": "lost it"})
        assert revoked.status_code == 200 and revoked.json()["kind"] == "key_revoked"
        assert (await http.get("/api/keys")).json() == {}
        check = (await http.get("/api/receipts/verify")).json()
        assert check["ok"] is True, check
