"""A command that times out is never silently sent again (it could apply a slow write twice)."""

from __future__ import annotations

from rippl_core import AsyncRippl, Rippl


def _retries(client: object) -> int:
    retry = client.connection_pool.connection_kwargs["retry"]  # type: ignore[attr-defined]
    return int(retry._retries)


async def test_clients_never_resend(rippl: Rippl, arippl: AsyncRippl) -> None:
    assert _retries(rippl.redis) == 0 and _retries(arippl.redis) == 0
    kwargs = rippl.redis.connection_pool.connection_kwargs
    assert kwargs["socket_timeout"] >= 60  # long queries are not cut at redis-py's 5 s default
