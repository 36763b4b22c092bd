"""The owner services' parts below the confirm service (herald.confirms.wiring): their registrations' store,
where callbacks may go, the guarded callback transport (the confirm businesses they serve), and the owner
limits. The parts that need the confirm service itself (the registrations' service, the owner confirm API) are
composed in herald.confirms.wiring, so the two wirings import in one direction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from herald.callback_urls import UrlPolicy
from herald.confirms.owners.dynamo import DynamoRegistrationStore
from herald.container import Container, part
from herald.limits.service import RateLimiter
from herald.limits.wiring import owner_limits

if TYPE_CHECKING:
    from herald.confirms.owners.callbacks import RegisteredOwners


@part
def registration_store(c: Container) -> DynamoRegistrationStore:
    return DynamoRegistrationStore(c.settings.owners_table, c.clients.dynamodb)


@part
def url_policy(c: Container) -> UrlPolicy:
    """Where callbacks may go, checked at registration and again at every call."""
    from herald.providers.callback_http import callback_url_policy

    return callback_url_policy(c.settings)


@part
def registered_owners(c: Container) -> RegisteredOwners:
    from herald.confirms.owners.callbacks import RegisteredOwners
    from herald.providers.callback_http import GuardedTransport

    transport = GuardedTransport(url_policy(c), total_s=c.settings.owner_call_total_ms / 1000)
    return RegisteredOwners(registration_store(c), transport, clock=c.clock)


class OwnerAdmission:
    """The owner limits, kept by the shared rate limiter: per business type, and per receiver."""

    def __init__(self, limiter: RateLimiter) -> None:
        self._limiter = limiter

    def check(self, limit: str, subject: str) -> None:
        self._limiter.check(owner_limits()[limit], subject)
