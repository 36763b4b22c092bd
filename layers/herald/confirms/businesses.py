"""The business handler registry: a business is one implementation of `BusinessHandler`; routes, the state
machine and the IM payload do not change. Businesses built into Herald (role invitations) are handlers in
this process; every other one is an owner service registered at run time (`herald.owners`), reached by a
signed callback behind the same port."""

from __future__ import annotations

import re
from typing import Protocol

from herald.confirms.models import Action, Confirm, OwnerFact
from herald.errors import ConfigurationError, UpstreamError

# A refusal's reason reaches the client as `data.reason`: a word it may branch on, never free text.
REASON = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
OWNER_REFUSED = "owner_refused"


class BusinessRefused(Exception):
    """The owner will never carry out this action (a permanent business failure): the confirm fails with
    `reason` (a named reason, or `owner_refused`); `detail` is for logs only."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason = reason if REASON.fullmatch(reason) else OWNER_REFUSED
        self.detail = detail


class BusinessHandler(Protocol):
    business_type: str

    def act(self, confirm: Confirm, action: Action, reason: str) -> OwnerFact:
        """Carry out the receiver's action at the owner; idempotent per confirm and command id. Raises
        UpstreamError while the owner is unavailable, BusinessRefused when it never will."""
        ...

    def fact(self, confirm: Confirm) -> OwnerFact:
        """The owner's current truth, for repairs."""
        ...

    def expire(self, confirm: Confirm) -> OwnerFact:
        """Ask the owner to expire the undecided thing; returns its truth afterwards."""
        ...


class OwnerDirectory(Protocol):
    def handler(self, app_code: str, business_type: str) -> BusinessHandler | None:
        """The registered owner service of a tenant's business type (None: not registered)."""
        ...


class BusinessRegistry:
    def __init__(self, handlers: list[BusinessHandler] | None = None, owners: OwnerDirectory | None = None) -> None:
        self._handlers: dict[str, BusinessHandler] = {}
        self._owners = owners
        for handler in handlers or []:
            self.register(handler)

    def register(self, handler: BusinessHandler) -> None:
        if handler.business_type in self._handlers:
            raise ConfigurationError(f"business type {handler.business_type} registered twice")
        self._handlers[handler.business_type] = handler

    @property
    def built_in(self) -> frozenset[str]:
        """Business types this process serves itself: no owner service may register them."""
        return frozenset(self._handlers)

    def handler(self, app_code: str, business_type: str) -> BusinessHandler:
        built_in = self._handlers.get(business_type)
        if built_in is not None:
            return built_in
        registered = self._owners.handler(app_code, business_type) if self._owners is not None else None
        if registered is None:
            raise UpstreamError(f"business type {business_type} has no owner service")
        return registered
