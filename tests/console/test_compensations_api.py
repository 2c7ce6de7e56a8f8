"""Compensations in the console's API: resolving needs a signed-in reviewer and the CSRF token
(anonymous or CSRF-less requests are refused and change nothing); the receipt names the reviewer
and the chain verifies; an attempt is reported under the signed-in identity."""

from __future__ import annotations

import pytest
import pytest_asyncio
from helpers_console import client, sign_in

from rippl_core import AsyncRippl

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(loop_scope="session")
async def rippl(rippl: AsyncRippl) -> AsyncRippl:
    """The incident graph (conftest) with ACT-001 run and CLM-001 retracted under it."""
    await rippl.mark_executed("ACT-001")
    await rippl.retract("CLM-001", reason="disk errors", by="monitor")
    return rippl


async def test_resolve_is_a_reviewers_act_with_csrf(rippl: AsyncRippl) -> None:
    ruling = {"resolution": "compensated", "note": "rolled back by hand"}
    async with client(rippl) as http:
        [listed] = (await http.get("/api/compensations")).json()
        assert listed["action"] == "ACT-001" and listed["status"] == "open"
        anonymous = await http.post("/api/compensations/ACT-001/resolve", json=ruling)
        assert anonymous.status_code == 401, anonymous.text
        csrf = await sign_in(http)
        no_csrf = await http.post("/api/compensations/ACT-001/resolve", json=ruling)
        assert no_csrf.status_code == 403, no_csrf.text
        wrong = await http.post("/api/compensations/ACT-001/resolve", json=ruling,
                                headers={"X-CSRF-Token": "not-it"})
        assert wrong.status_code == 403
        assert (await rippl.compensations())[0].status == "open"  # nothing changed
        attempt = await http.post("/api/compensations/ACT-001/attempts",
                                  json={"what": "ran the rollback", "output": "ok", "by": "script"},
                                  headers={"X-CSRF-Token": csrf})
        assert attempt.status_code == 201, attempt.text
        assert attempt.json()["by"] == "alice/script"
        bad = await http.post("/api/compensations/ACT-001/resolve",
                              json={"resolution": "done", "note": "x"}, headers={"X-CSRF-Token": csrf})
        assert bad.status_code == 422
        done = await http.post("/api/compensations/ACT-001/resolve",
                               json={**ruling, "attempt": attempt.json()["id"]},
                               headers={"X-CSRF-Token": csrf})
        assert done.status_code == 200, done.text
        receipt = done.json()
        assert receipt["kind"] == "compensation_resolved" and receipt["actor"] == "alice"
        again = await http.post("/api/compensations/ACT-001/resolve", json=ruling,
                                headers={"X-CSRF-Token": csrf})
        assert again.status_code == 409 and "already resolved" in again.json()["detail"]
        assert (await http.get("/api/compensations")).json() == []
        [resolved] = (await http.get("/api/compensations",
                                     params={"include_resolved": "true"})).json()
        assert resolved["status"] == "compensated" and resolved["resolution"]["by"] == "alice"
        check = (await http.get("/api/receipts/verify")).json()
        assert check["ok"], check
        missing = await http.post("/api/compensations/ACT-404/resolve", json=ruling,
                                  headers={"X-CSRF-Token": csrf})
        assert missing.status_code == 404
