"""Typed errors. Every message says what happened and what to do next."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rippl_core.models import Verdict


class RipplError(Exception):
    """Base class of every error Rippl raises.

    The message speaks Python (what to call next); `cli`, when the next step differs on the
    command line, is the same message in the `rippl` command's words."""

    def __init__(self, *args: object, cli: str | None = None) -> None:
        super().__init__(*args)
        self.cli = cli

    def for_cli(self) -> str:
        """The message as the `rippl` command shows it."""
        return self.cli or str(self)


class InvalidInputError(RipplError, ValueError):
    """The caller passed something Rippl cannot accept; nothing was written."""


class NotFoundError(RipplError, LookupError):
    """A referenced node, review or receipt does not exist; nothing was written."""


class ConflictError(RipplError):
    """The write disagrees with what is stored (or lost a race too many times); nothing was written."""


class DatabaseError(RipplError):
    """The graph database answered with an error."""


class UnavailableError(DatabaseError, ConnectionError):
    """The graph database could not be reached."""


class ReplicationError(UnavailableError):
    """A write was applied on the primary, but fewer replicas than required confirmed it in time:
    it is not acknowledged (a failover could lose it), and a retry may find it already applied."""


class ReviewError(RipplError):
    """A review item cannot take this transition (already decided, policy refused...)."""


class PremiseRetractedError(RipplError, PermissionError):
    """A guarded call was denied because a premise under it is retracted or at risk."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        super().__init__(verdict.explain())
