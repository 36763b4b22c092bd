"""Authenticated callers, as the rest of Herald sees them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Principal:
    """An app user, from a verified JWT: the only source of a user id on app routes."""

    user_id: str
    app_code: str
    roles: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class ServiceCaller:
    """A service that presented a valid key; its capabilities are route prefixes."""

    service_id: str
    key_id: str
    capabilities: frozenset[str]
    allowed_targets: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ServiceKeyRecord:
    key_id: str
    service_id: str
    secret_hash: str
    created_at_ms: int
    revoked_at_ms: int | None = None


@dataclass(frozen=True)
class ServiceRecord:
    service_id: str
    capabilities: frozenset[str]
    created_at_ms: int
    # Where the service's external events may be delivered (`receive_id_type:receive_id`, CONTRACTS §3).
    allowed_targets: frozenset[str] = frozenset()
