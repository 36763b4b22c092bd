"""The business handler registry: a business is one module implementing `BusinessHandler` plus one
registration; routes, the state machine and the IM payload do not change."""

from __future__ import annotations

from typing import Protocol

from herald.confirms.models import Action, Confirm, OwnerFact
from herald.errors import ConfigurationError


class BusinessRefused(Exception):
    """The owner will never carry out this action (a permanent business failure): the confirm fails."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BusinessHandler(Protocol):
    business_type: str

    def act(self, confirm: Confirm, action: Action, reason: str) -> OwnerFact:
        """Carry out the receiver's action at the owner; idempotent per confirm. Raises UpstreamError
        while the owner is unavailable, BusinessRefused when it never will."""
        ...

    def fact(self, confirm: Confirm) -> OwnerFact:
        """The owner's current truth, for repairs."""
        ...

    def expire(self, confirm: Confirm) -> OwnerFact:
        """Ask the owner to expire the undecided thing; returns its truth afterwards."""
        ...


class BusinessRegistry:
    def __init__(self, handlers: list[BusinessHandler] | None = None) -> None:
        self._handlers: dict[str, BusinessHandler] = {}
        for handler in handlers or []:
            self.register(handler)

    def register(self, handler: BusinessHandler) -> None:
        if handler.business_type in self._handlers:
            raise ConfigurationError(f"business type {handler.business_type} registered twice")
        self._handlers[handler.business_type] = handler

    def handler(self, business_type: str) -> BusinessHandler:
        try:
            return self._handlers[business_type]
        except KeyError as exc:
            raise ConfigurationError(f"no handler for business type {business_type}") from exc
