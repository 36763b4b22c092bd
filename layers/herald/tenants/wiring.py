"""The tenant registry's parts, and each tenant's provider clients (its own app's, or the stack's)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from herald.container import Container, part
from herald.holds.models import Held
from herald.holds.wiring import holds
from herald.limits.shares import RegisteredShares, Unshared
from herald.tenants.dynamo import DynamoTenantStore
from herald.tenants.models import Tenant, TenantPaused, TenantRules
from herald.tenants.service import NoRegistry, Tenants, TenantStore

T = TypeVar("T")
A = TypeVar("A", bound=Hashable)


@part
def tenants(c: Container) -> Tenants:
    settings = c.settings
    rules = TenantRules(settings.tenant_secrets_prefix, https_only=settings.owner_callbacks_https_only)
    store: TenantStore = (
        DynamoTenantStore(settings.tenants_table, c.clients.dynamodb) if settings.tenants_table else NoRegistry()
    )
    return Tenants(
        store,
        rules,
        required=settings.require_registered_tenants,
        clock=c.clock,
        cache_ms=settings.tenant_cache_seconds * 1000,
    )


def switch_tenant(app_code: str, enabled: bool, c: Container | None = None) -> tuple[Tenant, int]:
    """An operator's switch: disabled, the tenant's deliveries are held as workers meet them (herald.holds);
    enabled, the switch is written first and every held delivery then goes back on its queue at once. The tenant
    as switched, and how many held deliveries went back."""
    tenant = tenants(c).switch(app_code, enabled)
    released = holds(c).release(Held.tenant_scope(app_code)) if enabled else 0
    return tenant, released


@part
def shares(c: Container) -> RegisteredShares | Unshared:
    """Whose each call to a shared provider app is: its service's and its tenant's weights (the tenant's read
    through the registry's cache)."""
    if not c.settings.provider_app_fair_share:
        return Unshared()

    def tenant_weight(app_code: str) -> int:
        tenant = tenants(c).find(app_code)
        return tenant.weight if tenant is not None else 1

    return RegisteredShares(tenant_weight)


class PerTenant(Generic[A, T]):
    """A provider's client for each tenant: built once for its own app as registered now (a changed
    registration builds a new one), or the stack's for a tenant with none. A disabled tenant gets none
    (TenantPaused): its deliveries wait."""

    def __init__(
        self, registry: Tenants, own_app: Callable[[Tenant], A | None], build: Callable[[A], T], stack: Callable[[], T]
    ) -> None:
        self._registry = registry
        self._own_app = own_app
        self._build = build
        self._stack = stack
        self._built: dict[A, T] = {}
        self._lock = threading.Lock()

    def __call__(self, app_code: str) -> T:
        tenant = self._registry.find(app_code) if app_code else None
        if tenant is not None and not tenant.enabled:
            raise TenantPaused(app_code)
        app = self._own_app(tenant) if tenant is not None else None
        if app is None:
            return self._stack()
        with self._lock:
            if app not in self._built:
                self._built[app] = self._build(app)
            return self._built[app]
