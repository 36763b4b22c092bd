"""Service keys (contract §0): bearer keys for partner services and engines.

A key reads `hk_<key_id>_<secret>`. Only a hash of the secret is stored; the key id (not secret) finds
the record and the secret's hash is compared in constant time. A service may hold several keys; each key
carries its own rights, fixed at creation (capabilities: route prefixes; tenants: `app_code`s; targets:
where its external events may go), so creating a key never widens another one. Rotation creates a key
with the same rights, and the old one keeps working until it is revoked.

A key's record is remembered for `cache_ms` (a GetItem saved per request): a revoked or expired key is
refused within that time. Its last-used time is written only after the secret matched (a wrong secret for
a real key id changes nothing), at most once per period.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
from collections.abc import Iterable
from typing import Protocol

from herald.auth.models import DeliveryScope, ServiceCaller, ServiceKeyRecord
from herald.clock import Clock, now_ms
from herald.errors import InvalidArgument, NotFound, PermissionDenied, Unauthorized
from herald.ids import APP_CODE_PATTERN, DEFAULT_APP_CODE
from herald.targets import EVENT_ORDERS, RECEIVE_ID_TYPES, SERVICE_ORDER, TARGET_ORDER

KEY_PREFIX = "hk"
# A key's own per-target intake limit at most: Feishu's whole app takes 50 calls a second (a chat 5), so more
# to one target is only abuse, however many revisions coalescing absorbs.
MAX_TARGET_RATE = 3000
_KEY = re.compile(r"hk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
_SERVICE_ID = re.compile(r"[a-z][a-z0-9_-]{1,63}")
_CAPABILITY = re.compile(r"/[A-Za-z0-9_/-]*")
_APP_CODE = re.compile(APP_CODE_PATTERN)
# Compared against when the key id is unknown, so a miss costs the same as a wrong secret.
_DUMMY_HASH = hashlib.sha256(b"herald-no-such-key").hexdigest()


class ServiceKeyStore(Protocol):
    def get_key(self, key_id: str) -> ServiceKeyRecord | None: ...

    def put_key(self, key: ServiceKeyRecord) -> None: ...

    def keys_of(self, service_id: str) -> list[ServiceKeyRecord]: ...

    def all_keys(self) -> list[ServiceKeyRecord]: ...

    def revoke(self, key_id: str, at_ms: int) -> ServiceKeyRecord: ...

    def touch(self, key_id: str, at_ms: int) -> None: ...


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
    if not _SERVICE_ID.fullmatch(service_id):
        raise InvalidArgument("service id must be 2-64 chars of a-z, 0-9, '_' or '-', starting with a letter")
    return service_id


def validate_capability(capability: str) -> str:
    if not _CAPABILITY.fullmatch(capability) or capability.rstrip("/") == "":
        raise InvalidArgument(f"capability must be a route prefix such as /events/external, not {capability!r}")
    return capability.rstrip("/")


MAX_WEIGHT = 100  # a service's or a tenant's weight in a shared provider app's fair share: 1 to this


def validate_weight(weight: int, what: str = "a weight") -> int:
    if not 1 <= weight <= MAX_WEIGHT:
        raise InvalidArgument(f"{what} is 1 to {MAX_WEIGHT}, not {weight}")
    return weight


def validate_app_code(app_code: str) -> str:
    if not _APP_CODE.fullmatch(app_code):
        raise InvalidArgument(f"an app_code is 1-32 chars of a-z, 0-9, '_' or '-', not {app_code!r}")
    return app_code


def validate_target(target: str) -> str:
    kind, sep, receive_id = target.partition(":")
    if not sep or kind not in RECEIVE_ID_TYPES or not receive_id or len(target) > 200 or not target.isprintable():
        raise InvalidArgument(
            f"a target reads RECEIVE_ID_TYPE:RECEIVE_ID with a type among {sorted(RECEIVE_ID_TYPES)}, not {target!r}"
        )
    return target


class ServiceKeys:
    def __init__(
        self, store: ServiceKeyStore, clock: Clock = now_ms, cache_ms: int = 0, default_app_code: str = DEFAULT_APP_CODE
    ) -> None:
        self._store = store
        self._default_app_code = default_app_code
        self._clock = clock
        self._cache_ms = cache_ms
        self._cache: dict[str, tuple[int, ServiceKeyRecord]] = {}
        self._touched: dict[str, int] = {}
        self._lock = threading.Lock()

    def authenticate(self, presented: str, path: str | None) -> ServiceCaller:
        """401 for anything but a live key; 403 when the key lacks a capability for `path` (None: any live key,
        as who-am-I asks)."""
        match = _KEY.fullmatch(presented)
        record = self._record(match.group(1)) if match else None
        secret = match.group(2) if match else ""
        expected = record.secret_hash if record else _DUMMY_HASH
        if not hmac.compare_digest(hash_secret(secret), expected) or record is None:
            raise Unauthorized("service key invalid")
        now = self._clock()
        if not record.live(now):
            raise Unauthorized("service key revoked or expired")
        self._record_use(record.key_id, now)
        if path is not None and not capability_allows(record.capabilities, path):
            raise PermissionDenied("service key lacks the capability for this route")
        return ServiceCaller(
            service_id=record.service_id,
            key_id=record.key_id,
            capabilities=record.capabilities,
            app_codes=record.app_codes,
            allowed_targets=record.targets,
            allow_markdown=record.allow_markdown,
            target_rate=record.target_rate,
            orders_by_target=record.order == TARGET_ORDER,
        )

    def _record(self, key_id: str) -> ServiceKeyRecord | None:
        """The key's record, from the cache while it is fresh."""
        now = self._clock()
        with self._lock:
            cached = self._cache.get(key_id)
        if cached is not None and now - cached[0] < self._cache_ms:
            return cached[1]
        record = self._store.get_key(key_id)
        if record is None:
            return None
        with self._lock:
            self._cache[key_id] = (now, record)
        return record

    def _record_use(self, key_id: str, now: int) -> None:
        """A verified use: written once per cache period (the last-used time is for people, not for auth)."""
        with self._lock:
            last = self._touched.get(key_id)
            due = last is None or now - last >= self._cache_ms
            if due:
                self._touched[key_id] = now
        if due:
            self._store.touch(key_id, now)

    def create_key(
        self,
        service_id: str,
        capabilities: Iterable[str],
        app_codes: Iterable[str] = (),
        targets: Iterable[str] = (),
        expires_at_ms: int | None = None,
        rotated_from: str | None = None,
        allow_markdown: bool = False,
        target_rate: int | None = None,
        order: str = SERVICE_ORDER,
        weight: int = 1,
    ) -> tuple[str, ServiceKeyRecord]:
        """A new key with exactly these rights; returns the key (shown once) and its record."""
        validate_service_id(service_id)
        validate_weight(weight, "a key's --weight")
        if target_rate is not None and not 1 <= target_rate <= MAX_TARGET_RATE:
            raise InvalidArgument(f"a target rate is 1 to {MAX_TARGET_RATE} events a minute")
        if order not in EVENT_ORDERS:
            raise InvalidArgument(f"an order is one of {', '.join(EVENT_ORDERS)}, not {order!r}")
        wanted = frozenset(validate_capability(cap) for cap in capabilities)
        named = frozenset(validate_app_code(app_code) for app_code in app_codes)
        tenants = named or frozenset({self._default_app_code})
        if not wanted or not tenants:
            raise InvalidArgument("a key needs at least one capability and one app_code")
        now = self._clock()
        if expires_at_ms is not None and expires_at_ms <= now:
            raise InvalidArgument("the key would expire before it is created")
        secret = secrets.token_urlsafe(32)
        record = ServiceKeyRecord(
            key_id=secrets.token_hex(8),
            service_id=service_id,
            secret_hash=hash_secret(secret),
            created_at_ms=now,
            capabilities=wanted,
            app_codes=tenants,
            targets=frozenset(validate_target(target) for target in targets),
            allow_markdown=allow_markdown,
            target_rate=target_rate,
            order=order,
            weight=weight,
            expires_at_ms=expires_at_ms,
            rotated_from=rotated_from,
        )
        self._store.put_key(record)
        return f"{KEY_PREFIX}_{record.key_id}_{secret}", record

    def rotate(self, key_id: str, revoke_old_in_ms: int | None = None) -> tuple[str, ServiceKeyRecord]:
        """A new key with the old one's rights. The old key keeps working until it is revoked: now plus
        `revoke_old_in_ms` when given (time to roll the new one out), or by a later `revoke`."""
        old = self._store.get_key(key_id)
        if old is None or not old.live(self._clock()):
            raise NotFound(f"no live key {key_id}")
        key, record = self.create_key(
            old.service_id,
            old.capabilities,
            old.app_codes,
            old.targets,
            old.expires_at_ms,
            rotated_from=key_id,
            allow_markdown=old.allow_markdown,
            target_rate=old.target_rate,
            order=old.order,
            weight=old.weight,
        )
        if revoke_old_in_ms is not None:
            self.revoke(key_id, in_ms=revoke_old_in_ms)
        return key, record

    def revoke(self, key_id: str, in_ms: int = 0) -> ServiceKeyRecord:
        revoked = self._store.revoke(key_id, self._clock() + max(0, in_ms))
        with self._lock:
            self._cache.pop(key_id, None)
        return revoked

    def list_keys(self, service_id: str | None = None) -> list[ServiceKeyRecord]:
        records = self._store.keys_of(service_id) if service_id else self._store.all_keys()
        return sorted(records, key=lambda record: (record.service_id, record.created_at_ms))

    def delivery_scope(self, service_id: str) -> DeliveryScope:
        """The tenant and targets of a service's external events, its keys read once (a dispatch message's)."""
        return DeliveryScope.of(self._store.keys_of(service_id), self._clock())

    def allowed_targets(self, service_id: str) -> frozenset[str]:
        """Where a service's events may still go: the targets of its live keys (a revoked key's go with it)."""
        return self.delivery_scope(service_id).targets
