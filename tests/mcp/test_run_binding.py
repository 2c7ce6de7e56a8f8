"""A run token is signed for the agent whose run it is (with OAuth): another agent's bearer token
cannot use it. Without OAuth (stdio, or HTTP without an issuer) tokens are what they were."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest

from rippl_core.errors import InvalidInputError
from rippl_core.mcp.session import NOT_SIGNED, Sessions

KEY = b"k" * 32


def sessions() -> Sessions:
    none: Any = None  # the token functions never touch the graph
    return Sessions(none, key=KEY)


def test_a_token_verifies_for_its_agent_only() -> None:
    runs = sessions()
    token = runs.token("mcp:abc", "agent-a")
    assert runs.verified(token, "agent-a") == "mcp:abc"
    with pytest.raises(InvalidInputError, match="not a run token this server issued to agent-b"):
        runs.verified(token, "agent-b")
    with pytest.raises(InvalidInputError) as unbound:
        runs.verified(token)  # nor without OAuth
    assert str(unbound.value) == NOT_SIGNED
    assert runs.token("mcp:abc", "agent-a") != runs.token("mcp:abc", "agent-a2")


def test_without_oauth_a_token_is_as_it_was() -> None:
    runs = sessions()
    token = runs.token("mcp:abc")
    mac = hmac.new(KEY, b"rippl-mcp-run\x00mcp:abc", hashlib.sha256).hexdigest()[:32]
    assert token == f"rt1:{mac}:mcp:abc"
    assert runs.verified(token) == "mcp:abc"
    with pytest.raises(InvalidInputError, match="issued to agent-a"):
        runs.verified(token, "agent-a")  # an unbound token is no agent's
