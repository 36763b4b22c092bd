"""Authenticated callers, as the rest of Herald sees them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from herald.errors import InvalidArgument, PermissionDenied
from herald.targets import SERVICE_ORDER

# The one right that lets a service key register business types and ask for confirms (and cancel them). It is
# granted only by name: a broader capability (`/internal/v1/confirms`, `/internal/v1`) reads deliveries but never
# makes its holder an owner service.
OWNER_CAPABILITY = "/internal/v1/confirms/owner"


@dataclass(frozen=True)
class Principal:
    """An app user, from a verified JWT: the only source of a user id on app routes."""

    user_id: str
    app_code: str
    roles: frozenset[str] = field(default_factory=frozenset)
    expires_at_ms: int | None = None  # the token's `exp`: a WebSocket connection lives no longer


@dataclass(frozen=True)
class ServiceCaller:
    """A service that presented a valid key. Everything it may do comes from that one key: route prefixes
    (capabilities), tenants (`app_codes`) and, for external events, targets."""

    service_id: str
    key_id: str
    capabilities: frozenset[str]
    app_codes: frozenset[str] = frozenset()
    allowed_targets: frozenset[str] = frozenset()
    allow_markdown: bool = False
    target_rate: int | None = None  # its events a minute to one target (None: the stack's limit)
    orders_by_target: bool = False  # its events run in one lane per target
    refused_tenants: Mapping[str, PermissionDenied] = field(default_factory=dict)  # disabled or not registered

    @property
    def delivery_tenant(self) -> str:
        """The tenant its external events are delivered for, decided when each is accepted: the key's one
        app_code ("" when it holds several: the stack's apps deliver them)."""
        return next(iter(self.app_codes)) if len(self.app_codes) == 1 else ""

    def tenant(self, requested: str | None) -> str:
        """The tenant a request acts for: the one named, if the key holds it (403 otherwise, before
        anything is looked up, so the answer never depends on what exists there); none named means the
        key's only tenant. A tenant the stack refuses (disabled, or not registered where it must be) is 403."""
        if requested is None:
            if len(self.app_codes) != 1:
                raise InvalidArgument("app_code is required: this key acts for several tenants")
            requested = next(iter(self.app_codes))
        elif requested not in self.app_codes:
            raise PermissionDenied("this key does not act for that app_code", reason="tenant_not_allowed")
        if requested in self.refused_tenants:
            raise self.refused_tenants[requested]
        return requested


@dataclass(frozen=True)
class ServiceKeyRecord:
    """One key, with its rights fixed when it was created: a key never gains rights later."""

    key_id: str
    service_id: str
    secret_hash: str
    created_at_ms: int
    capabilities: frozenset[str] = frozenset()
    app_codes: frozenset[str] = frozenset()
    # Where the service's external events may be delivered (`receive_id_type:receive_id`, contract §3).
    targets: frozenset[str] = frozenset()
    allow_markdown: bool = False  # its events' cards may opt into Feishu markdown
    target_rate: int | None = None  # its events a minute to one target, in place of the stack's limit
    order: str = SERVICE_ORDER  # its events' order: the service's (one lane) or per target (a lane each)
    weight: int = 1  # its service's weight in a shared provider app's fair share (herald.limits.shares)
    expires_at_ms: int | None = None
    revoked_at_ms: int | None = None
    last_used_at_ms: int | None = None
    rotated_from: str | None = None  # the key this one replaces

    def live(self, now_ms: int) -> bool:
        revoked = self.revoked_at_ms is not None and self.revoked_at_ms <= now_ms
        expired = self.expires_at_ms is not None and self.expires_at_ms <= now_ms
        return not revoked and not expired


@dataclass(frozen=True)
class DeliveryScope:
    """Where a service's external events are delivered, from its live keys: for which tenant (the one app_code
    they act for; "" when several or none, and the stack's providers deliver them), to which targets, and its
    weight in a shared provider app."""

    tenant: str
    targets: frozenset[str]
    weight: int = 1  # its weight in a provider app shared with other services: its live keys' highest

    @classmethod
    def of(cls, keys: Iterable[ServiceKeyRecord], now_ms: int) -> DeliveryScope:
        live = [key for key in keys if key.live(now_ms)]
        tenants = {app_code for key in live for app_code in key.app_codes}
        return cls(
            next(iter(tenants)) if len(tenants) == 1 else "",
            frozenset(t for key in live for t in key.targets),
            max((key.weight for key in live), default=1),
        )
