"""The review console: a web app for the human gate, with the live cascade.

`rippl serve` runs it on 127.0.0.1; `create_app(rippl)` gives the ASGI app to mount in another
(`parent.mount("/console", create_app(rippl, reviewers=...))`). It needs FastAPI and uvicorn:
`pip install 'rippl-core[console]'`. Importing this package does not; they are imported when an
app is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rippl_core.errors import RipplError

if TYPE_CHECKING:
    from fastapi import FastAPI

    from rippl_core.client import AsyncRippl

INSTALL_HINT = "pip install 'rippl-core[console]'"
_NEEDS = ("fastapi", "starlette", "uvicorn", "pydantic_core", "jwt", "httpx")


class ConsoleUnavailableError(RipplError, ImportError):
    """FastAPI, uvicorn, PyJWT or httpx (the console extra) is not installed."""


def _module(name: str) -> Any:
    try:
        if name == "app":
            from rippl_core.console import app

            return app
        from rippl_core.console import server

        return server
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] in _NEEDS:
            raise ConsoleUnavailableError(
                f"the review console needs FastAPI, uvicorn, PyJWT and httpx, which are not "
                f"installed ({exc}). "
                f"Install them with: {INSTALL_HINT}") from exc
        raise


def create_app(rippl: AsyncRippl, **options: Any) -> FastAPI:
    """The console's ASGI app over an open `AsyncRippl` (see `rippl_core.console.app.create_app`
    for the options: reviewers, read_open, allowed_hosts)."""
    app: FastAPI = _module("app").create_app(rippl, **options)
    return app


def serve(**options: Any) -> None:
    """Open the graph and serve the console until stopped (see `rippl_core.console.server`)."""
    _module("server").serve(**options)


__all__ = ["INSTALL_HINT", "ConsoleUnavailableError", "create_app", "serve"]
