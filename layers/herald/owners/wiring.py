"""The owner services' parts: their registrations, the guarded callback transport, the owner confirm API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from herald.container import Container, part
from herald.owners.dynamo import DynamoRegistrationStore

if TYPE_CHECKING:
    from herald.owners.callbacks import RegisteredOwners
    from herald.owners.service import OwnerConfirms, Registrations


@part
def registration_store(c: Container) -> DynamoRegistrationStore:
    return DynamoRegistrationStore(c.settings.owners_table, c.clients.dynamodb)


@part
def registered_owners(c: Container) -> RegisteredOwners:
    from herald.owners.callbacks import RegisteredOwners
    from herald.providers.owner_http import GuardedTransport, SocketResolver

    settings = c.settings
    transport = GuardedTransport(
        SocketResolver(),
        https_only=settings.owner_callbacks_https_only,
        allow_private=settings.owner_callbacks_allow_private,
    )
    return RegisteredOwners(registration_store(c), transport, clock=c.clock)


@part
def registrations(c: Container) -> Registrations:
    from herald.confirms.wiring import business_registry
    from herald.owners.service import Registrations, UrlPolicy
    from herald.providers.owner_http import SocketResolver

    settings = c.settings
    urls = UrlPolicy(
        SocketResolver(),
        https_only=settings.owner_callbacks_https_only,
        allow_private=settings.owner_callbacks_allow_private,
    )
    return Registrations(registration_store(c), urls, business_registry(c).built_in, clock=c.clock)


@part
def owner_confirms(c: Container) -> OwnerConfirms:
    from herald.confirms.wiring import confirms
    from herald.owners.service import OwnerConfirms

    return OwnerConfirms(registrations(c), confirms(c), clock=c.clock)
