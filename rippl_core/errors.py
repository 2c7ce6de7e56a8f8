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


class NoMatchError(NotFoundError):
    """A provenance query matched no source that could be retracted; nothing was proposed."""


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


class CheckpointIntegrityError(RipplError):
    """A stored checkpoint (of a LangGraph thread, or another framework's saved state) does not
    verify against its chain: it was edited, replaced, replayed or deleted outside Rippl, the
    store was restored from an older copy, or it predates the chain. The read is refused so that
    the agent never resumes from a state nobody wrote."""

    def __init__(self, *, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None,
                 problems: list[str]) -> None:
        self.thread_id, self.checkpoint_ns, self.checkpoint_id = thread_id, checkpoint_ns, checkpoint_id
        self.problems = problems
        where = f"thread {thread_id!r}" + (f", namespace {checkpoint_ns!r}" if checkpoint_ns else "")
        what = (f"checkpoint {checkpoint_id} of {where}" if checkpoint_id
                else f"the newest checkpoint of {where}")
        why = "; ".join(problems)
        message = (f"{what} failed verification, so it is not served: {why}. Do not resume from it: "
                   "find every problem of the thread with verify_checkpoints(handle, thread_id=...), "
                   "resume from an earlier checkpoint that verifies, or restore the store from a "
                   "backup you trust")
        cli = message.replace("verify_checkpoints(handle, thread_id=...)",
                              f"`rippl checkpoints verify --thread {thread_id}`")
        super().__init__(message, cli=cli)
