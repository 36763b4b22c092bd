"""The business handler registry: a business is one implementation of `BusinessHandler`; routes, the state
machine and the IM payload do not change. Businesses built into Herald (role invitations) are handlers in
this process; every other one is an owner service registered at run time (`herald.confirms.owners`), reached by a
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


class OwnerSilent(UpstreamError):
    """The owner gave no answer at all (no connection, no whole answer within the call's deadline): the kind
    of outage that makes the janitor rest that owner for a while (`OwnerBackoff`)."""


class OwnerResting(UpstreamError):
    """The owner is not asked now: it gave no answer lately and its back-off has not ended."""


class OwnerBackoff:
    """A per-owner circuit breaker: an owner that gave no answer is not asked again until its back-off ends
    (doubling from `base_ms` to `max_ms`), so one silent owner cannot spend a pass (or a reader's batch) that
    other owners' confirms are waiting on. Its confirms stay due and are settled once it answers again."""

    def __init__(self, base_ms: int = 60_000, max_ms: int = 15 * 60_000) -> None:
        self._base_ms = base_ms
        self._max_ms = max_ms
        self._resting: dict[tuple[str, str], tuple[int, int]] = {}  # owner -> (until_ms, failures in a row)

    def resting(self, owner: tuple[str, str], now_ms: int) -> bool:
        until = self._resting.get(owner)
        return until is not None and now_ms < until[0]

    def silent(self, owner: tuple[str, str], now_ms: int) -> None:
        failures = self._resting.get(owner, (0, 0))[1] + 1
        self._resting[owner] = (now_ms + min(self._max_ms, self._base_ms * 2 ** (failures - 1)), failures)

    def answered(self, owner: tuple[str, str]) -> None:
        self._resting.pop(owner, None)


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
