"""The tenant registry: who may act (`admit`), and which providers deliver for a tenant (`find`).

Functions read a tenant through a short per-process cache, so a change (a new app, a disabled tenant)
reaches every warm function within `cache_ms` without a read on every request."""

from __future__ import annotations

import threading
from typing import Protocol

from herald.clock import Clock, now_ms
from herald.errors import ConfigurationError, NotFound
from herald.tenants.models import FeishuApp, Tenant, TenantRules, TenantUnknown, TencentImApp


class TenantStore(Protocol):
    def get(self, app_code: str) -> Tenant | None: ...

    def put(self, tenant: Tenant) -> None: ...

    def all(self) -> list[Tenant]: ...


class NoRegistry:
    """A stack without a tenants table: no tenant is registered, every one uses the stack's providers."""

    def get(self, app_code: str) -> Tenant | None:
        return None

    def put(self, tenant: Tenant) -> None:
        raise ConfigurationError("this stack has no tenants table (HERALD_TENANTS_TABLE)")

    def all(self) -> list[Tenant]:
        return []


class Tenants:
    def __init__(
        self, store: TenantStore, rules: TenantRules, *, required: bool, clock: Clock = now_ms, cache_ms: int = 30_000
    ) -> None:
        self._store = store
        self._rules = rules
        self._required = required
        self._clock = clock
        self._cache_ms = cache_ms
        self._cached: dict[str, tuple[Tenant | None, int]] = {}
        self._lock = threading.Lock()

    @property
    def rules(self) -> TenantRules:
        return self._rules

    def find(self, app_code: str) -> Tenant | None:
        """The tenant as registered (None: not registered), as read at most `cache_ms` ago."""
        now = self._clock()
        with self._lock:
            cached = self._cached.get(app_code)
        if cached is not None and now - cached[1] < self._cache_ms:
            return cached[0]
        tenant = self._store.get(app_code)
        with self._lock:
            self._cached[app_code] = (tenant, now)
        return tenant

    def enabled_now(self, app_code: str) -> bool:
        """Whether the tenant is enabled as stored now, not as cached (kept as the cache's from now): a worker that
        held a delivery checks that no `enable` came between its cached read and its hold."""
        tenant = self._store.get(app_code)
        with self._lock:
            self._cached[app_code] = (tenant, self._clock())
        return tenant is None or tenant.enabled

    def admit(self, app_code: str) -> None:
        """Refuse a disabled tenant, and an unregistered one when the stack requires registration (403)."""
        tenant = self.find(app_code)
        if tenant is None:
            if self._required:
                raise TenantUnknown(app_code)
            return
        tenant.admit()

    # ------------------------------------------------------------------ operators
    def set(
        self,
        app_code: str,
        display_name: str,
        tencent_im: TencentImApp | None,
        feishu: FeishuApp | None,
        weight: int | None = None,
    ) -> Tenant:
        """Register a tenant, or replace its registration (its providers as given now; enabled as it was, and its
        weight unless one is given)."""
        existing = self._store.get(app_code)
        tenant = self._rules.tenant(
            app_code,
            display_name,
            tencent_im,
            feishu,
            self._clock(),
            enabled=existing.enabled if existing else True,
            weight=weight if weight is not None else existing.weight if existing else 1,
        )
        self._store.put(tenant)
        return tenant

    def show(self, app_code: str) -> Tenant:
        tenant = self._store.get(app_code)
        if tenant is None:
            raise NotFound(f"no tenant {app_code!r} is registered")
        return tenant

    def switch(self, app_code: str, enabled: bool) -> Tenant:
        tenant = self.show(app_code).switched(enabled, self._clock())
        self._store.put(tenant)
        return tenant

    def all(self) -> list[Tenant]:
        return sorted(self._store.all(), key=lambda tenant: tenant.app_code)
