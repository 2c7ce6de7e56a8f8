"""What every request of one console app shares: the graph handle, who may sign in and propose
(reviewer tokens, or an identity provider), the sessions, the live stream and the webhooks. The
app (`app.py`) makes it; the request dependencies (`access.py`) and the routes read it."""

from __future__ import annotations

from dataclasses import dataclass, field

from rippl_core.client import AsyncRippl
from rippl_core.console.auth import Reviewers, Sessions
from rippl_core.console.monitors import AlertRules
from rippl_core.console.notify import Notifier
from rippl_core.console.provider import IdentityProvider
from rippl_core.console.signin import LoginStates
from rippl_core.console.stream import EventHub


@dataclass
class ConsoleState:
    """What every request of one console app shares."""

    rippl: AsyncRippl
    reviewers: Reviewers
    hub: EventHub
    read_open: bool = True
    sessions: Sessions = field(default_factory=Sessions)
    proposers: Reviewers = field(default_factory=Reviewers)  # monitors: propose, never decide
    alert_rules: AlertRules | None = None  # the Alertmanager webhook's rules (None: no webhook)
    notifier: Notifier | None = None
    provider: IdentityProvider | None = None  # people sign in with it (else: reviewer tokens)
    logins: LoginStates = field(default_factory=LoginStates)  # sign-ins at the provider, begun
