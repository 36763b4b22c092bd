"""Service keys (CONTRACTS §0): bearer keys for partner services and engines.

A key reads `hk_<key_id>_<secret>`. Only a hash of the secret is stored; the key id (not secret) finds
the record and the secret's hash is compared in constant time. A service may hold several keys (rotation);
its capabilities are route prefixes, checked on every request.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re
import secrets
from typing import Protocol

from herald.auth.models import ServiceCaller, ServiceKeyRecord, ServiceRecord
from herald.clock import Clock, now_ms
from herald.errors import InvalidArgument, NotFound, PermissionDenied, Unauthorized
from herald.providers.feishu import RECEIVE_ID_TYPES

KEY_PREFIX = "hk"
_KEY = re.compile(r"^hk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
_SERVICE_ID = re.compile(r"^[a-z][a-z0-9_-]{1,63}$")
_CAPABILITY = re.compile(r"^/[A-Za-z0-9_/-]*$")
# Compared against when the key id is unknown, so a miss costs the same as a wrong secret.
_DUMMY_HASH = hashlib.sha256(b"herald-no-such-key").hexdigest()


class ServiceKeyStore(Protocol):
    def get_key(self, key_id: str) -> ServiceKeyRecord | None: ...

    def get_service(self, service_id: str) -> ServiceRecord | None: ...

    def put_service(self, service: ServiceRecord) -> None: ...

    def put_key(self, key: ServiceKeyRecord) -> None: ...


def hash_secret(secret: str) -> str:
    """SHA-256 is enough: the secret is 256 random bits, not a password."""
    return hashlib.sha256(secret.encode()).hexdigest()


def capability_allows(capabilities: frozenset[str], path: str) -> bool:
    """A capability `/events/external` allows that path and everything below it, nothing beside it."""
    for capability in capabilities:
        prefix = capability.rstrip("/")
        if path == prefix or path.startswith(prefix + "/"):
            return True
    return False


def validate_service_id(service_id: str) -> str:
    if not _SERVICE_ID.match(service_id):
        raise InvalidArgument("service id must be 2-64 chars of a-z, 0-9, '_' or '-', starting with a letter")
    return service_id


def validate_capability(capability: str) -> str:
    if not _CAPABILITY.match(capability) or capability.rstrip("/") == "":
        raise InvalidArgument(f"capability must be a route prefix such as /events/external, not {capability!r}")
    return capability.rstrip("/")


class ServiceKeys:
    def __init__(self, store: ServiceKeyStore, clock: Clock = now_ms) -> None:
        self._store = store
        self._clock = clock

    def authenticate(self, presented: str, path: str) -> ServiceCaller:
        """401 for anything but a live key; 403 when the key's service lacks a capability for `path`."""
        match = _KEY.match(presented)
        record = self._store.get_key(match.group(1)) if match else None
        secret = match.group(2) if match else ""
        expected = record.secret_hash if record else _DUMMY_HASH
        if not hmac.compare_digest(hash_secret(secret), expected) or record is None:
            raise Unauthorized("service key invalid")
        if record.revoked_at_ms is not None and record.revoked_at_ms <= self._clock():
            raise Unauthorized("service key revoked")
        service = self._store.get_service(record.service_id)
        if service is None:
            raise Unauthorized("service key invalid")
        if not capability_allows(service.capabilities, path):
            raise PermissionDenied("service key lacks the capability for this route")
        return ServiceCaller(
            service_id=service.service_id,
            key_id=record.key_id,
            capabilities=service.capabilities,
            allowed_targets=service.allowed_targets,
        )

    def create_key(self, service_id: str, capabilities: list[str]) -> tuple[str, ServiceKeyRecord]:
        """Add a key for the service (creating it or widening its capabilities); returns the key once."""
        validate_service_id(service_id)
        wanted = frozenset(validate_capability(cap) for cap in capabilities)
        now = self._clock()
        existing = self._store.get_service(service_id)
        held = existing.capabilities if existing else frozenset()
        if existing is None or not wanted <= held:
            created = existing.created_at_ms if existing else now
            targets = existing.allowed_targets if existing else frozenset()
            self._store.put_service(ServiceRecord(service_id, held | wanted, created, targets))
        key_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        record = ServiceKeyRecord(
            key_id=key_id, service_id=service_id, secret_hash=hash_secret(secret), created_at_ms=now
        )
        self._store.put_key(record)
        return f"{KEY_PREFIX}_{key_id}_{secret}", record

    def set_targets(self, service_id: str, add: list[str], remove: list[str]) -> ServiceRecord:
        """Widen or narrow where a service's external events may go; checked at intake and before delivery."""
        service = self._store.get_service(validate_service_id(service_id))
        if service is None:
            raise NotFound(f"no service {service_id}")
        added = frozenset(validate_target(target) for target in add)
        removed = frozenset(validate_target(target) for target in remove)
        updated = dataclasses.replace(service, allowed_targets=(service.allowed_targets | added) - removed)
        self._store.put_service(updated)
        return updated


def validate_target(target: str) -> str:
    kind, sep, receive_id = target.partition(":")
    if not sep or kind not in RECEIVE_ID_TYPES or not receive_id or len(target) > 200:
        raise InvalidArgument(
            f"a target reads RECEIVE_ID_TYPE:RECEIVE_ID with a type among {sorted(RECEIVE_ID_TYPES)}, not {target!r}"
        )
    return target
